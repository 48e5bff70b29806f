"""``tcplab check SCENARIO``: validate a scenario and show how it resolves; runs nothing.

    tcplab check SCENARIO [--set PATH=VALUE]... [--seed N] [--json]

The scenario is loaded, validated and resolved to the engine's configuration; the engine
itself, when built, says what it would refuse (an error, exit 2) or warn about. Then one
line per one-way link (rate in Mbit/s, delay in ms, loss, queue), per host with a CPU or NIC
model, per flow (its data and ACK routes and base RTT) and per app; ``--json`` prints the
resolved configuration instead.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from tcplab.commands.common import SeedOpt, SetOpt, fail, guard, stdout_console, warn
from tcplab.units import plural

__all__ = ["register", "check"]


def _engine_check(core: dict, sc: Any = None) -> None:
    """The engine's own verdict on a resolved scenario, when the engine is built: what it
    would refuse is an error now (exit 2), what it would warn about a warning (with the
    scenario's YAML paths for the engine's app and flow paths when ``sc`` is given)."""
    try:
        from tcplab.engine import import_core

        validate = getattr(import_core(), "validate", None)
    except ImportError:
        return
    if validate is None:
        return
    try:
        for text in validate(json.dumps(core)):
            typer.echo(f"warning: {text}", err=True)
    except ValueError as e:
        text = str(e)
        if sc is not None:
            from tcplab.scenario.checks import engine_message

            text = engine_message(sc, text)
        fail(f"engine: {text}", 2)


def _rate_mbit(bps: float) -> str:
    """Rates in ``check`` output: always Mbit/s (``1000 Mbit/s``, ``0.064 Mbit/s``)."""
    return f"{bps / 1e6:.6g} Mbit/s"


def _time_ms(ns: int) -> str:
    """Times in ``check`` output: always ms, exact to the nanosecond (``0.05 ms``, ``100.1 ms``)."""
    text = f"{int(ns) / 1e6:.6f}".rstrip("0").rstrip(".")
    return f"{text} ms"


@guard
def check(
    scenario: Annotated[str, typer.Argument(metavar="SCENARIO")],
    set_: SetOpt = None,
    seed: SeedOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the resolved engine configuration as JSON.")] = False,
) -> None:
    """Validate a scenario and show how it resolves (routes, queue limits); runs nothing."""
    from tcplab.loader import load_scenario
    from tcplab.scenario.pods import VETH_RATE_BPS
    from tcplab.scenario.qdiscs import describe as describe_qdisc

    sc = load_scenario(scenario, set_ or [], seed=seed)
    warn([sc])
    core = sc.to_core()
    _engine_check(core, sc)
    if as_json:
        typer.echo(json.dumps(core, indent=2))
        return
    console = stdout_console()
    console.print(
        f"{sc.name}: ok ({plural(len(core['nodes']), 'node')}, {plural(len(core['links']), 'one-way link')}, "
        f"{plural(len(core['flows']), 'flow')})",
        markup=False,
    )
    # One unit per quantity: rates in Mbit/s, times in ms, queue limits in packets or bytes.
    for link in core["links"]:
        qdisc = describe_qdisc(link["queue"])
        rate = "veth (1 Pbit/s)" if link["rate_bps"] == VETH_RATE_BPS else _rate_mbit(link["rate_bps"])
        for edt in link.get("edt") or []:
            pods = ", ".join(core["nodes"][i]["name"] for i in edt["nodes"])
            qdisc += f", EDT {pods} at {_rate_mbit(edt['rate_bps'])}"
        loss = link["loss"]
        loss_text = {"none": "no loss", "bernoulli": f"loss {loss.get('p', 0) * 100:g}%"}.get(
            loss["kind"], loss["kind"]
        )
        if loss["kind"] == "outage":
            from tcplab.units import format_time as _fmt_time

            loss_text = f"outage from {_fmt_time(loss['start_ns'])} to {_fmt_time(loss['end_ns'])} (all lost)"
        window = link.get("loss_window") or {}
        if loss["kind"] in ("bernoulli", "gilbert_elliott") and (window.get("start_ns") or window.get("end_ns")):
            from tcplab.units import format_time as _fmt_time

            loss_text += f" from {_fmt_time(window.get('start_ns') or 0)}"
            if window.get("end_ns") is not None:
                loss_text += f" to {_fmt_time(window['end_ns'])}"
        filt = link.get("loss_filter") or {}
        if loss["kind"] != "none" and filt.get("data_only"):
            loss_text += " (data segments only)"
        if loss["kind"] != "none" and filt.get("min_ip_bytes"):
            loss_text += f" (packets of at least {filt['min_ip_bytes']} bytes)"
        if link.get("bleach_ecn"):
            qdisc += ", clears the ECN field (bleach_ecn)"
        console.print(
            f"  link {link['name']}: {rate}, delay {_time_ms(link['delay_ns'])}, {loss_text}, {qdisc}",
            markup=False,
        )
    for node in core["nodes"]:
        extras = []
        if node.get("forwarding"):
            extras.append("forwards (carries pods)")
        if node.get("cpu"):
            cpu = node["cpu"]
            extras.append(f"cpu {cpu['share'] * 100:g}% of every {_time_ms(cpu['period_ns'])}")
        if node.get("cpu_cost"):
            c = node["cpu_cost"]
            extras.append(
                f"stack cost tx_skb {c['tx_skb_ns'] / 1e3:g}us, rx_packet {c['rx_packet_ns'] / 1e3:g}us, "
                f"rx_skb {c['rx_skb_ns'] / 1e3:g}us"
            )
        if node.get("nic"):
            nic = node["nic"]
            extras.append(f"nic {nic['driver']} rx_ring {nic['rx_ring']} x {plural(nic['rx_queues'], 'queue')}")
        if extras:
            console.print(f"  host {node['name']}: {'; '.join(extras)}", markup=False)
    # A workload of many connections (a broadcast's thousands) shows its first few routes.
    shown_per_app = 4
    hidden: dict[int, tuple[str, int]] = {}
    for a in core.get("apps", []):
        for k in a["flows"][shown_per_app:]:
            hidden[k] = (a["name"], len(a["flows"]) - shown_per_app)
    for index, route in enumerate(sc.routes()):
        if index in hidden:
            name, more = hidden[index]
            if index - 1 not in hidden:
                console.print(f"  ... {more} more connections of app {name}", markup=False)
            continue
        reader = _reader_text((core["flows"][index] if index < len(core["flows"]) else {}).get("reader"))
        console.print(
            f"  flow {route['flow']}: data {' '.join(route['data'])}; acks {' '.join(route['ack'])}; "
            f"base RTT {_time_ms(route['base_rtt_ns'])}{reader}",
            markup=False,
        )
    for a in core.get("apps", []):
        n = len(a["flows"])
        console.print(
            f"  app {a['name']}: {a['spec']['kind']} over {n} connection{'s' if n != 1 else ''}", markup=False
        )


def _reader_text(reader: dict | None) -> str:
    """``; reader: 2 Mbit/s`` for a flow whose receiving application reads slowly, else ''."""
    from tcplab.units import format_size, format_time

    if not reader or reader.get("kind") == "immediate":
        return ""
    if reader["kind"] == "rate":
        return f"; reader: at most {_rate_mbit(reader['rate_bps'])}"
    return f"; reader: {format_size(reader['bytes'])} every {format_time(reader['interval_ns'])}"


def register(app: typer.Typer) -> None:
    """Add ``tcplab check`` to the root app."""
    app.command(short_help="Validate a scenario and show how it resolves.")(check)
