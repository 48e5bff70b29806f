"""Runs no user would wait for are refused before they start (issue 21, item 4).

Before: 10^5-10^6 connections, a year of simulated time, `tcplab kernel run` of a year and
`tcplab validate --runs 1000000` were all accepted and ran for hours. Now a run's CPU time
is estimated from its scenario (:mod:`tcplab.scenario.cost`) and refused above
``limits.cpu_time`` (default 1 h), with one line giving the estimate and how to raise the
limit, exit code 2, and nothing written or run; kernel mode, which runs in real time, is held
to its duration. The refusals need no engine; the estimate is checked against the engine's
own count of events on real runs.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tcplab
from tcplab.cli import app
from tcplab.errors import ScenarioError
from tcplab.scenario.cost import DEFAULT_CPU_TIME_NS, NS_PER_S, estimate_cost

YEAR = ["--set", "duration=31536000s", "--set", "sample_interval=3600s"]
MICROBURST = Path(tcplab.__file__).parent / "experiments" / "microburst_ring" / "broadcast-nginx.yaml"


def invoke(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def one_error_line(result, *needles: str) -> str:
    """Exit 2, no traceback, exactly one line, ``error: ...`` holding every needle."""
    out = result.output
    assert "Traceback" not in out, out
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2, out
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), out
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def refusal(source, overrides: list[str]) -> str:
    """The one error of loading ``source`` with ``overrides``; it must be the cost's."""
    with pytest.raises(ScenarioError) as info:
        tcplab.load_scenario(source, overrides)
    assert [e.path for e in info.value.errors] == ["limits.cpu_time"], info.value.line()
    return info.value.line()


@pytest.fixture
def namespaces():
    """The network namespaces before the test; after it, none may have been added."""
    ip = shutil.which("ip")
    if ip is None:
        yield
        return

    def listing() -> set[str]:
        out = subprocess.run([ip, "netns", "list"], capture_output=True, text=True, timeout=30).stdout
        return {line.split()[0] for line in out.splitlines() if line.strip()}

    before = listing()
    yield
    assert listing() - before == set(), "a namespace was created"


# -- a year of simulated time ----------------------------------------------------------------


@pytest.mark.parametrize("command", ["run", "check"])
def test_a_year_of_simulated_time_is_refused_with_its_estimate(tmp_path, patched_core, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    out = ["-o", "out"] if command == "run" else []
    r = invoke(command, "builtin:cubic-100mbit-20ms", *YEAR, *out)
    line = one_error_line(r, "limits.cpu_time: 1h is less than", "estimated CPU time of", "--set limits.cpu_time=")
    assert " h (" in line  # the estimate in hours: a year of a 100 Mbit/s flow
    assert patched_core.calls == []
    assert list(tmp_path.iterdir()) == []


def test_a_year_of_a_100mbit_flow_is_estimated_above_what_it_must_cost():
    # A lower bound from the model alone: a year of full frames at 100 Mbit/s, each crossing
    # 2 links and acknowledged across 2, at the fastest event cost of any benchmark (33 ns,
    # BENCHMARKS.md scenario 2a), is 1e8 / (1514 x 8) x 31536000 x 4 x 33 ns = 9.5 h.
    overrides = ["duration=31536000s", "sample_interval=3600s", "limits.cpu_time=100000h"]
    est = estimate_cost(tcplab.load_scenario("builtin:cubic-100mbit-20ms", overrides).to_core())
    packets = 100e6 / (1514 * 8) * 31536000
    assert est.packets >= packets
    assert est.cpu_ns >= packets * 4 * 33 > 9 * 3600 * NS_PER_S


@pytest.mark.parametrize("limit", ["100h", "6000min", "360000s"])
def test_raising_the_limit_accepts_the_same_run(limit):
    sc = tcplab.load_scenario("builtin:cubic-100mbit-20ms", [*YEAR[1::2], f"limits.cpu_time={limit}"])
    assert sc.limits.cpu_time == 100 * 3600 * NS_PER_S


def test_the_limit_is_a_scenario_field(write_yaml, base_scenario):
    base_scenario["duration"] = "31536000s"
    base_scenario["sample_interval"] = "3600s"
    line = refusal(write_yaml(base_scenario), [])
    assert "s.yaml: limits.cpu_time:" in line
    base_scenario["limits"] = {"cpu_time": "4h"}
    with pytest.raises(ScenarioError, match=r"limits\.cpu_time: 4h is less than"):
        tcplab.load_scenario(write_yaml(base_scenario))
    base_scenario["limits"] = {"cpu_time": "100000h"}
    assert tcplab.load_scenario(write_yaml(base_scenario)).limits.cpu_time == 100000 * 3600 * NS_PER_S


@pytest.mark.parametrize(("value", "needle"), [("0", "is zero"), ("1", "has no unit"), ("1hour1", "not a time")])
def test_a_bad_limit_is_one_line(tmp_path, patched_core, value, needle):
    r = invoke("check", "builtin:cubic-100mbit-20ms", "--set", f"limits.cpu_time={value}")
    one_error_line(r, "limits.cpu_time", needle)


# -- 10^5 - 10^6 connections -----------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides",
    [
        # story 004's broadcast at 10^5 connections (4 x 25,000) for two hours
        ["flows.0.app.broadcast.connections=25000", "duration=2h", "sample_interval=1s"],
    ],
)
def test_a_hundred_thousand_broadcast_connections_for_hours_are_refused(overrides):
    line = refusal("builtin:broadcast", overrides)
    assert "100000 connections" in line


