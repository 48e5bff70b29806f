"""A test file that the code or the docs cite exists (issue 22: app_bounds.py cited
``tests/test_app_bounds.py``, which never did).

A citation is a path ``tests/....py`` or ``tests/....rs`` in the Python front, the engine's
crates, the README, BENCHMARKS.md or docs/. It names a file of the repository's tests/ or,
for the engine's tests, of a crate's tests/ (``crates/tcplab-core/tests/engine/capture.rs``
is cited as ``tests/engine/capture.rs``).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CITATION = re.compile(r"(?<![\w/.])tests/[\w/]+\.(?:py|rs)\b")
SOURCES = ("python", "crates", "docs", "README.md", "BENCHMARKS.md")
SUFFIXES = {".py", ".rs", ".md", ".toml", ".ipynb", ".txt", ".yaml"}


def citations(root: Path) -> list[tuple[str, str]]:
    """(where, cited path) of every citation under ``root``'s SOURCES."""
    found = []
    for name in SOURCES:
        base = root / name
        files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.suffix in SUFFIXES)
        for path in files:
            if "target" in path.relative_to(root).parts:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for match in CITATION.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                found.append((f"{path.relative_to(root)}:{line}", match.group()))
    return found


def exists(root: Path, cited: str) -> bool:
    return (root / cited).is_file() or any((crate / cited).is_file() for crate in (root / "crates").glob("*"))


def missing(root: Path) -> list[str]:
    return [f"{where}: {cited}" for where, cited in citations(root) if not exists(root, cited)]


def test_every_cited_test_file_exists():
    assert missing(ROOT) == []


def test_a_citation_of_a_file_that_does_not_exist_is_caught(tmp_path):
    (tmp_path / "tests" / "engine").mkdir(parents=True)
    (tmp_path / "tests" / "test_here.py").write_text("")
    (tmp_path / "crates" / "core" / "tests" / "engine").mkdir(parents=True)
    (tmp_path / "crates" / "core" / "tests" / "engine" / "qdisc.rs").write_text("")
    (tmp_path / "python" / "pkg").mkdir(parents=True)
    (tmp_path / "python" / "pkg" / "m.py").write_text(
        '"""See ``tests/test_here.py``\nand tests/engine/qdisc.rs;\n``tests/test_gone.py`` checks it."""\n'
    )
    assert missing(tmp_path) == ["python/pkg/m.py:3: tests/test_gone.py"]
