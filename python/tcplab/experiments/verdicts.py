"""The verdicts the README and docs/stories.md state, generated from ``tcplab reproduce``'s index.

The model. ``docs/verdicts/full.json`` and ``docs/verdicts/quick.json`` keep, for the last
``tcplab reproduce --all`` and ``--all --quick`` made for a release, each experiment's claims
(id and verdict), out-of-scope claims and counts (:func:`summary` of the run's
``index.json``). The README and docs/stories.md carry blocks between the markers
``<!-- verdicts:begin KEY -->`` and ``<!-- verdicts:end -->`` (``KEY``: ``readme-counts``,
``readme-table``, ``story-000`` ...) that :func:`render_blocks` writes from those two files,
so that no number in them is typed by hand. Checks: tests/test_docs_verdicts.py fails when a
block differs from what the files give; ``.ci/verdicts-check`` runs the quick replay and fails
when a verdict differs from ``docs/verdicts/quick.json`` (the code changed a verdict and the
docs were not regenerated).

Regenerate after a change that moves a verdict::

    tcplab reproduce --all -o out/reproduce-full --force
    tcplab reproduce --all --quick -o out/reproduce --force
    python -m tcplab.experiments.verdicts --full out/reproduce-full/index.json \
        --quick out/reproduce/index.json --write

(``make verdicts`` does the three.)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["summary", "render_blocks", "apply_blocks", "diff_verdicts", "main", "DOCS", "BLOCK"]

#: The files whose blocks are generated, relative to the repository.
DOCS = ("README.md", "docs/stories.md")
#: A generated block: its key, then its text up to the end marker.
BLOCK = re.compile(r"(<!-- verdicts:begin ([a-z0-9-]+) -->\n)(.*?)(<!-- verdicts:end -->)", re.S)
_VERDICTS = ("reproduced", "partly", "not reproduced")


def summary(index: Mapping[str, Any]) -> dict[str, Any]:
    """What the docs use of a reproduce ``index.json``: mode, totals, and per experiment its
    story number, counts, claims (id, verdict) and out-of-scope claim ids."""
    return {
        "mode": index["mode"],
        "tcplab": index.get("tcplab"),
        "totals": {k: index["totals"][k] for k in ("claims", *_VERDICTS)},
        "experiments": [
            {
                "experiment": e["experiment"],
                "story": e["story"]["number"],
                "counts": {v: e["counts"].get(v, 0) for v in _VERDICTS},
                "claims": [{"id": c["id"], "verdict": c["verdict"]} for c in e["claims"]],
                "out_of_scope": list(e.get("out_of_scope", [])),
                "error": e.get("error"),
            }
            for e in index["experiments"]
        ],
    }


def _counts(c: Mapping[str, int]) -> str:
    return f"{c['reproduced']} / {c['partly']} / {c['not reproduced']}"


def render_blocks(full: Mapping[str, Any], quick: Mapping[str, Any]) -> dict[str, str]:
    """Every block's text (ends with a newline) from the two summaries."""
    blocks: dict[str, str] = {}
    ft, qt = full["totals"], quick["totals"]
    blocks["readme-counts"] = (
        f"Of the {ft['claims']} claims the five stories make that tcplab judges, it reproduces "
        f"{ft['reproduced']}, partly reproduces {ft['partly']} and does not reproduce {ft['not reproduced']} in "
        f"full mode ({qt['reproduced']} / {qt['partly']} / {qt['not reproduced']} in quick mode); each report "
        "says why, with tcplab's nearest figure. These numbers are generated from `tcplab reproduce`'s "
        "index (docs/verdicts/).\n"
    )
    qx = {e["experiment"]: e for e in quick["experiments"]}
    rows = [
        "| experiment | full: reproduced / partly / not | quick | partly or not reproduced (full mode) "
        "| out of scope |",
        "|---|---|---|---|---|",
    ]
    for e in full["experiments"]:
        q = qx.get(e["experiment"])
        weak = [f"`{c['id']}` ({c['verdict']})" for c in e["claims"] if c["verdict"] != "reproduced"]
        rows.append(
            f"| `{e['experiment']}` | {_counts(e['counts'])} | {_counts(q['counts']) if q else '-'} "
            f"| {', '.join(weak) or '-'} | {', '.join(f'`{x}`' for x in e['out_of_scope']) or '-'} |"
        )
    blocks["readme-table"] = "\n".join(rows) + "\n"
    for e in full["experiments"]:
        q = qx.get(e["experiment"], {"claims": []})
        qv = {c["id"]: c["verdict"] for c in q["claims"]}
        parts = []
        for c in e["claims"]:
            text = f"`{c['id']}` {c['verdict']}"
            if c["id"] in qv and qv[c["id"]] != c["verdict"]:
                text += f" (quick mode: {qv[c['id']]})"
            parts.append(text)
        line = f"Verdicts (full mode, tcplab {full.get('tcplab')}): " + "; ".join(parts) + "."
        if e["out_of_scope"]:
            line += " Listed, not judged: " + ", ".join(f"`{x}`" for x in e["out_of_scope"]) + "."
        line += " The report gives each claim's figure, rule and reason.\n"
        blocks[f"story-{e['story']}"] = line
    return blocks


