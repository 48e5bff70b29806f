"""``tcplab reproduce``'s output: one report per experiment and an index, written atomically.

The model. :func:`tcplab.experiments.reproduce.reproduce` plans and runs the experiments
*inside* the temporary directory of :func:`tcplab.results.rundir.write_dir_atomically`, then
:func:`write_reports` writes, beside the run directories:

``OUT/NAME/report.html``
    self-contained (plots embedded as ``data:`` URIs, no script, no outside file, as a run's
    report.html): the story it replays (its heading, its ``docs/stories.md#anchor`` named as
    text, and the story itself embedded: what happened, the mechanism, the fix, quoted from
    docs/stories.md, so that the page still tells it when attached to a ticket, where no link
    to the clone would resolve), the setup paragraph, the
    claims table "claim (story, quoted) | published | tcplab's figure | verdict" with the
    reason under each claim, the explanations with their figures, the ``tcplab diagnose``
    cross-check table, and the runs (label, group, scenario file, overrides, the ``tcplab
    run`` command that makes it by hand, its goodput headline, a link to its directory). A
    failed run or experiment is stated at the top, in red: a report never looks complete
    when it is not.
``OUT/NAME/report.md``
    the same in Markdown (tables and paragraphs, figures as relative links to ``plots/``).
``OUT/NAME/claims.json``
    the machine-readable record: every :class:`~tcplab.experiments.base.ClaimResult` (with
    its ``data``), the cross-checks, the runs with their commands and wall times.
``OUT/index.html``, ``OUT/index.md``, ``OUT/index.json``
    one row per experiment (story, claims reproduced / partly / not reproduced, cross-checks
    agreeing, wall time), the totals line ("N claims: a reproduced, b partly, c not
    reproduced"), quick or full mode, tcplab's version, and each claim's one-line verdict.

``OUT`` carries the marker of kind ``reproduce`` (:mod:`tcplab.results.rundir`), so
``--force`` replaces only a directory ``tcplab reproduce`` wrote. The views read the
experiments' outcomes (:class:`~tcplab.experiments.reproduce.Outcome`, their claims, runs
and cross-checks) as data: this module imports nothing of :mod:`tcplab.experiments` when it runs. Markdown in the
experiments' texts (setup, reasons, explanations) is rendered with markdown-it in
CommonMark mode with raw HTML off, so the page stays free of anything but what we write.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
from markupsafe import Markup

from tcplab.views.report import _STYLE, data_uri, scrolling, sig

if TYPE_CHECKING:
    from tcplab.experiments.reproduce import Outcome
    from tcplab.results import Result

__all__ = [
    "write_reports",
    "experiment_record",
    "index_record",
    "default_output",
    "story_info",
    "totals_line",
    "STORIES_DOC",
    "VERDICTS",
]

#: The page users read about the stories (never the seed files themselves).
STORIES_DOC = "docs/stories.md"

#: The claims' verdicts in the reports' order (:data:`tcplab.experiments.base.VERDICTS`).
VERDICTS = ("reproduced", "partly", "not reproduced")


def default_output(quick: bool) -> Path:
    """``reproduce/`` or ``reproduce-quick/`` in the current directory."""
    return Path("reproduce-quick" if quick else "reproduce")


# -- records (claims.json, index.json) -------------------------------------------------------
def _clean(x: Any) -> Any:
    """JSON-able: NumPy scalars and arrays to Python, NaN/inf to None, tuples to lists."""
    if isinstance(x, Mapping):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set, frozenset)):
        return [_clean(v) for v in x]
    if hasattr(x, "tolist") and not isinstance(x, (str, bytes)):  # numpy scalar or array
        return _clean(x.tolist())
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if isinstance(x, Path):
        return str(x)
    return str(x)


def _goodput_mbps(result: Result) -> float | None:
    flows = result.flows
    if flows is None or not len(flows) or "goodput_bps" not in flows:
        return None
    return float(flows["goodput_bps"].sum()) / 1e6


def _headline(result: Result) -> str:
    """The run's goodput plus each app's headline line (as ``tcplab run`` prints them)."""
    from tcplab.results.apps import headline_text

    parts = []
    g = _goodput_mbps(result)
    if g is not None:
        parts.append(f"goodput {sig(g)} Mbit/s")
    parts += [headline_text(app) for app in getattr(result, "apps", {}).values()]
    return "; ".join(parts)


def _story_number(seed: str) -> str:
    m = re.match(r"(\d{3})", seed or "")
    return m.group(1) if m else ""


#: docs/stories.md's headings, for an installed tcplab without the repository's docs.
_STORY_HEADINGS = {
    "000": "Story 000 (cluster BBR timeouts)",
    "001": "Story 001 (BBR vs CUBIC video demo)",
    "002": "Story 002 (Bandwidth Manager: EDT and fq instead of TBF)",
    "003": "Story 003 (BBR in VMs under CPU contention)",
    "004": "Story 004 (timeouts from microbursts)",
}


def _story_heading(number: str) -> str | None:
    """``Story 001 (BBR vs CUBIC video demo)``: from docs/stories.md when the repository is here."""
    doc = _stories_doc()
    if doc is not None and number:
        m = re.search(rf"^## (Story {number}\b.*)$", doc.read_text(encoding="utf-8"), flags=re.M)
        if m:
            return m.group(1).strip()
    return _STORY_HEADINGS.get(number)


def _stories_doc() -> Path | None:
    path = Path(__file__).resolve().parents[3] / STORIES_DOC  # the repository: python/tcplab/views/
    return path if path.is_file() else None


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    return re.sub(r"[^a-z0-9 -]", "", heading.lower()).replace(" ", "-")


#: The story's own paragraphs the reports embed (docs/stories.md's sections): the rest of a
#: section is about tcplab, which the report itself shows.
_STORY_PARTS = ("**What happened.**", "**Mechanism.**", "**Fix.**")


def _story_excerpt(number: str) -> str:
    """The story's "What happened", "Mechanism" and "Fix" paragraphs (Markdown), from
    docs/stories.md when the repository is here; "" otherwise."""
    doc = _stories_doc()
    if doc is None or not number:
        return ""
    page = doc.read_text(encoding="utf-8")
    m = re.search(rf"^## Story {number}\b.*?$(.*?)(?=^## |\Z)", page, flags=re.M | re.S)
    if not m:
        return ""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", m.group(1)) if p.strip()]
    return "\n\n".join(p for p in paragraphs if p.startswith(_STORY_PARTS))


def story_info(seed: str) -> dict[str, str]:
    """The story an experiment replays: its number, heading, seed, where it is told
    (``ref``: docs/stories.md#anchor in tcplab's repository, as text: a report travels
    without the clone, so it links to no file) and its text (``excerpt``, embedded)."""
    number = _story_number(seed)
    heading = _story_heading(number) or (f"Story {number}" if number else "story")
    anchor = _slug(heading)
    return {
        "number": number,
        "heading": heading,
        "seed": seed,
        "ref": f"{STORIES_DOC}#{anchor}",
        "excerpt": _story_excerpt(number),
    }


def experiment_record(outcome: Outcome, out_dir: Path | None = None) -> dict[str, Any]:
    """Everything the experiment's reports show, as JSON-able data (``claims.json``)."""
    from tcplab.version import __version__

    e = outcome.experiment
    runs = []
    for r in outcome.runs:
        res = outcome.results.get(r.label)
        runs.append(
            {
                "label": r.label,
                "group": r.group,
                "scenario": r.scenario,
                "overrides": r.overrides_for(outcome.quick),
                "command": r.command(e.name, outcome.quick),
                "directory": f"runs/{r.label}",
                "wall_time_s": getattr(res, "wall_time_s", None) if res is not None else None,
                "goodput_mbps": _goodput_mbps(res) if res is not None else None,
                "headline": _headline(res) if res is not None else "",
                "failed": outcome.failures.get(r.label),
            }
        )
    crosschecks = [
        {
            "run": c.check.run,
            "expect": list(c.check.expect),
            # "all": every expected finding must appear; "any": one is enough (Crosscheck.rule)
            "rule": c.check.rule,
            "expect_text": c.check.expect_text,
            "missing": list(getattr(c, "missing", [])),
            "absent": list(c.check.absent),
            "why": c.check.why,
            "at_s": c.check.at_s,
            "found": c.found,
            "summaries": c.summaries,
            "agree": c.agree,
            "note": c.note,
            # a check "during the incident" (at_s) reads a capture: NAME/captures/LABEL-at-<t>s/
            "capture": f"captures/{Path(c.capture).name}" if getattr(c, "capture", None) else None,
        }
        for c in outcome.crosschecks
    ]
    run_times = [x["wall_time_s"] for x in runs if x["wall_time_s"] is not None]
    return _clean(
        {
            "experiment": e.name,
            "title": e.title,
            "story": story_info(e.story),
            "setup": e.setup,
            "mode": "quick" if outcome.quick else "full",
            "tcplab": __version__,
            "error": outcome.error,
            "counts": outcome.counts(),
            "claims": [c.as_dict() for c in outcome.claims],
            "out_of_scope": [
                {"id": c.id, "quote": c.quote, "reason": c.out_of_scope} for c in getattr(e, "out_of_scope_claims", [])
            ],
            "crosschecks": crosschecks,
            "crosschecks_agree": sum(1 for c in outcome.crosschecks if c.agree),
            "explanations": [{"title": x.title, "text": x.text, "figure": x.figure} for x in outcome.explanations],
            "runs": runs,
            "runs_wall_time_s": sum(run_times) if run_times else None,
        }
    )


