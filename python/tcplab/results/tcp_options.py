"""The TCP options a tcplab connection negotiates, as Linux v6.12 negotiates them.

The model: both ends of every connection are Linux sockets with the kernel's defaults
(``net.ipv4.tcp_timestamps = 1``, ``tcp_sack = 1``, ``tcp_window_scaling = 1``), so every SYN
and SYN-ACK carries MSS, SACK-permitted, timestamps and a window scale, and every connection
has all three. What ss shows of them (``ts sack wscale:S,R``; ``ts sack`` only with ``-o`` or
``-e``), what the pcap export writes in the SYN options, and the receive window's granularity
come from here, so the texts and the capture agree.

The window scale a socket advertises is ``tcp_select_initial_window()``'s (Linux v6.12
net/ipv4/tcp_output.c): the shift that fits the largest window it could ever offer,
``max(tcp_rmem[2], net.core.rmem_max)`` (at most ``65535 << 14``), into 16 bits, i.e.
``ilog2(space) - 15`` within [0, 14]: 7 with the default 6 MB ``tcp_rmem[2]``. Both ends of a
tcplab connection share the flow's TCP settings, so ``wscale:S,R`` has S = R.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["window_scale", "RMEM_MAX_DEFAULT", "TCP_MAX_WSCALE"]

#: ``net.core.rmem_max``'s default (Linux v6.12: SK_RMEM_MAX, 212992 on 64-bit).
RMEM_MAX_DEFAULT = 212992
#: ``TCP_MAX_WSCALE``.
TCP_MAX_WSCALE = 14


def window_scale(tcp: Mapping[str, Any], rmem_max: int = RMEM_MAX_DEFAULT) -> int:
    """The window scale a Linux v6.12 socket advertises (net/ipv4/tcp_output.c:
    ``tcp_select_initial_window()``): ``ilog2`` of the largest window it could ever offer,
    ``max(tcp_rmem[2], rmem_max)`` (at most ``65535 << 14``), minus 15, within [0, 14]."""
    rmem = tcp.get("tcp_rmem") or [4096, 131072, 6291456]
    space = min(max(int(rmem[2]), int(rmem[1]), rmem_max), 0xFFFF << TCP_MAX_WSCALE)
    return max(0, min(TCP_MAX_WSCALE, space.bit_length() - 1 - 15))
