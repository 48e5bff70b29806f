"""tcplab reproduce's framework: planning, parallel runs, the written tree, the index, the CLI.

A fake experiment (two 1 s runs of a small lossy path) is registered in place of the five
(:data:`tcplab.experiments.NAMES` patched), so these tests exercise the machinery, not the
stories. The last tests check every real experiment package that exists: its claims quote the
seed verbatim, its scenario files validate, its plans are consistent.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
import types
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tcplab.experiments.catalog as experiments
from tcplab.cli import app
from tcplab.errors import EngineError, ScenarioError
from tcplab.experiments.base import ClaimResult, Crosscheck, Experiment, Explanation, Run

ROOT = Path(__file__).resolve().parents[2]

TINY = """name: tiny
description: A 1 s bulk flow over a 10 Mbit/s, 10 ms path with 1 % loss (a test scenario).
duration: 1s
sample_interval: 100ms
hosts: {server: {}, client: {}}
routers: [r1]
links:
  - {between: [server, r1], rate: 10Mbit, delay: 5ms}
  - {between: [r1, client], rate: 10Mbit, delay: 5ms, loss: 1%}
flows:
  - {from: server, to: client, cc: cubic}
"""

CLAIMS = """- id: faster
  story: fake.txt
  quote: "BBR moved more bytes"
  published: more goodput
  conditions: a 1 s run
- id: always-partly
  story: fake.txt
  quote: "something | with a pipe"
  published: "<b>bold</b>"
