"""``tcplab ss RUN --at T [FLOW]``: the sockets of a run as ``ss -tin`` printed them at time T.

The model: a simulation's sockets at time T are rebuilt from the run directory's
configuration, flow totals and time series by :func:`tcplab.results.ss.ss_texts` (the same
function that wrote ``ss-tin-NODE.txt`` at the run's end; its module doc says which fields
are known and how addresses and ports are numbered): each flow's values are those of its
last sample at or before T. A kernel run has what the agent really printed: the node's
last ``ss -tin`` sample at or before T from ``ss-samples-NODE.txt``.

Output: every node with a socket at T, in the scenario's node order, each text preceded by
a ``# NODE`` line when there are several; with FLOW only that flow's two sockets (the data
sender's and the receiver's; in a kernel run, the lines whose local and peer addresses are
the flow's, as the kernel plan numbers them). T is a time with a unit (``12.3s``,
``500ms``) from 0 to the run's duration; anything else is a one-line error naming the run's
duration.
"""

from __future__ import annotations

from tcplab.errors import ScenarioError, UnitError
from tcplab.exports.rundir import RunData
from tcplab.literals import abbreviate_digits
from tcplab.results.ss_samples import flow_sockets, ss_sample_texts
from tcplab.units import format_time, parse_time

__all__ = ["parse_at", "ss_at", "ss_at_text"]


def parse_at(run: RunData, text: str) -> int:
    """``--at`` as ns since the run's start, or a one-line error naming the duration."""
    duration_ns = run.duration_ns
    expected = f"a time from 0s to the run's duration, {format_time(duration_ns)} (such as 12.3s or 500ms)"
    try:
        at_ns = parse_time(text)
    except UnitError as e:
        raise ScenarioError(e.problem, path="--at", value=text, expected=expected) from None
    if at_ns > duration_ns:
        raise ScenarioError(f'"{text}" is after the end of the run', path="--at", value=text, expected=expected)
    return at_ns


def _check_flow(run: RunData, flow: str | None) -> None:
    if flow is None:
        return
    if run.flow_index(flow) is None:
        names = [str(f["name"]) for f in run.config.get("flows", [])]
        shown = ", ".join(names[:20]) + (f", ... ({len(names)} flows)" if len(names) > 20 else "")
        raise ScenarioError(
            f"no flow named {abbreviate_digits(flow)[:60]!r} in this run",
            path="FLOW",
            value=flow,
            expected=f"a flow name or index: {shown}",
        )


def ss_at(run: RunData, at_ns: int, flow: str | None = None) -> dict[str, str]:
    """``{node: ss -tin text}`` at ``at_ns`` (module doc), in the scenario's node order.
    ``flow``: a flow's name or index."""
    if flow is not None:
        flow = run.flow_name(flow)
    _check_flow(run, flow)
    if run.kind == "kernel" and run.ss_samples:
        texts = _kernel_texts(run, at_ns, flow)
    else:
        from tcplab.results.ss import ss_texts

        texts = ss_texts(run.config, run.flows, run.timeseries, at_ns, flow)
    order = {name: k for k, name in enumerate(run.nodes)}
    return {node: texts[node] for node in sorted(texts, key=lambda n: order.get(n, len(order)))}


def ss_at_text(run: RunData, at_ns: int, flow: str | None = None) -> str:
    """What ``tcplab ss`` prints: the texts, each after ``# NODE`` when there are several."""
    texts = ss_at(run, at_ns, flow)
    if len(texts) == 1:
        return next(iter(texts.values()))
    return "".join(f"# {node}\n{text}" for node, text in texts.items())


def _kernel_texts(run: RunData, at_ns: int, flow: str | None) -> dict[str, str]:
    out = {}
    for node, samples in run.ss_samples.items():
        chosen = None
        for t, block in ss_sample_texts(samples):
            if t <= at_ns:
                chosen = block
        if chosen:
            out[node] = chosen
    if flow is None:
        return out
    index = run.flow_index(flow)
    socks = next((s for s in flow_sockets(run.config) if s.flow == index), None)
    if socks is None:
        return {}
    wanted = {socks.sender_node: (socks.sender, socks.receiver), socks.receiver_node: (socks.receiver, socks.sender)}
    filtered = {}
    for node, (local, peer) in wanted.items():
        if node in out:
            text = _only_socket(out[node], local, peer)
            if text is not None:
                filtered[node] = text
    return filtered


def _only_socket(text: str, local: str, peer: str) -> str | None:
    """The header and the socket whose state line has ``local`` then ``peer`` (with its
    info lines), or None if the sample has no such socket."""
    lines = text.splitlines()
    if not lines:
        return None
    header, body = (lines[0], lines[1:]) if lines[0].startswith("State") else (None, lines)
    keep: list[str] = []
    taking = False
    for line in body:
        if not line.startswith(("\t", " ")):  # a state line
            fields = line.split()
            taking = local in fields and peer in fields and fields.index(local) < fields.index(peer)
        if taking:
            keep.append(line)
    if not keep:
        return None
    return "\n".join(([header] if header else []) + keep) + "\n"
