#!/usr/bin/env python3
"""Strip outputs from notebooks before committing them (the docs' notebooks are stored without
outputs; tests/test_notebook.py checks it and executes them).

    python3 docs/notebooks/strip_outputs.py docs/notebooks/*.ipynb

Clears every code cell's outputs and execution count and drops per-run metadata (execution
timings, widget state), writing the file as nbformat writes it (JSON, indent 1, sorted keys).
Standard library only. Exit 1 with --check when a file would change (nothing is written then).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RUN_METADATA = ("execution", "collapsed", "scrolled", "ExecuteTime")


def stripped(nb: dict) -> dict:
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        for key in RUN_METADATA:
            cell.get("metadata", {}).pop(key, None)
    nb.get("metadata", {}).pop("widgets", None)
    return nb


def text_of(nb: dict) -> str:
    return json.dumps(nb, indent=1, sort_keys=True, separators=(",", ": "), ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = [Path(a) for a in argv if a != "--check"]
    if not paths:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    changed = []
    for path in paths:
        before = path.read_text(encoding="utf-8")
        after = text_of(stripped(json.loads(before)))
        if after != before:
            changed.append(path)
            if not check:
                path.write_text(after, encoding="utf-8")
    for path in changed:
        print(f"{'would strip' if check else 'stripped'} {path}")
    return 1 if check and changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