def apply_blocks(text: str, blocks: Mapping[str, str]) -> tuple[str, list[str]]:
    """``text`` with each marked block replaced by its generated text; the keys it had."""
    seen: list[str] = []

    def sub(m: re.Match[str]) -> str:
        key = m.group(2)
        seen.append(key)
        if key not in blocks:
            raise KeyError(f"verdicts block {key!r}: no such block (known: {', '.join(sorted(blocks))})")
        return m.group(1) + blocks[key] + m.group(4)

    return BLOCK.sub(sub, text), seen


def diff_verdicts(expected: Mapping[str, Any], got: Mapping[str, Any]) -> list[str]:
    """Each claim whose verdict differs (or that appeared or went) between two summaries."""
    out = []
    ev = {(e["experiment"], c["id"]): c["verdict"] for e in expected["experiments"] for c in e["claims"]}
    gv = {(e["experiment"], c["id"]): c["verdict"] for e in got["experiments"] for c in e["claims"]}
    for key in sorted(set(ev) | set(gv)):
        if ev.get(key) != gv.get(key):
            out.append(f"{key[0]}/{key[1]}: docs say {ev.get(key) or 'no such claim'}, the run gives {gv.get(key)}")
    for e in got["experiments"]:
        if e.get("error"):
            out.append(f"{e['experiment']}: failed: {str(e['error']).splitlines()[0]}")
    return out


def _root() -> Path:
    return Path(__file__).resolve().parents[3]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tcplab.experiments.verdicts", description=__doc__.split("\n\n")[0])
    p.add_argument("--full", type=Path, help="index.json of `tcplab reproduce --all`")
    p.add_argument("--quick", type=Path, help="index.json of `tcplab reproduce --all --quick`")
    p.add_argument("--write", action="store_true", help="save docs/verdicts/*.json and rewrite the docs' blocks")
    p.add_argument("--check", type=Path, help="an index.json to compare with docs/verdicts/ of its mode")
    a = p.parse_args(argv)
    root = _root()
    vdir = root / "docs" / "verdicts"
    if a.check:
        got = summary(json.loads(a.check.read_text(encoding="utf-8")))
        expected = json.loads((vdir / f"{got['mode']}.json").read_text(encoding="utf-8"))
        diffs = diff_verdicts(expected, got)
        for d in diffs:
            print(f"verdicts: {d}", file=sys.stderr)
        if diffs:
            print(
                "verdicts: the docs' verdicts are stale: regenerate them (make verdicts, see "
                "python/tcplab/experiments/verdicts.py)",
                file=sys.stderr,
            )
            return 1
        print(f"verdicts: {got['mode']} mode agrees with docs/verdicts/{got['mode']}.json")
        return 0
    if a.write:
        if not (a.full and a.quick):
            p.error("--write needs --full and --quick")
        vdir.mkdir(parents=True, exist_ok=True)
        for mode, path in (("full", a.full), ("quick", a.quick)):
            s = summary(json.loads(path.read_text(encoding="utf-8")))
            if s["mode"] != mode:
                p.error(f"--{mode} {path}: the index is of {s['mode']} mode")
            (vdir / f"{mode}.json").write_text(json.dumps(s, indent=2) + "\n", encoding="utf-8")
    full = json.loads((vdir / "full.json").read_text(encoding="utf-8"))
    quick = json.loads((vdir / "quick.json").read_text(encoding="utf-8"))
    blocks = render_blocks(full, quick)
    for rel in DOCS:
        path = root / rel
        text, _ = apply_blocks(path.read_text(encoding="utf-8"), blocks)
        path.write_text(text, encoding="utf-8")
    print("verdicts: README.md and docs/stories.md rewritten from docs/verdicts/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
