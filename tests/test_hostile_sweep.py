"""Hostile input to ``tcplab sweep`` and ``tcplab.load_sweep``: every mistake is one
``error:`` line naming the option or file, exit 2, no traceback, nothing half-written.

Most cases run through typer's CliRunner (in process, quick); the ones that need a real
process (signals, Dask's client, a run of the engine) use subprocess with a 1 s scenario.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tcplab.cli import app

SCENARIO = """\
name: t
duration: 1s
hosts: {server: {}, client: {}}
routers: [r1]
links:
  - {between: [server, r1], rate: 10Mbit, delay: 5ms}
  - {between: [r1, client], rate: 10Mbit, delay: 5ms}
flows:
  - {from: server, to: client}
"""


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    return path


def _cli(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def assert_one_line_error(result, *needles: str, code: int = 2) -> str:
    """exit ``code``, no exception escaped, exactly one non-empty ``error:`` line holding
    every needle."""
    out = result.output if hasattr(result, "output") else (result.stdout or "") + (result.stderr or "")
    exit_code = result.exit_code if hasattr(result, "exit_code") else result.returncode
    assert "Traceback" not in out, out
    if hasattr(result, "exception") and result.exception is not None:
        assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert exit_code == code, out
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), out
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


# -- options that are numbers -----------------------------------------------------------
@pytest.mark.parametrize("n", ["-1", "0", "2.5", "abc", "99999999999999999999"])
def test_bad_n_is_one_line_naming_n(tmp_path, scenario, n):
    out = tmp_path / "o"
    r = _cli("sweep", scenario, "--random", "links.0.loss=0%..1%", "-n", n, "-o", out, "-q")
    assert_one_line_error(r, "-n: ", n)
    assert not out.exists()


# -- --dask with an address that is not a scheduler ---------------------------------------
def _run_cli(args: list[object], timeout_s: float = 60, **env: str) -> subprocess.CompletedProcess:
    """``tcplab ARGS`` in a real process (Dask's client threads, signals, exit paths)."""
    return subprocess.run(
        [sys.executable, "-c", "from tcplab.cli import main; main()", *[str(a) for a in args]],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env={**os.environ, **env},
    )


class _Server:
    """A TCP server on 127.0.0.1 that is not Dask: it accepts and then stays silent
    (``reply=None``, as an HTTP server waiting for a request) or writes ``reply``."""

    def __init__(self, reply: bytes | None):
        import socket
        import threading

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.reply = reply
        self.conns: list = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            if self.reply is not None:
                conn.sendall(self.reply)

    def close(self) -> None:
        for c in self.conns:
            c.close()
        self.sock.close()


@pytest.mark.parametrize(
    "address, needle",
    [
        ("", "an empty address"),
        ("not a url::", "is not a scheduler address"),
        ("http://127.0.0.1:8786", "unknown scheme 'http'"),
        ("tcp://127.0.0.1", "missing port"),
        ("tcp://127.0.0.1:99999", "a port from 1 to 65535"),
        ("inproc://x", "unknown scheme 'inproc'"),
    ],
)
def test_malformed_dask_address_is_one_line_at_once(tmp_path, scenario, address, needle):
    pytest.importorskip("distributed")
    out = tmp_path / "o"
    r = _run_cli(["sweep", scenario, "--seeds", "1", "--dask", address, "-o", out, "-q"], timeout_s=30)
    assert_one_line_error(r, "--dask: ", needle)
    assert not out.exists()


@pytest.mark.parametrize("reply", [None, b"HTTP/1.0 400 Bad Request\r\n\r\n" + b"\xff" * 64], ids=["silent", "garbage"])
def test_a_port_that_is_not_a_scheduler_fails_in_bounded_time(tmp_path, scenario, reply):
    """Before: distributed's handshake read waited forever on a silent server (and tried to
    allocate exabytes on garbage), then Client.__del__ printed a TimeoutError traceback."""
    pytest.importorskip("distributed")
    server = _Server(reply)
    out = tmp_path / "o"
    try:
        r = _run_cli(
            ["sweep", scenario, "--seeds", "1", "--dask", f"tcp://127.0.0.1:{server.port}", "-o", out, "-q"],
            timeout_s=40,
            DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT="2s",
        )
    finally:
        server.close()
    assert_one_line_error(r, "--dask: ", f"127.0.0.1:{server.port}")
    assert not out.exists()


# -- damaged sweep directories: resume and load_sweep --------------------------------------
@pytest.fixture(scope="module")
def done_sweep(tmp_path_factory) -> Path:
    """A complete 2-run sweep of the 1 s scenario (the real engine, made once)."""
    pytest.importorskip("tcplab._core")
    base = tmp_path_factory.mktemp("sweep")
    (base / "s.yaml").write_text(SCENARIO, encoding="utf-8")
    r = _cli(
        "sweep",
        base / "s.yaml",
        "--grid",
        "flows.0.cc=cubic,bbr",
        "--seeds",
        "1",
        "-o",
        base / "sw",
        "-q",
        "--no-plots",
    )
    assert r.exit_code == 0, r.output
    return base / "sw"


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def _resume(d: Path, done_sweep: Path):
    """The command that made ``done_sweep`` (its scenario path is part of the plan), into ``d``."""
    return _cli(
        "sweep",
        done_sweep.parent / "s.yaml",
        "--grid",
        "flows.0.cc=cubic,bbr",
        "--seeds",
        "1",
        "-o",
        d,
        "-q",
        "--no-plots",
    )


def test_resume_reruns_a_truncated_rows_file(tmp_path, done_sweep):
    """Before: pyarrow's ArrowInvalid traceback (exit 1) when the table was built."""
    import tcplab

    d = _copy(done_sweep, tmp_path / "sw")
    victim = sorted((d / "rows").glob("*.parquet"))[0]
    victim.write_bytes(victim.read_bytes()[:200])
    r = _resume(d, done_sweep)
    assert r.exit_code == 0, r.output
    assert "Traceback" not in r.output
    assert f"warning: {victim} is damaged" in r.output
    import pandas as pd

    pd.testing.assert_frame_equal(tcplab.load_sweep(d).table, tcplab.load_sweep(done_sweep).table)


@pytest.mark.parametrize(
    "content, needle",
    [
        ("[1]", "a JSON list"),
        ('{"scenario": 3}', "'scenario' is not an object"),
        ('{"status": ', "cannot read"),
    ],
)
def test_resume_and_load_with_a_damaged_sweep_json(tmp_path, done_sweep, content, needle):
    """Before: AttributeError: 'list' object has no attribute 'get' (resume and load_sweep)."""
    import tcplab
    from tcplab.errors import ScenarioError

    d = _copy(done_sweep, tmp_path / "sw")
    (d / "sweep.json").write_text(content, encoding="utf-8")
    assert_one_line_error(_resume(d, done_sweep), f"error: {d}: ", "sweep.json", needle)
    with pytest.raises(ScenarioError, match="sweep.json") as err:
        tcplab.load_sweep(d)
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_load_sweep_with_a_truncated_or_missing_table(tmp_path, done_sweep):
    """Before: ArrowInvalid traceback (truncated); "the sweep is complete (no sweep.parquet)"
    (missing)."""
    import tcplab
    from tcplab.errors import ScenarioError

    d = _copy(done_sweep, tmp_path / "sw")
    table = d / "sweep.parquet"
    table.write_bytes(table.read_bytes()[:100])
    with pytest.raises(ScenarioError, match="sweep.parquet cannot be read") as err:
        tcplab.load_sweep(d)
    assert "\n" not in str(err.value)
    table.unlink()
    with pytest.raises(ScenarioError, match="sweep.parquet is missing"):
        tcplab.load_sweep(d)
    r = _cli("recommend", d, "--choose", "flows.0.cc", "--maximize", "goodput", "-o", tmp_path / "rec")
    assert_one_line_error(r, "sweep.parquet is missing")
    assert _resume(d, done_sweep).exit_code == 0  # the same command rebuilds the table
    assert len(tcplab.load_sweep(d).table) == 2


# -- errors name the option the user typed --------------------------------------------------
def test_an_unknown_grid_path_names_grid_not_set(tmp_path, scenario):
    """Before: "--set: flows.0.ccx: unknown key" (the first point's validation, used for the
    base seed, was not relabelled)."""
    out = tmp_path / "o"
    r = _cli("sweep", scenario, "--grid", "flows.0.ccx=cubic,bbr", "-o", out, "-q")
    assert_one_line_error(r, "error: --grid: flows.0.ccx: unknown key")
    assert not out.exists()


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--choose", "flows.0.cc=cubic,foo", "--over", "links.0.loss=0%,1%"], "error: --choose: flows.0.cc: "),
        (["--choose", "flows.0.ccc=cubic,bbr", "--over", "links.0.loss=0%,1%"], "error: --choose: flows.0.ccc: "),
        (["--choose", "flows.0.cc=cubic,bbr", "--over", "links.0.loss=0%,x"], "error: --over: links.0.loss: "),
        (
            ["--choose", "flows.0.cc=cubic,bbr", "--over", "links.0.loss=1%..0%", "-n", "2"],
            "error: --over: links.0.loss",
        ),
    ],
)
def test_recommend_scenario_form_errors_name_choose_and_over(tmp_path, scenario, args, expected):
    """Before: the sweep's own option names (--grid, --random, --set), which the user never typed."""
    out = tmp_path / "rec"
    r = _cli("recommend", scenario, *args, "--maximize", "goodput", "-o", out, "-q")
    assert_one_line_error(r, expected)
    assert not out.exists()


