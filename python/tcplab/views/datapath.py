"""Plots of the datapath around TCP: timed qdiscs filling, NIC rings filling, CPU slices.

The model: two figures, each drawn only when the run has the component (a run without
them gets exactly the plots it had before):

* ``qdisc-backlog.png`` -- for each link whose qdisc holds packets by time, tokens or flow
  (``tbf``, ``fq``, ``fq_codel``; at most :data:`MAX_QDISCS`, in link order): its backlog
  in packets and in bytes, and its drops per sample interval (the ``drops`` column is
  ``tc -s qdisc``'s cumulative ``dropped``). A byte limit (tbf's ``limit``) and a packet
  limit (fq's and fq_codel's ``limit``) are dashed when the backlog came within a quarter
  of them (a limit far above the data would flatten it). Labels name the link as the run
  directory's ``tc-qdisc-NODE.txt`` does: ``NODE ethN (kind)``.
* ``nic-rings.png`` -- for each host with a NIC model: receive-ring occupancy (descriptors
  holding packets, summed over its rx queues, with the ring size dashed), ring drops per
  sample interval (from ``ethtool -S``'s cumulative counter), and packets waiting in the
  cloud ingress allowance's queue when it held any. When the host also has a CPU model,
  its off-CPU periods are shaded grey. They are computed from the model's ``period``,
  ``share`` and ``phase`` (the host runs from ``phase`` for ``share x period`` in every
  period), not from the sampled ``cpu_on`` column: slices are usually far shorter than the
  sample interval, which would alias them.

Both are time series sampled every ``sample_interval``: a burst that fills and drains a
ring between two samples shows in the drop counter, not in the occupancy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from tcplab.views.drawing import Plot, figure, integer_ticks, legend_outside, png_bytes, style_axes

if TYPE_CHECKING:
    from tcplab.results import Result

__all__ = [
    "TIMED_QDISCS",
    "MAX_QDISCS",
    "MAX_NIC_HOSTS",
    "timed_qdisc_links",
    "nic_hosts",
    "datapath_plots",
    "off_cpu_spans",
]

#: Qdisc kinds with their own dequeue events (the FIFOs are in ``queues.png``).
TIMED_QDISCS = ("tbf", "fq", "fq_codel")
MAX_QDISCS = 6
MAX_NIC_HOSTS = 4
#: At most this many shaded off-CPU spans per host (a longer run is shaded over its start).
MAX_SPANS = 20_000
_OFF_COLOR = "0.55"


def timed_qdisc_links(result: Result) -> list[int]:
    """Indices of the links with a timed qdisc (link order, at most :data:`MAX_QDISCS`)."""
    out = []
    for i, link in enumerate(result.config.get("links", [])):
        if str((link.get("queue") or {}).get("kind")) in TIMED_QDISCS:
            out.append(i)
    return out[:MAX_QDISCS]


def nic_hosts(result: Result) -> list[str]:
    """Hosts the engine reports a NIC model for (an engine without the model reports none)."""
    return [h["name"] for h in result.hosts if h.get("nic") is not None][:MAX_NIC_HOSTS]


def _node_cfg(result: Result, name: str) -> Mapping[str, Any]:
    for n in result.config.get("nodes", []):
        if n.get("name") == name:
            return n
    return {}


def _slice_text(cpu: Mapping[str, Any]) -> str:
    share = float(cpu.get("share") or 1.0)
    period_ms = int(cpu.get("period_ns") or 0) / 1e6
    return f"{100 * (1 - share):.0f} % of every {period_ms:g} ms"


def off_cpu_spans(cpu: Mapping[str, Any], duration_s: float) -> list[tuple[float, float]]:
    """``(start_s, width_s)`` of the periods a host with CPU model ``cpu`` (``period_ns``,
    ``share``, ``phase_ns``) is off its CPU within ``[0, duration_s]``."""
    period = int(cpu.get("period_ns") or 0)
    share = float(cpu.get("share") or 1.0)
    phase = int(cpu.get("phase_ns") or 0)
    if period <= 0 or share >= 1.0:
        return []
    on_ns = share * period
    end_ns = duration_s * 1e9
    spans = []
    k = -1
    # on in [k*period + phase, k*period + phase + on_ns); off from its end to the next start
    while len(spans) < MAX_SPANS:
        off_start = k * period + phase + on_ns
        off_end = (k + 1) * period + phase
        if off_start >= end_ns:
            break
        lo, hi = max(off_start, 0.0), min(off_end, end_ns)
        if hi > lo:
            spans.append((lo / 1e9, (hi - lo) / 1e9))
        k += 1
    return spans


def _qdisc_plot(result: Result, links: list[int]) -> Plot:
    qs = result.queues
    cfg_links = result.config["links"]
    fig = figure(height=7.5)
    pk_ax, by_ax, dr_ax = fig.subplots(3, 1, sharex=True, height_ratios=[3, 3, 2])
    names = dict(enumerate(_devices(result)))
    total_drops = 0
    pk_top, by_top = 1.0, 1.0
    for k, index in enumerate(links):
        link = cfg_links[index]
        queue = link.get("queue") or {}
        kind = str(queue.get("kind"))
        node, dev = names.get(index, ("?", "?"))
        label = f"{node} {dev} ({kind}): {link['name']}"
        color = f"C{k % 10}"
        rows = qs[qs["link"] == index].sort_values("t_ns")
        t = rows["t_s"].to_numpy()
        pk = rows["backlog_packets"].to_numpy(dtype=np.float64)
        by = rows["backlog_bytes"].to_numpy(dtype=np.float64) / 1e3
        d = rows["drops"].to_numpy(dtype=np.float64)
        pk_ax.step(t, pk, where="post", color=color, label=label)
        by_ax.step(t, by, where="post", color=color, label=label)
        drops = int(d[-1]) if len(d) else 0
        total_drops += drops
        dr_ax.step(t, np.diff(d, prepend=0.0), where="post", color=color, label=f"{node} {dev} (total {drops})")
        peak_pk = float(pk.max()) if len(pk) else 0.0
        peak_by = float(by.max()) if len(by) else 0.0
        pk_top, by_top = max(pk_top, peak_pk), max(by_top, peak_by)
        if queue.get("limit_packets") and peak_pk >= float(queue["limit_packets"]) / 4:
            cap = float(queue["limit_packets"])
            pk_ax.axhline(cap, color=color, linestyle="--", linewidth=0.9, label=f"{node} {dev} limit {cap:g} pkts")
            pk_top = max(pk_top, cap)
        if queue.get("limit_bytes") and peak_by >= float(queue["limit_bytes"]) / 4e3:
            cap = float(queue["limit_bytes"]) / 1e3
            by_ax.axhline(cap, color=color, linestyle="--", linewidth=0.9, label=f"{node} {dev} limit {cap:g} kB")
            by_top = max(by_top, cap)
    style_axes(pk_ax, "Backlog (packets)", f"Qdisc backlog - {result.title}", xlabel="", xmax=result.duration_s)
    pk_ax.set_ylim(0, pk_top * 1.1)
    style_axes(by_ax, "Backlog (kB)", xlabel="", xmax=result.duration_s)
    by_ax.set_ylim(0, by_top * 1.1)
    style_axes(dr_ax, f"Drops per {result.sample_interval_s * 1e3:g} ms", xmax=result.duration_s)
    integer_ticks(dr_ax.yaxis)
    if total_drops == 0:
        dr_ax.set_ylim(0, 1)
        dr_ax.text(0.5, 0.5, "no drops", transform=dr_ax.transAxes, ha="center", va="center", color="0.4")
    for ax in (pk_ax, by_ax, dr_ax):
        legend_outside(ax)
    return Plot(
        "qdisc-backlog.png",
        "Backlog (packets, kB) and drops per sample of each tbf/fq/fq_codel qdisc, named NODE ethN as in the "
        "run directory's tc-qdisc-NODE.txt; dashed: the qdisc's limit",
        png_bytes(fig),
    )


def _devices(result: Result) -> list[tuple[str, str]]:
    from tcplab.results.tc import link_devices

    return link_devices(result.config)


def _cpu_of(result: Result, name: str) -> dict[str, Any] | None:
    """The host's CPU model: the engine's report over the scenario's (which has the phase)."""
    out = next((h.get("cpu") for h in result.hosts if h["name"] == name), None)
    cfg = _node_cfg(result, name).get("cpu")
    if out is None and not cfg:
        return None
    return {**(cfg or {}), **(out or {})}


