"""The compare report answers the apps' question (issue 21 item 16): for request/response
traffic, the latency CDF of each variant overlaid, as flent's ``ping_cdf`` draws its
variants; the same for the other latency kinds (NFS reads, batch writes, HLS segments,
broadcast bursts)."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.colors import to_hex

from tcplab.views.apps import compare_app_figure, compared_apps


@pytest.fixture(scope="module")
def rr_comparison(tmp_path_factory):
    """builtin:rr at two path delays (5 ms and 20 ms one way), written as a comparison."""
    from conftest import compiled_engine

    compiled_engine()
    from tcplab.compare import compare

    cmp = compare(["builtin:rr"], ["links.0.delay=5ms,20ms", "duration=2s"])
    out = tmp_path_factory.mktemp("cmp") / "rr"
    cmp.write(out)
    return cmp, out


@pytest.mark.engine
def test_the_cdfs_of_the_variants_are_overlaid(rr_comparison):
    cmp, _ = rr_comparison
    apps = compared_apps(cmp.results)
    assert set(apps.values()) == {"rr"} and apps
    name = next(iter(apps))
    fig, caption = compare_app_figure(cmp.results, name, "rr")
    assert "ping_cdf" in caption
    lines = {line.get_label(): line for line in fig.axes[0].get_lines() if not line.get_label().startswith("_")}
    labels = list(cmp.results)
    assert len(lines) == len(labels) == 2
    for k, label in enumerate(labels):
        (text,) = [t for t in lines if t.startswith(f"{label}: ")]
        latency = cmp.results[label].apps[name].tables["requests"]["latency_ms"].to_numpy()
        p50, p99 = np.quantile(latency, [0.5, 0.99], method="inverted_cdf")
        assert f"p50 {p50:.3g} ms" in text and f"p99 {p99:.3g} ms" in text and f"({len(latency)} transactions)" in text
        assert to_hex(lines[text].get_color()) == to_hex(f"C{k}")  # the variant's colour, as compare.png
        # the CDF reaches 1 at the slowest transaction
        x, y = lines[text].get_data()
        assert y[-1] == pytest.approx(1.0) and x[-1] == pytest.approx(latency.max())
    # a longer path, a slower answer: the 20 ms variant's median is to the right
    medians = [np.median(cmp.results[v].apps[name].tables["requests"]["latency_ms"]) for v in labels]
    assert medians[1] > medians[0]


@pytest.mark.engine
def test_the_report_shows_them(rr_comparison):
    _, out = rr_comparison
    html = (out / "report.html").read_text(encoding="utf-8")
    assert html.count("the CDF of each variant overlaid") >= 1
    assert "request/response latency" in html
