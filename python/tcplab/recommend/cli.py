"""``tcplab recommend``: the command (registered on the root app by :func:`register`).

    tcplab recommend SWEEP_DIR --choose PATH [--choose PATH] [--over PATH]...
        (--maximize METRIC | --minimize METRIC) [--subject-to CONSTRAINT]... [-o DIR] [--json]
    tcplab recommend SCENARIO --choose PATH=V1,V2 [--choose ...] [--over PATH=V1,V2 | --over PATH=LO..HI -n N]...
        [--seeds K] [--seed N] [--set PATH=VALUE]... (--maximize ... | --minimize ...) [--subject-to ...]...
        [-o DIR] [--jobs N | --dask ADDRESS] [--force]

(or ``--objective "maximize goodput subject to p99 RTT < 50 ms and no HLS stalls"``).

Exit codes: 0 a setting is recommended; 4 no setting meets the constraints (the output is
still printed and written: the ranking says how close each came); 2 a mistake on the
command line, in the objective, a metric or a parameter (one ``error:`` line), nothing
written; 1 the engine failed; 130/143 interrupted (the scenario form's sweep keeps the runs
done so far: rerun the same command to resume).
"""

# No `from __future__ import annotations`: typer reads the command's annotations at run
# time, and the option types below are built inside register() from tcplab.cli's helpers.
import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer

from tcplab.errors import ScenarioError
from tcplab.units import plural

__all__ = ["register"]

HELP = """Recommend the setting that meets an objective in the worst case over conditions.

SOURCE is a sweep directory (tcplab sweep -o DIR) or a scenario; with a scenario, --choose
and --over give values (PATH=V1,V2, or PATH=LO..HI with -n N for --over) and the sweep runs
first, into DIR/sweep (rerun the command to resume it).

--choose names the settings you control; --over the uncertain conditions (every other swept
parameter and the seeds are conditions too). Metrics in your words: goodput, p99 RTT,
retransmissions, timeouts, ring drops, TCPTimeouts, CurrEstab, ratios (TCPTimeouts /
CurrEstab), app metrics (HLS stalls, burst completion p99) or any column of the table;
bounds with units (50 ms, 10 Mbit/s, 3 %); 'no X' means X == 0.

Rule: per condition, the objective is the mean over seeds and each constraint must hold in
every seed's run; a setting scores its worst condition; settings that break a constraint
rank last. Exit 0 a setting is recommended, 4 none meets the constraints (output still
written), 2 a mistake in the command line or objective.

Example: tcplab recommend builtin:cubic-vs-bbr-lossy --set duration=20s --choose
flows.0.cc=cubic,bbr --over links.1.loss=0.5%,1% --seeds 2 --maximize goodput
--subject-to "p99 RTT < 175 ms" -o out/rec"""


def _is_sweep_dir(source: str) -> bool:
    p = Path(source)
    return p.is_dir() and ((p / "sweep.parquet").exists() or (p / "sweep.json").exists())


def _print(rec: Any, out_dir: Path | None) -> None:  # noqa: ANN401
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from tcplab.cli import _console
    from tcplab.recommend.robust import RULE, describe

    console = _console()
    s = rec.selection
    obj = s.objective
    console.print(Text(f"objective: {obj.text}"))
    seen = set()
    for m in [obj.metric, *(c.metric for c in obj.constraints)]:
        if m.name not in seen:
            seen.add(m.name)
            console.print(Text(f"  {m.name} = {m.source}"))
    conds = ", ".join(s.conditions_params) or "none"
    console.print(Text(f"conditions: {conds}; seeds {', '.join(str(x) for x in s.seeds)}"))
    console.print(Text(f"rule: {RULE}"))
    for note in s.notes:
        console.print(Text(f"note: {note}"))
    frame = rec.table
    table = Table(box=box.SIMPLE_HEAD)
    for col in frame.columns:
        table.add_column(str(col), justify="right" if col == "rank" or col.startswith(("worst", "mean")) else "left")
    for row in frame.itertuples(index=False):
        cells = []
        for v in row:
            if isinstance(v, bool):
                cells.append("yes" if v else "no")
            elif isinstance(v, float):
                cells.append("-" if math.isnan(v) else f"{v:.4g}")
            else:
                cells.append(str(v))
        table.add_row(*[Text(c) for c in cells])
    console.print(table)
    console.print(Text(rec.sentence))
    ev = rec.evidence
    if ev:
        console.print("evidence:")
        for e in ev:
            where = describe(e["condition"]) if e["condition"] else "-"
            metric = next(
                (m for m in [obj.metric, *(c.metric for c in obj.constraints)] if m.name == e["metric"]), obj.metric
            )
            line = (
                f"  {e['role']}: {describe(e['setting'])} at {where}, seed {e['seed']}: "
                f"{e['metric']} {metric.fmt(e['value'])}, run {e['run']}"
            )
            if e["run_dir"]:
                line += f" ({e['run_dir']})"
            console.print(Text(line))
    if out_dir is not None:
        console.print(Text(f"wrote {out_dir}"))


