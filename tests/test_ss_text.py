"""``ss -tin`` texts of a run (tcplab.results.ss): iproute2's format, read back by diagnose's
parser, values from the flows' samples, and diagnose naming a collapse the run shows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tcplab
from tcplab.diagnose import diagnose_paths
from tcplab.diagnose.source import Source
from tcplab.diagnose.ss import parse_ss
from tcplab.engine import run_core
from tcplab.results import Result
from tcplab.results.ss import SsSocket, format_ss, node_address, sockets_at, ss_texts
from tcplab.results.stuck import COLLAPSE

FIXTURES = Path(__file__).parent / "diagnose" / "fixtures"


def _parse(text: str):
    return parse_ss(Source("ss.txt", lambda: __import__("io").BytesIO(text.encode()), len(text), {}))


def _real_sender_line() -> str:
    """The BBR sender's info line of a real ``ss -tinme`` (iproute2 6.1)."""
    lines = (FIXTURES / "ss_loopback_real.txt").read_text().splitlines()
    return next(line for line in lines if line.startswith("\t") and "bytes_sent:" in line)


#: The tokens tcplab prints (a subset of what ss prints: the rest tcplab does not know).
_PRINTED = (
    "bbr",
    "cubic",
    "rtt:",
    "mss:",
    "pmtu:",
    "rcvmss:",
    "advmss:",
    "cwnd:",
    "ssthresh:",
    "bytes_sent:",
    "bytes_retrans:",
    "bytes_acked:",
    "bytes_received:",
    "data_segs_out:",
    "bbr:(",
    "send",
    "pacing_rate",
    "delivery_rate",
    "busy:",
    "rwnd_limited:",
    "sndbuf_limited:",
    "retrans:",
    "minrtt:",
    "snd_wnd:",
)


def _printed_tokens(info_line: str) -> list[str]:
    """The info line's fields that tcplab prints, in order (``send R`` and the rates are
    two words: kept together)."""
    words = info_line.split()
    out, i = [], 0
    while i < len(words):
        w = words[i]
        if w in ("send", "pacing_rate", "delivery_rate"):
            out.append(f"{w} {words[i + 1]}")
            i += 2
            continue
        if w in ("bbr", "cubic") or any(w.startswith(p) for p in _PRINTED if p.endswith((":", "("))):
            out.append(w)
        i += 1
    return out


def test_info_line_is_the_real_ss_line_restricted_to_what_tcplab_knows():
    """The same tcp_info as the real capture gives the same fields, in ss's order, with ss's
    number formats (``%g`` times, raw ``%.0f`` rates with ``-n``, ss's own ``send`` =
    cwnd * mss * 8 / srtt, ``busy``/``rwnd_limited:Xms(P%)``, gains as raw/256)."""
    real = _real_sender_line()
    sock = SsSocket(
        node="n",
        local="127.0.0.1:57744",
        peer="127.0.0.1:45227",
        cc="bbr",
        info={
            "rtt_us": 852,
            "rttvar_us": 1083,
            "mss": 65483,
            "pmtu": 65535,
            "rcvmss": 536,
            "advmss": 65483,
            "cwnd": 72,
            "ssthresh": 8,
            "bytes_sent": 1219761205,
            "bytes_retrans": 201781,
            "bytes_acked": 1219559425,
            "data_segs_out": 20474,
            "bbr": {"bw_bps": 23483555600, "mrtt_us": 3, "pacing_gain": 1.0, "cwnd_gain": 2.0},
            "pacing_rate_bps": 23248720048,
            "delivery_rate_bps": 1182537240,
            "busy_us": 672_000,
            "rwnd_limited_us": 240_000,
            "retrans_total": 5,
            "minrtt_us": 3,
            "snd_wnd": 33028096,
        },
    )
    ours = sock.info_line()
    assert ours.startswith("\t ") and real.startswith("\t ")
    assert _printed_tokens(ours) == _printed_tokens(real)


