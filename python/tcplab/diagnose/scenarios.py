"""From a finding to a tcplab scenario that reproduces the observed path.

The model: every scenario has the same shape -- two hosts (``sender``, ``receiver``) and a
router ``path`` between them carrying the impairment (as in ``cubic-vs-bbr-lossy.yaml``):
the sender's NIC link is fast and short, the path link has

* the **RTT** of the affected connections (ss ``rtt``, median), split as one-way delay;
* the **rate** they reach (ss ``delivery_rate`` or BBR's ``bw``; the fastest flow to the
  same peer when some are starved, since that is what the path can carry), else 1 Gbit/s;
* **loss** from the retransmission ratio (``TcpRetransSegs/TcpOutSegs`` over the capture,
  or ss ``bytes_retrans/bytes_sent``), Bernoulli, or Gilbert-Elliott bursts (mean burst of
  two packets) where the finding is about bursts (RTOs, NIC drops);
* a 1-BDP pfifo; the **congestion control** in use; one bulk flow per affected connection;
* the host's ``tcp_wmem`` (sender), ``tcp_rmem`` (receiver) and ``tcp_slow_start_after_idle``
  when the capture has them, so window-limited findings reproduce their limit.

What the engine cannot model yet (NIC rings, cloud allowances, CPU time slices, fq/tbf,
EDT) is said in the scenario's description rather than faked. Every value the host did not
show is a stated default. :func:`scenario_for` returns None for findings a path scenario
does not help with (missing counters, fq_codel AQM behaviour).
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from tcplab.diagnose.snapshot import Host
from tcplab.units import plural

__all__ = ["scenario_for", "scenario_yaml"]

DEFAULT_RATE_BPS = 1e9
DEFAULT_RTT_MS = 1.0
ENGINE_CCS = ("reno", "cubic", "bbr", "dctcp")
NO_SCENARIO = frozenset({"not-collected", "fq-codel-drops", "qdisc-drops", "tail-loss-probes", "spurious-rto"})

_CANNOT = {
    "nic-rx-drops": "the NIC receive ring and the cloud instance's bandwidth/pps allowance are not modelled yet "
    "(a later issue); bursty Gilbert-Elliott loss on the path stands in for their drops",
    "cpu-steal-bbr": "CPU contention (vCPU time slices) is not modelled yet (a later issue); run the scenario with "
    "--set flows.0.cc_params.bbr_vm_patch=true to compare the patched BBR once it is",
    "cpu-steal": "CPU contention is not modelled yet (a later issue)",
    "cilium-bbr-low-rtt": "the loss on the real path is not in the capture: add it (`links.N.loss`) to see "
    "what it does to either cc",
    "bbr-without-fq": "the fq qdisc is not modelled yet; the engine's TCP uses internal pacing as Linux >= 4.13 "
    "does without fq",
    "tbf-drops": "the tbf shaper is not modelled yet; a path at the tbf rate with a shallow pfifo stands in",
    "tbf-shaping": "the tbf shaper is not modelled yet; a path at the tbf rate stands in",
    "fq-horizon-drops": "fq and EDT horizons are not modelled yet (a later issue)",
    "fq-flow-limit": "fq's per-flow limit is not modelled yet (a later issue)",
    "bbr-starved": "a real policer (token bucket) is not modelled yet; random loss at the observed retransmission "
    "ratio stands in",
    "rto-rate": "whatever drops the bursts on the real path (a NIC ring or cloud allowance, a shallow switch "
    "buffer) is not modelled; Gilbert-Elliott loss bursts at the observed retransmission ratio stand in",
    "rwnd-limited": "nothing is missing: set the receiver's tcp_rmem in hosts.receiver.sysctl to try sizes",
    "slow-reader": "an application that reads slower than the data arrives is not modelled yet (applications "
    "come with a later issue); the bulk receiver reads at once, so the window limit of a slow reader does not show",
    "sndbuf-limited": "nothing is missing: set the sender's tcp_wmem in hosts.sender.sysctl to try sizes",
    "cwnd-collapse": "whatever drops the packets on the real path (policer, NIC, switch) is not modelled; loss at "
    "the observed retransmission ratio stands in",
}


def _rate_text(bps: float) -> str:
    return f"{max(int(round(bps)), 1000)}bit"


def _delay_text(ms: float) -> str:
    return f"{max(int(round(ms * 1000)), 1)}us"


def _pct(p: float) -> str:
    return f"{100 * p:.4g}%"


def _host_retrans_ratio(host: Host) -> float | None:
    d_r, d_o = host.delta("TcpRetransSegs"), host.delta("TcpOutSegs")
    if d_r is not None and d_o:
        return d_r / d_o
    return None


def _host_rtt(host: Host) -> tuple[float, str]:
    """The RTT of a finding that carries none (a configuration finding): the median srtt of the
    host's established connections in its last ss capture -- to other hosts when there are any
    (loopback RTTs are not a path's) -- else a stated default."""
    snaps = [sn for sn in host.snapshots if sn.sockets is not None]
    if not snaps:
        return DEFAULT_RTT_MS, "a default RTT of 1 ms (no ss capture)"
    estab = [s for s in snaps[-1].sockets if s.state == "ESTAB" and "rtt" in s.values]
    remote = [s for s in estab if not s.peer_host.startswith("127.") and s.peer_host not in ("::1", "localhost")]
    pick = remote or estab
    rtts = [s.values["rtt"] for s in pick if math.isfinite(s.values["rtt"]) and s.values["rtt"] > 0]
    if not rtts:
        return DEFAULT_RTT_MS, "a default RTT of 1 ms (ss showed no connection with an rtt)"
    where = "to other hosts" if remote else "over loopback (no connection to another host)"
    return float(statistics.median(rtts)), f"the median srtt of the {plural(len(rtts), 'connection')} ss showed {where}"


def _path_rate(host: Host, data: dict) -> tuple[float, str]:
    if data.get("reference_bps"):
        return float(data["reference_bps"]), "the median rate of the healthy flows to the same peer (ss)"
    socks = [s for sn in host.snapshots[-1:] for s in (sn.sockets or []) if s.state == "ESTAB"]
    peer = data.get("peer")
    if peer:
        socks = [s for s in socks if s.peer_host == peer] or socks
    rates = [s.bbr.get("bw_bps") or s.values.get("delivery_rate_bps") or 0 for s in socks]
    rates = [r for r in rates if r > 0]
    if rates:
        return max(rates), "the highest delivery rate ss showed on this path"
    if data.get("rate_bps"):
        return float(data["rate_bps"]), "the observed rate"
    return DEFAULT_RATE_BPS, "a default of 1 Gbit/s (no delivery rate was captured)"


def scenario_for(finding, host: Host) -> dict[str, Any] | None:  # noqa: ANN001
    if finding.id in NO_SCENARIO:
        return None
    data = finding.data or {}
    notes: list[str] = []
    rtt = data.get("rtt_ms")
    rtt_note = "the median srtt ss showed"
    if not isinstance(rtt, int | float) or not math.isfinite(rtt) or rtt <= 0:
        rtt, rtt_note = _host_rtt(host)
    rate, rate_note = _path_rate(host, data)
    if not math.isfinite(rate) or rate <= 0:
        rate, rate_note = DEFAULT_RATE_BPS, "a default of 1 Gbit/s (the captured rate was unusable)"
    if finding.id in ("tbf-drops", "tbf-shaping"):
        qd = next(
            (
                q
                for sn in host.snapshots[-1:]
                for q in (sn.qdiscs or [])
                if q.kind == "tbf" and q.dev == data.get("device")
            ),
            None,
        )
        r = qd.params.get("rate_bps") if qd else None
        if r:
            rate, rate_note = r, "the tbf rate"
    loss = data.get("retrans_ratio")
    loss_note = "the retransmission ratio"
    if loss is None:
        loss = _host_retrans_ratio(host)
    if loss is not None and not math.isfinite(loss):
        loss = None
    if loss is None or loss <= 0:
        loss, loss_note = (
            (0.01, "a stand-in of 1 % (no retransmission ratio was captured)")
            if finding.id in ("cwnd-collapse", "bbr-starved", "rto-rate", "nic-rx-drops")
            else (0.0, "none observed")
        )
    loss = min(float(loss), 0.2)
    cc = data.get("cc") if isinstance(data.get("cc"), str) else None
    cc_note = "" if cc or host.cc_default() else " (Linux's default; the capture did not show one)"
    cc = cc or host.cc_default() or "cubic"
    if cc not in ENGINE_CCS:
        notes.append(f"the host uses {cc}, which the engine does not have; cubic stands in")
        cc = "cubic"
    n = data.get("connections") or data.get("flows") or 1
    flows = int(n) if isinstance(n, int | float) and math.isfinite(n) else 1
    flows = max(1, min(flows, 64))
    bursty = finding.id in ("rto-rate", "nic-rx-drops")
    if loss <= 0:
        loss_spec: Any = "0%"
    elif bursty:
        r = 0.5  # mean burst of 1/r = 2 packets
        p = loss * r / (1 - loss)
        loss_spec = {"gilbert_elliott": {"p": _pct(p), "r": _pct(r)}}
    else:
        loss_spec = _pct(loss)
    one_way = rtt / 2
    nic_delay = min(0.025, one_way / 10)
    cannot = _CANNOT.get("slow-reader" if data.get("slow_reader") else finding.id)
    desc = [
        f"Generated by tcplab diagnose from the finding '{finding.id}': {finding.summary}.",
        f"Path: RTT {rtt:.3f} ms ({rtt_note}); rate {rate / 1e6:.3f} Mbit/s ({rate_note}); "
        f"loss {100 * loss:.3g} % ({loss_note}{', in bursts' if bursty and loss > 0 else ''}); "
        f"{plural(flows, 'bulk flow')} with {cc}{cc_note}.",
    ]
    if cannot:
        desc.append(f"Not modelled: {cannot}.")
    desc.extend(notes)
    if finding.seed:
        desc.append(f"Matches story {finding.seed} (docs/stories.md).")
    sender_sysctl: dict[str, Any] = {"net.ipv4.tcp_congestion_control": cc}
    receiver_sysctl: dict[str, Any] = {}
    wmem, rmem = host.sysctls.triple("net.ipv4.tcp_wmem"), host.sysctls.triple("net.ipv4.tcp_rmem")
    if wmem:
        sender_sysctl["net.ipv4.tcp_wmem"] = " ".join(map(str, wmem))
    if rmem:
        receiver_sysctl["net.ipv4.tcp_rmem"] = " ".join(map(str, rmem))
    ssai = host.sysctls.integer("net.ipv4.tcp_slow_start_after_idle")
    if ssai in (0, 1):
        sender_sysctl["net.ipv4.tcp_slow_start_after_idle"] = bool(ssai)
    if wmem or rmem:
        desc.append("Buffers: both ends use this host's tcp_wmem/tcp_rmem.")
    alt = "bbr" if cc != "bbr" else "cubic"
    desc.append(f"Compare: tcplab compare FILE --set flows.0.cc={cc},{alt}")
    name = f"diagnose-{finding.id}"
    if data.get("device"):
        name += f"-{data['device']}"
    elif data.get("peer"):
        name += "-" + str(data["peer"]).replace(":", "-")
    name = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in name)
    return {
        "name": name,
        "description": "\n".join(desc) + "\n",
        "seed": 1,
        "duration": "30s",
        "sample_interval": "100ms",
        "hosts": {
            "sender": {"sysctl": sender_sysctl},
            "receiver": {"sysctl": receiver_sysctl} if receiver_sysctl else {},
        },
        "routers": ["path"],
        "links": [
            {"between": ["sender", "path"], "rate": _rate_text(max(rate * 10, 1e9)), "delay": _delay_text(nic_delay)},
            {
                "between": ["path", "receiver"],
                "rate": _rate_text(rate),
                "delay": _delay_text(max(one_way - nic_delay, 0.001)),
                "loss": loss_spec,
                "queue": {"qdisc": "pfifo", "limit": "1bdp"},
                "reverse": {"loss": "0%"},
            },
        ],
        "flows": [{"from": "sender", "to": "receiver", "app": "bulk", "count": flows}],
    }


def scenario_yaml(scenario: dict[str, Any]) -> str:
    """The scenario as YAML, the description as a literal block (readable in an editor)."""
    import yaml

    class _Dumper(yaml.SafeDumper):
        pass

    def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    _Dumper.add_representer(str, _str)
    return yaml.dump(scenario, Dumper=_Dumper, sort_keys=False, width=100, allow_unicode=True)
