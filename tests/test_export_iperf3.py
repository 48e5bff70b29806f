"""iperf3-FLOW.json: the shape of a real ``iperf3 -J``, numbers that add up to the flow (tcplab.exports.iperf3)."""

from __future__ import annotations

import json
import math
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from export_runs import TWO_BULK, run_dir
from tcplab.cli import app
from tcplab.exports.iperf3 import iperf3_json
from tcplab.exports.rundir import RunData
from tcplab.exports.ss_at import ss_at

DATA = Path(__file__).parent / "data"
#: A real `iperf3 -c 127.0.0.1 -t 2 -J` (iperf 3.12, Linux), for machines without iperf3.
STORED = DATA / "iperf3-3.12-tcp.json"


@pytest.fixture(scope="module")
def two_bulk(tmp_path_factory):
    return run_dir(tmp_path_factory, TWO_BULK, "two-bulk")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def real_iperf3() -> dict:
    """A real iperf3 -J capture on loopback (1 s), made now when iperf3 is installed (the
    stored copy of one otherwise)."""
    path = shutil.which("iperf3")
    if path is None:
        return json.loads(STORED.read_text())
    port = str(_free_port())
    server = subprocess.Popen([path, "-s", "-1", "-p", port], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(40):  # until the server listens (a refused client says so in its JSON)
            done = subprocess.run(
                [path, "-c", "127.0.0.1", "-p", port, "-t", "1", "-J"], capture_output=True, text=True, timeout=30
            )
            data = json.loads(done.stdout)
            if "error" not in data:
                return data
            time.sleep(0.05)
    finally:
        server.kill()
        server.wait()
    pytest.fail(f"iperf3 -c on loopback failed: {data.get('error')}")


def _kind(v) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"  # cJSON prints integral doubles as integers: one JSON type
    return type(v).__name__


def _missing(real, ours, where="") -> list[str]:
    """Keys (and types) of ``real`` absent from ``ours`` at the same place."""
    problems = []
    if _kind(real) != _kind(ours):
        return [f"{where or '/'}: {_kind(ours)} instead of {_kind(real)}"]
    if isinstance(real, dict):
        for k, v in real.items():
            if k not in ours:
                problems.append(f"{where}/{k}: missing")
            else:
                problems += _missing(v, ours[k], f"{where}/{k}")
    elif isinstance(real, list) and real and ours:
        for item in ours:  # every element of ours against the real first element
            problems += _missing(real[0], item, f"{where}[]")
    return problems


def test_has_every_key_of_a_real_iperf3_json_at_the_same_place(two_bulk, real_iperf3):
    _, out = two_bulk
    for name in ("a", "b"):
        ours = json.loads((out / f"iperf3-{name}.json").read_text())
        assert _missing(real_iperf3, ours) == []
        assert ours["intervals"] and ours["end"]["streams"]


def test_stored_capture_is_a_real_iperf3_output():
    stored = json.loads(STORED.read_text())
    assert stored["start"]["version"].startswith("iperf 3.")
    assert stored["intervals"][0]["streams"][0]["sender"] is True


def test_intervals_add_up_to_the_flow(two_bulk):
    result, out = two_bulk
    for row in result.flows.to_dict("records"):
        data = json.loads((out / f"iperf3-{row['name']}.json").read_text())
        intervals = data["intervals"]
        # 1 s intervals (iperf3's default) over the flow's 4 s
        assert len(intervals) == math.ceil(row["duration_s"])
        assert [i["sum"]["start"] for i in intervals] == list(range(len(intervals)))
        assert sum(i["sum"]["bytes"] for i in intervals) == row["bytes_received"]
        assert sum(i["streams"][0]["retransmits"] for i in intervals) == row["retrans_segs"]
        for i in intervals:
            s = i["streams"][0]
            assert s["bits_per_second"] == pytest.approx(s["bytes"] * 8 / s["seconds"])
            assert s["pmtu"] == 1448 + 52
        end = data["end"]
        assert end["sum_received"]["bytes"] == row["bytes_received"]
        assert end["sum_sent"]["bytes"] == row["bytes_sent"] - row["bytes_retrans"]
        assert end["sum_sent"]["retransmits"] == row["retrans_segs"]
        assert end["sender_tcp_congestion"] == row["cc"]
        rtts = [i["streams"][0]["rtt"] for i in intervals]
        sender = end["streams"][0]["sender"]
        assert (sender["min_rtt"], sender["max_rtt"]) == (min(rtts), max(rtts))
        assert sender["max_snd_cwnd"] == max(i["streams"][0]["snd_cwnd"] for i in intervals)


def test_interval_tcp_info_is_what_ss_shows_at_its_end(two_bulk):
    """rtt in us and snd_cwnd in bytes (iperf3's units) = ss's rtt (ms) and cwnd x mss at that moment."""
    _, out = two_bulk
    run = RunData.load(out)
    data = json.loads((out / "iperf3-b.json").read_text())
    stream = data["intervals"][1]["streams"][0]  # 1 s .. 2 s
    state, line = ss_at(run, 2_000_000_000, "b")["client"].splitlines()[1:3]
    fields = dict(tok.split(":", 1) for tok in line.split() if ":" in tok)
    assert stream["rtt"] == round(float(fields["rtt"].split("/")[0]) * 1000)
    assert stream["snd_cwnd"] == int(fields["cwnd"]) * int(fields["mss"])
    # the sockets are ss's: local = the sender's address:port, remote = the receiver's
    connected = data["start"]["connected"][0]
    local, peer = state.split()[3:5]
    assert f"{connected['local_host']}:{connected['local_port']}" == local
    assert f"{connected['remote_host']}:{connected['remote_port']}" == peer


def test_interval_option(two_bulk):
    result, out = two_bulk
    run = RunData.load(out)
    half = iperf3_json(run, "a", interval_s=0.5)
    assert len(half["intervals"]) == 8
    assert sum(i["sum"]["bytes"] for i in half["intervals"]) == int(result.flows.iloc[0]["bytes_received"])


def test_an_interval_is_a_whole_number_of_samples(two_bulk, tmp_path_factory):
    """A boundary takes the last sample at or before it: an interval that is not a multiple
    of the sample interval would hold no sample, then two (0 bit/s, then twice the rate), so
    it is refused; the default 1 s becomes the nearest multiple when it is not one."""
    from tcplab.errors import ScenarioError

    _, out = two_bulk
    run = RunData.load(out)
    sample_s = run.sample_interval_ns / 1e9
    assert sample_s * 1.5 >= 0.1  # within iperf3 -i's range (0.1 s .. 60 s): refused for the samples alone
    for bad in (sample_s * 1.5, sample_s * 2.5):
        with pytest.raises(ScenarioError, match=r"^--interval: .* not a whole number of the run's sample interval"):
            iperf3_json(run, "a", interval_s=bad)
    done = CliRunner().invoke(app, ["export", "iperf3", str(out), "--flow", "a", "-o", "-", "--interval", "150ms"])
    assert done.exit_code == 2, done.output
    assert done.output.startswith("error: --interval: 150ms is not a whole number") and done.output.count("\n") == 1
    # a run sampled every 300 ms: the default interval is 900 ms (3 samples), every interval
    # holding the same number of samples
    _, odd = run_dir(tmp_path_factory, TWO_BULK, "two-bulk-300ms", ["sample_interval=300ms"])
    data = json.loads((odd / "iperf3-a.json").read_text())
    starts = [i["sum"]["start"] for i in data["intervals"]]
    assert starts[:3] == pytest.approx([0.0, 0.9, 1.8])


def test_snd_wnd_is_the_receivers_window(tmp_path_factory):
    """snd_wnd is tcp_info's tcpi_snd_wnd, the window the receiver advertises: with its
    buffer fixed at 64 KB (tcp_rmem 65536 65536) the window is at most half of it (Linux's
    default scaling_ratio, tcp_win_from_space()), 32768 bytes, which the immediate reader
    offers once the window has grown; iperf3's max_snd_wnd is the largest sample."""
    scenario = json.loads(json.dumps(TWO_BULK))
    for f in scenario["flows"]:
        f["tcp"] = {"tcp_rmem": [4096, 65536, 65536]}
    result, out = run_dir(tmp_path_factory, scenario, "two-bulk-64k")
    ts = result.timeseries
    for name in ("a", "b"):
        data = json.loads((out / f"iperf3-{name}.json").read_text())
        wnds = [i["streams"][0]["snd_wnd"] for i in data["intervals"]]
        assert all(0 < w <= 32768 for w in wnds), wnds
        assert data["end"]["streams"][0]["sender"]["max_snd_wnd"] == max(wnds) == 32768
        # each interval's value is the sample at its end
        rows = ts[ts["flow_name"] == name]
        for i in data["intervals"]:
            at = rows[rows["t_s"] <= i["sum"]["end"] + 1e-9].iloc[-1]
            assert i["streams"][0]["snd_wnd"] == int(at["snd_wnd_bytes"])


def test_maerts_is_written_from_its_sender(tmp_path_factory):
    result, out = run_dir(tmp_path_factory, "builtin:maerts", "maerts", ["duration=3s"])
    names = sorted(p.name for p in out.glob("iperf3-*.json"))
    assert names == ["iperf3-bidir.fwd.json", "iperf3-bidir.rev.json", "iperf3-maerts.json"]
    data = json.loads((out / "iperf3-maerts.json").read_text())
    assert data["start"]["connected"][0]["local_port"] == 5201  # the server sends
    assert data["start"]["connected"][0]["local_host"] == "10.0.0.2"


def test_no_iperf3_file_for_application_flows(tmp_path_factory):
    _, out = run_dir(tmp_path_factory, "builtin:rr", "rr", ["duration=2s"])
    assert not list(out.glob("iperf3-*.json"))
    assert (out / "run.flent.gz").is_file()


def test_cli(two_bulk, tmp_path):
    _, out = two_bulk
    runner = CliRunner()
    done = runner.invoke(app, ["export", "iperf3", str(out), "--flow", "a", "-o", "-"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output) == json.loads((out / "iperf3-a.json").read_text())
    done = runner.invoke(app, ["export", "iperf3", str(out), "-o", str(tmp_path / "j"), "--interval", "2s"])
    assert done.exit_code == 0, done.output
    assert sorted(p.name for p in (tmp_path / "j").iterdir()) == ["iperf3-a.json", "iperf3-b.json"]
    assert len(json.loads((tmp_path / "j" / "iperf3-a.json").read_text())["intervals"]) == 2
    done = runner.invoke(app, ["export", "iperf3", str(out), "--flow", "zz"])
    assert done.exit_code == 2
    assert done.output == "error: --flow: no flow named 'zz'; expected a flow name or index: a, b\n"
    done = runner.invoke(app, ["export", "iperf3", str(out), "--interval", "1"])
    assert done.exit_code == 2 and done.output.startswith("error: --interval: ")
