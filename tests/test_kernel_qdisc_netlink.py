"""The queue sampler's rtnetlink reader (tcplab.kernel.qdisc_netlink).

The parsing is checked on messages built from the uapi layouts (include/uapi/linux/
netlink.h, rtnetlink.h, pkt_sched.h, gen_stats.h); the live test, as root, holds the counters
of a dump against what ``tc -s -j qdisc show`` prints for the same qdiscs."""

from __future__ import annotations

import json
import os
import shutil
import socket
import struct
import subprocess

import pytest

from tcplab.kernel import qdisc_netlink as nl


def _attr(atype: int, payload: bytes) -> bytes:
    length = 4 + len(payload)
    return struct.pack("=HH", length, atype) + payload + b"\0" * ((4 - length % 4) % 4)


def _msg(mtype: int, body: bytes, flags: int = nl.NLM_F_MULTI) -> bytes:
    length = 16 + len(body)
    return struct.pack("=IHHII", length, mtype, flags, 1, 0) + body + b"\0" * ((4 - length % 4) % 4)


def _qdisc(ifindex: int, parent: int, kind: bytes, queue: tuple[int, int, int, int, int] | None, nested=True) -> bytes:
    body = struct.pack("=BBHiIII", socket.AF_UNSPEC, 0, 0, ifindex, 0x10000, parent, 1)
    body += _attr(nl.TCA_KIND, kind + b"\0")
    if queue is not None:
        # TCA_STATS2 is a nest: its type is read with or without NLA_F_NESTED
        basic = _attr(1, struct.pack("=QI", 123456, 89) + b"\0" * 4)
        q = _attr(nl.TCA_STATS_QUEUE, struct.pack("=5I", *queue))
        body += _attr(nl.TCA_STATS2 | (0x8000 if nested else 0), basic + q)
    return _msg(nl.RTM_NEWQDISC, body)


def test_a_dump_of_qdiscs_parses_to_tcs_counters():
    buf = _qdisc(3, nl.TC_H_ROOT, b"tbf", (4, 6056, 17, 0, 99)) + _qdisc(
        3, 0x10001, b"pfifo", (4, 6056, 17, 0, 0), nested=False
    )
    buf += _msg(nl.NLMSG_DONE, struct.pack("=i", 0))
    msgs = list(nl.parse_messages(buf))
    assert [m[0] for m in msgs] == [nl.RTM_NEWQDISC, nl.RTM_NEWQDISC, nl.NLMSG_DONE]
    root, child = (nl.parse_qdisc(m[3]) for m in msgs[:2])
    assert (root.ifindex, root.parent, root.kind) == (3, nl.TC_H_ROOT, "tbf")
    assert (root.qlen, root.backlog_bytes, root.drops) == (4, 6056, 17)  # qlen, backlog, drops of gnet_stats_queue
    assert (child.parent, child.kind, child.drops) == (0x10001, "pfifo", 17)


def test_the_old_tc_stats_layout_is_read_without_stats2():
    body = struct.pack("=BBHiIII", 0, 0, 0, 2, 0, nl.TC_H_ROOT, 1) + _attr(nl.TCA_KIND, b"pfifo_fast\0")
    body += _attr(nl.TCA_STATS, struct.pack("=QIIIIIII", 1000, 10, 5, 0, 0, 0, 2, 3028))
    q = nl.parse_qdisc(body)
    assert (q.kind, q.qlen, q.backlog_bytes, q.drops) == ("pfifo_fast", 2, 3028, 5)


def test_a_link_message_names_its_device():
    body = (
        struct.pack("=BBHiII", 0, 0, 1, 7, 0, 0) + _attr(nl.IFLA_IFNAME, b"eth1\0") + _attr(4, struct.pack("=I", 1500))
    )
    assert nl.parse_link(body) == (7, "eth1")


@pytest.mark.parametrize("bad", [struct.pack("=IHHII", 8, 36, 0, 1, 0), struct.pack("=IHHII", 400, 36, 0, 1, 0)])
def test_a_truncated_message_is_an_error_not_a_guess(bad):
    with pytest.raises(ValueError, match="netlink message of length"):
        list(nl.parse_messages(bad))


def _root_and_netns() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    if shutil.which("ip") is None or shutil.which("tc") is None:
        return "needs iproute2 (ip, tc)"
    return None


@pytest.mark.kernel
def test_a_live_dump_matches_tc(tmp_path):
    reason = _root_and_netns()
    if reason:
        pytest.skip(reason)
    ns = f"tlqnl{os.getpid()}"
    run = lambda *a: subprocess.run(["ip", "netns", "exec", ns, *a], check=True, capture_output=True)  # noqa: E731
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        run("ip", "link", "add", "va", "type", "veth", "peer", "name", "vb")
        run("ip", "addr", "add", "10.9.0.1/24", "dev", "va")
        for dev in ("lo", "va", "vb"):
            run("ip", "link", "set", dev, "up")
        run("ip", "neigh", "add", "10.9.0.2", "lladdr", "02:00:00:00:00:02", "dev", "va")
        # a tbf that passes one 1 kB packet (its burst), holds four (limit 5000 B) and drops the
        # rest: counters that stay put while tc and the dump read them
        run(
            "tc",
            "qdisc",
            "add",
            "dev",
            "va",
            "root",
            "handle",
            "1:",
            "tbf",
            "rate",
            "8kbit",
            "burst",
            "1600",
            "limit",
            "5000",
        )
        sender = "import socket\ns=socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        sender += "for _ in range(20):\n    s.sendto(b'x' * 1000, ('10.9.0.2', 9))\n"
        run("python3", "-c", sender)
        reader = nl.NetlinkQdiscReader(ns)
        try:
            roots = reader.root_qdiscs()
        finally:
            reader.close()
        tc = json.loads(run("tc", "-s", "-j", "qdisc", "show").stdout)
        tc_roots = {q["dev"]: q for q in tc if q.get("root")}
        assert set(roots) == set(tc_roots) == {"lo", "va", "vb"}
        for dev, q in roots.items():
            assert (q.kind, q.qlen, q.backlog_bytes, q.drops) == (
                tc_roots[dev]["kind"],
                tc_roots[dev]["qlen"],
                tc_roots[dev]["backlog"],
                tc_roots[dev]["drops"],
            ), dev
        assert roots["va"].qlen > 0 and roots["va"].drops > 0  # the case was exercised
        # and the reading thread is back in its own namespace
        assert os.readlink("/proc/thread-self/ns/net") == os.readlink("/proc/self/ns/net")
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)
