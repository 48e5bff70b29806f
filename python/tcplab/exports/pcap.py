"""A flow's packets as a pcap file, as ``tcpdump -s 128`` on its sender (or receiver) writes it.

The model: the engine's capture (``capture`` in the engine config, tcplab_core::capture)
records one flow's packets where tcpdump on one of its hosts would see them: leaving the
host's qdisc for the wire (``dev_hard_start_xmit``), and taken off its NIC's ring
(``__netif_receive_skb_core``). Each record is the engine's packet: byte offsets, window,
timestamps, SACK blocks, flags, the sender's packet count. This module gives them the
headers a Linux v6.12 host would have written, as a classic libpcap file
(``LINKTYPE_ETHERNET``, microsecond timestamps, magic ``a1b2c3d4``) that tcpdump,
Wireshark/tshark, tcptrace and dpkt read:

* Ethernet: ``02:00:0a:00:X:Y`` for node ``10.0.X.Y``, type IPv4.
* IPv4 (net/ipv4/ip_output.c: ``__ip_queue_xmit()``): version 4, IHL 5, TOS 0 but its two
  ECN bits (RFC 3168: the packet's ECN field as the capture saw it, the engine's ``ecn``
  column: 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE; Linux's ECN-capable TCP sets ECT(0) on data
  segments, ``INET_ECN_xmit()``, a queue on the way may have marked CE, a bleaching link
  cleared it), DF set (PMTU discovery, ``ip_dont_fragment()``), TTL 64
  (``net.ipv4.ip_default_ttl``), protocol 6, a correct header checksum. Addresses as ``ss``
  shows them (:mod:`tcplab.results.ss`: node i is ``10.0.X.Y``). IP ID: a connected socket
  numbers its packets from a random start, one per segment (include/net/ip.h:
  ``ip_select_ident_segs()`` with ``inet_id`` set by
  ``tcp_v4_connect()`` / ``tcp_v4_syn_recv_sock()``); the server's SYN-ACK, sent by the
  listener through ``ip_build_and_send_pkt()``, has ID 0. The engine counts each socket's
  packets (also those its own qdisc dropped, as Linux numbers them before the qdisc), so a
  loss on the way shows as a gap in the IDs at the receiver, as on a real capture.
* TCP ports as ``ss`` shows them (client 32768 + flow index, server by application). Sequence
  numbers: ISN + 1 + the engine's byte offset (the SYN at the ISN; the engine's SYN takes no
  sequence space, the pcap's does, as Linux's). ACK set on everything but the client's SYN.
  ECE (0x40) and CWR (0x80) as the engine set them: ECE|CWR on an ECN-setup SYN, ECE on the
  SYN-ACK that accepts it (RFC 3168 6.1.1), then ECE on the receiver's ACKs while it echoes
  a CE mark and CWR on the sender's first segment after it reduced its window.
  The window: unscaled and at most 65535 on a SYN (``tcp_transmit_skb()``), else the
  advertised bytes shifted right by the sender's window scale (``tcp_select_window()``).
* Options, in Linux's order and layout (net/ipv4/tcp_output.c: ``tcp_options_write()``): on
  SYN and SYN-ACK (``tcp_syn_options()`` / ``tcp_synack_options()``) MSS, SACK-permitted
  and timestamps combined in one word, NOP + window scale (20 bytes, ``[mss
  1460,sackOK,TS val V ecr E,nop,wscale 7]``); on every other segment NOP NOP TS, then, when
  the segment carries SACK blocks, NOP NOP SACK with up to 3 blocks, a D-SACK first.
  MSS option = the flow's MSS + 12 (``tcp_advertise_mss()``: the path MTU - 40; the engine's
  MSS already excludes the timestamp option). Window scale: Linux v6.12
  ``tcp_select_initial_window()``: ``ilog2(max(tcp_rmem[2], net.core.rmem_max)) - 15``,
  clamped to [0, 14] (7 with the default 6 MB ``tcp_rmem[2]``).
* Timestamps: TSval = the sender's clock in ms (``tcp_time_stamp_ts()``: 1 kHz since 4.13)
  plus a per-address-pair random offset (``secure_tcp_ts_off()``); TSecr echoes the peer's.
* The TCP checksum is correct for the headers written and a payload of zero bytes.

Not real, and why (also in docs/kernel-pin.md): there are no payload bytes (tcplab has
none): each record holds the headers only (``incl_len`` = headers, ``orig_len`` = the whole
frame, as a capture whose snap length cut the payload; the file's snaplen is 128 as with
``tcpdump -s 128``), so a data segment's TCP checksum is right only for an all-zero payload.
No FIN unless the engine sends one (a flow ends with the run, or with its last data
acknowledged). The ISN, the
timestamp offset and the IP ID start are random-looking but derived from the scenario's seed,
the flow's name and the addresses (SHA-256), so the same run gives the same file. Segments
are the wire's (tcplab segments TSO bursts before the qdisc; tcpdump on a real sender with
TSO on shows the unsegmented super-packets). Times: the run's t = 0 is 2026-01-01 00:00:00
UTC (:data:`EPOCH_S`; a fixed date, so the file is the same on every machine; midnight, so
``tcpdump -r`` in UTC prints the run's own time; not 1970-01-01 00:00:00, which tcptrace
reads as "no time").
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tcplab.errors import ScenarioError
from tcplab.literals import abbreviate_digits
from tcplab.results.tcp_options import window_scale

if TYPE_CHECKING:
    from tcplab.engine import Capture

__all__ = [
    "CAPTURE_SIDES",
    "EPOCH_S",
    "SNAPLEN",
    "LINKTYPE_ETHERNET",
    "Endpoint",
    "capture_config",
    "flow_index",
    "endpoints",
    "pcap_bytes",
    "pcap_name",
    "write_pcap",
    "window_scale",
]

#: Where the capture runs: the data's sender or its receiver.
CAPTURE_SIDES = ("sender", "receiver")
#: The file's snap length, as ``tcpdump -s 128`` records it.
SNAPLEN = 128
LINKTYPE_ETHERNET = 1
_PCAP_MAGIC_US = 0xA1B2C3D4
#: The pcap time of the run's t = 0: 2026-01-01 00:00:00 UTC, in seconds since the Unix epoch.
EPOCH_S = 1_767_225_600
_TCPOLEN_TSTAMP_ALIGNED = 12
_ETH = 14
_IP = 20
_TCP = 20
#: The widest header written: Ethernet + IPv4 + TCP with 40 bytes of options.
_MAX_HDR = _ETH + _IP + _TCP + 40
_REC = 16  # pcap record header
_U32 = 0xFFFFFFFF


def flow_index(config: Mapping[str, Any], flow: str | int, *, option: str = "--pcap") -> int:
    """The index of ``flow`` (a flow name of the run, or its index) in the engine config."""
    flows = config.get("flows") or []
    names = [str(f.get("name")) for f in flows]
    text = str(flow).strip()
    if text in names:
        return names.index(text)
    if text.isascii() and text.isdigit() and len(text) < 19 and int(text) < len(flows):  # not "²", not 5000 digits
        return int(text)
    shown = ", ".join(names[:8]) + (f" (and {len(names) - 8} more)" if len(names) > 8 else "")
    raise ScenarioError(
        f"{abbreviate_digits(text)[:60]!r} is not a flow of this run",
        file=option,
        value=flow,
        expected=f"a flow name or index: {shown}" if names else "a run with flows",
    )


def capture_config(
    config: Mapping[str, Any],
    flow: str | int,
    at: str = "sender",
    max_packets: int | None = None,
    *,
    option: str = "--pcap",
    at_option: str = "--pcap-at",
) -> dict[str, Any]:
    """The engine's ``capture`` entry for ``flow`` captured at ``at`` ("sender" or "receiver");
    errors name the command's own options (``option`` for the flow, ``at_option`` for the side)."""
    if at not in CAPTURE_SIDES:
        raise ScenarioError(f"{at!r} is not a capture side", file=at_option, value=at, expected="sender or receiver")
    out: dict[str, Any] = {"flow": flow_index(config, flow, option=option), "at": at}
    if max_packets is not None:
        out["max_packets"] = int(max_packets)
    return out


