"""Host-link shaping in kernel mode: builtin:maerts' bottleneck is the server's own 50 Mbit/s
link (the server sends the data). The plan shapes a host's egress when its link is the
narrowest of a flow's route (tcplab.kernel.plan.shaped_host_links); unshaped, the veth let
the flow run at ~120 Mbit/s. Here the maerts flow alone, 10 s: its goodput must be within
10 % of the link's payload ceiling, 50 Mbit/s x 1448 / 1514 (tbf counts the 14-byte Ethernet
header of each 1500-byte IP packet; 1448 B of payload with timestamps), as in the simulator.

Root, namespaces and the delay line needed (skipped with the reason otherwise); ~15 s. A run
the busy machine makes INVALID is retried once, then skipped (tests/kernel_runs.py).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from kernel_runs import valid_run
from tcplab.kernel.names import is_ours
from test_kernel_goodput import _skip_reason

PREFIX = "tlf3"
LINK_BPS = 50_000_000
PAYLOAD_BPS = LINK_BPS * 1448 / 1514

pytestmark = [pytest.mark.kernel, pytest.mark.slow]


def test_maerts_flow_is_held_to_the_servers_link():
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    import tcplab
    from tcplab.kernel import KernelOptions, kernel_run

    data = yaml.safe_load((Path(tcplab.__file__).parent / "scenarios" / "maerts.yaml").read_text(encoding="utf-8"))
    data["flows"] = [f for f in data["flows"] if f["name"] == "maerts"]
    data["duration"] = "10s"
    sc = tcplab.load_scenario(data)
    r = valid_run(lambda: kernel_run(sc, options=KernelOptions(prefix=PREFIX, allow_busy=True)), "maerts")
    (flow,) = r.flows.itertuples()
    share = float(flow.goodput_bps) / PAYLOAD_BPS
    assert 0.9 <= share <= 1.1, f"maerts on the kernel: {flow.goodput_bps / 1e6:.1f} Mbit/s, {100 * share:.0f} %"
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout
    assert not [line for line in listed.splitlines() if line.strip() and is_ours(PREFIX, line.split()[0])]
