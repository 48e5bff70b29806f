"""ECN in kernel mode without root (issue 28): the kernel sockets' ECN state from TCP_INFO,
and ``tcplab validate``'s ECN rows (the flow's ss -tio ``ecn``/``ecnseen`` on both sockets,
the receiver's nstat ``IpExtInECT0Pkts``), which must fail when one world negotiated ECN and
the other did not. The real kernel's run of the case is tests/test_kernel_validate_ecn.py.

A simulation stands in for the kernel run here (compare_runs takes any two results): the
ECN case tests/data/validate-ecn.yaml against the same path where one host does not take
part (``tcp_ecn`` 0), and the other way round.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tcplab.engine import parse_output
from tcplab.kernel.measure import TCPI_OPT_ECN, TCPI_OPT_ECN_SEEN, build_raw, ecn_flags
from tcplab.kernel.repeat import compare_repeated
from tcplab.kernel.tolerances import Tolerances, parse_tolerances
from tcplab.kernel.verdicts import ECN_STATE_BITS, compare_runs, ecn_in_play, ecn_state, ecn_state_text
from tcplab.loader import load_scenario
from tcplab.runner import run
from tcplab.views.validate import ecn_state_words, table_rows
from test_kernel_measure import load_fixture

DATA = Path(__file__).parent / "data"
ECN_CASE = DATA / "validate-ecn.yaml"
#: tp->ecn_flags (include/net/tcp.h): TCP_ECN_OK 1, TCP_ECN_QUEUE_CWR 2, TCP_ECN_DEMAND_CWR 4,
#: TCP_ECN_SEEN 8
OK, QUEUE_CWR, DEMAND_CWR, SEEN = 1, 2, 4, 8


def sim(*overrides: str, path: Path = ECN_CASE, duration: str = "6s"):
    return run(load_scenario(str(path), [f"duration={duration}", *overrides]))


@pytest.fixture(scope="module")
def ecn_run():
    return sim()


@pytest.fixture(scope="module")
def receiver_refuses():
    # the data receiver (the client host, the flow's TCP server) does not accept ECN
    return sim("hosts.client.sysctl.tcp_ecn=0")


@pytest.fixture(scope="module")
def sender_does_not_ask():
    # the data sender (the server host, the flow's TCP client) never asks: tcp_ecn 2
    return sim("hosts.server.sysctl.tcp_ecn=2")


def row(v, metric: str):
    rows = [r for r in v.rows if r.metric == metric]
    assert len(rows) == 1, (metric, v.rows)
    return rows[0]


# -- the kernel's sockets ----------------------------------------------------------------


def test_ecn_flags_are_what_tcpi_options_shows():
    # tcp_get_info(): TCPI_OPT_ECN for TCP_ECN_OK, TCPI_OPT_ECN_SEEN for TCP_ECN_SEEN;
    # TCPI_OPT_TIMESTAMPS|SACK|WSCALE (1|2|4) say nothing of ECN
    assert (TCPI_OPT_ECN, TCPI_OPT_ECN_SEEN) == (8, 16)
    assert ecn_flags({"options": 1 | 2 | 4}) == 0
    assert ecn_flags({"options": 7 | TCPI_OPT_ECN}) == OK
    assert ecn_flags({"options": 7 | TCPI_OPT_ECN | TCPI_OPT_ECN_SEEN}) == OK | SEEN
    assert ecn_flags({"options": TCPI_OPT_ECN_SEEN}) == SEEN
    assert ecn_flags({}) is None


def _with_options(m, flow: int, sender_options: int, receiver_options: int, delivered_ce: int = 0):
    # flow 0 of the recorded fixture: bulk a -> b, the client on a sends
    for node, role, options in (("a", "client", sender_options), ("b", "server", receiver_options)):
        ep = next(e for e in m.agents[node]["endpoints"] if e["flow"] == flow and e["role"] == role)
        ep["tcp_info"]["options"] = options
        if role == "client":
            ep["tcp_info"]["delivered_ce"] = delivered_ce
    return m


def test_build_raw_has_each_flows_ecn_from_both_sockets():
    config, m = load_fixture()
    _with_options(m, 0, 7 | TCPI_OPT_ECN, 7 | TCPI_OPT_ECN | TCPI_OPT_ECN_SEEN, delivered_ce=12)
    raw = build_raw(config, m)
    ecn = raw["flows"][0]["ecn"]
    assert ecn == {"sender_flags": OK, "receiver_flags": OK | SEEN, "delivered_ce": 12, "dctcp": None}
    out = parse_output(raw)  # the engine's contract (tcplab.engine.ECN)
    assert out.flows[0]["ecn"]["receiver_flags"] == OK | SEEN
    # the recorded run negotiated no ECN (Linux's default tcp_ecn 2 asks nothing)
    assert raw["flows"][1]["ecn"]["sender_flags"] == 0 and raw["flows"][1]["ecn"]["receiver_flags"] == 0


def test_a_flow_without_tcp_info_has_no_ecn_entry():
    config, m = load_fixture()
    for node in ("a", "b"):
        for ep in m.agents[node]["endpoints"]:
            if ep["flow"] == 0:
                ep["tcp_info"] = None
    assert "ecn" not in build_raw(config, m)["flows"][0]


# -- the verdicts ------------------------------------------------------------------------


def test_ecn_state_code_counts_only_what_tcp_info_shows():
    # QUEUE_CWR and DEMAND_CWR are in no kernel interface: they must not make worlds differ
    assert ecn_state(OK | QUEUE_CWR, OK | SEEN | DEMAND_CWR) == ecn_state(OK, OK | SEEN) == 1 + 4 + 8
    assert ecn_state(0, 0) == 0
    assert ecn_state(float("nan"), OK) is None
    assert ecn_state_text(1 + 4 + 8) == "ecn / ecn ecnseen"
    assert ecn_state_text(0) == "- / -"
    # the view's copy of the words (a view may not import the kernel package)
    for code in range(16):
        assert ecn_state_words(code) == ecn_state_text(code)
    assert {bit for bit, _, _ in ECN_STATE_BITS} == {1, 2, 4, 8}
    assert "runs differ" in ecn_state_text(6.5)


def test_the_ecn_case_agrees_with_itself(ecn_run):
    v = compare_runs(ecn_run, ecn_run)
    state, ect0 = row(v, "ecn_state"), row(v, "ect0_pkts")
    assert state.subject == "server-client-0" and state.kind == "flow"
    # the sender negotiated ECN and saw none (its ACKs arrive not-ECT); the receiver saw ECT
    assert state.verdict == "within" and ecn_state_text(state.sim) == "ecn / ecn ecnseen"
    assert ect0.subject == "client" and ect0.kind == "host"
    assert ect0.verdict == "within" and ect0.sim == ect0.kernel == ecn_run.host_counters()["client"]["IpExtInECT0Pkts"]
    assert ect0.sim > 1000
    # the flow's rows first, then the links', then the host's
    kinds = [r.kind for r in v.rows]
    assert kinds == ["flow"] * 5 + ["link"] * 4 + ["host"]


@pytest.mark.parametrize("world", ["kernel", "sim"])
def test_ecn_negotiated_in_one_world_only_fails(ecn_run, receiver_refuses, sender_does_not_ask, world):
    for other in (receiver_refuses, sender_does_not_ask):
        sim_r, kern_r = (ecn_run, other) if world == "kernel" else (other, ecn_run)
        v = compare_runs(sim_r, kern_r)
        state, ect0 = row(v, "ecn_state"), row(v, "ect0_pkts")
        assert state.verdict == "outside", state
        assert "must be equal" in state.reason and "- / -" in state.reason
        assert ect0.verdict == "outside", ect0
        assert 0.0 in (ect0.sim, ect0.kernel)


def test_a_scenario_without_ecn_has_no_ecn_rows():
    plain = sim(path=DATA / "validate-path.yaml", duration="4s")
    v = compare_runs(plain, plain)
    assert not [r for r in v.rows if r.metric in ("ecn_state", "ect0_pkts")]
    assert len(v.rows) == 8


def test_ecn_in_play():
    config = {"flows": [{"cc": "cubic", "tcp": {"tcp_ecn": [2, 1]}}, {"cc": "dctcp", "tcp": {"tcp_ecn": [0, 0]}}]}
    assert not ecn_in_play(config, 0, 0, 0, float("nan"), None)
    assert ecn_in_play(config, 0, 0, 0, OK | SEEN, 0)  # a world negotiated it anyway
    assert ecn_in_play(config, 1)  # DCTCP needs ECN (TCP_CONG_NEEDS_ECN)
    config["flows"][0]["tcp"]["tcp_ecn"] = [1, 0]
    assert ecn_in_play(config, 0)  # the client asks


def test_a_kernel_run_without_ecn_state_is_na(ecn_run):
    kern = sim()
    kern.flows["ecn_flags"] = math.nan  # an older kernel run: flows.parquet without ECN
    kern.flows["receiver_ecn_flags"] = math.nan
    v = compare_runs(ecn_run, kern)
    state = row(v, "ecn_state")
    assert state.verdict == "n/a" and "tcpi_options" in state.reason


def test_ect_tolerance_packets_or_percent():
    t = Tolerances()
    assert (t.ect_packets, t.ect_rel) == (10.0, 0.10)
    assert t.text("ect") == "±10 packets or ±10 %"
    t2 = parse_tolerances("ect=20/5%")
    assert (t2.ect_packets, t2.ect_rel) == (20.0, 0.05)
    assert parse_tolerances(t2.spec()) == t2


def test_ect_count_judged_with_its_tolerance(ecn_run):
    kern = sim()
    n = kern.host_counters()["client"]["IpExtInECT0Pkts"]
    for scale, verdict in ((1.05, "within"), (1.25, "outside")):
        kern._host_counters["client"]["IpExtInECT0Pkts"] = int(n * scale)
        assert row(compare_runs(ecn_run, kern), "ect0_pkts").verdict == verdict


def test_table_cells_show_the_words(ecn_run, receiver_refuses):
    v = compare_runs(ecn_run, receiver_refuses)
    cells = next(c for c in table_rows(v) if c["metric"] == "ECN (ss -tio)")
    assert (cells["sim"], cells["kernel"], cells["difference"], cells["tolerance"]) == (
        "ecn / ecn ecnseen",
        "- / -",
        "differs",
        "equal",
    )


def test_repeated_runs_that_differ_in_ecn_are_outside(ecn_run, receiver_refuses):
    v = compare_repeated([ecn_run, ecn_run], [receiver_refuses, receiver_refuses])
    assert row(v, "ecn_state").verdict == "outside"
    same = compare_repeated([ecn_run, ecn_run], [ecn_run, ecn_run])
    assert row(same, "ecn_state").verdict == "within"
    # the words, not a mean and a spread of a code
    cells = next(c for c in table_rows(same) if c["metric"] == "ECN (ss -tio)")
    assert (cells["sim"], cells["kernel_runs"]) == ("ecn / ecn ecnseen", "ecn / ecn ecnseen, ecn / ecn ecnseen")


# -- what this kernel lacks: one line each -----------------------------------------------


def this_kernel(qdiscs=("tbf",), cc=("reno", "cubic", "bbr")):
    """A kernel like this machine's: tbf and the FIFOs, no netem, no dctcp."""
    from test_kernel_needs import env

    kernel = env(qdiscs=qdiscs)
    kernel.cc_available = list(cc)
    return kernel