def pcap_name(config: Mapping[str, Any], flow: int) -> str:
    """``FLOW.pcap``: the file's name in a run directory (flow names are ``[A-Za-z0-9_.-]+``)."""
    return f"{config['flows'][flow]['name']}.pcap"


def _derive(seed: int, *parts: Any) -> int:
    """64 random-looking bits from the seed and ``parts`` (stable across runs and machines)."""
    text = "\0".join(["tcplab-pcap", str(seed), *(str(p) for p in parts)])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


@dataclass(frozen=True)
class Endpoint:
    """One side of the captured connection, with what its packets' headers carry."""

    node: int
    ip: str
    port: int
    #: the initial sequence number (``secure_tcp_seq()``-like: random-looking, seeded)
    isn: int
    #: the TSval offset of this side's packets toward its peer (``secure_tcp_ts_off()``)
    ts_offset: int
    #: the first IP ID of this side's connection socket (``inet_id``'s random start)
    ip_id_start: int
    #: the window scale it advertises and the MSS option of its SYN
    wscale: int
    mss_option: int

    @property
    def ip_bytes(self) -> bytes:
        return bytes(int(x) for x in self.ip.split("."))

    @property
    def mac(self) -> bytes:
        return b"\x02\x00" + self.ip_bytes


def endpoints(config: Mapping[str, Any], flow: int) -> tuple[Endpoint, Endpoint]:
    """The flow's (client, server): addresses and ports as :mod:`tcplab.results.ss` gives them."""
    from tcplab.results.ss import CLIENT_PORT_BASE, CLIENT_PORT_SPAN, app_kinds, node_address, server_port

    f = config["flows"][flow]
    seed = int(config.get("seed", 0))
    name = str(f["name"])
    tcp = f.get("tcp") or {}
    mss_option = min(int(tcp.get("mss_bytes", 1448)) + _TCPOLEN_TSTAMP_ALIGNED, 0xFFFF)
    wscale = window_scale(tcp)
    kinds, _ = app_kinds(config)
    src, dst = int(f["src"]), int(f["dst"])
    ips = (node_address(src), node_address(dst))
    ports = (CLIENT_PORT_BASE + flow % CLIENT_PORT_SPAN, server_port(kinds.get(flow)))
    out = []
    for side, node, ip, peer_ip, port in (
        ("client", src, ips[0], ips[1], ports[0]),
        ("server", dst, ips[1], ips[0], ports[1]),
    ):
        out.append(
            Endpoint(
                node=node,
                ip=ip,
                port=port,
                isn=_derive(seed, "isn", name, side) & _U32,
                ts_offset=_derive(seed, "ts_off", ip, peer_ip) & _U32,
                ip_id_start=_derive(seed, "ip_id", name, side) & 0xFFFF,
                wscale=wscale,
                mss_option=mss_option,
            )
        )
    return out[0], out[1]


