"""Views: the path's limits the plots draw, the episodes they mark, the plots' pixels, and a
report.html that is one self-contained file with rounded numbers."""

from __future__ import annotations

import base64
import io
import re

import matplotlib.colors
import matplotlib.image
import numpy as np
import pytest

import tcplab
from tcplab.results.paths import flow_path, flow_paths, link_payload_bps
from tcplab.views.episodes import entries, first_loss_s, retransmission_marks, state_spans, zoom_window
from tcplab.views.plots import MAX_FLOW_FIGURES, bottleneck_queues, run_plots
from tcplab.views.report import format_metric, sig

# -- the path's limits, against the formula ---------------------------------------------


def test_payload_rate_formula():
    # rate x MSS / (MSS + 20 IP + 20 TCP + 12 timestamps + framing): 1448/1514 on Ethernet
    link = {"rate_bps": 100_000_000, "overhead_bytes": 14}
    assert link_payload_bps(link, 1448) == pytest.approx(100e6 * 1448 / 1514)
    assert link_payload_bps({"rate_bps": 10_000_000, "overhead_bytes": 0}, 1000) == pytest.approx(10e6 * 1000 / 1052)


def test_lossy_builtin_path():
    config = tcplab.load_scenario("builtin:cubic-vs-bbr-lossy").to_core()
    (path,) = flow_paths(config).values()
    # server -> emu (1 Gbit/s, 50 us) -> client (5 Mbit/s, 50 ms); ACKs back the same way
    assert path.payload_ceiling_bps == pytest.approx(5e6 * 1448 / 1514)
    assert path.base_rtt_s == pytest.approx(2 * (50e-6 + 50e-3))
    assert config["links"][path.bottleneck_link]["name"] == "emu->client"
    assert [config["links"][i]["name"] for i in path.data_links] == ["server->emu", "emu->client"]
    assert [config["links"][i]["name"] for i in path.ack_links] == ["client->emu", "emu->server"]


def test_path_follows_the_slowest_link_per_direction_and_the_mss(base_scenario):
    base_scenario["links"][0] = {
        "between": ["server", "r1"],
        "rate": "10Mbit",
        "delay": "5ms",
        "reverse": {"rate": "1Mbit", "delay": "20ms"},
    }
    base_scenario["links"][1] = {"between": ["r1", "client"], "rate": "8Mbit", "delay": "1ms", "overhead": 0}
    base_scenario["flows"][0]["tcp"] = {"mss": 1000}
    config = tcplab.load_scenario(base_scenario).to_core()
    flow = config["flows"][0]
    path = flow_path(config, flow)
    assert path is not None
    mss = flow["tcp"]["mss_bytes"]
    assert mss == 1000
    # data: 10 Mbit/s with 14 B framing, then 8 Mbit/s with none: the second is slower
    expected = min(10e6 * mss / (mss + 52 + 14), 8e6 * mss / (mss + 52))
    assert path.payload_ceiling_bps == pytest.approx(expected)
    assert config["links"][path.bottleneck_link]["name"] == "r1->client"
    # the slow 1 Mbit/s reverse direction carries ACKs: it does not cap the payload
    # base RTT = data route 5 + 1 ms, ACK route 1 + 20 ms
    assert path.base_rtt_s == pytest.approx(0.027)


@pytest.mark.parametrize("app", ["maerts", {"hls": {"profiles": [{"name": "HD", "bitrate": "3Mbit"}]}}])
def test_server_sending_flows_route_their_data_from_the_server(base_scenario, app):
    # maerts / hls: the server (`to`) writes the data (engine data_side = server), so the
    # ceiling is the slowest link of to -> from; the client's direction carries the ACKs
    base_scenario["links"][0] = {
        "between": ["server", "r1"],
        "rate": "100Mbit",
        "delay": "5ms",
        "reverse": {"rate": "5Mbit", "delay": "20ms"},
    }
    base_scenario["flows"][0]["app"] = app  # from server to client: the data goes client -> server
    config = tcplab.load_scenario(base_scenario).to_core()
    flow = config["flows"][0]
    assert flow["data_side"] == "server"
    path = flow_path(config, flow)
    assert path is not None
    assert path.payload_ceiling_bps == pytest.approx(5e6 * 1448 / 1514)
    assert config["links"][path.bottleneck_link]["name"] == "r1->server"
    assert [config["links"][i]["name"] for i in path.data_links] == ["client->r1", "r1->server"]
    assert [config["links"][i]["name"] for i in path.ack_links] == ["server->r1", "r1->client"]


def _ceiling_and_rtt(name: str) -> tuple[float, float]:
    config = tcplab.load_scenario(name).to_core()
    path = flow_path(config, config["flows"][0])
    assert path is not None
    return path.payload_ceiling_bps, path.base_rtt_s