def _refusal(*overrides: str, path: Path = ECN_CASE) -> str:
    """The one line kernel mode refuses the scenario with on :func:`this_kernel`: what the
    machine lacks (check_needs), else what the plan cannot build."""
    from tcplab.kernel.errors import KernelUnsupported
    from tcplab.kernel.needs import check_needs
    from tcplab.kernel.options import KernelOptions
    from tcplab.kernel.plan import make_plan

    kernel = this_kernel()
    config = load_scenario(str(path), list(overrides)).to_core()
    with pytest.raises(KernelUnsupported) as e:
        check_needs(kernel, config, euid=0)
        make_plan(config, kernel, KernelOptions(prefix="tle8"))
    text = str(e.value)
    assert "\n" not in text
    return text


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        (
            "links.1.queue={qdisc: fq_codel}",
            "kernel: missing: qdisc fq_codel: this kernel lacks sch_fq_codel (CONFIG_NET_SCH_FQ_CODEL): links.1.queue",
        ),
        (
            # both directions of links.1: the ACKs' leaves the client host
            "links.1.queue={qdisc: fq_codel, ce_threshold: 1ms}",
            "kernel: sch_fq_codel is not available on this kernel, and the delay line cannot mark in its place "
            "on client->emu: it leaves a host (the marker replaces a router's shaper only) "
            "(links.1.queue.ce_threshold=1ms)",
        ),
        (
            "links.1.queue={qdisc: fq, ce_threshold: 1ms}",
            "kernel: missing: qdisc fq: this kernel lacks sch_fq (CONFIG_NET_SCH_FQ): links.1.queue",
        ),
        (
            "flows.0.cc=dctcp",
            "kernel: the congestion control dctcp is not available on this kernel (flows.0.cc=dctcp; "
            "available: reno cubic bbr)",
        ),
        (
            "links.1.bleach_ecn=true",
            "kernel: the link setting bleach_ecn is not supported in kernel mode (links.1.bleach_ecn=true)",
        ),
    ],
)
def test_what_this_kernel_lacks_for_ecn_is_one_line(override, expected):
    assert _refusal(override) == expected


