"""Diagnose a real host: read its TCP, qdisc and NIC counters and name the known pathology.

The model: inputs are the text of tools operators already run (``ss -tinm``, ``nstat -az``,
``/proc/net/{netstat,snmp}``, ``tc -s [-j] qdisc``, ``ethtool -S|-g|-i``, ``sysctl``,
``/proc/stat``, ``uname -r``, ``cilium status``) or node_exporter scrapes, alone, in a
directory (a tcplab run directory's ``counters.txt`` too) or in a ``tcplab collect``
archive. Each is recognised by content (:mod:`.detect`), parsed by one module per tool, and
combined into a :class:`~.snapshot.Host` with one or more timed snapshots
(:mod:`.snapshot`). Rules (:mod:`.rules`) turn a host into findings -- severity, evidence
lines, mechanism, what to check next, the seed story it matches -- and :mod:`.scenarios`
turns a finding into a tcplab scenario that reproduces the observed path. :mod:`.report`
prints them for terminals, machines (JSON) and tickets (Markdown).

Every input problem is a :class:`~.source.ParseError` (``FILE:LINE: problem``); nothing else
escapes a parser.

Floor 6 (the commands' packages): may import the scenario (a finding's scenario is
validated: :mod:`tcplab.loader`) and the leaves; never another command package nor the
commands (:mod:`tcplab.experiments` imports this one for its cross-checks). A submodule
imports the submodule that defines a name (``import tcplab.diagnose.tc as tc``), never this
``__init__``.
"""

from __future__ import annotations

from tcplab.diagnose.source import Evidence, ParseError

__all__ = ["ParseError", "Evidence", "diagnose_paths"]


def diagnose_paths(paths, **options):  # noqa: ANN001, ANN003, ANN201
    """Load inputs and run every rule: returns (host, findings)."""
    from tcplab.diagnose.rules import run_rules
    from tcplab.diagnose.snapshot import load_host

    host = load_host(paths)
    return host, run_rules(host, **options)
