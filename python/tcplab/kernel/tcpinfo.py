"""``struct tcp_info`` as ``getsockopt(IPPROTO_TCP, TCP_INFO)`` returns it, parsed with ``struct``.

The model: Linux v6.12 ``include/uapi/linux/tcp.h: struct tcp_info`` (248 bytes), filled by
``net/ipv4/tcp.c: tcp_get_info()``. A kernel copies ``min(len, sizeof(struct tcp_info))``
bytes, so an older kernel returns a shorter prefix (fields past it are absent from the
parsed dict) and a newer one (7.0's Accurate-ECN trailer) a longer one (ignored here).

Units as the kernel keeps them: times in microseconds (``rtt``, ``rttvar``, ``min_rtt``,
``rto``, ``busy_time``, ...) except ``last_*`` and ``total_rto_time`` (ms); ``snd_cwnd``,
``snd_ssthresh``, ``unacked``, ``lost``, ``retrans``, ``total_retrans`` in packets; rates
(``pacing_rate``, ``delivery_rate``) in bytes per second; byte counters in bytes. Names drop
the ``tcpi_`` prefix. The two bitfield bytes are split as the header declares them (little
endian bitfield order: ``snd_wscale`` is the low nibble; ``delivery_rate_app_limited`` bit 0,
``fastopen_client_fail`` bits 1-2).

No tcplab imports: the traffic agent (:mod:`tcplab.kernel.agent`) loads it inside a network
namespace and must start fast.
"""

from __future__ import annotations

import struct

__all__ = ["TCP_INFO_FIELDS", "TCP_INFO_SIZE", "parse_tcp_info"]

#: (name, struct code) in the order of Linux v6.12 include/uapi/linux/tcp.h: struct tcp_info.
TCP_INFO_FIELDS: tuple[tuple[str, str], ...] = (
    ("state", "B"),
    ("ca_state", "B"),
    ("retransmits", "B"),
    ("probes", "B"),
    ("backoff", "B"),
    ("options", "B"),
    ("_wscale", "B"),  # tcpi_snd_wscale : 4, tcpi_rcv_wscale : 4
    ("_flags", "B"),  # tcpi_delivery_rate_app_limited : 1, tcpi_fastopen_client_fail : 2
    ("rto", "I"),
    ("ato", "I"),
    ("snd_mss", "I"),
    ("rcv_mss", "I"),
    ("unacked", "I"),
    ("sacked", "I"),
    ("lost", "I"),
    ("retrans", "I"),
    ("fackets", "I"),
    ("last_data_sent", "I"),
    ("last_ack_sent", "I"),
    ("last_data_recv", "I"),
    ("last_ack_recv", "I"),
    ("pmtu", "I"),
    ("rcv_ssthresh", "I"),
    ("rtt", "I"),
    ("rttvar", "I"),
    ("snd_ssthresh", "I"),
    ("snd_cwnd", "I"),
    ("advmss", "I"),
    ("reordering", "I"),
    ("rcv_rtt", "I"),
    ("rcv_space", "I"),
    ("total_retrans", "I"),
    ("pacing_rate", "Q"),
    ("max_pacing_rate", "Q"),
    ("bytes_acked", "Q"),
    ("bytes_received", "Q"),
    ("segs_out", "I"),
    ("segs_in", "I"),
    ("notsent_bytes", "I"),
    ("min_rtt", "I"),
    ("data_segs_in", "I"),
    ("data_segs_out", "I"),
    ("delivery_rate", "Q"),
    ("busy_time", "Q"),
    ("rwnd_limited", "Q"),
    ("sndbuf_limited", "Q"),
    ("delivered", "I"),
    ("delivered_ce", "I"),
    ("bytes_sent", "Q"),
    ("bytes_retrans", "Q"),
    ("dsack_dups", "I"),
    ("reord_seen", "I"),
    ("rcv_ooopack", "I"),
    ("snd_wnd", "I"),
    ("rcv_wnd", "I"),
    ("rehash", "I"),
    ("total_rto", "H"),
    ("total_rto_recoveries", "H"),
    ("total_rto_time", "I"),
)

# Each field's offset with C's natural alignment (struct's native "@" mode aligns every
# field to its size, as the compiler lays out the uapi struct; nothing here is packed).
_OFFSETS: list[tuple[str, str, int]] = []
_at = 0
for _name, _code in TCP_INFO_FIELDS:
    _size = struct.calcsize("<" + _code)
    _at = (_at + _size - 1) // _size * _size
    _OFFSETS.append((_name, _code, _at))
    _at += _size
#: sizeof(struct tcp_info) in v6.12: 248 bytes.
TCP_INFO_SIZE = _at
del _at, _name, _code, _size


def parse_tcp_info(buf: bytes) -> dict[str, int]:
    """The fields of a TCP_INFO buffer (module doc); fields beyond ``len(buf)`` are absent."""
    out: dict[str, int] = {}
    for name, code, offset in _OFFSETS:
        size = struct.calcsize("<" + code)
        if offset + size > len(buf):
            break
        (value,) = struct.unpack_from("=" + code, buf, offset)
        if name == "_wscale":
            out["snd_wscale"] = value & 0x0F
            out["rcv_wscale"] = value >> 4
        elif name == "_flags":
            out["delivery_rate_app_limited"] = value & 0x01
            out["fastopen_client_fail"] = (value >> 1) & 0x03
        else:
            out[name] = int(value)
    return out
