"""The pcap export (tcplab.exports.pcap) of the engine's packet capture (tcplab_core::capture).

The file is read back with dpkt (pinned in pyproject's ``test`` extra), an implementation
independent of the writer, and checked against what TCP and Linux imply: sequence numbers
relative to the SYN's ISN cover exactly the flow's bytes; retransmissions repeat earlier
ranges, one per retransmitted segment; every ACK acknowledges exactly what the receiver
had, and every SACK block what it had above the hole; the options are Linux's, in its
order; checksums are right; IP IDs count each sender's packets, so the receiver sees a
gap for each packet lost on the way. And: capturing changes nothing in the run, and the
same run gives the same bytes.
"""

from __future__ import annotations

import importlib
import re
import struct

import numpy as np
import pandas as pd
import pytest

from conftest import compiled_engine, in_ci

dpkt = pytest.importorskip("dpkt") if not in_ci() else importlib.import_module("dpkt")

from tcplab.engine import Capture  # noqa: E402
from tcplab.exports.pcap import EPOCH_S, SNAPLEN, capture_config, pcap_bytes, window_scale  # noqa: E402

#: Data packets (0-based, among those entering the link) the path loses.
DROPS = [200, 201, 650]
SCENARIO = {
    "name": "pcap-lossy",
    "seed": 7,
    "duration": "4s",
    # software GSO: tcpdump on the sender sees MSS frames, the units the path's drop list
    # counts (with TSO it sees the skbs: test_with_tso_the_senders_capture_shows_its_skbs)
    "hosts": {"server": {"offload": {"tso": "off"}}, "client": {}},
    "routers": ["emu"],
    "links": [
        {"between": ["server", "emu"], "rate": "1Gbit", "delay": "50us"},
        {
            "between": ["emu", "client"],
            "rate": "20Mbit",
            "delay": "10ms",
            "loss": {"drop": DROPS},
            "queue": {"qdisc": "pfifo", "limit": 10000},
        },
    ],
    "flows": [{"name": "bulk", "from": "server", "to": "client", "app": {"bulk": {"bytes": "3MB"}}}],
}
U32 = 1 << 32


@pytest.fixture(scope="module")
def engine():
    return compiled_engine()


def _run(engine, at: str | None):
    import tcplab

    capture = None if at is None else {"flow": "bulk", "at": at}
    return tcplab.run(SCENARIO, core=engine, capture=capture)


@pytest.fixture(scope="module")
def sender_run(engine):
    return _run(engine, "sender")


@pytest.fixture(scope="module")
def receiver_run(engine):
    return _run(engine, "receiver")


def read(data: bytes) -> list[dict]:
    """Every packet of a pcap file, decoded by dpkt."""
    import io

    reader = dpkt.pcap.Reader(io.BytesIO(data))
    assert reader.snaplen == SNAPLEN and reader.datalink() == dpkt.pcap.DLT_EN10MB
    out = []
    for ts, buf in reader:
        eth = dpkt.ethernet.Ethernet(buf)
        ip = eth.data
        assert isinstance(ip, dpkt.ip.IP) and ip.p == dpkt.ip.IP_PROTO_TCP
        tcp = ip.data
        raw_ip = bytes(buf[14 : 14 + 20])
        tcp_hdr = bytes(buf[34 : 34 + tcp.off * 4])
        out.append(
            {
                "t": ts - EPOCH_S,
                "src": ip.src,
                "dst": ip.dst,
                "id": ip.id,
                "ttl": ip.ttl,
                "df": bool(buf[14 + 6] & 0x40) and not bool(buf[14 + 6] & 0x20),
                "ip_len": ip.len,
                "caplen": len(buf),
                "seq": tcp.seq,
                "ack": tcp.ack,
                "flags": tcp.flags,
                "win": tcp.win,
                "len": ip.len - 20 - tcp.off * 4,
                "opts_raw": bytes(tcp.opts),
                "opts": dpkt.tcp.parse_opts(bytes(tcp.opts)),
                "raw_ip": raw_ip,
                "tcp_hdr": tcp_hdr,
            }
        )
    return out


