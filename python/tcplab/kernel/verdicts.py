"""``tcplab validate``'s verdicts: a simulation against a kernel run of the same scenario,
metric by metric, within tolerance or not.

The model. :func:`compare_runs` is a pure function of the two
:class:`~tcplab.results.Result` objects (a kernel run's
:class:`~tcplab.kernel.result.KernelResult` is one): it reads them and returns a
:class:`Validation`, the verdict table. The kernel is the reference.
:mod:`tcplab.kernel.validate` runs both worlds and writes the validation directory;
:mod:`tcplab.kernel.repeat` judges N runs of each (``--runs N``) with the same rows.

Metrics (``metric`` keys of :class:`MetricRow`), each with the simulator's value, the
kernel's, the difference, the tolerance (:mod:`tcplab.kernel.tolerances`) and a verdict
``within`` / ``outside`` / ``n/a`` with a one-line reason:

Both worlds are measured over the same window of each flow (:mod:`tcplab.kernel.window`):
from each world's own first byte plus a warm-up of max(2 s, 20 % of the run), for the same
length in both (a kernel connection that opened late is measured from when it opened, not
divided by time it did not run; a late start is flagged in :attr:`Validation.notes`).

``goodput_bps`` (per flow)
    bytes received by the application in the window x 8 / the window's length (the
    receiver-side throughput netperf reports, over the steady part). When a world has no
    time series of the flow, both worlds' lifetime goodput (``Result.flows``), said so in
    the row's reason.
``rtt_p50_ms``, ``rtt_p99_ms`` (per flow)
    percentiles of the smoothed RTT (``srtt_us``, what ``ss -ti`` prints as ``rtt:``) over
    the samples in the window (after the warm-up; a run too short for one gives ``n/a``).
    Both worlds are compared on the same statistic from the same sampling (every
    ``sample_interval``), not on the simulator's per-ACK RTT histogram, which the kernel
    does not expose. Percentiles are NumPy's linear interpolation between samples; fewer
    than :data:`MIN_RTT_SAMPLES` non-zero samples give ``n/a``.
``retrans_pct`` (per flow)
    retransmitted segments / data segments sent, in percent (tcp_info's
    ``tcpi_total_retrans / tcpi_data_segs_out``; the simulator counts the same).
``queue_drops`` (per one-way link)
    packets the link's egress qdisc dropped (``tc -s qdisc``'s ``dropped`` of the root
    qdisc; a tbf counts its child's drops too, Linux v6.12 net/sched/sch_tbf.c:
    tbf_enqueue()). Random loss (nft on the kernel's wire, the simulator's loss model) is not
    a queue drop and is not compared.

ECN (RFC 3168), only for the flows where it is in play (:func:`ecn_in_play`: the flow's
client asks for it, ``tcp_ecn`` 1, or a DCTCP end needs it, or either world's sockets
negotiated it; a scenario without ECN has none of these rows):

``ecn_state`` (per flow)
    what ``ss -tio`` prints of ECN on the data sender's socket and on the receiver's:
    ``ecn`` (tcpi_options' TCPI_OPT_ECN: ``TCP_ECN_OK``, negotiated in the handshake) and
    ``ecnseen`` (TCPI_OPT_ECN_SEEN: ``TCP_ECN_SEEN``, an ECT or CE segment arrived), at the
    end of the run; ``tp->ecn_flags``' other bits are in no kernel interface and are not
    compared. The value is a code (:data:`ECN_STATE_BITS`), shown as the words,
    ``sender / receiver``; within only when both worlds are equal (a negotiation either
    happened or did not: no tolerance).
``ect0_pkts`` (per host that receives such a flow's data)
    IP packets the host received with ECT(0) (nstat ``IpExtInECT0Pkts``, Linux
    net/ipv4/ip_input.c: ip_rcv_core() counts each segment of an skb by its ECN field),
    over the run (the kernel's: after minus before). Linux marks ECT(0) on new data only
    (tcp_ecn_send(); retransmissions and pure ACKs are not-ECT), so this counts the data
    segments delivered: a count like the queue's drops, with an absolute allowance for
    small counts, and relative like goodput, which it follows (tolerance key ``ect``:
    10 packets or 10 %). Zero in one world and thousands in the other is the negotiation
    failing on the wire (a host not asking, a path clearing the field).
``ce_pkts`` (per such host, where a queue can mark: :func:`marks_possible`)
    IP packets the host received with CE (nstat ``IpExtInCEPkts``): the marks that reached
    the receiver. Tolerance key ``ce``: 10 packets or 50 % (the drops': where a window's
    packets cross a threshold is as much chance as where a queue overflows).
``ce_marks`` (per one-way link whose queue marks by ``ce_threshold``, or that marked)
    packets the link's queue marked CE for a sojourn above ``ce_threshold`` (``tc -s``'s
    fq_codel/fq ``ce_mark``; a kernel run where the delay line marks in fq_codel's place
    counts its own, :func:`tcplab.kernel.plan.line_markers`). Tolerance ``ce``.

A kernel run marked invalid (``summary["kernel"]["valid"]`` false: the machine was busy, the
delay line late, an agent failed; see ARCH11) gets no verdicts: every row is ``n/a`` with the
reason, :attr:`Validation.valid` is false and ``tcplab validate`` exits 1. When the
machine's load made it invalid (the quiet check, a delay line or sampler late), the
validation says how busy the machine was and how to rerun (:attr:`Validation.busy`,
:meth:`Validation.rerun_hint`: :mod:`tcplab.kernel.busy`).

A :class:`Validation` is data the views read (:mod:`tcplab.views.validate`): its rows, the
steady windows, the kernel's and the machine's identity, and with ``--runs N`` the rule the
verdicts followed (:attr:`Validation.repeat_rule`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tcplab.kernel.tolerances import Tolerances
from tcplab.kernel.window import STEADY_FRACTION, STEADY_MIN_S, FlowWindow, flow_windows, window_goodput_bps

if TYPE_CHECKING:
    from tcplab.results import Result

__all__ = [
    "MetricRow",
    "Validation",
    "compare_runs",
    "kernel_validity",
    "machine_busy",
    "judge",
    "metric_text",
    "finite_value",
    "unknown_columns",
    "METRICS",
    "EXACT_METRICS",
    "ECN_STATE_BITS",
    "ecn_state",
    "ecn_state_text",
    "ecn_in_play",
    "marks_possible",
    "MIN_RTT_SAMPLES",
    "STEADY_MIN_S",
    "STEADY_FRACTION",
    "VERDICTS",
]

#: Fewer non-zero srtt samples than this in the steady part: no RTT verdict.
MIN_RTT_SAMPLES = 10
#: The verdicts a metric can get.
VERDICTS = ("within", "outside", "inconclusive (spread)", "n/a")

#: metric key -> (what people read, tolerance key)
METRICS: dict[str, tuple[str, str]] = {
    "goodput_bps": ("goodput", "goodput"),
    "rtt_p50_ms": ("srtt p50", "rtt_p50"),
    "rtt_p99_ms": ("srtt p99", "rtt_p99"),
    "retrans_pct": ("retransmissions", "retrans"),
    "queue_drops": ("queue drops", "drops"),
    "ecn_state": ("ECN (ss -tio)", "ecn"),
    "ect0_pkts": ("ECT(0) packets in", "ect"),
    "ce_pkts": ("CE packets in", "ce"),
    "ce_marks": ("CE marks", "ce"),
}
#: Metrics judged by equality, not by a tolerance (:func:`judge`).
EXACT_METRICS = frozenset({"ecn_state"})
#: ``ecn_state``'s code: (bit, socket, ss word). The words are ss's (misc/ss.c
#: tcp_show_info(): ``ecn`` for TCPI_OPT_ECN, ``ecnseen`` for TCPI_OPT_ECN_SEEN).
ECN_STATE_BITS = ((1, "sender", "ecn"), (2, "sender", "ecnseen"), (4, "receiver", "ecn"), (8, "receiver", "ecnseen"))
_ECN_WORDS = "ss -tio's words on the data sender's / the receiver's socket; -: none"
#: ``tp->ecn_flags`` bits (include/net/tcp.h, v6.12) and what they set in the code.
_TCP_ECN_OK, _TCP_ECN_SEEN = 1, 8


@dataclass(frozen=True)
class MetricRow:
    """One compared metric of one flow or link."""

    metric: str  #: a key of :data:`METRICS`
    subject: str  #: the flow's or the link's name
    kind: str  #: "flow" or "link"
    sim: float | None
    kernel: float | None
    #: sim - kernel, in the metric's unit (Mbit/s are bit/s here; pp for retrans_pct)
    difference: float | None
    #: (sim - kernel) / kernel, None when the kernel's value is 0 or missing
    relative: float | None
    tolerance: str
    verdict: str
    reason: str
    #: ``--runs N`` > 1 only (:mod:`tcplab.kernel.repeat`): each world's runs (values, n,
    #: mean, sd, min, max); ``sim``/``kernel`` above are then the means
    sim_stats: dict[str, Any] | None = None
    kernel_stats: dict[str, Any] | None = None
    #: standard error of the difference of the means (None: a world has fewer than 2 values)
    se_difference: float | None = None

    @property
    def label(self) -> str:
        return METRICS[self.metric][0]


@dataclass
class Validation:
    """The comparison of one scenario's simulation with its kernel run."""

    scenario: str
    title: str
    rows: list[MetricRow]
    tolerances: Tolerances
    #: False: the kernel run was invalid or failed; no verdicts (every row n/a)
    valid: bool = True
    invalid_reasons: list[str] = field(default_factory=list)
    #: per flow name: (from_s, to_s) of the simulation's steady window (the RTT percentiles'
    #: and the goodput's; the kernel's is in :attr:`windows`)
    steady: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: per flow name: the window of both worlds (:class:`tcplab.kernel.window.FlowWindow`)
    windows: dict[str, FlowWindow] = field(default_factory=dict)
    #: the kernel run's identity: release, hz (from its summary's "kernel"), kind
    kernel: dict[str, Any] = field(default_factory=dict)
    #: the machine: hostname, cpus, cpu model, python
    machine: dict[str, Any] = field(default_factory=dict)
    #: when the validation ran (UTC, ISO 8601); set by :func:`validate`
    when: str | None = None
    #: run directories relative to the validation directory (None: not written)
    sim_dir: str | None = "sim"
    kernel_dir: str | None = "kernel"
    command: list[str] | None = None
    #: things a reader should know before trusting the verdicts (one line each): the
    #: kernel's quiet check failed but was allowed, HZ differs between the worlds, ...
    notes: list[str] = field(default_factory=list)
    #: per one-way link, what each world's path did (not judged): packets sent by the link's
    #: egress qdisc, its queue drops and the random-loss drops after it (nft in the kernel)
    path: list[dict[str, Any]] = field(default_factory=list)
    #: ``--runs N``: runs per world (1: a single pair, today's comparison)
    runs: int = 1
    #: the simulations' seeds, in run order
    seeds: list[int] = field(default_factory=list)
    #: kernel runs left out of the statistics, one line each (``kernel run-2: INVALID: ...``)
    excluded: list[str] = field(default_factory=list)
    #: the kernel runs (1-based) the statistics cover
    valid_kernel_runs: list[int] = field(default_factory=list)
    #: with runs > 1: every run directory, relative to the validation directory
    sim_dirs: list[str] = field(default_factory=list)
    kernel_dirs: list[str] = field(default_factory=list)
    #: ``--runs N``: the rule the verdicts followed (:data:`tcplab.kernel.repeat.RULE`)
    repeat_rule: str | None = None
    #: ``--runs N``: kernel runs run a second time because the first was invalid, one line
    #: each (``kernel run-2: retried once: the first attempt was INVALID: ...``)
    retried: list[str] = field(default_factory=list)
    #: an invalid kernel run the machine's load made invalid: how busy it was
    #: (:func:`tcplab.kernel.busy.busy_figures`); empty otherwise
    busy: dict[str, Any] = field(default_factory=dict)

    def busy_line(self) -> str | None:
        """How busy the machine was, on one line (None: the run was not invalid for it)."""
        if not self.busy:
            return None
        from tcplab.kernel.busy import busy_text

        return busy_text(self.busy)

    def rerun_hint(self) -> str | None:
        """How to run it again (None: the run was not invalid for the machine's load)."""
        if not self.busy:
            return None
        from tcplab.kernel.busy import rerun_hint

        return rerun_hint(self.command, self.busy)

    def counts(self) -> dict[str, int]:
        """How many metrics got each verdict."""
        out = dict.fromkeys(VERDICTS, 0)
        for r in self.rows:
            out[r.verdict] += 1
        return out

    def verdict_line(self) -> str:
        """``7 metrics: 5 within tolerance, 1 outside, 1 n/a`` (or the invalid reason)."""
        if not self.valid:
            return "INVALID: " + "; ".join(self.invalid_reasons or ["the kernel run is invalid"])
        c = self.counts()
        line = f"{len(self.rows)} metrics: {c['within']} within tolerance, {c['outside']} outside, {c['n/a']} n/a"
        if self.runs > 1 or c["inconclusive (spread)"]:
            line += f", {c['inconclusive (spread)']} inconclusive (spread)"
        if self.runs > 1:
            line += f" ({self.runs} runs each)"
        return line

    def to_json(self) -> dict[str, Any]:
        """validation.json."""
        return _clean(
            {
                "scenario": self.scenario,
                "title": self.title,
                "when": self.when,
                "valid": self.valid,
                "invalid_reasons": list(self.invalid_reasons),
                "verdict": self.verdict_line(),
                "counts": self.counts(),
                "kernel": self.kernel,
                "machine": self.machine,
                "tolerances": self.tolerances.to_json(),
                "tolerance_spec": self.tolerances.spec(),
                "steady": {k: {"from_s": a, "to_s": b} for k, (a, b) in self.steady.items()},
                "windows": {k: w.to_json() for k, w in self.windows.items()},
                "runs": {"sim": self.sim_dir, "kernel": self.kernel_dir},
                "command": self.command,
                "metrics": [asdict(r) for r in self.rows],
                "path": self.path,
                "notes": list(self.notes),
                "busy": dict(self.busy),
                "busy_text": self.busy_line(),
                "rerun": self.rerun_hint(),
                **({"repeat": self._repeat_json()} if self.runs > 1 else {}),
            }
        )

    def _repeat_json(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "seeds": list(self.seeds),
            "valid_kernel_runs": list(self.valid_kernel_runs),
            "excluded": list(self.excluded),
            "retried": list(self.retried),
            "sim": list(self.sim_dirs),
            "kernel": list(self.kernel_dirs),
            "rule": self.repeat_rule,
        }


