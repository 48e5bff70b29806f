"""The packetdrill script parser (tcplab.packetdrill.script).

Unit tests on short scripts written here (not copied from the corpus), one construct at a
time, then the corpus: every ``*.pkt`` of google/packetdrill under ``gtests/net`` must parse.
The corpus is read from ``$TCPLAB_PACKETDRILL_DIR`` (or ``$TCPLAB_PACKETDRILL``), else
``../shared/packetdrill`` beside the project; the corpus test is skipped, saying so, without it.
"""

from __future__ import annotations

import collections
import os
import re
from pathlib import Path

import pytest

from tcplab.packetdrill.script import (
    DEFAULT_TOLERANCE_PERCENT,
    DEFAULT_TOLERANCE_USECS,
    UNSUPPORTED_FEATURES,
    Array,
    BinaryOp,
    Call,
    Code,
    Command,
    Ellipsis,
    EventTime,
    Field,
    IcmpPacket,
    Int,
    IpInfo,
    Script,
    ScriptError,
    String,
    Struct,
    Symbol,
    Syscall,
    TcpOption,
    TcpPacket,
    UdpPacket,
    parse_file,
    parse_script,
)

PROLOGUE = "0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n"


def parse(text: str, **kwargs) -> Script:
    return parse_script(text, "t.pkt", **kwargs)


def last(text: str):
    """The action of the last event of PROLOGUE + text."""
    return parse(PROLOGUE + text).events[-1].action


def error(text: str, **kwargs) -> str:
    with pytest.raises(ScriptError) as caught:
        parse(text, **kwargs)
    message = str(caught.value)
    assert "\n" not in message
    assert re.fullmatch(r"t\.pkt:\d+: .+; expected .+", message), message
    return message


def features(script: Script) -> set[str]:
    return {re.sub(r" \(line \d+\)$", "", entry) for entry in script.unsupported}


# --- the script's parts -------------------------------------------------------------------


def test_options_init_events_and_cleanup():
    script = parse(
        "--tolerance_usecs=10000\n"
        "--strict_segments\n"
        "--local_ip=192.168.7.1\n"
        "`./setup.sh\n"
        "sysctl -q net.ipv4.tcp_sack=0   # no SACK here\n"
        'sysctl -q net.ipv4.tcp_rmem="4096 87380 6291456"`\n'
        "\n"
        "0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n"
        "+.2 close(3) = 0\n"
        "`echo done`\n"
    )
    assert script.path == "t.pkt"
    assert script.options == {"tolerance_usecs": "10000", "strict_segments": "", "local_ip": "192.168.7.1"}
    assert script.init_command == (
        './setup.sh\nsysctl -q net.ipv4.tcp_sack=0   # no SACK here\nsysctl -q net.ipv4.tcp_rmem="4096 87380 6291456"'
    )
    assert [event.line for event in script.events] == [8, 9]
    assert [type(event.action) for event in script.events] == [Syscall, Syscall]
    assert script.cleanup_command == "echo done"
    assert script.unsupported == ()
    assert script.tolerance_usecs == 10000
    assert script.tolerance_percent == DEFAULT_TOLERANCE_PERCENT


def test_tolerance_defaults_are_packetdrills():
    script = parse(PROLOGUE)
    assert (script.tolerance_usecs, script.tolerance_percent) == (4000, 12.5)
    assert (DEFAULT_TOLERANCE_USECS, DEFAULT_TOLERANCE_PERCENT) == (4000, 12.5)
    assert parse("--tolerance_percent=25\n" + PROLOGUE).tolerance_percent == 25.0


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("--tolerance_usecs=0\n", "found --tolerance_usecs=0; expected a positive number"),
        ("--tolerance_percent=12.5\n", "no decimal point"),
        ("--tolerance_percent=101\n", "a percentage from 0 to 100"),
        ("--tolerance=5\n", "found the unknown option --tolerance"),
        ("--strict_segments=1\n", "expected --strict_segments without a value"),
        ("--mss\n", "expected --mss=VALUE"),
    ],
)
def test_bad_options(text, needle):
    message = error(text + PROLOGUE)
    assert message.startswith("t.pkt:1: ")
    assert needle in message