def test_ceiling_is_held_to_a_tbf_on_the_path():
    # tbf counts whole frames: 10 Mbit/s x 1448/1514, not the 100 Mbit/s line rate
    ceiling, _ = _ceiling_and_rtt("builtin:tbf-shaper-10mbit")
    assert ceiling == pytest.approx(10e6 * 1448 / 1514)


def test_ceiling_is_held_to_a_tbf_peakrate():
    # peakrate below rate is the smaller of the two buckets' rates
    config = tcplab.load_scenario("builtin:tbf-shaper-10mbit").to_core()
    link = next(i for i, k in enumerate(config["links"]) if k["queue"].get("kind") == "tbf")
    config["links"][link]["queue"]["peakrate_bps"] = 4_000_000
    path = flow_path(config, config["flows"][0])
    assert path.payload_ceiling_bps == pytest.approx(4e6 * 1448 / 1514)


def test_ceiling_is_held_to_fq_maxrate_per_flow():
    ceiling, _ = _ceiling_and_rtt("builtin:fq-maxrate-per-flow")
    assert ceiling == pytest.approx(30e6 * 1448 / 1514)


@pytest.mark.parametrize("name", ["builtin:cni-bandwidth-pod-limit", "builtin:bandwidth-manager-pod-limit"])
def test_pod_flows_route_through_their_node_and_its_limit(name):
    # the pod's egress limit (CNI tbf on the veth/IFB hop, or Cilium's EDT aggregate on the
    # node's device) caps the flow; the base RTT is the two 500 us hops, both ways
    ceiling, base_rtt_s = _ceiling_and_rtt(name)
    assert ceiling == pytest.approx(10e6 * 1448 / 1514)
    assert base_rtt_s == pytest.approx(2 * (500e-6 + 500e-6))


# -- episodes ----------------------------------------------------------------------------


def test_state_spans_hold_until_the_next_sample():
    t = np.array([0.0, 0.1, 0.2, 0.3, 0.4])
    labels = np.array(["Open", "Recovery", "Recovery", "Open", "Loss"])
    spans = [(s.label, s.start_s, s.end_s) for s in state_spans(t, labels, 0.1)]
    assert spans == [
        ("Open", 0.0, 0.1),
        ("Recovery", 0.1, 0.3),
        ("Open", 0.3, 0.4),
        ("Loss", 0.4, pytest.approx(0.5)),
    ]
    assert state_spans(np.array([]), np.array([]), 0.1) == []


def test_rto_marks_are_entries_into_loss():
    t = np.arange(7) * 0.1
    ca = np.array(["Open", "Loss", "Loss", "Open", "Recovery", "Loss", "Open"])
    assert entries(t, ca, "Loss").tolist() == pytest.approx([0.1, 0.5])
    assert entries(t, ca, "Recovery").tolist() == pytest.approx([0.4])
    assert entries(t[:1], ca[:1], "Loss").size == 0


def test_retransmission_marks_from_the_cumulative_count():
    t = np.arange(5) * 0.1
    times, segs = retransmission_marks(t, np.array([0, 0, 3, 3, 7], dtype=np.uint64))
    assert times.tolist() == pytest.approx([0.2, 0.4]) and segs.tolist() == [3, 4]
    ca = np.array(["Open", "Recovery", "Recovery", "Open", "Open"])
    assert first_loss_s(t, np.array([0, 0, 3, 3, 7]), ca) == pytest.approx(0.1)
    assert first_loss_s(t, np.zeros(5), np.array(["Open"] * 5)) is None


def test_zoom_window():
    # width = max(lifetime / 10, 20 samples, 20 base RTTs) = max(6, 2, 2) s, a quarter before the loss
    assert zoom_window(0.0, 60.0, 0.1, 0.1, 10.0) == pytest.approx((8.5, 14.5))
    assert zoom_window(0.0, 60.0, 0.1, 0.1, 0.3) == pytest.approx((0.0, 6.0))  # not before the start
    assert zoom_window(0.0, 60.0, 0.1, 0.1, 59.0) == pytest.approx((54.0, 60.0))  # not past the end
    assert zoom_window(0.0, 60.0, 0.1, 0.1, None) == pytest.approx((0.0, 6.0))
    assert zoom_window(0.0, 2.0, 0.1, 0.1, 0.5) is None  # 20 samples cover the run: no zoom


# -- rounding ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (95.342, "95.3"),
        (4.5849, "4.58"),
        (1.1625, "1.16"),
        (0.012345, "0.0123"),
        (1234.5, "1230"),
        (9.996, "10.0"),
        (0, "0"),
        (float("nan"), "-"),
    ],
)
def test_three_significant_figures(value, text):
    assert sig(value) == text