def test_text_round_trips_through_diagnose_parser():
    socks = [
        SsSocket(
            node="a",
            local="10.0.0.1:32768",
            peer="10.0.0.2:2049",
            cc="bbr",
            info={
                "rtt_us": 412,
                "rttvar_us": 201,
                "mss": 1448,
                "cwnd": 2,
                "ssthresh": 2,
                "bytes_sent": 912345,
                "bytes_retrans": 81234,
                "bytes_acked": 830000,
                "bbr": {"bw_bps": 100000, "mrtt_us": 200, "pacing_gain": 1.25, "cwnd_gain": 2.0},
                "pacing_rate_bps": 99000,
                "delivery_rate_bps": 100000,
                "busy_us": 60_000_000,
                "sndbuf_limited_us": 6_000_000,
                "retrans_total": 60,
                "minrtt_us": 200,
            },
        ),
        SsSocket(
            node="a",
            local="10.0.0.1:5201",
            peer="10.0.0.3:32769",
            cc="cubic",
            info={"mss": 1448, "rcvmss": 1448, "bytes_received": 123, "ssthresh": 2147483647},
        ),
    ]
    parsed = _parse(format_ss(socks))
    assert len(parsed) == 2
    a, b = parsed
    assert (a.state, a.local, a.peer, a.cc) == ("ESTAB", "10.0.0.1:32768", "10.0.0.2:2049", "bbr")
    assert a.values["cwnd"] == 2 and a.values["ssthresh"] == 2
    assert a.values["rtt"] == pytest.approx(0.412) and a.values["rttvar"] == pytest.approx(0.201)
    assert a.values["bytes_acked"] == 830000 and a.values["bytes_retrans"] == 81234
    assert a.values["retrans_total"] == 60
    assert a.bbr == {"bw_bps": 100000, "mrtt": 0.2, "pacing_gain": 1.25, "cwnd_gain": 2.0}
    assert a.values["pacing_rate_bps"] == 99000 and a.values["delivery_rate_bps"] == 100000
    assert a.values["busy_ms"] == 60000 and a.values["sndbuf_limited_pct"] == pytest.approx(10.0)
    assert a.values["minrtt"] == pytest.approx(0.2)
    # ss's own send rate: cwnd * mss * 8 / srtt
    assert a.values["send_bps"] == pytest.approx(2 * 1448 * 8 / 0.412e-3, abs=0.5)  # %.0f
    # ssthresh >= 0xFFFF (initial slow start) is not printed; absent fields stay absent
    assert (b.cc, b.values.get("bytes_received")) == ("cubic", 123)
    assert "ssthresh" not in b.values and "cwnd" not in b.values


def test_state_lines_have_ss_columns_and_a_header():
    text = format_ss([SsSocket(node="a", local="10.0.0.1:32768", peer="10.0.12.200:443", cc="cubic", info={})])
    head, state, info = text.splitlines()
    assert head.split() == ["State", "Recv-Q", "Send-Q", "Local", "Address:Port", "Peer", "Address:Port", "Process"]
    assert state.split() == ["ESTAB", "0", "0", "10.0.0.1:32768", "10.0.12.200:443"]
    assert info == "\t cubic"


def _config(n_flows: int, app_flows: int = 0) -> dict:
    flows = [
        {"name": f"f{i}", "src": 0, "dst": 1, "cc": "cubic", "start_ns": 0, "tcp": {"mss_bytes": 1448}}
        for i in range(n_flows)
    ]
    apps = [{"name": "bc", "flows": list(range(n_flows - app_flows, n_flows)), "spec": {"kind": "broadcast"}}]
    cfg = {
        "duration_ns": 10_000_000_000,
        "nodes": [{"name": "a"}, {"name": "b"}],
        "flows": flows,
    }
    if app_flows:
        cfg["apps"] = apps
    return cfg