def test_command_and_code_events():
    script = parse(
        PROLOGUE + "+0 `sysctl -q net.ipv4.tcp_ecn=1`\n"
        "+.01 %{\n"
        "assert tcpi_snd_cwnd == 10, tcpi_snd_cwnd\n"
        "if tcpi_ca_state:\n"
        "    d = {1: {2}}\n"
        "}%\n"
        "+0 %{   print(tcpi_rtt)\t}%  // a note after the block\n"
    )
    command, block, one_liner = (event.action for event in script.events[1:])
    assert command == Command("sysctl -q net.ipv4.tcp_ecn=1")
    assert block == Code("\nassert tcpi_snd_cwnd == 10, tcpi_snd_cwnd\nif tcpi_ca_state:\n    d = {1: {2}}\n")
    assert one_liner == Code("print(tcpi_rtt)")
    assert [event.line for event in script.events] == [1, 2, 3, 8]


def test_code_block_ends_as_packetdrills_lexer_ends_it():
    # "}}%" does not close a block: the first "}" takes the second with it (lexer.l).
    script = parse(PROLOGUE + "+0 %{ s = {1}}}%\n+0 close(3) = 0\n")
    assert script.events[1].action == Code("s = {1}}")
    assert isinstance(script.events[2].action, Syscall)


def test_comments_anywhere_but_inside_strings_and_commands():
    script = parse(
        "// leading comment\n"
        "/* a block\n   comment */ 0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3 // trailing\n"
        '+0 write(3, "a // b /* c */", 14) = 14\n'
        "+0 `echo '// kept'`\n"
        "+0 close(3) /* inline */ = 0\n"
    )
    assert [event.line for event in script.events] == [3, 4, 5, 6]
    assert script.events[1].action.args[1] == String("a // b /* c */")
    assert script.events[2].action == Command("echo '// kept'")
    assert script.events[3].action == Syscall("close", (Int(3),), Int(0))


# --- times --------------------------------------------------------------------------------


def test_time_forms():
    script = parse(
        "0.100 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n"
        "+.1 bind(3, ..., ...) = 0\n"
        "2 listen(3, 1) = 0\n"
        "* > S 0:0(0) <...>\n"
        "0.1~0.2 > S 0:0(0) <...>\n"
        "+.004~+.0085 > S 0:0(0) <...>\n"
        "0.1...0.2 accept(3, ..., ...) = 4\n"
        "+0...0.250 read(4, ..., 10) = 10\n"
        "+1.000001 close(4) = 0\n"
    )
    times = [event.time for event in script.events]
    assert times == [
        EventTime("absolute", 100_000),
        EventTime("relative", 100_000),
        EventTime("absolute", 2_000_000),
        EventTime("any", None),
        EventTime("range", 100_000, 200_000, end_relative=False),
        EventTime("range", 4_000, 8_500, end_relative=True),
        EventTime("absolute", 100_000, blocking_end_us=200_000, end_relative=False),
        EventTime("relative", 0, blocking_end_us=250_000, end_relative=True),
        EventTime("relative", 1_000_001),
    ]
    assert [time.relative for time in times] == [False, True, False, False, False, True, False, True, True]
    # The lexer reads "-0" as the integer 0, which is not negative (parser.y, time).
    assert parse(PROLOGUE + "-0 close(3) = 0\n").events[-1].time == EventTime("absolute", 0)


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        (
            "+0 close(3) = 0\n* close(3) = 0\n",
            3,
            "found * on the system call close; expected * only on an outbound (>) packet",
        ),
        ("0.1~0.2 < S 0:0(0) win 10\n", 2, "found a time range on an inbound (<) packet"),
        ("+.2~+.1 > S 0:0(0)\n", 2, "backwards"),
        ("-1 close(3) = 0\n", 2, "found the negative time -1"),
        ("+.1~.2 > S 0:0(0)\n", 2, "found '.2'; expected '+' and the end of a relative range"),
        ("+0 `cleanup`\n`x`\n+0 close(3) = 0\n", 4, "expected the end of the script after the cleanup command"),
        ("+0 close(3) = 0\n> S 0:0(0)\n", 3, "found '>'; expected an event time"),
    ],
)
def test_time_errors_name_the_line(text, line, needle):
    message = error(PROLOGUE + text)
    assert message.startswith(f"t.pkt:{line}: ")
    assert needle in message