def csum(data: bytes) -> int:
    """The Internet checksum (RFC 1071), written out plainly."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def syn_of(pkts: list[dict], src: bytes) -> dict:
    return next(p for p in pkts if p["flags"] & dpkt.tcp.TH_SYN and p["src"] == src)


def ts_opt(p: dict) -> tuple[int, int]:
    value = dict(p["opts"])[dpkt.tcp.TCP_OPT_TIMESTAMP]
    return struct.unpack("!II", value)


def sacks(p: dict) -> list[tuple[int, int]]:
    for kind, value in p["opts"]:
        if kind == dpkt.tcp.TCP_OPT_SACK:
            return [struct.unpack("!II", value[i : i + 8]) for i in range(0, len(value), 8)]
    return []


def addresses(pkts: list[dict]) -> tuple[bytes, bytes]:
    """(data sender, data receiver): the data's sender sends the bytes."""
    sender = next(p["src"] for p in pkts if p["len"] > 0)
    receiver = next(p["src"] for p in pkts if p["src"] != sender)
    return sender, receiver


def test_checksums_ttl_df_and_lengths(sender_run):
    pkts = read(sender_run.extra_files["bulk.pcap"])
    assert len(pkts) == len(sender_run.capture.packets) > 1000
    for p in pkts:
        assert csum(p["raw_ip"]) == 0, "IP header checksum"
        assert (p["ttl"], p["df"]) == (64, True)
        # The TCP checksum over the pseudo-header and the header, the payload being zeros.
        pseudo = p["src"] + p["dst"] + struct.pack("!BBH", 0, 6, len(p["tcp_hdr"]) + p["len"])
        assert csum(pseudo + p["tcp_hdr"]) == 0, "TCP checksum"
        # Headers only: what was captured is the headers; the frame was the whole packet.
        assert p["caplen"] == 14 + 20 + len(p["tcp_hdr"])
    # The engine's IP lengths, for every segment but the SYNs (whose 20 bytes of options
    # the engine's size model leaves out).
    ip_bytes = sender_run.capture.packets["ip_bytes"].to_numpy()
    for p, engine_len in zip(pkts, ip_bytes, strict=True):
        if not p["flags"] & dpkt.tcp.TH_SYN:
            assert p["ip_len"] == engine_len


def test_options_are_linuxs_in_linuxs_order(sender_run):
    pkts = read(sender_run.extra_files["bulk.pcap"])
    sender, receiver = addresses(pkts)
    for who in (sender, receiver):
        syn = syn_of(pkts, who)
        o = syn["opts_raw"]
        # tcp_options_write(): MSS; SACK_PERM and TS in one word; TS values; NOP, WS.
        assert o[:2] == b"\x02\x04" and struct.unpack("!H", o[2:4])[0] == 1448 + 12
        assert o[4:8] == b"\x04\x02\x08\x0a"
        assert o[16:19] == b"\x01\x03\x03" and o[19] == window_scale({}) == 7
        assert len(o) == 20
    client_syn = syn_of(pkts, sender)  # the server of this flow is the data's receiver
    assert not client_syn["flags"] & dpkt.tcp.TH_ACK and ts_opt(client_syn)[1] == 0
    synack = syn_of(pkts, receiver)
    assert synack["flags"] & dpkt.tcp.TH_ACK and ts_opt(synack)[1] == ts_opt(client_syn)[0]
    n_sack = 0
    for p in pkts:
        if p["flags"] & dpkt.tcp.TH_SYN:
            continue
        assert p["opts_raw"][:4] == b"\x01\x01\x08\x0a"  # NOP NOP TS
        if len(p["opts_raw"]) > 12:
            blocks = (len(p["opts_raw"]) - 16) // 8
            assert p["opts_raw"][12:16] == bytes([1, 1, 5, 2 + 8 * blocks]) and 1 <= blocks <= 3
            n_sack += 1
    assert n_sack >= 3 * len(DROPS)