def _nic_plot(result: Result, hosts: list[str]) -> Plot:
    hs = result.host_series
    by_name = {h["name"]: h for h in result.hosts}
    any_allowance = bool(len(hs)) and bool((hs["allowance_queued"] > 0).any())
    panels = 3 if any_allowance else 2
    fig = figure(height=2.6 * panels + 1.0)
    axes = fig.subplots(panels, 1, sharex=True)
    ring_ax, drop_ax = axes[0], axes[1]
    total = 0
    cpu_hosts = [name for name in hosts if _cpu_of(result, name)]
    shaded_host = cpu_hosts[0] if len(cpu_hosts) == 1 else None  # several: shading would mix
    spans = off_cpu_spans(_cpu_of(result, shaded_host) or {}, result.duration_s) if shaded_host else []
    for i, ax in enumerate(axes):
        if spans:
            label = f"{shaded_host} off CPU ({_slice_text(_cpu_of(result, shaded_host) or {})})" if i == 0 else None
            ax.broken_barh(
                spans, (0, 1), transform=ax.get_xaxis_transform(), color=_OFF_COLOR, alpha=0.25, lw=0, label=label
            )
    for k, name in enumerate(hosts):
        color = f"C{k % 10}"
        rows = hs[hs["host_name"] == name].sort_values("t_ns") if len(hs) else hs
        t = rows["t_s"].to_numpy() if len(rows) else np.array([])
        used = rows["rx_ring_used"].to_numpy(dtype=np.float64) if len(rows) else np.array([])
        dropped = rows["rx_dropped"].to_numpy(dtype=np.float64) if len(rows) else np.array([])
        ring_ax.step(t, used, where="post", color=color, label=f"{name} rx ring used")
        nic = (by_name.get(name) or {}).get("nic") or _node_cfg(result, name).get("nic") or {}
        if nic.get("rx_ring"):
            size = float(nic["rx_ring"]) * float(nic.get("rx_queues") or 1)
            ring_ax.axhline(size, color=color, linestyle="--", linewidth=0.9, label=f"{name} ring size {size:g}")
        drops = int(dropped[-1]) if len(dropped) else 0
        total += drops
        drop_ax.step(t, np.diff(dropped, prepend=0.0), where="post", color=color, label=f"{name} (total {drops})")
        if any_allowance:
            q = rows["allowance_queued"].to_numpy(dtype=np.float64)
            axes[2].step(t, q, where="post", color=color, label=f"{name} allowance queue")
    style_axes(
        ring_ax,
        "Ring occupancy (descriptors)",
        f"NIC receive rings - {result.title}",
        xlabel="",
        xmax=result.duration_s,
    )
    style_axes(
        drop_ax,
        f"Ring drops per {result.sample_interval_s * 1e3:g} ms",
        xlabel="" if any_allowance else "Time (s)",
        xmax=result.duration_s,
    )
    integer_ticks(drop_ax.yaxis)
    if total == 0:
        drop_ax.set_ylim(0, 1)
        drop_ax.text(0.5, 0.5, "no ring drops", transform=drop_ax.transAxes, ha="center", va="center", color="0.4")
    if any_allowance:
        style_axes(axes[2], "Allowance queue (packets)", xmax=result.duration_s)
    for ax in axes:
        legend_outside(ax)
    caption = "Receive-ring occupancy (dashed: ring size) and ring drops per sample of each host with a NIC model"
    if spans:
        caption += f"; grey: {shaded_host}'s off-CPU periods (from its CPU model's period, share and phase)"
    return Plot("nic-rings.png", caption, png_bytes(fig))


def datapath_plots(result: Result) -> list[Plot]:
    """The datapath figures this run has components for (possibly none)."""
    plots = []
    links = timed_qdisc_links(result)
    if links:
        plots.append(_qdisc_plot(result, links))
    hosts = nic_hosts(result)
    if hosts:
        plots.append(_nic_plot(result, hosts))
    return plots
