"""tcplab.packetdrill.run, wire, environment, corpus and the CLI, against a fake engine host.

The fake (tests/packetdrill_fakes.py) is a small predictable peer, not a TCP; the scripts
here are written for it. What is checked is the runner's part: the mapping between the
script's numbers and the engine's (sequence offsets, windows, options), packetdrill's
messages, timing, skips and the report files.
"""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from packetdrill_fakes import factory
from tcplab.packetdrill.environment import DEFAULTS_SH, EngineSettings, Unmodelled, parse_commands
from tcplab.packetdrill.host import LivePacket
from tcplab.packetdrill.run import run_script
from tcplab.packetdrill.script import TcpOption, parse_script
from tcplab.packetdrill.wire import Connection, initial_wscale

HANDSHAKE = """\
`../common/defaults.sh`
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0
   +0 bind(3, ..., ...) = 0
   +0 listen(3, 1) = 0
  +.1 < S 0:0(0) win 32792 <mss 1000,sackOK,nop,nop,nop,wscale 7>
   +0 > S. 0:0(0) ack 1 <mss 1460,nop,nop,sackOK,nop,wscale 8>
  +.1 < . 1:1(0) ack 1 win 257
   +0 accept(3, ..., ...) = 4
"""


def script(tmp_path: Path, body: str, name: str = "t.pkt", head: str = HANDSHAKE) -> Path:
    d = tmp_path / "tcp" / "case"
    d.mkdir(parents=True, exist_ok=True)
    p = d / name
    p.write_text(head + textwrap.dedent(body))
    return p


def run(path: Path, **knobs):
    make = factory(**knobs)
    return run_script(path, host_factory=make), make.hosts


# --- sequence, ack and window mapping -------------------------------------------------


def test_handshake_and_data_pass(tmp_path):
    p = script(
        tmp_path,
        """\
   +0 write(4, ..., 3000) = 3000
   +0 > P. 1:3001(3000) ack 1
  +.1 < . 1:1(0) ack 3001 win 257
   +0 %{ assert tcpi_snd_cwnd == 13, tcpi_snd_cwnd }%
""",
    )
    r, hosts = run(p)
    assert r.status == "pass", r.message
    host = hosts[0]
    # negotiate() got what the peer's SYN offered: mss 1000, wscale 7, no TS, SACK
    assert ("negotiate", 1000, 7, False, True) in host.calls
    injected = [c[1] for c in host.calls if c[0] == "inject"]
    syn, ack, data_ack = injected
    assert (syn["syn"], syn["seq"], syn["win_bytes"]) == (True, 0, 32792)  # a SYN's window is raw
    # script ack 1 acks our SYN: engine offset 0; window 257 << 7
    assert (ack["ack_seq"], ack["win_bytes"], ack["seq"]) == (0, 257 << 7, 0)
    assert data_ack["ack_seq"] == 3000  # script 3001 - (isn 0 + 1)


def test_inbound_data_maps_to_offsets_and_ack_back(tmp_path):
    p = script(
        tmp_path,
        """\
  +.1 < P. 1:1001(1000) ack 1 win 257
   +0 > . 1:1(0) ack 1001
   +0 read(4, ..., 2000) = 1000
""",
    )
    r, hosts = run(p)
    assert r.status == "pass", r.message
    data = [c[1] for c in hosts[0].calls if c[0] == "inject"][-1]
    assert (data["seq"], data["end_seq"], data["psh"]) == (0, 1000, True)


def test_nonzero_isns_shift_both_directions(tmp_path):
    head = HANDSHAKE.replace("< S 0:0(0)", "< S 500:500(0)").replace("> S. 0:0(0) ack 1", "> S. 700:700(0) ack 501")
    head = head.replace("< . 1:1(0) ack 1 win 257", "< . 501:501(0) ack 701 win 257")
    p = script(
        tmp_path,
        """\
   +0 write(4, ..., 1000) = 1000
   +0 > P. 701:1701(1000) ack 501
  +.1 < P. 501:601(100) ack 1701 win 257
   +0 > . 1701:1701(0) ack 601
""",
        head=head,
    )
    r, hosts = run(p)
    assert r.status == "pass", r.message
    injected = [c[1] for c in hosts[0].calls if c[0] == "inject"]
    assert (injected[-1]["seq"], injected[-1]["end_seq"], injected[-1]["ack_seq"]) == (100 - 100, 100, 1000)


