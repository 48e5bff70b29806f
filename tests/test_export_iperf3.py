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
#: Real `iperf3 -c 127.0.0.1 -t 2 [-R | --bidir] -J -T TITLE --extra-data TEXT` (iperf 3.12,
#: Linux), for machines without iperf3: the client sends, the server sends (-R), both.
STORED = {
    "forward": DATA / "iperf3-3.12-tcp.json",
    "reverse": DATA / "iperf3-3.12-tcp-reverse.json",
    "bidir": DATA / "iperf3-3.12-tcp-bidir.json",
}
#: The client's options for each capture.
MODES = {"forward": [], "reverse": ["-R"], "bidir": ["--bidir"]}


@pytest.fixture(scope="module")
def two_bulk(tmp_path_factory):
    return run_dir(tmp_path_factory, TWO_BULK, "two-bulk")


@pytest.fixture(scope="module")
def maerts(tmp_path_factory):
    """builtin:maerts: a maerts flow (the server sends) and a bidir pair (.fwd, .rev)."""
    return run_dir(tmp_path_factory, "builtin:maerts", "maerts", ["duration=3s"])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def real_iperf3() -> dict[str, dict]:
    """Real iperf3 -J captures on loopback (1 s each): ``forward`` (the client sends),
    ``reverse`` (-R: the server sends) and ``bidir`` (--bidir), made now when iperf3 is
    installed (the stored copies otherwise), with -T and --extra-data as tcplab writes them."""
    path = shutil.which("iperf3")
    if path is None:
        return {mode: json.loads(stored.read_text()) for mode, stored in STORED.items()}
    port = str(_free_port())
    server = subprocess.Popen([path, "-s", "-p", port], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out: dict[str, dict] = {}
    try:
        for mode, options in MODES.items():
            command = [path, "-c", "127.0.0.1", "-p", port, "-t", "1", *options, "-J"]
            command += ["-T", "capture", "--extra-data", "loopback"]
            for _ in range(40):  # until the server listens (a refused client says so in its JSON)
                data = json.loads(subprocess.run(command, capture_output=True, text=True, timeout=30).stdout)
                if "error" not in data:
                    out[mode] = data
                    break
                time.sleep(0.05)
            else:
                pytest.fail(f"iperf3 -c {' '.join(options)} on loopback failed: {data.get('error')}")
    finally:
        server.kill()
        server.wait()
    return out


def _kind(v) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"  # cJSON prints integral doubles as integers: one JSON type
    return type(v).__name__


def _shape_diff(real, ours, where="") -> list[str]:
    """Where ``ours`` differs in shape from ``real``: a key missing, a key real has not, a
    different order of keys, a different JSON type; every element of a list of ours against
    the real first element."""
    if _kind(real) != _kind(ours):
        return [f"{where or '/'}: {_kind(ours)} instead of {_kind(real)}"]
    problems = []
    if isinstance(real, dict):
        problems += [f"{where}/{k}: missing" for k in real if k not in ours]
        problems += [f"{where}/{k}: not in iperf3's" for k in ours if k not in real]
        if not problems and list(real) != list(ours):
            problems.append(f"{where}: keys in the order {list(ours)}, iperf3's {list(real)}")
        problems += [p for k in real if k in ours for p in _shape_diff(real[k], ours[k], f"{where}/{k}")]
    elif isinstance(real, list) and real:
        if not ours:
            problems.append(f"{where}: empty")
        for item in ours:
            problems += _shape_diff(real[0], item, f"{where}[]")
    return problems


def _senders(obj, where="") -> dict[str, bool]:
    """Every ``sender`` flag of an iperf3 JSON (not end.streams[]'s ``sender`` totals), by its place."""
    found = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            found.update({f"{where}/{k}": v} if isinstance(v, bool) and k == "sender" else _senders(v, f"{where}/{k}"))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            found.update(_senders(v, f"{where}[{i}]"))
    return found


@pytest.mark.parametrize(
    ("which", "flow", "mode"),
    [
        ("two_bulk", "a", "forward"),
        ("two_bulk", "b", "forward"),
        ("maerts", "bidir.fwd", "forward"),
        ("maerts", "maerts", "reverse"),
        ("maerts", "bidir.rev", "reverse"),
    ],
)
def test_same_shape_as_a_real_iperf3_json(which, flow, mode, request, real_iperf3):
    """A flow its client sends has the shape of `iperf3 -c SERVER -J`; one its server sends
    (maerts, bidir.rev), of `iperf3 -c SERVER -R -J`. Before: maerts was the forward shape
    from the server's side ("connecting" to the client's port, reverse 0)."""
    _, out = request.getfixturevalue(which)
    ours = json.loads((out / f"iperf3-{flow}.json").read_text())
    assert _shape_diff(real_iperf3[mode], ours) == []
    assert ours["intervals"] and ours["end"]["streams"]


def test_reverse_is_the_receiving_clients_view(maerts, real_iperf3):
    """What `iperf3 -c SERVER -R` prints on the client: reverse 1, the client's own socket
    (its ephemeral port to the server's 5201, connecting_to the server) and `sender` false
    everywhere, as in the real -R capture; the client's interval stream has the shape of
    --bidir's reverse stream (the one the client receives)."""
    result, out = maerts
    run = RunData.load(out)
    real = real_iperf3["reverse"]
    bidir_received = next(s for s in real_iperf3["bidir"]["intervals"][0]["streams"] if s["sender"] is False)
    for name in ("maerts", "bidir.rev"):
        ours = json.loads((out / f"iperf3-{name}.json").read_text())
        for data in (real, ours):
            start, connected = data["start"], data["start"]["connected"][0]
            assert start["test_start"]["reverse"] == 1
            assert (connected["remote_host"], connected["remote_port"]) == (
                start["connecting_to"]["host"],
                start["connecting_to"]["port"],
            )
            assert connected["local_port"] != connected["remote_port"]
            senders = _senders(data)
            assert senders and not any(senders.values()), senders
        assert _shape_diff(bidir_received, ours["intervals"][0]["streams"][0]) == []
        # the client's socket as `tcplab ss` shows it on the client node
        connected = ours["start"]["connected"][0]
        state = ss_at(run, 1_000_000_000, name)["client"].splitlines()[1]
        local, peer = state.split()[3:5]
        assert f"{connected['local_host']}:{connected['local_port']}" == local
        assert f"{connected['remote_host']}:{connected['remote_port']}" == peer
        assert connected["remote_port"] == 5201  # iperf3's server port
        # the numbers: the client's intervals are the bytes it received; the end has the
        # server's bytes sent and retransmissions
        row = result.flows[result.flows["name"] == name].iloc[0]
        assert sum(i["sum"]["bytes"] for i in ours["intervals"]) == row["bytes_received"]
        end = ours["end"]
        assert end["sum_received"]["bytes"] == end["streams"][0]["receiver"]["bytes"] == row["bytes_received"]
        assert end["sum_sent"]["bytes"] == row["bytes_sent"] - row["bytes_retrans"]
        assert end["sum_sent"]["retransmits"] == end["streams"][0]["sender"]["retransmits"] == row["retrans_segs"]


def test_stored_captures_are_real_iperf3_outputs():
    for mode, path in STORED.items():
        stored = json.loads(path.read_text())
        assert stored["start"]["version"] == "iperf 3.12"
        assert stored["start"]["test_start"]["reverse"] == int(mode == "reverse")
        assert stored["intervals"][0]["streams"][0]["sender"] is (mode != "reverse")
        assert len(stored["intervals"][0]["streams"]) == (2 if mode == "bidir" else 1)


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
    buffer fixed at 64 KB (tcp_rmem 65536 65536) the window is at most scaling_ratio of it
    (tcp_win_from_space()): 160/256 once the receiver has measured a full-sized segment
    (tcp_measure_rcv_mss(): 1448 B in a 2304 B skb), 40960 bytes, which the immediate
    reader offers once the window has grown; iperf3's max_snd_wnd is the largest sample."""
    window = 65536 * ((1448 << 8) // 2304) >> 8
    scenario = json.loads(json.dumps(TWO_BULK))
    for f in scenario["flows"]:
        f["tcp"] = {"tcp_rmem": [4096, 65536, 65536]}
    result, out = run_dir(tmp_path_factory, scenario, "two-bulk-64k")
    ts = result.timeseries
    for name in ("a", "b"):
        data = json.loads((out / f"iperf3-{name}.json").read_text())
        wnds = [i["streams"][0]["snd_wnd"] for i in data["intervals"]]
        assert all(0 < w <= window for w in wnds), wnds
        assert data["end"]["streams"][0]["sender"]["max_snd_wnd"] == max(wnds) == window
        # each interval's value is the sample at its end
        rows = ts[ts["flow_name"] == name]
        for i in data["intervals"]:
            at = rows[rows["t_s"] <= i["sum"]["end"] + 1e-9].iloc[-1]
            assert i["streams"][0]["snd_wnd"] == int(at["snd_wnd_bytes"])


def test_maerts_run_has_a_file_per_bulk_and_maerts_flow(maerts):
    _, out = maerts
    names = sorted(p.name for p in out.glob("iperf3-*.json"))
    assert names == ["iperf3-bidir.fwd.json", "iperf3-bidir.rev.json", "iperf3-maerts.json"]


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


def test_stdout_takes_the_only_flow(tmp_path_factory, two_bulk):
    """`export iperf3 RUN -o -` prints the run's flow when it has one (before: "'-' prints
    one flow" even then); with several, the one error line lists them."""
    scenario = json.loads(json.dumps(TWO_BULK))
    scenario["flows"] = scenario["flows"][:1]
    _, one = run_dir(tmp_path_factory, scenario, "one-bulk")
    runner = CliRunner()
    done = runner.invoke(app, ["export", "iperf3", str(one), "-o", "-"])
    assert done.exit_code == 0, done.output
    assert done.output == (one / "iperf3-a.json").read_text()
    _, several = two_bulk
    done = runner.invoke(app, ["export", "iperf3", str(several), "-o", "-"])
    assert done.exit_code == 2
    assert done.output.startswith("error: --output: ") and done.output.count("\n") == 1
    assert "a, b" in done.output and "--flow" in done.output