def _series(n_flows: int, times_ns: list[int]) -> pd.DataFrame:
    rows = []
    for t in times_ns:
        for f in range(n_flows):
            rows.append(
                {
                    "t_ns": t,
                    "flow": f,
                    "cwnd": 10 + t // 1_000_000_000,
                    "ssthresh": 2147483647,
                    "srtt_us": 1000,
                    "rttvar_us": 100,
                    "min_rtt_us": 900,
                    "pacing_rate_bps": 0,
                    "delivery_rate_bps": 0,
                    "bytes_acked": t // 1000,
                    "bytes_received": t // 1000,
                    "retrans_segs": 0,
                    "snd_wnd_bytes": 64000 + t // 1_000_000,
                    "bbr_bw_bps": 0,
                    "pacing_gain": 0.0,
                    "cwnd_gain": 0.0,
                }
            )
    return pd.DataFrame(rows)


def test_values_are_the_last_sample_at_or_before_t():
    cfg = _config(1)
    ts = _series(1, [0, 1_000_000_000, 2_000_000_000, 3_000_000_000])
    at = sockets_at(cfg, pd.DataFrame(), ts, at_ns=2_500_000_000)
    (sender,) = at["a"]
    assert sender.info["cwnd"] == 12 and sender.info["bytes_acked"] == 2_000_000
    assert sender.info["snd_wnd"] == 66000 and sender.info_line().endswith(" snd_wnd:66000")
    (receiver,) = at["b"]
    assert receiver.info["bytes_received"] == 2_000_000 and "cwnd" not in receiver.info
    assert sender.local == f"{node_address(0)}:32768" and sender.peer == f"{node_address(1)}:5201"
    assert (receiver.local, receiver.peer) == (sender.peer, sender.local)


def test_sockets_of_a_large_app_are_left_out():
    """An app with more than 16 connections is not sampled (summary.json folds it): ss lists
    only the other flows' sockets, and nothing about the app's connections."""
    cfg = _config(20, app_flows=17)
    ts = _series(20, [0, 1_000_000_000])
    text = ss_texts(cfg, pd.DataFrame(), ts)
    socks = _parse(text["a"])
    assert len(socks) == 3 and all(s.peer.endswith(":5201") for s in socks)
    assert ":443" not in text["a"] + text["b"]


def test_node_addresses_are_distinct():
    addrs = [node_address(i) for i in range(2000)]
    assert len(set(addrs)) == len(addrs)
    assert all(0 < int(a.split(".")[3]) < 255 for a in addrs)


# ---------------------------------------------------------------- from the engine


def _collapse_run(real_core) -> Result:  # noqa: ANN001
    """Four CUBIC connections on a short path with heavy random loss (20 % both ways): RTOs
    and repeated recovery drive ssthresh to its floor of 2 (tcp_cubic's recalc_ssthresh /
    tcp_reno_ssthresh floor), the seed 000 picture."""
    data = {
        "name": "collapse",
        "duration": "10s",
        "hosts": {"c": {}, "s": {}},
        "links": [{"between": ["c", "s"], "rate": "100Mbit", "delay": "250us", "loss": "20%"}],
        "flows": [{"from": "s", "to": "c", "cc": "cubic"} for _ in range(4)],
    }
    sc = tcplab.load_scenario(data)
    config = sc.to_core()
    return Result(sc, config, run_core(config, core=real_core))


@pytest.mark.engine
def test_end_of_run_texts_hold_the_flows_totals_and_last_samples(real_core, tmp_path):
    r = _collapse_run(real_core)
    out = r.write(tmp_path / "run", plots=False)
    socks = {s.local: s for s in _parse((out / "ss-tin-s.txt").read_text())}
    assert len(socks) == 4
    last = r.timeseries.groupby("flow_name").tail(1).set_index("flow_name")
    for i, row in enumerate(r.flows.to_dict("records")):
        s = socks[f"{node_address(1)}:{32768 + i}"]
        assert s.values["bytes_sent"] == row["bytes_sent"] and s.values["bytes_acked"] == row["bytes_acked"]
        assert s.values.get("retrans_total", 0) == row["retrans_segs"]
        assert s.values["cwnd"] == last.loc[row["name"], "cwnd"]
        assert s.values["rtt"] == pytest.approx(last.loc[row["name"], "srtt_us"] / 1000)
    received = {s.key: s for s in _parse((out / "ss-tin-c.txt").read_text())}
    assert sum(s.values["bytes_received"] for s in received.values()) == r.flows["bytes_received"].sum()