# -- sizes ------------------------------------------------------------------------------------
@pytest.fixture
def planning(monkeypatch) -> list[str]:
    """What planning a sweep did: "drawn" (random points drawn), "point" (a point combined),
    "validated" (a point x seed validated), one entry per call."""
    from tcplab import loader
    from tcplab.sweep import space

    done: list[str] = []

    def spy(what: str, real):
        def call(*args, **kwargs):
            done.append(what)
            return real(*args, **kwargs)

        return call

    monkeypatch.setattr(space, "_draw", spy("drawn", space._draw))
    monkeypatch.setattr(space.Point, "__init__", spy("point", space.Point.__init__))
    monkeypatch.setattr(loader, "validate_with_overrides", spy("validated", loader.validate_with_overrides))
    return done


@pytest.mark.parametrize(
    "args, option",
    [
        (
            [
                "--grid",
                "links.0.delay=" + ",".join(f"{i}ms" for i in range(1000)),
                "--grid",
                "links.1.delay=" + ",".join(f"{i}ms" for i in range(1000)),
            ],
            "--grid",
        ),  # fmt: skip
        (["--random", "links.0.loss=0%..1%", "-n", "1000000"], "-n"),
        (["--grid", "flows.0.cc=cubic,bbr", "--seeds", "60000"], "--seeds"),
    ],
)
def test_a_sweep_of_millions_of_runs_is_refused_at_once(tmp_path, scenario, args, option, planning):
    """Before: 10^6 points were all validated first (over 2 minutes and 2.4 GB, then killed).
    Now refused from the counts alone: no point is drawn, combined or validated."""
    from tcplab.sweep import MAX_RUNS

    out = tmp_path / "o"
    r = _cli("sweep", scenario, *args, "-o", out, "-q")
    assert_one_line_error(r, f"error: {option}: ", f"at most {MAX_RUNS} runs")
    assert planning == []
    assert not out.exists()


