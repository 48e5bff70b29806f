"""tcplab validate without a kernel: compare_runs on synthetic results, the tolerances, the
invalid case, the validation directory and the command's errors (the kernel runs themselves
are in test_kernel_validate.py, marked kernel and slow)."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import fake_core
import tcplab
from tcplab.cli import app
from tcplab.errors import ScenarioError
from tcplab.kernel.tolerances import Tolerances, parse_tolerances
from tcplab.kernel.validate import (
    MIN_RTT_SAMPLES,
    compare_runs,
    validate,
)
from tcplab.results.rundir import MARKER, check_output_dir

INTERVAL_NS = 100_000_000
DURATION_S = 10


class EditedCore(fake_core.FakeCore):
    """The engine double with the output edited by ``edit(raw)`` (synthetic numbers we choose)."""

    def __init__(self, edit: Callable[[dict[str, Any]], None]):
        super().__init__()
        self.edit = edit

    def run(self, config_json: str, progress: Any = None) -> dict[str, Any]:
        raw = super().run(config_json, progress)
        self.edit(raw)
        return raw


def make_result(
    *,
    bytes_received: int,
    srtt_ms: Callable[[np.ndarray], np.ndarray] | None = None,
    segs: int = 10_000,
    retrans: int = 100,
    drops: dict[int, int] | None = None,
    summary_kernel: dict[str, Any] | None = None,
    duration: str = f"{DURATION_S}s",
):
    """A Result of builtin:cubic-vs-bbr-lossy (one flow, four one-way links) with the given
    totals; srtt_ms(t_s) -> the flow's srtt samples in ms."""

    def edit(raw: dict[str, Any]) -> None:
        f = raw["flows"][0]
        # the series delivers at the same steady rate as the total (the fake's delivery is
        # linear from the start): any window's goodput is the lifetime's
        series = raw["timeseries"]
        scale = bytes_received / f["bytes_received"] if f["bytes_received"] else 0.0
        series["bytes_received"] = np.floor(series["bytes_received"].astype(np.float64) * scale).astype(np.uint64)
        f["bytes_received"] = bytes_received
        f["data_segs_out"] = segs
        f["retrans_segs"] = retrans
        if srtt_ms is not None:
            t_s = np.asarray(raw["timeseries"]["t_ns"], dtype=np.float64) / 1e9
            raw["timeseries"]["srtt_us"] = (srtt_ms(t_s) * 1000).astype(np.uint32)
        for i, d in (drops or {}).items():
            raw["links"][i]["drops"] = d

    r = tcplab.run("builtin:cubic-vs-bbr-lossy", overrides=[f"duration={duration}"], core=EditedCore(edit))
    if summary_kernel is not None:
        r.summary["kind"] = "kernel"
        r.summary["kernel"] = summary_kernel
    return r


def row(v, metric: str, subject: str | None = None):
    rows = [r for r in v.rows if r.metric == metric and (subject is None or r.subject == subject)]
    assert len(rows) == 1, (metric, subject, v.rows)
    return rows[0]


MBYTE = 1_000_000
#: goodput = bytes_received * 8 / lifetime (10 s): 6.25 MB -> 5 Mbit/s
KERNEL_BYTES = 6_250_000


# -- compare_runs ---------------------------------------------------------------------


def test_goodput_within_and_outside():
    kern = make_result(bytes_received=KERNEL_BYTES)
    near = compare_runs(make_result(bytes_received=int(KERNEL_BYTES * 0.92)), kern)
    g = row(near, "goodput_bps")
    assert g.kernel == pytest.approx(5e6) and g.sim == pytest.approx(4.6e6)
    assert g.relative == pytest.approx(-0.08) and g.difference == pytest.approx(-0.4e6)
    assert g.verdict == "within" and "8.0 % below" in g.reason and "10 %" in g.reason
    far = compare_runs(make_result(bytes_received=int(KERNEL_BYTES * 1.12)), kern)
    assert row(far, "goodput_bps").verdict == "outside" and "12.0 % above" in row(far, "goodput_bps").reason
    # a tighter tolerance turns the near one outside
    tight = compare_runs(make_result(bytes_received=int(KERNEL_BYTES * 0.92)), kern, parse_tolerances("goodput=5%"))
    assert row(tight, "goodput_bps").verdict == "outside"