def test_a_hundred_thousand_rr_connections_are_refused():
    # netperf TCP_RR on 100,000 connections, 100 ms of think time, for a minute: a transaction
    # per connection every ~110 ms, and each request after a think scans the app's 100,000
    # connections (app/rr.rs: arm_timer())
    overrides = ["flows.0.app.rr.parallel=100000", "flows.0.app.rr.think=100ms", "links.0.queue.limit=200000"]
    line = refusal("builtin:rr", [*overrides, "duration=60s", "sample_interval=10s"])
    assert "100004 connections" in line


@pytest.mark.slow
def test_a_million_connections_at_story_004s_length_are_refused():
    # story 004 (microburst-ring) at 25 x its size: 4 x 250,000 connections, 60 s
    line = refusal(MICROBURST, ["flows.0.app.broadcast.connections=250000", "duration=60s", "sample_interval=100ms"])
    assert "1000000 connections" in line


def test_a_point_of_a_sweep_is_refused_by_its_grid_value(tmp_path, patched_core, monkeypatch):
    # every point is checked before anything runs; the line names the point
    monkeypatch.chdir(tmp_path)
    grid = ["--grid", "duration=10s,31536000s", "--set", "sample_interval=10s"]
    r = invoke("sweep", "builtin:cubic-100mbit-20ms", *grid, "-o", "sw")
    one_error_line(r, "error: --grid duration=31536000s: limits.cpu_time: 1h is less than", "estimated CPU time")
    assert patched_core.calls == []
    assert list(tmp_path.iterdir()) == []


# -- kernel mode: real time ------------------------------------------------------------------


needs_root = pytest.mark.skipif(
    not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() != 0,
    reason="kernel run refuses non-root users first",
)


@needs_root
def test_a_kernel_run_of_a_year_is_refused_before_any_namespace(tmp_path, monkeypatch, namespaces):
    monkeypatch.chdir(tmp_path)
    r = invoke("kernel", "run", "builtin:cubic-100mbit-20ms", *YEAR, "-o", "k", "--prefix", "h21cost")
    one_error_line(r, "limits.cpu_time: 1h is less than this kernel run takes: it runs in real time, 8,760 h")
    assert list(tmp_path.iterdir()) == []


@needs_root
def test_a_kernel_run_within_its_simulation_limit_is_held_to_its_duration(tmp_path, monkeypatch, namespaces):
    # 2 h of a 100 Mbit/s flow simulates in well under the limit, but takes 2 h on the kernel
    monkeypatch.chdir(tmp_path)
    assert tcplab.load_scenario("builtin:cubic-100mbit-20ms", ["duration=2h", "sample_interval=1s"])
    r = invoke("kernel", "run", "builtin:cubic-100mbit-20ms", "--set", "duration=2h", "--set", "sample_interval=1s")
    one_error_line(r, "this kernel run takes: it runs in real time, 2 h for a duration of 7200s")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        # --runs takes at most 10000 (one line of its own: tests/test_hostile_numbers.py); 10000
        # runs of a 60 s scenario are a week of kernel time
        (["--runs", "10000"], "10000 runs of each world"),
        (["--set", "duration=2h", "--set", "sample_interval=1s"], "1 run of each world"),
    ],
)
def test_validate_is_held_to_its_runs_in_both_worlds(tmp_path, monkeypatch, namespaces, patched_core, args, needle):
    monkeypatch.chdir(tmp_path)
    r = invoke("validate", "builtin:cubic-100mbit-20ms", *args, "-o", "v", "--prefix", "h21cost")
    one_error_line(r, "limits.cpu_time: 1h is less than tcplab validate's estimated time", needle, "fewer --runs")
    assert patched_core.calls == []
    assert list(tmp_path.iterdir()) == []