def test_planning_a_small_sweep_draws_combines_and_validates(scenario, planning):
    """The spies of the test above see the planning they must not see there."""
    from tcplab.sweep import plan_sweep

    plan = plan_sweep(scenario, ["flows.0.cc=cubic,bbr"], ["links.0.loss=0%..1%"], 2, seeds=1)
    assert len(plan.entries) == 4
    assert planning.count("drawn") == 1 and planning.count("point") == 4 and planning.count("validated") >= 4


# -- odd ranges, names and sources ---------------------------------------------------------------
@pytest.mark.parametrize("value", ["0%...1%", "0%..1%..2%"])
def test_a_range_with_more_than_one_dotdot_is_refused(tmp_path, scenario, value):
    """Before: 0%...1% was read as 0%..0.1% (split at the first ..) and ran."""
    out = tmp_path / "o"
    r = _cli("sweep", scenario, "--random", f"links.0.loss={value}", "-n", "2", "-o", out, "-q")
    assert_one_line_error(r, "error: --random: links.0.loss: ", "ambiguous")
    assert not out.exists()


@pytest.mark.parametrize("command", ["sweep", "run"])
def test_an_empty_scenario_name_is_not_the_current_directory(tmp_path, command):
    """Before: "error: : is a directory" (Path("") is the current directory)."""
    r = _cli(command, "", "-o", tmp_path / "o", "-q")
    assert_one_line_error(r, "error: SCENARIO: an empty name")


