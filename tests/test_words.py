"""Words in tcplab's output (issue 21 item 17): counts with their nouns ("1 flow", "0 stalls",
never "1 flows", "0 stall(s)"), big percentages in plain digits (never ``+1.84e+03 %``), an
experiment run's overrides with each path once (the value it takes), and the reproduce
index in the stories' order (story 000 first)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tcplab.units import percent_text, plural

SRC = Path(__file__).resolve().parents[1] / "python" / "tcplab"


@pytest.mark.parametrize(
    ("n", "word", "text"),
    [(1, "flow", "1 flow"), (2, "flow", "2 flows"), (0, "stall", "0 stalls"), (1, "stall", "1 stall"),
     (3, "switch", "3 switches"), (1.0, "stall", "1 stall"), (2, "work directory", "2 work directories")],
)  # fmt: skip
def test_plural(n, word, text):
    words = "work directories" if word == "work directory" else None
    assert plural(n, word, words) == text


@pytest.mark.parametrize(
    ("value", "signed", "text"),
    [(1840.3, True, "+1,840 %"), (999.96, True, "+1,000 %"), (12.345, False, "12.3 %"),
     (-0.5123, True, "-0.512 %"), (0.0000123, False, "0.0000123 %"), (0.0, False, "0 %")],
)  # fmt: skip
def test_percent_text_never_in_e_notation(value, signed, text):
    assert percent_text(value, signed=signed) == text


def test_no_hedged_plurals_in_tcplab_messages():
    """ "stall(s)", "flow(s)", "connection(s)": tcplab says the count's own form."""
    hedged = re.compile(
        r"""f["'][^"'\n]*\b(?:stall|flow|link|queue|run|namespace|directory|connection|input|snapshot|file)\((?:s|ies)\)"""
    )
    found = []
    for path in SRC.rglob("*.py"):
        for k, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if hedged.search(line):
                found.append(f"{path.relative_to(SRC)}:{k}: {line.strip()}")
    assert not found, "\n".join(found)


def test_recommend_metric_formats_big_values_plainly():
    from tcplab.recommend.metrics import Metric

    ratio = Metric("x", "TCPTimeouts / CurrEstab", "fraction", "", (), compute=lambda t: t)
    assert ratio.fmt(18.4, signed=True) == "+1840 %"
    assert ratio.fmt(184.0, signed=True) == "+18,400 %"
    assert ratio.fmt(0.031) == "3.1 %"
    rate = Metric("g", "goodput", "bps", "", (), compute=lambda t: t)
    assert "e+" not in rate.fmt(1.234e13, signed=True)


def test_check_says_one_flow_not_one_flows(tmp_path):
    from typer.testing import CliRunner

    from tcplab.cli import app

    r = CliRunner().invoke(app, ["check", "builtin:cubic-100mbit-20ms"])
    assert r.exit_code == 0, r.output
    first = r.stdout.splitlines()[0]
    assert first.endswith(", 1 flow)"), first
    assert "1 flows" not in r.stdout


def test_an_experiment_runs_overrides_name_each_path_once():
    from tcplab.experiments.base import Run

    run = Run("x", "s.yaml", overrides=("duration=40s", "flows.0.cc=bbr"), quick_overrides=("duration=6s",))
    assert run.overrides_for(True) == ["flows.0.cc=bbr", "duration=6s"]
    assert run.overrides_for(False) == ["duration=40s", "flows.0.cc=bbr"]
    assert run.command("e", True).count("duration=") == 1


def test_every_shipped_run_lists_each_path_once():
    from tcplab.experiments import load_all

    for e in load_all():
        for quick in (True, False):
            for r in e.runs(quick):
                paths = [o.split("=", 1)[0] for o in r.overrides_for(quick)]
                assert len(paths) == len(set(paths)), (e.name, r.label, r.overrides_for(quick))


def test_the_index_lists_the_stories_in_order():
    from tcplab.experiments import NAMES, load
    from tcplab.views.reproduce import index_record
    from tcplab.views.reproduce import story_info as _story_info

    def record(name: str) -> dict:
        e = load(name)
        return {
            "experiment": name,
            "title": e.title,
            "story": _story_info(e.story),
            "counts": {"reproduced": 0, "partly": 0, "not reproduced": 0},
            "crosschecks": [],
            "crosschecks_agree": 0,
            "runs": [],
            "runs_wall_time_s": None,
            "error": None,
            "claims": [],
        }

    index = index_record([record(n) for n in reversed(NAMES)], quick=True, elapsed_s=None)
    numbers = [e["story"]["number"] for e in index["experiments"]]
    assert numbers == sorted(numbers) and numbers[0] == "000"
    assert [_story_info(load(n).story)["number"] for n in NAMES] == sorted(numbers)


def test_recommend_margin_in_percent_is_plain_digits():
    from recommend_tables import sweep_table
    from tcplab.recommend import recommend_table

    # A's worst case 19.4 Mbit/s, B's 1: A is better by +18.4 Mbit/s, +1,840 %
    goodput = {"A": 19.4e6, "B": 1e6}
    t = sweep_table({"flows.0.cc": ["A", "B"]}, [1], lambda v, s: {"goodput_bps": goodput[v["flows.0.cc"]]})
    rec = recommend_table(t, choose=["flows.0.cc"], maximize="goodput")
    text = rec.sentence
    assert "+1,840 %" in text and "e+" not in text
