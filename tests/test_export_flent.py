"""run.flent.gz: flent's own reader and CLI open it, its series are the run's flows (tcplab.exports.flent)."""

from __future__ import annotations

import csv
import gzip
import json
import math
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from export_runs import TWO_BULK, flent_module, run_dir
from tcplab.cli import app
from tcplab.exports.flent import EPOCH, FLENT_FILE, flent_bytes
from tcplab.exports.rundir import RunData
from tcplab.exports.ss_at import ss_at

pytestmark = pytest.mark.engine


@pytest.fixture(scope="module")
def two_bulk(tmp_path_factory):
    return run_dir(tmp_path_factory, TWO_BULK, "two-bulk")


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    return run_dir(tmp_path_factory, "builtin:maerts", "maerts", ["duration=3s"])


def _flent(args, cwd, quiet=True):
    """flent's CLI in this Python (matplotlib without a display)."""
    env = dict(os.environ, MPLBACKEND="Agg")
    command = [sys.executable, "-m", "flent", *(["-q"] if quiet else []), *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_flent_reader_loads_it_as_tcp_nup_with_a_series_per_flow(two_bulk):
    resultset = flent_module()
    result, out = two_bulk
    rs = resultset.load(str(out / FLENT_FILE))
    assert rs.meta("NAME") == "tcp_nup"
    assert rs.meta("TEST_PARAMETERS")["upload_streams"] == "2"
    assert {"TCP upload::1", "TCP upload::2", "TCP upload sum", "Ping (ms) ICMP"} <= set(rs.series_names)
    # one x value per sample, at the step size, from 0 to the duration
    step = result.sample_interval_s
    assert rs.meta("STEP_SIZE") == pytest.approx(step)
    assert rs.x_values[0] == 0 and rs.x_values[-1] == pytest.approx(result.duration_s)
    assert all(b - a == pytest.approx(step) for a, b in zip(rs.x_values, rs.x_values[1:], strict=False))
    # flows in scenario order, with their congestion control
    assert rs.meta("SERIES_META")["TCP upload::1"]["CONG_CONTROL"] == "cubic"
    assert rs.meta("SERIES_META")["TCP upload::2"]["CONG_CONTROL"] == "bbr"


def test_each_series_integrates_to_the_bytes_its_flow_delivered(two_bulk):
    """Mbit/s per sample x the step = the megabits delivered in it: over the run, the flow's
    bytes_received (the engine's total), to within what arrives after the last sample."""
    resultset = flent_module()
    result, out = two_bulk
    rs = resultset.load(str(out / FLENT_FILE))
    step = result.sample_interval_s
    for k, row in enumerate(result.flows.to_dict("records"), 1):
        mbit = math.fsum(v for v in rs.series(f"TCP upload::{k}") if v is not None) * step
        assert mbit * 1e6 / 8 == pytest.approx(row["bytes_received"], abs=2 * 1448), row["name"]
    # the sum series is flent's SumRunner over the flows
    for i, total in enumerate(rs.series("TCP upload sum")):
        parts = [rs.series(f"TCP upload::{k}")[i] for k in (1, 2)]
        assert total == pytest.approx(math.fsum(p for p in parts if p is not None))


def test_ping_series_is_the_mean_srtt_ss_shows_at_that_moment(two_bulk):
    resultset = flent_module()
    result, out = two_bulk
    rs = resultset.load(str(out / FLENT_FILE))
    run = RunData.load(out)
    checked = 0
    for x, ping in zip(rs.x_values, rs.series("Ping (ms) ICMP"), strict=True):
        if ping is None or x in (0, result.duration_s):
            continue
        texts = ss_at(run, round(x * 1e9))
        rtts = [float(tok[4:].split("/")[0]) for t in texts.values() for tok in t.split() if tok.startswith("rtt:")]
        assert rtts, x
        assert ping == pytest.approx(sum(rtts) / len(rtts), abs=1e-3), x
        checked += 1
    assert checked > 10


def test_tcp_info_raw_values_for_flents_tcp_plots(two_bulk):
    resultset = flent_module()
    result, out = two_bulk
    rs = resultset.load(str(out / FLENT_FILE))
    ts = result.timeseries
    at = ts[(ts["flow_name"] == "b") & (ts["t_ns"] == 2_000_000_000)].iloc[0]
    raw = {x: v for x, v in rs.raw_series("TCP upload::2", raw_key="tcp_cwnd")}
    assert raw[2.0] == at["cwnd"]  # t relative to T0 = the simulated time
    rtt = dict(rs.raw_series("TCP upload::2", raw_key="tcp_rtt"))
    assert rtt[2.0] == pytest.approx(at["srtt_us"] / 1000)
    bw = dict(rs.raw_series("TCP upload::2", raw_key="tcp_bbr_bw"))
    assert bw[2.0] == pytest.approx(at["bbr_bw_bps"] / 1e6)
    assert not list(rs.raw_series("TCP upload::1", raw_key="tcp_bbr_bw"))  # CUBIC has none


def test_flent_cli_plots_totals_and_tcp_rtt(two_bulk, tmp_path):
    """`flent -i run.flent.gz -p totals -o x.png` draws it; -f csv shows flent read our values."""
    flent_module()
    result, out = two_bulk
    for plot in ("totals", "tcp_rtt"):
        done = _flent(["-i", str(out / FLENT_FILE), "-p", plot, "-o", str(tmp_path / f"{plot}.png")], tmp_path)
        assert done.returncode == 0, done.stderr
        assert (tmp_path / f"{plot}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    done = _flent(["-i", str(out / FLENT_FILE), "-p", "totals", "-f", "csv", "-o", str(tmp_path / "t.csv")], tmp_path)
    assert done.returncode == 0, done.stderr
    rows = list(csv.reader((tmp_path / "t.csv").read_text().splitlines()))
    header = rows[0]
    col = header.index("TCP upload sum")
    at_2s = next(r for r in rows[1:] if float(r[0]) == pytest.approx(2.0))
    ts = result.timeseries
    expect = ts[ts["t_ns"] == 2_000_000_000]["goodput_bps"].sum() / 1e6
    assert float(at_2s[col]) == pytest.approx(expect)


def test_flent_cli_draws_every_plot_of_tcp_nup(two_bulk, tmp_path):
    flent_module()
    _, out = two_bulk
    for plot in ("upload", "upload_with_ping", "ping", "tcp_cwnd", "tcp_pacing", "ping_cdf", "box_totals"):
        done = _flent(["-i", str(out / FLENT_FILE), "-p", plot, "-o", str(tmp_path / f"{plot}.png")], tmp_path)
        assert done.returncode == 0, (plot, done.stderr)
        assert (tmp_path / f"{plot}.png").stat().st_size > 1000, plot


def test_both_directions_are_rrul_var_and_flent_draws_totals(mixed, tmp_path):
    resultset = flent_module()
    result, out = mixed
    rs = resultset.load(str(out / FLENT_FILE))
    assert rs.meta("NAME") == "rrul_var"
    # maerts (server sends) and bidir.rev are downloads, bidir.fwd an upload; the streams'
    # labels are the flows' names, so flent's legends name them
    assert {"TCP download::maerts", "TCP upload::bidir.fwd", "TCP download::bidir.rev", "TCP totals"} <= set(
        rs.series_names
    )
    assert rs.meta("TEST_PARAMETERS") == {
        "bidir_streams": "3",
        "labels": "maerts,bidir.fwd,bidir.rev",
        "cc_algos": "cubic,cubic,cubic",
    }
    # every latency series rrul_var defines for those labels has data: ICMP (the flows' mean
    # srtt) and each stream's own "UDP" one (its flow's srtt), and their average
    data = json.loads(gzip.decompress((out / FLENT_FILE).read_bytes()))
    results = data["results"]
    ts = result.timeseries
    for name in ("maerts", "bidir.fwd", "bidir.rev"):
        udp = results[f"Ping (ms)::UDP {name}"]
        rows = ts[(ts["flow_name"] == name) & (ts["srtt_us"] > 0)]
        by_x = {round(x, 6): v for x, v in zip(data["x_values"], udp, strict=True) if v is not None}
        assert by_x and by_x == {round(t, 6): us / 1000 for t, us in zip(rows["t_s"], rows["srtt_us"], strict=True)}
    pings = [results[k] for k in results if k.startswith("Ping (ms)::")]
    assert len(pings) == 4
    for i, avg in enumerate(results["Ping (ms) avg"]):
        values = [p[i] for p in pings if p[i] is not None]
        assert avg == (pytest.approx(sum(values) / len(values)) if values else None)
    done = _flent(["-i", str(out / FLENT_FILE), "-p", "totals", "-o", str(tmp_path / "x.png")], tmp_path)
    assert done.returncode == 0, done.stderr


def test_only_downloads_is_tcp_ndown(tmp_path_factory):
    resultset = flent_module()
    scenario = json.loads(json.dumps(TWO_BULK))
    for f in scenario["flows"]:
        f["app"] = "maerts"
    _, out = run_dir(tmp_path_factory, scenario, "down")
    rs = resultset.load(str(out / FLENT_FILE))
    assert rs.meta("NAME") == "tcp_ndown"
    assert {"TCP download::1", "TCP download::2", "TCP download sum"} <= set(rs.series_names)


def test_deterministic_no_wall_clock(two_bulk, tmp_path):
    result, out = two_bulk
    data = (out / FLENT_FILE).read_bytes()
    assert gzip.decompress(data)  # a gzip file
    assert data[4:8] == b"\0\0\0\0"  # gzip header mtime 0
    obj = json.loads(gzip.decompress(data))
    assert obj["version"] == 4  # flent's FILEFORMAT_VERSION
    assert obj["metadata"]["TIME"] == EPOCH and obj["metadata"]["T0"] == EPOCH
    # written again from the directory, by the API and the CLI: the same bytes
    assert flent_bytes(RunData.load(out)) == data
    done = CliRunner().invoke(app, ["export", "flent", str(out), "-o", str(tmp_path / "again.flent.gz")])
    assert done.exit_code == 0, done.output
    assert (tmp_path / "again.flent.gz").read_bytes() == data
    # and a second run of the same scenario writes the same file
    import tcplab
    from export_runs import engine

    again = tcplab.run(TWO_BULK, core=engine()).write(tmp_path / "run2", plots=False)
    assert (again / FLENT_FILE).read_bytes() == data


def test_export_flent_cli_errors(tmp_path):
    runner = CliRunner()
    done = runner.invoke(app, ["export", "flent", str(tmp_path / "nope")])
    assert done.exit_code == 2
    assert done.output.count("\n") == 1 and "does not exist" in done.output
    (tmp_path / "empty").mkdir()
    done = runner.invoke(app, ["export", "flent", str(tmp_path / "empty")])
    assert done.exit_code == 2 and "has no summary.json" in done.output
    assert not list((tmp_path / "empty").iterdir())  # nothing written


def test_samples_near_the_grid_go_to_their_slot(two_bulk):
    """A kernel run's ss samples are taken near the grid times (each node on its own clock):
    the x values stay the sample grid and each flow keeps a value at every slot."""
    from tcplab.exports.flent import flent_data

    result, _ = two_bulk
    ts = result.timeseries.copy()
    late = ts["flow_name"] == "b"
    ts.loc[late, "t_ns"] = ts.loc[late, "t_ns"] + 3_000_000  # 3 ms after the grid
    run = RunData(kind="kernel", config=result.config, summary=result.summary, flows=result.flows, timeseries=ts)
    data = flent_data(run)
    step = result.sample_interval_s
    assert data["x_values"] == pytest.approx([k * step for k in range(len(data["x_values"]))])
    assert len(data["x_values"]) == ts["t_ns"][~late].nunique()
    b = data["results"]["TCP upload::2"]
    assert all(v is not None for v in b[1:])
    # raw values keep the real sample times
    assert data["raw_values"]["TCP upload::2"][5]["t"] == pytest.approx(5 * step + 0.003)


def _plots_of(data_file, tmp_path) -> list[str]:
    """Every plot flent offers for the file's test (`flent TEST -t PARAMS --list-plots`)."""
    obj = json.loads(gzip.decompress(data_file.read_bytes()))
    params = [f"{k}={v}" for k, v in obj["metadata"]["TEST_PARAMETERS"].items()]
    args = [obj["metadata"]["NAME"], *[x for p in params for x in ("-t", p)], "--list-plots"]
    listing = _flent(args, tmp_path, quiet=False).stdout.splitlines()  # -q hides the list
    return [line.split()[0] for line in listing if line.startswith(" ")]


@pytest.mark.slow
def test_flent_cli_draws_every_plot_of_each_test(two_bulk, mixed, tmp_path):
    flent_module()
    for _, out in (two_bulk, mixed):
        plots = _plots_of(out / FLENT_FILE, tmp_path)
        assert len(plots) > 15
        for plot in plots:
            done = _flent(["-i", str(out / FLENT_FILE), "-p", plot, "-o", str(tmp_path / "p.png")], tmp_path)
            assert done.returncode == 0 and "ERROR" not in done.stderr, (plot, done.stderr)


def test_hosts_are_the_flows_servers_local_host_the_client(mixed):
    """flent runs on the client and tests against a netserver: HOST is the flows' server
    (10.0.0.2 = node 1, `server`) whether it sends (maerts) or receives (bidir.fwd)."""
    resultset = flent_module()
    _, out = mixed
    rs = resultset.load(str(out / FLENT_FILE))
    assert rs.meta("HOSTS") == ["10.0.0.2"] and rs.meta("HOST") == "10.0.0.2"
    assert rs.meta("LOCAL_HOST") == "client"
