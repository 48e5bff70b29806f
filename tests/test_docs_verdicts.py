"""The README's and docs/stories.md's verdicts are generated from the reproduce index (issue 26).

docs/verdicts/{full,quick}.json hold what `tcplab reproduce --all` and `--all --quick` gave
(tcplab.experiments.verdicts.summary of their index.json); every block between the
`verdicts:begin` / `verdicts:end` markers must be what those files give, so that a number typed
by hand, or a file regenerated without the docs, fails here. Whether the files still match the
code is .ci/verdicts-check's job (it replays the quick mode).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tcplab.experiments import catalog
from tcplab.experiments.verdicts import BLOCK, DOCS, apply_blocks, diff_verdicts, render_blocks, summary

ROOT = Path(__file__).resolve().parents[1]
VERDICTS = ROOT / "docs" / "verdicts"


def _load(mode: str) -> dict:
    return json.loads((VERDICTS / f"{mode}.json").read_text(encoding="utf-8"))


def test_the_docs_blocks_are_what_the_index_gives():
    blocks = render_blocks(_load("full"), _load("quick"))
    used: list[str] = []
    for rel in DOCS:
        text = (ROOT / rel).read_text(encoding="utf-8")
        regenerated, seen = apply_blocks(text, blocks)
        assert regenerated == text, f"{rel}: a verdicts block differs from docs/verdicts/ (run make verdicts)"
        used += seen
    # every story and the README's two blocks appear, once each
    assert sorted(used) == sorted(blocks)


def test_the_summaries_cover_every_experiment_and_claim():
    for mode in ("full", "quick"):
        s = _load(mode)
        assert s["mode"] == mode
        assert [e["experiment"] for e in s["experiments"]] == sorted(catalog.NAMES, key=lambda n: catalog.STORIES[n])
        for e in s["experiments"]:
            exp = catalog.load(e["experiment"])
            assert [c["id"] for c in e["claims"]] == list(exp.judged_claims), (mode, e["experiment"])
            assert e["out_of_scope"] == [c.id for c in exp.out_of_scope_claims]
            assert not e["error"]
        t = s["totals"]
        assert t["claims"] == sum(len(e["claims"]) for e in s["experiments"])


def test_a_changed_verdict_is_named():
    s = _load("quick")
    changed = json.loads(json.dumps(s))
    c = changed["experiments"][0]["claims"][0]
    c["verdict"] = "partly" if c["verdict"] != "partly" else "reproduced"
    (diff,) = diff_verdicts(s, changed)
    assert s["experiments"][0]["experiment"] in diff and c["id"] in diff
    assert diff_verdicts(s, s) == []


def test_summary_keeps_only_what_the_docs_use():
    index = {
        "mode": "quick",
        "tcplab": "0.1.0",
        "totals": {"claims": 1, "reproduced": 1, "partly": 0, "not reproduced": 0},
        "experiments": [
            {
                "experiment": "x",
                "story": {"number": "009"},
                "counts": {"reproduced": 1},
                "claims": [{"id": "a", "verdict": "reproduced", "figure": "f", "published": "p"}],
                "error": None,
            }
        ],
    }
    s = summary(index)
    assert s["experiments"][0]["claims"] == [{"id": "a", "verdict": "reproduced"}]
    assert s["experiments"][0]["counts"] == {"reproduced": 1, "partly": 0, "not reproduced": 0}
    with pytest.raises(KeyError):
        apply_blocks("<!-- verdicts:begin nope -->\nx\n<!-- verdicts:end -->", render_blocks(s, s))
    assert BLOCK.search("<!-- verdicts:begin story-009 -->\n<!-- verdicts:end -->")