def _put(h: np.ndarray, rows: Any, offset: int, values: Any, width: int) -> None:
    """Write ``values`` big-endian, ``width`` bytes each, at column ``offset`` of ``rows``."""
    v = np.asarray(values, dtype=np.uint64)
    for k in range(width):
        h[rows, offset + k] = (v >> np.uint64(8 * (width - 1 - k))) & np.uint64(0xFF)


def _fold(total: np.ndarray) -> np.ndarray:
    """The Internet checksum of 16-bit word sums: fold the carries, complement."""
    s = total.astype(np.uint64)
    for _ in range(4):
        s = (s & np.uint64(0xFFFF)) + (s >> np.uint64(16))
    return (~s) & np.uint64(0xFFFF)


def _words(h: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Per row, the sum of the big-endian 16-bit words of columns ``[start, stop)`` (even)."""
    return np.ascontiguousarray(h[:, start:stop]).view(">u2").sum(axis=1, dtype=np.uint64)


#: Packets turned into records at a time (bounds the working arrays: ~25 MB a chunk).
_CHUNK_PACKETS = 100_000


def pcap_bytes(config: Mapping[str, Any], capture: Capture) -> bytes:
    """The capture as a pcap file's bytes (module doc)."""
    header = struct.pack("<IHHiIII", _PCAP_MAGIC_US, 2, 4, 0, 0, SNAPLEN, LINKTYPE_ETHERNET)
    p = capture.packets
    if len(p) == 0:
        return header
    client, server = endpoints(config, capture.flow)
    parts = [header]
    for lo in range(0, len(p), _CHUNK_PACKETS):
        parts.append(_records(p.iloc[lo : lo + _CHUNK_PACKETS], capture, client, server))
    return b"".join(parts)


def _records(p: Any, capture: Capture, client: Endpoint, server: Endpoint) -> bytes:
    """pcap records (record header + frame headers) of the packets of ``p``."""
    n = len(p)
    bits = capture.flag_bits
    u64 = np.uint64
    col = {c: p[c].to_numpy() for c in p.columns}
    # Who sent each packet: the capture endpoint (dir 0) or its peer (dir 1).
    capture_is_client = capture.ep % 2 == 0
    by_client = (col["dir"] == 0) == capture_is_client
    flags = col["flags"].astype(np.int64)
    syn = (flags & bits["syn"]) != 0
    fin = (flags & bits["fin"]) != 0
    psh = (flags & bits["psh"]) != 0
    ece = (flags & bits["ece"]) != 0
    cwr = (flags & bits["cwr"]) != 0
    nsack = np.where(syn, 0, col["num_sacks"].astype(np.int64))
    opt_len = np.where(syn, 20, 12 + np.where(nsack > 0, 4 + 8 * nsack, 0))
    tcp_hlen = _TCP + opt_len
    payload = (col["end_seq"] - col["seq"]).astype(np.int64)
    ip_total = _IP + tcp_hlen + payload
    hdr_len = _ETH + _IP + tcp_hlen

    def pick(a: Any, b: Any) -> np.ndarray:  # the sender's value (a: client, b: server)
        return np.where(by_client, a, b).astype(np.uint64)

    def other(a: Any, b: Any) -> np.ndarray:  # the receiver's value
        return np.where(by_client, b, a).astype(np.uint64)

    h = np.zeros((n, _MAX_HDR), dtype=np.uint8)
    # Ethernet
    for k in range(6):
        h[:, k] = np.where(by_client, server.mac[k], client.mac[k])
        h[:, 6 + k] = np.where(by_client, client.mac[k], server.mac[k])
    h[:, 12], h[:, 13] = 0x08, 0x00
    # IPv4
    e = _ETH
    h[:, e] = 0x45
    h[:, e + 1] = col["ecn"] & 0x3  # TOS: DSCP 0, the ECN field (RFC 3168 section 5)
    _put(h, slice(None), e + 2, ip_total, 2)
    synack = syn & ~by_client
    ip_id = np.where(synack, u64(0), (pick(client.ip_id_start, server.ip_id_start) + col["ip_id"]) & u64(0xFFFF))
    _put(h, slice(None), e + 4, ip_id, 2)
    h[:, e + 6] = 0x40  # DF
    h[:, e + 8] = 64  # TTL
    h[:, e + 9] = 6  # TCP
    src_ip = pick(int.from_bytes(client.ip_bytes, "big"), int.from_bytes(server.ip_bytes, "big"))
    dst_ip = other(int.from_bytes(client.ip_bytes, "big"), int.from_bytes(server.ip_bytes, "big"))
    _put(h, slice(None), e + 12, src_ip, 4)
    _put(h, slice(None), e + 16, dst_ip, 4)
    _put(h, slice(None), e + 10, _fold(_words(h, e, e + _IP)), 2)
    # TCP
    t = _ETH + _IP
    _put(h, slice(None), t, pick(client.port, server.port), 2)
    _put(h, slice(None), t + 2, other(client.port, server.port), 2)
    isn_s = pick(client.isn, server.isn)
    isn_r = other(client.isn, server.isn)
    seq32 = np.where(syn, isn_s, (isn_s + u64(1) + col["seq"]) & u64(_U32))
    _put(h, slice(None), t + 4, seq32, 4)
    has_ack = ~(syn & by_client)
    ack32 = np.where(has_ack, (isn_r + u64(1) + col["ack_seq"]) & u64(_U32), u64(0))
    _put(h, slice(None), t + 8, ack32, 4)
    h[:, t + 12] = (tcp_hlen // 4) << 4
    h[:, t + 13] = (
        np.where(syn, 0x02, 0)
        | np.where(has_ack, 0x10, 0)
        | np.where(psh, 0x08, 0)
        | np.where(fin, 0x01, 0)
        | np.where(ece, 0x40, 0)  # TCPHDR_ECE
        | np.where(cwr, 0x80, 0)  # TCPHDR_CWR
    )
    rwnd = col["rwnd_bytes"].astype(np.uint64)
    wscale = pick(client.wscale, server.wscale)
    window = np.where(syn, np.minimum(rwnd, u64(0xFFFF)), np.minimum(rwnd >> wscale, u64(0xFFFF)))
    _put(h, slice(None), t + 14, window, 2)
    # Options (tcp_options_write order)
    o = t + _TCP
    ms = u64(1_000_000)
    tsval = (col["tsval_ns"] // ms + pick(client.ts_offset, server.ts_offset)) & u64(_U32)
    tsecr = np.where(
        col["tsecr_ns"] == 0, u64(0), (col["tsecr_ns"] // ms + other(client.ts_offset, server.ts_offset)) & u64(_U32)
    )
    rs = np.flatnonzero(syn)
    if len(rs):
        h[rs, o], h[rs, o + 1] = 2, 4  # MSS
        _put(h, rs, o + 2, pick(client.mss_option, server.mss_option)[rs], 2)
        h[rs, o + 4], h[rs, o + 5], h[rs, o + 6], h[rs, o + 7] = 4, 2, 8, 10  # SACK_PERM, TS
        _put(h, rs, o + 8, tsval[rs], 4)
        _put(h, rs, o + 12, tsecr[rs], 4)
        h[rs, o + 16], h[rs, o + 17], h[rs, o + 18] = 1, 3, 3  # NOP, WS
        h[rs, o + 19] = wscale[rs]
    rd = np.flatnonzero(~syn)
    if len(rd):
        h[rd, o], h[rd, o + 1], h[rd, o + 2], h[rd, o + 3] = 1, 1, 8, 10  # NOP NOP TS
        _put(h, rd, o + 4, tsval[rd], 4)
        _put(h, rd, o + 8, tsecr[rd], 4)
        rk = np.flatnonzero(nsack > 0)
        if len(rk):
            h[rk, o + 12], h[rk, o + 13], h[rk, o + 14] = 1, 1, 5  # NOP NOP SACK
            h[rk, o + 15] = 2 + 8 * nsack[rk]
            for b in range(3):
                rb = np.flatnonzero(nsack > b)
                if not len(rb):
                    continue
                base = isn_r[rb] + u64(1)
                _put(h, rb, o + 16 + 8 * b, (base + col[f"sack{b}_start"][rb]) & u64(_U32), 4)
                _put(h, rb, o + 20 + 8 * b, (base + col[f"sack{b}_end"][rb]) & u64(_U32), 4)
    # TCP checksum: pseudo-header + header (zeros beyond it add nothing) + an all-zero payload.
    pseudo = (src_ip >> u64(16)) + (src_ip & u64(0xFFFF)) + (dst_ip >> u64(16)) + (dst_ip & u64(0xFFFF))
    pseudo = pseudo + u64(6) + (tcp_hlen + payload).astype(np.uint64)
    _put(h, slice(None), t + 16, _fold(pseudo + _words(h, t, _MAX_HDR)), 2)
    # pcap records: header (ts_sec, ts_usec, incl_len, orig_len, little-endian) + frame headers.
    recs = np.zeros((n, _REC + _MAX_HDR), dtype=np.uint8)
    t_ns = col["t_ns"].astype(np.uint64)
    rec_hdr = np.zeros((n, 4), dtype="<u4")
    rec_hdr[:, 0] = u64(EPOCH_S) + t_ns // u64(1_000_000_000)
    rec_hdr[:, 1] = (t_ns % u64(1_000_000_000)) // u64(1000)
    rec_hdr[:, 2] = hdr_len
    rec_hdr[:, 3] = _ETH + ip_total
    recs[:, :_REC] = rec_hdr.view(np.uint8).reshape(n, _REC)
    recs[:, _REC:] = h
    keep = np.arange(_REC + _MAX_HDR)[None, :] < (_REC + hdr_len)[:, None]
    return recs[keep].tobytes()


def write_pcap(
    path: str | os.PathLike[str], config: Mapping[str, Any], capture: Capture, *, overwrite: bool = False
) -> Path:
    """Write the capture to ``path`` atomically, with the user's umask
    (:func:`tcplab.output_files.write_file_atomically`: an existing file is replaced only
    with ``overwrite``, anything but a regular file never)."""
    from tcplab.output_files import write_file_atomically

    return write_file_atomically(path, pcap_bytes(config, capture), overwrite=overwrite, option="--output")
