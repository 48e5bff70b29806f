"""ECN (RFC 3168) and DCTCP in ``tcplab packetdrill``, against the engine.

Each script here is written for this file (none is a copy of the corpus's) and says what
Linux v6.12 does, citing the kernel function; the engine's scripted host must do the same:

* negotiation: ``tcp_ecn_send_syn()`` (ECE|CWR on the SYN with ``tcp_ecn=1`` or a
  congestion control that needs ECN), ``tcp_ecn_create_request()`` (accept an ECE|CWR SYN
  that is not ECT-marked, unless ``tcp_ecn=0``), ``tcp_ecn_make_synack()`` (ECE on the
  SYN-ACK), ``tcp_ecn_rcv_synack()`` (keep ECN only on ECE without CWR),
  ``tcp_ecn_clear_syn()`` (``tcp_ecn_fallback``: a retransmitted SYN does not ask);
* sending: ``tcp_ecn_send()`` (new data ECT(0), ACKs and retransmissions not-ECT; ECE
  while ``TCP_ECN_DEMAND_CWR``; CWR on the first new data after a reduction);
* receiving: ``__tcp_ecn_check_ce()`` (CE sets ``TCP_ECN_DEMAND_CWR``),
  ``tcp_ecn_accept_cwr()`` (CWR clears it);
* reacting: ``tcp_try_to_open()`` -> ``tcp_enter_cwr()`` on ECE, cwnd by
  ``tcp_cwnd_reduction()``, back to ssthresh when the CWR episode ends;
* DCTCP (``tcp_dctcp.c``): every packet ECT(0) (``INET_ECN_xmit()`` from
  ``tcp_assign_congestion_control()``), and ``dctcp_init()``'s fall back to ``dctcp-reno``
  when the peer does not agree.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tcplab.packetdrill.run import run_script

SERVER = """\
`../common/defaults.sh
sysctl -q net.ipv4.tcp_ecn={ecn}`
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0
   +0 bind(3, ..., ...) = 0
   +0 listen(3, 1) = 0
"""

CLIENT = """\
`../common/defaults.sh
sysctl -q net.ipv4.tcp_ecn={ecn}`
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 4
"""


@pytest.fixture(autouse=True)
def _engine():
    from conftest import compiled_engine

    core = compiled_engine()
    if not hasattr(core, "ScriptedHost"):
        pytest.skip("this engine build has no ScriptedHost")


def run(tmp_path: Path, text: str):
    path = tmp_path / "tcp" / "ecn" / "t.pkt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    r = run_script(path)
    return r


def passes(tmp_path: Path, text: str) -> None:
    r = run(tmp_path, text)
    assert r.status == "pass", f"{r.message}\n{r.details}"


def test_the_receiver_echoes_ce_until_cwr_and_the_sender_reduces_once(tmp_path):
    passes(
        tmp_path,
        SERVER.format(ecn=1)
        + """\
  +.1 < SEW 0:0(0) win 32792 <mss 1000,sackOK,nop,nop,nop,wscale 7>
   +0 > [noecn] SE. 0:0(0) ack 1 <mss 1460,nop,nop,sackOK,nop,wscale 8>
  +.1 < . 1:1(0) ack 1 win 257
   +0 accept(3, ..., ...) = 4

// a CE mark: ECE on every ACK (not-ECT) until the peer's CWR
  +.1 < [ce] P. 1:1001(1000) ack 1 win 257
   +0 > [noecn] E. 1:1(0) ack 1001
 +.01 < [ect0] P. 1001:2001(1000) ack 1 win 257
   +0 > [noecn] E. 1:1(0) ack 2001
 +.01 < [ect0] PW. 2001:3001(1000) ack 1 win 257
   +0 > [noecn] . 1:1(0) ack 3001

// our data is ECT(0); an ECE moves us to CWR: ssthresh = cubic's 10 * 717 / 1024 = 7,
// and tcp_cwnd_reduction() with 3 in flight, 1 delivered and snd_una advanced:
// sndcnt = min(7 - 3, max(1 - 0, 1) + 1) = 2, so cwnd = 3 + 2
   +0 write(4, ..., 4000) = 4000
   +0 > [ect0] P. 1:4001(4000) ack 3001
  +.1 < [noecn] E. 3001:3001(0) ack 1001 win 257
   +0 %{ assert (tcpi_ca_state, tcpi_snd_cwnd, tcpi_snd_ssthresh) == (TCP_CA_CWR, 5, 7) }%