def test_compare_cells_are_rounded_by_unit():
    assert format_metric("goodput (Mbit/s)", 4.58512) == "4.59"
    assert format_metric("retrans (%)", 1.18567) == "1.19"
    assert format_metric("RTT p99 (ms)", 143.3649) == "143.4"
    assert format_metric("loss drops", 72.0) == "72"
    assert format_metric("RTT p50 (ms)", float("nan")) == "-"


# -- plots: size and content -------------------------------------------------------------


@pytest.fixture
def lossy(fake):
    return tcplab.run("builtin:cubic-vs-bbr-lossy", overrides=["flows.0.count=2", "duration=5s"], core=fake)


def _decode(png: bytes) -> np.ndarray:
    return matplotlib.image.imread(io.BytesIO(png), format="png")


def _pixels_near(image: np.ndarray, color: str, tol: float = 0.15) -> int:
    """Pixels of ``color`` left of the legends (which sit right of the axes, past 3/4 of the
    width): drawn data, not a legend's sample line. Antialiasing blends line edges, hence
    the tolerance."""
    rgb = np.array(matplotlib.colors.to_rgb(color))
    data = image[:, : image.shape[1] * 3 // 4, :3]
    return int((np.abs(data - rgb).max(axis=-1) < tol).sum())


def test_run_plots_have_their_size_and_draw_the_flows(lossy):
    plots = {p.filename: p for p in run_plots(lossy)}
    assert list(plots) == ["goodput.png", "cwnd.png", "rtt.png", "queues.png", "flow-0.png", "flow-1.png"]
    sizes = {"goodput.png": (400, 1000), "cwnd.png": (400, 1000), "rtt.png": (400, 1000), "queues.png": (550, 1000)}
    for name, plot in plots.items():
        image = _decode(plot.png)
        assert image.shape[:2] == sizes.get(name, (1300, 1000)), name  # inches x 100 dpi
        gray = image[..., :3].mean(axis=-1)
        assert gray.var() > 1e-3, name  # not blank
        # a flow's colour (C0, C1: the double gives both flows the same goodput, so one
        # hides the other) is drawn: a line, not only axes and text
        assert _pixels_near(image, "C0") + _pixels_near(image, "C1") > 200, name


def test_flow_figures_are_capped(fake, monkeypatch):
    import tcplab.views.plots as plots

    drawn = []
    monkeypatch.setattr(plots, "_flow_plot", lambda result, number, name, path: drawn.append(number) or number)
    r = tcplab.run(
        "builtin:cubic-vs-bbr-lossy", overrides=[f"flows.0.count={MAX_FLOW_FIGURES + 2}", "duration=1s"], core=fake
    )
    assert len(plots.run_plots(r)) == 4 + MAX_FLOW_FIGURES
    assert drawn == list(range(MAX_FLOW_FIGURES))


def test_bottleneck_queue_is_plotted(lossy):
    names = [lossy.config["links"][i]["name"] for i in bottleneck_queues(lossy)]
    assert "emu->client" in names
    # and every queue that dropped or filled to a tenth of its limit (at least 2 packets)
    links = {row["name"]: row for row in lossy.links.to_dict("records")}
    limits = {link["name"]: link["queue"]["limit_packets"] for link in lossy.config["links"]}
    busy = {
        name
        for name, row in links.items()
        if row["drops"] > 0 or row["max_backlog_packets"] >= max(2, limits[name] / 10)
    }
    assert set(names) == busy | {"emu->client"}
    assert "emu->server" not in busy  # the rule does leave queues out: 5 packets of 1000


# -- report.html: one self-contained file ------------------------------------------------


def _images(html: str) -> list[bytes]:
    return [base64.b64decode(m) for m in re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)]


def _assert_self_contained(html: str) -> None:
    srcs = re.findall(r'\bsrc\s*=\s*"([^"]*)"', html)
    assert srcs and all(s.startswith("data:image/png;base64,") for s in srcs), srcs
    hrefs = re.findall(r'\bhref\s*=\s*"([^"]*)"', html)
    assert hrefs == [], hrefs  # no link to a file that is not attached with the page
    assert "<script" not in html and "<link" not in html and "url(" not in html


@pytest.fixture(scope="module")
def lossy_run(tmp_path_factory):
    import fake_core

    r = tcplab.run(
        "builtin:cubic-vs-bbr-lossy", overrides=["flows.0.count=2", "duration=5s"], core=fake_core.FakeCore()
    )
    return r, r.write(tmp_path_factory.mktemp("views") / "run")


def test_run_report_is_self_contained(lossy_run):
    _, out = lossy_run
    html = (out / "report.html").read_text()
    _assert_self_contained(html)
    images = _images(html)
    files = sorted((out / "plots").iterdir())
    assert len(images) == len(files) == 6
    assert sorted(images) == sorted(p.read_bytes() for p in files)  # the same figures, inline
    for png in images:
        assert _decode(png).shape[1] == 1000
    # the inputs travel with it
    assert "duration_ns&#34;: 5000000000" in html and "TcpRetransSegs" in html


