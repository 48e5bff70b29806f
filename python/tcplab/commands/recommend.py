"""``tcplab recommend``: the setting that meets an objective in the worst case over
conditions, from a sweep (:mod:`tcplab.recommend`).

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

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer

from tcplab.commands.common import QuietOpt, SeedOpt, SetOpt, guard, int_option, jobs_opt, stdout_console
from tcplab.errors import ScenarioError
from tcplab.units import plural

__all__ = ["register", "recommend"]

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

SourceArg = Annotated[
    str, typer.Argument(metavar="SOURCE", help="A sweep directory, or a scenario (YAML, builtin:NAME).")
]
ChooseOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--choose",
        metavar="PATH[=V1,V2]",
        help="A parameter you set (scenario form: its values; sweep form: optionally a subset). Repeatable.",
    ),
]
OverOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--over",
        metavar="PATH[=V1,V2|=LO..HI]",
        help="An uncertain condition to be robust over (a range LO..HI with -n N, scenario form). Repeatable.",
    ),
]
MaximizeOpt = Annotated[str | None, typer.Option("--maximize", metavar="METRIC", help="Metric to maximize.")]
MinimizeOpt = Annotated[str | None, typer.Option("--minimize", metavar="METRIC", help="Metric to minimize.")]
SubjectToOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--subject-to",
        metavar="CONSTRAINT",
        help="'p99 RTT < 50 ms', 'TCPTimeouts / CurrEstab < 3 %', 'no HLS stalls'. Repeatable.",
    ),
]
ObjectiveOpt = Annotated[
    str | None,
    typer.Option(
        "--objective",
        metavar="TEXT",
        help="The whole objective in one sentence: 'maximize goodput subject to p99 RTT < 50 ms and no "
        "HLS stalls' or 'keep TCPTimeouts / CurrEstab < 3 % while minimizing burst completion p99'.",
    ),
]
OutputOpt = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "-o",
        metavar="DIR",
        help="Write recommend.json, plots/recommend.png, report.html (scenario form: and the sweep in "
        "DIR/sweep; default runs/recommend-NAME).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print recommend.json to stdout instead of text.")]
SeedsOpt = Annotated[
    str | None,
    typer.Option(
        "--seeds",
        metavar="K",
        callback=int_option("seeds", 1, 10_000, "a number of seeds"),
        help="Scenario form: seeds per point (seed, seed+1, ...; default 3).",
    ),
]
PointsOpt = Annotated[
    str | None,
    typer.Option(
        "-n",
        metavar="N",
        callback=int_option("n", 1, 100_000, "a number of random points"),
        help="Scenario form: points drawn for --over PATH=LO..HI.",
    ),
]
DaskOpt = Annotated[
    str | None,
    typer.Option("--dask", metavar="ADDRESS", help="Scenario form: run the sweep on this Dask scheduler."),
]
KeepRunsOpt = Annotated[
    bool,
    typer.Option(
        "--keep-runs",
        help="Scenario form: keep each run's directory in DIR/sweep/runs/KEY/ (the evidence names them).",
    ),
]
ForceOpt = Annotated[bool, typer.Option("--force", "-f", help="Scenario form: start the sweep in DIR/sweep over.")]
NoPlotsOpt = Annotated[bool, typer.Option("--no-plots", help="Skip plots/recommend.png.")]


@guard
def recommend(
    source: SourceArg,
    choose: ChooseOpt = None,
    over: OverOpt = None,
    maximize: MaximizeOpt = None,
    minimize: MinimizeOpt = None,
    subject_to: SubjectToOpt = None,
    objective: ObjectiveOpt = None,
    output: OutputOpt = None,
    as_json: JsonOpt = False,
    seeds: SeedsOpt = None,
    seed: SeedOpt = None,
    n: PointsOpt = None,
    set_: SetOpt = None,
    jobs: jobs_opt("Scenario form: processes to run the sweep in (default: one per core).") = None,
    dask: DaskOpt = None,
    keep_runs: KeepRunsOpt = False,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
    no_plots: NoPlotsOpt = False,
) -> None:
    from tcplab.recommend import EXIT_NO_FEASIBLE, is_sweep_dir

    if not choose:
        raise ScenarioError("no setting to choose", file="--choose", expected="--choose PATH (a swept parameter)")
    goal = {"maximize": maximize, "minimize": minimize, "subject_to": subject_to or [], "objective": objective}
    if Path(source).is_dir() and not is_sweep_dir(source):
        nested = Path(source) / "sweep"
        hint = f" (the sweep of a recommendation is {nested})" if is_sweep_dir(str(nested)) else ""
        raise ScenarioError(
            f"is a directory but not a sweep directory (no sweep.json){hint}",
            file=str(source),
            expected="a sweep directory (tcplab sweep -o DIR) or a scenario file",
        )
    if is_sweep_dir(source):
        _sweep_form_only(
            {
                "--keep-runs": keep_runs,
                "--seeds": seeds is not None,
                "-n": n is not None,
                "--seed": seed is not None,
                "--set": bool(set_),
                "--jobs": jobs is not None,
                "--dask": dask is not None,
                "--force": force,
            }
        )
        rec = _from_sweep_dir(source, choose, over or [], goal)
        out_dir = output
    else:
        sweep = {
            "seeds": int(seeds) if seeds else None,
            "seed": int(seed) if seed is not None else None,
            "n": int(n) if n else None,
            "jobs": int(jobs) if jobs else None,
            "dask": dask,
            "force": force,
            "keep_runs": keep_runs,
            "quiet": quiet or as_json,
        }
        rec, out_dir = _from_scenario(source, choose, over or [], goal, set_ or [], output, sweep)
    if out_dir is not None:
        rec.write(out_dir, plots=not no_plots)
    if as_json:
        typer.echo(json.dumps(rec.to_json(), indent=2))
    elif not quiet:
        _print(rec, out_dir)
    if not rec.feasible:
        raise typer.Exit(EXIT_NO_FEASIBLE)


def _sweep_form_only(given: dict[str, bool]) -> None:
    """With a sweep directory as SOURCE, the options that run the sweep are a mistake."""
    for opt, was_given in given.items():
        if was_given:
            raise ScenarioError(
                f"{opt} only applies when recommend runs the sweep",
                file=opt,
                expected="a scenario as SOURCE, or no such option with a sweep directory",
            )


def _from_sweep_dir(source: str, choose: list[str], over: list[str], goal: dict[str, Any]) -> Any:
    """The sweep form: the recommendation from the sweep directory's table."""
    from tcplab.recommend import load_table, recommend_table

    return recommend_table(load_table(source), choose=choose, over=over, sweep_dir=source, **goal)