def test_a_script_needs_an_event():
    assert (
        error("`init only`\n")
        == "t.pkt:1: found the end of the script; expected an event: a time (0.100, +.1, *, 0.1~0.2) and an action"
    )


# --- TCP packets --------------------------------------------------------------------------


@pytest.mark.parametrize("flags", ["S", "S.", "P.", "F.", ".", "R", "R.", "-", "SEW", "SE.", "FP.", "U.", "S.2"])
def test_flags_are_kept_as_written(flags):
    packet = last(f"+0 > {flags} 1:1(0)\n")
    assert isinstance(packet, TcpPacket)
    assert packet.flags == flags


def test_tcp_packet_fields():
    inbound = last("+0 < P. 1001:2001(1000) ack 4294967295 win 65535 urg 3 <nop,nop,TS val 7 ecr 9>\n")
    assert inbound == TcpPacket(
        direction="<",
        flags="P.",
        seq_start=1001,
        seq_end=2001,
        payload_bytes=1000,
        ack=4294967295,
        win=65535,
        options=(TcpOption("nop"), TcpOption("nop"), TcpOption("TS", (7, 9))),
        urg=3,
    )
    outbound = last("+0 > 8080 > 40000 . 1:1(0)\n")
    assert (outbound.ack, outbound.win, outbound.ports, outbound.options) == (None, None, (8080, 40000), ())


def test_no_option_list_means_none_and_the_wildcard_means_any():
    assert last("+0 > S 0:0(0)\n").options == ()
    assert last("+0 > S 0:0(0) <...>\n").options is None
    assert "found <...> on an inbound packet" in error(PROLOGUE + "+0 < S 0:0(0) win 10 <...>\n")


def test_every_tcp_option_kind():
    packet = last(
        "+0 < S. 0:0(0) ack 1 win 100 <mss 1460,sackOK,wscale 7,TS val 4294967295 ecr 0,sack 1:1001 2001:3001,nop,nop,eol>\n"
    )
    assert packet.options == (
        TcpOption("mss", (1460,)),
        TcpOption("sackOK"),
        TcpOption("wscale", (7,)),
        TcpOption("TS", (4294967295, 0)),
        TcpOption("sack", ((1, 1001), (2001, 3001))),
        TcpOption("nop"),
        TcpOption("nop"),
        TcpOption("eol"),
    )
    assert [option.length_bytes for option in packet.options] == [4, 2, 3, 10, 18, 1, 1, 1]

    exotic = parse(
        PROLOGUE + "+0 < S 0:10(10) win 100 <FO 0123456789abcdef,nop,nop>\n"
        "+0 > S 0:0(0) <FO,nop,nop>\n"
        "+0 > S 0:0(0) <FOEXP aabbccdd>\n"
        "+0 < S 0:0(0) win 100 <md5 000102030405060708090a0b0c0d0e0f,nop,nop>\n"
        "+0 < . 1:1(0) ack 1 win 100 <ECN e1b 5 ceb 6 e0b 7,nop,nop,nop,nop,nop>\n"
    )
    options = [event.action.options[0] for event in exotic.events[1:]]
    assert options == [
        TcpOption("FO", (), "0123456789abcdef"),
        TcpOption("FO", (), ""),
        TcpOption("FOEXP", (), "aabbccdd"),
        TcpOption("md5", (), "000102030405060708090a0b0c0d0e0f"),
        TcpOption("ECN", (("e1b", 5), ("ceb", 6), ("e0b", 7))),
    ]
    assert [option.length_bytes for option in options] == [10, 2, 8, 18, 11]
    assert exotic.unsupported == (
        "TCP Fast Open option (line 2)",
        "TCP Fast Open SYN data (line 2)",
        "TCP Fast Open option (line 3)",
        "TCP Fast Open option (line 4)",
        "TCP MD5 option (line 5)",
        "AccECN option (line 6)",
    )