def test_kernel_info_says_which_marking_qdiscs_and_dctcp_it_lacks():
    from tcplab.kernel.env import ecn_line

    bare = this_kernel()
    assert ecn_line(bare) == (
        "ECN: tcp_ecn per namespace; marking qdiscs: fq_codel (ecn, ce_threshold) MISSING, "
        "fq (ce_threshold) MISSING; dctcp: MISSING (CONFIG_TCP_CONG_DCTCP)"
    )
    full = this_kernel(qdiscs=("tbf", "fq", "fq_codel"), cc=("reno", "cubic", "dctcp"))
    assert ecn_line(full).endswith("fq_codel (ecn, ce_threshold) yes, fq (ce_threshold) yes; dctcp: yes")


# -- CE marks where the kernel has no marking qdisc: the delay line's step marker --------

MARKING_CASE = DATA / "validate-ecn-marking.yaml"


def marking_plan(*overrides: str, kernel=None):
    from tcplab.kernel.options import KernelOptions
    from tcplab.kernel.plan import make_plan

    config = load_scenario(str(MARKING_CASE), list(overrides)).to_core()
    return config, make_plan(config, kernel or this_kernel(), KernelOptions(prefix="tle8"))


def test_the_marking_case_runs_the_delay_lines_marker_in_fq_codels_place():
    config, plan = marking_plan()
    (wire,) = plan.wires
    tab, tba = wire.tuns
    # emu -> client: serialised at the link rate, marking above 2 ms
    assert (tab.link, tab.rate_bps, tab.overhead_bytes, tab.ce_threshold_ns) == (2, 20_000_000, 14, 2_000_000)
    assert tab.spec() == "tab:20000000:20000000:14 --ce-threshold tab:2000000"
    # client -> emu (the ACKs): a drop-tail host link, shaped as before, no marker
    assert (tba.link, tba.ce_threshold_ns) == (3, 0)
    # no tbf on the router's egress: the queue is the line's (a pfifo of fq_codel's limit)
    emu_eth1 = plan.tc[("tle8-emu", "eth1")]
    assert emu_eth1 == [["tc", "-n", "tle8-emu", "qdisc", "add", "dev", "eth1", "root", "handle", "1:", "pfifo",
                         "limit", "10240"]]  # fmt: skip
    assert any("tbf" in cmd for cmd in plan.tc[("tle8-client", "eth0")])
    assert any(d.startswith("emu->client: fq_codel ce_threshold 2 ms is the delay line's step marker")
               for d in plan.departures)  # fmt: skip


