"""Users are sent to docs/stories.md, never to seed files they do not have (issue 7, 3.8)."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from tcplab.cli import app

ROOT = Path(__file__).resolve().parents[1]
SEED_FILE = re.compile(r"\b\d{3}_[0-9a-f]{16}(\.txt)?\b|shared/seeds")


#: tcplab reproduce's experiments cite the seed file each claim is quoted from (claims.yaml's
#: ``story``, the registry's STORIES): that is the quote's provenance, checked verbatim by
#: tests/experiments/test_framework.py. Their reports send readers to docs/stories.md first.
EXPERIMENTS = ROOT / "python" / "tcplab" / "experiments"


def _user_facing_files():
    yield ROOT / "README.md"
    for path in sorted((ROOT / "python" / "tcplab").rglob("*")):
        if EXPERIMENTS in path.parents:
            continue
        if path.suffix in (".py", ".yaml", ".yml", ".html", ".md"):
            yield path


def test_no_seed_file_names_in_what_users_read():
    hits = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in _user_facing_files()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if SEED_FILE.search(line)
    ]
    assert hits == []


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    return re.sub(r"[^a-z0-9 -]", "", heading.lower()).replace(" ", "-")


def test_stories_page_has_the_five_stories_and_the_links_resolve():
    page = (ROOT / "docs" / "stories.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", page, flags=re.M)
    assert [h.split()[1] for h in headings] == ["000", "001", "002", "003", "004"]
    for h in headings:  # each says what happened, why, the fix, and what tcplab models
        section = page.split(f"## {h}", 1)[1].split("\n## ", 1)[0]
        for part in ("**What happened.**", "**Mechanism.**", "**Fix.**", "**What tcplab models today.**"):
            assert part in section, (h, part)
    anchors = {_slug(h) for h in headings}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = re.findall(r"docs/stories\.md#([a-z0-9-]+)", readme)
    assert linked and set(linked) <= anchors


def test_help_points_at_the_stories_page():
    r = CliRunner().invoke(app, ["--help"])
    assert r.exit_code == 0
    assert "docs/stories.md" in r.stdout


def test_diagnose_story_names_point_at_the_page():
    from tcplab.diagnose.rules import SEEDS

    for number, text in SEEDS.items():
        assert text.startswith(f"story {number} (") and "docs/stories.md" in text