def _clean(x: Any) -> Any:
    if isinstance(x, Mapping):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return x if math.isfinite(x) else None
    return x


# -- the pure core ----------------------------------------------------------------------


def kernel_validity(kern: Result) -> tuple[bool, list[str]]:
    """(valid, reasons) from a kernel run's summary (``"kernel": {"valid", "invalid_reasons"}``);
    a result without that block (a simulation standing in for the kernel) is valid."""
    info = (kern.summary or {}).get("kernel")
    if not isinstance(info, Mapping):
        return True, []
    valid = bool(info.get("valid", True))
    reasons = [str(r) for r in info.get("invalid_reasons") or []]
    if not valid and not reasons:
        reasons = ["the kernel run is marked invalid"]
    return valid, reasons


def _srtt_ms(result: Result, flow: str, window: tuple[float, float]) -> np.ndarray:
    """The flow's non-zero srtt samples (ms) inside the window (0 = no RTT sample yet)."""
    ts = result.timeseries
    if ts is None or ts.empty or "srtt_us" in unknown_columns(result):
        return np.array([], dtype=np.float64)
    rows = ts[ts["flow_name"] == flow]
    t = rows["t_s"].to_numpy(dtype=np.float64)
    srtt = rows["srtt_us"].to_numpy(dtype=np.float64)
    keep = (t >= window[0] - 1e-9) & (t <= window[1] + 1e-9) & (srtt > 0)
    return srtt[keep] / 1000.0