def test_rtt_percentiles_cover_only_the_steady_part():
    # 10 s run: the steady part starts max(2 s, 20 % of 10 s) = 2 s after the first byte (the
    # fake's first sample, 0.1 s, has data). Before it the RTT is 300 ms (slow start's
    # queue), after it 50 ms; the 300 ms samples must not count.
    sim = make_result(bytes_received=KERNEL_BYTES, srtt_ms=lambda t: np.where(t < 2.1, 300.0, 50.0))
    kern = make_result(bytes_received=KERNEL_BYTES, srtt_ms=lambda t: np.where(t < 2.1, 300.0, 50.0 + 0 * t))
    v = compare_runs(sim, kern)
    assert v.steady["server-client-0"] == pytest.approx((2.1, 10.0))
    for metric in ("rtt_p50_ms", "rtt_p99_ms"):
        r = row(v, metric)
        assert r.sim == pytest.approx(50.0) and r.kernel == pytest.approx(50.0)
        assert r.verdict == "within" and r.difference == 0


def test_rtt_percentile_values_and_tolerance():
    # steady samples at 2.1, 2.2, ... 10.0 s (first byte 0.1 s + 2 s; 80 samples): srtt = 10 ms
    # x sample number (1 .. 80) -> p50 (linear) = (400 + 410) / 2 = 405 ms,
    # p99 = 10 x (1 + 0.99 x 79) = 792.1 ms
    steady = lambda t: np.where(t < 2.05, 5000.0, 10.0 * (np.round((t - 2.1) * 10) + 1))  # noqa: E731
    sim = make_result(bytes_received=KERNEL_BYTES, srtt_ms=steady)
    kern = make_result(bytes_received=KERNEL_BYTES, srtt_ms=lambda t: steady(t) * 1.2)
    v = compare_runs(sim, kern)
    p50, p99 = row(v, "rtt_p50_ms"), row(v, "rtt_p99_ms")
    assert p50.sim == pytest.approx(405.0) and p50.kernel == pytest.approx(486.0)
    assert p99.sim == pytest.approx(792.1) and p99.kernel == pytest.approx(950.52)
    # sim is 1/1.2 - 1 = -16.7 % of the kernel: outside p50's 15 %, within p99's 25 %
    assert p50.relative == pytest.approx(1 / 1.2 - 1)
    assert p50.verdict == "outside" and p99.verdict == "within"


def test_rtt_zero_samples_are_no_rtt_yet():
    # srtt 0 = no RTT sample yet (ss prints no rtt:): not a 0 ms RTT
    sim = make_result(bytes_received=KERNEL_BYTES, srtt_ms=lambda t: np.where(t < 5, 0.0, 80.0))
    v = compare_runs(sim, make_result(bytes_received=KERNEL_BYTES, srtt_ms=lambda t: t * 0 + 80.0))
    assert row(v, "rtt_p50_ms").sim == pytest.approx(80.0)


def test_too_few_rtt_samples_is_na():
    # only the last MIN_RTT_SAMPLES - 1 samples have an RTT
    last = 10.0 - (MIN_RTT_SAMPLES - 1) * 0.1 + 0.05  # samples at 0.1 s steps up to 10.0 s
    kern = make_result(bytes_received=KERNEL_BYTES, srtt_ms=lambda t: np.where(t > last, 80.0, 0.0))
    v = compare_runs(make_result(bytes_received=KERNEL_BYTES), kern)
    r = row(v, "rtt_p50_ms")
    assert r.verdict == "n/a" and r.kernel is None and "the kernel run has 9 srtt samples" in r.reason