def test_validate_within_the_limit_is_not_refused_for_its_cost():
    from tcplab.scenario.cost import check_validate_time

    sc = tcplab.load_scenario("builtin:cubic-100mbit-20ms", ["duration=10s"])
    check_validate_time(sc, 10)  # 10 x (a short simulation + 20 s): minutes


# -- what must still run ---------------------------------------------------------------------


def test_every_builtin_scenario_is_within_the_default_limit():
    for name in _builtins():
        sc = tcplab.load_scenario(f"builtin:{name}")
        assert sc.limits.cpu_time == DEFAULT_CPU_TIME_NS
        assert estimate_cost(sc.to_core()).cpu_ns < DEFAULT_CPU_TIME_NS / 10, name


def _builtins() -> list[str]:
    from tcplab.loader import builtin_scenarios

    return sorted(builtin_scenarios())


@pytest.mark.parametrize(
    "quick", [True, pytest.param(False, marks=pytest.mark.slow)], ids=["quick", "full"]
)  # full mode resolves 181 runs: 36 s
def test_every_story_run_is_within_the_default_limit(quick):
    # tcplab reproduce --all plans (validates) every run of the five stories, story 004 at
    # full scale (40,000 connections) and story 000's 60-minute runs included
    from tcplab.experiments import NAMES, load

    for name in NAMES:
        for run, sc in load(name).plan(quick):
            assert estimate_cost(sc.to_core()).cpu_ns < DEFAULT_CPU_TIME_NS, f"{name}/{run.label}"


def _dumbbell(n: int, cc: str, rate: str, rate_bps: int, rtt_s: float, duration: str) -> dict:
    """bench/src/main.rs dumbbell(): n senders -> r1 -> r2 -> dst, the r1-r2 bottleneck with a
    1-BDP pfifo, access links 10x faster with 1 us of delay."""
    bdp = max(1, round(rate_bps / 8 * rtt_s / 1514))
    access = f"{rate_bps * 10}bit"
    d = f"{round((rtt_s / 2 - 2e-6) * 1e9)}ns"
    links = [{"between": [f"s{i}", "r1"], "rate": access, "delay": "1us"} for i in range(n)]
    links += [
        {"between": ["r1", "r2"], "rate": rate, "delay": d, "queue": {"qdisc": "pfifo", "limit": bdp}},
        {"between": ["r2", "dst"], "rate": access, "delay": "1us"},
    ]
    return {
        "name": "bench",
        "duration": duration,
        "hosts": {f"s{i}": {} for i in range(n)} | {"dst": {}},
        "routers": ["r1", "r2"],
        "links": links,
        "flows": [{"from": f"s{i}", "to": "dst", "cc": cc} for i in range(n)],
    }