def test_relative_sequence_numbers_cover_the_flows_bytes(sender_run):
    pkts = read(sender_run.extra_files["bulk.pcap"])
    flow = sender_run.flows.iloc[0]
    sender, receiver = addresses(pkts)
    isn_s, isn_r = syn_of(pkts, sender)["seq"], syn_of(pkts, receiver)["seq"]
    data = [p for p in pkts if p["src"] == sender and p["len"] > 0]
    high, repeats = 0, 0
    for p in data:
        start = (p["seq"] - isn_s - 1) % U32
        end = start + p["len"]
        repeats += start < high  # a range sent before: a retransmission
        high = max(high, end)
    # All of it was sent, acknowledged and received (the flow wrote its bytes and ended).
    assert high == flow["bytes_received"] > 2_000_000
    assert repeats == flow["retrans_segs"] >= len(DROPS)
    assert len(data) == flow["data_segs_out"]
    last_ack = [p for p in pkts if p["src"] == receiver][-1]
    assert (last_ack["seq"] - isn_r - 1) % U32 == 0  # the receiver sends no data...
    assert (last_ack["ack"] - isn_s - 1) % U32 == flow["bytes_received"]  # ...and acked all
    # TSval is the sender's clock in ms: it advances as the capture's time does.
    t0, v0 = data[0]["t"], ts_opt(data[0])[0]
    for p in data[:: max(1, len(data) // 200)]:
        assert abs(((ts_opt(p)[0] - v0) % U32) - (p["t"] - t0) * 1000) <= 2


def test_with_tso_the_senders_capture_shows_its_skbs(engine):
    # tcpdump taps dev_hard_start_xmit(): with TSO the NIC cuts later, so it sees each GSO
    # skb as one IP packet longer than the MTU (Linux v6.12 net/core/dev.c); the skbs
    # still cover the flow's bytes, and the frames the path numbers are more than the skbs.
    import tcplab

    tso = {**SCENARIO, "hosts": {"server": {"offload": {"tso": "on"}}, "client": {}}}
    run = tcplab.run(tso, core=engine, capture={"flow": "bulk", "at": "sender"})
    pkts = read(run.extra_files["bulk.pcap"])
    sender, _ = addresses(pkts)
    isn = syn_of(pkts, sender)["seq"]
    data = [p for p in pkts if p["src"] == sender and p["len"] > 0]
    assert max(p["len"] for p in data) > 1448
    high = max((p["seq"] - isn - 1) % U32 + p["len"] for p in data)
    flow = run.flows.iloc[0]
    assert high == flow["bytes_received"]
    assert len(data) < flow["data_segs_out"]


def test_the_receiver_acks_what_it_has_and_sacks_above_the_hole(receiver_run, sender_run):
    pkts = read(receiver_run.extra_files["bulk.pcap"])
    sender, receiver = addresses(pkts)
    isn_s = syn_of(pkts, sender)["seq"]
    have = np.zeros(receiver_run.flows.iloc[0]["bytes_received"] + 10 * 1448, dtype=bool)
    sacked_acks = 0
    for p in pkts:
        if p["src"] == sender and p["len"] > 0:
            start = (p["seq"] - isn_s - 1) % U32
            have[start : start + p["len"]] = True
        elif p["src"] == receiver and not p["flags"] & dpkt.tcp.TH_SYN:
            ack = (p["ack"] - isn_s - 1) % U32
            assert have[:ack].all() and not have[ack], "an ACK acknowledges exactly the in-order bytes"
            for k, (s, e) in enumerate(sacks(p)):
                s, e = (s - isn_s - 1) % U32, (e - isn_s - 1) % U32
                assert have[s:e].all(), "a SACK block reports bytes the receiver has"
                assert s > ack or k == 0, "only a first (D-SACK) block may lie below the ACK"
                sacked_acks += 1
    assert sacked_acks >= 3 * len(DROPS)
    # The first ACK with a SACK block stops at the first lost segment: the 200th data packet
    # the sender transmitted (the bottleneck's drop list counts its data packets from 0).
    sent = read(sender_run.extra_files["bulk.pcap"])
    lost = [p for p in sent if p["src"] == sender and p["len"] > 0][DROPS[0]]
    first = next(p for p in pkts if p["src"] == receiver and sacks(p))
    assert first["ack"] == lost["seq"]
    assert sacks(first)[0][0] == (lost["seq"] + 2 * lost["len"]) % U32  # 200 and 201 lost, 202 came


def test_ip_ids_count_each_senders_packets_and_show_the_losses(receiver_run):
    pkts = read(receiver_run.extra_files["bulk.pcap"])
    sender, receiver = addresses(pkts)
    assert sum(lk.get("queue_drops", 0) or 0 for lk in receiver_run.summary["links"]) == 0
    synack = syn_of(pkts, receiver)
    assert synack["id"] == 0  # the listener's SYN-ACK (ip_build_and_send_pkt under DF)
    mine = [p["id"] for p in pkts if p["src"] == receiver and p is not synack]
    assert all((b - a) % 65536 == 1 for a, b in zip(mine, mine[1:], strict=False))
    # The sender's IDs at the receiver: one missing per packet lost on the way.
    theirs = sorted_by_arrival([p["id"] for p in pkts if p["src"] == sender])
    missing = sum(b - a - 1 for a, b in zip(theirs, theirs[1:], strict=False))
    assert missing == len(DROPS)


def sorted_by_arrival(ids: list[int]) -> list[int]:
    """IDs in arrival order, unwrapped (no reordering on this path: arrival = send order)."""
    out, base, prev = [], 0, None
    for i in ids:
        if prev is not None and i < prev:
            base += 65536
        out.append(base + i)
        prev = i
    return out


def test_windows_are_the_advertised_bytes_scaled(sender_run):
    pkts = read(sender_run.extra_files["bulk.pcap"])
    rwnd = sender_run.capture.packets["rwnd_bytes"].to_numpy()
    for p, engine_rwnd in zip(pkts, rwnd, strict=True):
        if p["flags"] & dpkt.tcp.TH_SYN:
            assert p["win"] == min(engine_rwnd, 65535)
        else:
            assert p["win"] << 7 <= engine_rwnd < (p["win"] + 1) << 7


def test_syn_windows_are_linuxs_initial_windows(sender_run):
    """The SYN and SYN-ACK carry the initial receive window unscaled: the window of
    tcp_rmem[1] (half of it, Linux's default scaling_ratio) rounded down to the MSS option on
    the connecting side (tcp_connect_init(): 64240 on a 1500-byte path) and to the MSS less
    the timestamp option on the listener (tcp_openreq_init_rwin(): 65160), as tcpdump shows
    Linux's handshakes. The connecting side here sends the data and never receives any, so
    every later segment of it offers that window rounded up to the scale (ALIGN in
    __tcp_select_window(): 502 << 7)."""
    pkts = read(sender_run.extra_files["bulk.pcap"])
    syn = next(p for p in pkts if p["flags"] & dpkt.tcp.TH_SYN and not p["flags"] & dpkt.tcp.TH_ACK)
    synack = next(p for p in pkts if p["flags"] & dpkt.tcp.TH_SYN and p["flags"] & dpkt.tcp.TH_ACK)
    mss_option = struct.unpack("!H", dict(syn["opts"])[dpkt.tcp.TCP_OPT_MSS])[0]
    wscale = dict(syn["opts"])[dpkt.tcp.TCP_OPT_WSCALE][0]
    window = 131072 // 2  # tcp_win_from_space(tcp_rmem[1]) at scaling_ratio 128/256
    assert syn["win"] == window // mss_option * mss_option
    payload_mss = mss_option - 12
    assert synack["win"] == window // payload_mss * payload_mss
    later = {p["win"] for p in pkts if p["src"] == syn["src"] and not p["flags"] & dpkt.tcp.TH_SYN}
    assert later == {-(-syn["win"] // (1 << wscale))}


def test_the_capture_changes_nothing_and_repeats(engine, sender_run):
    plain = _run(engine, None)
    assert plain.capture is None and plain.extra_files == {}
    assert plain.summary == sender_run.summary
    pd.testing.assert_frame_equal(plain.timeseries, sender_run.timeseries)
    again = _run(engine, "sender")
    assert again.extra_files["bulk.pcap"] == sender_run.extra_files["bulk.pcap"]


def test_a_bad_capture_request_is_one_line(sender_run):
    from tcplab.errors import ScenarioError

    with pytest.raises(
        ScenarioError, match=r"^--pcap: 'nope' is not a flow of this run; expected a flow name or index: bulk$"
    ):
        capture_config(sender_run.config, "nope")
    with pytest.raises(ScenarioError, match=r"^--pcap-at: 'both' is not a capture side; expected sender or receiver$"):
        capture_config(sender_run.config, "bulk", "both")
    assert capture_config(sender_run.config, "0", "receiver", 10) == {"flow": 0, "at": "receiver", "max_packets": 10}


# -- the writer alone, on packets made up here -------------------------------------------


def _capture(rows: list[dict], ep: int = 0) -> Capture:
    from tcplab.columns import CAPTURE_DTYPES

    cols = {c: np.array([r.get(c, 0) for r in rows], dtype=d) for c, d in CAPTURE_DTYPES.items()}
    return Capture(
        flow=0,
        at="sender",
        node=0,
        ep=ep,
        truncated=0,
        packets=pd.DataFrame(cols),
        flag_bits={"syn": 1, "dsack": 2, "retrans": 4, "fin": 16, "psh": 32, "ece": 64, "cwr": 128},
    )


CONFIG = {
    "seed": 1,
    "nodes": [{"name": "a"}, {"name": "b"}],
    "flows": [{"name": "f", "src": 0, "dst": 1, "tcp": {"mss_bytes": 1448, "tcp_rmem": [4096, 131072, 16 << 20]}}],
}


def test_a_dsack_block_comes_first_and_fin_is_written():
    rows = [
        {
            "t_ns": 1000,
            "dir": 1,
            "ack_seq": 5000,
            "num_sacks": 2,
            "flags": 2,
            "rwnd_bytes": 1 << 20,
            "tsval_ns": 1,
            "sack0_start": 1000,
            "sack0_end": 2000,
            "sack1_start": 6000,
            "sack1_end": 7000,
            "ip_bytes": 52 + 20,
        },
        {"t_ns": 2000, "dir": 0, "seq": 7000, "end_seq": 7000, "flags": 16, "rwnd_bytes": 1 << 20, "ip_bytes": 52},
    ]
    pkts = read(pcap_bytes(CONFIG, _capture(rows)))
    a, b = pkts
    assert len(sacks(a)) == 2
    s0, s1 = sacks(a)
    # Both blocks are relative to the same ISN: the D-SACK (below the ACK) first.
    assert (s0[0] - a["ack"]) % U32 == (1000 - 5000) % U32 and (s1[0] - a["ack"]) % U32 == 1000
    assert b["flags"] & dpkt.tcp.TH_FIN and b["flags"] & dpkt.tcp.TH_ACK
    # 16 MB tcp_rmem[2]: ilog2(16 MiB) - 15 = 9 (tcp_select_initial_window)
    assert a["win"] == (1 << 20) >> 9


def test_psh_is_written_as_tcp_header_bit_0x08():
    # The engine's PSH (tcp::push) is the header's PSH bit, beside ACK; none elsewhere.
    rows = [
        {"t_ns": 1000, "dir": 0, "seq": 0, "end_seq": 1448, "flags": 32, "rwnd_bytes": 1 << 20, "ip_bytes": 1500},
        {"t_ns": 2000, "dir": 0, "seq": 1448, "end_seq": 2896, "flags": 0, "rwnd_bytes": 1 << 20, "ip_bytes": 1500},
    ]
    a, b = read(pcap_bytes(CONFIG, _capture(rows)))
    assert a["flags"] == dpkt.tcp.TH_PUSH | dpkt.tcp.TH_ACK
    assert b["flags"] == dpkt.tcp.TH_ACK


def test_window_scale_follows_tcp_select_initial_window():
    assert window_scale({"tcp_rmem": [4096, 131072, 6291456]}) == 7
    assert window_scale({"tcp_rmem": [4096, 131072, 4194304]}) == 7
    assert window_scale({"tcp_rmem": [4096, 131072, 33554432]}) == 10
    # below net.core.rmem_max (212992): rmem_max decides, ilog2(212992) - 15 = 2
    assert window_scale({"tcp_rmem": [4096, 8192, 16384]}) == 2
    assert window_scale({"tcp_rmem": [4096, 131072, 1 << 40]}) == 14


def test_an_empty_capture_is_a_valid_empty_file():
    data = pcap_bytes(CONFIG, _capture([]))
    assert read(data) == []


# -- the engine bridge's checks of out["capture"] (tcplab.engine) ---------------------------


def _raw_capture(**change):
    from tcplab.columns import CAPTURE_DTYPES

    raw = {
        "flow": 0,
        "at": "sender",
        "node": 0,
        "ep": 0,
        "truncated": 0,
        "flag_bits": {"syn": 1, "dsack": 2, "retrans": 4, "fin": 16, "psh": 32, "ece": 64, "cwr": 128},
        "columns": {c: np.zeros(2, dtype=d) for c, d in CAPTURE_DTYPES.items()},
    }
    raw.update(change)
    return raw


@pytest.mark.parametrize(
    "change, message",
    [
        ({"at": "middle"}, "capture.at is 'middle', expected sender or receiver"),
        ({"flag_bits": {"syn": 1}}, "capture.flag_bits lacks one of syn, dsack, retrans, fin"),
        ({"columns": {"t_ns": np.zeros(2, dtype="uint64")}}, "capture.columns lacks column(s) dir"),
        ({"ep": "missing"}, "capture lacks ep"),
    ],
)
def test_the_bridge_checks_the_capture(change, message):
    from tcplab.engine import _capture
    from tcplab.errors import EngineError

    raw = _raw_capture(**change)
    if raw["ep"] == "missing":
        del raw["ep"]
    with pytest.raises(EngineError, match=re.escape(message)):
        _capture(raw)


def test_the_bridge_keeps_a_good_capture_and_none():
    from tcplab.engine import _capture

    assert _capture(None) is None
    c = _capture(_raw_capture(truncated=5))
    assert (c.truncated, len(c.packets), c.at) == (5, 2, "sender")
    assert str(c.packets["ip_id"].dtype) == "uint16"


def test_a_capture_the_engine_did_not_return_is_an_error(patched_core):
    import tcplab
    from tcplab.errors import EngineError

    with pytest.raises(EngineError, match="no capture, although the configuration asked for one"):
        tcplab.run("builtin:cubic-vs-bbr-lossy", overrides=["duration=1s"], capture={"flow": 0})
    assert patched_core.calls[-1]["capture"] == {"flow": 0, "at": "sender"}


def test_the_file_is_the_same_written_in_chunks(sender_run, monkeypatch):
    import tcplab.exports.pcap as pcap

    whole = sender_run.extra_files["bulk.pcap"]
    monkeypatch.setattr(pcap, "_CHUNK_PACKETS", 7)
    assert pcap.pcap_bytes(sender_run.config, sender_run.capture) == whole
