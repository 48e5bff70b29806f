"""Slow readers in kernel mode (builtin:slow-reader): the receiving agent reads as the
engine's readers do (crates/tcplab-core/src/tcp/reader.rs). The rate reader takes at most
2 Mbit/s; TCP can deliver more than it reads only into the receive buffer, so over the run
the flow's goodput (bytes delivered to the socket) lies between what the reader took and
that plus the largest receive buffer (tcp_rmem[2], 6 MiB by default: 4.8 Mbit/s over 10 s).
The burst reader takes at most 64 kB every 100 ms: 5.12 Mbit/s, plus the buffer likewise.
The fast reader is not held back: it gets more than both together.

Root, namespaces and the delay line needed (skipped with the reason otherwise); ~15 s. A run
the busy machine makes INVALID is retried once, then skipped (tests/kernel_runs.py); INVALID
for another reason, the test fails (it asserted on any run, valid or not).
"""

from __future__ import annotations

import pytest

from kernel_runs import valid_run
from test_kernel_goodput import _skip_reason

PREFIX = "tlf3"
DURATION_S = 10
RMEM_MAX_BYTES = 6 * 1024 * 1024

pytestmark = [pytest.mark.kernel, pytest.mark.slow]


def test_slow_readers_hold_their_flows_back():
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    from tcplab.kernel import KernelOptions, kernel_run

    r = valid_run(
        lambda: kernel_run(
            "builtin:slow-reader",
            overrides=[f"duration={DURATION_S}s"],
            options=KernelOptions(prefix=PREFIX, allow_busy=True),
        ),
        "slow-reader",
    )
    flows = r.flows.set_index("name")
    slack_bps = RMEM_MAX_BYTES * 8 / DURATION_S
    rate = float(flows.loc["rate-reader", "goodput_bps"])
    bursts = float(flows.loc["burst-reader", "goodput_bps"])
    fast = float(flows.loc["fast-reader", "goodput_bps"])
    assert 0.8 * 2e6 <= rate <= 2e6 + slack_bps, rate
    assert 0.8 * 5.12e6 <= bursts <= 5.12e6 + slack_bps, bursts
    assert fast > rate + bursts