def test_outbound_window_is_scaled_by_our_wscale(tmp_path):
    p = script(tmp_path, "  +.1 < P. 1:1001(1000) ack 1 win 257\n   +0 > . 1:1(0) ack 1001 win 256\n")
    r, _ = run(p, win_bytes=256 << 8)
    assert r.status == "pass", r.message
    r, _ = run(p, win_bytes=255 << 8)
    assert r.status == "fail"
    assert "live packet field tcp_window: expected: 256 (0x100) vs actual: 255 (0xff)" in r.message


def test_initial_wscale_follows_tcp_select_initial_window():
    # defaults.sh's tcp_rmem[2] = 15 MB: ilog2(15728640) = 23 -> 8, as the corpus's SYN-ACKs say
    assert initial_wscale(15 * 1024 * 1024) == 8
    # Linux's own 6 MB default: ilog2(6291456) = 22 -> 7
    assert initial_wscale(6291456) == 7
    # never below rmem_max (212992: ilog2 17 -> 2) nor above 14
    assert initial_wscale(4096) == 2
    assert initial_wscale(1 << 40) == 14


def test_fin_and_sack_blocks_map_by_the_same_shift():
    c = Connection(local_isn=0, remote_isn=0, peer_syn_seen=True, our_wscale=8, peer_wscale=7)
    pkt = parse_script("0 < F. 1001:1001(0) ack 2001 win 10 <nop,nop,sack 3001:4001>\n").events[0].action
    d = c.inbound(pkt)
    assert (d["fin"], d["seq"], d["end_seq"], d["ack_seq"]) == (True, 1000, 1000, 2000)
    assert d["sack"] == [(3000, 4000)] and d["win_bytes"] == 10 << 7
    live = LivePacket(0, False, True, False, False, True, 0, 0, 1001, 1 << 16, None, None, ((2000, 3000),))
    w = c.to_script(live)
    assert (w.flags, w.seq, w.ack, w.win) == ("F.", 1, 1002, 256)
    assert w.options[-1] == TcpOption("sack", ((2001, 3001),))


# --- options ----------------------------------------------------------------------------


def _syn(tsval=None, tsecr=None, sack=()):
    return LivePacket(0, True, False, False, False, True, 0, 0, 0, 65535, tsval, tsecr, sack)


def test_synack_options_as_linux_writes_them():
    c = Connection(peer_syn_seen=True, syn_wscale=8, peer_wscale=7, ts_ok=True, sack_ok=True)
    kinds = [o.kind for o in c.outbound_options(_syn(tsval=5, tsecr=9))]
    assert kinds == ["mss", "sackOK", "TS", "nop", "wscale"]
    c.ts_ok = False
    assert [o.kind for o in c.outbound_options(_syn())] == ["mss", "nop", "nop", "sackOK", "nop", "wscale"]
    c.peer_wscale = None  # the peer offered no wscale: none in the SYN-ACK
    assert [o.kind for o in c.outbound_options(_syn())] == ["mss", "nop", "nop", "sackOK"]
    assert c.outbound_options(_syn())[0] == TcpOption("mss", (1460,))


def test_active_syn_offers_everything():
    c = Connection(syn_wscale=8)
    opts = c.outbound_options(_syn(tsval=100, tsecr=0))
    assert [o.kind for o in opts] == ["mss", "sackOK", "TS", "nop", "wscale"]
    assert opts[-1].values == (8,)


def test_established_options_ts_then_sack():
    c = Connection(peer_syn_seen=True)
    live = LivePacket(0, False, False, False, False, True, 0, 0, 0, 0, 7, 8, ((10, 20), (30, 40)))
    kinds = [o.kind for o in c.outbound_options(live)]
    assert kinds == ["nop", "nop", "TS", "nop", "nop", "sack"]


