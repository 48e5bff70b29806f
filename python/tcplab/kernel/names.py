"""The names kernel mode creates, made so that no scenario name can meet them.

The model. A scenario's node names (hosts, routers; pods are refused in kernel mode) are
letters, digits, ``_``, ``.`` and ``-`` (:data:`tcplab.scenario.fields.NAME_PATTERN`); the
prefix P (``--prefix``, default ``tcplab``) is 1 to 16 of a-z and 0-9 (:func:`check_prefix`,
the one check every command and the API make). Then:

* ``P-NODE`` (:func:`node_ns`): the namespace of host or router NODE;
* ``P:wK`` (:func:`wire_ns`): the wire namespace of link entry K (delay line, loss rule);
* ``P:probeN`` (:func:`probe_ns`): the scratch namespace of the qdisc probe (N its pid),
  deleted before the run starts.

``:`` is in no node name, so a host named ``w0`` is ``P-w0`` and never the wire ``P:w0``
(with ``P-wK`` wires it was, and the run failed with "netns ... File exists"). The prefix
has neither ``-`` nor ``:``, so the first of them ends it: two prefixes never name the same
namespace, and ``tcplab kernel cleanup --prefix P`` (:func:`is_ours`) removes P's namespaces
alone (with a ``-`` in prefixes, cleaning ``a`` removed the live run ``a-b``'s ``a-b-emu``).

Devices have fixed names, never a node's: ``ethK`` on a node (link order), ``wa``/``wb`` in
a wire, the delay line's TUNs ``tab``/``tba``: within IFNAMSIZ (15 characters and the NUL).

Work files (in the run's ``$TMPDIR/P-kernel-XXXXXXXX``): ``spec-NODE.json`` (an agent's
SPEC), ``agent-NODE.json`` (its result, written through ``agent-NODE.json.tmp``),
``agent-NODE.stderr``, ``ss-samples-NODE.txt``, ``delayline-wK.json``: each kind its own
start or end, so no node's file is another node's or another kind's (a host named
``spec-a`` had its result skipped as a SPEC and written over host ``a``'s).

Lengths: a namespace is the file ``/run/netns/NAME`` and a work file a name in a directory,
each at most NAME_MAX (255) bytes: a node name has at most :func:`max_node_name` characters
in kernel mode (238 to 240 with the prefix's length); a longer one is refused by
:func:`tcplab.kernel.plan.make_plan`, naming the field, before anything exists.
"""

from __future__ import annotations

import re

from tcplab.kernel.errors import KernelUsageError

__all__ = [
    "PREFIX_PATTERN",
    "PREFIX_EXPECTED",
    "NAME_MAX",
    "check_prefix",
    "node_ns",
    "wire_ns",
    "probe_ns",
    "is_ours",
    "max_node_name",
    "spec_file",
    "agent_file",
    "agent_stderr_file",
    "node_of_agent_file",
    "ss_samples_file",
]

#: The prefix: 1 to 16 of a-z and 0-9 (no ``-``: see the module doc).
PREFIX_PATTERN = re.compile(r"[a-z0-9]{1,16}\Z")
PREFIX_EXPECTED = "expected 1 to 16 of a-z and 0-9 (the namespaces are P-NODE)"
#: A file name's limit (Linux NAME_MAX): namespaces are files in /run/netns.
NAME_MAX = 255
#: Between a node's namespace and the wires' and the probe's: in no node name.
INTERNAL_SEPARATOR = ":"
#: The longest text a work or run-directory file adds to a node name
#: (``ss-samples-`` + ``.txt``, ``agent-`` + ``.json.tmp``).
FILE_NAME_EXTRA = 15


def check_prefix(prefix: object, field: str = "--prefix") -> str:
    """``prefix`` when it is a namespace prefix (module doc); else :class:`KernelUsageError`
    ``FIELD: 'VALUE': expected ...`` (the CLI exits 2 on it)."""
    if isinstance(prefix, str) and PREFIX_PATTERN.match(prefix):
        return prefix
    raise KernelUsageError(f"{field}: {prefix!r}: {PREFIX_EXPECTED}")


def node_ns(prefix: str, node: str) -> str:
    """The namespace of host or router ``node``."""
    return f"{prefix}-{node}"


def wire_ns(prefix: str, entry: int) -> str:
    """The wire namespace of link entry ``entry``."""
    return f"{prefix}{INTERNAL_SEPARATOR}w{int(entry)}"


def probe_ns(prefix: str, pid: int) -> str:
    """The qdisc probe's scratch namespace."""
    return f"{prefix}{INTERNAL_SEPARATOR}probe{int(pid)}"


def is_ours(prefix: str, ns: str) -> bool:
    """Whether namespace ``ns`` is one kernel mode names with ``prefix`` (node, wire, probe)."""
    return ns.startswith(prefix + "-") or ns.startswith(prefix + INTERNAL_SEPARATOR)


def max_node_name(prefix: str) -> int:
    """The longest node name kernel mode can name a namespace and files after (module doc)."""
    return min(NAME_MAX - len(node_ns(prefix, "")), NAME_MAX - FILE_NAME_EXTRA)


def spec_file(node: str) -> str:
    """The SPEC the agent of ``node`` reads."""
    return f"spec-{node}.json"


def agent_file(node: str) -> str:
    """The result the agent of ``node`` writes."""
    return f"agent-{node}.json"


def agent_stderr_file(node: str) -> str:
    return f"agent-{node}.stderr"


def node_of_agent_file(name: str) -> str | None:
    """The node whose result ``name`` is (:func:`agent_file`), or None for any other file."""
    if name.startswith("agent-") and name.endswith(".json"):
        return name[len("agent-") : -len(".json")]
    return None


def ss_samples_file(node: str) -> str:
    """Every ``ss -tin`` sample the agent of ``node`` took (also in the run directory)."""
    return f"ss-samples-{node}.txt"