def test_short_run_has_no_steady_part():
    sim = make_result(bytes_received=10_000, duration="2s")
    v = compare_runs(sim, make_result(bytes_received=10_000, duration="2s"))
    # no room for the 2 s warm-up after the first byte (0.1 s): goodput from the first byte
    w = v.windows["server-client-0"]
    assert not w.steady and w.span_s["sim"] == pytest.approx((0.1, 2.0))
    assert "server-client-0" not in v.steady
    assert row(v, "rtt_p50_ms").verdict == "n/a" and "too short" in row(v, "rtt_p50_ms").reason
    assert row(v, "goodput_bps").verdict == "within"


@pytest.mark.parametrize(
    ("sim_retrans", "kern_retrans", "verdict"),
    [
        (120, 100, "within"),  # 1.2 % vs 1.0 %: 0.2 pp
        (10, 30, "within"),  # 0.1 % vs 0.3 %: 0.2 pp, though -67 %
        (2600, 2000, "within"),  # 26 % vs 20 %: 6 pp, but +30 %
        (300, 100, "outside"),  # 3 % vs 1 %: 2 pp and +200 %
    ],
)
def test_retrans_either_tolerance(sim_retrans, kern_retrans, verdict):
    v = compare_runs(
        make_result(bytes_received=KERNEL_BYTES, retrans=sim_retrans),
        make_result(bytes_received=KERNEL_BYTES, retrans=kern_retrans),
    )
    r = row(v, "retrans_pct")
    assert r.sim == pytest.approx(sim_retrans / 100) and r.kernel == pytest.approx(kern_retrans / 100)
    assert r.difference == pytest.approx((sim_retrans - kern_retrans) / 100)  # percentage points
    assert r.verdict == verdict, r.reason


def test_retrans_pp_only_tolerance():
    # retrans=0.1pp replaces the whole tolerance: no relative allowance any more
    sim, kern = (make_result(bytes_received=KERNEL_BYTES, retrans=n) for n in (120, 100))
    assert row(compare_runs(sim, kern, parse_tolerances("retrans=0.1pp")), "retrans_pct").verdict == "outside"
    assert row(compare_runs(sim, kern, parse_tolerances("retrans=0.1pp/25%")), "retrans_pct").verdict == "within"


@pytest.mark.parametrize(
    ("sim_drops", "kern_drops", "verdict"),
    [(3, 9, "within"), (100, 80, "within"), (100, 40, "outside"), (0, 0, "within"), (15, 0, "outside")],
)
def test_queue_drops_per_link(sim_drops, kern_drops, verdict):
    # link 2 is emu->client (the bottleneck)
    v = compare_runs(
        make_result(bytes_received=KERNEL_BYTES, drops={2: sim_drops}),
        make_result(bytes_received=KERNEL_BYTES, drops={2: kern_drops}),
    )
    links = [r for r in v.rows if r.metric == "queue_drops"]
    assert [r.subject for r in links] == ["server->emu", "emu->server", "emu->client", "client->emu"]
    r = row(v, "queue_drops", "emu->client")
    assert (r.sim, r.kernel) == (sim_drops, kern_drops)
    assert r.verdict == verdict, r.reason


def test_invalid_kernel_run_gets_no_verdicts():
    kern = make_result(
        bytes_received=KERNEL_BYTES,
        summary_kernel={"release": "6.18", "hz": 1000, "valid": False, "invalid_reasons": ["steal 12 % > 5 %"]},
    )
    v = compare_runs(make_result(bytes_received=KERNEL_BYTES), kern)
    assert not v.valid and v.invalid_reasons == ["steal 12 % > 5 %"]
    assert {r.verdict for r in v.rows} == {"n/a"}
    assert all(r.reason == "no verdict: the kernel run is invalid" for r in v.rows)
    assert v.verdict_line() == "INVALID: steal 12 % > 5 %"
    assert v.kernel["release"] == "6.18"


