"""The scenario form of ``tcplab recommend``: run the sweep first, then recommend.

The model: ``--choose PATH=V1,V2`` and ``--over PATH=V1,V2`` become the sweep's ``--grid``
parameters (in that order: choices first, then conditions), ``--over PATH=LO..HI`` a
``--random`` range with ``-n N`` points, ``--seeds K`` its seeds, ``--set`` its base
overrides; the sweep (:mod:`tcplab.sweep`) runs into ``DIR/sweep`` and is resumable like
any sweep (rerun the same command: finished runs are skipped). The recommendation files go
into ``DIR`` next to it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tcplab.errors import ScenarioError

__all__ = ["sweep_for_recommend", "default_out", "DEFAULT_SEEDS", "SWEEP_SUBDIR"]

#: Seeds per point when ``--seeds`` is not given (as ``tcplab sweep``).
DEFAULT_SEEDS = 3
#: Where the scenario form's sweep lives inside the output directory.
SWEEP_SUBDIR = "sweep"

Spec = tuple[str, list[str] | None, str | None]


def default_out(source: Any, overrides: Sequence[str]) -> Path:
    """``runs/recommend-NAME`` (NAME from the scenario)."""
    from tcplab.loader import load_scenario

    sc = load_scenario(source, list(overrides))
    return Path("runs") / f"recommend-{sc.name}"


def _grid_and_random(choose: Sequence[Spec], over: Sequence[Spec], n: int | None) -> tuple[list[str], list[str]]:
    grid, random = [], []
    for path, labels, rng in choose:
        if rng is not None:
            raise ScenarioError(
                f"{path}={rng}: a setting you choose is a list of values, not a range",
                file="--choose",
                expected="PATH=V1,V2 such as flows.0.cc=cubic,bbr",
            )
        if not labels:
            raise ScenarioError(
                f"{path}: no values",
                file="--choose",
                expected="PATH=V1,V2 with a scenario (recommend runs the sweep), such as flows.0.cc=cubic,bbr",
            )
        grid.append(f"{path}={','.join(labels)}")
    for path, labels, rng in over:
        if rng is not None:
            random.append(f"{path}={rng}")
        elif labels:
            grid.append(f"{path}={','.join(labels)}")
        else:
            raise ScenarioError(
                f"{path}: no values",
                file="--over",
                expected="PATH=V1,V2 or PATH=LO..HI (with -n N) with a scenario, such as links.1.loss=0%..1%",
            )
    if random and n is None:
        raise ScenarioError(
            f"{random[0]}: a range needs the number of points", file="-n", expected="-n N with --over PATH=LO..HI"
        )
    if n is not None and not random:
        raise ScenarioError(f"{n} points but no range", file="-n", expected="-n only with --over PATH=LO..HI")
    return grid, random


def _as_recommend_error(error: ScenarioError, choose: Sequence[Spec], over: Sequence[Spec]) -> ScenarioError:
    """A sweep's error in the options the user typed: a value of a chosen path names
    ``--choose``, of a condition ``--over`` (the sweep names ``--grid``/``--random``/``--set``)."""
    options = {path: "--choose" for path, _, _ in choose} | {path: "--over" for path, _, _ in over}
    for e in error.errors:
        if e.file not in ("--grid", "--random", "--set"):
            continue
        for path, option in options.items():
            if e.path == path or e.path.startswith(path + "."):
                e.file = option
                break
        else:
            if e.file in ("--grid", "--random"):  # the space as a whole (too many points)
                e.file = "--choose/--over"
    if error.errors:
        error.file = error.errors[0].file
    error.args = (error.line(),)
    return error


def sweep_for_recommend(
    source: Any,
    *,
    choose: Sequence[Spec],
    over: Sequence[Spec],
    seeds: int | None,
    seed: int | None,
    n: int | None,
    overrides: Sequence[str] | None,
    out: str | os.PathLike[str] | None,
    jobs: int | None,
    dask: str | None,
    force: bool,
    quiet: bool,
    keep_runs: bool = False,
) -> Any:
    """Plan (every point validated before anything runs) and run the sweep; its result."""
    from tcplab.recommend.recommendation import prepare_recommend_dir

    try:
        from tcplab.sweep import plan_sweep, run_sweep
    except ImportError:
        raise ScenarioError(
            "this tcplab has no tcplab.sweep to run the sweep with",
            file="SOURCE",
            expected="a sweep directory (tcplab sweep -o DIR)",
        ) from None

    if jobs is not None and dask is not None:
        raise ScenarioError("--jobs and --dask given together", file="--dask", expected="one executor, not both")
    from tcplab.loader import scenario_data

    try:  # a missing or unreadable SOURCE is the first thing to say
        scenario_data(source)
    except ScenarioError:
        if (
            isinstance(source, (str, os.PathLike))
            and not str(source).startswith("builtin:")
            and not Path(source).exists()
        ):
            raise ScenarioError(
                "no such sweep directory, scenario file or built-in scenario",
                file=str(source),
                expected="a sweep directory (tcplab sweep -o DIR), a scenario YAML file or builtin:NAME",
            ) from None
        raise
    grid, random = _grid_and_random(choose, over, n)
    try:
        plan = plan_sweep(
            source, grid, random, n, seeds=seeds or DEFAULT_SEEDS, seed=seed, overrides=list(overrides or [])
        )
    except ScenarioError as e:
        raise _as_recommend_error(e, choose, over) from None
    if out is None:  # the API without a directory: the sweep runs in a temporary one
        import shutil
        import tempfile

        tmp = Path(tempfile.mkdtemp(prefix="tcplab-recommend-"))
        try:
            result = run_sweep(plan, tmp / SWEEP_SUBDIR, jobs=jobs, dask=dask, plots=False)
            result.dir = None
            return result
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    target, _ = prepare_recommend_dir(Path(out))  # kept on failure: the sweep in it resumes
    from tcplab.sweep.bar import SweepBar

    bar = SweepBar(enabled=not quiet, plan=plan)
    try:
        return run_sweep(
            plan, target / SWEEP_SUBDIR, jobs=jobs, dask=dask, force=force, keep_runs=keep_runs, progress=bar
        )
    finally:
        bar.close()