@pytest.mark.engine
def test_diagnose_names_the_collapse_the_run_detector_found(real_core, tmp_path):
    """At a moment inside a cwnd-collapse episode of the run detector, ss as at then shows
    cwnd <= 2 and ssthresh <= 2 and diagnose names cwnd-collapse: replay and diagnoser agree.
    At the same moment of a healthy run (no loss), it does not."""
    from tcplab.results.capture import write_capture

    r = _collapse_run(real_core)
    episodes = [e for e in r.summary["stuck"] if e["kind"] == COLLAPSE]
    assert episodes
    e = episodes[0]
    t_s = round((e["start_s"] + e["end_s"]) / 2, 1)
    cap = write_capture(r, tmp_path / "captures" / f"x-at-{t_s:g}s", t_s)
    _host, findings = diagnose_paths([cap])
    collapse = [f for f in findings if f.id == "cwnd-collapse"]
    assert collapse and collapse[0].data["collapsed"] >= 1
    # the capture's ss agrees with the series at that moment
    ts = r.timeseries
    at = ts[ts["t_ns"] <= int(t_s * 1e9)].groupby("flow").tail(1)
    collapsed_in_series = int(((at["cwnd"] <= 2) & (at["ssthresh"] <= 2)).sum())
    assert collapse[0].data["collapsed"] == collapsed_in_series
    assert "as at t = " in (cap / "README.txt").read_text()
    assert json.loads((cap / ".tcplab-run").read_text())["kind"] == "capture"

    healthy = _collapse_run_without_loss(real_core)
    out = healthy.write(tmp_path / "healthy", plots=False)
    assert "cwnd-collapse" not in [f.id for f in diagnose_paths([out])[1]]
    cap = write_capture(healthy, tmp_path / "captures" / "h", t_s)
    assert "cwnd-collapse" not in [f.id for f in diagnose_paths([cap])[1]]


def _collapse_run_without_loss(real_core) -> Result:  # noqa: ANN001
    data = {
        "name": "healthy",
        "duration": "10s",
        "hosts": {"c": {}, "s": {}},
        "links": [{"between": ["c", "s"], "rate": "100Mbit", "delay": "250us"}],
        "flows": [{"from": "s", "to": "c", "cc": "cubic"} for _ in range(4)],
    }
    sc = tcplab.load_scenario(data)
    config = sc.to_core()
    return Result(sc, config, run_core(config, core=real_core))


