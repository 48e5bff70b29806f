"""``tcplab validate``: the same scenario in the simulator and on the running kernel, and a
verdict per metric on whether the simulator is within tolerance of the kernel.

The model. :func:`validate` runs the simulation (:func:`tcplab.run`) first, then the kernel
run (:func:`tcplab.kernel.run.kernel_run`: network namespaces, the kernel's own TCP; after
the simulation, so the machine is quiet while the kernel's traffic runs), compares them
(:func:`~tcplab.kernel.verdicts.compare_runs`, pure: the metrics, the steady part, the
tolerances and the verdicts are described there; with ``runs`` N > 1,
:func:`~tcplab.kernel.repeat.compare_repeated`) and writes the validation directory
(:func:`tcplab.views.validate.write_validation`). :func:`preflight` says before anything
runs what kernel mode cannot build. The names of :mod:`tcplab.kernel.verdicts` are
re-exported here.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tcplab.kernel.tolerances import Tolerances
from tcplab.kernel.verdicts import (
    METRICS,
    MIN_RTT_SAMPLES,
    STEADY_FRACTION,
    STEADY_MIN_S,
    VERDICTS,
    MetricRow,
    Validation,
    compare_runs,
    kernel_validity,
)

if TYPE_CHECKING:
    from tcplab.results import Result
    from tcplab.scenario import Scenario

__all__ = [
    "MetricRow",
    "Validation",
    "compare_runs",
    "validate",
    "kernel_validity",
    "METRICS",
    "MIN_RTT_SAMPLES",
    "STEADY_MIN_S",
    "STEADY_FRACTION",
    "VERDICTS",
    "ValidateError",
    "kernel_options",
    "preflight",
    "machine_info",
]


# -- running both -----------------------------------------------------------------------

#: ``runner(scenario, options) -> Result``: a kernel run of the (override-applied) scenario.
KernelRunner = Callable[["Scenario", Any], "Result"]


def machine_info() -> dict[str, Any]:
    """The machine the validation ran on (for the report's header)."""
    model = None
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "hostname": platform.node(),
        "system": f"{platform.system()} {platform.release()}",
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "python": platform.python_version(),
    }


class ValidateError(RuntimeError):
    """The kernel run failed (not a verdict: nothing to compare); one line, exit 1."""


def kernel_options(*, prefix: str = "tcplab", allow_busy: bool = False, timeout_ns: int | None = None, **extra: Any):  # noqa: ANN201
    """The kernel run's options (:class:`tcplab.kernel.KernelOptions` when kernel mode is
    installed; its fields are matched by name, so ``timeout_ns``/``timeout_s`` both work)."""
    values: dict[str, Any] = {"prefix": prefix, "allow_busy": allow_busy, "timeout_ns": timeout_ns, **extra}
    try:
        from tcplab.kernel.options import KernelOptions
    except ImportError:
        from types import SimpleNamespace

        return SimpleNamespace(**values)
    import dataclasses

    if dataclasses.is_dataclass(KernelOptions):
        names = {f.name for f in dataclasses.fields(KernelOptions)}
        if "timeout_s" in names and timeout_ns is not None:
            values["timeout_s"] = timeout_ns / 1e9
        return KernelOptions(**{k: v for k, v in values.items() if k in names and v is not None})
    return KernelOptions(**{k: v for k, v in values.items() if v is not None})


def _kernel_errors() -> tuple[type[BaseException], type[BaseException]]:
    """(KernelError, KernelUnsupported), or two classes nothing raises without kernel mode."""
    try:
        from tcplab.kernel.errors import KernelError, KernelUnsupported  # type: ignore[import-not-found]
    except ImportError:

        class _Never(Exception):
            pass

        return _Never, _Never
    return KernelError, KernelUnsupported


def preflight(sc: Scenario, options: Any) -> None:
    """What the kernel path cannot build, as a user error before anything runs (the
    simulation takes a while; a scenario the kernel cannot run should not wait for it): what
    this machine lacks for it, every item on its own line (:mod:`tcplab.kernel.needs`), then
    kernel mode's own plan (:func:`tcplab.kernel.plan.make_plan`); without kernel mode,
    nothing is checked here."""
    from tcplab.errors import ScenarioError

    try:
        from tcplab.kernel.env import probe  # type: ignore[import-not-found]
        from tcplab.kernel.plan import make_plan  # type: ignore[import-not-found]
    except ImportError:
        return
    failed, unsupported = _kernel_errors()
    env = probe(getattr(options, "prefix", "tcplab"))
    try:
        from tcplab.kernel.needs import MachineLacks, check_needs
    except ImportError:
        pass
    else:
        # (a probe that is not a KernelEnv, a stand-in, has no needs to check)
        try:
            if hasattr(env, "tools") and hasattr(env, "has_qdisc"):
                check_needs(env, sc.to_core())
        except MachineLacks as e:  # every missing thing, one error line each (exit 2)
            raise ScenarioError(e.lines[0], errors=[ScenarioError(line) for line in e.lines]) from e
    try:
        plan = make_plan(sc.to_core(), env, options)
    except unsupported as e:
        from tcplab.scenario.checks import engine_message

        raise ScenarioError(engine_message(sc, str(e))) from e
    # another run with this prefix (or a killed one's leftovers): refuse before simulating
    try:
        from tcplab.kernel.testbed import check_free  # type: ignore[import-not-found]
    except ImportError:
        return
    try:
        check_free(plan)
    except failed as e:
        raise ValidateError(str(e)) from e


