"""One colour per variant shared by the sweep's and recommend's figures (issue 21 item 16):
a setting's colour follows its place in the sweep's plan, not recommend's ranking, so the
setting that ranks first is not drawn in the colour the sweep gave another one."""

from __future__ import annotations

from matplotlib.colors import to_hex

from recommend_tables import sweep_table
from tcplab.recommend import recommend_table
from tcplab.views.colors import variant_colors
from tcplab.views.recommend import recommend_figure
from tcplab.views.sweep import metric_grid_figure, run_metrics

CC = "flows.0.cc"
LOSS = "links.1.loss"


def _colors_by_label(fig, strip: str = "") -> dict[str, str]:
    out = {}
    for ax in fig.axes:
        for line in ax.get_lines():
            label = line.get_label()
            if not label.startswith("_"):
                out.setdefault(label.removeprefix(strip), to_hex(line.get_color()))
    return out


def _table():
    # planned order cubic, reno, bbr; bbr best and reno worst: the ranking is bbr, cubic, reno
    goodput = {"cubic": 5.0, "reno": 3.0, "bbr": 9.0}
    return sweep_table(
        {CC: ["cubic", "reno", "bbr"], LOSS: ["0%", "1%"]},
        [1, 2],
        lambda v, s: {"goodput_bps": goodput[v[CC]] * 1e6, "rtt_p99_ms": 100.0, "rtt_p50_ms": 50.0},
    )


def test_recommend_and_sweep_draw_each_setting_in_one_colour():
    table = _table()
    rec = recommend_table(table, choose=[CC], over=[LOSS], maximize="goodput")
    assert [c.setting[CC] for c in rec.selection.choices][0] == "bbr"  # ranked first
    fig, _ = recommend_figure(rec)
    in_recommend = _colors_by_label(fig)
    runs = run_metrics(table, [CC, LOSS])
    grid = metric_grid_figure(runs, LOSS, ["0%", "1%"], "t", CC, ["cubic", "reno", "bbr"])
    in_sweep = _colors_by_label(grid, strip=f"{CC}=")
    for cc in ("cubic", "reno", "bbr"):
        assert in_recommend[cc] == in_sweep[cc], cc
    # and the colour is the plan's: the first planned value gets the first colour
    assert in_sweep["cubic"] == to_hex("C0") and in_recommend["bbr"] == to_hex("C2")


def test_variant_colors_follow_the_plan_order():
    assert variant_colors(["b", "a", "b", "c"]) == {"b": "C0", "a": "C1", "c": "C2"}
