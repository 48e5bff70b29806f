"""The packetdrill scripts tcplab passes keep passing (issue 25: "CI guards the passes").

``tests/packetdrill_expected_passes.txt`` lists them (paths below the corpus's
``gtests/net/tcp``; ``make conformance`` rewrites it with ``--update-passes`` as more pass).
Each is run against the engine and must pass; the list must also name only scripts that
exist, so a renamed script cannot drop out unnoticed. The corpus is google/packetdrill at
``../shared/packetdrill`` beside the project, or ``$TCPLAB_PACKETDRILL_DIR`` (``.ci/run``
looks beside the checkout it was cloned from); without it the tests skip, saying where they
looked.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tcplab.packetdrill.conformance import OUT_OF_SCOPE, in_scope, render
from tcplab.packetdrill.run import ScriptResult, run_script

CORPUS = Path(os.environ.get("TCPLAB_PACKETDRILL_DIR", Path(__file__).resolve().parents[2] / "shared" / "packetdrill"))
TCP_DIR = CORPUS / "gtests" / "net" / "tcp"
LIST = Path(__file__).with_name("packetdrill_expected_passes.txt")


def expected_passes() -> list[str]:
    lines = [ln.split("#", 1)[0].strip() for ln in LIST.read_text().splitlines()]
    return [ln for ln in lines if ln]


def _need_corpus() -> None:
    if not TCP_DIR.is_dir():
        pytest.skip(f"no packetdrill corpus at {CORPUS} (set TCPLAB_PACKETDRILL_DIR)")


def test_the_list_is_not_empty_and_names_real_scripts():
    names = expected_passes()
    assert len(names) >= 20, "the expected passes were lost"
    assert len(set(names)) == len(names)
    _need_corpus()
    missing = [n for n in names if not (TCP_DIR / n).is_file()]
    assert not missing, f"listed but not in the corpus: {missing}"


@pytest.mark.parametrize("name", expected_passes())
def test_an_expected_pass_passes(name):
    _need_corpus()
    r = run_script(TCP_DIR / name)
    assert r.status == "pass", f"{r.status}: {r.message}\n{r.details}"


def test_out_of_scope_skips_are_told_apart_from_in_scope_ones():
    tfo = ScriptResult("a.pkt", "skip", "TCP Fast Open option (line 3) not modelled")
    nosack = ScriptResult("b.pkt", "skip", "connection without SACK not modelled")
    assert not in_scope(tfo) and in_scope(nosack)
    assert in_scope(ScriptResult("c.pkt", "fail", "TCP Fast Open: anything"))
    assert all(isinstance(p, str) and p for p in OUT_OF_SCOPE)


def test_the_page_counts_per_folder_and_sets_the_kernel_beside(tmp_path):
    root = tmp_path / "tcp"
    rs = [
        ScriptResult(str(root / "x" / "a.pkt"), "pass"),
        ScriptResult(str(root / "x" / "b.pkt"), "fail", f"{root / 'x' / 'b.pkt'}:3: boom"),
        ScriptResult(str(root / "y" / "c.pkt"), "skip", "zerocopy (line 2) not modelled"),
        ScriptResult(str(root / "y" / "d.pkt"), "pass"),
    ]
    kernel = {
        "kernel": "9.9",
        "results": {
            "x/a.pkt": {"status": "pass"},
            "x/b.pkt": {"status": "pass"},
            "y/d.pkt": {"status": "fail", "first_error": "e"},
        },
    }
    page = render(rs, root, kernel)
    assert "| x | 2 | 2 | 1 | 1 | 0 | 2 | 2 | 1 |" in page
    assert "| y | 2 | 1 | 1 | 0 | 0 | 0 | 0 | 0 |" in page
    assert "**1 of the 2 in-scope scripts the kernel passes pass on tcplab (50 %)**" in page
    assert "| x/b.pkt | fail | pass | x/b.pkt:3: boom |" in page
    assert "| y/d.pkt | e |" in page, "a pass the kernel fails is listed"