def test_a_flow_missing_in_the_kernel_run_is_na():
    kern = make_result(bytes_received=KERNEL_BYTES)
    kern.flows["name"] = ["other"]
    v = compare_runs(make_result(bytes_received=KERNEL_BYTES), kern)
    for metric in ("goodput_bps", "rtt_p50_ms", "rtt_p99_ms", "retrans_pct"):
        assert row(v, metric).verdict == "n/a" and "no such flow" in row(v, metric).reason


def test_counts_and_json():
    v = compare_runs(
        make_result(bytes_received=int(KERNEL_BYTES * 1.5)),
        make_result(bytes_received=KERNEL_BYTES, summary_kernel={"release": "6.18", "hz": 1000, "valid": True}),
    )
    c = v.counts()
    assert c["outside"] == 1 and c["within"] + c["outside"] + c["n/a"] == len(v.rows) == 8
    doc = json.loads(json.dumps(v.to_json(), allow_nan=False))
    assert doc["valid"] is True and len(doc["metrics"]) == 8
    assert {m["verdict"] for m in doc["metrics"]} <= {"within", "outside", "n/a"}
    assert doc["tolerances"]["goodput_rel"] == 0.10


# -- tolerances -------------------------------------------------------------------------


def test_default_tolerances_are_arch11s():
    t = parse_tolerances(None)
    assert (t.goodput_rel, t.rtt_p50_rel, t.rtt_p99_rel) == (0.10, 0.15, 0.25)
    assert (t.retrans_pp, t.retrans_rel, t.drops_packets, t.drops_rel) == (0.5, 0.5, 10, 0.5)
    assert parse_tolerances(t.spec()) == t


def test_parse_tolerances():
    t = parse_tolerances("goodput=5%,rtt_p50=10%,rtt_p99=20%,retrans=0.5pp,drops=20%")
    assert t == Tolerances(
        goodput_rel=0.05,
        rtt_p50_rel=0.10,
        rtt_p99_rel=0.20,
        retrans_pp=0.5,
        retrans_rel=None,
        drops_packets=None,
        drops_rel=0.20,
    )
    t = parse_tolerances(["drops=5/30%", " RETRANS = 1pp / 10% "])
    assert (t.drops_packets, t.drops_rel, t.retrans_pp, t.retrans_rel) == (5, 0.30, 1, 0.10)
    assert parse_tolerances("drops=7pkts").drops_packets == 7
    assert parse_tolerances("goodput=none").goodput_rel is None
    assert t.text("retrans") == "±1 pp or ±10 %" and Tolerances().text("drops") == "±10 packets or ±50 %"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("goodput=5", '--tolerance: goodput: "5" has no unit; expected a percentage such as 10%'),
        ("rtt_p50=10ms", "--tolerance: rtt_p50: \"10ms\" has the unit 'ms', which rtt_p50 does not take"),
        ("rtt=10%", '--tolerance: "rtt" is not a tolerance; expected one of goodput, rtt_p50, rtt_p99, retrans, drops'),
        ("goodput", '--tolerance: "goodput" is not KEY=VALUE'),
        ("retrans=1pp/2pp", '--tolerance: retrans: "1pp/2pp" gives the same kind of tolerance twice'),
        ("drops=x%", '--tolerance: drops: "x%" is not a number with a unit'),
        ("goodput=5%,,", '--tolerance: "goodput=5%,," has an empty item'),
        ("goodput=5%,goodput=6%", '--tolerance: goodput: "6%" is given twice'),
    ],
)
def test_tolerance_errors_name_the_item(spec, message):
    with pytest.raises(ScenarioError) as e:
        parse_tolerances(spec)
    assert e.value.errors[0].line().startswith(message)
    assert "\n" not in e.value.errors[0].line()


def test_tolerance_errors_all_reported():
    with pytest.raises(ScenarioError) as e:
        parse_tolerances("goodput=5,rtt_p99=x,drops=10%")
    assert [err.path for err in e.value.errors] == ["goodput", "rtt_p99"]


# -- the validation directory -----------------------------------------------------------