def unknown_columns(result: Result) -> set[str]:
    """Time-series columns a kernel run could not measure (ss does not show them)."""
    cols: set[str] = set()
    for source in (getattr(result, "unknown_columns", None), (result.summary or {}).get("kernel")):
        if isinstance(source, Mapping):
            source = source.get("unknown_columns")
        if isinstance(source, (list, tuple, set, frozenset)):
            cols.update(str(c) for c in source)
    return cols


def finite_value(x: Any) -> float | None:
    if x is None:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def metric_text(metric: str, v: float) -> str:
    from tcplab.views.report import sig

    if metric == "goodput_bps":
        return f"{sig(v / 1e6)} Mbit/s"
    if metric in ("rtt_p50_ms", "rtt_p99_ms"):
        return f"{v:.1f} ms"
    if metric == "retrans_pct":
        return f"{v:.2f} %"
    if metric == "ecn_state":
        return ecn_state_text(v)
    return f"{v:.0f} packets"


def ecn_state(sender_flags: Any, receiver_flags: Any) -> float | None:
    """The ``ecn_state`` code (:data:`ECN_STATE_BITS`) of two sockets' ``tp->ecn_flags``
    (only TCP_ECN_OK and TCP_ECN_SEEN count: what tcp_info shows); None when either is
    unknown."""
    s, r = finite_value(sender_flags), finite_value(receiver_flags)
    if s is None or r is None:
        return None
    code = 0
    for flags, ok_bit, seen_bit in ((int(s), 1, 2), (int(r), 4, 8)):
        code |= (ok_bit if flags & _TCP_ECN_OK else 0) | (seen_bit if flags & _TCP_ECN_SEEN else 0)
    return float(code)


