"""The progress bar: silent for quick runs and off terminals, drawn for long ones."""

from __future__ import annotations

import io

from rich.console import Console

from tcplab.progress import SimProgress


def console(buffer: io.StringIO) -> Console:
    return Console(file=buffer, force_terminal=True, width=100)


def test_drawn_after_the_delay():
    buffer = io.StringIO()
    with SimProgress("demo", enabled=True, delay_s=0.0, console=console(buffer)) as progress:
        for k in range(5):
            progress(k * 15 * 10**9, 60 * 10**9)
    assert "s simulated" in buffer.getvalue() and "demo" in buffer.getvalue()


def test_quick_runs_print_nothing():
    buffer = io.StringIO()
    with SimProgress("demo", enabled=True, delay_s=3600, console=console(buffer)) as progress:
        progress(60 * 10**9, 60 * 10**9)
    assert buffer.getvalue() == ""


def test_disabled_prints_nothing():
    buffer = io.StringIO()
    with SimProgress("demo", enabled=False, delay_s=0.0, console=console(buffer)) as progress:
        progress(1, 2)
    assert buffer.getvalue() == ""


def test_not_a_terminal_means_disabled(monkeypatch):
    monkeypatch.setattr("sys.stdout", io.StringIO())
    assert SimProgress("demo").enabled is False