def seed_standin(sc, options, progress=False):
    """A simulation of the same scenario with another seed standing in for the kernel."""
    return tcplab.run(sc, seed=int(sc.seed) + 1, core=fake_core.FakeCore())


def test_validation_directory(tmp_path):
    out = tmp_path / "v"
    v = validate(
        "builtin:cubic-vs-bbr-lossy",
        overrides=["duration=5s"],
        out=out,
        kernel_runner=seed_standin,
        core=fake_core.FakeCore(),
    )
    for name in ("report.html", "report.md", "validation.json", MARKER, "plots/flow-0-overlay.png"):
        assert (out / name).is_file(), name
    for run in ("sim", "kernel"):
        assert (out / run / "report.html").is_file() and (out / run / "summary.json").is_file()
    assert json.loads((out / MARKER).read_text())["kind"] == "validate"
    html = (out / "report.html").read_text()
    # self-contained: every src= is a data: URI; both run reports linked
    assert all(src.startswith("data:") for src in re.findall(r'src="([^"]*)"', html))
    assert 'href="sim/report.html"' in html and 'href="kernel/report.html"' in html
    # a verdict per metric, in the page and the Markdown
    md = (out / "report.md").read_text()
    for r in v.rows:
        assert r.reason.replace("'", "&#39;") in html
        assert re.search(rf"\| {re.escape(r.subject)} \| {r.label} \|.*\| {re.escape(r.verdict)} \|", md)
    doc = json.loads((out / "validation.json").read_text())
    assert doc["runs"] == {"sim": "sim", "kernel": "kernel"} and len(doc["metrics"]) == len(v.rows)
    assert doc["when"] and doc["machine"]["cpus"]
    # --force replaces a validation directory, but not one with a file tcplab did not write
    check_output_dir(out, overwrite=True)
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ScenarioError, match="notes.txt"):
        check_output_dir(out, overwrite=True)


def test_invalid_run_report_says_so(tmp_path):
    def invalid(sc, options):
        r = seed_standin(sc, options)
        r.summary["kernel"] = {"release": "6.18.44", "hz": 1000, "valid": False, "invalid_reasons": ["busy CPU 40 %"]}
        return r

    out = tmp_path / "v"
    v = validate(
        "builtin:cubic-vs-bbr-lossy",
        overrides=["duration=3s"],
        out=out,
        kernel_runner=invalid,
        core=fake_core.FakeCore(),
    )
    assert not v.valid
    html = (out / "report.html").read_text()
    assert "INVALID: busy CPU 40 %" in html and "Linux 6.18.44, HZ=1000" in html
    assert "within" not in [r.verdict for r in v.rows]


def test_nothing_written_when_the_kernel_run_fails(tmp_path):
    from tcplab.kernel.validate import ValidateError

    def fails(sc, options):
        raise ValidateError("kernel run failed: agent died")

    with pytest.raises(ValidateError):
        validate(
            "builtin:cubic-vs-bbr-lossy",
            overrides=["duration=2s"],
            out=tmp_path / "v",
            kernel_runner=fails,
            core=fake_core.FakeCore(),
        )
    assert not (tmp_path / "v").exists()


# -- the command ------------------------------------------------------------------------


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_cli_bad_tolerance_exit_2(tmp_path):
    r = invoke("validate", "builtin:cubic-vs-bbr-lossy", "-o", tmp_path / "v", "--tolerance", "goodput=5")
    assert r.exit_code == 2
    assert r.stderr.strip() == 'error: --tolerance: goodput: "5" has no unit; expected a percentage such as 10%'
    assert not (tmp_path / "v").exists()


def test_cli_needs_root(tmp_path, monkeypatch):
    import os

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    r = invoke("validate", "builtin:cubic-vs-bbr-lossy", "-o", tmp_path / "v")
    assert r.exit_code == 2
    assert r.stderr.strip() == "error: tcplab validate: needs root (network namespaces, tc, nft): run it with sudo"


