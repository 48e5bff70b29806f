"""Many packetdrill scripts against tcplab: :func:`run_many`, the per-script lines and totals,
``--report DIR`` and ``--junit FILE``.

* :func:`find_scripts` (the kernel runner's): every ``*.pkt`` under each path, sorted, a path
  being a script or a folder searched recursively.
* :func:`write_report`: one text file per script (its status, message, details and time),
  named after its path below the scripts' common folder (``slow_start/x.pkt.txt``), and
  ``summary.json`` (totals and every result).
* :func:`write_junit`: JUnit XML, one ``testsuite`` per folder of scripts and one
  ``testcase`` per script, with a ``failure`` (the message; the details as its text) or a
  ``skipped`` element (the reason).
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tcplab.packetdrill.kernel import find_scripts
from tcplab.packetdrill.run import ScriptResult, run_script

__all__ = [
    "STATUSES",
    "find_scripts",
    "run_many",
    "common_base",
    "format_line",
    "totals",
    "totals_line",
    "write_report",
    "write_junit",
]

STATUSES = ("pass", "fail", "skip")


def run_many(
    paths: Iterable[str | os.PathLike[str]],
    *,
    tolerance_usecs: int | None = None,
    on_result: Callable[[ScriptResult], None] | None = None,
    host_factory: Callable[[dict[str, Any]], Any] | None = None,
) -> list[ScriptResult]:
    """Run every script under ``paths`` in order; ``on_result`` sees each as it ends."""
    results = []
    for script in find_scripts(paths):
        r = run_script(script, tolerance_usecs=tolerance_usecs, host_factory=host_factory)
        if on_result is not None:
            on_result(r)
        results.append(r)
    return results


def common_base(paths: Sequence[str]) -> Path | None:
    """The folder the scripts have in common (the report's and the lines' root)."""
    if not paths:
        return None
    base = Path(os.path.commonpath([str(Path(p).resolve()) for p in paths]))
    return base if base.is_dir() else base.parent


def _relative(path: str, base: Path | None) -> str:
    if base is None:
        return path
    try:
        return Path(path).resolve().relative_to(base).as_posix()
    except ValueError:
        return path


def format_line(status: str, path: str, message: str = "") -> str:
    """``status  path  [message]``, the message's first line."""
    first = message.splitlines()[0] if message else ""
    return f"{status:<4}  {path}  {first}".rstrip()


def totals(statuses: Iterable[str]) -> dict[str, int]:
    counts = dict.fromkeys(STATUSES, 0)
    for s in statuses:
        counts[s] = counts.get(s, 0) + 1
    return counts


def totals_line(statuses: Sequence[str]) -> str:
    """``N scripts: P pass, F fail, S skip`` (other statuses, from kernel runs, after)."""
    t = totals(statuses)
    parts = [f"{t.pop(k)} {k}" for k in STATUSES] + [f"{v} {k}" for k, v in t.items() if v]
    return f"{len(statuses)} scripts: " + ", ".join(parts)


def write_report(directory: str | os.PathLike[str], results: Sequence[ScriptResult]) -> Path:
    """One text file per script and summary.json in ``directory`` (module doc)."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    base = common_base([r.path for r in results])
    for r in results:
        rel = _relative(r.path, base)
        target = out / (rel + ".txt")
        target.parent.mkdir(parents=True, exist_ok=True)
        text = [f"script: {r.path}", f"status: {r.status}", f"seconds: {r.seconds}"]
        if r.message:
            text.append(f"message: {r.message}")
        if r.details:
            text += ["", r.details]
        target.write_text("\n".join(text) + "\n")
    summary = {
        "base": str(base) if base else None,
        "totals": totals(r.status for r in results),
        "scripts": len(results),
        "results": [{**asdict(r), "name": _relative(r.path, base)} for r in results],
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return out


def write_junit(
    file: str | os.PathLike[str], results: Sequence[ScriptResult], name: str = "tcplab packetdrill"
) -> Path:
    """JUnit XML of the results (module doc)."""
    base = common_base([r.path for r in results])
    suites: dict[str, list[ScriptResult]] = {}
    for r in results:
        folder = Path(_relative(r.path, base)).parent.as_posix()
        suites.setdefault(folder, []).append(r)
    root = ET.Element("testsuites", name=name)
    t = totals(r.status for r in results)
    root.set("tests", str(len(results)))
    root.set("failures", str(t["fail"]))
    root.set("skipped", str(t["skip"]))
    root.set("time", f"{sum(r.seconds for r in results):.3f}")
    for folder, rs in suites.items():
        st = totals(r.status for r in rs)
        suite = ET.SubElement(
            root,
            "testsuite",
            name=folder,
            tests=str(len(rs)),
            failures=str(st["fail"]),
            errors="0",
            skipped=str(st["skip"]),
            time=f"{sum(r.seconds for r in rs):.3f}",
        )
        for r in rs:
            case = ET.SubElement(
                suite, "testcase", classname=folder.replace("/", "."), name=Path(r.path).name, time=f"{r.seconds:.3f}"
            )
            if r.status == "fail":
                failure = ET.SubElement(case, "failure", message=r.message.splitlines()[0] if r.message else "")
                failure.text = "\n".join(x for x in (r.message, r.details) if x)
            elif r.status == "skip":
                ET.SubElement(case, "skipped", message=r.message)
    path = Path(file)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
    return path