@pytest.mark.parametrize(
    ("packet", "needle"),
    [
        ("> S 0:0(0) <mss 1460,sackOK>", "found 6 bytes of TCP options; expected a multiple of 4"),
        (
            "> S 0:0(0) <" + ",".join(["TS val 1 ecr 1"] * 4) + ",nop,nop,nop,nop>",
            "found 44 bytes of TCP options; expected at most 40",
        ),
        ("> S 0:0(0) <mss 65536>", "found mss 65536, out of range; expected 0 to 65535 (16 bits)"),
        ("> S 0:0(0) <wscale 256,nop>", "found window scale shift count 256, out of range"),
        ("> S 0:0(0) <FO abc,nop,nop,nop>", "with an odd number of digits"),
        (
            "> S 0:0(0) <FO COOKIE,nop,nop>",
            "found the TCP Fast Open cookie COOKIE, not hex; expected hex digits, or a -D COOKIE=HEX define",
        ),
        ("> S 0:0(0) <md5 " + "00" * 17 + ",nop,nop>", "found a TCP MD5 digest of 17 bytes; expected at most 16 bytes"),
        ("> S 0:0(0) <ECN ceb 1,nop>", "found 'ceb'; expected e0b N or e1b N after ECN"),
        ("> S 0:0(0) <timestamp 1>", "found 'timestamp'; expected a TCP option"),
        ("> S 0:0(0) <mss 1460", "found the end of the script; expected ',' and another TCP option, or '>'"),
        ("> S 0:10(0)", "found 0:10(0), inconsistent; expected 0:0(0)"),
        ("> S 4294967296:4294967296(0)", "found start sequence 4294967296, out of range"),
        ("> . 1:1(0) ack -1", "found ack -1, out of range"),
        ("> SX 0:0(0)", "found the TCP flag 'X' in SX"),
        ("> SE2 0:0(0)", "found conflicting TCP flags SE2"),
        ("> S 0:0", "found the end of the script; expected '(' and the payload length"),
        ("> 0:0(0)", "found '0'; expected TCP flags"),
        ("< . 1:1(0) ack 1", "found an inbound TCP packet without a window; expected win N"),
        ("< [ect01] . 1:1(0) ack 1 win 10", "found [ect01] on an inbound packet"),
        ("> (tos 16) . 1:1(0)", "found '16'; expected a TOS byte in hex"),
        ("< [ect0] udp (10)", "found [ect0] on a UDP packet"),
    ],
)
def test_packet_errors_name_the_line(packet, needle):
    message = error(PROLOGUE + "\n+0 " + packet + "\n")
    assert message.startswith("t.pkt:3: "), message
    assert needle in message


def test_defines_give_names_their_values():
    # In a script, --define takes a word, a string or a command; -D (defines=) anything.
    text = PROLOGUE + "+0 < S 0:0(0) win WIN <FO TFO_COOKIE,nop,nop>\n+0 write(3, MSG, 3) = 3\n"
    script = parse('--define=MSG="abc"\n' + text, defines={"TFO_COOKIE": "a0b1c2d3", "WIN": "0x100"})
    packet, write = script.events[1].action, script.events[2].action
    assert (packet.win, packet.options[0].hex_blob) == (256, "a0b1c2d3")
    assert write.args[1] == String("abc")
    assert script.options == {"define": 'MSG="abc"'}
    assert "found '0x100'; expected a word, a string or a `command` after NAME=" in error("--define=WIN=0x100\n" + text)


