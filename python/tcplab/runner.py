"""Running one scenario: load -> resolve -> simulate -> :class:`~tcplab.results.Result`.

This is ``tcplab.run``; the CLI's ``tcplab run`` is this plus writing the run directory.

Floor 5 (DESIGN.md's "Layout"): the top of the single-run pipeline, it imports the floors below
(scenario, engine, results, and the views and exports whose writers it hands to each
:class:`~tcplab.results.Result`), never the commands' packages or the commands.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tcplab.errors import EngineError
from tcplab.loader import load_scenario
from tcplab.overrides import Override, parse_overrides
from tcplab.progress import SimProgress
from tcplab.scenario import Scenario

if TYPE_CHECKING:  # NumPy/pandas load on first run, not on `import tcplab`
    from tcplab.engine import Core
    from tcplab.results import Result

__all__ = ["run", "override_texts"]


def override_texts(
    overrides: Iterable[str | Override] | Mapping[str, Any] | None, seed: int | None = None
) -> list[str]:
    """The overrides of one run as ``PATH=VALUE`` text (``seed=N`` last), for provenance."""
    texts = [f"{ov.dotted}={ov.labels[0]}" for ov in parse_overrides(overrides)]
    if seed is not None:
        texts.append(f"seed={seed}")
    return texts


def run(
    scenario: str | Path | Mapping[str, Any] | Scenario,
    *,
    overrides: Iterable[str | Override] | Mapping[str, Any] | None = None,
    seed: int | None = None,
    progress: bool | Callable[[int, int], None] = False,
    core: Core | None = None,
    applied_overrides: Sequence[str] | None = None,
    command: Sequence[str] | None = None,
    capture: Mapping[str, Any] | None = None,
) -> Result:
    """Simulate a scenario and return its :class:`~tcplab.results.Result`.

    Args:
        scenario: a path, ``builtin:NAME``, a dict, or a :class:`Scenario`.
        overrides: ``--set``-style overrides (``["links.0.loss=0.1%"]``).
        seed: replaces the scenario's seed.
        progress: ``True`` for a progress bar on long runs (terminal only), or a callable
            ``(sim_now_ns, duration_ns)``.
        core: the engine module to use (tests pass a double); default ``tcplab._core``.
        applied_overrides: for a :class:`Scenario` that already has overrides applied (the
            CLI, ``tcplab.compare``), their text, recorded in the run directory and title.
        command: the command line, recorded in metadata.json.
        capture: capture one flow's packets, ``{"flow": NAME or INDEX, "at": "sender" |
            "receiver", "max_packets": N}`` (``at`` and ``max_packets`` optional): the result
            holds them (``Result.capture``) and its run directory ``FLOW.pcap``
            (:mod:`tcplab.exports.pcap`). The run itself is the same with or without it.

    Raises:
        ScenarioError: the scenario is invalid (nothing was run).
        EngineError: the simulator failed.
    """
    from tcplab.engine import run_core
    from tcplab.exports import write_exports
    from tcplab.results import Result
    from tcplab.views import write_run_views

    if isinstance(scenario, Scenario) and overrides is None and seed is None:
        sc = scenario
    else:
        sc = load_scenario(scenario, overrides, seed=seed)
    applied = [*(applied_overrides or []), *override_texts(overrides, seed)]
    config = sc.to_core()
    engine_config = config
    if capture is not None:
        from tcplab.exports.pcap import capture_config

        spec = dict(capture)
        engine_config = {**config, "capture": capture_config(config, spec.pop("flow"), **spec)}
    reporter: SimProgress | None = None
    if callable(progress):
        callback: Callable[[int, int], None] | None = progress
    elif progress:
        reporter = SimProgress(sc.name)
        callback = reporter
    else:
        callback = None
    started = time.perf_counter()
    try:
        output = run_core(engine_config, progress=callback, core=core)
    except EngineError as e:  # name the scenario's YAML paths, not the engine config's
        from tcplab.scenario.checks import engine_message

        raise type(e)(engine_message(sc, str(e))) from e
    finally:
        if reporter is not None:
            reporter.close()
    result = Result(
        sc,
        config,
        output,
        wall_time_s=time.perf_counter() - started,
        views=write_run_views,
        exports=write_exports,
        overrides=applied,
        command=command,
    )
    if capture is not None and output.capture is None:
        raise EngineError("engine output: no capture, although the configuration asked for one")
    if output.capture is not None:
        from tcplab.exports.pcap import pcap_bytes, pcap_name

        result.extra_files[pcap_name(config, output.capture.flow)] = pcap_bytes(config, output.capture)
    return result
