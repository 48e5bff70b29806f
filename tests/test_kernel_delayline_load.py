"""The delay line keeps up with much data in flight (issue 23 item 1): a kernel run of
tests/data/validate-path-bigbuf.yaml at a 1 Gbit/s bottleneck (the 50 ms one-way delay on the
sender's link, so the line holds everything in flight; 32 MB buffers; BBR, 1 % loss).

The limits are kernel mode's validity limits for the line's own lateness (write time minus
due time; tcplab.kernel.measure.LIMITS: p99 1 ms, max 20 ms), and a line that keeps up
drops nothing (no packet refused at its queue limit, none dropped by the kernel in the
TUN's queue because the line read too late). Before the line's writes were steered off its
CPU (tcplab.kernel.plan, receive packet steering) this run gave p99 8-10 ms, max 19-25 ms
and ~40000 packets dropped in the TUN's queue.

Timing-dependent: marked ``slow`` and ``kernel``; it judges only a run whose quiet check
passed (a busy machine says nothing about the line: skipped with the measured load).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tcplab.kernel.measure import LIMITS

pytestmark = [pytest.mark.kernel, pytest.mark.slow]

PREFIX = "tlh23dl"
SCENARIO = Path(__file__).parent / "data" / "validate-path-bigbuf.yaml"
#: 1 BDP of 1514-byte frames at 1 Gbit/s and 100 ms (bench/validate_matrix.py's queue rule)
QUEUE_PACKETS = 8257


def _skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    for tool in ("ip", "tc", "ss", "nstat", "nft", "ethtool"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    from tcplab.kernel.delayline import delayline_argv
    from tcplab.kernel.errors import KernelError

    try:
        delayline_argv()
    except KernelError as e:
        return str(e)
    if (os.cpu_count() or 1) < 2:
        return "needs 2 CPUs (the delay line runs apart from the traffic)"
    done = subprocess.run(["ip", "netns", "add", f"{PREFIX}-probe"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return f"ip netns add failed: {done.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", f"{PREFIX}-probe"], capture_output=True, check=False)
    return None


@pytest.mark.parametrize("first_link", ["10Gbit", "1Gbit"])
def test_the_line_is_on_time_with_a_1_gbit_path_in_flight(first_link):
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    from tcplab.kernel import KernelOptions, kernel_run

    r = kernel_run(
        str(SCENARIO),
        overrides=[
            f"links.0.rate={first_link}",
            "links.1.rate=1Gbit",
            f"links.1.queue.limit={QUEUE_PACKETS}",
            "duration=10s",
        ],
        options=KernelOptions(prefix=PREFIX, allow_busy=True),
    )
    quiet = r.kernel.get("quiet") or {}
    if not quiet.get("ok", False):
        pytest.skip(f"the machine was busy before the run: {quiet.get('reason')}")
    lines = r.kernel["delaylines"]
    assert lines, "the path has a delay line"
    for ns, stats in lines.items():
        for tun in stats["tuns"]:
            late = tun["lateness_ns"]
            where = f"{ns}/{tun['name']}: p99 {late['p99'] / 1e6:.2f} ms, max {late['max'] / 1e6:.2f} ms"
            assert late["p99"] <= LIMITS["delayline_late_p99_ns"], where
            assert late["max"] <= LIMITS["delayline_late_max_ns"], where
            assert tun["drops"] == 0, f"{ns}/{tun['name']}: {tun['drops']} packets dropped"
    # the data direction held a deep queue (the point of the cell): more than 1000 packets
    tab = next(t for s in lines.values() for t in s["tuns"] if t["name"] == "tab")
    assert tab["queue_max_packets"] > 1000 and tab["queue_max_bytes"] > 1000 * 1000
