"""Where the delay line's writes are processed (tcplab.kernel.plan, "receive packet steering").

A write into a TUN runs the packet's whole way on in the writer's system call (Linux
drivers/net/tun.c: tun_get_user() -> netif_receive_skb()); the node-side veth of a wire with a
delay line therefore steers its receive processing (``rps_cpus``) to every CPU but the line's,
so the line's CPU does not also run the next node's routing, shaper and TCP. Pure plan
checks (no root); the kernel runs that measure the effect are bench/validate_matrix.py's
large-buffer cells.
"""

from __future__ import annotations

import tcplab
from tcplab.kernel.options import KernelOptions
from tcplab.kernel.plan import make_plan, rps_mask
from test_kernel_plan import P, env


def _plan(sets=(), delayline_cpu=1, **env_over):
    sc = tcplab.load_scenario("builtin:cubic-vs-bbr-lossy", list(sets))
    return make_plan(sc.to_core(), env(**env_over), KernelOptions(prefix=P, delayline_cpu=delayline_cpu))


def _rps(plan) -> dict[tuple[str, str], str]:
    """(ns, dev) -> mask of every rps_cpus command of the plan."""
    out = {}
    for c in plan.commands:
        if c[:3] == ["ip", "netns", "exec"] and c[4:6] == ["sh", "-c"] and "rps_cpus" in c[6]:
            dev = c[6].split("/sys/class/net/")[1].split("/")[0]
            out[(c[3], dev)] = c[6].split("echo ")[1].split(" ")[0]
    return out


def test_mask_is_every_cpu_but_the_lines():
    assert rps_mask(2, 1) == "1"
    assert rps_mask(2, 0) == "2"
    assert rps_mask(4, 1) == "d"  # 0b1101
    assert rps_mask(64, 0) == format((1 << 64) - 2, "x")
    # nothing to steer to: one CPU, or the line not on an online CPU
    assert rps_mask(1, 0) == ""
    assert rps_mask(2, 2) == ""
    assert rps_mask(2, None) == ""


def test_the_node_side_veths_of_a_delay_line_wire_steer_away_from_its_cpu():
    plan = _plan()
    # entry 1 (emu <-> client) is the wire with the delay line: emu's eth1 and the client's
    # eth0 are the devices the line's writes come out on (one per direction)
    (wire,) = plan.wires
    assert [t.name for t in wire.tuns] == ["tab", "tba"]
    assert _rps(plan) == {(f"{P}-emu", "eth1"): "1", (f"{P}-client", "eth0"): "1"}
    # set after the devices exist (links, addresses) and before traffic (the plan's order)
    texts = [" ".join(c) for c in plan.commands]
    first_rps = next(i for i, t in enumerate(texts) if "rps_cpus" in t)
    assert first_rps > max(i for i, t in enumerate(texts) if " link add " in t)
    # the command does nothing on a kernel without CONFIG_RPS (no file) instead of failing
    cmd = next(c for c in plan.commands if "rps_cpus" in " ".join(c))
    assert cmd[6].startswith("[ ! -e /sys/class/net/") and " || echo " in cmd[6]


def test_the_mask_follows_the_lines_cpu():
    assert set(_rps(_plan(delayline_cpu=0)).values()) == {"2"}
    assert set(_rps(_plan(delayline_cpu=1, cpus=4)).values()) == {"d"}


def test_no_steering_without_a_delay_line_or_a_second_cpu():
    assert _rps(_plan(cpus=1)) == {}
    # netem delays in a qdisc of the wire's egress (no TUN write): nothing to steer
    assert _rps(_plan(qdiscs=["pfifo", "tbf", "netem"])) == {}
    # a wire that only loses (no delay) has no line
    assert _rps(_plan(sets=["links.1.delay=0ms"])) == {}
