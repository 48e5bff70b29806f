"""An experiment's report travels (issue 21 item 16): it links no file of the clone (a
``file:///…/docs/stories.md`` link breaks as soon as the self-contained page is attached to
a ticket); it names docs/stories.md#anchor as text and embeds the story's own paragraphs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tcplab.experiments import NAMES, load
from tcplab.views.reproduce import experiment_html, experiment_markdown
from tcplab.views.reproduce import story_info as _story_info

ROOT = Path(__file__).resolve().parents[1]


def _record(name: str) -> dict:
    e = load(name)
    return {
        "experiment": name,
        "title": e.title,
        "story": _story_info(e.story),
        "setup": e.setup,
        "mode": "quick",
        "tcplab": "test",
        "error": None,
        "counts": {"reproduced": 0, "partly": 0, "not reproduced": 0},
        "claims": [],
        "crosschecks": [],
        "crosschecks_agree": 0,
        "explanations": [],
        "runs": [],
        "runs_wall_time_s": None,
    }


@pytest.mark.parametrize("name", NAMES)
def test_the_report_embeds_the_story_and_links_no_local_file(name, tmp_path):
    r = _record(name)
    page = (ROOT / "docs" / "stories.md").read_text(encoding="utf-8")
    number = r["story"]["number"]
    section = page.split(f"## Story {number}", 1)[1].split("\n## ", 1)[0]
    happened = re.search(r"\*\*What happened\.\*\* (.+?)\n", section).group(1).strip()
    for text in (experiment_html(r, tmp_path), experiment_markdown(r)):
        assert "file:" not in text
        assert "docs/stories.md#story-" + number in text
        assert " ".join(happened.split()[:6]) in " ".join(text.split())  # the story itself
        assert "What tcplab models today" not in text  # tcplab's own notes stay in the docs