def _bench_scenarios() -> dict[str, dict]:
    """The bench scenarios (BENCHMARKS.md) that cost the most, as scenarios."""
    out = {
        "2a": _dumbbell(1, "cubic", "1Gbit", 10**9, 0.02, "20s"),
        "3b": _dumbbell(10, "bbr", "1Gbit", 10**9, 0.02, "20s"),
    }
    five = _dumbbell(4, "cubic", "100Mbit", 10**8, 0.0005, "3600s")  # seed 000's cluster, 60 min
    five["links"][4]["loss"] = "0.1%"  # (both ways here; the bench's is one way: no matter to the bound)
    five["sample_interval"] = "1s"
    out["5"] = five
    four = _dumbbell(1, "cubic", "1Gbit", 10**9, 0.02, "12s")  # 1000 x 100 KB
    four["flows"] = [{"from": "s0", "to": "dst", "app": {"bulk": {"bytes": "100KB"}}, "count": 1000}]
    out["4"] = four
    seven_b = _dumbbell(10, "bbr", "1Gbit", 10**9, 0.02, "20s")
    for i in range(10):
        seven_b["hosts"][f"s{i}"] = {"qdisc": "fq"}
    out["7b"] = seven_b
    # broadcast40k: 4 x 10,000 websockets -> 25 Gbit/s nginx behind a 1024 x 4 ring, 60 s
    nic = {"driver": "ena", "rx_ring": 1024, "rx_queues": 4, "rx_cost": "600ns"}
    apps = [f"app{i}" for i in range(4)]
    out["broadcast40k"] = {
        "name": "broadcast40k",
        "duration": "60s",
        "hosts": {a: {} for a in apps} | {"nginx": {"nic": nic}},
        "routers": ["sw"],
        "links": [{"between": [a, "sw"], "rate": "25Gbit", "delay": "10us"} for a in apps]
        + [{"between": ["sw", "nginx"], "rate": "25Gbit", "delay": "10us", "queue": {"limit": 100000}}],
        "flows": [
            {
                "name": "events",
                "from": apps,
                "to": "nginx",
                "app": {"broadcast": {"connections": 10000, "message": "1KB", "window": "20ms"}},
            }
        ],
    }
    return out


@pytest.mark.parametrize("bench", list(_bench_scenarios()))
def test_the_bench_scenarios_are_within_the_default_limit(bench):
    sc = tcplab.load_scenario(_bench_scenarios()[bench])
    assert estimate_cost(sc.to_core()).cpu_ns < DEFAULT_CPU_TIME_NS


# -- the estimate against the engine ---------------------------------------------------------

#: Real runs whose events the estimate must bound from above, and within FACTOR.
RUNS = {
    "bulk CUBIC at a 1-BDP bottleneck": ("builtin:cubic-100mbit-20ms", ["duration=10s"]),
    "bulk BBR at a 1-BDP bottleneck": ("builtin:cubic-100mbit-20ms", ["duration=10s", "flows.0.cc=bbr"]),
    "broadcast messages": ("builtin:broadcast", []),
    "request/response": ("builtin:rr", ["duration=5s"]),
}
#: How far above the engine's events the estimate may be, derived from what it over-counts:
#: (a) one ACK per data packet where Linux sends one per two full segments (RFC 1122 4.2.3.2;
#:     tcp_input.c __tcp_ack_snd_check()): per packet (h_d + h_a + 2) events against at least
#:     h_d + 1 + h_a / 2, at most 2x for any h_d, h_a >= 1;
#: (b) a bulk flow at its bottleneck's full rate, where a loss-based flow keeps at least 3/4 of
#:     it busy even without a buffer (a window halving averages 3/4 of the peak), 4/3x;
#: (c) three events per app write (its action, the delayed ACK, the retransmission timer) that
#:     the engine spends at least one of, on a lone segment costing h_d + h_a + 1: at most
#:     (h_d + h_a + 5) / (h_d + h_a + 1) <= 7/3 for the shortest paths (one link each way).
#: The largest product, 2 x 4/3 = 2.7 for bulk, 7/3 x 3/2 = 3.5 for a request/response
#: transaction (both its writes lone segments, no separate ACKs): FACTOR 4.
FACTOR = 4


@pytest.mark.engine
@pytest.mark.parametrize("what", list(RUNS))
def test_the_estimate_bounds_the_engines_events_within_a_derived_factor(real_core, what):
    source, overrides = RUNS[what]
    sc = tcplab.load_scenario(source, overrides)
    est = estimate_cost(sc.to_core())
    real = tcplab.run(sc, core=real_core).summary["events"]
    assert real <= est.events <= FACTOR * real, (what, real, est.events)


def test_the_cost_per_event_grows_with_the_connections():
    from tcplab.scenario.cost import ns_per_event

    # the bench's own figures (BENCHMARKS.md) are below the model at each size: 33-81 ns with
    # up to 1,600 connections, 0.40 us at 40,000 (broadcast40k, quiet machine)
    assert ns_per_event(1) >= 81
    assert ns_per_event(1600) >= 81
    assert ns_per_event(40_000) >= 400
    assert ns_per_event(10**5) > ns_per_event(40_000) > ns_per_event(10_000)
    assert math.isfinite(ns_per_event(10**6))