# --- packet extras: recorded, and named as unsupported -----------------------------------


def test_ip_details_and_other_packets_are_recorded_and_named():
    script = parse(
        PROLOGUE + "+0 > [ect0] P. 1:1001(1000) ack 1\n"
        "+0 < [ce, flowlabel 0x12] . 1:1(0) ack 1001 win 100\n"
        "+0 < (tos 0x10) . 1:1(0) ack 1001 win 100\n"
        "+0 < [ttl 3] . 1:1(0) ack 1001 win 100\n"
        "+0 < udp 53 > 4000 (100)\n"
        "+0 < icmp unreachable frag_needed mtu 1200 [1:1001(1000)]\n"
        "+0 < icmp unreachable port_unreachable [udp (20)]\n"
        "+0 < ipv4 10.0.0.1 > 10.0.0.2: gre: . 1:1(0) ack 1 win 100\n"
        "+0 < mpls (label 16, tc 0, [S], ttl 64): . 1:1(0) ack 1 win 100\n"
        "+0 > SEW 0:0(0) <...>\n"
    )
    actions = [event.action for event in script.events[1:]]
    assert [action.ip for action in actions[:4]] == [
        IpInfo(ecn="ect0"),
        IpInfo(ecn="ce", flow_label=0x12),
        IpInfo(tos=0x10),
        IpInfo(ttl=3),
    ]
    assert actions[4] == UdpPacket("<", 100, (53, 4000))
    assert actions[5] == IcmpPacket("<", "unreachable", "frag_needed", 1200, None, "tcp", 1, 1000)
    assert (actions[6].echoed_protocol, actions[6].echoed_payload_bytes) == ("udp", 20)
    assert [header.kind for header in actions[7].encapsulation] == ["ipv4", "gre"]
    assert actions[8].encapsulation[0].fields[0][1][0].bottom_of_stack is True
    # RFC 3168's marks and the E/W flags are run (tcplab models ECN); AccECN is not
    assert script.unsupported == (
        "IPv6 flow label (line 3)",
        "IP TOS (line 4)",
        "IP TTL (line 5)",
        "udp packet (line 6)",
        "icmp packet (line 7)",
        "icmp packet (line 8)",
        "IPv4 outer header (line 9)",
        "GRE encapsulation (line 9)",
        "MPLS label stack (line 10)",
    )
    assert features(script) <= set(UNSUPPORTED_FEATURES)


@pytest.mark.parametrize(
    ("packet", "unsupported"),
    [
        ("> [ect01] SEW 0:0(0) <...>", ()),
        ("< [ce] EW. 1:1001(1000) ack 1 win 10", ()),
        ("< [noecn] E. 1:1(0) ack 1 win 10", ()),
        ("> [ect1] A. 1:1(0) ack 1", ("AccECN TCP flags (line 2)",)),
        ("> S.2 0:0(0) ack 1 <...>", ("AccECN TCP flags (line 2)",)),
        ("< S 0:10(10) win 10", ("TCP Fast Open SYN data (line 2)",)),
    ],
)
def test_rfc3168_ecn_is_runnable_and_accecn_is_named(packet, unsupported):
    script = parse(PROLOGUE + "+0 " + packet + "\n")
    assert script.unsupported == unsupported


def test_socket_features_tcplab_does_not_run_are_named():
    script = parse(
        "--ip_version=ipv6\n--local_ip=fd3d::1\n" + PROLOGUE + "+0 setsockopt(3, SOL_SOCKET, SO_ZEROCOPY, [1], 4) = 0\n"
        "+0 sendto(3, ..., 100, MSG_FASTOPEN, ..., ...) = 100\n"
        "+0 setsockopt(3, SOL_SOCKET, SO_TIMESTAMPING, [SOF_TIMESTAMPING_SOFTWARE], 4) = 0\n"
        "+0 splice(3, ..., 4, ..., 10, 0) = 10\n"
        "+0 setsockopt(3, SOL_TCP, TCP_MD5SIG, ..., 80) = 0\n"
    )
    assert features(script) == {
        "IPv6 addresses",
        "zerocopy",
        "TCP Fast Open socket API",
        "timestamping",
        "splice/sendfile",
        "TCP MD5 socket option",
    }
    assert "zerocopy (line 4)" in script.unsupported
    assert script.options == {"ip_version": "ipv6", "local_ip": "fd3d::1"}