def _totals(records: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    totals = {v: sum(r["counts"].get(v, 0) for r in records) for v in VERDICTS}
    totals["claims"] = sum(totals[v] for v in VERDICTS)
    return totals


def totals_line(totals: Mapping[str, int]) -> str:
    """``N claims: a reproduced, b partly, c not reproduced``."""
    n = totals["claims"]
    return (
        f"{n} claim{'s' if n != 1 else ''}: {totals['reproduced']} reproduced, "
        f"{totals['partly']} partly, {totals['not reproduced']} not reproduced"
    )


def index_record(records: Sequence[Mapping[str, Any]], *, quick: bool, elapsed_s: float | None) -> dict[str, Any]:
    from tcplab.version import __version__

    totals = _totals(records)
    # in the stories' order (story 000 first), whatever order the experiments were named in
    records = sorted(records, key=lambda r: (r["story"]["number"] or "999", r["experiment"]))
    return _clean(
        {
            "mode": "quick" if quick else "full",
            "tcplab": __version__,
            "elapsed_s": elapsed_s,
            "totals": totals,
            "totals_line": totals_line(totals),
            "failed": [r["experiment"] for r in records if r["error"]],
            "experiments": [
                {
                    "experiment": r["experiment"],
                    "title": r["title"],
                    "story": r["story"],
                    "counts": r["counts"],
                    "crosschecks": len(r["crosschecks"]),
                    "crosschecks_agree": r["crosschecks_agree"],
                    "runs": len(r["runs"]),
                    "runs_wall_time_s": r["runs_wall_time_s"],
                    "error": r["error"],
                    "report": f"{r['experiment']}/report.html",
                    "claims": [
                        {"id": c["id"], "verdict": c["verdict"], "figure": c["figure"], "published": c["published"]}
                        for c in r["claims"]
                    ],
                    "out_of_scope": [c["id"] for c in r.get("out_of_scope", [])],
                }
                for r in records
            ],
        }
    )


# -- writing ---------------------------------------------------------------------------------
def write_reports(outcomes: Sequence[Outcome], out_dir: Path, *, quick: bool, elapsed_s: float | None = None) -> None:
    """Each experiment's report.html / report.md / claims.json, then the index."""
    out_dir = Path(out_dir)
    records = []
    for oc in outcomes:
        exp_dir = out_dir / oc.experiment.name
        (exp_dir / "plots").mkdir(parents=True, exist_ok=True)
        (exp_dir / "runs").mkdir(exist_ok=True)
        record = experiment_record(oc)
        records.append(record)
        (exp_dir / "claims.json").write_text(json.dumps(record, indent=2, allow_nan=False) + "\n", encoding="utf-8")
        (exp_dir / "report.md").write_text(experiment_markdown(record), encoding="utf-8")
        (exp_dir / "report.html").write_text(experiment_html(record, exp_dir / "plots"), encoding="utf-8")
    index = index_record(records, quick=quick, elapsed_s=elapsed_s)
    (out_dir / "index.json").write_text(json.dumps(index, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    (out_dir / "index.md").write_text(index_markdown(index), encoding="utf-8")
    (out_dir / "index.html").write_text(index_html(index), encoding="utf-8")


# -- Markdown --------------------------------------------------------------------------------
def _cell(text: Any) -> str:
    """A Markdown table cell: one line, pipes and HTML brackets escaped."""
    one_line = " ".join(str(text if text is not None else "-").split())
    return one_line.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _line(text: Any) -> str:
    """Text on one line (a list item)."""
    return " ".join(str(text if text is not None else "-").split())


def _seconds(x: Any) -> str:
    return "-" if x is None else f"{sig(float(x))} s"


def experiment_markdown(r: Mapping[str, Any]) -> str:
    story = r["story"]
    lines = [f"# {r['experiment']}: {r['title']}", ""]
    lines.append(
        f"Replays {story['heading']} (`{story['ref']}` in tcplab's repository), "
        f"from the seed `{story['seed']}`. Mode: {r['mode']}; {len(r['runs'])} runs, simulator wall time "
        f"{_seconds(r['runs_wall_time_s'])}; tcplab {r['tcplab']}."
    )
    lines.append("")
    if story.get("excerpt"):
        lines += ["## The story", ""]
        lines += [f"> {line}" if line else ">" for line in str(story["excerpt"]).splitlines()]
        lines.append("")
    if r["error"]:
        lines += ["**FAILED: this experiment did not complete; the results below are incomplete.**", ""]
        lines += ["```", str(r["error"]).rstrip(), "```", ""]
    lines += ["## Setup", "", str(r["setup"]).strip(), ""]
    lines += ["## Claims", ""]
    if r["claims"]:
        lines += ["| claim (story, quoted) | published | tcplab's figure | verdict |", "|---|---|---|---|"]
        for c in r["claims"]:
            lines.append(
                f"| {_cell(c['quote'])} | {_cell(c['published'])} | {_cell(c['figure'])} | **{c['verdict']}** |"
            )
        lines.append("")
        for c in r["claims"]:
            lines.append(f"- **{c['id']}** ({c['verdict']}): {_line(c['reason'])}")
            if c["conditions"]:
                lines.append(f"  Conditions chosen: {_line(c['conditions'])}")
            if c.get("modes"):
                lines.append(f"  Quick and full mode: {_line(c['modes'])}")
        lines.append("")
    else:
        lines += ["No claim was judged.", ""]
    if r.get("out_of_scope"):
        lines += ["### Claims tcplab does not judge", "", "| claim (story, quoted) | why not |", "|---|---|"]
        lines += [f"| {_cell(c['quote'])} | {_cell(c['reason'])} |" for c in r["out_of_scope"]]
        lines.append("")
    if r["explanations"]:
        lines += ["## What the trace shows", ""]
        for x in r["explanations"]:
            lines += [f"### {x['title']}", "", str(x["text"]).strip(), ""]
            if x["figure"]:
                lines += [f"![{x['title']}](plots/{x['figure']})", ""]
    lines += ["## tcplab diagnose on the runs' own tool texts", ""]
    if r["crosschecks"]:
        lines += ["| run | expected | absent | diagnose found | agrees |", "|---|---|---|---|---|"]
        for c in r["crosschecks"]:
            run = c["run"] + (f" (ss at {sig(c['at_s'])} s)" if c["at_s"] is not None else "")
            if c["capture"]:
                run += f" [{c['capture']}/]({c['capture']}/README.txt)"
            lines.append(
                f"| {_cell(run)} | {_cell(_expected_cell(c))} | {_cell(', '.join(c['absent']) or '-')} "
                f"| {_cell(', '.join(c['found']) or 'nothing')} | {'yes' if c['agree'] else '**no**'} |"
            )
        lines.append("")
        for c in r["crosschecks"]:
            if c["note"]:
                lines.append(f"- {c['run']}: {c['note']}")
    else:
        lines += ["No cross-check ran.", ""]
    lines += [
        "",
        "## Runs",
        "",
        "| run | group | scenario | overrides | result | wall time |",
        "|---|---|---|---|---|---|",
    ]
    for x in r["runs"]:
        result = f"FAILED: {x['failed']}" if x["failed"] else x["headline"]
        lines.append(
            f"| [{x['label']}]({x['directory']}/report.html) | {_cell(x['group'] or '-')} | {_cell(x['scenario'])} "
            f"| {_cell(' '.join(x['overrides']) or '-')} | {_cell(result)} | {_seconds(x['wall_time_s'])} |"
        )
    lines += ["", "Make a run by hand:", "", "```sh"]
    lines += [x["command"] for x in r["runs"]]
    lines += ["```", ""]
    return "\n".join(lines)


def _expected_cell(c: Mapping[str, Any]) -> str:
    """``all of: a, b`` / ``any of: a, b`` / ``a``, then the expected findings diagnose missed."""
    text = c.get("expect_text") or ", ".join(c["expect"]) or "-"
    return text + (f" (missing: {', '.join(c['missing'])})" if c.get("missing") else "")


def index_markdown(index: Mapping[str, Any]) -> str:
    lines = ["# tcplab reproduce: the five stories", ""]
    elapsed = f", {sig(index['elapsed_s'])} s wall" if index.get("elapsed_s") is not None else ""
    lines += [f"Mode: {index['mode']}; tcplab {index['tcplab']}{elapsed}.", ""]
    lines += [f"**{index['totals_line']}.**", ""]
    if index["failed"]:
        lines += [f"**FAILED experiments: {', '.join(index['failed'])}** (see their reports).", ""]
    lines += [
        "| experiment | story | reproduced | partly | not reproduced | cross-checks agreeing | simulator wall time |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in index["experiments"]:
        name = f"[{e['experiment']}]({e['report'].replace('.html', '.md')})"
        if e["error"]:
            name += " **FAILED**"
        c = e["counts"]
        lines.append(
            f"| {name} | {_cell(e['story']['heading'])} | {c['reproduced']} | {c['partly']} | {c['not reproduced']} "
            f"| {e['crosschecks_agree']}/{e['crosschecks']} | {_seconds(e['runs_wall_time_s'])} |"
        )
    lines += ["", "## Every claim", ""]
    for e in index["experiments"]:
        for c in e["claims"]:
            lines.append(f"- {e['experiment']} / {c['id']}: **{c['verdict']}**: {_line(c['figure'])}")
    lines.append("")
    return "\n".join(lines)


# -- HTML ------------------------------------------------------------------------------------
_MD: Any = None


def _markdown_html(text: str) -> str:
    """Markdown (CommonMark, raw HTML off) as HTML; None/empty gives ""."""
    global _MD
    if not text:
        return ""
    if _MD is None:
        from markdown_it import MarkdownIt

        _MD = MarkdownIt("commonmark", {"html": False}).enable("table")
    return _MD.render(str(text))


_EXTRA_STYLE = """
 td.q { text-align: left; white-space: normal; max-width: 30em; font-style: italic; }
 td.w { text-align: left; white-space: normal; max-width: 22em; }
 tr.reason td { text-align: left; white-space: normal; background: #fafafa; font-size: 0.9em; }
 .v-reproduced { color: #186a18; font-weight: bold; } .v-partly { color: #9a6a00; font-weight: bold; }
 .v-not { color: #a01010; font-weight: bold; }
 .failed { border: 2px solid #a01010; padding: 0.5em 1em; background: #fff3f3; }
 code.cmd { font-size: 0.85em; }
 blockquote.story { border-left: 4px solid #ccc; margin: 1em 0; padding: 0.2em 1em; color: #333; }
"""

_ENV = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
_ENV.filters["md"] = lambda text: Markup(_markdown_html(text))  # noqa: S704 - markdown-it with raw HTML off
_ENV.filters["sig"] = lambda x: "-" if x is None else sig(float(x))
_ENV.filters["vclass"] = lambda v: {"reproduced": "v-reproduced", "partly": "v-partly"}.get(v, "v-not")
#: each template compiled once per process, not once per page (a quick replay writes ~150)
_template = functools.cache(_ENV.from_string)

_EXPERIMENT_TEMPLATE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>tcplab reproduce: {{ r.experiment }}</title>
<style>{{ style }}</style>
</head>
<body>
<h1>{{ r.experiment }}: {{ r.title }}</h1>
<p>Replays <b>{{ r.story.heading }}</b>
 (<code>{{ r.story.ref }}</code> in tcplab's repository; seed <code>{{ r.story.seed }}</code>)
 &middot; {{ r.mode }} mode &middot; {{ r.runs | length }} runs, simulator wall time {{ r.runs_wall_time_s | sig }} s
 &middot; tcplab {{ r.tcplab }}
 &middot; <a href="../index.html">all experiments</a></p>
{% if r.error %}
<div class="failed"><p class="bad">FAILED: this experiment did not complete; what follows is incomplete.</p>
<pre>{{ r.error }}</pre></div>
{% endif %}

{% if r.story.excerpt %}
<h2>The story</h2>
<blockquote class="story">{{ r.story.excerpt | md }}</blockquote>
<p class="note">From <code>{{ r.story.ref }}</code>; the claims below quote the story's sources.</p>
{% endif %}

<h2>Setup</h2>
{{ r.setup | md }}

<h2>Claims</h2>
{% if r.claims %}
<table>
<tr><th class="l">claim (story, quoted)</th>
<th class="l">published</th>
<th class="l">tcplab's figure</th>
<th class="l">verdict</th></tr>
{% for c in r.claims %}
<tr><td class="q">&ldquo;{{ c.quote }}&rdquo;</td>
<td class="w">{{ c.published }}</td>
<td class="w">{{ c.figure }}</td>
<td class="l"><span class="{{ c.verdict | vclass }}">{{ c.verdict }}</span></td></tr>
<tr class="reason"><td colspan="4"><b>{{ c.id }}</b>: {{ c.reason | md }}
{% if c.conditions %}<p class="note">Conditions tcplab chose: {{ c.conditions }}</p>{% endif %}
{% if c.modes is defined and c.modes %}<p class="note">Quick and full mode: {{ c.modes }}</p>{% endif %}</td></tr>
{% endfor %}
</table>
{% else %}
<p class="bad">No claim was judged.</p>
{% endif %}
{% if r.out_of_scope is defined and r.out_of_scope %}
<h3>Claims tcplab does not judge</h3>
<table>
<tr><th class="l">claim (story, quoted)</th><th class="l">why not</th></tr>
{% for c in r.out_of_scope %}
<tr><td class="q">&ldquo;{{ c.quote }}&rdquo;</td><td class="w">{{ c.reason }}</td></tr>
{% endfor %}
</table>
{% endif %}

{% if explanations %}
<h2>What the trace shows</h2>
{% for x in explanations %}
<h3>{{ x.title }}</h3>
{{ x.text | md }}
{% if x.uri %}<figure><img src="{{ x.uri }}" alt="{{ x.title }}">
<figcaption>{{ x.title }} (plots/{{ x.figure }})</figcaption></figure>
{% elif x.figure %}<p class="bad">figure plots/{{ x.figure }} is missing</p>{% endif %}
{% endfor %}
{% endif %}

<h2>tcplab diagnose on the runs' own tool texts</h2>
{% if r.crosschecks %}
<table>
<tr><th class="l">run</th>
<th class="l">expected</th>
<th class="l">must be absent</th>
<th class="l">diagnose found</th>
<th class="l">agrees</th></tr>
{% for c in r.crosschecks %}
<tr><td class="l">{{ c.run }}{% if c.at_s is not none %} (ss at {{ c.at_s | sig }} s){% endif %}
{% if c.capture %}<br><a href="{{ c.capture }}/README.txt">{{ c.capture }}/</a>{% endif %}</td>
<td class="l">{{ c.expect_text or (c.expect | join(", ")) or "-" }}{% if c.missing %}<br>missing: {{ c.missing | join(", ") }}{% endif %}</td><td class="l">{{ c.absent | join(", ") or "-" }}</td>
<td class="w">{% for s in c.summaries %}{{ s }}<br>{% else %}nothing{% endfor %}
{% if c.note %}<br><span class="bad">{{ c.note }}</span>{% endif %}</td>
<td class="l">{% if c.agree %}<span class="ok">yes</span>{% else %}<span class="bad">no</span>{% endif %}</td></tr>
{% if c.why %}<tr class="reason"><td colspan="5">{{ c.why }}</td></tr>{% endif %}
{% endfor %}
</table>
<p class="note">Each cross-check runs <code>tcplab diagnose</code> on the run directory's nstat, ss, tc, ethtool
and /proc/stat texts, written in the real tools' formats, as an operator would on the real host; a check
at a time t reads a capture (<code>captures/LABEL-at-&lt;t&gt;s/</code>) with <code>ss -tin</code> as it was at t.</p>
{% else %}
<p>No cross-check ran.</p>
{% endif %}

<h2>Runs</h2>
<table>
<tr><th class="l">run</th>
<th class="l">group</th>
<th class="l">scenario</th>
<th class="l">overrides</th>
<th class="l">result</th>
<th>wall time (s)</th></tr>
{% for x in r.runs %}
<tr><td class="l">{% if x.failed %}{{ x.label }}
{% else %}<a href="{{ x.directory }}/report.html">{{ x.label }}</a>{% endif %}</td>
<td class="l">{{ x.group or "-" }}</td><td class="l">{{ x.scenario }}</td>
<td class="w"><code>{{ x.overrides | join(" ") or "-" }}</code></td>
<td class="w">{% if x.failed %}<span class="bad">FAILED: {{ x.failed }}</span>{% else %}{{ x.headline }}{% endif %}</td>
<td>{{ x.wall_time_s | sig }}</td></tr>
{% endfor %}
</table>
<p>Make a run by hand (the scenario files are plain YAML: copy one and change it):</p>
<pre>{% for x in r.runs %}{{ x.command }}
{% endfor %}</pre>
</body>
</html>
"""  # noqa: E501 (a template line: splitting it would change the page)

_INDEX_TEMPLATE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>tcplab reproduce</title>
<style>{{ style }}</style>
</head>
<body>
<h1>tcplab reproduce: the five stories</h1>
<p>{{ i.mode }} mode &middot; tcplab {{ i.tcplab }}{% if i.elapsed_s is not none %}
 &middot; {{ i.elapsed_s | sig }} s wall{% endif %}</p>
<p><b>{{ i.totals_line }}.</b></p>
{% if i.failed %}
<p class="failed bad">FAILED experiments: {{ i.failed | join(", ") }} (see their reports).</p>{% endif %}
<table>
<tr><th class="l">experiment</th><th class="l">story</th><th>reproduced</th><th>partly</th><th>not reproduced</th>
<th>cross-checks agreeing</th><th>simulator wall time (s)</th></tr>
{% for e in i.experiments %}
<tr><td class="l"><a href="{{ e.report }}">{{ e.experiment }}</a>
{% if e.error %} <span class="bad">FAILED</span>{% endif %}</td>
<td class="l">{{ e.story.heading }}</td><td>{{ e.counts["reproduced"] }}</td><td>{{ e.counts["partly"] }}</td>
<td>{{ e.counts["not reproduced"] }}</td>
<td>{{ e.crosschecks_agree }}/{{ e.crosschecks }}</td>
<td>{{ e.runs_wall_time_s | sig }}</td></tr>
{% endfor %}
</table>
<h2>Every claim</h2>
<table>
<tr><th class="l">experiment</th>
<th class="l">claim</th>
<th class="l">published</th>
<th class="l">tcplab's figure</th>
<th class="l">verdict</th></tr>
{% for e in i.experiments %}{% for c in e.claims %}
<tr><td class="l">{{ e.experiment }}</td>
<td class="l">{{ c.id }}</td>
<td class="w">{{ c.published }}</td>
<td class="w">{{ c.figure }}</td>
<td class="l"><span class="{{ c.verdict | vclass }}">{{ c.verdict }}</span></td></tr>
{% endfor %}{% endfor %}
</table>
<p class="note">Verdicts are derived from the runs by rules written in each experiment's code (the reason under
each claim in its report says which); nothing is tuned to hit a published number. Simulation time:
the engine's wall time summed over the experiment's runs (they run in parallel across cores).</p>
</body>
</html>
"""


_EXPERIMENT_TEMPLATE = scrolling(_EXPERIMENT_TEMPLATE)
_INDEX_TEMPLATE = scrolling(_INDEX_TEMPLATE)


def experiment_html(r: Mapping[str, Any], plots_dir: Path) -> str:
    explanations = []
    for x in r["explanations"]:
        uri = ""
        if x["figure"]:
            png = Path(plots_dir) / x["figure"]
            if png.is_file():
                uri = data_uri(png.read_bytes())
        explanations.append({**x, "uri": uri})
    return _template(_EXPERIMENT_TEMPLATE).render(r=r, explanations=explanations, style=_STYLE + _EXTRA_STYLE)


def index_html(index: Mapping[str, Any]) -> str:
    return _template(_INDEX_TEMPLATE).render(i=index, style=_STYLE + _EXTRA_STYLE)