def test_bad_option_value_message(tmp_path):
    p = script(tmp_path, "")
    text = p.read_text().replace("nop,wscale 8>", "nop,wscale 9>")
    p.write_text(text)
    r, _ = run(p)
    assert r.status == "fail"
    assert r.message.endswith(
        "t.pkt:7: error handling packet: bad value in outbound TCP option (kind=3): expected: wscale 9 actual: wscale 8"
    )


def test_missing_options_is_a_length_mismatch(tmp_path):
    p = script(tmp_path, "")
    p.write_text(p.read_text().replace(" <mss 1460,nop,nop,sackOK,nop,wscale 8>", ""))
    r, _ = run(p)
    assert r.status == "fail"
    assert "live packet field ipv4_total_length: expected: 40 (0x28) vs actual: 52 (0x34)" in r.message


def test_any_options_accepted(tmp_path):
    p = script(tmp_path, "")
    p.write_text(p.read_text().replace("<mss 1460,nop,nop,sackOK,nop,wscale 8>", "<...>"))
    r, _ = run(p)
    assert r.status == "pass", r.message


def test_ts_ecr_maps_through_the_outbound_ts_val(tmp_path):
    head = HANDSHAKE.replace(
        "<mss 1000,sackOK,nop,nop,nop,wscale 7>", "<mss 1000,sackOK,TS val 50 ecr 0,nop,wscale 7>"
    ).replace("<mss 1460,nop,nop,sackOK,nop,wscale 8>", "<mss 1460,sackOK,TS val 100 ecr 50,nop,wscale 8>")
    head = head.replace("< . 1:1(0) ack 1 win 257", "< . 1:1(0) ack 1 win 257 <nop,nop,TS val 60 ecr 100>")
    r, hosts = run(script(tmp_path, "", head=head))
    assert r.status == "pass", r.message
    final_ack = [c[1] for c in hosts[0].calls if c[0] == "inject"][-1]
    # the script's ecr 100 is the live val the SYN-ACK carried (the fake's clock: 100 ms + 1000)
    assert (final_ack["tsval"], final_ack["tsecr"]) == (60, 1100)
    bad = head.replace("ecr 100>", "ecr 99>")
    r, _ = run(script(tmp_path, "", name="bad.pkt", head=bad))
    assert r.status == "fail"
    assert "unable to infer live TS ecr for script TS ecr 99" in r.message


# --- mismatches, timing, unexpected packets ---------------------------------------------


def test_seq_mismatch_message_is_packetdrills(tmp_path):
    p = script(tmp_path, "   +0 write(4, ..., 1000) = 1000\n   +0 > P. 1:1001(1000) ack 1\n")
    r, _ = run(p, seq_skew=1000)
    assert r.status == "fail"
    assert r.message.endswith(
        "t.pkt:11: error handling packet: live packet field tcp_seq: expected: 1 (0x1) vs actual: 1001 (0x3e9)"
    )
    assert "script packet:  0.200000 P. 1:1001(1000) ack 1" in r.details
    assert "actual packet:  0.200000 P. 1001:2001(1000) ack 1" in r.details


def test_late_packet_is_a_timing_error(tmp_path):
    p = script(tmp_path, "   +0 write(4, ..., 1000) = 1000\n   +0 > P. 1:1001(1000) ack 1\n")
    r, _ = run(p, delay_ns=10_000_000)  # every reply 10 ms late; the SYN-ACK is the first
    assert r.status == "fail"
    assert r.message.endswith(
        "t.pkt:7: error handling packet: timing error: expected outbound packet at 0.100000 sec "
        "but happened at 0.110000 sec; tolerance 0.004000 sec"
    )


def test_tolerance_option_and_argument(tmp_path):
    p = script(tmp_path, "", head="--tolerance_usecs=20000\n" + HANDSHAKE)
    r, _ = run(p, delay_ns=10_000_000)
    assert r.status == "pass", r.message
    p2 = script(tmp_path, "", name="u.pkt")
    r = run_script(p2, tolerance_usecs=20000, host_factory=factory(delay_ns=10_000_000))
    assert r.status == "pass", r.message