def ecn_state_text(code: float) -> str:
    """``ecn / ecn ecnseen``: the ss words of the sender's socket, then the receiver's (``-``:
    none); a code that is not a whole number (a mean over runs that differ) as a number."""
    if not float(code).is_integer() or not 0 <= code < 16:
        return f"{code:.2f} (runs differ)"
    words: dict[str, list[str]] = {"sender": [], "receiver": []}
    for bit, sock, word in ECN_STATE_BITS:
        if int(code) & bit:
            words[sock].append(word)
    return " / ".join(" ".join(words[sock]) or "-" for sock in ("sender", "receiver"))


def judge(
    metric: str, subject: str, kind: str, sim: float | None, kern: float | None, tol: Tolerances, missing: str = ""
) -> MetricRow:
    """One row: the difference and the verdict (within when any of the metric's tolerances holds)."""
    key = METRICS[metric][1]
    text = "equal" if metric in EXACT_METRICS else tol.text(key)
    if sim is None or kern is None:
        which = "the simulation" if sim is None else "the kernel run"
        if sim is None and kern is None:
            which = "either run"
        reason = missing or f"no value in {which}"
        return MetricRow(metric, subject, kind, sim, kern, None, None, text, "n/a", reason)
    diff = sim - kern
    if metric in EXACT_METRICS:
        return _judge_exact(metric, subject, kind, sim, kern, text)
    rel = diff / kern if kern != 0 else None
    absolute = {
        "retrans": tol.retrans_pp,
        "drops": tol.drops_packets,
        "ect": tol.ect_packets,
        "ce": tol.ce_packets,
    }.get(key)
    relative = getattr(tol, f"{key}_rel")
    eps = 1e-9
    ok_abs = absolute is not None and abs(diff) <= absolute + eps
    if relative is not None:
        ok_rel = (rel is not None and abs(rel) <= relative + eps) or (rel is None and diff == 0)
    else:
        ok_rel = False
    if absolute is None and relative is None:
        return MetricRow(metric, subject, kind, sim, kern, diff, rel, text, "n/a", "no tolerance set for this metric")
    verdict = "within" if ok_abs or ok_rel else "outside"
    if diff == 0:
        reason = f"sim and kernel both {metric_text(metric, sim)} (tolerance {text})"
        return MetricRow(metric, subject, kind, sim, kern, diff, rel, text, verdict, reason)
    else:
        amount = metric_text(metric, abs(diff)) if metric != "retrans_pct" else f"{abs(diff):.2f} pp"
        if rel is not None and metric != "goodput_bps":
            amount += f" ({abs(rel) * 100:.1f} %)"
        elif rel is not None:
            amount = f"{abs(rel) * 100:.1f} %"
        how = f"{amount} {'above' if diff > 0 else 'below'}"
    reason = f"sim {metric_text(metric, sim)} is {how} the kernel's {metric_text(metric, kern)} (tolerance {text})"
    return MetricRow(metric, subject, kind, sim, kern, diff, rel, text, verdict, reason)


