"""loss-bound-cc (seed 001): a loss-based CC held at the Mathis bound by random loss.

Fed real-format ``ss -tin`` texts (tests/diagnose/fixtures/README.md): the finding names the
CUBIC connection whose RTT stays at its minimum while it retransmits ~1 % and sends at
1.22 x MSS / (RTT x sqrt(p)); not BBR on the same path, not CUBIC whose losses come with a
standing queue (congestion), not CUBIC far above its bound.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tcplab.diagnose import diagnose_paths
from tcplab.diagnose.rules import mathis_bound_bps

FIX = Path(__file__).parent / "fixtures"


def findings(*names: str):  # noqa: ANN201
    _host, found = diagnose_paths([FIX / n for n in names])
    return [f for f in found if f.id == "loss-bound-cc"]


def test_mathis_bound_formula() -> None:
    # 1448-byte MSS, 100 ms, 1 %: 1.22 x 11584 bit / (0.1 s x 0.1) = 1.413 Mbit/s
    assert mathis_bound_bps(1448, 0.1, 0.01) == pytest.approx(1.22 * 1448 * 8 / 0.01)


def test_cubic_on_a_randomly_lossy_path_is_named_and_bbr_is_not() -> None:
    (f,) = findings("ss_lossy_path_format.txt")
    assert f.seed == "001" and f.severity == "warning"
    assert f.data["peer"] == "10.0.9.5" and f.data["bound"] == 1 and f.data["cc"] == "cubic"
    assert f.data["loss_ratio"] == pytest.approx(132 / 13052)
    assert f.data["mathis_bps"] == pytest.approx(mathis_bound_bps(1448, 0.1006, 132 / 13052))
    assert all("10.0.9.6" not in e.text for e in f.evidence)  # the BBR socket is not evidence


def test_loss_with_a_standing_queue_or_far_above_the_bound_is_not_named() -> None:
    assert findings("ss_congestion_loss_format.txt") == []
    assert findings("ss_healthy_format.txt") == []


def test_without_bytes_sent_the_loss_rate_comes_from_acked_segments() -> None:
    (f,) = findings("ss_lossy_path_short_format.txt")
    acked_segs = 5426008 / 1448
    assert f.data["loss_ratio"] == pytest.approx(34 / (acked_segs + 34))
