"""The sweep's report.html is rendered by a jinja2 template with autoescape, as the other
views are: whatever text the user gave (the scenario's path, overrides, parameter values, a
failure's message, a sweep.json read back) is text in the page, never markup.

Before: views/sweep.py built the page from f-strings, escaping each value by hand; the
plan's run counts were not, so a sweep.json read back with ``"runs": "<script>..."``
(``tcplab.load_sweep(DIR).write(OTHER)``) put a script into the page.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest

import tcplab
from test_hostile_sweep import SCENARIO

HOSTILE = "<script>alert(1)</script>"
QUOTES = 'a&b "q" \'s'
NAME = "a<b>&'\"x.yaml"  # the scenario file's name


class _Page(HTMLParser):
    """Tags, and the text of each element, of a page (character references decoded)."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[dict[str, str | None]] = []
        self.text: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.append(dict(attrs))

    def handle_data(self, data):
        if data.strip():
            self.text.append(data.strip())

    def cells(self) -> list[str]:
        return self.text


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory) -> Path:
    """A sweep of a scenario whose file name and swept values hold markup and quotes."""
    pytest.importorskip("tcplab._core")
    base = tmp_path_factory.mktemp("sweep")
    scenario = base / NAME
    scenario.write_text(SCENARIO, encoding="utf-8")
    out = base / "out"
    tcplab.sweep(
        scenario,
        grid={"description": [HOSTILE, QUOTES], "links.0.delay": ["5ms", "10ms"]},
        seeds=1,
        overrides=["hosts.server.hz=250"],
        out=out,
        jobs=1,
    )
    return out


def test_user_text_is_escaped_and_reads_back_as_written(sweep_dir):
    report = (sweep_dir / "report.html").read_text(encoding="utf-8")
    page = _Page(report)
    assert "script" not in page.tags
    text = "\n".join(page.text)
    assert f"Scenario {sweep_dir.parent / NAME};" in text  # the path, as written
    assert text.count(HOSTILE) == 1 + 2  # the parameter's values, then two points
    assert text.count(QUOTES) == 1 + 2
    assert f"{HOSTILE}, {QUOTES}" in page.text  # the Parameters table lists both values


def test_the_report_holds_the_plan_the_points_and_the_figures(sweep_dir):
    """The content, derived from the sweep itself: title, parameters with their values, a row
    per point with its labels and runs ok, one figure per plot file, captions as alt text."""
    res = tcplab.load_sweep(sweep_dir)
    page = _Page((sweep_dir / "report.html").read_text(encoding="utf-8"))
    name = res.plan["scenario"]["name"]
    assert page.text[0] == f"tcplab sweep: {name}"  # <title>
    assert f"tcplab sweep: {name}" in page.text[2:]  # <h1>
    for p in res.plan["parameters"]:
        i = page.text.index(p["path"])
        assert page.text[i + 1 : i + 3] == [p["kind"], ", ".join(p["values"])]
    points = res.table.drop_duplicates("point").sort_values("point")
    start = page.text.index("runs ok") + 1
    for k, (_, row) in enumerate(points.iterrows()):
        cells = page.text[start + k * 8 : start + (k + 1) * 8]  # point, 2 labels, 4 metrics, ok
        assert cells[:3] == [str(row["point"]), str(row["description"]), str(row["links.0.delay"])]
        assert cells[-1] == "1/1"
    images = [a for t, a in zip(page.tags, page.attrs, strict=True) if t == "img"]
    plots = sorted(p.name for p in (sweep_dir / "plots").iterdir())
    assert len(images) == len(plots) > 0
    assert all(str(a["src"]).startswith("data:image/png;base64,") and a["alt"] for a in images)


def test_a_plan_read_back_is_escaped_too(sweep_dir, tmp_path):
    """load_sweep(DIR).write(OTHER) renders what sweep.json says: its counts, its failures."""
    res = tcplab.load_sweep(sweep_dir)
    res.plan["counts"] = {"runs": HOSTILE, "done": "<b>", "failed": "&amp;"}
    res.failures["k<1>"] = {"key": "k<1>", "overrides": [f"description={HOSTILE}"], "error": f"boom {QUOTES}"}
    res.write(tmp_path / "copy")
    page = _Page((tmp_path / "copy" / "report.html").read_text(encoding="utf-8"))
    assert "script" not in page.tags and "b" not in page.tags
    text = "\n".join(page.text)
    assert f"{HOSTILE} runs: <b> ok, &amp; failed." in text
    assert "k<1>" in page.text and f"description={HOSTILE}" in page.text and f"boom {QUOTES}" in page.text
