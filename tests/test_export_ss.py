"""`tcplab ss RUN --at T [FLOW]` (tcplab.exports.ss_at) and the run-directory loader (tcplab.exports.rundir)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from export_runs import TWO_BULK, run_dir
from tcplab.cli import app
from tcplab.errors import ScenarioError
from tcplab.exports.rundir import RunData
from tcplab.exports.ss_at import _only_socket, ss_at, ss_at_text
from tcplab.results import check_output_dir


@pytest.fixture(scope="module")
def two_bulk(tmp_path_factory):
    return run_dir(tmp_path_factory, TWO_BULK, "two-bulk")


def _expected(result, at_ns, flow=None):
    """Result.ss_texts(at_ns), in the scenario's node order, `# NODE` before each."""
    from tcplab.results.ss import ss_texts

    texts = ss_texts(result.config, result.flows, result.timeseries, at_ns, flow)
    nodes = [n["name"] for n in result.config["nodes"]]
    return "".join(f"# {n}\n{texts[n]}" for n in nodes if n in texts)


def test_ss_at_time_is_result_ss_texts(two_bulk):
    result, out = two_bulk
    runner = CliRunner()
    for at, at_ns in (("2.35s", 2_350_000_000), ("500ms", 500_000_000)):
        done = runner.invoke(app, ["ss", str(out), "--at", at])
        assert done.exit_code == 0, done.output
        expect = _expected(result, at_ns)
        assert done.output == expect
        # the time series changed between the two moments: the texts are of their moment
        texts = result.ss_texts(at_ns)
        assert all(texts[n] in done.output for n in texts)
    assert (
        runner.invoke(app, ["ss", str(out), "--at", "2.35s"]).output
        != runner.invoke(app, ["ss", str(out), "--at", "500ms"]).output
    )


def test_ss_flow_prints_only_its_two_sockets(two_bulk):
    result, out = two_bulk
    done = CliRunner().invoke(app, ["ss", str(out), "b", "--at", "1s"])
    assert done.exit_code == 0, done.output
    assert done.output == _expected(result, 1_000_000_000, "b")
    assert done.output.count("ESTAB") == 2  # the sender's socket and the receiver's
    assert "bbr" in done.output and "cubic" not in done.output


def test_ss_without_at_is_the_end_of_run_files(two_bulk):
    _, out = two_bulk
    done = CliRunner().invoke(app, ["ss", str(out)])
    assert done.exit_code == 0
    for node in ("server", "client"):
        assert (out / f"ss-tin-{node}.txt").read_text() in done.output


def test_ss_errors(two_bulk, tmp_path):
    _, out = two_bulk
    runner = CliRunner()
    done = runner.invoke(app, ["ss", str(out), "--at", "5s"])
    assert done.exit_code == 2
    assert done.output == (
        'error: --at: "5s" is after the end of the run; expected a time from 0s to the run\'s duration, 4s '
        "(such as 12.3s or 500ms)\n"
    )
    done = runner.invoke(app, ["ss", str(out), "--at", "2"])
    assert done.exit_code == 2 and done.output.startswith('error: --at: "2" has no unit;') and "4s" in done.output
    done = runner.invoke(app, ["ss", str(out), "zz", "--at", "1s"])
    assert done.exit_code == 2
    assert done.output == "error: FLOW: no flow named 'zz' in this run; expected a flow name or index: a, b\n"
    done = runner.invoke(app, ["ss", str(tmp_path)])
    assert done.exit_code == 2 and "has no summary.json" in done.output and done.output.count("\n") == 1


def test_loader_refuses_what_is_not_a_run(two_bulk, tmp_path):
    _, out = two_bulk
    (tmp_path / "file").write_text("x")
    with pytest.raises(ScenarioError, match="is not a directory"):
        RunData.load(tmp_path / "file")
    cmp = tmp_path / "cmp"
    cmp.mkdir()
    (cmp / ".tcplab-run").write_text(json.dumps({"kind": "compare"}))
    with pytest.raises(ScenarioError, match="is a tcplab compare directory, not one run"):
        RunData.load(cmp)
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("summary.json", "scenario.resolved.json", "flows.parquet"):
        (broken / name).write_bytes((out / name).read_bytes())
    with pytest.raises(ScenarioError, match="has no timeseries.parquet"):
        RunData.load(broken)
    (broken / "timeseries.parquet").write_bytes(b"not parquet")
    with pytest.raises(ScenarioError, match="timeseries.parquet cannot be read"):
        RunData.load(broken)


def test_loader_reads_what_the_result_holds(two_bulk):
    result, out = two_bulk
    run = RunData.load(out)
    assert (
        run.kind == "simulation"
        and run.config == result.config
        and run.summary == json.loads((out / "summary.json").read_text())
    )
    assert list(run.flows["name"]) == ["a", "b"]
    assert len(run.timeseries) == len(result.timeseries)
    assert run.flow_series(1)["flow_name"].unique().tolist() == ["b"]


def test_run_directory_with_exports_is_still_tcplabs(two_bulk):
    """--force may replace it: the new files are tcplab's (RUN_ENTRIES / RUN_ENTRY_PATTERN)."""
    _, out = two_bulk
    assert {p.name for p in out.glob("iperf3-*.json")} == {"iperf3-a.json", "iperf3-b.json"}
    check_output_dir(out, overwrite=True)  # no "which tcplab did not write"


#: One ss -tin sample of the client (node 1 of TWO_BULK: 10.0.0.2; flows a, b from ports 32768, 32769).
KERNEL_SAMPLE = """State Recv-Q Send-Q Local Address:Port Peer Address:Port Process
ESTAB 0      0         10.0.0.2:32768    10.0.0.1:5201
\t cubic rtt:20.1/0.2 mss:1448 cwnd:10
ESTAB 0      0         10.0.0.2:32769    10.0.0.1:5201
\t bbr rtt:21.1/0.2 mss:1448 cwnd:20
"""


def test_kernel_run_uses_its_ss_samples(two_bulk):
    """A kernel run prints the agent's last ss sample at or before T, filtered to the flow."""
    result, _ = two_bulk
    samples = f"# t_ns=1000000000\n{KERNEL_SAMPLE}# t_ns=3000000000\n{KERNEL_SAMPLE.replace('cwnd:10', 'cwnd:99')}"
    run = RunData(
        kind="kernel",
        config=result.config,
        summary={},
        flows=result.flows,
        timeseries=result.timeseries,
        ss_samples={"client": samples},
    )
    assert ss_at_text(run, 2_000_000_000) == KERNEL_SAMPLE
    assert "cwnd:99" in ss_at_text(run, 3_000_000_000)
    only_b = ss_at(run, 2_000_000_000, "b")
    assert list(only_b) == ["client"] and "bbr" in only_b["client"] and "cubic" not in only_b["client"]
    assert _only_socket(KERNEL_SAMPLE, "10.0.0.9:1", "10.0.0.1:5201") is None


def test_ss_before_any_socket_prints_the_header_alone(two_bulk):
    """At 0 s no handshake has completed (no RTT sample): ss lists no socket, only its header."""
    _, out = two_bulk
    done = CliRunner().invoke(app, ["ss", str(out), "--at", "0s"])
    assert done.exit_code == 0
    assert done.output.splitlines() == ["State Recv-Q Send-Q Local Address:Port Peer Address:Port Process"]