def _judge_exact(metric: str, subject: str, kind: str, sim: float, kern: float, text: str) -> MetricRow:
    """A metric that agrees only when equal (:data:`EXACT_METRICS`)."""
    s, k = metric_text(metric, sim), metric_text(metric, kern)
    if sim == kern:
        reason = f"sim and kernel both {s} ({_ECN_WORDS})"
        return MetricRow(metric, subject, kind, sim, kern, 0.0, None, text, "within", reason)
    reason = f"sim {s} but the kernel {k} ({_ECN_WORDS}): they must be equal"
    return MetricRow(metric, subject, kind, sim, kern, sim - kern, None, text, "outside", reason)


def ecn_in_play(config: Mapping[str, Any], flow_index: int, *flags: Any) -> bool:
    """Whether flow ``flow_index`` of the engine configuration gets ECN rows (module doc):
    its client asks for ECN (``tcp.tcp_ecn[0]`` 1), an end runs DCTCP (TCP_CONG_NEEDS_ECN),
    or any of ``flags`` (the sockets' ``tp->ecn_flags`` in either world) has TCP_ECN_OK."""
    flows = config.get("flows") or []
    if 0 <= flow_index < len(flows):
        f = flows[flow_index]
        asks = ((f.get("tcp") or {}).get("tcp_ecn") or [2, 2])[0]
        if int(asks) == 1 or "dctcp" in (f.get("cc"), f.get("receiver_cc")):
            return True
    return any((v := finite_value(x)) is not None and int(v) & _TCP_ECN_OK for x in flags)