def test_a_kernel_with_fq_codel_runs_the_real_one():
    from tcplab.kernel.plan import line_markers

    kernel = this_kernel(qdiscs=("tbf", "fq_codel"))
    config, plan = marking_plan(kernel=kernel)
    assert line_markers(config, kernel) == {}
    assert all(t.ce_threshold_ns == 0 for w in plan.wires for t in w.tuns)
    cmds = plan.tc[("tle8-emu", "eth1")]
    assert "tbf" in cmds[0] and "fq_codel" in cmds[1] and "ce_threshold" in cmds[1]


@pytest.mark.parametrize(
    ("override", "reason"),
    [
        ("links.1.queue.ce_threshold=5ms", "its ce_threshold 5 ms is not below its target 5 ms"),
        ("links.1.queue.ce_threshold=8ms", "its ce_threshold 8 ms is not below its target 5 ms"),
        ("links.1.queue.ecn=false", "its ecn is off"),
        ("links.1.delay=100us", "it has no delay line"),
    ],
)
def test_the_marker_is_refused_where_it_is_not_the_same_queue(override, reason):
    line = _refusal(override, path=MARKING_CASE)
    assert line.startswith(
        "kernel: sch_fq_codel is not available on this kernel, and the delay line cannot mark in its place "
        f"on emu->client: {reason}"
    ), line


