"""The run report's tables never run off the page (issue 21 item 16): at 1400 px the Flows
table of a three-flow run fits inside the page's text column, and any table that cannot fit
scrolls inside its own box (``div.scroll``) instead of widening the page.

The layout check renders the page in headless Chromium (Debian's ``chromium``) when it is
installed, and reads the screenshot: nothing is drawn right of the page's column. The
structural check (every table in a box that scrolls) runs everywhere."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

#: The page's column at a 1400 px window: body max-width 1100 px + 1em padding each side,
#: centred (views/report.py's style).
WINDOW_PX = 1400
COLUMN_RIGHT_PX = (WINDOW_PX + 1100) // 2 + 16


@pytest.fixture(scope="module")
def three_flow_report(tmp_path_factory) -> Path:
    from conftest import compiled_engine

    compiled_engine()
    import tcplab

    out = tmp_path_factory.mktemp("width") / "run"
    tcplab.run("builtin:slow-reader", overrides=["duration=2s"]).write(out, plots=False)
    return out / "report.html"


@pytest.mark.engine
def test_every_table_sits_in_a_scrolling_box(three_flow_report):
    html = three_flow_report.read_text(encoding="utf-8")
    tables = len(re.findall(r"<table\b", html))
    boxed = len(re.findall(r'<div class="scroll"><table\b', html))
    assert tables >= 2 and boxed == tables
    assert re.search(r"div\.scroll \{[^}]*overflow-x: auto", html)


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


@pytest.mark.engine
@pytest.mark.skipif(_chromium() is None, reason="headless Chromium is not installed (apt-get install chromium)")
def test_at_1400_px_nothing_is_drawn_right_of_the_page(three_flow_report, tmp_path):
    import matplotlib.image

    shot = tmp_path / "report.png"
    subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--window-size={WINDOW_PX},1200", f"--screenshot={shot}", three_flow_report.as_uri()],
        capture_output=True, timeout=120, check=True,
    )  # fmt: skip
    image = matplotlib.image.imread(shot)[..., :3]
    assert image.shape[1] == WINDOW_PX
    right = image[:, COLUMN_RIGHT_PX + 4 :, :]
    drawn = (right < 0.9).any(axis=2)
    assert not drawn.any(), f"{int(drawn.sum())} px drawn right of the page's column (x > {COLUMN_RIGHT_PX})"
    # and the Flows table is there, inside the column
    inside = (image[:, :COLUMN_RIGHT_PX, :] < 0.9).any(axis=2)
    assert np.count_nonzero(inside) > 10_000