"""


class FakeExperiment(Experiment):
    """Two runs (cubic, bbr) in quick mode, a third in full mode; verdicts from goodput."""

    name = "fake-exp"
    story = "001_fake.txt"
    title = "A fake experiment"
    setup = "Two hosts and a router; CUBIC vs BBR for 1 s."
    extra_overrides: tuple[str, ...] = ()

    def runs(self, quick: bool) -> list[Run]:
        runs = [
            Run("cubic", "tiny.yaml", group="cc"),
            Run("bbr", "tiny.yaml", ("flows.0.cc=bbr", *self.extra_overrides), group="cc"),
        ]
        if not quick:
            runs.append(Run("bbr-seed2", "tiny.yaml", ("flows.0.cc=bbr", "seed=2"), quick=False))
        return runs

    def evaluate(self, results, quick):
        goodput = {label: float(r.flows["goodput_bps"].sum()) for label, r in results.items()}
        better = goodput["bbr"] > goodput["cubic"]
        return [
            ClaimResult(
                self.claim("faster"),
                f"{goodput['bbr'] / 1e6:.3g} vs {goodput['cubic'] / 1e6:.3g} Mbit/s",
                "reproduced" if better else "not reproduced",
                "goodput compared",
                {"goodput_bps": goodput},
            ),
            ClaimResult(self.claim("always-partly"), "n/a", "partly", "by construction"),
        ]

    def explain(self, results, quick, plots_dir):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        fig = Figure()
        FigureCanvasAgg(fig)
        ts = results["cubic"].timeseries
        fig.add_subplot().plot(ts["t_ns"] / 1e9, ts["cwnd"])
        fig.savefig(plots_dir / "cwnd.png")
        return [Explanation("cwnd", f"{len(ts)} samples.", "cwnd.png")]

    def crosschecks(self, quick):
        return [
            Crosscheck("cubic", absent=("nic-rx-drops",)),
            Crosscheck("bbr", expect=("no-such-finding",)),
            Crosscheck("cubic", absent=("nic-rx-drops",), at_s=0.5),  # ss as at 0.5 s: a capture
        ]


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """The fake experiment, registered as the only experiment."""
    directory = tmp_path / "fake_exp"
    directory.mkdir()
    (directory / "tiny.yaml").write_text(TINY, encoding="utf-8")
    (directory / "claims.yaml").write_text(CLAIMS, encoding="utf-8")
    experiment = FakeExperiment(directory)
    module = types.ModuleType("tcplab.experiments.fake_exp")
    module.EXPERIMENT = experiment
    monkeypatch.setitem(sys.modules, "tcplab.experiments.fake_exp", module)
    monkeypatch.setattr(experiments, "NAMES", ("fake-exp",))
    monkeypatch.setattr(experiments, "STORIES", {"fake-exp": "001_fake.txt"})
    monkeypatch.chdir(tmp_path)
    return experiment


def _cli(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


# -- planning --------------------------------------------------------------------------------
def test_a_bad_override_fails_before_any_run(fake, monkeypatch, tmp_path):
    compare = importlib.import_module("tcplab.compare")

    started = []
    monkeypatch.setattr(compare, "run_in_processes", lambda *a, **k: started.append(a))
    monkeypatch.setattr(compare, "run_variant_or_failure", lambda job: started.append(job))
    fake.extra_overrides = ("flows.0.cc=nosuchcc",)
    from tcplab.experiments.reproduce import reproduce

    with pytest.raises(ScenarioError, match="cc"):
        reproduce(["fake-exp"], tmp_path / "out", quick=True)
    assert started == []
    assert not (tmp_path / "out").exists()
    r = _cli("reproduce", "fake-exp", "--quick", "-o", tmp_path / "out2")
    assert r.exit_code == 2 and "error:" in r.output and "cc" in r.output
    assert not (tmp_path / "out2").exists()


def test_unknown_name_is_refused_before_running(fake, tmp_path):
    from tcplab.experiments.reproduce import reproduce

    with pytest.raises(ScenarioError, match="no experiment named 'nope'"):
        reproduce(["nope"], tmp_path / "out")
    assert not (tmp_path / "out").exists()


# -- running ---------------------------------------------------------------------------------
@pytest.mark.engine
def test_parallel_runs_equal_sequential_runs(fake, real_core):
    from tcplab.experiments.reproduce import run_experiments

    seen = []
    one = run_experiments(["fake-exp"], quick=True, jobs=1, progress=lambda *a: seen.append(a))[0]
    two = run_experiments(["fake-exp"], quick=True, jobs=2, progress=lambda *a: seen.append(a))[0]
    assert one.error is None and two.error is None
    assert [c.as_dict() for c in one.claims] == [c.as_dict() for c in two.claims]
    for label in ("cubic", "bbr"):
        assert one.results[label].summary["flows"] == two.results[label].summary["flows"]
        assert one.results[label].timeseries.equals(two.results[label].timeseries)
    # progress: one call per run, in both modes, counting up to the total, no failure
    assert [(d, t, f) for d, t, _label, f in seen] == [(1, 2, None), (2, 2, None)] * 2
    assert {s[2] for s in seen} == {"fake-exp/cubic", "fake-exp/bbr"}


@pytest.mark.engine
def test_the_written_tree_and_the_index(fake, real_core, tmp_path):
    r = _cli("reproduce", "--all", "--quick", "-o", tmp_path / "out", "-j", "2")
    assert r.exit_code == 0, r.output
    out = tmp_path / "out"
    exp = out / "fake-exp"
    for name in ("index.html", "index.md", "index.json", ".tcplab-run"):
        assert (out / name).is_file(), name
    for name in ("report.html", "report.md", "claims.json", "plots/cwnd.png"):
        assert (exp / name).is_file(), name
    for label in ("cubic", "bbr"):
        assert (exp / "runs" / label / "summary.json").is_file()
        assert (exp / "runs" / label / "counters.txt").is_file()
    assert not (exp / "runs" / "bbr-seed2").exists()  # a full-mode run only
    assert not [p for p in out.rglob("*.tmp")]

    record = json.loads((exp / "claims.json").read_text())
    assert [c["id"] for c in record["claims"]] == ["faster", "always-partly"]
    goodput = record["claims"][0]["data"]["goodput_bps"]
    expected = "reproduced" if goodput["bbr"] > goodput["cubic"] else "not reproduced"
    assert record["claims"][0]["verdict"] == expected
    assert [x["label"] for x in record["runs"]] == ["cubic", "bbr"]
    assert record["runs"][1]["command"].endswith("tiny.yaml --set flows.0.cc=bbr")
    assert all(x["wall_time_s"] > 0 for x in record["runs"])
    checks = [(c["run"], c["at_s"], c["agree"]) for c in record["crosschecks"]]
    assert checks == [("cubic", None, True), ("bbr", None, False), ("cubic", 0.5, True)]  # no rule no-such-finding
    capture = record["crosschecks"][2]["capture"]
    assert capture and (exp / capture / "README.txt").is_file()

    index = json.loads((out / "index.json").read_text())
    counts = index["experiments"][0]["counts"]
    assert sum(counts.values()) == 2 and counts["partly"] == 1
    assert counts[expected] == 1
    assert index["totals"] == {**counts, "claims": 2}
    assert index["mode"] == "quick"
    assert (index["experiments"][0]["crosschecks_agree"], index["experiments"][0]["crosschecks"]) == (2, 3)
    assert index["totals_line"] in (out / "index.md").read_text()
    assert index["totals_line"] in (out / "index.html").read_text()

    html = (exp / "report.html").read_text()
    assert "data:image/png;base64," in html  # the figure is inside the page
    assert not re.search(r"""src=["'](?!data:)""", html)  # nothing loaded from elsewhere
    assert "<b>bold</b>" not in html and "&lt;b&gt;bold" in html  # story text is escaped
    assert "FAILED" not in html
    assert f'href="{capture}/README.txt"' in html
    md = (exp / "report.md").read_text()
    assert "something \\| with a pipe" in md  # one table row per claim


