"""The agent's in-process ``ss -tinH`` lines (tcplab.kernel.ss_line) against ss itself.

The samplers of a kernel run no longer run ``ss`` every sample interval (spawning it stalled
the traffic's ACKs); they read the same kernel structures with getsockopt/ioctl and print
them as iproute2's misc/ss.c does. These tests hold that printing to ss's: the same text for
the same socket, and ss's rules for what it leaves out."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import time

import pytest

from tcplab.kernel.measure import ss_samples
from tcplab.kernel.ss_line import format_bbr, format_socket, read_socket

#: ss prints these as "ms since" (tcpi_last_data_sent, ...): they move between two reads.
_TIMERS = re.compile(r"\b(lastsnd|lastrcv|lastack):\d+")


def _name(addr: tuple[str, int]) -> str:
    return f"{addr[0]}:{addr[1]}"


def _pair(cc: str) -> tuple[socket.socket, socket.socket, socket.socket]:
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen()
    c = socket.socket()
    try:
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    except OSError:
        pytest.skip(f"congestion control {cc} is not available here")
    c.connect(ls.getsockname())
    s, _ = ls.accept()
    return ls, c, s


@pytest.mark.skipif(shutil.which("ss") is None, reason="ss (iproute2) is not installed")
@pytest.mark.parametrize("cc", ["cubic", "bbr"])
def test_lines_are_what_ss_prints_for_the_same_sockets(cc):
    ls, c, s = _pair(cc)
    try:
        c.sendall(b"x" * 2_000_000)
        got = 0
        while got < 2_000_000:
            got += len(s.recv(1 << 20))
        s.sendall(b"y" * 1000)
        c.recv(10)  # 990 bytes left unread: a Recv-Q on the client's line
        time.sleep(0.25)  # past the delayed ACKs: nothing moves but the "ms since" timers
        mine = "".join(
            format_socket(read_socket(x, _name(x.getsockname()), _name(x.getpeername()))) + "\n" for x in (c, s)
        )
        port = c.getsockname()[1]
        real = subprocess.run(
            ["ss", "-tinH", "state", "connected", "(", "sport", "=", f":{port}", "or", "dport", "=", f":{port}", ")"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        for x in (c, s, ls):
            x.close()
    # ss pads its lines with spaces to its screen width: compare the text before them
    mine_lines = sorted(_TIMERS.sub(r"\1:T", line).rstrip() for line in mine.splitlines())
    real_lines = sorted(_TIMERS.sub(r"\1:T", line).rstrip() for line in real.splitlines())
    assert mine_lines == real_lines, set(mine_lines) ^ set(real_lines)
    # and the parser of the kernel runs' samples reads it as it reads ss's
    assert {x.local for x in ss_samples(f"# t_ns=5\n{mine}")[0][1]} == {
        x.local for x in ss_samples(f"# t_ns=5\n{real}")[0][1]
    }


def test_a_closed_or_listening_socket_is_not_listed():
    ls, c, s = _pair("cubic")
    try:
        assert read_socket(ls, "l", "p") is None  # LISTEN: not in ``state connected``
        c.close()
        assert read_socket(c, "l", "p") is None  # gone
    finally:
        s.close()
        ls.close()


def _line(info: dict, **kw) -> str:
    sample = {"local": "10.0.0.1:32768", "peer": "10.0.0.2:5201", "info": info, "cc": "cubic", "bbr": None}
    sample.update({"recv_q": 0, "send_q": 0}, **kw)
    return format_socket(sample)


def test_what_ss_leaves_out():
    # misc/ss.c tcp_show_info(): rto at its pre-sample 3 s, ssthresh at or above 0xFFFF (the
    # "infinite" initial value), reordering at its default 3, a ~0 pacing rate, and zeros
    base = {"state": 1, "rto": 3_000_000, "snd_ssthresh": 0x7FFFFFFF, "reordering": 3, "pacing_rate": (1 << 64) - 1}
    assert _line(base).split("\n")[1] == "\t cubic"
    line = _line({**base, "rto": 204_000, "snd_ssthresh": 30, "reordering": 5, "total_retrans": 4}).split("\n")[1]
    assert line == "\t cubic rto:204 ssthresh:30 retrans:0/4 reordering:5"


def test_state_line_and_rates():
    info = {"state": 1, "rtt": 20_512, "rttvar": 204, "snd_mss": 1448, "snd_cwnd": 10, "pacing_rate": 125_000}
    head, line = _line(info, recv_q=7, send_q=4_194_304).split("\n")
    assert head.split() == ["ESTAB", "7", "4194304", "10.0.0.1:32768", "10.0.0.2:5201"]
    # rtt in ms with %g; ss's own send rate cwnd * mss * 8e6 / rtt_us; rates in bit/s
    assert line == "\t cubic rtt:20.512/0.204 mss:1448 cwnd:10 send 5647426bps pacing_rate 1000000bps"


def test_bbr_info():
    # struct tcp_bbr_info: bw in bytes/s split in two u32, min_rtt in us, gains << 8
    bw_bytes = 12_500_000
    assert format_bbr((bw_bytes, 0, 100_068, 739, 739)) == (
        "bbr:(bw:100000000bps,mrtt:100.068,pacing_gain:2.88672,cwnd_gain:2.88672)"
    )
    assert format_bbr((0, 1, 5, 0, 0)) == f"bbr:(bw:{(1 << 32) * 8}bps,mrtt:0.005)"