def test_unexpected_packet_fails_the_next_expected_line(tmp_path):
    # A packet the script does not list is not reported by itself (nor by packetdrill): the
    # next outbound line is compared with it.
    p = script(tmp_path, "  +.1 < P. 1:1001(1000) ack 1 win 257\n   +0 > . 1:1(0) ack 1001\n")
    r, _ = run(p, extra_packet=True)  # a pure ACK right after the SYN-ACK
    assert r.status == "fail"
    assert r.message.endswith(
        "t.pkt:11: error handling packet: live packet field tcp_ack_seq: expected: 1001 (0x3e9) vs actual: 1 (0x1)"
    )


def test_short_segments_aggregate_like_tso(tmp_path):
    # packetdrill adds following segments to a short one until the line's payload is reached
    # (a pure ACK continuing at the same sequence counts as a zero-length first fragment).
    p = script(tmp_path, "   +0 write(4, ..., 1000) = 1000\n   +0 > P. 1:1001(1000) ack 1\n")
    r, _ = run(p, extra_packet=True)
    assert r.status == "pass", r.message
    strict = script(tmp_path, "   +0 write(4, ..., 1000) = 1000\n   +0 > P. 1:1001(1000) ack 1\n", name="s.pkt")
    strict.write_text("--strict_segments\n" + strict.read_text())
    r, _ = run(strict, extra_packet=True)
    assert r.status == "fail" and "live packet payload: expected 1000 bytes vs actual 0 bytes" in r.message


def test_no_packet_times_out(tmp_path):
    p = script(tmp_path, "   +0 > P. 1:1001(1000) ack 1\n")
    r, _ = run(p)
    assert r.status == "fail"
    assert r.message.endswith("t.pkt:10: error handling packet: Timed out waiting for packet")


def test_assertion_in_code_fails_with_its_line(tmp_path):
    p = script(tmp_path, "   +0 %{ assert tcpi_snd_cwnd == 11, tcpi_snd_cwnd }%\n")
    r, _ = run(p)
    assert r.status == "fail"
    assert r.message.endswith("t.pkt:10: error in Python code: AssertionError: 10")


def test_syscall_result_mismatch(tmp_path):
    p = script(
        tmp_path, "  +.1 < P. 1:1001(1000) ack 1 win 257\n   +0 > . 1:1(0) ack 1001\n   +0 read(4, ..., 2000) = 900\n"
    )
    r, _ = run(p)
    assert r.status == "fail"
    assert r.message.endswith(
        "t.pkt:12: runtime error in read call: Expected result 900 but got 1000 with errno 0 (Success)"
    )


def test_ioctl_siocinq_value(tmp_path):
    body = "  +.1 < P. 1:1001(1000) ack 1 win 257\n   +0 > . 1:1(0) ack 1001\n   +0 ioctl(4, SIOCINQ, [999]) = 0\n"
    r, _ = run(script(tmp_path, body))
    assert r.status == "fail" and r.message.endswith("Bad ioctl optval: expected: 999 actual: 1000")


def test_blocking_read_returns_when_data_arrives(tmp_path):
    body = "   +0...0.100 read(4, ..., 1000) = 1000\n  +.1 < P. 1:1001(1000) ack 1 win 257\n   +0 > . 1:1(0) ack 1001\n"
    r, _ = run(script(tmp_path, body))
    assert r.status == "pass", r.message
    late = body.replace("0.100 read", "0.050 read")
    r, _ = run(script(tmp_path, late, name="late.pkt"))
    assert r.status == "fail"
    assert "timing error: expected system call return at 0.250000 sec but happened at 0.300000 sec" in r.message


def test_nonblocking_read_eagain(tmp_path):
    body = "   +0 fcntl(4, F_SETFL, O_RDWR|O_NONBLOCK) = 0\n   +0 read(4, ..., 1000) = -1 EAGAIN (Resource temporarily unavailable)\n"
    r, _ = run(script(tmp_path, body))
    assert r.status == "pass", r.message


