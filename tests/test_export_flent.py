"""run.flent.gz: flent's own reader and CLI open it, its series are the run's flows (tcplab.exports.flent)."""

from __future__ import annotations

import csv
import gzip
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from export_runs import TWO_BULK, flent_module, run_dir
from tcplab.cli import app
from tcplab.exports.flent import DELAY_S, EPOCH, FLENT_FILE, flent_bytes
from tcplab.exports.rundir import RunData
from tcplab.exports.ss_at import ss_at

pytestmark = pytest.mark.engine


@pytest.fixture(scope="module")
def two_bulk(tmp_path_factory):
    return run_dir(tmp_path_factory, TWO_BULK, "two-bulk")


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """A maerts flow (the server sends) next to a bidir pair (one flow each way)."""
    return run_dir(tmp_path_factory, "builtin:maerts", "maerts", ["duration=3s"])


@pytest.fixture(scope="module")
def bidir(tmp_path_factory):
    """iperf3 --bidir: bidir.fwd (the client sends) and bidir.rev (the server sends)."""
    return run_dir(tmp_path_factory, "builtin:bidir", "bidir", ["duration=3s"])


#: tests/flent_probe.py: flent's CLI, recording what its plots draw
PROBE = Path(__file__).parent / "flent_probe.py"


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
    # one x value per step, from flent's start (0) to its end (TOTAL_LENGTH: the run and the
    # idle delay before and after it)
    step = result.sample_interval_s
    assert rs.meta("STEP_SIZE") == pytest.approx(step)
    assert rs.meta("TOTAL_LENGTH") == result.duration_s + 2 * DELAY_S
    assert rs.x_values[0] == 0 and rs.x_values[-1] == pytest.approx(rs.meta("TOTAL_LENGTH"))
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
    # the sum series is flent's SumRunner over the flows (null where none has a value)
    for i, total in enumerate(rs.series("TCP upload sum")):
        parts = [p for p in (rs.series(f"TCP upload::{k}")[i] for k in (1, 2)) if p is not None]
        assert total == (pytest.approx(math.fsum(parts)) if parts else None)


def test_ping_series_is_the_mean_srtt_ss_shows_at_that_moment(two_bulk):
    resultset = flent_module()
    result, out = two_bulk
    rs = resultset.load(str(out / FLENT_FILE))
    run = RunData.load(out)
    checked = 0
    for x, ping in zip(rs.x_values, rs.series("Ping (ms) ICMP"), strict=True):
        if ping is None or x - DELAY_S in (0, result.duration_s):
            continue
        texts = ss_at(run, round((x - DELAY_S) * 1e9))  # the run starts at x = DELAY_S
        # the data senders' sockets (their info line has bytes_acked; the receivers' sockets show
        # an rtt of their own, for what they send)
        lines = [line for t in texts.values() for line in t.splitlines() if "bytes_acked:" in line]
        rtts = [float(tok[4:].split("/")[0]) for line in lines for tok in line.split() if tok.startswith("rtt:")]
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
    x = DELAY_S + 2.0  # t relative to T0 = the simulated time + flent's delay
    raw = {x: v for x, v in rs.raw_series("TCP upload::2", raw_key="tcp_cwnd")}
    assert raw[x] == at["cwnd"]
    rtt = dict(rs.raw_series("TCP upload::2", raw_key="tcp_rtt"))
    assert rtt[x] == pytest.approx(at["srtt_us"] / 1000)
    bw = dict(rs.raw_series("TCP upload::2", raw_key="tcp_bbr_bw"))
    assert bw[x] == pytest.approx(at["bbr_bw_bps"] / 1e6)
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
    at_2s = next(r for r in rows[1:] if float(r[0]) == pytest.approx(DELAY_S + 2.0))
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