def test_the_marker_is_refused_on_a_link_two_flows_cross():
    two = "flows=[{from: server, to: client, app: bulk}, {from: server, to: client, app: bulk}]"
    line = _refusal(two, path=MARKING_CASE)
    assert "on emu->client: 2 flow directions cross it" in line


def test_needs_note_the_missing_fq_codel_and_leave_the_marker_to_the_plan():
    from tcplab.kernel.needs import machine_needs, missing

    config = load_scenario(str(MARKING_CASE)).to_core()
    assert missing(this_kernel(), config, euid=0) == []
    need = next(n for n in machine_needs(this_kernel(), config, euid=0) if n.what == "qdisc fq_codel")
    assert not need.required and "ce_threshold is the delay line's marker" in need.detail


def test_the_delay_line_command_carries_the_threshold():
    from tcplab.kernel.delayline import DelayLine
    from tcplab.kernel.errors import KernelError

    line = DelayLine(
        "tle8:w1",
        [("tab", 20_000_000, 20_000_000, 14), ("tba", 20_000_000)],
        1,
        "/tmp/s.json",
        binary="/bin/true",
        ce_thresholds={"tab": 2_000_000},
    )
    cmd = line.command()
    assert cmd[cmd.index("--ce-threshold") + 1] == "tab:2000000"
    with pytest.raises(KernelError, match="does not serialise"):
        DelayLine("tle8:w1", [("tba", 20_000_000)], 1, "/tmp/s.json", ce_thresholds={"tba": 1})


def test_a_marking_tuns_marks_and_drops_are_the_links():
    from tcplab.kernel.delayline import parse_stats

    config, m = load_fixture()
    stats = {
        "version": 1,
        "tuns": [
            {
                "name": "tab",
                "delay_ns": 1,
                "packets": 10,
                "bytes": 15000,
                "drops": 2,
                "queue_max_packets": 3,
                "ce_marks": 7,
                "lateness_ns": {"p50": 0, "p99": 0, "max": 0, "count": 10},
            }
        ],
        "cpu": 1,
    }
    import json

    m.delaylines["tle8:w0"] = parse_stats(json.dumps(stats))
    m.line_markers = {"tle8:w0/tab": 0}
    links = build_raw(config, m)["links"]
    before = build_raw(*load_fixture())["links"][0]["drops"]
    assert links[0]["xstats"]["ce_mark"] == 7 and links[0]["drops"] == before + 2
    assert "ce_mark" not in links[1]["xstats"]
    with pytest.raises(Exception, match="ce_marks"):
        parse_stats(json.dumps({**stats, "tuns": [{**stats["tuns"][0], "ce_marks": -1}]}))


def test_the_marking_case_compares_ce_marks_and_ce_packets():
    marked = sim(path=MARKING_CASE)
    v = compare_runs(marked, marked)
    ce_marks, ce_pkts = row(v, "ce_marks"), row(v, "ce_pkts")
    assert ce_marks.subject == "emu->client" and ce_marks.kind == "link"
    assert ce_marks.sim == marked.links.set_index("name").loc["emu->client", "xstats"]["ce_mark"] > 0
    assert ce_pkts.subject == "client" and ce_pkts.sim == marked.host_counters()["client"]["IpExtInCEPkts"] > 0
    assert ce_marks.tolerance == ce_pkts.tolerance == "±10 packets or ±50 %"
    # against a kernel that marked nothing (a drop-tail path): both outside
    plain = sim("links.1.queue={qdisc: pfifo, limit: 1000}", path=MARKING_CASE)
    v2 = compare_runs(marked, plain)
    assert row(v2, "ce_pkts").verdict == "outside"
    # a drop-tail ECN case has no CE rows
    assert not [r for r in compare_runs(plain, plain).rows if r.metric in ("ce_pkts", "ce_marks")]


def test_the_validation_directory_shows_the_ecn_rows(tmp_path, ecn_run):
    import json

    from tcplab.views.validate import write_validation

    v = compare_runs(ecn_run, ecn_run)
    out = write_validation(v, ecn_run, ecn_run, tmp_path / "v", plots=False)
    doc = json.loads((out / "validation.json").read_text())
    assert [m["metric"] for m in doc["metrics"]].count("ecn_state") == 1
    assert doc["tolerances"]["ect_rel"] == 0.10 and "ect=10/10%" in doc["tolerance_spec"]
    for name in ("report.html", "report.md"):
        text = (out / name).read_text()
        assert "ecn / ecn ecnseen" in text and "ECT(0) packets in" in text