# --- skips ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("   +0 getpeername(4, ..., ...) = 0\n", "system call getpeername not modelled"),
        ("   +0 setsockopt(4, SOL_TCP, TCP_NOTSENT_LOWAT, [1], 4) = 0\n", "setsockopt TCP_NOTSENT_LOWAT not modelled"),
        ("   +0 %{ assert bbr_bw > 0 }%\n", "%{ }% code reading bbr_bw (line 10) not modelled"),
        ("   +0 `sysctl -q net.ipv4.tcp_ecn=3`\n", "sysctl net.ipv4.tcp_ecn=3 not modelled"),  # AccECN
        ("   +0 `tc qdisc replace dev tun0 root fq`\n", "command `tc qdisc replace dev tun0 root fq` not modelled"),
        ("  +.1 < udp (100)\n", "udp packet (line 10) not modelled"),
    ],
)
def test_skips_name_the_feature(tmp_path, body, reason):
    r, hosts = run(script(tmp_path, body))
    assert (r.status, r.message) == ("skip", reason)
    assert hosts == []  # decided before running


def test_a_syn_without_sack_negotiates_no_sack(tmp_path):
    p = script(tmp_path, "   +0 write(4, ..., 1000) = 1000\n   +0 > P. 1:1001(1000) ack 1\n")
    text = p.read_text().replace("<mss 1000,sackOK,nop,nop,nop,wscale 7>", "<mss 1000,nop,wscale 7>")
    p.write_text(text.replace("<mss 1460,nop,nop,sackOK,nop,wscale 8>", "<mss 1460,nop,wscale 8>"))
    r, hosts = run(p)
    assert r.status == "pass", r.message
    assert ("negotiate", 1000, 7, False, False) in hosts[0].calls


def test_sysctl_after_socket_is_skipped_when_it_changes_the_engine(tmp_path):
    r, _ = run(script(tmp_path, "   +0 `sysctl -q net.ipv4.tcp_early_retrans=0`\n"))
    assert (r.status, r.message) == ("skip", "sysctl net.ipv4.tcp_early_retrans=0 after socket() not modelled")


# --- the environment --------------------------------------------------------------------


def test_defaults_and_script_sysctls_reach_the_engine_config(tmp_path):
    head = HANDSHAKE.replace(
        "`../common/defaults.sh`",
        "`../common/defaults.sh\nsysctl -q net.ipv4.tcp_tso_win_divisor=100 net.ipv4.tcp_min_tso_segs=4\n"
        "echo 0 > /sys/module/tcp_cubic/parameters/hystart`",
    )
    r, hosts = run(script(tmp_path, "", head=head))
    assert r.status == "pass", r.message
    cfg = hosts[0].config
    assert cfg["tcp"]["tcp_rmem"] == [4096, 540000, 15 * 1024 * 1024]
    assert cfg["tcp"]["tcp_slow_start_after_idle"] is False
    assert cfg["tcp"]["tcp_min_tso_segs"] == 4 and cfg["tso_win_divisor"] == 100
    assert cfg["tcp"]["mss_bytes"] == 1460 and cfg["cc"] == "cubic"
    assert cfg["cc_params"] == {"hystart": 0}


def test_parse_commands_forms():
    text = (
        '../common/set_sysctls.py /proc/sys/net/ipv4/tcp_wmem="4096 50000 4194304" \\\n  /proc/sys/net/ipv4/tcp_frto=0'
    )
    settings = parse_commands(text)
    assert [(s.name, s.value) for s in settings] == [("tcp_wmem", "4096 50000 4194304"), ("tcp_frto", "0")]
    assert parse_commands("sysctl -q net/ipv4/tcp_pacing_ss_ratio=150")[0].value == "150"
    assert len(parse_commands("../../common/defaults.sh")) == len(DEFAULTS_SH)
    assert parse_commands("ip tcp_metrics flush all > /dev/null 2>&1") == []
    with pytest.raises(Unmodelled, match="ethtool"):
        parse_commands("ethtool -K tun0 tso off")
    env = EngineSettings()
    with pytest.raises(Unmodelled, match="tcp_congestion_control=vegas"):
        env.apply(parse_commands("sysctl -q net.ipv4.tcp_congestion_control=vegas"))


# --- ECN ----------------------------------------------------------------------------------

ECN_HANDSHAKE = (
    HANDSHAKE.replace(
        "`../common/defaults.sh`", "`../common/defaults.sh\nsysctl -q net.ipv4.tcp_ecn=1  # fully enabled`"
    )
    .replace("  +.1 < S 0:0(0)", "  +.1 < SEW 0:0(0)")
    .replace("   +0 > S. 0:0(0)", "   +0 > SE. 0:0(0)")
)