def test_bidir_pairs_are_rrul_var_streams(bidir, tmp_path):
    """rrul_var's stream LABEL is a TCP_STREAM and a TCP_MAERTS (rrul_var.conf): iperf3
    --bidir's pair, labelled by the app's name, its "UDP" latency the pair's mean srtt."""
    resultset = flent_module()
    result, out = bidir
    rs = resultset.load(str(out / FLENT_FILE))
    assert rs.meta("NAME") == "rrul_var"
    assert rs.meta("TEST_PARAMETERS") == {"bidir_streams": "1", "labels": "bidir", "cc_algos": "cubic"}
    meta = rs.meta("SERIES_META")
    assert meta["TCP upload::bidir"]["FLOW"] == "bidir.fwd" and meta["TCP download::bidir"]["FLOW"] == "bidir.rev"
    data = json.loads(gzip.decompress((out / FLENT_FILE).read_bytes()))
    ts = result.timeseries
    rtts = ts[ts["srtt_us"] > 0].groupby("t_ns")["srtt_us"].mean() / 1000
    udp_values = data["results"]["Ping (ms)::UDP bidir"]
    udp = {round(x - DELAY_S, 6): v for x, v in zip(data["x_values"], udp_values, strict=True)}
    assert {t: v for t, v in udp.items() if v is not None} == pytest.approx(
        {round(t / 1e9, 6): v for t, v in rtts.items()}
    )
    pings = [data["results"][k] for k in ("Ping (ms)::ICMP", "Ping (ms)::UDP bidir")]
    for i, avg in enumerate(data["results"]["Ping (ms) avg"]):
        values = [p[i] for p in pings if p[i] is not None]
        assert avg == (pytest.approx(sum(values) / len(values)) if values else None)
    done = _flent(["-i", str(out / FLENT_FILE), "-p", "totals", "-o", str(tmp_path / "x.png")], tmp_path)
    assert done.returncode == 0, done.stderr


def test_other_mixes_are_rrul_be_nflows(mixed, tmp_path):
    """A maerts flow next to a bidir pair: N uploads and M downloads, numbered per
    direction (rrul_be_nflows.conf), each series naming its flow in SERIES_META."""
    resultset = flent_module()
    result, out = mixed
    rs = resultset.load(str(out / FLENT_FILE))
    assert rs.meta("NAME") == "rrul_be_nflows"
    params = rs.meta("TEST_PARAMETERS")
    assert (params["upload_streams"], params["download_streams"]) == ("1", "2")
    flows = {k: v["FLOW"] for k, v in rs.meta("SERIES_META").items() if "FLOW" in v}
    assert flows == {"TCP upload BE::1": "bidir.fwd", "TCP download BE::1": "maerts", "TCP download BE::2": "bidir.rev"}
    # both latency series are the flows' mean srtt (every flow is best effort)
    assert rs.series("Ping (ms) ICMP") == rs.series("Ping (ms) UDP BE")
    done = _flent(["-i", str(out / FLENT_FILE), "-p", "totals", "-o", str(tmp_path / "x.png")], tmp_path)
    assert done.returncode == 0, done.stderr


def _flent_settings(meta: dict):
    """flent's own settings for the file's test, as `flent NAME -l LENGTH --test-parameter
    K=V ...` would run it at its defaults (its DATA_SETS: the series the test defines)."""
    from flent import settings as flent_settings

    args = [meta["NAME"], "-l", str(meta["LENGTH"])]
    for k, v in meta["TEST_PARAMETERS"].items():
        args += ["--test-parameter", f"{k}={v}"]
    return flent_settings.load(args)


@pytest.mark.parametrize("which", ["two_bulk", "mixed", "bidir", "down"])
def test_series_are_exactly_the_tests_own(which, request):
    """flent's plots list every series its test defines (a glob over the definition, with
    or without data: the legend then names a flow in a direction it never sends), so the
    file has exactly the series of its test's definition, each flow series with data."""
    flent_module()
    _, out = request.getfixturevalue(which)
    data = json.loads(gzip.decompress((out / FLENT_FILE).read_bytes()))
    defined = _flent_settings(data["metadata"]).DATA_SETS
    assert set(data["results"]) == set(defined)
    for name, values in data["results"].items():
        assert any(v is not None for v in values), name


@pytest.fixture(scope="module")
def down(tmp_path_factory):
    scenario = json.loads(json.dumps(TWO_BULK))
    for f in scenario["flows"]:
        f["app"] = "maerts"
    return run_dir(tmp_path_factory, scenario, "down")