def compare_runs(sim: Result, kern: Result, tolerances: Tolerances | None = None) -> Validation:
    """The verdict table of a simulation against a kernel run of the same scenario (pure:
    reads the two results, writes nothing). Flows and links are matched by name, in the
    simulation's order."""
    tol = tolerances if tolerances is not None else Tolerances()
    valid, reasons = kernel_validity(kern)
    rows: list[MetricRow] = []
    steady: dict[str, tuple[float, float]] = {}
    windows = flow_windows(sim, kern)
    kflows = {str(r["name"]): r for r in kern.flows.to_dict("records")}
    ecn_hosts: list[str] = []  # the data receivers of the flows with ECN rows, in flow order
    for index, f in enumerate(sim.flows.to_dict("records")):
        name = str(f["name"])
        k = kflows.get(name)
        gone = "" if k is not None else "the kernel run has no such flow"

        def kv(key: str, k: dict[str, Any] | None = k) -> float | None:
            return finite_value(k[key]) if k is not None else None

        w = windows.get(name) if k is not None else None
        rows.append(_goodput_row(sim, kern, name, f, kv("goodput_bps"), w, tol, gone))
        if w is not None and w.steady:
            steady[name] = w.span_s["sim"]
        for metric, q in (("rtt_p50_ms", 50.0), ("rtt_p99_ms", 99.0)):
            if k is None:
                rows.append(judge(metric, name, "flow", None, None, tol, gone))
                continue
            if w is None or not w.steady:
                rows.append(judge(metric, name, "flow", None, None, tol, "the run is too short for a steady part"))
                continue
            s_win, k_win = w.span_s["sim"], w.span_s["kernel"]
            s_samples = _srtt_ms(sim, name, s_win)
            k_samples = _srtt_ms(kern, name, k_win)
            few = [
                f"{what} has {len(x)} srtt samples in {win[0]:g}-{win[1]:g} s (fewer than {MIN_RTT_SAMPLES})"
                for what, x, win in (("the simulation", s_samples, s_win), ("the kernel run", k_samples, k_win))
                if len(x) < MIN_RTT_SAMPLES
            ]
            sv = float(np.percentile(s_samples, q)) if len(s_samples) >= MIN_RTT_SAMPLES else None
            kv2 = float(np.percentile(k_samples, q)) if len(k_samples) >= MIN_RTT_SAMPLES else None
            rows.append(judge(metric, name, "flow", sv, kv2, tol, gone or "; ".join(few)))
        sr = finite_value(f["retrans_ratio"])
        kr = kv("retrans_ratio")
        rows.append(
            judge(
                "retrans_pct",
                name,
                "flow",
                None if sr is None else sr * 100.0,
                None if kr is None else kr * 100.0,
                tol,
                gone,
            )
        )
        ecn_row = _ecn_row(sim, name, index, f, k, tol, gone)
        if ecn_row is not None:
            rows.append(ecn_row)
            receiver = str(f.get("data_to", ""))
            if receiver and receiver not in ecn_hosts:
                ecn_hosts.append(receiver)
    klinks = {str(r["name"]): r for r in kern.links.to_dict("records")}
    for link in sim.links.to_dict("records"):
        name = str(link["name"])
        k = klinks.get(name)
        rows.append(
            judge(
                "queue_drops",
                name,
                "link",
                finite_value(link.get("drops")),
                finite_value(k.get("drops")) if k is not None else None,
                tol,
                "" if k is not None else "the kernel run has no such link",
            )
        )
    if ecn_hosts:
        rows.extend(_ce_mark_rows(sim, kern, tol))
    rows.extend(_ect_rows(sim, kern, ecn_hosts, tol))
    if not valid:  # the reasons are stated once (Validation.invalid_reasons), not per row
        rows = [
            MetricRow(
                r.metric,
                r.subject,
                r.kind,
                r.sim,
                r.kernel,
                r.difference,
                r.relative,
                r.tolerance,
                "n/a",
                "no verdict: the kernel run is invalid",
            )
            for r in rows
        ]
    path = []
    for link in sim.links.to_dict("records"):
        k = klinks.get(str(link["name"])) or {}
        entry: dict[str, Any] = {"link": str(link["name"])}
        for key in ("sent_packets", "drops", "loss_drops"):
            entry[key] = {"sim": finite_value(link.get(key)), "kernel": finite_value(k.get(key))}
        path.append(entry)
    info = (kern.summary or {}).get("kernel")
    kernel = dict(info) if isinstance(info, Mapping) else {}
    kernel.setdefault("kind", (kern.summary or {}).get("kind", "kernel" if info else "stand-in"))
    record = getattr(kern, "kernel", None)  # a KernelResult's kernel.json
    if isinstance(record, Mapping):
        for key in ("departures", "quiet"):
            if record.get(key) is not None:
                kernel[key] = record[key]
    notes = _late_notes(windows) + _notes(sim, kernel)
    busy = machine_busy(kern) if not valid else {}
    return Validation(
        scenario=sim.scenario.name,
        title=sim.title,
        rows=rows,
        tolerances=tol,
        valid=valid,
        invalid_reasons=reasons,
        steady=steady,
        windows=windows,
        busy=busy,
        kernel=kernel,
        path=path,
        notes=notes,
    )