# --- system calls and expressions ---------------------------------------------------------


def test_syscall_results_errno_and_notes():
    assert last("+0 fcntl(3, F_SETFL, O_RDWR|O_NONBLOCK) = 0\n") == Syscall(
        "fcntl", (Int(3), Symbol("F_SETFL"), BinaryOp("|", Symbol("O_RDWR"), Symbol("O_NONBLOCK"))), Int(0)
    )
    failed = last("+0 connect(3, ..., ...) = -1 EINPROGRESS (Operation now in progress)\n")
    assert (failed.result, failed.errno, failed.errno_text, failed.note) == (
        Int(-1),
        "EINPROGRESS",
        "Operation now in progress",
        None,
    )
    noted = last("+0 fcntl(3, F_GETFL) = 0x802 (flags O_RDWR)\n")
    assert (noted.result, noted.errno, noted.note) == (Int(0x802, hex=True), None, "flags O_RDWR")
    both = last("+0 read(3, ..., 10) = -1 EAGAIN (Resource temporarily unavailable) (nonblocking)\n")
    assert (both.errno_text, both.note) == ("Resource temporarily unavailable", "nonblocking")
    assert last("+0 getpid() = ...\n") == Syscall("getpid", (), Ellipsis())


def test_expressions():
    call = last(
        '+0 f(0xffffffffffffffff, -5, "ab" "cd", "pre"..., [], [1, [2]], A|B|0x4, x=y, '
        '{l_onoff=1, l_linger=0}, inet_addr("192.0.2.1")) = 0\n'
    )
    assert call.args == (
        Int(0xFFFFFFFFFFFFFFFF, hex=True),
        Int(-5),
        String("abcd"),
        String("pre", prefix=True),
        Array(()),
        Array((Int(1), Array((Int(2),)))),
        BinaryOp("|", BinaryOp("|", Symbol("A"), Symbol("B")), Int(4, hex=True)),
        Field("x", Symbol("y")),
        Struct("list", (Field("l_onoff", Int(1)), Field("l_linger", Int(0)))),
        Call("inet_addr", (String("192.0.2.1"),)),
    )