def _default_kernel_runner(sc: Scenario, options: Any, progress: bool = True) -> Result:
    try:
        from tcplab.kernel.run import kernel_run
    except ImportError as e:
        raise ValidateError(f"kernel mode is not available in this tcplab ({e})") from e
    import inspect

    params = inspect.signature(kernel_run).parameters
    kwargs: dict[str, Any] = {"options": options}
    if "progress" in params:  # a progress bar on a terminal, as the simulation's
        kwargs["progress"] = progress
    return kernel_run(sc, **kwargs)


def _same_provenance(kern: Result, sim: Result) -> None:
    """The kernel run was handed the scenario with the overrides already applied: record the
    overrides it ran with (its title, summary and metadata) as the simulation's."""
    if getattr(kern, "overrides", None) or not sim.overrides:
        return
    kern.overrides = list(sim.overrides)
    if isinstance(getattr(kern, "summary", None), dict):
        kern.summary["title"] = kern.title
        kern.summary["description"] = kern.description
        kern.summary["overrides"] = list(kern.overrides)


def validate(
    scenario: str | Path | Mapping[str, Any] | Scenario,
    *,
    overrides: Iterable[str] | None = None,
    seed: int | None = None,
    tolerances: Tolerances | None = None,
    options: Any = None,
    out: str | Path | None = None,
    overwrite: bool = False,
    kernel_runner: KernelRunner | None = None,
    command: Sequence[str] | None = None,
    applied_overrides: Sequence[str] | None = None,
    core: Any = None,
    plots: bool = True,
    progress: bool = False,
    say: Callable[[str], None] | None = None,
    runs: int = 1,
) -> Validation:
    """Run ``scenario`` in the simulator and on the kernel, compare them and (with ``out``)
    write the validation directory atomically: ``OUT/sim/`` and ``OUT/kernel/`` (run
    directories), ``OUT/report.html``, ``OUT/report.md``, ``OUT/validation.json`` and
    ``OUT/plots/`` (:mod:`tcplab.views.validate`).

    ``options`` go to the kernel run unchanged (:func:`kernel_options`: prefix, allow_busy,
    timeout); ``kernel_runner`` replaces :func:`tcplab.kernel.kernel_run` (tests; a
    stand-in). ``progress``: the simulation's progress bar (on a terminal); ``say``: where
    one-line status messages go (the CLI: stderr). A scenario mistake raises before anything runs, and so does an output
    directory that cannot be written; a kernel run that fails raises :class:`ValidateError`
    (nothing written). An INVALID kernel run is written and compared without verdicts.

    ``runs`` N > 1 (:mod:`tcplab.kernel.repeat`): N simulations with the seeds seed ..
    seed+N-1 and N kernel runs, one after the other, written to ``OUT/sim/run-K`` and
    ``OUT/kernel/run-K``; verdicts from the means and the spread. A kernel run that is
    invalid (a busy machine, most often) is run once more with the same scenario and options
    and the second attempt counts (:attr:`Validation.retried` names them); one that fails
    or is invalid twice is excluded and named; with fewer than 2 valid ones there are no
    verdicts.
    """
    from tcplab.loader import load_scenario
    from tcplab.results.rundir import check_output_dir
    from tcplab.runner import override_texts
    from tcplab.runner import run as run_sim
    from tcplab.scenario import Scenario as _Scenario

    texts = [*(applied_overrides or []), *override_texts(list(overrides or []), seed)]
    if isinstance(scenario, _Scenario) and overrides is None and seed is None:
        sc = scenario
    else:
        sc = load_scenario(scenario, list(overrides or []), seed=seed)
    if out is not None:
        check_output_dir(Path(out), overwrite=overwrite)
    note = say or (lambda text: None)
    if runs < 1:
        raise ValueError(f"runs must be at least 1, got {runs}")
    from tcplab.scenario.cost import check_validate_time

    check_validate_time(sc, runs)  # runs x (simulation + kernel run) within limits.cpu_time
    if runs > 1:
        return _validate_repeated(
            sc, texts, runs, tolerances, options, out, overwrite, kernel_runner, command, core, plots, progress, note
        )
    note(f"simulating {sc.name} ({sc.to_core()['duration_ns'] / 1e9:g} s)")
    sim = run_sim(sc, applied_overrides=texts, command=command, core=core, progress=progress)
    failed, _ = _kernel_errors()
    note("running it on the kernel (network namespaces; the same duration of traffic)")
    try:
        if kernel_runner is not None:
            kern = kernel_runner(sc, options)
        else:
            kern = _default_kernel_runner(sc, options, progress=progress)
    except failed as e:
        raise ValidateError(f"kernel run failed: {e}") from e
    _same_provenance(kern, sim)
    v = compare_runs(sim, kern, tolerances)
    v.when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    v.machine = machine_info()
    v.command = list(command) if command is not None else None
    if out is not None:
        from tcplab.views.validate import write_validation

        write_validation(v, sim, kern, Path(out), overwrite=overwrite, plots=plots)
    return v