def test_cli_prints_the_table(tmp_path, monkeypatch, patched_core):
    import os

    import tcplab.kernel.validate as kv

    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(kv, "preflight", lambda sc, options: None)
    monkeypatch.setattr(kv, "_default_kernel_runner", seed_standin)
    out = tmp_path / "v"
    r = invoke("validate", "builtin:cubic-vs-bbr-lossy", "-o", out, "--set", "duration=3s", "--no-plots")
    assert r.exit_code == 0, r.output
    for text in ("goodput", "srtt p50", "srtt p99", "retransmissions", "queue drops", "emu->client", f"wrote {out}"):
        assert text in r.stdout
    assert re.search(r"\d+ metrics: \d+ within tolerance, \d+ outside, \d+ n/a", r.stdout)
    meta = json.loads((out / "sim" / "metadata.json").read_text())
    assert meta["overrides"] == ["duration=3s"]


def test_cli_invalid_exit_1(tmp_path, monkeypatch, patched_core):
    import os

    import tcplab.kernel.validate as kv

    def invalid(sc, options, progress=False):
        r = seed_standin(sc, options)
        r.summary["kernel"] = {"release": "6.18", "valid": False, "invalid_reasons": ["delay line late"]}
        return r

    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(kv, "preflight", lambda sc, options: None)
    monkeypatch.setattr(kv, "_default_kernel_runner", invalid)
    out = tmp_path / "v"
    r = invoke("validate", "builtin:cubic-vs-bbr-lossy", "-o", out, "--set", "duration=3s", "--no-plots")
    assert r.exit_code == 1
    assert r.stderr.strip().splitlines()[-1] == "INVALID: delay line late"
    assert (out / "report.html").is_file()


def test_kernel_run_dir_records_the_overrides(tmp_path):
    # the kernel run gets the scenario with the overrides applied; its run directory still
    # names them (title, summary, metadata), as the simulation's does
    out = tmp_path / "v"
    validate(
        "builtin:cubic-vs-bbr-lossy",
        overrides=["duration=3s", "flows.0.cc=bbr"],
        out=out,
        kernel_runner=lambda sc, options: tcplab.run(sc, core=fake_core.FakeCore()),
        core=fake_core.FakeCore(),
        plots=False,
    )
    for run in ("sim", "kernel"):
        summary = json.loads((out / run / "summary.json").read_text())
        assert summary["title"] == "cubic-vs-bbr-lossy [duration=3s, flows.0.cc=bbr]", run
        assert json.loads((out / run / "metadata.json").read_text())["overrides"] == ["duration=3s", "flows.0.cc=bbr"]


def test_cli_unsupported_scenario_exit_2_before_the_simulation(tmp_path, monkeypatch, patched_core):
    # what kernel mode cannot build is a user error before anything runs (the plan decides)
    import os
    import types

    class KernelError(RuntimeError):
        pass

    class KernelUnsupported(KernelError):
        pass

    class KernelUsageError(KernelError):
        pass

    def make_plan(config, env, options):
        raise KernelUnsupported("kernel: sch_fq_codel is not available on this kernel (links.1.queue.qdisc=fq_codel)")

    fakes = {
        "tcplab.kernel.errors": types.SimpleNamespace(
            KernelError=KernelError, KernelUnsupported=KernelUnsupported, KernelUsageError=KernelUsageError
        ),
        "tcplab.kernel.env": types.SimpleNamespace(probe=lambda prefix="tcplab": object()),
        "tcplab.kernel.plan": types.SimpleNamespace(make_plan=make_plan),
    }
    for name, module in fakes.items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    r = invoke("validate", "builtin:fq-codel-bottleneck", "-o", tmp_path / "v")
    assert r.exit_code == 2
    assert r.stderr.strip().splitlines()[-1] == (
        "error: kernel: sch_fq_codel is not available on this kernel (links.1.queue.qdisc=fq_codel)"
    )
    assert patched_core.calls == [] and not (tmp_path / "v").exists()


