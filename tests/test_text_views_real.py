"""tcplab's ``ss -tin`` and ``tc -s qdisc`` texts against what the real tools print (issue 21
item 10): iproute2 6.1 captures in tests/data/real-tools (README there), the engine's
sampled socket queues, RTO and counters, and diagnose finding a slow reader in them."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

import tcplab
from tcplab.diagnose import diagnose_paths
from tcplab.diagnose.source import Source, text_source
from tcplab.diagnose.ss import parse_ss
from tcplab.results.ss import SsSocket, format_ss, sockets_at
from tcplab.results.tc import format_node
from tcplab.results.tcp_options import window_scale

REAL = Path(__file__).parent / "data" / "real-tools"


def _real_lines(name: str) -> list[tuple[str, str]]:
    """(state line, info line) of each socket of a real capture, trailing spaces stripped."""
    lines = [line.rstrip() for line in (REAL / name).read_text().splitlines()[1:]]
    return list(zip(lines[0::2], lines[1::2], strict=True))


def _real_socket(name: str, sender: bool):
    socks = parse_ss(Source.from_path(REAL / name))
    return next(s for s in socks if ("bytes_sent" in s.values) == sender)


def _info_from_real(s) -> dict:  # noqa: ANN001
    """tcp_info as tcplab keeps it (us, bytes, bit/s) from a parsed real socket."""
    v = s.values
    us = lambda ms: int(round(ms * 1000))  # noqa: E731
    info = {
        "wscale": (10, 10),
        "rto_us": us(v["rto"]),
        "rtt_us": us(v["rtt"]),
        "rttvar_us": us(v["rttvar"]),
        "mss": int(v["mss"]),
        "pmtu": int(v["pmtu"]),
        "rcvmss": int(v["rcvmss"]),
        "advmss": int(v["advmss"]),
        "cwnd": int(v["cwnd"]),
        "ssthresh": int(v.get("ssthresh", 0x7FFFFFFF)),
        "bytes_sent": int(v.get("bytes_sent", 0)),
        "bytes_acked": int(v.get("bytes_acked", 0)),
        "bytes_received": int(v.get("bytes_received", 0)),
        "data_segs_out": int(v.get("data_segs_out", 0)),
        "pacing_rate_bps": int(v["pacing_rate_bps"]),
        "delivery_rate_bps": int(v.get("delivery_rate_bps", 0)),
        "minrtt_us": us(v["minrtt"]),
        "snd_wnd": int(v.get("snd_wnd", 0)),
    }
    if "busy_ms" in v:
        info["busy_us"] = us(v["busy_ms"])
        info["rwnd_limited_us"] = us(v["rwnd_limited_ms"])
    info["bbr"] = {
        "bw_bps": int(s.bbr["bw_bps"]),
        "mrtt_us": us(s.bbr["mrtt"]),
        "pacing_gain": s.bbr.get("pacing_gain", 0.0),
        "cwnd_gain": s.bbr.get("cwnd_gain", 0.0),
    }
    return info


def test_sender_info_line_is_the_real_ss_tin_line():
    """Given the tcp_info of the real sender, tcplab prints ss -tin's line: the same fields
    in iproute2's order (tcp_stats_print(): cc, wscale, rto, rtt, ...) and formats, minus the
    fields tcplab does not know; no `ts sack` (ss prints them only with -o or -e)."""
    real = _real_socket("ss-tin-slow-reader.txt", sender=True)
    (state, line) = next(p for p in _real_lines("ss-tin-slow-reader.txt") if "bytes_sent:" in p[1])
    ours = SsSocket(node="n", local=real.local, peer=real.peer, cc="bbr", info=_info_from_real(real)).info_line()
    known = ("segs_out:", "segs_in:", "lastsnd:", "lastrcv:", "lastack:", "delivered:", "rcv_space:")
    known += ("rcv_ssthresh:", "notsent:")
    expect = " ".join(w for w in line.split() if not w.startswith(known))
    assert ours.split() == expect.split()
    assert ours.split()[:3] == ["bbr", "wscale:10,10", "rto:212"]
    assert "ts" not in ours.split() and "sack" not in ours.split()


def test_ts_and_sack_are_printed_only_with_o():
    """The real tool: `ss -tin` has no `ts sack`, `ss -tino` has them (show_options)."""
    for _state, line in _real_lines("ss-tin-slow-reader.txt"):
        assert line.split()[0] == "bbr"
    for _state, line in _real_lines("ss-tino-slow-reader.txt"):
        assert line.split()[:3] == ["ts", "sack", "bbr"]


def test_receiver_line_holds_what_the_engine_knows_in_ss_order():
    real_state, real_line = next(p for p in _real_lines("ss-tin-slow-reader.txt") if "bytes_received:" in p[1])
    sock = SsSocket(
        node="n",
        local="127.0.0.1:5201",
        peer="127.0.0.1:54662",
        recv_q=62464,
        cc="bbr",
        info={"wscale": (10, 10), "mss": 32768, "advmss": 65483, "bytes_received": 8956416},
    )
    ours = sock.info_line().split()
    real = real_line.split()
    assert ours == [w for w in real if w in ours]  # a subsequence: the same order
    assert ours[:2] == ["bbr", "wscale:10,10"]
    assert format_ss([sock]).splitlines()[1].split()[:3] == real_state.split()[:3] == ["ESTAB", "62464", "0"]


def test_state_lines_and_header_are_the_real_ones():
    """Columns as wide as their widest value (ss >= 4.17 renders a table), Recv-Q then Send-Q."""
    real = [ln.rstrip() for ln in (REAL / "ss-tin-slow-reader.txt").read_text().splitlines()]
    socks = [
        SsSocket(node="n", local="127.0.0.1:5201", peer="127.0.0.1:54662", recv_q=62464, cc="bbr"),
        SsSocket(node="n", local="127.0.0.1:54662", peer="127.0.0.1:5201", send_q=3572736, cc="bbr"),
    ]
    ours = format_ss(socks).splitlines()
    assert [ours[0], ours[1], ours[3]] == [real[0], real[1], real[3]]


def test_rto_as_ss_prints_it():
    """tcp_show_info(): rto is tcpi_rto / 1000 with %g, left out at the old initial 3 s."""
    line = lambda us: SsSocket(node="n", local="a:1", peer="b:2", cc="cubic", info={"rto_us": us}).info_line()  # noqa: E731
    assert line(204_000).split() == ["cubic", "rto:204"]
    assert line(212_500).split() == ["cubic", "rto:212.5"]
    assert line(3_000_000).split() == ["cubic"]
    assert SsSocket(node="n", local="a:1", peer="b:2", info={"rto_us": 400_000, "backoff": 1}).info_line().split() == [
        "rto:400",
        "backoff:1",
    ]


# ---------------------------------------------------------------- from the engine


def _slow_reader(real_core, duration: str = "6s"):  # noqa: ANN001
    from tcplab.engine import run_core
    from tcplab.results import Result

    sc = tcplab.load_scenario("builtin:slow-reader", overrides=[f"duration={duration}"])
    config = sc.to_core()
    return Result(sc, config, run_core(config, core=real_core))


@pytest.mark.engine
def test_engine_samples_the_socket_queues_rto_and_tcp_info_counters(real_core):
    r = _slow_reader(real_core)
    ts = r.timeseries
    for col in ("recv_q_bytes", "send_q_bytes", "rto_us", "backoff", "bytes_sent", "data_segs_out", "busy_us"):
        assert col in ts.columns, col
    by = {name: g for name, g in ts.groupby("flow_name")}
    # the readers that cannot keep up leave bytes unread; the one reading at once never does
    assert by["rate-reader"]["recv_q_bytes"].max() > 0 and by["burst-reader"]["recv_q_bytes"].max() > 0
    assert by["fast-reader"]["recv_q_bytes"].max() == 0
    # tcp_info's counters only grow, and end at the flow's totals or below
    for name, g in by.items():
        total = r.flows.set_index("name").loc[name]
        for col, tot in (("bytes_sent", "bytes_sent"), ("data_segs_out", "data_segs_out")):
            assert g[col].is_monotonic_increasing and g[col].iloc[-1] <= total[tot], (name, col)
        assert g["busy_us"].is_monotonic_increasing and g["busy_us"].iloc[-1] <= total["busy_ms"] * 1000
        # Linux's RTO: at least TCP_RTO_MIN (200 ms) once an RTT was measured
        assert (g["rto_us"] >= 200_000).all()
        # Send-Q: written and not yet acknowledged, so at least what is in flight
        assert (g["send_q_bytes"] >= 0).all()


@pytest.mark.engine
def test_ss_texts_show_recv_q_wscale_rto_and_the_counters_at_t(real_core):
    r = _slow_reader(real_core)
    at_ns = 3_000_000_000
    socks = sockets_at(r.config, r.flows, r.timeseries, at_ns)
    ts = r.timeseries[r.timeseries["t_ns"] <= at_ns].groupby("flow_name").tail(1).set_index("flow_name")
    wscale = window_scale(r.config["flows"][0].get("tcp") or {})
    receiver = {s.peer: s for s in socks["receiver"]}
    for s in socks["sender"]:
        name = next(f["name"] for i, f in enumerate(r.config["flows"]) if s.local.endswith(f":{32768 + i}"))
        row = ts.loc[name]
        line = s.info_line().split()
        assert line[1] == f"wscale:{wscale},{wscale}" and line[2] == f"rto:{row['rto_us'] / 1000:g}"
        assert f"bytes_sent:{int(row['bytes_sent'])}" in line
        assert f"data_segs_out:{int(row['data_segs_out'])}" in line
        assert f"busy:{int(row['busy_us']) // 1000}ms" in line
        assert s.send_q == int(row["send_q_bytes"])
        rcv = receiver[s.local]
        assert rcv.recv_q == int(row["recv_q_bytes"]) and rcv.info_line().split()[1] == f"wscale:{wscale},{wscale}"
    text = format_ss(socks["receiver"])
    parsed = parse_ss(text_source(text, "ss.txt"))
    assert sorted(p.recv_q for p in parsed) == sorted(int(ts.loc[n, "recv_q_bytes"]) for n in ts.index)


@pytest.mark.engine
def test_diagnose_finds_the_slow_reader_in_tcplabs_own_ss_text(real_core, tmp_path):
    """builtin:slow-reader: the senders are rwnd_limited and their readers hold unread data
    (Recv-Q > 0), so diagnose names the receiver application, not the buffer sizes."""
    r = _slow_reader(real_core, duration="20s")
    out = r.write(tmp_path / "run", plots=False)
    _host, found = diagnose_paths([out])
    by_id = {f.id: f for f in found}
    f = by_id["rwnd-limited"]
    assert f.data["slow_reader"] and "receiver application reading slowly" in f.summary
    recv = parse_ss(Source.from_path(out / "ss-tin-receiver.txt"))
    assert f.data["recv_q_bytes"] == max(s.recv_q for s in recv) > 0


def test_old_run_directories_without_the_new_columns_still_print():
    """A time series written before the engine sampled the queues: Recv-Q/Send-Q print 0 and
    rto is left out, as before."""
    cfg = {
        "duration_ns": 10_000_000_000,
        "nodes": [{"name": "a"}, {"name": "b"}],
        "flows": [{"name": "f0", "src": 0, "dst": 1, "cc": "cubic", "start_ns": 0, "tcp": {"mss_bytes": 1448}}],
    }
    ts = pd.DataFrame([{"t_ns": 0, "flow": 0, "cwnd": 10, "ssthresh": 2147483647, "srtt_us": 1000}])
    (s,) = sockets_at(cfg, pd.DataFrame(), ts)["a"]
    assert s.send_q == 0 and "rto:" not in s.info_line()


# ---------------------------------------------------------------- tc -s qdisc


def _tbf_link(child: dict | None = None) -> tuple[dict, dict]:
    cfg = {"kind": "tbf", "rate_bps": 10_000_000, "burst_bytes": 32768, "limit_bytes": 532768}
    if child is not None:
        cfg["child"] = child
    stats = {"sent_bytes": 1514000, "sent_packets": 1000, "drops": 42, "backlog_bytes": 0, "backlog_packets": 0}
    link = {"qdisc": "tbf", **stats, "overlimits": 150, "requeues": 0, "xstats": {}}
    link["child"] = {"qdisc": (child or {}).get("kind", "bfifo"), **stats, "overlimits": 0, "requeues": 0}
    config = {"nodes": [{"name": "a"}, {"name": "b"}], "links": [{"from": 0, "to": 1, "queue": cfg}]}
    return config, link


def test_tc_text_hides_tbfs_default_child_as_tc_does():
    """Real tc: `tc -s qdisc show` lists the tbf only; `show invisible` adds its default bfifo
    0:, whose drops are the tbf's own again (tests/data/real-tools/tc-s-qdisc*-tbf.txt)."""
    real = (REAL / "tc-s-qdisc-tbf.txt").read_text()
    real_invisible = (REAL / "tc-s-qdisc-invisible-tbf.txt").read_text()
    assert "qdisc bfifo 0:" not in real and "qdisc bfifo 0: dev d0 parent 1:1" in real_invisible
    config, link = _tbf_link()
    text = format_node(config, [link], "a")
    assert [ln.split()[:3] for ln in text.splitlines() if ln.startswith("qdisc")] == [["qdisc", "tbf", "1:"]]
    dropped = sum(int(m) for m in re.findall(r"dropped (\d+),", text))
    assert dropped == 42  # the tbf's drops, counted once
    invisible = format_node(config, [link], "a", invisible=True)
    assert "qdisc bfifo 0: dev eth0 parent 1:1 limit 532768b" in invisible