def _ecn_row(
    sim: Result,
    name: str,
    index: int,
    flow: Mapping[str, Any],
    kflow: Mapping[str, Any] | None,
    tol: Tolerances,
    gone: str,
) -> MetricRow | None:
    """The flow's ``ecn_state`` row (module doc), None when ECN is not in play for it."""
    keys = ("ecn_flags", "receiver_ecn_flags")
    sim_flags = [flow.get(key) for key in keys]
    kern_flags = [kflow.get(key) for key in keys] if kflow is not None else [None, None]
    if not ecn_in_play(sim.config, index, *sim_flags, *kern_flags):
        return None
    sv, kv = ecn_state(*sim_flags), ecn_state(*kern_flags)
    missing = gone
    if not missing and kv is None:
        missing = "the kernel run did not read the sockets' ECN state (tcp_info's tcpi_options)"
    elif not missing and sv is None:
        missing = "the simulation has no ECN state of the flow"
    return judge("ecn_state", name, "flow", sv, kv, tol, missing)


def _ect_rows(sim: Result, kern: Result, hosts: list[str], tol: Tolerances) -> list[MetricRow]:
    """The ``ect0_pkts`` row of each host in ``hosts``, and its ``ce_pkts`` row where a
    queue can mark or either world counted a CE packet (module doc)."""
    sc, kc = sim.host_counters(), kern.host_counters()
    can_mark = marks_possible(sim.config)
    rows = []
    for host in hosts:
        for metric, counter in (("ect0_pkts", "IpExtInECT0Pkts"), ("ce_pkts", "IpExtInCEPkts")):
            sv = finite_value((sc.get(host) or {}).get(counter))
            kv = finite_value((kc.get(host) or {}).get(counter))
            if metric == "ce_pkts" and not (can_mark or sv or kv):
                continue
            which = [w for w, v in (("the simulation", sv), ("the kernel run", kv)) if v is None]
            missing = f"{' and '.join(which)} has no nstat {counter} of {host}" if which else ""
            rows.append(judge(metric, host, "host", sv, kv, tol, missing))
    return rows


def _marking_queue(queue: Mapping[str, Any] | None) -> bool:
    """Whether a link queue (or a tbf's child) can mark CE: fq_codel with ``ecn`` (its
    default) or a ``ce_threshold``, fq with a ``ce_threshold``."""
    if not isinstance(queue, Mapping):
        return False
    kind = queue.get("kind")
    if kind == "fq_codel" and (queue.get("ecn", True) or queue.get("ce_threshold_ns")):
        return True
    if kind == "fq" and queue.get("ce_threshold_ns"):
        return True
    return _marking_queue(queue.get("child"))


def marks_possible(config: Mapping[str, Any]) -> bool:
    """Whether any link of the engine configuration has a queue that can mark CE."""
    return any(_marking_queue(link.get("queue")) for link in config.get("links") or [])


