"""Story 004's alert ratio has one definition everywhere (issue 21 item 17): as Prometheus'
``rate(TCPTimeouts[W]) / CurrEstab`` gives it, per second over a stated window, named
``rate(TCPTimeouts) / CurrEstab`` in summary.json's keys, the headline (runs tables,
``tcplab run``/``compare``), the broadcast figure, ``recommend`` and the microburst-ring
experiment. Before, claims used a per-second rate, the runs table the whole run's ratio and
recommend the whole run's (100.1 % in the README)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from tcplab.results.apps import TIMEOUT_RATE_NAME, headline, timeout_rate

ROOT = Path(__file__).resolve().parents[1]


def _bursts(starts_s, timeouts):
    return pd.DataFrame({"start_ns": [int(s * 1e9) for s in starts_s], "tcp_timeouts": timeouts})


def test_rate_over_the_bursts_span_as_prometheus():
    # bursts at 2, 3, 4 s, one a second: W = 3 s (to the end of the last one's interval);
    # 30 RTOs in it over 100 connections = 10 RTOs/s / 100 = 0.1 per s
    ratio, window = timeout_rate(
        {"curr_estab": 100, "tcp_timeouts": 31}, _bursts([2, 3, 4], [10, 10, 10]), {"interval_ns": 10**9}, 10 * 10**9
    )
    assert window == pytest.approx(3.0)
    assert ratio == pytest.approx(30 / 3.0 / 100)


def test_a_run_that_ends_inside_the_last_interval_shortens_the_window():
    ratio, window = timeout_rate({"curr_estab": 10}, _bursts([2, 3], [5, 5]), {"interval_ns": 10**9}, int(3.5 * 10**9))
    assert window == pytest.approx(1.5) and ratio == pytest.approx(10 / 1.5 / 10)


def test_no_connection_or_no_burst_is_no_value():
    assert timeout_rate({"curr_estab": 0}, _bursts([1], [1]), {"interval_ns": 10**9}, 10**10) == (None, None)
    assert timeout_rate({"curr_estab": 5}, _bursts([], []), {"interval_ns": 10**9}, 10**10) == (None, None)


@pytest.fixture(scope="module")
def overflowing_broadcast():
    """Story 004's broadcast at a small scale whose ring overflows (RTOs in every burst)."""
    from conftest import compiled_engine

    compiled_engine()
    import tcplab
    from tcplab.experiments import directory

    return tcplab.run(
        str(directory("microburst-ring") / "broadcast-nginx.yaml"),
        overrides=[
            "duration=4s",
            "flows.0.app.broadcast.connections=1000",
            "flows.0.app.broadcast.window=1ms",
            "hosts.nginx.nic.rx_queues=1",
            "hosts.nginx.nic.rx_ring=256",
        ],
    )


@pytest.mark.engine
def test_the_run_summary_and_headline_carry_the_rate(overflowing_broadcast):
    app = overflowing_broadcast.apps["events"]
    bursts = app.tables["bursts"]
    interval_s = app.spec["interval_ns"] / 1e9
    span = min(bursts["start_s"].iloc[-1] + interval_s, overflowing_broadcast.duration_s) - bursts["start_s"].iloc[0]
    expected = bursts["tcp_timeouts"].sum() / span / app.get("curr_estab")
    assert expected > 0
    assert app.get("timeouts_rate_per_estab") == pytest.approx(expected)
    assert app.get("timeouts_rate_window_s") == pytest.approx(span)
    assert "timeouts_per_estab" not in app.summary  # no second, whole-run definition
    shown = {h.label: h for h in headline(app)}
    assert shown[TIMEOUT_RATE_NAME].unit == "%/s"
    assert shown[TIMEOUT_RATE_NAME].value == pytest.approx(100 * expected)
    assert shown["rate window"].value == pytest.approx(span)


@pytest.mark.engine
def test_the_experiment_uses_the_same_rate(overflowing_broadcast):
    from tcplab.experiments.microburst_ring import run_metrics

    m = run_metrics(overflowing_broadcast)
    assert m["timeouts_per_estab_s"] == pytest.approx(
        overflowing_broadcast.apps["events"].get("timeouts_rate_per_estab")
    )


def test_recommend_reads_the_same_rate_under_the_same_name():
    from tcplab.recommend.metrics import resolve_metric

    m = resolve_metric("TCPTimeouts / CurrEstab", ["app.events.timeouts_rate_per_estab", "nstat.TcpCurrEstab"])
    assert m.name == TIMEOUT_RATE_NAME
    assert m.columns == ("app.events.timeouts_rate_per_estab",)
    assert m.threshold("3 %", "--subject-to", "x") == pytest.approx(0.03)
    assert m.threshold("3 %/s", "--subject-to", "x") == pytest.approx(0.03)
    assert m.fmt(0.2845) == "28.45 %/s"


def test_no_other_name_for_the_ratio_in_outputs_and_docs():
    """The old names of the other definitions are gone from code that prints and from the
    README (story 004's quoted claim, the team's own words, is kept)."""
    old = re.compile(r"TCPTimeouts/CurrEstab|TCPTimeouts per second / CurrEstab|timeouts_per_estab\b")
    found = []
    paths = [*(ROOT / "python" / "tcplab").rglob("*.py"), ROOT / "README.md", ROOT / "docs" / "applications.md"]
    for path in paths:
        if "diagnose" in path.parts:
            continue
        for k, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if old.search(line) and "engine's whole-run" not in line and '!= "timeouts_per_estab"' not in line:
                found.append(f"{path.relative_to(ROOT)}:{k}: {line.strip()[:120]}")
    assert not found, "\n".join(found)