def test_recommend_on_a_directory_that_is_not_a_sweep(tmp_path, done_sweep):
    """Before: read as a scenario: "--choose: flows.0.cc: no values" (misleading)."""
    import shutil

    plain = tmp_path / "plain"
    plain.mkdir()
    r = _cli("recommend", plain, "--choose", "flows.0.cc", "--maximize", "goodput", "-o", tmp_path / "r")
    assert_one_line_error(r, f"error: {plain}: is a directory but not a sweep directory")
    rec = tmp_path / "rec"
    shutil.copytree(done_sweep, rec / "sweep")
    r = _cli("recommend", rec, "--choose", "flows.0.cc", "--maximize", "goodput", "-o", tmp_path / "r")
    assert_one_line_error(r, f"the sweep of a recommendation is {rec / 'sweep'}")
    assert not (tmp_path / "r").exists()


# -- the Python API ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, option",
    [
        ({"grid": 42}, "--grid"),
        ({"seed": "5"}, "--seed"),
        ({"seed": 1.5}, "--seed"),
        ({"random": ["links.0.loss=0%..1%"], "n": "2"}, "-n"),
        ({"random": ["links.0.loss=0%..1%"], "n": 2.5}, "-n"),
        ({"random": ["links.0.loss=0%..1%"], "n": 2, "sample_seed": -1}, "--sample-seed"),
        ({"jobs": 0}, "--jobs"),
        ({"jobs": -3}, "--jobs"),
        ({"jobs": "2"}, "--jobs"),
        ({"jobs": 2, "dask": "tcp://127.0.0.1:1"}, "--dask"),
    ],
)
def test_api_bad_arguments_are_scenario_errors_as_on_the_cli(tmp_path, scenario, kwargs, option):
    """Before: TypeError tracebacks (seed/n of the wrong type, grid=42) or silently accepted
    (jobs=0/-3/"2", sample_seed=-1, jobs with dask: dask was used)."""
    import tcplab
    from tcplab.errors import ScenarioError

    out = tmp_path / "o"
    with pytest.raises(ScenarioError) as err:
        tcplab.sweep(scenario, seeds=1, out=out, **kwargs)
    assert str(err.value).startswith(f"{option}: ") and "\n" not in str(err.value)
    assert not out.exists()


@pytest.mark.parametrize(
    "address, needle",
    [("tcp://127.0.0.1:1", "nothing listens at tcp://127.0.0.1:1"), ("tcp://nosuchhost.invalid:8786", "unknown host")],
)
def test_a_closed_port_or_unknown_host_fails_at_once(tmp_path, scenario, address, needle):
    """Before: distributed retried until its 20 s timeout (a closed port) and printed
    Client.__del__'s TimeoutError traceback after the error line."""
    pytest.importorskip("distributed")
    # Dask's connect timeout made far longer than the process may take (60 s, a guard against
    # a hang): an answer before it, naming the cause, is not a timeout waited out
    r = _run_cli(
        ["sweep", scenario, "--seeds", "1", "--dask", address, "-o", tmp_path / "o", "-q"],
        timeout_s=60,
        DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT="3600s",
    )
    assert_one_line_error(r, "--dask: ", needle)