def test_ecn_flags_and_marks_cross_both_ways(tmp_path):
    body = """\
  +.1 < [ce] P. 1:1001(1000) ack 1 win 257
   +0 > [noecn] E. 1:1(0) ack 1001
   +0 < [ect0] PW. 1001:2001(1000) ack 1 win 257
   +0 > . 1:1(0) ack 2001
   +0 write(4, ..., 1000) = 1000
   +0 > [ect0] P. 1:1001(1000) ack 2001
"""
    r, hosts = run(script(tmp_path, body, head=ECN_HANDSHAKE))
    assert r.status == "pass", r.message + r.details
    host = hosts[0]
    # the init command's trailing shell comment is not part of the value
    assert host.config["tcp"]["tcp_ecn"] == [1, 1]
    syn, ack, ce, cwr = [c[1] for c in host.calls if c[0] == "inject"]
    assert (syn["ece"], syn["cwr"], syn["ecn"]) == (True, True, 0)  # no mark: not-ECT
    assert (ack["ece"], ack["cwr"], ack["ecn"]) == (False, False, 0)
    assert (ce["ecn"], cwr["ecn"], cwr["cwr"]) == (3, 2, True)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("> [ect1] P. 1:1001(1000) ack 1", "live packet field ip_ecn: expected: 1 (0x1) vs actual: 2 (0x2)"),
        ("> [noecn] P. 1:1001(1000) ack 1", "live packet field ip_ecn: expected: 0 (0x0) vs actual: 2 (0x2)"),
        ("> PE. 1:1001(1000) ack 1", "live packet field tcp_ece: expected: 1 (0x1) vs actual: 0 (0x0)"),
        ("> PW. 1:1001(1000) ack 1", "live packet field tcp_cwr: expected: 1 (0x1) vs actual: 0 (0x0)"),
    ],
)
def test_an_ecn_mismatch_is_packetdrills_message(tmp_path, line, message):
    body = f"   +0 write(4, ..., 1000) = 1000\n   +0 {line}\n"
    r, _ = run(script(tmp_path, body, head=ECN_HANDSHAKE))
    assert r.status == "fail"
    assert r.message.endswith(f"error handling packet: {message}"), r.message


def test_ect01_takes_either_ect(tmp_path):
    body = "   +0 write(4, ..., 1000) = 1000\n   +0 > [ect01] P. 1:1001(1000) ack 1\n"
    r, _ = run(script(tmp_path, body, head=ECN_HANDSHAKE))
    assert r.status == "pass", r.message
    # without ECN negotiated (defaults.sh: tcp_ecn=0) the data is not-ECT
    r, _ = run(script(tmp_path, body))
    assert r.message.endswith("live packet field ip_ecn: expected: 0x1 or 0x2 vs actual: 0x0"), r.message


def test_an_inbound_ecn_setup_syn_is_refused_with_tcp_ecn_0(tmp_path):
    head = ECN_HANDSHAKE.replace("sysctl -q net.ipv4.tcp_ecn=1", "sysctl -q net.ipv4.tcp_ecn=0")
    r, _ = run(script(tmp_path, "", head=head))
    assert r.message.endswith("live packet field tcp_ece: expected: 1 (0x1) vs actual: 0 (0x0)"), r.message
    r, _ = run(script(tmp_path, "", head=head.replace("> SE. 0:0(0)", "> S. 0:0(0)")))
    assert r.status == "pass", r.message


def test_tcp_ecn_after_socket_reaches_the_host(tmp_path):
    body = """\
   +0 `sysctl -q net.ipv4.tcp_ecn=2`
   +0 `sysctl -q net.ipv4.tcp_ecn=2`
   +0 `sysctl -q net.ipv4.tcp_ecn_fallback=0`
"""
    r, hosts = run(script(tmp_path, body))
    assert r.status == "pass", r.message
    # Linux reads both when it uses them: each change (and only a change) is handed over
    assert [c for c in hosts[0].calls if c[0] == "set_ecn"] == [("set_ecn", 2, True), ("set_ecn", 2, False)]
    env = EngineSettings()
    with pytest.raises(Unmodelled, match="tcp_ecn=4 not modelled"):
        env.apply(parse_commands("sysctl -q net.ipv4.tcp_ecn=4"))


