"""Which flows of a run the exports show, and from which side.

The model: an export shows the flows the engine samples (every flow except those of an
application with more than 16 connections, a broadcast's thousands, whose sockets tcplab
does not sample: :data:`tcplab.results.ss.MAX_SAMPLED_APP_CONNECTIONS`, and flows with
``sample: false``). Each is seen from its data sender (the ``data_from`` node: the client of
a bulk flow, the server of a maerts flow or of bidir's ``.rev`` half), whose ``tcp_sock``
the time series samples; ``upload`` means the client sends (netperf TCP_STREAM), otherwise
it is a ``download`` (TCP_MAERTS).
"""

from __future__ import annotations

from dataclasses import dataclass

from tcplab.exports.rundir import RunData
from tcplab.results.ss import CLIENT_PORT_BASE, CLIENT_PORT_SPAN, app_kinds, node_address, server_port

__all__ = ["ExportFlow", "export_flows", "IPERF3_KINDS"]

#: Application kinds that are iperf3-like bulk transfers (an ``iperf3-FLOW.json`` each).
IPERF3_KINDS = ("bulk", "maerts")


@dataclass(frozen=True)
class ExportFlow:
    """One sampled flow: its configuration index, name, kind (the application's), whether
    the client sends (``upload``), its congestion control and MSS, the sender's and the
    receiver's ``addr:port`` as :mod:`tcplab.results.ss` numbers them, start and end (s)."""

    index: int
    name: str
    kind: str
    upload: bool
    cc: str
    mss: int
    sender_node: str
    receiver_node: str
    sender_addr: str
    sender_port: int
    receiver_addr: str
    receiver_port: int
    start_s: float
    end_s: float
    tcp: dict


def export_flows(run: RunData) -> list[ExportFlow]:
    """The run's sampled flows in configuration order (module doc)."""
    kinds, folded = app_kinds(run.config)
    nodes = run.nodes
    duration_s = run.duration_ns / 1e9
    out = []
    for i, f in enumerate(run.config.get("flows", [])):
        if i in folded or not f.get("sample", True):
            continue
        src, dst = int(f["src"]), int(f["dst"])
        if not (0 <= src < len(nodes) and 0 <= dst < len(nodes)):
            continue
        name = str(f["name"])
        upload = f.get("data_side", "client") != "server"
        client = (node_address(src), CLIENT_PORT_BASE + i % CLIENT_PORT_SPAN)
        server = (node_address(dst), server_port(kinds.get(i)))
        (s_addr, s_port), (r_addr, r_port) = (client, server) if upload else (server, client)
        total = run.flow_totals(name)
        start_s = float(total.get("start_s", int(f.get("start_ns", 0) or 0) / 1e9))
        end_s = float(total.get("end_s", duration_s))
        tcp = dict(f.get("tcp") or {})
        out.append(
            ExportFlow(
                index=i,
                name=name,
                kind=kinds.get(i, "bulk"),
                upload=upload,
                cc=str(f.get("cc", "")),
                mss=int(tcp.get("mss_bytes", 1448)),
                sender_node=nodes[src] if upload else nodes[dst],
                receiver_node=nodes[dst] if upload else nodes[src],
                sender_addr=s_addr,
                sender_port=s_port,
                receiver_addr=r_addr,
                receiver_port=r_port,
                start_s=start_s,
                end_s=end_s,
                tcp=tcp,
            )
        )
    return out