@pytest.mark.engine
def test_force_replaces_only_a_reproduce_directory(fake, real_core, tmp_path):
    out = tmp_path / "out"
    assert _cli("reproduce", "fake-exp", "--quick", "-o", out, "-q").exit_code == 0
    r = _cli("reproduce", "fake-exp", "--quick", "-o", out, "-q")
    assert r.exit_code == 2 and "--force" in r.output
    assert _cli("reproduce", "fake-exp", "--quick", "-o", out, "-q", "--force").exit_code == 0
    (out / "fake-exp" / "notes.txt").write_text("mine")
    r = _cli("reproduce", "fake-exp", "--quick", "-o", out, "-q", "--force")
    assert r.exit_code == 2 and "notes.txt" in r.output
    assert (out / "fake-exp" / "notes.txt").read_text() == "mine"
    other = tmp_path / "other"
    other.mkdir()
    (other / "index.html").write_text("someone's page")
    r = _cli("reproduce", "fake-exp", "--quick", "-o", other, "-q", "--force")
    assert r.exit_code == 2 and (other / "index.html").read_text() == "someone's page"


def test_check_output_dir_knows_a_reproduce_tree(tmp_path):
    from tcplab.results.rundir import check_output_dir, write_marker

    out = tmp_path / "out"
    (out / "exp-a" / "plots").mkdir(parents=True)
    (out / "exp-a" / "runs" / "r1").mkdir(parents=True)
    write_marker(out, "reproduce")
    write_marker(out / "exp-a" / "runs" / "r1", "run")
    for f in ("index.html", "index.md", "index.json", "exp-a/report.html", "exp-a/claims.json", "exp-a/plots/a.png"):
        (out / f).write_text("x")
    (out / "exp-a" / "runs" / "r1" / "summary.json").write_text("{}")
    assert check_output_dir(out, overwrite=True) == out.resolve()
    for intruder in ("exp-a/plots/a.txt", "exp-a/runs/r1/mine.csv", "exp-a/extra.md", "Notes"):
        (out / intruder).write_text("x")
        with pytest.raises(ScenarioError, match="--force refused"):
            check_output_dir(out, overwrite=True)
        (out / intruder).unlink()
    (out / "exp-a" / "runs" / "notarun").mkdir()
    with pytest.raises(ScenarioError, match="not a tcplab run directory"):
        check_output_dir(out, overwrite=True)


# -- failures and exit codes -----------------------------------------------------------------
@pytest.mark.engine
def test_a_failing_run_is_stated_and_exits_1(fake, real_core, tmp_path, monkeypatch):
    compare = importlib.import_module("tcplab.compare")

    real = compare._run_variant

    def failing(job):
        if job[1].endswith("/bbr"):
            raise EngineError("injected failure")
        return real(job)

    monkeypatch.setattr(compare, "_run_variant", failing)  # inherited by the forked workers
    out = tmp_path / "out"
    r = _cli("reproduce", "fake-exp", "--quick", "-o", out, "-j", "2")
    assert r.exit_code == 1
    assert "injected failure" in r.output
    html = (out / "fake-exp" / "report.html").read_text()
    assert "FAILED" in html and "injected failure" in html
    record = json.loads((out / "fake-exp" / "claims.json").read_text())
    assert "injected failure" in record["error"] and record["claims"] == []
    assert next(x for x in record["runs"] if x["label"] == "bbr")["failed"]
    index = json.loads((out / "index.json").read_text())
    assert index["failed"] == ["fake-exp"]
    assert "FAILED" in (out / "index.md").read_text()


