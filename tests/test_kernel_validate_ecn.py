"""tcplab validate on the real kernel with ECN (issue 28): the ECN CUBIC case
tests/data/validate-ecn.yaml (a drop-tail path every kernel builds; tcp_ecn 1 on both hosts),
and the case with CE marks, tests/data/validate-ecn-marking.yaml (fq_codel's ce_threshold,
the delay line's step marker on a kernel without sch_fq_codel).

The kernel and the simulator must agree that ECN was negotiated (ss -tio's ``ecn`` on both
sockets, ``ecnseen`` on the receiver's) and on the ECT(0) data the receiver got (nstat
``IpExtInECT0Pkts``): both are settled by the handshake and the data count, not by chance,
so these verdicts are the test. And the comparison must fail when the kernel ran without
ECN on one side: the kernel runs the case with the receiving host's ``tcp_ecn`` 0 while the
simulation runs it as written.

Where the marks fall is chance (a CUBIC cycle crossing the threshold, a few times a run):
the CE counts' verdicts are the finding (docs/kernel-pin.md gives them, with --runs 3), not
the test; the test holds the plumbing: both worlds mark, and the kernel's marks at the link
(the line's, read with the other counters) reach the receiver.

Marked ``kernel`` (root, namespaces, the delay line): about 20 s, 10 s and 20 s. Namespaces
use the prefix ``tle8``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kernel_runs import valid_run
from tcplab.kernel.names import is_ours
from tcplab.kernel.validate import kernel_options, validate
from tcplab.kernel.verdicts import ecn_state_text
from test_kernel_validate import _skip_reason

pytestmark = [pytest.mark.kernel]

CASE = Path(__file__).parent / "data" / "validate-ecn.yaml"
#: the case with CE marks: fq_codel ce_threshold 2 ms, the delay line's step marker here
MARKING_CASE = Path(__file__).parent / "data" / "validate-ecn-marking.yaml"
PREFIX = "tle8"


@pytest.fixture(scope="module")
def kernel_ready() -> None:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)


def row(v, metric: str):
    rows = [r for r in v.rows if r.metric == metric]
    assert len(rows) == 1, (metric, v.rows)
    return rows[0]


def nothing_left() -> None:
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout
    assert not [line for line in left.splitlines() if is_ours(PREFIX, line.split()[0])]


def checked(run, what: str):
    """``run()`` (a validation) until its kernel run is valid: kernel_runs.valid_run's rule,
    a validation's machine reasons being all of them when the machine's load made it invalid
    (Validation.busy)."""

    def once():
        v = run()
        v.machine_reasons = list(v.invalid_reasons) if v.busy else []
        return v

    return valid_run(once, what)


def test_ecn_cubic_case_agrees(kernel_ready, tmp_path):
    options = kernel_options(prefix=PREFIX, allow_busy=True)
    v = checked(lambda: validate(CASE, options=options, out=tmp_path / "v", overwrite=True), "the ECN CUBIC case")
    state = row(v, "ecn_state")
    assert state.verdict == "within", state.reason
    assert ecn_state_text(state.kernel) == "ecn / ecn ecnseen"
    ect0 = row(v, "ect0_pkts")
    assert ect0.subject == "client" and ect0.kernel and ect0.kernel > 1000
    assert ect0.verdict == "within", ect0.reason
    nothing_left()


def test_the_kernel_without_ecn_on_one_side_fails_the_case(kernel_ready, tmp_path):
    from tcplab.kernel.run import kernel_run
    from tcplab.loader import load_scenario

    def receiver_refuses(sc, options):
        return kernel_run(load_scenario(str(CASE), ["duration=5s", "hosts.client.sysctl.tcp_ecn=0"]), options=options)

    options = kernel_options(prefix=PREFIX, allow_busy=True)
    v = checked(
        lambda: validate(CASE, overrides=["duration=5s"], options=options, kernel_runner=receiver_refuses),
        "the ECN case against a kernel without ECN at the receiver",
    )
    state = row(v, "ecn_state")
    assert state.verdict == "outside" and ecn_state_text(state.kernel) == "- / -", state.reason
    ect0 = row(v, "ect0_pkts")
    assert ect0.verdict == "outside" and ect0.kernel == 0, ect0.reason
    nothing_left()


def test_the_marking_case_marks_in_both_worlds(kernel_ready, tmp_path):
    options = kernel_options(prefix=PREFIX, allow_busy=True)
    v = checked(
        lambda: validate(MARKING_CASE, options=options, out=tmp_path / "v", overwrite=True),
        "the ECN CUBIC case with CE marks",
    )
    assert row(v, "ecn_state").verdict == "within"
    marks, ce_in = row(v, "ce_marks"), row(v, "ce_pkts")
    assert marks.subject == "emu->client" and ce_in.subject == "client"
    # the simulator's fq_codel marks, and every mark reaches the receiver (no loss)
    assert marks.sim and marks.sim > 0 and ce_in.sim == marks.sim
    # the delay line marks, counted at the end of the traffic as the receiver's nstat: the
    # two snapshots are a few ms apart, in either order, so the packets marked or delivered
    # between them (at most a window: ~40 packets at 20 Mbit/s and 40 ms) are the only
    # difference (a CI run read the line first: 128 marks, 137 CE packets in)
    assert marks.kernel and marks.kernel > 0 and ce_in.kernel is not None
    assert abs(marks.kernel - ce_in.kernel) <= 40, (marks.kernel, ce_in.kernel)
    # neither world dropped: fq_codel's limit and CoDel's drops, which the line does not
    # have, played no part
    assert row_of(v, "queue_drops", "emu->client").sim == row_of(v, "queue_drops", "emu->client").kernel == 0
    kernel_json = (tmp_path / "v" / "kernel" / "kernel.json").read_text()
    assert "is the delay line's step marker" in kernel_json
    nothing_left()


def row_of(v, metric: str, subject: str):
    return next(r for r in v.rows if r.metric == metric and r.subject == subject)