def _validate_repeated(
    sc: Scenario,
    texts: list[str],
    runs: int,
    tolerances: Tolerances | None,
    options: Any,
    out: str | Path | None,
    overwrite: bool,
    kernel_runner: KernelRunner | None,
    command: Sequence[str] | None,
    core: Any,
    plots: bool,
    progress: bool,
    note: Callable[[str], None],
) -> Validation:
    """``validate(runs=N)``, N > 1: N simulations (seeds seed .. seed+N-1), then N kernel runs
    one after the other (the machine quiet for each), then :func:`compare_repeated`."""
    from tcplab.kernel.repeat import compare_repeated
    from tcplab.runner import run as run_sim

    seed0 = int(sc.seed)
    seeds = [seed0 + k for k in range(runs)]
    base_texts = [t for t in texts if not t.startswith("seed=")]
    duration_s = sc.to_core()["duration_ns"] / 1e9
    sims = []
    for k, seed in enumerate(seeds):
        note(f"simulating {sc.name} ({duration_s:g} s), run {k + 1} of {runs} (seed {seed})")
        sims.append(run_sim(sc, seed=seed, applied_overrides=base_texts, command=command, core=core, progress=progress))
    failed, _ = _kernel_errors()
    kerns: list[Result | None] = []
    failures: dict[int, str] = {}
    retried: list[str] = []

    def one_kernel_run() -> Result:
        if kernel_runner is not None:
            return kernel_runner(sc, options)
        return _default_kernel_runner(sc, options, progress=progress)

    for k in range(runs):
        note(f"running it on the kernel, run {k + 1} of {runs} (network namespaces; the same duration of traffic)")
        try:
            kern = one_kernel_run()
        except (failed, ValidateError) as e:
            note(f"kernel run {k + 1} failed: {e}")
            kerns.append(None)
            failures[k] = str(e)
            continue
        ok, reasons = kernel_validity(kern)
        if not ok:  # invalid is not failed: once more, the same scenario and options
            first = "; ".join(reasons)
            note(f"kernel run {k + 1} is INVALID ({first}): running it once more")
            try:
                again = one_kernel_run()
            except (failed, ValidateError) as e:
                retried.append(f"kernel run-{k + 1}: retried once, the retry failed ({e}); the first attempt counts")
            else:
                ok2, reasons2 = kernel_validity(again)
                outcome = "valid" if ok2 else "INVALID again: " + "; ".join(reasons2)
                retried.append(f"kernel run-{k + 1}: retried once (the first attempt was INVALID: {first}); {outcome}")
                kern = again
        from types import SimpleNamespace

        # the kernel ran the same overrides; the simulations' seed=S is theirs, not its
        _same_provenance(kern, SimpleNamespace(overrides=list(base_texts)))  # type: ignore[arg-type]
        kerns.append(kern)
    if all(k is None for k in kerns):
        raise ValidateError(f"kernel run failed: all {runs} runs failed ({failures[0]})")
    v = compare_repeated(sims, kerns, tolerances, failures)
    v.retried = retried
    v.seeds = seeds
    # what ran: the overrides without run 1's seed (the seeds are listed apart)
    v.title = f"{sc.name} [{', '.join(base_texts)}]" if base_texts else sc.name
    v.when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    v.machine = machine_info()
    v.command = list(command) if command is not None else None
    if out is not None:
        from tcplab.views.validate import write_validation

        write_validation(v, sims, kerns, Path(out), overwrite=overwrite, plots=plots)
    return v