def test_dctcp_is_a_congestion_control_scripts_may_select(tmp_path):
    body = """\
   +0 setsockopt(4, SOL_TCP, TCP_CONGESTION, "dctcp", 5) = 0
   +0 getsockopt(4, SOL_TCP, TCP_CONGESTION, "dctcp", [5]) = 0
"""
    r, hosts = run(script(tmp_path, body))
    assert r.status == "pass", r.message
    assert hosts[0].cc == "dctcp"
    head = HANDSHAKE.replace(
        "`../common/defaults.sh`", "`../common/defaults.sh\nsysctl -q net.ipv4.tcp_congestion_control=dctcp`"
    )
    r, hosts = run(script(tmp_path, "", head=head))
    assert r.status == "pass" and hosts[0].config["cc"] == "dctcp"


def test_aggregated_segments_take_cwr_from_the_first_and_ece_from_the_last():
    # packet.c aggregate_packets(): the last segment's headers, the first one's seq and CWR
    conn = Connection()
    conn.peer_syn_seen = True
    seg = dict(t_ns=0, syn=False, fin=False, rst=False, psh=False, ack=True, ack_seq=0, win_bytes=0)
    seg.update(tsval=None, tsecr=None, sack=())
    first = LivePacket(seq=0, end_seq=1000, cwr=True, ecn=2, **seg)
    last = LivePacket(seq=1000, end_seq=2000, ece=True, ecn=3, **seg)
    wire = conn.to_script(last, first=first)
    assert (wire.flags, wire.seq, wire.payload, wire.ecn) == (".EW", 1, 2000, 3)
    assert conn.to_script(last).flags == ".E"


# --- many scripts: report, junit, CLI ---------------------------------------------------


def _corpus(tmp_path: Path) -> Path:
    script(tmp_path, "   +0 write(4, ..., 1000) = 1000\n   +0 > P. 1:1001(1000) ack 1\n", name="a.pkt")
    script(tmp_path, "   +0 > P. 1:1001(1000) ack 1\n", name="b.pkt")
    script(tmp_path, "   +0 setsockopt(4, SOL_TCP, TCP_NOTSENT_LOWAT, [1], 4) = 0\n", name="c.pkt")
    return tmp_path / "tcp"


def test_report_and_junit_files(tmp_path):
    from tcplab.packetdrill.corpus import run_many, totals_line, write_junit, write_report

    results = run_many([_corpus(tmp_path)], host_factory=factory())
    assert [r.status for r in results] == ["pass", "fail", "skip"]
    assert totals_line([r.status for r in results]) == "3 scripts: 1 pass, 1 fail, 1 skip"
    out = write_report(tmp_path / "report", results)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["totals"] == {"pass": 1, "fail": 1, "skip": 1}
    assert "Timed out waiting for packet" in (out / "b.pkt.txt").read_text()
    junit = write_junit(tmp_path / "j" / "junit.xml", results)
    root = ET.parse(junit).getroot()
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["."]
    cases = {c.get("name"): c for c in suites[0].findall("testcase")}
    assert cases["b.pkt"].find("failure") is not None
    assert cases["c.pkt"].find("skipped").get("message") == "setsockopt TCP_NOTSENT_LOWAT not modelled"
    assert root.get("failures") == "1" and root.get("skipped") == "1"