def _ce_mark_rows(sim: Result, kern: Result, tol: Tolerances) -> list[MetricRow]:
    """The ``ce_marks`` row of each one-way link whose queue marks by ``ce_threshold`` or
    that marked in either world (module doc): ``tc -s``'s ``ce_mark`` (xstats)."""

    def marks(result: Result) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for row in result.links.to_dict("records"):
            xstats = row.get("xstats") if isinstance(row.get("xstats"), Mapping) else {}
            child = row.get("child") if isinstance(row.get("child"), Mapping) else {}
            child_x = child.get("xstats") if isinstance(child.get("xstats"), Mapping) else {}
            value = xstats.get("ce_mark", child_x.get("ce_mark"))
            out[str(row["name"])] = finite_value(value)
        return out

    cfg_links = {str(link.get("name")): link for link in sim.config.get("links") or []}
    s_marks, k_marks = marks(sim), marks(kern)
    rows = []
    for name, sv in s_marks.items():
        queue = (cfg_links.get(name) or {}).get("queue") or {}
        thresholded = bool(queue.get("ce_threshold_ns") or (queue.get("child") or {}).get("ce_threshold_ns"))
        kv = k_marks.get(name)
        if not (thresholded or sv or kv):
            continue
        missing = "" if kv is not None else "the kernel run has no CE mark counter on this link (no marking queue)"
        rows.append(judge("ce_marks", name, "link", sv if sv is not None else 0.0, kv, tol, missing))
    return rows


def machine_busy(kern: Result) -> dict[str, Any]:
    """How busy the machine was (:func:`tcplab.kernel.busy.busy_figures`) when the kernel
    run is invalid for the machine's load (kernel.json's ``machine_reasons``); {} otherwise."""
    from tcplab.kernel.busy import busy_figures

    record = getattr(kern, "kernel", None)
    if not isinstance(record, Mapping) or not record.get("machine_reasons"):
        return {}
    return busy_figures(record, getattr(kern, "run_dir", None))


def _goodput_row(
    sim: Result,
    kern: Result,
    name: str,
    flow: Mapping[str, Any],
    kernel_lifetime: float | None,
    window: FlowWindow | None,
    tol: Tolerances,
    gone: str,
) -> MetricRow:
    """Goodput over the flow's window in both worlds (module doc); without one, both
    worlds' lifetime goodput, said so in the reason."""
    if window is not None:
        sv = window_goodput_bps(sim, name, window.span_s["sim"])
        kv = window_goodput_bps(kern, name, window.span_s["kernel"])
        if sv is not None and kv is not None:
            return judge("goodput_bps", name, "flow", sv, kv, tol, gone)
    row = judge("goodput_bps", name, "flow", finite_value(flow["goodput_bps"]), kernel_lifetime, tol, gone)
    if row.verdict == "n/a" or gone:
        return row
    why = "over each flow's lifetime: a world has no time series of the flow to measure a window in"
    return MetricRow(**{**asdict(row), "reason": f"{row.reason}; {why}"})


def _late_notes(windows: Mapping[str, FlowWindow]) -> list[str]:
    """One line per flow whose kernel connection started late (:mod:`tcplab.kernel.window`)."""
    notes = []
    for w in windows.values():
        if not w.late_start:
            continue
        opened = f", its connection opened at {w.kernel_opened_s:.2f} s" if w.kernel_opened_s is not None else ""
        notes.append(
            f"late start: the kernel's {w.flow} received its first byte at {w.first_byte_s['kernel']:.2f} s after "
            f"the run's start{opened} (expected by {w.late_limit_s:.2f} s: the flow's start + 2 base RTTs "
            f"+ 2 sample intervals; the simulation's at {w.first_byte_s['sim']:.2f} s); both worlds are measured "
            f"from their own first byte over the same {w.length_s:.2f} s, so the late start does not lower its "
            "goodput, but the machine was slow to start the traffic"
        )
    return notes


def _notes(sim: Result, kernel: Mapping[str, Any]) -> list[str]:
    """What the reader should know before trusting the verdicts."""
    notes = []
    quiet = kernel.get("quiet")
    if isinstance(quiet, Mapping) and quiet.get("ok") is False:
        notes.append(
            f"the machine was not quiet before the kernel run ({quiet.get('reason', 'busy')}); "
            "allowed with --allow-busy: the kernel's figures may be noisy"
        )
    hz = kernel.get("hz")
    if hz:
        differ = sorted(
            str(n["name"])
            for n in sim.config.get("nodes", [])
            if n.get("kind", "host") == "host" and n.get("hz") not in (None, hz)
        )
        if differ:
            notes.append(
                f"the simulated hosts {', '.join(differ)} run at another HZ than this kernel's {hz} "
                f"(set hosts.NAME.hz={hz} to compare like with like: HZ sets CUBIC's clock and the timers)"
            )
    return notes