def _probe(data_file: Path, plot: str, tmp_path: Path) -> tuple[list[dict], list[str]]:
    """flent's CLI at its defaults draws ``plot`` of ``data_file``: the series it took (with
    the number of values left after its cutoff) and the texts of its legend."""
    record = tmp_path / f"{plot}.jsonl"
    record.unlink(missing_ok=True)
    env = dict(os.environ, MPLBACKEND="Agg")
    command = [sys.executable, str(PROBE), str(record), "-q", "-i", str(data_file), "-p", plot]
    done = subprocess.run(
        [*command, "-o", str(tmp_path / f"{plot}.png")], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "ERROR" not in done.stderr, (plot, done.stderr)
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    legends = [line["legend"] for line in lines if "legend" in line]
    return [line for line in lines if "series" in line], (legends[-1] if legends else [])


@pytest.mark.parametrize(
    ("which", "plot", "direction"),
    [("mixed", "upload", True), ("mixed", "download", False), ("bidir", "upload", True), ("bidir", "download", False)],
)
def test_legends_name_only_the_flows_that_send_that_way(which, plot, direction, request, tmp_path):
    """Before: rrul_var's upload plot listed maerts and bidir.rev (which never upload) in its
    legend, without a line. Each flow series flent draws now has data, and the flows behind
    them are exactly the run's flows in that direction."""
    flent_module()
    result, out = request.getfixturevalue(which)
    data = json.loads(gzip.decompress((out / FLENT_FILE).read_bytes()))
    drawn, legend = _probe(out / FLENT_FILE, plot, tmp_path)
    meta = data["metadata"]["SERIES_META"]
    assert all(s["series"] in meta and s["points"] > 0 for s in drawn), drawn
    senders = {f["name"] for f in result.config["flows"] if (f.get("data_side", "client") != "server") == direction}
    assert {meta[s["series"]]["FLOW"] for s in drawn if "FLOW" in meta[s["series"]]} == senders
    assert legend == [s["label"] for s in drawn]


@pytest.fixture(scope="module", params=["8s", "20s"])
def timed(request, tmp_path_factory):
    """Two bulk flows for 8 s (shorter than flent's cutoffs, 2 x 5 s) and 20 s."""
    return run_dir(tmp_path_factory, TWO_BULK, f"two-bulk-{request.param}", [f"duration={request.param}"])


def test_time_is_as_flent_runs_its_test(timed):
    """A flent test of -l LENGTH pings for TOTAL_LENGTH = LENGTH + 2 x DELAY and runs its
    netperf streams from DELAY for LENGTH (netperf_definitions.inc, tcp_nup.conf): the file
    says so, and the flows' values lie where flent's own definition puts its streams."""
    flent_module()
    result, out = timed
    data = json.loads(gzip.decompress((out / FLENT_FILE).read_bytes()))
    meta, x_values = data["metadata"], data["x_values"]
    flent = _flent_settings(meta)
    assert meta["LENGTH"] == result.duration_s
    assert meta["TOTAL_LENGTH"] == flent.TOTAL_LENGTH == meta["LENGTH"] + 2 * flent.DELAY
    assert x_values[0] == 0 and x_values[-1] == pytest.approx(meta["TOTAL_LENGTH"])
    for name in ("TCP upload::1", "TCP upload::2"):
        stream = flent.DATA_SETS[name]
        xs = [x for x, v in zip(x_values, data["results"][name], strict=True) if v is not None]
        ts = [r["t"] for r in data["raw_values"][name]]
        assert min(xs) == min(ts) == stream["delay"]  # the flows start at the run's time 0
        assert max(xs) == max(ts) == pytest.approx(stream["delay"] + stream["length"])
    ping = flent.DATA_SETS["Ping (ms) ICMP"]
    assert all(0 <= r["t"] <= ping["length"] for r in data["raw_values"]["Ping (ms) ICMP"])


def test_flents_default_cutoff_keeps_every_sample(timed, tmp_path):
    """Before: `flent -i FILE -p ping_cdf` drew an empty CDF for an 8 s run (flent cuts
    --delay, 5 s, off each end of TOTAL_LENGTH, which was 8 s) and half the samples of a
    20 s run. At flent's defaults its CDF and box plots now take every sample of the run."""
    flent_module()
    from flent.settings import parser

    result, out = timed
    delay = parser.get_default("DELAY")
    ts = result.timeseries
    finite = ts[np.isfinite(ts["goodput_bps"].astype(float))]
    every = finite["t_ns"].nunique()  # sample times with a goodput (both flows run throughout)
    rtt = ts.loc[ts["srtt_us"] > 0, "t_ns"].nunique()  # sample times with an RTT
    expected = {
        "ping_cdf": {"Ping (ms) ICMP": rtt},
        "box_totals": {"TCP upload sum": every, "Ping (ms) ICMP": rtt},
    }
    for plot, points in expected.items():
        drawn, _ = _probe(out / FLENT_FILE, plot, tmp_path)
        assert all(s["cutoff"] == [delay, -delay] for s in drawn), drawn  # flent's defaults
        assert {s["series"]: s["points"] for s in drawn} == points, plot


def test_only_downloads_is_tcp_ndown(down):
    resultset = flent_module()
    _, out = down
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
    the x values stay the sample grid and each flow keeps a value at every slot; flent's end
    cutoff (TOTAL_LENGTH - its delay) keeps the last, late sample."""
    from tcplab.exports.flent import flent_data

    result, _ = two_bulk
    ts = result.timeseries.copy()
    late = ts["flow_name"] == "b"
    ts.loc[late, "t_ns"] = ts.loc[late, "t_ns"] + 3_000_000  # 3 ms after the grid
    run = RunData(kind="kernel", config=result.config, summary=result.summary, flows=result.flows, timeseries=ts)
    data = flent_data(run)
    step = result.sample_interval_s
    idle = round(DELAY_S / step)  # grid steps before (and after) the run
    assert data["x_values"] == pytest.approx([k * step for k in range(len(data["x_values"]))])
    assert len(data["x_values"]) == ts["t_ns"][~late].nunique() + 2 * idle
    b = data["results"]["TCP upload::2"]
    assert all(v is not None for v in b[idle + 1 : -idle])
    # raw values keep the real sample times
    raws = data["raw_values"]["TCP upload::2"]
    assert raws[5]["t"] == pytest.approx(DELAY_S + 5 * step + 0.003)
    assert data["metadata"]["TOTAL_LENGTH"] - DELAY_S >= raws[-1]["t"] > DELAY_S + result.duration_s


def _plots_of(data_file, tmp_path) -> list[str]:
    """Every plot flent offers for the file's test (`flent TEST --test-parameter K=V
    --list-plots`)."""
    obj = json.loads(gzip.decompress(data_file.read_bytes()))
    params = [f"{k}={v}" for k, v in obj["metadata"]["TEST_PARAMETERS"].items()]
    args = [obj["metadata"]["NAME"], *[x for p in params for x in ("--test-parameter", p)], "--list-plots"]
    listing = _flent(args, tmp_path, quiet=False).stdout.splitlines()  # -q hides the list
    return [line.split()[0] for line in listing if line.startswith(" ")]


@pytest.mark.slow
def test_flent_cli_draws_every_plot_of_each_test(two_bulk, mixed, bidir, down, tmp_path):
    """Every plot of each test draws, and every name in the legend of a plot of series (not
    a Q-Q plot, whose legend is its reference line) is a series with data."""
    flent_module()
    for _, out in (two_bulk, mixed, bidir, down):
        plots = _plots_of(out / FLENT_FILE, tmp_path)
        assert len(plots) > 15
        for plot in plots:
            drawn, legend = _probe(out / FLENT_FILE, plot, tmp_path)
            if drawn:
                with_data = {s["label"] for s in drawn if s["points"] > 0}
                assert set(legend) <= with_data, (out, plot, drawn, legend)


def test_hosts_are_the_flows_servers_local_host_the_client(mixed):
    """flent runs on the client and tests against a netserver: HOST is the flows' server
    (10.0.0.2 = node 1, `server`) whether it sends (maerts) or receives (bidir.fwd)."""
    resultset = flent_module()
    _, out = mixed
    rs = resultset.load(str(out / FLENT_FILE))
    assert rs.meta("HOSTS") == ["10.0.0.2"] and rs.meta("HOST") == "10.0.0.2"
    assert rs.meta("LOCAL_HOST") == "client"
