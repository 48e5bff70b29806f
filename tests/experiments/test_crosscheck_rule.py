"""A diagnose cross-check says whether all or any of its expected findings must appear, and
never agrees while an expected finding is missing unless the rule is "any" (issue 21 item 17)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tcplab.experiments import load
from tcplab.experiments.base import Crosscheck
from tcplab.experiments.reproduce import CrosscheckResult, Outcome, crosscheck_run
from tcplab.views.reproduce import experiment_html, experiment_markdown, experiment_record

FIX = Path(__file__).resolve().parents[1] / "diagnose" / "fixtures"


@pytest.fixture
def collapse_dir(tmp_path: Path) -> Path:
    """ss of seed 000's node: diagnose names cwnd-collapse (and nothing about a NIC)."""
    d = tmp_path / "run"
    d.mkdir()
    shutil.copy(FIX / "ss_seed000_collapse.txt", d / "ss.txt")
    return d


def test_all_is_the_default_and_a_missing_expected_finding_disagrees(collapse_dir: Path) -> None:
    check = Crosscheck("x", expect=("cwnd-collapse", "nic-rx-drops"))
    assert check.rule == "all"
    res = crosscheck_run(collapse_dir, check)
    assert "cwnd-collapse" in res.found and "nic-rx-drops" not in res.found
    assert not res.agree and res.missing == ["nic-rx-drops"]


def test_any_agrees_with_one_and_still_names_the_missing(collapse_dir: Path) -> None:
    res = crosscheck_run(collapse_dir, Crosscheck("x", expect=("cwnd-collapse", "nic-rx-drops"), rule="any"))
    assert res.agree and res.missing == ["nic-rx-drops"]
    none = crosscheck_run(collapse_dir, Crosscheck("x", expect=("tbf-drops", "nic-rx-drops"), rule="any"))
    assert not none.agree and none.missing == ["tbf-drops", "nic-rx-drops"]


def test_a_rule_other_than_all_or_any_is_refused() -> None:
    with pytest.raises(ValueError, match="rule 'most': expected 'all' or 'any'"):
        Crosscheck("x", expect=("a", "b"), rule="most")


def test_the_shipped_crosschecks_say_their_rule() -> None:
    """Every shipped check with several expected findings chose its rule (alternatives: any)."""
    from tcplab.experiments import NAMES

    for name in NAMES:
        for quick in (True, False):
            for c in load(name).crosschecks(quick):
                assert c.rule in ("all", "any")
                if len(c.expect) > 1:
                    assert c.rule == "any", (name, c.run, c.expect)


def test_reports_say_the_rule_and_the_missing_finding(tmp_path: Path) -> None:
    e = load("microburst-ring")
    checks = [
        CrosscheckResult(Crosscheck("r1", expect=("a-id", "b-id")), ["a-id"], ["a-id: x"], False, missing=["b-id"]),
        CrosscheckResult(
            Crosscheck("r2", expect=("a-id", "b-id"), rule="any"), ["a-id"], ["a-id: x"], True, missing=["b-id"]
        ),
        CrosscheckResult(Crosscheck("r3", expect=("a-id",)), ["a-id"], ["a-id: x"], True),
    ]
    oc = Outcome(experiment=e, quick=True, runs=[], results={}, failures={}, crosschecks=checks)
    r = experiment_record(oc)
    assert [c["rule"] for c in r["crosschecks"]] == ["all", "any", "all"]
    assert [c["missing"] for c in r["crosschecks"]] == [["b-id"], ["b-id"], []]
    md = experiment_markdown(r)
    rows = [ln for ln in md.splitlines() if ln.startswith(("| r1 ", "| r2 ", "| r3 "))]
    assert "all of: a-id, b-id" in rows[0] and "missing: b-id" in rows[0] and rows[0].endswith("| **no** |")
    assert "any of: a-id, b-id" in rows[1] and "missing: b-id" in rows[1] and rows[1].endswith("| yes |")
    assert "| a-id |" in rows[2] and "of:" not in rows[2]
    html = experiment_html(r, tmp_path)
    assert "all of: a-id, b-id" in html and "any of: a-id, b-id" in html and "missing: b-id" in html
