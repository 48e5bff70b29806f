"""A kernel run's ``ss`` samples, and where each flow's two sockets are.

The model: a kernel run directory keeps every ``ss -tinH`` sample the traffic agent took on a
node (read in-process, printed as ss prints them: :mod:`tcplab.kernel.ss_line`) in
``ss-samples-NODE.txt``: a ``# t_ns=N`` line (ns since the run's t0), then ss's
lines, for each sample in time order (:func:`ss_sample_texts` splits it). The sockets of flow
``i`` are numbered as the kernel plan numbers them (:mod:`tcplab.kernel.plan`, with the
addresses of :mod:`tcplab.results.ss`): the client is ``node_address(src):32768 + i``, the
server ``node_address(dst):server_port(app kind)``; the data sender is the client unless the
flow's ``data_side`` is ``server`` (:func:`flow_sockets`).

Read by :class:`tcplab.kernel.result.KernelResult` (``ss-tin-NODE.txt`` is the last sample)
and by ``tcplab ss RUN --at T`` (:mod:`tcplab.exports.ss_at`: the last sample at or before T).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tcplab.results.ss import CLIENT_PORT_BASE, node_address, server_port

__all__ = ["T_LINE", "ss_sample_texts", "FlowSockets", "flow_sockets"]

#: The line that starts a sample: ``# t_ns=N``.
T_LINE = re.compile(r"# t_ns=(-?\d+)\s*\Z")


def ss_sample_texts(text: str) -> list[tuple[int, str]]:
    """``[(t_ns, the sample's ss text)]`` of one ``ss-samples-NODE.txt``."""
    out: list[tuple[int, str]] = []
    t: int | None = None
    lines: list[str] = []
    for line in text.splitlines():
        m = T_LINE.match(line)
        if m:
            if t is not None:
                out.append((t, "".join(x + "\n" for x in lines)))
            t, lines = int(m.group(1)), []
        else:
            lines.append(line)
    if t is not None:
        out.append((t, "".join(x + "\n" for x in lines)))
    return out


@dataclass(frozen=True)
class FlowSockets:
    """Where a flow's two sockets are: node and ``addr:port`` of the data sender and receiver."""

    flow: int
    sender_node: str
    sender: str
    receiver_node: str
    receiver: str


def flow_sockets(config: Mapping[str, Any]) -> list[FlowSockets]:
    """Each flow's sockets as the plan numbers them (tcplab.kernel.plan: client
    ``node_address(src):32768 + i``, server ``node_address(dst):server_port(app)``), the data
    sender first."""
    nodes = [str(n["name"]) for n in config["nodes"]]
    kinds: dict[int, str] = {}
    for app in config.get("apps") or []:
        for i in app.get("flows", []):
            kinds[int(i)] = str((app.get("spec") or {}).get("kind", "bulk"))
    out = []
    for i, f in enumerate(config["flows"]):
        src, dst = int(f["src"]), int(f["dst"])
        client = f"{node_address(src)}:{CLIENT_PORT_BASE + i}"
        server = f"{node_address(dst)}:{server_port(kinds.get(i, 'bulk'))}"
        if f.get("data_side", "client") == "server":
            out.append(FlowSockets(i, nodes[dst], server, nodes[src], client))
        else:
            out.append(FlowSockets(i, nodes[src], client, nodes[dst], server))
    return out