def test_structs_are_classified_as_packetdrill_knows_them():
    script = parse(
        PROLOGUE + "+0 setsockopt(3, SOL_SOCKET, SO_LINGER, {onoff=1, linger=0}, 8) = 0\n"
        "+0 poll([{fd=3, events=POLLIN|POLLOUT, revents=POLLOUT}], 1, 0) = 1\n"
        "+0 epoll_wait(5, {events=EPOLLIN, ptr=0}, 1, 0) = 1\n"
        '+0 connect(3, {sa_family=AF_INET, sin_port=htons(8080), sin_addr=inet_addr("192.0.2.1")}, 16) = 0\n'
        "+0 recvmsg(3, {msg_name(...)=...,\n"
        "               msg_iov(1)=[{..., 1000}],\n"
        "               msg_flags=MSG_ERRQUEUE,\n"
        "               msg_control=[{cmsg_level=SOL_IP, cmsg_type=IP_RECVERR,\n"
        "                             cmsg_data={ee_errno=ENOMSG, ee_origin=SO_EE_ORIGIN_TIMESTAMPING,\n"
        "                                        ee_type=0, ee_code=0, ee_info=0, ee_data=3}},\n"
        "                            {cmsg_level=SOL_SOCKET, cmsg_type=SCM_TIMESTAMPING,\n"
        "                             cmsg_data={scm_sec=0, scm_nsec=0}}]}, MSG_ERRQUEUE) = 0\n"
        "+0 getsockopt(3, SOL_TCP, TCP_INFO, {tcpi_state=TCP_ESTABLISHED, ...}, [104]) = 0\n"
    )
    linger, poll, epoll, connect, recvmsg, info = (event.action for event in script.events[1:])
    assert linger.args[3] == Struct("linger", (Field("onoff", Int(1)), Field("linger", Int(0))))
    assert poll.args[0].items[0].kind == "pollfd"
    assert poll.args[0].items[0].get("revents") == Symbol("POLLOUT")
    assert epoll.args[1].kind == "epoll_event"
    sockaddr = connect.args[1]
    assert sockaddr.kind == "sockaddr"
    assert sockaddr.get("sin_port") == Call("htons", (Int(8080),))
    msghdr = recvmsg.args[1]
    assert msghdr.kind == "msghdr"
    assert msghdr.items[0] == Field("msg_name", Ellipsis(), arg=Ellipsis())
    assert msghdr.items[1] == Field("msg_iov", Array((Struct("iovec", (Ellipsis(), Int(1000))),)), arg=Int(1))
    first, second = msghdr.get("msg_control").items
    assert (first.kind, first.get("cmsg_data").kind) == ("cmsg", "sock_extended_err")
    assert second.get("cmsg_data").kind == "scm_timestamping"
    assert info.args[3] == Struct("list", (Field("tcpi_state", Symbol("TCP_ESTABLISHED")), Ellipsis()))
    assert script.events[5].line == 6


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        ("f({fd=3}) = 0", "found the struct {fd=}; expected one of"),
        (
            "f({onoff=1, linger=X}) = 0",
            "found a linger not written as packetdrill writes it; expected integers in a linger",
        ),
        ("f({msg_name(...)=..., msg_iov(...)=[], msg_flags=0}) = 0", "expected msg_iov(N)=[...]"),
        ("f({..., 0x10}) = 0", "expected {..., LENGTH} with a decimal length"),
        ("f(htons(80)) = 0", "found htons() outside a sockaddr"),
        ("f(3 = 0", "found '='; expected ',' and another expression, or ')'"),
        ("f(3) 0", "found '0'; expected '=' and the expected result of f(...)"),
        ("f(3) = -1 EAGAIN", "found the end of the script; expected '(' and the strace text of EAGAIN"),
        ("f(3) =", "found the end of the script; expected an expression"),
        ("f(,) = 0", "found ','; expected an expression"),
        ('f("open) = 0', 'found a " string opened here and never closed'),
        ("f 3", "found '3'; expected '(' and the arguments of f"),
        ("ack(3) = 0", "found 'ack'; expected a system call name, which cannot be one of packetdrill's keywords"),
        ("f(win) = 0", "found 'win'; expected a symbol, which cannot be one of packetdrill's keywords"),
        ("f(3) = -1 EAGAIN (no ack yet)", "found 'ack'; expected words of an strace note, which cannot be"),
        ("f(fd=3) = 0", "found fd=... outside braces; expected fd= only inside its struct"),
    ],
)
def test_syscall_errors_name_the_line(call, needle):
    message = error(PROLOGUE + "+0 " + call + "\n")
    assert message.startswith("t.pkt:2: "), message
    assert needle in message


def test_unclosed_tokens_name_the_line_they_open_on():
    assert error(PROLOGUE + "+0 %{ x = 1\n\n").startswith("t.pkt:2: found a %{ code block opened here and never closed")
    assert error(PROLOGUE + "\n+0 `echo\n").startswith("t.pkt:3: found a ` command opened here and never closed")
    assert error("/* never\n closed\n").startswith("t.pkt:1: found a /* comment opened here")