def register(app: typer.Typer) -> None:
    """Add ``tcplab recommend`` to the root app."""
    from tcplab.cli import QuietOpt, SeedOpt, SetOpt, _guard, _int_option, _jobs_opt

    @app.command(help=HELP)
    @_guard
    def recommend(
        source: Annotated[
            str, typer.Argument(metavar="SOURCE", help="A sweep directory, or a scenario (YAML, builtin:NAME).")
        ],
        choose: Annotated[
            list[str] | None,
            typer.Option(
                "--choose",
                metavar="PATH[=V1,V2]",
                help="A parameter you set (scenario form: its values; sweep form: optionally a subset). Repeatable.",
            ),
        ] = None,
        over: Annotated[
            list[str] | None,
            typer.Option(
                "--over",
                metavar="PATH[=V1,V2|=LO..HI]",
                help="An uncertain condition to be robust over (a range LO..HI with -n N, scenario form). Repeatable.",
            ),
        ] = None,
        maximize: Annotated[
            str | None, typer.Option("--maximize", metavar="METRIC", help="Metric to maximize.")
        ] = None,
        minimize: Annotated[
            str | None, typer.Option("--minimize", metavar="METRIC", help="Metric to minimize.")
        ] = None,
        subject_to: Annotated[
            list[str] | None,
            typer.Option(
                "--subject-to",
                metavar="CONSTRAINT",
                help="'p99 RTT < 50 ms', 'TCPTimeouts / CurrEstab < 3 %', 'no HLS stalls'. Repeatable.",
            ),
        ] = None,
        objective: Annotated[
            str | None,
            typer.Option(
                "--objective",
                metavar="TEXT",
                help="The whole objective in one sentence: 'maximize goodput subject to p99 RTT < 50 ms and no "
                "HLS stalls' or 'keep TCPTimeouts / CurrEstab < 3 % while minimizing burst completion p99'.",
            ),
        ] = None,
        output: Annotated[
            Path | None,
            typer.Option(
                "--output",
                "-o",
                metavar="DIR",
                help="Write recommend.json, plots/recommend.png, report.html (scenario form: and the sweep in "
                "DIR/sweep; default runs/recommend-NAME).",
            ),
        ] = None,
        as_json: Annotated[
            bool, typer.Option("--json", help="Print recommend.json to stdout instead of text.")
        ] = False,
        seeds: Annotated[
            str | None,
            typer.Option(
                "--seeds",
                metavar="K",
                callback=_int_option("seeds", 1, 10_000, "a number of seeds"),
                help="Scenario form: seeds per point (seed, seed+1, ...; default 3).",
            ),
        ] = None,
        seed: SeedOpt = None,
        n: Annotated[
            str | None,
            typer.Option(
                "-n",
                metavar="N",
                callback=_int_option("n", 1, 100_000, "a number of random points"),
                help="Scenario form: points drawn for --over PATH=LO..HI.",
            ),
        ] = None,
        set_: SetOpt = None,
        jobs: _jobs_opt("Scenario form: processes to run the sweep in (default: one per core).") = None,
        dask: Annotated[
            str | None,
            typer.Option("--dask", metavar="ADDRESS", help="Scenario form: run the sweep on this Dask scheduler."),
        ] = None,
        keep_runs: Annotated[
            bool,
            typer.Option(
                "--keep-runs",
                help="Scenario form: keep each run's directory in DIR/sweep/runs/KEY/ (the evidence names them).",
            ),
        ] = False,
        force: Annotated[
            bool, typer.Option("--force", "-f", help="Scenario form: start the sweep in DIR/sweep over.")
        ] = False,
        quiet: QuietOpt = False,
        no_plots: Annotated[bool, typer.Option("--no-plots", help="Skip plots/recommend.png.")] = False,
    ) -> None:
        from tcplab.recommend import EXIT_NO_FEASIBLE, load_table, parse_choice, recommend_table

        choose_specs = choose or []
        over_specs = over or []
        if not choose_specs:
            raise ScenarioError("no setting to choose", file="--choose", expected="--choose PATH (a swept parameter)")
        if Path(source).is_dir() and not _is_sweep_dir(source):
            nested = Path(source) / "sweep"
            hint = f" (the sweep of a recommendation is {nested})" if _is_sweep_dir(str(nested)) else ""
            raise ScenarioError(
                f"is a directory but not a sweep directory (no sweep.json){hint}",
                file=str(source),
                expected="a sweep directory (tcplab sweep -o DIR) or a scenario file",
            )
        if _is_sweep_dir(source):
            for opt, given in (
                ("--keep-runs", keep_runs),
                ("--seeds", seeds is not None),
                ("-n", n is not None),
                ("--seed", seed is not None),
                ("--set", bool(set_)),
                ("--jobs", jobs is not None),
                ("--dask", dask is not None),
                ("--force", force),
            ):
                if given:
                    raise ScenarioError(
                        f"{opt} only applies when recommend runs the sweep",
                        file=opt,
                        expected="a scenario as SOURCE, or no such option with a sweep directory",
                    )
            table = load_table(source)
            rec = recommend_table(
                table,
                choose=choose_specs,
                over=over_specs,
                maximize=maximize,
                minimize=minimize,
                subject_to=subject_to or [],
                objective=objective,
                sweep_dir=source,
            )
            out_dir = output
        else:
            from tcplab.recommend.scenario import default_out, sweep_for_recommend

            chosen = [parse_choice(c, "--choose") for c in choose_specs]
            overs = [parse_choice(o, "--over") for o in over_specs]
            out_dir = output if output is not None else default_out(source, set_ or [])
            # the objective is checked before anything runs: its grammar, and the metrics and
            # bounds the table's fixed columns decide (app and nstat metrics once it has run)
            from tcplab.recommend.objective import check_grammar

            check_grammar(maximize=maximize, minimize=minimize, subject_to=subject_to or [], objective=objective)
            try:
                result = sweep_for_recommend(
                    source,
                    choose=chosen,
                    over=overs,
                    seeds=int(seeds) if seeds else None,
                    seed=int(seed) if seed is not None else None,
                    n=int(n) if n else None,
                    overrides=set_ or [],
                    out=out_dir,
                    jobs=int(jobs) if jobs else None,
                    dask=dask,
                    force=force,
                    keep_runs=keep_runs,
                    quiet=quiet or as_json,
                )
            except KeyboardInterrupt as e:  # the runs done are kept: the same command resumes
                from tcplab.signals import Terminated, exit_code_for

                what = "terminated" if isinstance(e, Terminated) else "interrupted"
                rows = Path(out_dir) / "sweep" / "rows"
                kept = len(list(rows.glob("*.parquet"))) if rows.is_dir() else 0
                typer.echo(
                    f"error: {what}; {kept} runs kept in {Path(out_dir) / 'sweep'} (the same command resumes)", err=True
                )
                raise typer.Exit(exit_code_for(e)) from None
            failures = getattr(result, "failures", None) or {}
            if failures:
                typer.echo(
                    f"warning: {plural(len(failures), 'run')} of the sweep failed "
                    f"(recorded in {Path(out_dir) / 'sweep'}); "
                    "the settings they belong to are infeasible",
                    err=True,
                )
            try:
                rec = recommend_table(
                    result.table,
                    choose=[p for p, _, _ in chosen],
                    over=[p for p, _, _ in overs],
                    maximize=maximize,
                    minimize=minimize,
                    subject_to=subject_to or [],
                    objective=objective,
                    sweep_dir=getattr(result, "dir", None),
                )
            except ScenarioError as e:
                # a metric only the table decides (an app's, an nstat counter's): the sweep
                # ran and is kept; say so, so the corrected command is known to be quick
                kept = getattr(result, "dir", None)
                if kept is not None:
                    e.expected = (e.expected + "; " if e.expected else "") + (
                        f"the sweep is kept in {kept}: the corrected command reuses its runs"
                    )
                    e.args = (e.line(),)
                raise
        if out_dir is not None:
            rec.write(out_dir, plots=not no_plots)
        if as_json:
            typer.echo(json.dumps(rec.to_json(), indent=2))
        elif not quiet:
            _print(rec, out_dir)
        if not rec.feasible:
            raise typer.Exit(EXIT_NO_FEASIBLE)