def test_a_run_that_kills_its_batchs_process_fails_alone(fake, real_core, tmp_path, monkeypatch):
    """Workers run a few runs each (reproduce.RUNS_PER_PROCESS); a run whose process dies
    (here os._exit in the bbr run) takes its batch's process with it, so the batch is run
    again one run per process: the others of the batch succeed, the killer fails with the
    process's death as its reason."""
    import os

    compare = importlib.import_module("tcplab.compare")
    procpool = importlib.import_module("tcplab.procpool")
    real = compare._run_variant

    def dying(job):
        if job[1].endswith("/bbr"):
            os._exit(3)
        return real(job)

    monkeypatch.setattr(compare, "_run_variant", dying)  # inherited by the forked workers
    monkeypatch.setattr(procpool, "guided_batches", lambda n, workers, most: [n])  # one batch of all
    out = tmp_path / "out"
    r = _cli("reproduce", "fake-exp", "--quick", "-o", out, "-j", "2")
    assert r.exit_code == 1
    record = json.loads((out / "fake-exp" / "claims.json").read_text())
    failed = {x["label"] for x in record["runs"] if x.get("failed")}
    assert failed == {"bbr"}, record["runs"]
    assert len(record["runs"]) > 1
    assert "exit" in record["error"] or "status 3" in record["error"], record["error"]
    for run in record["runs"]:
        if run["label"] != "bbr":
            assert (out / "fake-exp" / "runs" / run["label"] / "summary.json").is_file()


@pytest.mark.engine
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_full_disk_while_a_worker_writes_its_run_stops_the_replay(fake, real_core, tmp_path, monkeypatch, jobs):
    """Each worker writes its run's directory (in parallel, as it simulates); a disk that
    fills meanwhile is the replay's error (exit 1, the file named, nothing left), as when the
    parent wrote every run itself, not one run's failure among the others."""
    import errno

    from tcplab.results import Result

    real = Result._write_files

    def full(self, out, *, plots):
        if self.scenario.name and "bbr" in " ".join(self.overrides):
            raise OSError(errno.ENOSPC, "No space left on device", str(out / "flows.parquet"))
        return real(self, out, plots=plots)

    monkeypatch.setattr(Result, "_write_files", full)  # inherited by the forked workers
    out = tmp_path / "out"
    r = _cli("reproduce", "fake-exp", "--quick", "-o", out, "-j", jobs)
    assert r.exit_code == 1, r.output
    last = r.output.strip().splitlines()[-1]
    assert last.startswith("error:") and last.endswith(
        "runs/bbr/flows.parquet: No space left on device (nothing written)"
    )
    assert not out.exists() and not list(tmp_path.glob(".out*"))