def _from_scenario(
    source: str,
    choose: list[str],
    over: list[str],
    goal: dict[str, Any],
    overrides: list[str],
    output: Path | None,
    sweep: dict[str, Any],
) -> tuple[Any, Path]:
    """The scenario form: the objective checked, the sweep run into DIR/sweep (resumable),
    then the recommendation from its table; (the recommendation, DIR)."""
    from tcplab.recommend import parse_choice
    from tcplab.recommend.objective import check_grammar
    from tcplab.recommend.scenario import default_out

    chosen = [parse_choice(c, "--choose") for c in choose]
    overs = [parse_choice(o, "--over") for o in over]
    out_dir = output if output is not None else default_out(source, overrides)
    # the objective is checked before anything runs: its grammar, and the metrics and
    # bounds the table's fixed columns decide (app and nstat metrics once it has run)
    check_grammar(**goal)
    result = _run_sweep(source, chosen, overs, overrides, out_dir, sweep)
    failures = getattr(result, "failures", None) or {}
    if failures:
        typer.echo(
            f"warning: {plural(len(failures), 'run')} of the sweep failed "
            f"(recorded in {Path(out_dir) / 'sweep'}); "
            "the settings they belong to are infeasible",
            err=True,
        )
    return _recommend_from_result(result, chosen, overs, goal), out_dir


def _run_sweep(
    source: str, chosen: list, overs: list, overrides: list[str], out_dir: Path, sweep: dict[str, Any]
) -> Any:
    """The scenario form's sweep; interrupted, the runs done are kept (the same command resumes)."""
    from tcplab.recommend.scenario import sweep_for_recommend

    try:
        return sweep_for_recommend(source, choose=chosen, over=overs, overrides=overrides, out=out_dir, **sweep)
    except KeyboardInterrupt as e:  # the runs done are kept: the same command resumes
        from tcplab.signals import Terminated, exit_code_for

        what = "terminated" if isinstance(e, Terminated) else "interrupted"
        rows = Path(out_dir) / "sweep" / "rows"
        kept = len(list(rows.glob("*.parquet"))) if rows.is_dir() else 0
        typer.echo(f"error: {what}; {kept} runs kept in {Path(out_dir) / 'sweep'} (the same command resumes)", err=True)
        raise typer.Exit(exit_code_for(e)) from None


def _recommend_from_result(result: Any, chosen: list, overs: list, goal: dict[str, Any]) -> Any:
    """The recommendation from the scenario form's sweep. A metric only the table decides
    (an app's, an nstat counter's) that is wrong says the sweep is kept, so the corrected
    command is known to be quick."""
    from tcplab.recommend import recommend_table

    try:
        return recommend_table(
            result.table,
            choose=[p for p, _, _ in chosen],
            over=[p for p, _, _ in overs],
            sweep_dir=getattr(result, "dir", None),
            **goal,
        )
    except ScenarioError as e:
        kept = getattr(result, "dir", None)
        if kept is not None:
            e.expected = (e.expected + "; " if e.expected else "") + (
                f"the sweep is kept in {kept}: the corrected command reuses its runs"
            )
            e.args = (e.line(),)
        raise


def _print(rec: Any, out_dir: Path | None) -> None:  # noqa: ANN401
    """The recommendation as text: the objective and its metrics, the rule, the ranked
    table, the sentence and the evidence runs."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from tcplab.recommend.robust import RULE, describe

    console = stdout_console()
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
    app.command(help=HELP, short_help="Recommend the setting that meets an objective.")(recommend)
