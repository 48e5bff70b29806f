"""Root qdisc counters of a network namespace's devices, read over rtnetlink in-process.

Why: the queue sampler of a kernel run reads every link's egress qdisc each
``sample_interval``. Running ``tc -n NS -s qdisc show`` that often (one process per
namespace per sample) stalled the traffic's ACKs at every sample on a 2-CPU machine (see
:mod:`tcplab.kernel.ss_line`); a netlink dump from a socket opened once costs no process.

The model: ``tc -s qdisc show`` sends ``RTM_GETQDISC`` with ``NLM_F_DUMP`` and prints, per
qdisc, what Linux v6.12 net/sched/sch_api.c: tc_fill_qdisc() put in the ``RTM_NEWQDISC``
reply: ``struct tcmsg`` (``tcm_ifindex``, ``tcm_handle``, ``tcm_parent``: ``TC_H_ROOT`` for
a device's root), ``TCA_KIND`` and ``TCA_STATS2`` whose ``TCA_STATS_QUEUE`` is
``struct gnet_stats_queue`` (``qlen``, ``backlog`` bytes, ``drops``, ``requeues``,
``overlimits``), the numbers iproute2's tc/tc_util.c: print_tcstats2_attr() prints as
``qlen``/``backlog``/``drops`` (a root tbf reports its child's packets and drops as its
own, sch_tbf.c). Device names come from an ``RTM_GETLINK`` dump (``IFLA_IFNAME``), once.

A netlink socket belongs to the network namespace it was created in:
:func:`netns_socket` enters the namespace (``setns(2)`` on the calling thread, through the
file ``ip netns add`` bind-mounts at ``/run/netns/NAME``), creates the socket and returns
to the thread's own namespace. Python 3.11 has no ``os.setns``: libc's, through ctypes.

The parsing (:func:`parse_messages`, :func:`parse_attrs`, :func:`parse_qdisc`,
:func:`parse_link`) is pure; tests build the messages from the uapi layouts.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = [
    "QdiscCounters",
    "NetlinkQdiscReader",
    "netns_socket",
    "parse_messages",
    "parse_attrs",
    "parse_qdisc",
    "parse_link",
    "TC_H_ROOT",
]

NETLINK_ROUTE = 0
CLONE_NEWNET = 0x40000000
NETNS_RUN_DIR = "/run/netns"

# include/uapi/linux/netlink.h, rtnetlink.h, if_link.h, pkt_sched.h, gen_stats.h
NLMSG_ERROR = 2
NLMSG_DONE = 3
NLM_F_REQUEST = 0x1
NLM_F_MULTI = 0x2
NLM_F_DUMP = 0x300
RTM_NEWLINK = 16
RTM_GETLINK = 18
RTM_NEWQDISC = 36
RTM_GETQDISC = 38
IFLA_IFNAME = 3
TCA_KIND = 1
TCA_STATS = 3
TCA_STATS2 = 7
TCA_STATS_QUEUE = 3
NLA_TYPE_MASK = 0x3FFF  # without NLA_F_NESTED / NLA_F_NET_BYTEORDER
TC_H_ROOT = 0xFFFFFFFF

NLMSGHDR = struct.Struct("=IHHII")  # len, type, flags, seq, pid
RTATTR = struct.Struct("=HH")  # len, type
TCMSG = struct.Struct("=BBHiIII")  # family, pad1, pad2, ifindex, handle, parent, info
IFINFOMSG = struct.Struct("=BBHiII")  # family, pad, type, index, flags, change
GNET_STATS_QUEUE = struct.Struct("=5I")  # qlen, backlog, drops, requeues, overlimits
#: struct tc_stats (TCA_STATS, the old layout): bytes, packets, drops, overlimits, bps, pps,
#: qlen, backlog
TC_STATS = struct.Struct("=QIIIIIII")


def _align(n: int) -> int:
    return (n + 3) & ~3


@dataclass(frozen=True)
class QdiscCounters:
    """One qdisc of a dump: where it hangs and the queue counters tc prints."""

    ifindex: int
    handle: int
    parent: int
    kind: str
    qlen: int
    backlog_bytes: int
    drops: int


def parse_messages(buf: bytes) -> Iterator[tuple[int, int, int, bytes]]:
    """``(type, flags, seq, payload)`` of each netlink message in ``buf`` (NLMSG_ALIGN'ed)."""
    at = 0
    while at + NLMSGHDR.size <= len(buf):
        length, mtype, flags, seq, _pid = NLMSGHDR.unpack_from(buf, at)
        if length < NLMSGHDR.size or at + length > len(buf):
            raise ValueError(f"netlink message of length {length} at byte {at} of {len(buf)}")
        yield mtype, flags, seq, buf[at + NLMSGHDR.size : at + length]
        at += _align(length)


def parse_attrs(buf: bytes) -> dict[int, bytes]:
    """A run of ``struct rtattr``/``nlattr``: ``{type: payload}`` (the last one of a type)."""
    out: dict[int, bytes] = {}
    at = 0
    while at + RTATTR.size <= len(buf):
        length, atype = RTATTR.unpack_from(buf, at)
        if length < RTATTR.size or at + length > len(buf):
            raise ValueError(f"netlink attribute of length {length} at byte {at} of {len(buf)}")
        out[atype & NLA_TYPE_MASK] = buf[at + RTATTR.size : at + length]
        at += _align(length)
    return out


def parse_qdisc(payload: bytes) -> QdiscCounters:
    """An ``RTM_NEWQDISC`` message's payload (module doc)."""
    _family, _p1, _p2, ifindex, handle, parent, _info = TCMSG.unpack_from(payload, 0)
    attrs = parse_attrs(payload[TCMSG.size :])
    kind = attrs.get(TCA_KIND, b"").split(b"\0", 1)[0].decode(errors="replace")
    qlen = backlog = drops = 0
    stats2 = parse_attrs(attrs[TCA_STATS2]) if TCA_STATS2 in attrs else {}
    if TCA_STATS_QUEUE in stats2:
        qlen, backlog, drops, _requeues, _overlimits = GNET_STATS_QUEUE.unpack_from(stats2[TCA_STATS_QUEUE], 0)
    elif TCA_STATS in attrs:
        _bytes, _packets, drops, _over, _bps, _pps, qlen, backlog = TC_STATS.unpack_from(attrs[TCA_STATS], 0)
    return QdiscCounters(ifindex, handle, parent, kind, qlen, backlog, drops)


def parse_link(payload: bytes) -> tuple[int, str]:
    """An ``RTM_NEWLINK`` message's payload: ``(ifindex, name)``."""
    _family, _pad, _type, index, _flags, _change = IFINFOMSG.unpack_from(payload, 0)
    name = parse_attrs(payload[IFINFOMSG.size :]).get(IFLA_IFNAME, b"").split(b"\0", 1)[0]
    return index, name.decode(errors="replace")


_libc: ctypes.CDLL | None = None


def _setns(fd: int) -> None:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


def netns_socket(ns: str) -> socket.socket:
    """A ``NETLINK_ROUTE`` socket in network namespace ``ns`` (module doc)."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        target = os.open(os.path.join(NETNS_RUN_DIR, ns), os.O_RDONLY | os.O_CLOEXEC)
        try:
            _setns(target)
            try:
                return socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, NETLINK_ROUTE)
            finally:
                _setns(own)
        finally:
            os.close(target)
    finally:
        os.close(own)


class NetlinkQdiscReader:
    """Dumps one namespace's qdiscs over a netlink socket opened once (module doc)."""

    def __init__(self, ns: str):
        self.ns = ns
        self.sock = netns_socket(ns)
        self._seq = 0
        self.names = self._links()

    def _links(self) -> dict[int, str]:
        return dict(parse_link(p) for p in self._dump(RTM_GETLINK, RTM_NEWLINK, IFINFOMSG.pack(0, 0, 0, 0, 0, 0)))

    def _dump(self, request: int, reply: int, body: bytes) -> list[bytes]:
        self._seq += 1
        seq = self._seq
        self.sock.send(NLMSGHDR.pack(NLMSGHDR.size + len(body), request, NLM_F_REQUEST | NLM_F_DUMP, seq, 0) + body)
        out: list[bytes] = []
        while True:
            data = self.sock.recv(1 << 16)
            for mtype, _flags, got_seq, payload in parse_messages(data):
                if got_seq != seq:
                    continue  # the rest of an earlier dump that ended in an error
                if mtype == NLMSG_DONE:
                    return out
                if mtype == NLMSG_ERROR:
                    (code,) = struct.unpack_from("=i", payload, 0)
                    if code:
                        raise OSError(-code, f"netlink dump in {self.ns}: {os.strerror(-code)}")
                    return out
                if mtype == reply:
                    out.append(payload)

    def root_qdiscs(self) -> dict[str, QdiscCounters]:
        """``{device: its root qdisc's counters}`` as a ``tc -s qdisc show`` now would print them."""
        out: dict[str, QdiscCounters] = {}
        for payload in self._dump(RTM_GETQDISC, RTM_NEWQDISC, TCMSG.pack(0, 0, 0, 0, 0, 0, 0)):
            q = parse_qdisc(payload)
            if q.parent == TC_H_ROOT:
                name = self.names.get(q.ifindex)
                if name is None:  # a device made after the link dump: ask again, once
                    self.names = self._links()
                    name = self.names.get(q.ifindex, f"if{q.ifindex}")
                out[name] = q
        return out

    def close(self) -> None:
        self.sock.close()
