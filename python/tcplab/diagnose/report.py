"""Findings for people and machines: a terminal report (rich), JSON, Markdown.

The model: one report = what was read (inputs and their kinds, number of snapshots, the
interval between them, notes on what was skipped, not captured or chosen) and the findings, most severe first.
The terminal view is a summary table then one block per finding (evidence lines as
``FILE:LINE: text``, mechanism, next checks, seed, scenario file); Markdown has the same
content for a ticket; JSON (``schema: tcplab-diagnose/1``) carries everything, including each
finding's numbers and the scenario dict.
"""

from __future__ import annotations

import json
from typing import Any

from tcplab.diagnose.rules import SEEDS, Finding
from tcplab.diagnose.snapshot import Host
from tcplab.units import plural

__all__ = ["to_json", "to_markdown", "print_terminal", "report_dict"]

MAX_EVIDENCE = 8
_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}


def report_dict(host: Host, findings: list[Finding], scenario_files: dict[int, str] | None = None) -> dict[str, Any]:
    files = scenario_files or {}
    return {
        "schema": "tcplab-diagnose/1",
        "inputs": [{"file": n, "kind": k} for n, k in host.inputs],
        "snapshots": len(host.snapshots),
        "interval_s": host.interval_s,
        "kernel": host.kernel.release if host.kernel else None,
        "notes": list(host.notes),
        "findings": [dict(f.as_dict(), scenario_file=files.get(i)) for i, f in enumerate(findings)],
    }


def to_json(host: Host, findings: list[Finding], scenario_files: dict[int, str] | None = None) -> str:
    return json.dumps(report_dict(host, findings, scenario_files), indent=2, default=str)


def _header(host: Host) -> str:
    n = len(host.snapshots)
    iv = f", {host.interval_s:.1f} s apart" if host.interval_s else ""
    return f"{plural(len(host.inputs), 'input')}, {plural(n, 'snapshot')}{iv}" + (
        f", kernel {host.kernel.release}" if host.kernel else ""
    )


def to_markdown(host: Host, findings: list[Finding], scenario_files: dict[int, str] | None = None) -> str:
    files = scenario_files or {}
    out = ["# tcplab diagnose", "", _header(host), ""]
    if not findings:
        out += ["No known pathology found in these inputs.", ""]
    else:
        out += ["| severity | finding | summary |", "|---|---|---|"]
        for f in findings:
            out.append(f"| {f.severity} | {f.id} | {f.summary.replace('|', '/')} |")
        out.append("")
    for i, f in enumerate(findings):
        out += [f"## {f.severity.upper()}: {f.title}", "", f.summary, "", f"**Mechanism.** {f.mechanism}", ""]
        if f.evidence:
            out.append("**Evidence**")
            out.append("")
            out.append("```")
            out += [str(e)[:300] for e in f.evidence[:MAX_EVIDENCE]]
            if len(f.evidence) > MAX_EVIDENCE:
                out.append(f"... {len(f.evidence) - MAX_EVIDENCE} more")
            out += ["```", ""]
        out.append("**Check next**")
        out.append("")
        out += [f"- {c}" for c in f.next_checks]
        out.append("")
        if f.seed:
            out += [f"**Matches:** {SEEDS.get(f.seed, f.seed)}", ""]
        if i in files:
            out += [f"**Scenario:** `{files[i]}` (`tcplab run {files[i]}`)", ""]
    if host.notes:
        out += ["## Notes (inputs skipped, not captured, or chosen)", ""] + [f"- {n}" for n in host.notes] + [""]
    return "\n".join(out)


def print_terminal(
    host: Host, findings: list[Finding], scenario_files: dict[int, str] | None = None, console=None
) -> None:  # noqa: ANN001
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    files = scenario_files or {}
    console = console or Console(highlight=False)
    console.print(Text("tcplab diagnose: " + _header(host)))
    if not findings:
        console.print("No known pathology found in these inputs.")
    else:
        table = Table(box=box.SIMPLE_HEAD, show_lines=False)
        table.add_column("severity")
        table.add_column("finding", no_wrap=True)
        table.add_column("summary")
        for f in findings:
            table.add_row(Text(f.severity, style=_STYLE[f.severity]), f.id, Text(f.summary))
        console.print(table)
    for i, f in enumerate(findings):
        console.print(Text(f"{f.severity.upper()}: {f.title}", style=_STYLE[f.severity]))
        console.print(Text(f"  {f.mechanism}"))
        for e in f.evidence[:MAX_EVIDENCE]:
            console.print(Text(f"    {str(e)[:220]}", style="dim"))
        if len(f.evidence) > MAX_EVIDENCE:
            console.print(Text(f"    ... {len(f.evidence) - MAX_EVIDENCE} more evidence lines", style="dim"))
        for c in f.next_checks:
            console.print(Text(f"  next: {c}"))
        if f.seed:
            console.print(Text(f"  matches {SEEDS.get(f.seed, f.seed)}"))
        if i in files:
            console.print(Text(f"  scenario: {files[i]}"))
        console.print()
    for n in host.notes:
        console.print(Text(f"note: {n}", style="dim"))