def test_parse_file_reads_and_names_the_path(tmp_path):
    good = tmp_path / "good.pkt"
    good.write_text(PROLOGUE + "+0 close(3) = 0\n")
    script = parse_file(good)
    assert script.path == str(good)
    assert len(script.events) == 2
    bad = tmp_path / "bad.pkt"
    bad.write_text(PROLOGUE + "+0 > S 0:1(0)\n")
    with pytest.raises(ScriptError, match=rf"^{re.escape(str(bad))}:2: found 0:1\(0\), inconsistent"):
        parse_file(bad)
    assert issubclass(ScriptError, ValueError)


# --- the corpus ---------------------------------------------------------------------------

# The -D defines packetdrill's own runner passes for IPv4 (gtests/net/packetdrill/run_all.py):
# the corpus writes FO TFO_COOKIE and icmp ... CODE and relies on them.
RUN_ALL_IPV4_DEFINES = {
    "TFO_COOKIE": "3021b9d889017eeb",
    "CODE": "host_unreachable",
    "CMSG_LEVEL_IP": "SOL_IP",
    "CMSG_TYPE_RECVERR": "IP_RECVERR",
}


def _corpus_dir() -> Path:
    for variable in ("TCPLAB_PACKETDRILL_DIR", "TCPLAB_PACKETDRILL"):
        if os.environ.get(variable):
            return Path(os.environ[variable])
    return Path(__file__).resolve().parents[1].parent / "shared" / "packetdrill"


def test_every_corpus_script_parses():
    corpus = _corpus_dir()
    scripts_dir = corpus / "gtests" / "net"
    if not (scripts_dir / "tcp").is_dir():
        pytest.skip(f"no packetdrill corpus at {corpus} (set TCPLAB_PACKETDRILL_DIR to a google/packetdrill clone)")
    paths = sorted(scripts_dir.rglob("*.pkt"))
    assert len([path for path in paths if "tcp" in path.relative_to(scripts_dir).parts[:1]]) >= 100

    failures: list[str] = []
    actions: collections.Counter[str] = collections.Counter()
    times: collections.Counter[str] = collections.Counter()
    unsupported: collections.Counter[str] = collections.Counter()
    skippable = 0
    for path in paths:
        try:
            script = parse_file(path, RUN_ALL_IPV4_DEFINES)
        except ScriptError as caught:
            failures.append(str(caught))
            continue
        for event in script.events:
            actions[type(event.action).__name__] += 1
            times[event.time.kind + ("+blocking" if event.time.blocking_end_us is not None else "")] += 1
        found = features(script)
        unsupported.update(found)
        skippable += bool(found)

    print(f"\npacketdrill corpus: {len(paths)} scripts, {len(paths) - len(failures)} parsed, {len(failures)} refused")
    print("  events:", dict(actions.most_common()))
    print("  times:", dict(times.most_common()))
    print(f"  scripts using something tcplab does not run: {skippable}")
    for feature, count in unsupported.most_common():
        print(f"    {count:4d}  {feature}")
    for failure in failures:
        print("  REFUSED", failure)

    assert failures == []
    # The parse saw what the corpus is made of, not an empty shell of it.
    assert actions["TcpPacket"] > 1000 and actions["Syscall"] > 1000 and actions["Code"] > 100
    assert times["range"] > 0 and times["any"] > 0 and times["relative+blocking"] > 0
    assert unsupported["TCP Fast Open option"] > 0 and unsupported["icmp packet"] > 0
    assert 0 < skippable < len(paths)


def test_corpus_cookie_names_need_their_defines():
    scripts_dir = _corpus_dir() / "gtests" / "net" / "tcp"
    if not scripts_dir.is_dir():
        pytest.skip(f"no packetdrill corpus at {_corpus_dir()}")
    users = [path for path in sorted(scripts_dir.rglob("*.pkt")) if "FO TFO_COOKIE" in path.read_text()]
    if not users:
        pytest.skip("this corpus has no script with FO TFO_COOKIE")
    with pytest.raises(ScriptError, match="found the TCP Fast Open cookie TFO_COOKIE, not hex"):
        parse_file(users[0])