def test_run_report_shows_the_path_limits_rounded(lossy_run):
    lossy, out = lossy_run
    html = (out / "report.html").read_text()
    ceiling = 5e6 * 1448 / 1514
    assert f"<td>{sig(ceiling / 1e6)}</td>" in html  # 4.78 Mbit/s
    assert "<td>100.1</td>" in html  # base RTT 2 x (50 us + 50 ms), 1 decimal
    flow = lossy.flows.iloc[0]
    assert f"<td>{sig(flow['goodput_bps'] / 1e6)}</td>" in html
    assert f"<td>{100 * flow['goodput_bps'] / ceiling:.2f}</td>" in html  # share of the ceiling, %
    assert f"<td>{100 * flow['retrans_ratio']:.2f}</td>" in html
    assert f"<td>{flow['rtt_p50_ms']:.1f}</td>" in html


def test_compare_report_is_self_contained(fake, tmp_path):
    cmp = tcplab.compare(["builtin:cubic-vs-bbr-lossy"], ["flows.0.cc=cubic,bbr", "duration=3s"], core=fake)
    out = cmp.write(tmp_path / "cmp")
    html = (out / "report.html").read_text()
    _assert_self_contained(html)
    images = _images(html)
    # compare.png, then each variant's flow figure
    assert images[0] == (out / "compare.png").read_bytes()
    assert images[1:] == [(out / v / "plots" / "flow-0.png").read_bytes() for v in ("cubic", "bbr")]
    assert _decode(images[0]).shape[:2] == (1200, 1000)
    rows = dict(re.findall(r'<tr><td class="l">([^<]+)</td>(.*?)</tr>', html, flags=re.S))
    cells = {k: re.findall(r"<td>([^<]*)</td>", v) for k, v in rows.items()}
    loss = [str(int(cmp.results[v].links["loss_drops"].sum())) for v in ("cubic", "bbr")]
    assert cells["loss drops"] == loss
    assert cells["payload ceiling (Mbit/s)"] == [sig(5e6 * 1448 / 1514 / 1e6)] * 2
    assert cells["base RTT (ms)"] == ["100.1", "100.1"]
    assert cells["goodput (Mbit/s)"] == [sig(cmp.results[v].flows["goodput_bps"].sum() / 1e6) for v in ("cubic", "bbr")]


def test_compare_report_without_plots(fake, tmp_path):
    cmp = tcplab.compare(["builtin:cubic-vs-bbr-lossy"], ["flows.0.cc=cubic,bbr", "duration=1s"], core=fake)
    out = cmp.write(tmp_path / "cmp", plots=False)
    html = (out / "report.html").read_text()
    assert "<img" not in html and not (out / "compare.png").exists()


def test_a_flow_is_drawn_only_within_its_lifetime(fake, base_scenario):
    from tcplab.views.plots import _rows

    base_scenario["flows"].append({"from": "server", "to": "client", "start": "2s"})
    r = tcplab.run(base_scenario, overrides=["duration=5s"], core=fake)
    late = r.flows.iloc[1]
    samples = r.timeseries[r.timeseries["flow_name"] == late["name"]]
    assert samples["t_s"].min() < 2.0  # the engine samples it before it starts
    drawn = _rows(r, late["name"])["t_s"]
    assert drawn.min() >= late["start_s"] == 2.0 and len(drawn) > 0


def test_compare_report_with_a_failed_variant(tmp_path):
    """A variant that did not run has '-' in the path rows, and every row has one cell per column."""
    import json as _json

    import fake_core

    class RejectBbr(fake_core.FakeCore):
        def run(self, config_json, progress=None):
            if _json.loads(config_json)["flows"][0]["cc"] == "bbr":
                raise ValueError("refused by the test engine")
            return super().run(config_json, progress)

    cmp = tcplab.compare(["builtin:cubic-vs-bbr-lossy"], ["flows.0.cc=cubic,bbr", "duration=1s"], core=RejectBbr())
    html = (cmp.write(tmp_path / "cmp") / "report.html").read_text()
    _assert_self_contained(html)
    rows = dict(re.findall(r'<tr><td class="l">([^<]+)</td>(.*?)</tr>', html, flags=re.S))
    cells = {k: re.findall(r"<td>([^<]*)</td>", v) for k, v in rows.items()}
    assert all(len(v) == 2 for v in cells.values()), cells
    assert cells["payload ceiling (Mbit/s)"] == [sig(5e6 * 1448 / 1514 / 1e6), "-"]
    assert cells["goodput (Mbit/s)"][1] == "-"
