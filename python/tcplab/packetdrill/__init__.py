"""``tcplab packetdrill``: the kernel's own TCP tests (packetdrill scripts) against tcplab's TCP.

The corpus is google/packetdrill (GPLv2 test data), read from where the user keeps it
(``../shared/packetdrill`` in this project's layout; a clone of
https://github.com/google/packetdrill elsewhere); tcplab never copies its scripts.

Modules:

* :mod:`tcplab.packetdrill.script`: the script language (packetdrill's ``syntax.md`` and its
  parser are the reference) parsed into events: times, packets in and out, system calls,
  shell commands and ``%{ }%`` assertions; what tcplab does not run is named, not guessed.
* :mod:`tcplab.packetdrill.kernel`: the ground truth: packetdrill built from the corpus's
  own source and run on this machine's kernel in a network namespace.
"""