def test_command_line_mistakes_exit_2(fake, tmp_path):
    for args, text in (
        ((), "--all"),
        (("nope",), "no experiment named 'nope'"),
        (("fake-exp", "--all"), "not both"),
    ):
        r = _cli("reproduce", *args, "-o", tmp_path / "o")
        assert r.exit_code == 2, args
        assert r.output.startswith("error:") and text in r.output and len(r.output.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_experiments_lists_and_prints_the_directory(fake):
    r = _cli("experiments")
    assert r.exit_code == 0 and "fake-exp" in r.output and "2/3" in r.output
    r = _cli("experiments", "path", "fake-exp")
    assert r.exit_code == 0 and Path(r.output.strip()) == fake.directory
    assert _cli("experiments", "path", "nope").exit_code == 2
    assert _cli("experiments", "what").exit_code == 2


def test_records_are_json_even_with_numpy_and_nan():
    import numpy as np

    from tcplab.views.reproduce import _clean

    cleaned = _clean({"a": np.float64(1.5), "b": np.array([1, 2]), "c": float("nan"), "d": (np.int64(3),)})
    assert cleaned == {"a": 1.5, "b": [1, 2], "c": None, "d": [3]}
    json.dumps(cleaned, allow_nan=False)


# -- every real experiment -------------------------------------------------------------------
def _installed() -> list[str]:
    return [n for n in experiments.NAMES if experiments.directory(n).is_dir()]


def _seeds_dir() -> Path | None:
    """The stories' seed files: ``../shared/seeds`` from the repository (or a worktree two levels down)."""
    candidates = [os.environ.get("TCPLAB_SEEDS", ""), ROOT.parent / "shared/seeds", ROOT.parents[1] / "shared/seeds"]
    return next((Path(c) for c in candidates if c and Path(c).is_dir()), None)


def _words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("name", _installed())
def test_claims_quote_the_seed_verbatim(name):
    seeds = _seeds_dir()
    if seeds is None:
        pytest.skip("the seed stories (../shared/seeds) are not here")
    e = experiments.load(name)
    assert e.story == experiments.STORIES[name]
    assert e.claims, "claims.yaml has no claim"
    for c in e.claims.values():
        assert c.story == e.story, c.id
        seed = _words((seeds / c.story).read_text(encoding="utf-8"))
        # a quote of several passages separates them with a line "[...]" (claims.yaml)
        for part in _words(c.quote).split(" [...] "):
            assert part in seed, f"{name}/{c.id}: the quote is not verbatim in {c.story}: {part[:60]!r}"


@pytest.mark.parametrize("name", _installed())
def test_scenario_files_validate(name):
    e = experiments.load(name)
    files = [p for p in e.files() if p.name != "claims.yaml"]
    assert files, "no scenario file"
    for path in files:
        r = _cli("check", path)
        assert r.exit_code == 0, f"{path.name}: {r.output}"


@pytest.mark.parametrize("name", _installed())
def test_plans_are_consistent(name):
    e = experiments.load(name)
    assert e.name == name and e.title and e.setup and "\n\n" not in e.setup.strip()
    full, quick = e.runs(False), e.runs(True)
    for runs in (full, quick):
        labels = [r.label for r in runs]
        assert len(set(labels)) == len(labels), labels
        assert all(re.fullmatch(r"[a-z0-9_.-]+", label) for label in labels), labels
        assert all(e.scenario_path(r.scenario).is_file() for r in runs)
    assert {r.label for r in quick} <= {r.label for r in full}
    assert all(r.quick for r in quick), "runs(quick=True) must leave out the runs marked quick=False"
    for mode in (False, True):
        labels = {r.label for r in e.runs(mode)}
        assert {c.run for c in e.crosschecks(mode)} <= labels
    e.plan(True)  # every quick run's overrides validate (the full plan: test_full_plan_validates)


@pytest.mark.slow  # the full plans validate tens of thousands of connections (microburst-ring: ~10 s)
@pytest.mark.parametrize("name", _installed())
def test_full_plan_validates(name):
    experiments.load(name).plan(False)


def test_the_readme_starts_with_the_five_stories():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = readme.split("```sh", 1)[1].split("```", 1)[0]
    assert first_block.split()[:2] == ["make", "reproduce"]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    target = makefile.split("\nreproduce:", 1)[1].split("\n\n", 1)[0]
    assert "tcplab reproduce --all --quick -o out/reproduce" in target
    assert "out/reproduce/index.html" in readme
    for name in experiments.NAMES:  # each experiment is listed and linked from its story
        assert f"`{name}`" in readme
        assert f"tcplab reproduce {name}" in (ROOT / "docs" / "stories.md").read_text(encoding="utf-8")


def test_a_missing_experiment_package_is_named_not_crashed(fake, monkeypatch, tmp_path):
    monkeypatch.setattr(experiments, "NAMES", ("fake-exp", "not-written-yet"))
    r = _cli("experiments")
    assert r.exit_code == 0 and "not installed" in r.output and "error" not in r.output
    r = _cli("reproduce", "--all", "--quick", "-o", tmp_path / "o")
    assert r.exit_code == 2 and "not-written-yet" in r.output and "not installed" in r.output
    assert not (tmp_path / "o").exists()