// the first new data after the reduction carries CWR
   +0 write(4, ..., 1000) = 1000
   +0 > [ect0] PW. 4001:5001(1000) ack 3001
// a second ECE in the same window reduces nothing more
 +.01 < E. 3001:3001(0) ack 2001 win 257
   +0 %{ assert (tcpi_ca_state, tcpi_snd_ssthresh) == (TCP_CA_CWR, 7) }%
// the window of the reduction acknowledged: Open again, cwnd = ssthresh
  +.1 < . 3001:3001(0) ack 5001 win 257
   +0 %{ assert (tcpi_ca_state, tcpi_snd_cwnd) == (0, 7) }%
""",
    )


@pytest.mark.parametrize(
    ("sysctl", "syn", "synack"),
    [
        # tcp_ecn_create_request(): 0 refuses, 1 and 2 accept a request
        (0, "< SEW", "> [noecn] S."),
        (2, "< SEW", "> [noecn] SE."),
        # ... but not one on an ECT-marked SYN (a middlebox rewrote the TOS byte)
        (1, "< [ect0] SEW", "> S."),
        # a SYN that does not ask gets no ECN
        (1, "< S", "> S."),
    ],
)
def test_the_server_accepts_ecn_as_linux_does(tmp_path, sysctl, syn, synack):
    data = "[ect0]" if "E" in synack else "[noecn]"
    passes(
        tmp_path,
        SERVER.format(ecn=sysctl)
        + f"""\
  +.1 {syn} 0:0(0) win 32792 <mss 1000,sackOK,nop,nop,nop,wscale 7>
   +0 {synack} 0:0(0) ack 1 <mss 1460,nop,nop,sackOK,nop,wscale 8>
  +.1 < . 1:1(0) ack 1 win 257
   +0 accept(3, ..., ...) = 4
   +0 write(4, ..., 1000) = 1000
   +0 > {data} P. 1:1001(1000) ack 1
""",
    )


@pytest.mark.parametrize(
    ("sysctl", "syn", "synack", "data"),
    [
        (1, "> [noecn] SEW", "< SE.", "[ect0]"),
        # tcp_ecn_rcv_synack(): ECE|CWR on the SYN-ACK is no agreement
        (1, "> SEW", "< SEW.", "[noecn]"),
        (1, "> SEW", "< S.", "[noecn]"),
        # 2 (Linux's default) never asks
        (2, "> S", "< SE.", "[noecn]"),
    ],
)
def test_the_client_asks_with_tcp_ecn_1(tmp_path, sysctl, syn, synack, data):
    passes(
        tmp_path,
        CLIENT.format(ecn=sysctl)
        + f"""\
   +0...0.1 connect(4, ..., ...) = 0
   +0 {syn} 0:0(0) <mss 1460,sackOK,TS val 100 ecr 0,nop,wscale 8>
  +.1 {synack} 0:0(0) ack 1 win 32767 <mss 1000,nop,wscale 6,nop,nop,sackOK>
   +0 > [noecn] . 1:1(0) ack 1
   +0 write(4, ..., 1000) = 1000
   +0 > {data} P. 1:1001(1000) ack 1
""",
    )


@pytest.mark.parametrize(("fallback", "again"), [(1, "S"), (0, "SEW")])
def test_a_retransmitted_syn_stops_asking_with_tcp_ecn_fallback(tmp_path, fallback, again):
    head = CLIENT.format(ecn=1).replace("`\n", f"\nsysctl -q net.ipv4.tcp_ecn_fallback={fallback}`\n", 1)
    passes(
        tmp_path,
        head
        + f"""\
   +0...1.1 connect(4, ..., ...) = 0
   +0 > SEW 0:0(0) <mss 1460,sackOK,TS val 100 ecr 0,nop,wscale 8>
   +1 > {again} 0:0(0) <mss 1460,sackOK,TS val 1100 ecr 0,nop,wscale 8>
  +.1 < SE. 0:0(0) ack 1 win 32767 <mss 1000,nop,wscale 6,nop,nop,sackOK>
   +0 > . 1:1(0) ack 1