def test_cli_busy_prefix_exit_1_before_the_simulation(tmp_path, monkeypatch, patched_core):
    # a namespace the kernel run would create exists (another run going on, or a killed
    # one's): refused before the simulation, not after it, with the testbed's line
    import os

    import tcplab.kernel.testbed as tb
    from tcplab.kernel.errors import KernelError

    line = "kernel: netns tcplab-emu exists and pid 42 (sleep) runs in it: another run with the prefix tcplab"

    def busy(plan):
        raise KernelError(line)

    monkeypatch.setattr(tb, "check_free", busy)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    r = invoke("validate", "builtin:cubic-vs-bbr-lossy", "-o", tmp_path / "v")
    assert r.exit_code == 1
    assert r.stderr.strip().splitlines()[-1] == f"error: {line}"
    assert patched_core.calls == [] and not (tmp_path / "v").exists()


def test_path_table_reports_loss_drops_of_both_worlds():
    def with_loss(n):
        def edit(raw):
            raw["links"][2]["loss_drops"] = n
            raw["links"][2]["sent_packets"] = 1000

        return tcplab.run("builtin:cubic-vs-bbr-lossy", overrides=["duration=3s"], core=EditedCore(edit))

    v = compare_runs(with_loss(10), with_loss(12))
    (entry,) = [p for p in v.path if p["link"] == "emu->client"]
    assert entry["loss_drops"] == {"sim": 10, "kernel": 12}
    assert entry["sent_packets"] == {"sim": 1000, "kernel": 1000}
    from tcplab.views.validate import validation_html, validation_markdown

    md = validation_markdown(v)
    assert re.search(r"^\| emu->client \| 1000 / 1000 \| \d+ / \d+ \| 10 / 12 \|$", md, flags=re.M), md
    assert "<td>10 / 12</td>" in validation_html(v)
    # not judged: no verdict rows for it
    assert not [r for r in v.rows if "loss" in r.metric]


def test_notes_quiet_check_hz_and_departures():
    sim = make_result(bytes_received=KERNEL_BYTES)
    kern = make_result(
        bytes_received=KERNEL_BYTES,
        summary_kernel={"release": "6.18", "hz": 1000, "valid": True, "invalid_reasons": []},
    )
    # a KernelResult carries kernel.json as .kernel: the quiet check and the departures
    kern.kernel = {
        "quiet": {"ok": False, "reason": "other processes used 1.98 CPU over 1 s", "allow_busy": True},
        "departures": ["server->emu: delay 50 us left to the veth (below 500 us, no delay line)"],
    }
    v = compare_runs(sim, kern)
    # the scenario's hosts run at HZ=250 (the default), this "kernel" at 1000
    assert any("hosts.NAME.hz=1000" in n and "client, server" in n for n in v.notes)
    assert any("not quiet" in n and "1.98 CPU" in n for n in v.notes)
    from tcplab.views.validate import validation_html, validation_markdown

    html, md = validation_html(v), validation_markdown(v)
    assert "left to the veth" in html and "left to the veth" in md
    assert "hosts.NAME.hz=1000" in html and "hosts.NAME.hz=1000" in md
    # the same HZ and a quiet machine: no notes
    kern.summary["kernel"]["hz"] = 250
    kern.kernel = {"quiet": {"ok": True}}
    assert compare_runs(sim, kern).notes == []


@pytest.mark.parametrize(("flag", "expected"), [([], True), (["-q"], False)])
def test_cli_quiet_means_no_kernel_progress_bar(tmp_path, monkeypatch, patched_core, flag, expected):
    import os

    import tcplab.kernel.validate as kv

    seen = []

    def runner(sc, options, progress=True):
        seen.append(progress)
        return seed_standin(sc, options)

    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(kv, "preflight", lambda sc, options: None)
    monkeypatch.setattr(kv, "_default_kernel_runner", runner)
    r = invoke(
        "validate", "builtin:cubic-vs-bbr-lossy", "-o", tmp_path / "v", "--set", "duration=2s", "--no-plots", *flag
    )
    assert r.exit_code == 0, r.output
    assert seen == [expected]
