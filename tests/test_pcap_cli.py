"""``tcplab run --pcap FLOW [--pcap-at ...]`` and ``tcplab export pcap RUN --flow FLOW``:
through the CLI (typer's runner) and the API (tcplab.exports.capture), with the real engine.

What is checked: the run directory gets FLOW.pcap (and ``--force`` may replace such a
directory); exporting it again from the directory gives the same bytes (the rerun is the
same run); mistakes are one ``error:`` line with exit 2 and nothing written: an unknown flow
or side, ``--pcap-at`` alone, a directory that is not a simulation run, another engine
version; a rerun that does not reproduce the directory is exit 1, nothing written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import compiled_engine
from tcplab.cli import app

SCENARIO = {
    "name": "pcap-cli",
    "seed": 3,
    "duration": "2s",
    "hosts": {"server": {}, "client": {}},
    "links": [{"between": ["server", "client"], "rate": "20Mbit", "delay": "5ms", "loss": "0.5%"}],
    "flows": [
        {"name": "down", "from": "server", "to": "client"},
        {"name": "up", "from": "client", "to": "server"},
    ],
}


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def engine():
    return compiled_engine()


@pytest.fixture(scope="module")
def run_dir(engine, tmp_path_factory) -> Path:
    """A run directory made by `tcplab run --pcap up --pcap-at receiver`."""
    import yaml

    base = tmp_path_factory.mktemp("pcapcli")
    scenario = base / "s.yaml"
    scenario.write_text(yaml.safe_dump(SCENARIO), encoding="utf-8")
    out = base / "run"
    r = invoke("run", scenario, "-o", out, "--no-plots", "--pcap", "up", "--pcap-at", "receiver")
    assert r.exit_code == 0, r.output
    assert f"wrote {out / 'up.pcap'} (" in r.output
    return out


def test_run_writes_the_flows_pcap(run_dir):
    data = (run_dir / "up.pcap").read_bytes()
    assert data[:4] == bytes.fromhex("d4c3b2a1")  # classic pcap, little-endian, microseconds
    assert not (run_dir / "down.pcap").exists()


def test_export_reproduces_the_runs_pcap(run_dir, tmp_path):
    out = tmp_path / "x.pcap"
    r = invoke("export", "pcap", run_dir, "--flow", "up", "--at", "receiver", "-o", out)
    assert r.exit_code == 0, r.output
    assert out.read_bytes() == (run_dir / "up.pcap").read_bytes()
    # The sender's view differs (other times, the packets lost on the way are there).
    r = invoke("export", "pcap", run_dir, "--flow", "1", "-o", tmp_path)
    assert r.exit_code == 0, r.output
    assert (tmp_path / "up.pcap").read_bytes() != out.read_bytes()


def test_export_api_and_default_path(run_dir, engine):
    from tcplab.exports.capture import export_pcap

    path, capture = export_pcap(run_dir, "down", core=engine)
    assert path == run_dir / "down.pcap" and capture.at == "sender" and capture.flow == 0
    assert len(capture.packets) > 100 and capture.truncated == 0
    path.unlink()


def test_export_max_packets_warns(run_dir, tmp_path):
    r = invoke("export", "pcap", run_dir, "--flow", "down", "--max-packets", "50", "-o", tmp_path / "d.pcap")
    assert r.exit_code == 0, r.output
    assert "wrote" in r.output and "(50 packets)" in r.output
    assert "kept the first 50 packets;" in r.output


def test_a_pcap_in_a_run_directory_does_not_block_force(run_dir, tmp_path, engine):
    from tcplab.results import check_output_dir

    check_output_dir(run_dir, overwrite=True)  # FLOW.pcap is one of the files tcplab writes


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--pcap", "sideways"],
            "error: --pcap: 'sideways' is not a flow of this run; expected a flow name or index: down, up",
        ),
        (
            ["--pcap", "up", "--pcap-at", "middle"],
            "error: --pcap-at: 'middle' is not a capture side; expected sender or receiver",
        ),
        (["--pcap-at", "receiver"], "error: --pcap-at: 'receiver' given without --pcap; expected --pcap FLOW with it"),
    ],
)
def test_run_pcap_mistakes_are_one_line(engine, tmp_path, args, message):
    import yaml

    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(SCENARIO), encoding="utf-8")
    r = invoke("run", scenario, "-o", tmp_path / "out", *args)
    assert r.exit_code == 2
    assert r.output.strip() == message
    assert not (tmp_path / "out").exists()


def _copy(run_dir: Path, tmp_path: Path) -> Path:
    import shutil

    d = tmp_path / "copy"
    shutil.copytree(run_dir, d)
    (d / "up.pcap").unlink()
    return d


def _edit_summary(d: Path, edit) -> None:
    s = json.loads((d / "summary.json").read_text())
    edit(s)
    (d / "summary.json").write_text(json.dumps(s))


def test_export_refuses_another_engine_version(run_dir, tmp_path):
    d = _copy(run_dir, tmp_path)
    _edit_summary(d, lambda s: s.update(engine_version="0.0.1"))
    r = invoke("export", "pcap", d, "--flow", "up")
    assert r.exit_code == 2
    assert r.output.startswith(f"error: {d}: made by engine 0.0.1, this is engine ")
    assert len(r.output.strip().splitlines()) == 1
    assert not (d / "up.pcap").exists()


def test_export_refuses_a_rerun_that_differs(run_dir, tmp_path):
    d = _copy(run_dir, tmp_path)
    _edit_summary(d, lambda s: s["flows"][1].update(bytes_received=s["flows"][1]["bytes_received"] + 1))
    r = invoke("export", "pcap", d, "--flow", "up")
    assert r.exit_code == 1
    assert f"the rerun of {d} differs from it: flow up bytes_received" in r.output
    assert not (d / "up.pcap").exists()


def test_export_refuses_what_is_not_a_simulation_run(run_dir, tmp_path):
    r = invoke("export", "pcap", tmp_path, "--flow", "up")
    assert (r.exit_code, r.output.strip()) == (
        2,
        f"error: {tmp_path}: not a tcplab run directory (no scenario.resolved.json); expected a run directory of tcplab run",
    )
    d = _copy(run_dir, tmp_path)
    _edit_summary(d, lambda s: s.update(kind="kernel"))
    r = invoke("export", "pcap", d, "--flow", "up")
    assert r.exit_code == 2 and "a kernel run: its packets were not simulated" in r.output
    r = invoke("export", "pcap", run_dir, "--flow", "sideways")
    assert r.exit_code == 2
    assert (
        r.output.strip()
        == "error: --flow: 'sideways' is not a flow of this run; expected a flow name or index: down, up"
    )
    r = invoke("export", "pcap", run_dir, "--flow", "up", "--at", "sideways")
    assert r.exit_code == 2
    # the export's own option, not run's --pcap-at
    assert r.output.strip() == "error: --at: 'sideways' is not a capture side; expected sender or receiver"
    r = invoke("export", "pcap", run_dir, "--flow", "up", "-o", tmp_path / "no" / "such" / "x.pcap")
    assert r.exit_code == 2 and "is not a directory" in r.output


def test_export_max_packets_beyond_the_memory_limit_is_a_usage_error(run_dir, tmp_path):
    r = invoke("export", "pcap", run_dir, "--flow", "up", "--max-packets", "100000000", "-o", tmp_path / "x.pcap")
    assert r.exit_code == 2
    assert r.output.startswith("error: --max-packets: 100000000 packets may hold ")
    assert "expected at most" in r.output and len(r.output.strip().splitlines()) == 1
    assert not (tmp_path / "x.pcap").exists()