def test_cli_lines_totals_and_exit_codes(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import tcplab.packetdrill.host as host_mod
    from tcplab.cli import app

    make = factory()
    monkeypatch.setattr(host_mod, "engine_host", make)
    import tcplab.packetdrill.run as run_mod

    monkeypatch.setattr(run_mod, "engine_host", make)
    corpus = _corpus(tmp_path)
    res = CliRunner().invoke(app, ["packetdrill", str(corpus), "--junit", str(tmp_path / "j.xml")])
    lines = res.output.splitlines()
    assert lines[0] == "pass  a.pkt"
    assert lines[1].startswith("fail  b.pkt  ") and lines[1].endswith("Timed out waiting for packet")
    assert lines[2] == "skip  c.pkt  setsockopt TCP_NOTSENT_LOWAT not modelled"
    assert lines[3] == "3 scripts: 1 pass, 1 fail, 1 skip"
    assert res.exit_code == 1 and (tmp_path / "j.xml").exists()
    ok = CliRunner().invoke(app, ["packetdrill", str(corpus / "case" / "a.pkt")])
    assert ok.exit_code == 0, ok.output
    bad = CliRunner().invoke(app, ["packetdrill", str(tmp_path / "nope")])
    assert bad.exit_code == 2 and "error: " in bad.output and "nope" in bad.output


def test_an_engine_error_fails_that_script_only(tmp_path):
    def broken(config):
        raise RuntimeError("engine said no")

    r = run_script(script(tmp_path, ""), host_factory=broken)
    assert r.status == "fail"
    assert r.message.endswith("t.pkt:2: tcplab error: RuntimeError: engine said no")


def test_close_sends_a_fin_and_shutdown_follows_how(tmp_path):
    r, _ = run(script(tmp_path, "   +0 close(4) = 0\n   +0 > F. 1:1(0) ack 1\n"))
    assert r.status == "pass", r.message
    # SHUT_RD: no packet, a read returns 0 at once; SHUT_WR then: the FIN, and a write fails.
    body = (
        "   +0 shutdown(4, SHUT_RD) = 0\n   +0 read(4, ..., 1000) = 0\n"
        "   +0 shutdown(4, SHUT_WR) = 0\n   +0 > F. 1:1(0) ack 1\n"
        "   +0 write(4, ..., 1000) = -1 EPIPE (Broken pipe)\n"
    )
    r, hosts = run(script(tmp_path, body, name="rdwr.pkt"))
    assert r.status == "pass", r.message


def test_inbound_rst_is_skipped(tmp_path):
    r, _ = run(script(tmp_path, "  +.1 < R. 1:1(0) ack 1 win 257\n"))
    assert (r.status, r.message) == ("skip", "inbound RST (line 10) not modelled")


def test_epoll_edge_triggered_reports_once_per_wakeup(tmp_path):
    # epoll_in_edge.pkt's start: EPOLLET reports the writable socket once after the ADD,
    # then nothing until a wakeup; a level-triggered wait that waits is not modelled.
    body = (
        "   +0 epoll_create(1) = 5\n"
        "   +0 epoll_ctl(5, EPOLL_CTL_ADD, 4, {events=EPOLLOUT|EPOLLIN|EPOLLET, fd=4}) = 0\n"
        "   +0 epoll_wait(5, {events=EPOLLOUT, fd=4}, 1, 0) = 1\n"
        "   +0 epoll_wait(5, {events=0, ptr=0}, 1, 0) = 0\n"
    )
    r, _ = run(script(tmp_path, body))
    assert r.status == "pass", r.message
    wrong = body.replace("{events=EPOLLOUT, fd=4}, 1, 0) = 1", "{events=EPOLLIN, fd=4}, 1, 0) = 1")
    r, _ = run(script(tmp_path, wrong, name="w.pkt"))
    assert r.status == "fail"
    assert "epoll_event->events does not match script: expected: 0x1 actual: 0x4" in r.message
    r, _ = run(
        script(
            tmp_path, "   +0 epoll_create(1) = 5\n   +0 epoll_wait(5, {events=0, ptr=0}, 1, 100) = 0\n", name="b.pkt"
        )
    )
    assert r.status == "skip"


def test_a_tun_fifo_limit_is_a_setting_and_other_qdiscs_are_not_modelled():
    from tcplab.packetdrill.environment import Setting, Unmodelled, parse_commands

    assert parse_commands("tc qdisc delete dev tun0 root 2>/dev/null ; tc qdisc add dev tun0 root pfifo limit 0") == [
        Setting("qdisc", "default", ""),
        Setting("qdisc", "pfifo_limit", "0"),
    ]
    assert parse_commands("tc qdisc add dev tun0 root pfifo") == []
    with pytest.raises(Unmodelled, match="fq"):
        parse_commands("tc qdisc replace dev tun0 root fq")