""",
    )


def test_tcp_ecn_set_after_socket_is_read_at_connect(tmp_path):
    # defaults.sh's tcp_ecn=0 when the socket is made, 1 by connect(): tcp_ecn_send_syn()
    # reads the sysctl then
    passes(
        tmp_path,
        CLIENT.format(ecn=0)
        + """\
   +0 `sysctl -q net.ipv4.tcp_ecn=1`
   +0...0.1 connect(4, ..., ...) = 0
   +0 > SEW 0:0(0) <mss 1460,sackOK,TS val 100 ecr 0,nop,wscale 8>
  +.1 < SE. 0:0(0) ack 1 win 32767 <mss 1000,nop,wscale 6,nop,nop,sackOK>
   +0 > . 1:1(0) ack 1
""",
    )


def test_dctcp_asks_whatever_tcp_ecn_says_and_sends_everything_ect0(tmp_path):
    passes(
        tmp_path,
        CLIENT.format(ecn=0)
        + """\
   +0 setsockopt(4, SOL_TCP, TCP_CONGESTION, "dctcp", 5) = 0
   +0...0.1 connect(4, ..., ...) = 0
   +0 > [ect0] SEW 0:0(0) <mss 1460,sackOK,TS val 100 ecr 0,nop,wscale 8>
  +.1 < SE. 0:0(0) ack 1 win 32767 <mss 1000,nop,wscale 6,nop,nop,sackOK>
   +0 > [ect0] . 1:1(0) ack 1
   +0 getsockopt(4, SOL_TCP, TCP_CONGESTION, "dctcp", [5]) = 0
   +0 write(4, ..., 1000) = 1000
   +0 > [ect0] P. 1:1001(1000) ack 1
// dctcp_ece_ack_update(): the CE state changed, ACK now, with ECE (and ECT(0))
  +.1 < [ce] P. 1:1001(1000) ack 1001 win 500
   +0 > [ect0] E. 1001:1001(0) ack 1001
""",
    )


def test_dctcp_without_the_peers_agreement_is_dctcp_reno(tmp_path):
    passes(
        tmp_path,
        CLIENT.format(ecn=0).replace("`\n", "\nsysctl -q net.ipv4.tcp_congestion_control=dctcp`\n", 1)
        + """\
   +0...0.1 connect(4, ..., ...) = 0
   +0 > [ect0] SEW 0:0(0) <mss 1460,sackOK,TS val 100 ecr 0,nop,wscale 8>
  +.1 < S. 0:0(0) ack 1 win 32767 <mss 1000,nop,wscale 6,nop,nop,sackOK>
   +0 > [noecn] . 1:1(0) ack 1
   +0 getsockopt(4, SOL_TCP, TCP_CONGESTION, "dctcp-reno", [10]) = 0
   +0 write(4, ..., 1000) = 1000
   +0 > [noecn] P. 1:1001(1000) ack 1
""",
    )


def test_a_wrong_mark_or_flag_fails(tmp_path):
    text = (
        SERVER.format(ecn=1)
        + """\
  +.1 < SEW 0:0(0) win 32792 <mss 1000,sackOK,nop,nop,nop,wscale 7>
   +0 > SE. 0:0(0) ack 1 <mss 1460,nop,nop,sackOK,nop,wscale 8>
  +.1 < . 1:1(0) ack 1 win 257
   +0 accept(3, ..., ...) = 4
  +.1 < [ce] P. 1:1001(1000) ack 1 win 257
   +0 > E. 1:1(0) ack 1001
// every segment carries ECE until the peer's CWR, our data too
   +0 write(4, ..., 1000) = 1000
   +0 > [ect0] PE. 1:1001(1000) ack 1001
"""
    )
    passes(tmp_path, text)
    r = run(tmp_path, text.replace("> E. 1:1(0)", "> . 1:1(0)"))
    assert r.message.endswith("live packet field tcp_ece: expected: 0 (0x0) vs actual: 1 (0x1)"), r.message
    r = run(tmp_path, text.replace("[ect0] PE.", "[ect1] PE."))
    assert r.message.endswith("live packet field ip_ecn: expected: 1 (0x1) vs actual: 2 (0x2)"), r.message
    # a CE-marked segment without ECN negotiated is just data
    r = run(tmp_path, text.replace("< SEW", "< S").replace("> SE.", "> S."))
    assert r.message.endswith("live packet field tcp_ece: expected: 1 (0x1) vs actual: 0 (0x0)"), r.message
