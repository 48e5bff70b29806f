"""``tcplab recommend`` on a sweep directory (a synthetic table in ARCH12's SCHEMA): the
output, the files, --json, exit codes (0, 4 no feasible setting, 2 mistakes) and one-line
errors, through typer's CliRunner."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from recommend_tables import sweep_table
from tcplab.cli import app

CC = "flows.0.cc"
LOSS = "links.1.loss"


def _sweep_dir(tmp_path, fn, params=None, seeds=(1, 2)):
    d = tmp_path / "sweep"
    d.mkdir()
    t = sweep_table(params or {CC: ["cubic", "bbr"], LOSS: ["0.5%", "1%"]}, list(seeds), fn)
    t.to_parquet(d / "sweep.parquet")
    (d / "sweep.json").write_text(json.dumps({"status": "complete"}))
    (d / ".tcplab-run").write_text(json.dumps({"tcplab": "0", "kind": "sweep"}))
    return d


def _lossy(v, s):
    # bbr: high goodput, queue full (p99 RTT 200 ms); cubic: loss-bound, short queue
    if v[CC] == "bbr":
        return {"goodput_bps": 4.5e6, "rtt_p99_ms": 200.0}
    return {"goodput_bps": (2.0e6 if v[LOSS] == "0.5%" else 1.3e6) + s * 1e4, "rtt_p99_ms": 130.0}


def _run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_cli_recommends_and_writes(tmp_path):
    d = _sweep_dir(tmp_path, _lossy)
    out = tmp_path / "rec"
    r = _run("recommend", d, "--choose", CC, "--over", LOSS, "--maximize", "goodput", "-o", out)
    assert r.exit_code == 0, r.output
    assert "Recommend flows.0.cc=bbr" in r.output
    assert "rule: each setting is scored by its worst condition" in r.output
    assert "goodput = run.goodput_bps" in r.output
    assert f"wrote {out}" in r.output
    for f in ("recommend.json", "report.html", "plots/recommend.png", ".tcplab-run"):
        assert (out / f).is_file(), f
    data = json.loads((out / "recommend.json").read_text())
    assert data["recommendation"] == {CC: "bbr"} and data["runner_up"] == {CC: "cubic"}
    # _lossy: bbr's worst case 4.5 Mbit/s (flat over loss: either condition is its worst),
    # cubic's at 1 % loss, the mean of seeds 1 and 2: 1.3 Mbit/s + 15 kbit/s
    assert data["margin"] == pytest.approx(4.5e6 - (1.3e6 + 1.5e4))
    assert data["worst_condition"] in ({LOSS: "0.5%"}, {LOSS: "1%"})
    assert {e["run"] for e in data["evidence"]}  # runs named
    html = (out / "report.html").read_text()
    assert "Recommend flows.0.cc=bbr" in html and "data:image/png;base64," in html
    # rerun into the same recommend directory: files replaced, no --force needed
    r2 = _run(
        "recommend",
        d,
        "--choose",
        CC,
        "--over",
        LOSS,
        "--maximize",
        "goodput",
        "--subject-to",
        "p99 RTT < 175 ms",
        "-o",
        out,
    )
    assert r2.exit_code == 0, r2.output
    assert json.loads((out / "recommend.json").read_text())["recommendation"] == {CC: "cubic"}


def test_cli_objective_sentence_and_json(tmp_path):
    d = _sweep_dir(tmp_path, _lossy)
    r = _run(
        "recommend",
        d,
        "--choose",
        CC,
        "--over",
        LOSS,
        "--json",
        "--objective",
        "maximize goodput subject to p99 RTT < 175 ms",
    )
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["recommendation"] == {CC: "cubic"}
    assert data["objective"]["constraints"][0]["bound"] == 175.0
    bbr = next(c for c in data["choices"] if c["setting"] == {CC: "bbr"})
    assert not bbr["feasible"] and "p99 RTT < 175 ms" in bbr["why_not"]


def test_cli_no_feasible_setting_exits_4_and_still_writes(tmp_path):
    d = _sweep_dir(tmp_path, _lossy)
    out = tmp_path / "rec"
    r = _run("recommend", d, "--choose", CC, "--maximize", "goodput", "--subject-to", "p99 RTT < 100 ms", "-o", out)
    assert r.exit_code == 4, r.output
    assert "No setting meets p99 RTT < 100 ms" in r.output
    assert json.loads((out / "recommend.json").read_text())["recommendation"] is None


@pytest.mark.parametrize(
    ("args", "start"),
    [
        (["--choose", "flows.9.cc", "--maximize", "goodput"], 'error: --choose: "flows.9.cc" is not a swept parameter'),
        (["--choose", CC, "--maximize", "goodness"], 'error: --maximize: "goodness": "goodness" is not a metric'),
        (["--choose", CC, "--maximize", "goodput", "--subject-to", "p99 RTT < 50"], "error: --subject-to: "),
        (["--choose", CC, "--maximize", "goodput", "--minimize", "p99 RTT"], "error: --maximize: --maximize and"),
        (["--maximize", "goodput"], "error: --choose: no setting to choose"),
        (["--choose", CC, "--maximize", "goodput", "--seeds", "3"], "error: --seeds: --seeds only applies"),
        (["--choose", CC, "--maximize", "goodput", "--seed", "0"], "error: --seed: --seed only applies"),
        (["--choose", CC, "--over", CC, "--maximize", "goodput"], "error: --over: "),
    ],
)
def test_cli_mistakes_are_one_line_exit_2(tmp_path, args, start):
    d = _sweep_dir(tmp_path, _lossy)
    out = tmp_path / "rec"
    r = _run("recommend", d, *args, "-o", out)
    assert r.exit_code == 2, r.output
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith(start), r.output
    assert not out.exists()  # nothing written


def test_cli_refuses_a_directory_it_did_not_write(tmp_path):
    d = _sweep_dir(tmp_path, _lossy)
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    r = _run("recommend", d, "--choose", CC, "--maximize", "goodput", "-o", out)
    assert r.exit_code == 2 and "not a tcplab recommend directory" in r.output
    assert (out / "notes.txt").read_text() == "mine" and sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_cli_not_a_sweep_and_not_a_scenario(tmp_path):
    r = _run("recommend", tmp_path / "nothing", "--choose", CC, "--maximize", "goodput")
    assert r.exit_code == 2
    assert r.output.startswith("error: ") and len(r.output.strip().splitlines()) == 1


def test_api_callable_package(tmp_path):
    import tcplab

    d = _sweep_dir(tmp_path, _lossy)
    rec = tcplab.recommend(d, choose=[CC], over=[LOSS], maximize="goodput", subject_to=["p99 RTT < 175 ms"])
    assert rec.setting == {CC: "cubic"}
    import tcplab.recommend.metrics  # noqa: F401 - a submodule import keeps tcplab.recommend callable

    assert callable(tcplab.recommend)


# -- the scenario form: mistakes are found before anything runs ----------------------------------


@pytest.mark.parametrize(
    ("args", "start"),
    [
        (["--choose", CC, "--maximize", "goodput"], "error: --choose: flows.0.cc: no values"),
        (["--choose", f"{CC}=cubic,bbr", "--over", "links.1.loss", "--maximize", "goodput"], "error: --over: "),
        (["--choose", f"{CC}=cubic,bbr", "--over", "links.1.loss=0%..1%", "--maximize", "goodput"], "error: -n: "),
        (
            ["--choose", f"{CC}=cubic,bbr", "--maximize", "goodput", "--subject-to", "p99 RTT < 50"],
            "error: --subject-to: ",
        ),
        (["--choose", f"{CC}=cubic,bbr", "--objective", "improve goodput"], "error: --objective: "),
        (["--choose", f"{CC}=cubic,reno2", "--maximize", "goodput"], "error: --choose: "),
    ],
)
def test_scenario_form_mistakes_before_anything_runs(tmp_path, args, start):
    out = tmp_path / "rec"
    r = _run("recommend", "builtin:cubic-vs-bbr-lossy", *args, "-o", out)
    assert r.exit_code == 2, r.output
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith(start), r.output
    assert not out.exists()


@pytest.mark.engine
def test_scenario_form_with_a_random_range_and_resume(tmp_path, real_core):
    out = tmp_path / "rec"
    args = ["recommend", "builtin:cubic-vs-bbr-lossy", "--set", "duration=2s", "--choose", f"{CC}=cubic,bbr",
            "--over", f"{LOSS}=0.5%..2%", "-n", "2", "--seeds", "1", "--maximize", "goodput", "-o", out, "--json"]  # fmt: skip
    r = _run(*args)
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert len(data["choices"]) == 2 and data["conditions"] == [LOSS]
    losses = {c["condition"][LOSS] for c in data["choices"][0]["conditions"]}
    assert len(losses) == 2 and all(0.5 <= float(v.rstrip("%")) <= 2 for v in losses)
    rows = sorted((out / "sweep" / "rows").glob("*.parquet"))
    assert len(rows) == 4
    stamps = [p.stat().st_mtime_ns for p in rows]
    # the same command again: the sweep resumes (nothing rerun), the answer is the same
    r2 = _run(*args)
    assert r2.exit_code == 0, r2.output
    assert json.loads(r2.output)["recommendation"] == data["recommendation"]
    assert [p.stat().st_mtime_ns for p in sorted((out / "sweep" / "rows").glob("*.parquet"))] == stamps


def test_written_files_are_deterministic_and_a_failed_write_leaves_nothing(tmp_path, monkeypatch):
    from tcplab.recommend import recommend_table

    t = sweep_table({CC: ["cubic", "bbr"], LOSS: ["0.5%", "1%"]}, [1, 2], _lossy)
    rec = recommend_table(t, choose=[CC], over=[LOSS], maximize="goodput", subject_to=["p99 RTT < 175 ms"])
    a, b = rec.write(tmp_path / "a"), rec.write(tmp_path / "b")
    for f in ("recommend.json", "report.html", "plots/recommend.png"):
        assert (a / f).read_bytes() == (b / f).read_bytes(), f

    import tcplab.views.recommend as views

    def boom(_rec):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(views, "recommend_plots", boom)
    with pytest.raises(OSError):
        rec.write(tmp_path / "c")
    assert not (tmp_path / "c").exists()
    # an existing recommend directory keeps its previous files when a rewrite fails
    with pytest.raises(OSError):
        rec.write(a)
    assert json.loads((a / "recommend.json").read_text())["recommendation"] == {CC: "cubic"}
    assert sorted(p.name for p in a.iterdir()) == [".tcplab-run", "plots", "recommend.json", "report.html"]
