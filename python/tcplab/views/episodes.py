"""Episodes of a flow read from its time series: state spans, retransmissions, RTOs, a zoom window.

The model: the engine samples each flow every ``sample_interval`` (``timeseries.parquet``);
a sample's state (``ca_state_name``, ``cc_mode_name``) is taken to hold until the next
sample, so an episode shorter than the interval can fall between two samples and not show.
The marks are derived from columns the engine already writes:

* **retransmissions**: the samples where the cumulative ``retrans_segs`` grew (the mark
  carries how many segments were retransmitted since the previous sample);
* **RTOs**: the samples where the CA state became ``Loss``. The engine enters Loss only in
  ``enter_loss()`` from its retransmission timer (crates/tcplab-core/src/tcp/recovery.rs,
  after ``tcp_retransmit_timer()`` -> ``tcp_enter_loss()``, Linux v6.12
  net/ipv4/tcp_timer.c; Linux's other way in, PMTU's ``tcp_simple_retransmit()``, is not
  modelled), so each entry into Loss is an RTO; a repeated (backed-off) RTO while still in
  Loss does not show as a new entry, and the run's total is the flow's ``timeouts`` in the
  table;
* **fast-recovery episodes**: the samples where the CA state became ``Recovery``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Span", "state_spans", "entries", "retransmission_marks", "first_loss_s", "zoom_window"]


@dataclass(frozen=True)
class Span:
    """``label`` held from ``start_s`` to ``end_s``."""

    label: str
    start_s: float
    end_s: float


def state_spans(t_s: np.ndarray, labels: np.ndarray, interval_s: float) -> list[Span]:
    """Runs of equal consecutive labels, each held until the next sample (the last one for
    ``interval_s``)."""
    spans: list[Span] = []
    n = len(t_s)
    if n == 0:
        return spans
    start = 0
    for i in range(1, n + 1):
        if i == n or labels[i] != labels[start]:
            end = float(t_s[i]) if i < n else float(t_s[-1]) + interval_s
            spans.append(Span(str(labels[start]), float(t_s[start]), end))
            start = i
    return spans


def entries(t_s: np.ndarray, labels: np.ndarray, state: str) -> np.ndarray:
    """Times of the samples where the label became ``state`` (not counting a first sample
    that already is in it: a flow starts Open)."""
    labels = np.asarray(labels).astype(str)
    if len(labels) < 2:
        return np.array([], dtype=np.float64)
    became = (labels[1:] == state) & (labels[:-1] != state)
    return np.asarray(t_s, dtype=np.float64)[1:][became]


def retransmission_marks(t_s: np.ndarray, retrans_segs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(times, segments)``: the samples where the cumulative retransmission count grew,
    and by how much."""
    c = np.asarray(retrans_segs, dtype=np.float64)
    if len(c) == 0:
        return np.array([], dtype=np.float64), np.array([], dtype=np.float64)
    delta = np.diff(c, prepend=0.0)
    grew = delta > 0
    return np.asarray(t_s, dtype=np.float64)[grew], delta[grew]


def first_loss_s(t_s: np.ndarray, retrans_segs: np.ndarray, ca_state: np.ndarray) -> float | None:
    """The first sample that shows a loss response: a retransmission, or the CA state in
    Recovery or Loss; None if the flow never saw one."""
    times, _ = retransmission_marks(t_s, retrans_segs)
    states = np.asarray(ca_state).astype(str)
    hit = np.asarray(t_s, dtype=np.float64)[(states == "Recovery") | (states == "Loss")]
    candidates = [float(x[0]) for x in (times, hit) if len(x)]
    return min(candidates) if candidates else None


def zoom_window(
    start_s: float, end_s: float, interval_s: float, base_rtt_s: float, loss_s: float | None
) -> tuple[float, float] | None:
    """The zoomed cwnd panel's window: ``width = max(lifetime / 10, 20 samples, 20 base
    RTTs)``, starting a quarter of it before the first loss (or at the flow's start if there
    was none), kept inside the flow's lifetime. None if the window would be the whole run."""
    lifetime = end_s - start_s
    width = max(lifetime / 10.0, 20.0 * interval_s, 20.0 * base_rtt_s)
    if lifetime <= 0 or width >= 0.8 * lifetime:
        return None
    lo = start_s if loss_s is None else max(start_s, loss_s - width / 4.0)
    lo = min(lo, end_s - width)
    return lo, lo + width