def test_recommend_on_a_missing_source_says_so_first(tmp_path):
    """Before: "--choose: flows.0.cc: no values" (a missing path was taken for a scenario)."""
    import tcplab
    from tcplab.errors import ScenarioError

    missing = tmp_path / "nope"
    r = _cli("recommend", missing, "--choose", "flows.0.cc", "--maximize", "goodput", "-o", tmp_path / "r")
    assert_one_line_error(r, f"error: {missing}: no such sweep directory, scenario file or built-in scenario")
    with pytest.raises(ScenarioError, match="no such sweep directory"):
        tcplab.recommend(str(missing), choose=["flows.0.cc"], maximize="goodput")
    assert not (tmp_path / "r").exists()


def test_recommend_a_parameter_chosen_twice(tmp_path, done_sweep):
    """Before: accepted silently (the same parameter twice in the ranking)."""
    r = _cli("recommend", done_sweep, "--choose", "flows.0.cc", "--choose", "flows.0.cc", "--maximize", "goodput",
             "-o", tmp_path / "r")  # fmt: skip
    assert_one_line_error(r, 'error: --choose: "flows.0.cc" is given twice')
    assert not (tmp_path / "r").exists()


def test_no_feasible_sentence_reads_with_every_reason(tmp_path, done_sweep):
    """Before: "Closest: flows.0.cc=cubic, which no value of ..." (a noun phrase after
    "which"), and numpy's "Mean of empty slice" from the plot of a metric with no value."""
    r = _cli("recommend", done_sweep, "--choose", "flows.0.cc", "--maximize", "TCPTimeouts / TCPTimeouts",
             "-o", tmp_path / "r")  # fmt: skip
    assert r.exit_code == 4, r.output
    assert ", which no value" not in r.output and "Closest: flows.0.cc=" in r.output


def test_recommend_with_thousands_of_constraints_is_refused(tmp_path, done_sweep):
    """Before: 2000 'and' constraints ran over two minutes (and printed thousands of pandas
    PerformanceWarning lines)."""
    from tcplab.recommend.objective import MAX_CONSTRAINTS

    sentence = "maximize goodput subject to " + " and ".join(["p99 RTT < 500 ms"] * 2000)
    r = _cli("recommend", done_sweep, "--choose", "flows.0.cc", "--objective", sentence, "-o", tmp_path / "r")
    assert_one_line_error(r, "error: --objective: 2000 constraints", f"at most {MAX_CONSTRAINTS}")
    many = [a for _ in range(MAX_CONSTRAINTS + 1) for a in ("--subject-to", "retransmissions <= 100000")]
    r = _cli("recommend", done_sweep, "--choose", "flows.0.cc", "--maximize", "goodput", *many, "-o", tmp_path / "r")
    assert_one_line_error(r, f"error: --subject-to: {MAX_CONSTRAINTS + 1} constraints")
    assert not (tmp_path / "r").exists()


def test_recommend_scenario_form_unknown_metric_says_the_sweep_is_kept(tmp_path, scenario):
    """An nstat or app metric exists only once the sweep has run, so an unknown one is found
    after it; before, the error did not say the runs are kept (and reused by the fix)."""
    out = tmp_path / "rec"
    args = ["recommend", scenario, "--choose", "flows.0.cc=cubic,bbr", "--seeds", "1", "-o", out, "-q"]
    r = _cli(*args, "--maximize", "TCPTimeoutz")
    assert_one_line_error(r, '"TCPTimeoutz" is not a metric', f"the sweep is kept in {out / 'sweep'}")
    assert (out / "sweep" / "sweep.parquet").is_file()
    r = _cli(*args, "--maximize", "goodput")
    assert r.exit_code == 0, r.output


def test_resume_reruns_a_rows_file_that_is_another_table(tmp_path, done_sweep):
    """Before: ArrowInvalid "Could not convert nan ... to int64" traceback when the table
    was built from a valid Parquet file that is not a run's rows."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    import tcplab

    d = _copy(done_sweep, tmp_path / "sw")
    victim = sorted((d / "rows").glob("*.parquet"))[0]
    pq.write_table(pa.table({"x": [1, 2]}), victim)
    r = _resume(d, done_sweep)
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output
    assert "not a run's rows: no column flow_index" in r.output
    pd.testing.assert_frame_equal(tcplab.load_sweep(d).table, tcplab.load_sweep(done_sweep).table)
