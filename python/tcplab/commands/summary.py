"""What ``tcplab run`` and ``tcplab kernel run`` print after a run: the summary table.

The model: one row per flow (an app's many connections are one row, as summary.json has
them) with goodput, retransmissions, RTOs and the RTT percentiles, the data direction when
a flow's sender is its server, and the ``rwnd-lim %`` column when a reader is slow or a flow
was receive-window- or send-buffer-limited; then one line per timed qdisc, Cilium EDT map,
NIC and CPU model (:func:`_datapath_lines`), per application (its headline metrics), per
stuck episode, and the invariant checks that failed. Everything comes from the run's
summary (:attr:`tcplab.results.Result.summary`) and configuration.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tcplab.commands.common import fmt, stdout_console

__all__ = ["print_run_summary", "LIMITED_SHOWN_PCT"]

_TIMED_QDISCS = ("tbf", "fq", "fq_codel")


def _rate_text(bps: float) -> str:
    """A rate as tc prints one: ``500 kbit/s``, ``10 Mbit/s``, ``1 Gbit/s`` (3 significant digits)."""
    for unit, scale in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if bps >= scale:
            return f"{bps / scale:.3g} {unit}"
    return f"{bps:.3g} bit/s"


def _datapath_lines(summary: dict) -> list[str]:
    """One line per timed qdisc (tc's dropped/overlimits and the drop-like xstats), per NIC
    (its nonzero drop counters, by their ethtool -S names) and per CPU model (steal)."""
    from tcplab.diagnose.ethtool import concept_of

    lines = []
    for link in summary.get("links", []):
        if link.get("qdisc") not in _TIMED_QDISCS:
            continue
        text = (
            f"qdisc {link['qdisc']} on {link.get('node', '?')} {link.get('dev', '?')} ({link['name']}): "
            f"dropped {link.get('drops') or 0}, overlimits {link.get('overlimits') or 0}"
        )
        extra = [
            f"{k} {v}"
            for k, v in (link.get("xstats") or {}).items()
            if v and k in ("flows_plimit", "horizon_drops", "horizon_caps", "drop_overlimit", "ecn_mark")
        ]
        lines.append(text + (", " + ", ".join(extra) if extra else ""))
    for link in summary.get("links", []):
        # Cilium's EDT drops (bpf/lib/edt.h: 2 s or more ahead) happen before the qdisc: not
        # in tc's counters (bpftool / cilium monitor show them on a real node).
        for edt in link.get("edt") or []:
            lines.append(
                f"edt on {link.get('node', '?')} {link.get('dev', '?')} (pod {', '.join(edt.get('pods') or ['?'])}, "
                f"{_rate_text(edt.get('rate_bps') or 0)}): dropped {edt.get('drops') or 0}"
            )
    for host in summary.get("hosts", []):
        nic = host.get("nic")
        if nic:
            counters = nic.get("ethtool") or {}
            drops = [f"{k} {v}" for k, v in counters.items() if v and concept_of(k)]
            lines.append(
                f"nic {host['name']} eth0 ({nic.get('driver', '?')}, rx ring {nic.get('rx_ring', '?')}): "
                + (", ".join(drops) if drops else "no ring drops")
            )
        cpu = host.get("cpu")
        if cpu:
            busy = cpu.get("busy_ratio")
            lines.append(
                f"cpu {host['name']}: steal {100 * (cpu.get('steal_ratio') or 0.0):.1f} % "
                f"(runs {100 * (cpu.get('share') or 0.0):g} % of every {(cpu.get('period_ns') or 0) / 1e6:g} ms)"
                + (f", network stack busy {100 * busy:.1f} % of its CPU time" if busy is not None else "")
            )
    return lines


def _app_lines(result) -> list[str]:  # noqa: ANN001
    """One line per application (workload) with its headline metrics:
    ``app NAME (KIND): metric value, ...`` (tcplab.results.apps.headline)."""
    from tcplab.results.apps import headline_text

    return [f"app {headline_text(app)}" for app in getattr(result, "apps", {}).values()]


def _joined(value: Any) -> str:
    return ",".join(value) if isinstance(value, list) else str(value)


def _ends(f: dict) -> str:
    """A summary flow's client -> server (``from -> to``)."""
    return f"{_joined(f.get('from'))} -> {_joined(f.get('to'))}"


def _data_dir(f: dict) -> str:
    """A summary flow's data direction, ``data_from -> data_to`` (the sender whose goodput,
    cwnd and RTT the row shows: the server for maerts, bidir's .rev, hls, nfs_stream)."""
    if f.get("data_from") is None:
        return _ends(f)
    return f"{_joined(f['data_from'])} -> {_joined(f.get('data_to'))}"


#: rwnd/sndbuf-limited share (percent of busy time) from which the CLI shows the column.
LIMITED_SHOWN_PCT = 1.0


def _show_limited(flows: list[dict], config: dict) -> bool:
    """Show the ``rwnd-lim %`` column (ss's rwnd_limited:Xms(Y%)) when a flow has a reader
    that is not immediate (a slow reader: ``reader:`` in the scenario) or any flow was
    receive-window- or send-buffer-limited for at least LIMITED_SHOWN_PCT % of its busy time."""
    if any((f.get("reader") or {}).get("kind", "immediate") != "immediate" for f in config.get("flows", [])):
        return True
    for f in flows:
        busy = f.get("busy_ms") or 0.0
        if (f.get("rwnd_limited_pct") or 0.0) >= LIMITED_SHOWN_PCT:
            return True
        if busy > 0 and 100.0 * (f.get("sndbuf_limited_ms") or 0.0) / busy >= LIMITED_SHOWN_PCT:
            return True
    return False


def print_run_summary(result, out_dir: Path) -> None:  # noqa: ANN001
    from rich import box
    from rich.table import Table
    from rich.text import Text

    console = stdout_console()
    s = result.summary
    table = Table(
        title=Text(f"{s['title']} (seed {s['seed']}, {s['duration_s']:g} s)"),  # Text: "[a=b]" is not markup
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    flows = s["flows"]  # an app's many connections are already one row (summary.json)
    show_data = any(_data_dir(f) != _ends(f) for f in flows)
    show_limited = _show_limited(flows, getattr(result, "config", {}) or {})
    table.add_column("flow", no_wrap=True)
    if show_data:
        table.add_column("data")
    table.add_column("cc")
    cols = ["goodput Mbit/s", "retrans %", "RTOs", "RTT p50 ms", "RTT p99 ms"]
    if show_limited:
        cols.append("rwnd-lim %")
    for col in cols:
        table.add_column(col, justify="right")
    for f in flows:
        n = f.get("connections")
        cells = [Text(f"{f['name']} ({n} connections)" if n else f["name"])]
        if show_data:
            cells.append(Text(_data_dir(f)))
        cc = f["cc"]
        cells += [
            Text(",".join(cc) if isinstance(cc, list) else cc),
            fmt(f["goodput_bps"], 1e-6, 3),
            fmt(f["retrans_ratio"], 100.0),
            str(f["timeouts"]),
            fmt(f["rtt_p50_ms"], 1, 1) if not n else "-",
            fmt(f["rtt_p99_ms"], 1, 1) if not n else "-",
        ]
        if show_limited:
            cells.append(fmt(f.get("rwnd_limited_pct"), 1, 1))
        table.add_row(*cells)
    console.print(table)
    drops = [f"{link['name']} {link['drops']}" for link in s["links"] if link.get("drops")]
    if drops:
        console.print("queue drops: " + ", ".join(drops))
    for line in _datapath_lines(s):
        console.print(Text(line))
    for line in _app_lines(result):
        console.print(Text(line))
    # cwnd-collapse / stuck episodes (tcplab.results.stuck): nothing when none
    from tcplab.results.stuck import episode_line

    for ep in s.get("stuck") or []:
        console.print(Text("warning: " + episode_line(ep)))
    inv = s["invariant"]
    rtt = inv.get("rtt_floor") or {}
    if not inv.get("ok", True):
        if rtt.get("ok", True) is False:
            console.print(f"[bold red]RTT check failed:[/] {rtt.get('message', '')}")
        if not inv.get("accounting_ok", rtt.get("ok", True) is False):
            console.print(f"[bold red]packet accounting failed:[/] {inv.get('message', '')}")
    console.print(f"wrote {out_dir}")