def test_tc_text_shows_a_child_the_scenario_configured():
    """A child qdisc added with `tc qdisc add ... parent 1:1 handle 10:` is visible."""
    config, link = _tbf_link(child={"kind": "pfifo", "limit_packets": 100})
    text = format_node(config, [link], "a")
    assert "qdisc pfifo 10: dev eth0 parent 1:1 limit 100p" in text


@pytest.mark.engine
def test_tcplab_ss_at_t_prints_the_sampled_counters(real_core, tmp_path):
    """`tcplab ss RUN --at T`: bytes_sent, data_segs_out and busy as they were at T."""
    from typer.testing import CliRunner

    from tcplab.cli import app

    r = _slow_reader(real_core)
    out = r.write(tmp_path / "run", plots=False)
    done = CliRunner().invoke(app, ["ss", str(out), "--at", "3s", "rate-reader"])
    assert done.exit_code == 0, done.output
    ts = r.timeseries
    row = ts[(ts["t_ns"] <= 3_000_000_000) & (ts["flow_name"] == "rate-reader")].iloc[-1]
    words = done.output.split()
    assert f"bytes_sent:{int(row['bytes_sent'])}" in words and f"data_segs_out:{int(row['data_segs_out'])}" in words
    assert f"busy:{int(row['busy_us']) // 1000}ms" in words
    assert int(row["recv_q_bytes"]) > 0 and str(int(row["recv_q_bytes"])) in words  # the receiver's Recv-Q