@pytest.mark.engine
def test_cli_diagnose_of_a_run_directory_names_cwnd_collapse(real_core, tmp_path):
    from typer.testing import CliRunner

    from tcplab.cli import app

    r = _collapse_run(real_core)
    out = r.write(tmp_path / "run", plots=False)
    res = CliRunner().invoke(app, ["diagnose", str(out), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert "cwnd-collapse" in [f["id"] for f in doc["findings"]]
    assert sum(1 for i in doc["inputs"] if i["kind"] == "ss") == 2


def test_capture_refuses_to_replace_other_files(tmp_path):
    from tcplab.results.capture import write_capture

    d = tmp_path / "mine"
    d.mkdir()
    (d / "notes.txt").write_text("keep")
    with pytest.raises(FileExistsError):
        write_capture(None, d, 1.0)  # type: ignore[arg-type]
    assert (d / "notes.txt").read_text() == "keep"


def test_series_dtype_uint64_times_compare():
    """The engine's t_ns is uint64: the cut at t must not overflow or cast oddly."""
    cfg = _config(1)
    ts = _series(1, [0, 5_000_000_000])
    ts["t_ns"] = ts["t_ns"].astype(np.uint64)
    assert sockets_at(cfg, pd.DataFrame(), ts, at_ns=4_999_999_999)["a"][0].info["cwnd"] == 10


@pytest.mark.engine
def test_crosscheck_at_s_diagnoses_a_capture_of_that_moment(real_core, tmp_path):
    """reproduce's cross-check with ``at_s``: diagnose reads OUT/NAME/captures/LABEL-at-<t>s/
    (ss as at t), and says which directory it read."""
    from tcplab.experiments.base import Crosscheck
    from tcplab.experiments.reproduce import crosscheck_run

    r = _collapse_run(real_core)
    run_dir = r.write(tmp_path / "exp" / "runs" / "lossy", plots=False)
    e = next(e for e in r.summary["stuck"] if e["kind"] == COLLAPSE)
    t_s = round((e["start_s"] + e["end_s"]) / 2, 1)
    check = Crosscheck(run="lossy", expect=("cwnd-collapse",), at_s=t_s)
    res = crosscheck_run(run_dir, check, r, tmp_path / "exp" / "captures")
    assert res.agree and res.capture == tmp_path / "exp" / "captures" / f"lossy-at-{t_s:g}s"
    assert (res.capture / "ss-tin-s.txt").is_file()
    # again: the earlier capture is replaced, not refused
    assert crosscheck_run(run_dir, check, r, tmp_path / "exp" / "captures").agree
    # without at_s the run directory itself is read, and no capture is written
    plain = crosscheck_run(run_dir, Crosscheck(run="lossy", expect=("cwnd-collapse",)))
    assert plain.capture is None and "cwnd-collapse" in plain.found


def test_before_the_end_only_sampled_counters_are_printed():
    """At a t before the end, bytes_sent/bytes_retrans/data_segs_out and the chronographs are
    known only from the totals (end of run): left out, unless the series carries them."""
    cfg = _config(1)
    ts = _series(1, [0, 1_000_000_000, 2_000_000_000])
    flows = pd.DataFrame(
        [
            {
                "name": "f0",
                "end_s": 10.0,
                "bytes_sent": 9_999,
                "bytes_retrans": 10,
                "bytes_acked": 9_000,
                "bytes_received": 9_000,
                "data_segs_out": 7,
                "retrans_segs": 1,
                "busy_ms": 10_000.0,
                "rwnd_limited_ms": 0.0,
                "sndbuf_limited_ms": 0.0,
            }
        ]
    )
    (mid,) = sockets_at(cfg, flows, ts, at_ns=1_500_000_000)["a"]
    assert not {"bytes_sent", "bytes_retrans", "data_segs_out", "busy_us"} & set(mid.info)
    (end,) = sockets_at(cfg, flows, ts)["a"]
    assert (end.info["bytes_sent"], end.info["data_segs_out"], end.info["busy_us"]) == (9_999, 7, 10_000_000)
    ts["bytes_sent"] = ts["t_ns"] // 100
    (mid,) = sockets_at(cfg, flows, ts, at_ns=1_500_000_000)["a"]
    assert mid.info["bytes_sent"] == 10_000_000


@pytest.mark.engine
def test_force_accepts_a_reproduce_tree_with_captures(real_core, tmp_path):
    """A cross-check with at_s writes NAME/captures/LABEL-at-<t>s/ into the reproduce tree:
    ``--force`` must recognise it as tcplab's (and still refuse a file someone added there)."""
    from tcplab.errors import ScenarioError
    from tcplab.results.capture import write_capture
    from tcplab.results.rundir import check_output_dir, write_marker

    out = tmp_path / "out"
    (out / "exp-a").mkdir(parents=True)
    write_marker(out, "reproduce")
    r = _collapse_run(real_core)
    r.write(out / "exp-a" / "runs" / "lossy", plots=False)
    cap = write_capture(r, out / "exp-a" / "captures" / "lossy-at-1s", 1.0)
    assert check_output_dir(out, overwrite=True) == out.resolve()
    (cap / "mine.csv").write_text("x")
    with pytest.raises(ScenarioError, match="--force refused"):
        check_output_dir(out, overwrite=True)
    (cap / "mine.csv").unlink()
    (out / "exp-a" / "captures" / "loose.txt").write_text("x")
    with pytest.raises(ScenarioError, match="not a tcplab capture"):
        check_output_dir(out, overwrite=True)
