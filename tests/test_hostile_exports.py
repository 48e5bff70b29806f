"""Hostile input to ``tcplab export flent|iperf3|pcap`` and ``tcplab ss``: one ``error:``
line naming the option, exit 2, no traceback, no stray temporary file; flows by name or
index everywhere (as ``export pcap --flow`` and ``run --pcap`` take them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tcplab.cli import app
from test_hostile_sweep import SCENARIO, assert_one_line_error


def _cli(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """One 1 s run of the real engine (one flow, server-client-0)."""
    pytest.importorskip("tcplab._core")
    base = tmp_path_factory.mktemp("run")
    (base / "s.yaml").write_text(SCENARIO, encoding="utf-8")
    r = _cli("run", base / "s.yaml", "-o", base / "run", "-q")
    assert r.exit_code == 0, r.output
    return base / "run"


def _no_temporaries(directory: Path) -> None:
    assert not [p for p in directory.rglob(".*.tmp")], list(directory.rglob(".*.tmp"))


@pytest.mark.parametrize("command", [["flent"], ["iperf3", "--flow", "0"]])
def test_output_into_an_existing_directory_writes_the_file_in_it(tmp_path, run_dir, command):
    """Before (flent): "error: /x/.adir.tmp: Is a directory", exit 1 (os.replace onto a directory)."""
    target = tmp_path / "out"
    target.mkdir()
    r = _cli("export", command[0], run_dir, *command[1:], "-o", target)
    assert r.exit_code == 0, r.output
    name = "run.flent.gz" if command[0] == "flent" else "iperf3-server-client-0.json"
    assert (target / name).is_file() and (target / name).stat().st_size > 0
    _no_temporaries(tmp_path)


@pytest.mark.parametrize("command", [["flent"], ["iperf3"], ["iperf3", "--flow", "0"]])
def test_output_under_a_file_is_one_line_naming_output(tmp_path, run_dir, command):
    """Before: "error: [Errno 17] File exists" or "... Not a directory" (exit 1)."""
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    r = _cli("export", command[0], run_dir, *command[1:], "-o", blocker / "sub" / "x.out")
    assert_one_line_error(r, "error: --output: ", f"'{blocker}' is not a directory")
    assert blocker.read_text() == "x"
    _no_temporaries(tmp_path)


def test_flows_by_index_in_ss_and_iperf3_as_in_pcap(tmp_path, run_dir):
    """Before: "no flow named '0'" from ss and export iperf3 while export pcap took 0."""
    by_name = _cli("ss", run_dir, "server-client-0", "--at", "0.5s")
    by_index = _cli("ss", run_dir, "0", "--at", "0.5s")
    assert by_index.exit_code == 0 and by_index.output == by_name.output
    r = _cli("export", "iperf3", run_dir, "--flow", "0", "-o", "-")
    assert r.exit_code == 0 and r.output == (run_dir / "iperf3-server-client-0.json").read_text()
    for args in (["ss", run_dir, "1", "--at", "0.5s"], ["export", "iperf3", run_dir, "--flow", "1"]):
        assert_one_line_error(_cli(*args), "no flow named '1'", "a flow name or index: server-client-0")


@pytest.mark.parametrize(
    "name, content, needle",
    [
        ("summary.json", "[]", "summary.json is a JSON list, not an object"),
        ("scenario.resolved.json", "[]", "scenario.resolved.json is a JSON list, not an object"),
    ],
)
def test_export_pcap_of_a_run_with_damaged_json(tmp_path, run_dir, name, content, needle):
    """Before: AttributeError: 'list' object has no attribute 'get' (exit 1)."""
    import shutil

    d = tmp_path / "run"
    shutil.copytree(run_dir, d)
    (d / name).write_text(content, encoding="utf-8")
    r = _cli("export", "pcap", d, "--flow", "0", "-o", tmp_path / "x.pcap")
    assert_one_line_error(r, f"error: {d}: {needle}")
    assert not (tmp_path / "x.pcap").exists()


def test_export_pcap_of_a_configuration_the_engine_refuses(tmp_path, run_dir):
    """Before: "error: engine: engine config: invalid type ..." with exit 1, as if the engine
    had failed; it is a damaged scenario.resolved.json (exit 2, naming it)."""
    import json
    import shutil

    d = tmp_path / "run"
    shutil.copytree(run_dir, d)
    config = json.loads((d / "scenario.resolved.json").read_text())
    config["duration_ns"] = "x"
    (d / "scenario.resolved.json").write_text(json.dumps(config))
    r = _cli("export", "pcap", d, "--flow", "0", "-o", tmp_path / "x.pcap")
    assert_one_line_error(r, f"error: {d}: scenario.resolved.json is not a configuration the engine takes")
    assert not (tmp_path / "x.pcap").exists()


@pytest.mark.parametrize("interval", ["1ns", "1us", "50ms", "61s"])
def test_iperf3_interval_outside_iperf3s_range(tmp_path, run_dir, interval):
    """Before: -i 1ns over a 1 s run built 10^9 intervals and the process was killed for
    memory (exit 137). iperf3 takes 0.1 s to 60 s (src/iperf.h MIN_INTERVAL/MAX_INTERVAL)."""
    import tcplab.exports.iperf3 as iperf3
    from tcplab.errors import ScenarioError
    from tcplab.exports.rundir import RunData

    r = _cli("export", "iperf3", run_dir, "--flow", "0", "-i", interval, "-o", tmp_path / "x.json")
    assert_one_line_error(r, "error: --interval: ", f"'{interval}' is outside iperf3 -i's range")
    assert not (tmp_path / "x.json").exists()
    with pytest.raises(ScenarioError, match="--interval"):
        iperf3.iperf3_json(RunData.load(run_dir), "server-client-0", interval_s=1e-9)


def test_iperf3_interval_at_iperf3s_bounds_is_accepted(tmp_path, run_dir):
    import json

    for interval, n_intervals in (("100ms", 10), ("60s", 1)):  # the run lasts 1 s
        r = _cli("export", "iperf3", run_dir, "--flow", "0", "-i", interval, "-o", "-")
        assert r.exit_code == 0, r.output
        assert len(json.loads(r.output)["intervals"]) == n_intervals


@pytest.mark.parametrize(
    ("key", "value"),
    [("duration_ns", 1e300), ("duration_ns", -5), ("duration_ns", 1.5), ("duration_ns", True),
     ("sample_interval_ns", 0), ("sample_interval_ns", 10**18)],
)  # fmt: skip
@pytest.mark.parametrize("command", [["export", "flent"], ["export", "iperf3", "--flow", "0"], ["ss"]])
def test_exports_refuse_times_the_engine_never_wrote(tmp_path, run_dir, key, value, command):
    """A hand-edited scenario.resolved.json whose times fit JSON but no run (before: flent and
    iperf3 files written with a nonsense time axis, or a traceback deep inside the export)."""
    import json
    import shutil

    d = tmp_path / "run"
    shutil.copytree(run_dir, d)
    config = json.loads((d / "scenario.resolved.json").read_text(encoding="utf-8"))
    config[key] = value
    (d / "scenario.resolved.json").write_text(json.dumps(config), encoding="utf-8")
    out = [] if command == ["ss"] else ["-o", tmp_path / "out.x"]
    r = _cli(*command[:2], d, *command[2:], *out)
    assert_one_line_error(r, f"error: {d}: scenario.resolved.json: {key}: ")
    assert not (tmp_path / "out.x").exists()
