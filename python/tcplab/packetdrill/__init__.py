"""``tcplab packetdrill``: the kernel's own TCP tests (packetdrill scripts) against tcplab's TCP.

The corpus is google/packetdrill (GPLv2 test data), read from where the user keeps it
(``../shared/packetdrill`` in this project's layout; a clone of
https://github.com/google/packetdrill elsewhere); tcplab never copies its scripts.

Modules:

* :mod:`tcplab.packetdrill.script`: the script language (packetdrill's ``syntax.md`` and its
  parser are the reference) parsed into events: times, packets in and out, system calls,
  shell commands and ``%{ }%`` assertions; what tcplab does not run is named, not guessed.
* :mod:`tcplab.packetdrill.timing`: packetdrill's timing rules (relative times, tolerances).
* :mod:`tcplab.packetdrill.run`: one script against tcplab's TCP (the engine's scripted
  host, through :mod:`tcplab.packetdrill.host`), with :mod:`tcplab.packetdrill.wire`
  mapping packets between the script's numbers and the engine's and checking them as
  packetdrill does, and :mod:`tcplab.packetdrill.environment` reading the sysctls and
  commands a script sets up; :mod:`tcplab.packetdrill.corpus` runs many and writes the
  report and JUnit files of ``tcplab packetdrill``.
* :mod:`tcplab.packetdrill.kernel`: the ground truth: packetdrill built from the corpus's
  own source and run on this machine's kernel in a network namespace.
"""
