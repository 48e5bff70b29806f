"""Applications in the results: Result.apps, summary.json, app_<table>.parquet, the report's
sections and figures, the CLI's headline lines and compare's rows.

Configurations with apps are built by hand here (the flows an app drives become
``{"kind": "driven"}`` and ``config["apps"]`` names them), run on the engine double (one fake
of each kind, with ARCH9.md's keys) and, for rr, on the real engine.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import fake_core
import tcplab
from plotcheck import assert_plot
from tcplab.engine import parse_output, run_core
from tcplab.errors import EngineError
from tcplab.results import Result, check_output_dir, headline, headline_text
from tcplab.results.apps import AppResult, app_table_frames
from tcplab.views import write_run_views
from tcplab.views.apps import stall_spans

SCENARIO = {
    "name": "apps",
    "duration": "30s",
    "hosts": {"c": {}, "s": {}},
    "links": [{"between": ["c", "s"], "rate": "20Mbit", "delay": "10ms"}],
    "flows": [{"from": "c", "to": "s", "count": 10}],
}

#: ARCH9.md: the summary keys (at least) and table columns (at least) of each kind.
SUMMARY_KEYS = {
    "rr": {"transactions", "transactions_per_sec", "latency_ms"},
    "hls": {"startup_delay_s", "stalls", "stall_s", "switches", "time_on_profile_s", "segments", "profile_names"},
    "nfs_stream": {
        "startup_delay_s",
        "stalls",
        "stall_s",
        "reads",
        "bytes_read",
        "share_of_bytes",
        "latency_ms",
    },
    "batch_writer": {"batches", "sent", "timeouts", "retries", "dropped", "max_pending", "latency_ms"},
    "broadcast": {
        "bursts",
        "messages",
        "bytes_delivered",
        "completion_ms",
        "retrans_segs",
        "data_segs_out",
        "retrans_rate",
        "tcp_timeouts",
        "curr_estab",
        "timeouts_rate_per_estab",
        "timeouts_rate_window_s",
    },
}
TABLE_COLUMNS = {
    "rr": {"requests": {"flow", "start_ns", "latency_ns"}},
    "hls": {
        "segments": {
            "index",
            "profile",
            "bitrate_bps",
            "bytes",
            "request_ns",
            "latency_ns",
            "estimate_bps",
            "buffer_ns",
        },
        "series": {"t_ns", "buffer_ns", "playing", "profile"},
    },
    "nfs_stream": {
        "requests": {"flow", "offset_bytes", "bytes", "start_ns", "latency_ns"},
        "series": {"t_ns", "buffer_ns", "playing", "inflight_bytes"},
    },
    "batch_writer": {
        "requests": {"flow", "batch", "attempt", "start_ns", "latency_ns", "outcome"},
        "series": {"t_ns", "pending"},
    },
    "broadcast": {"bursts": {"burst", "start_ns", "completion_ns", "bytes", "messages"}},
}

#: (app name, kind, spec fields, flow indices, data side)
APPS = [
    ("web-rr", "rr", {"request_bytes": 1, "response_bytes": 1}, [0, 1], "client"),
    (
        "viewer",
        "hls",
        {
            "profiles": [{"name": "HD", "bitrate_bps": 3_000_000}, {"name": "low", "bitrate_bps": 800_000}],
            "segment_ns": 4_000_000_000,
        },
        [2],
        "server",
    ),
    ("media", "nfs_stream", {"bitrate_bps": 8_000_000, "rsize_bytes": 1 << 20}, [3, 4, 5, 6], "server"),
    ("agent", "batch_writer", {"timeout_ns": 2_000_000_000, "max_pending": 4}, [7], "client"),
    (
        "fanout",
        "broadcast",
        {"window_ns": 10_000_000, "interval_ns": 1_000_000_000, "connections_per_sender": 2},
        [8, 9],
        "client",
    ),
]


def with_apps(config: dict[str, Any], apps=APPS) -> dict[str, Any]:
    """``config`` with the given flows driven by the given apps."""
    config = copy.deepcopy(config)
    config["apps"] = []
    for name, kind, spec, flows, side in apps:
        for f in flows:
            config["flows"][f]["app"] = {"kind": "driven"}
            config["flows"][f]["data_side"] = side
        config["apps"].append({"name": name, "flows": list(flows), "spec": {"kind": kind, **spec}})
    return config


def run_apps(core: Any, scenario: dict = SCENARIO, apps=APPS) -> Result:
    sc = tcplab.load_scenario(scenario)
    config = with_apps(sc.to_core(), apps)
    return Result(sc, config, run_core(config, core=core), views=write_run_views)


@pytest.fixture(scope="module", autouse=True)
def one_flow_figure():
    """The apps' figures are under test, not the per-flow ones: draw one (they cost ~1 s each)."""
    import tcplab.views.plots

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tcplab.views.plots, "MAX_FLOW_FIGURES", 1)
        yield


@pytest.fixture(scope="module")
def fake_result() -> Result:
    return run_apps(fake_core)


@pytest.fixture(scope="module")
def fake_run_dir(fake_result, tmp_path_factory):
    return fake_result.write(tmp_path_factory.mktemp("apps") / "run")


# -- engine output -----------------------------------------------------------------------


def test_engine_output_without_apps_is_accepted():
    raw = fake_core.run(json.dumps(tcplab.load_scenario(SCENARIO).to_core()))
    raw.pop("apps")  # an engine from before issue 9
    assert parse_output(raw).apps == []


def test_engine_output_apps_become_frames():
    sc = tcplab.load_scenario(SCENARIO)
    raw = fake_core.run(json.dumps(with_apps(sc.to_core())))
    apps = parse_output(raw).apps
    assert [a["name"] for a in apps] == [a[0] for a in APPS]
    segments = apps[1]["tables"]["segments"]
    assert isinstance(segments, pd.DataFrame)
    assert segments["profile"].map(type).eq(str).all()  # list[str] columns stay strings
    assert segments["bitrate_bps"].dtype == np.uint64


@pytest.mark.parametrize(
    "apps, message",
    [
        ({"name": "x"}, "apps is not a list"),
        ([{"name": "x"}], "apps.0 lacks kind"),
        ([{"name": "x", "kind": "rr", "summary": [1]}], "apps.0.summary"),
        (
            [{"name": "x", "kind": "rr", "tables": {"requests": {"a": np.zeros(2), "b": np.zeros(3)}}}],
            "apps.0.tables.requests.b has 3 rows",
        ),
        ([{"name": "x", "kind": "rr", "tables": {"t": {"a": np.zeros((2, 2))}}}], "not one-dimensional"),
    ],
)
def test_bad_engine_apps_are_engine_errors(apps, message):
    raw = fake_core.run(json.dumps(tcplab.load_scenario(SCENARIO).to_core()))
    raw["apps"] = apps
    with pytest.raises(EngineError, match=re.escape(message)):
        parse_output(raw)


def test_empty_string_column_keeps_object_dtype():
    raw = fake_core.run(json.dumps(tcplab.load_scenario(SCENARIO).to_core()))
    raw["apps"] = [{"name": "x", "kind": "rr", "summary": {}, "tables": {"t": {"s": [], "n": np.array([], "u8")}}}]
    frame = parse_output(raw).apps[0]["tables"]["t"]
    assert frame["s"].dtype == object and len(frame) == 0


# -- Result.apps and summary.json ---------------------------------------------------------


def test_result_apps_kinds_and_flows(fake_result):
    r = fake_result
    assert list(r.apps) == [a[0] for a in APPS]
    names = [f["name"] for f in r.config["flows"]]
    for name, kind, _spec, flows, _side in APPS:
        app = r.apps[name]
        assert app.kind == kind
        assert app.flows == [names[f] for f in flows]
        assert app.spec["kind"] == kind
        for table, columns in TABLE_COLUMNS[kind].items():
            assert columns <= set(app.tables[table].columns), (name, table)


def test_convenience_columns(fake_result):
    names = [f["name"] for f in fake_result.config["flows"]]
    for app in fake_result.apps.values():
        for frame in app.tables.values():
            if "flow" in frame.columns:
                assert list(frame["flow_name"]) == [names[i] for i in frame["flow"]]
            if "t_ns" in frame.columns:
                np.testing.assert_allclose(frame["t_s"], frame["t_ns"] / 1e9)
            if "latency_ns" in frame.columns:
                np.testing.assert_allclose(frame["latency_ms"], frame["latency_ns"] / 1e6)
            if "start_ns" in frame.columns:
                np.testing.assert_allclose(frame["start_s"], frame["start_ns"] / 1e9)
    # a duration, not an instant: milliseconds
    bursts = fake_result.apps["fanout"].tables["bursts"]
    np.testing.assert_allclose(bursts["completion_ms"], bursts["completion_ns"] / 1e6)


def test_summary_json_has_every_app_with_its_kind_and_keys(fake_run_dir):
    summary = json.loads((fake_run_dir / "summary.json").read_text())
    assert list(summary["apps"]) == [a[0] for a in APPS]
    for name, kind, *_ in APPS:
        entry = summary["apps"][name]
        assert entry["kind"] == kind
        assert SUMMARY_KEYS[kind] <= set(entry), (name, SUMMARY_KEYS[kind] - set(entry))


def test_summary_without_apps_is_an_empty_mapping(fake):
    r = tcplab.run(SCENARIO, core=fake)
    assert r.apps == {} and r.summary["apps"] == {}


def test_summary_is_json_safe():
    app = AppResult("a", "rr", {})
    raw = fake_core.run(json.dumps(tcplab.load_scenario(SCENARIO).to_core()))
    raw["apps"] = [
        {"name": "a", "kind": "rr", "summary": {"x": float("nan"), "m": {"p99": np.float64("inf")}, "n": np.uint64(3)}}
    ]
    sc = tcplab.load_scenario(SCENARIO)
    r = Result(sc, sc.to_core(), parse_output(raw))
    assert r.summary["apps"]["a"] == {"kind": "rr", "x": None, "m": {"p99": None}, "n": 3}
    json.dumps(r.summary, allow_nan=False)
    assert app.get("missing", "key") is None


# -- Parquet ------------------------------------------------------------------------------


def test_one_parquet_per_table_name_with_an_app_column(fake_result, fake_run_dir):
    files = sorted(p.name for p in fake_run_dir.glob("app_*.parquet"))
    assert files == ["app_bursts.parquet", "app_requests.parquet", "app_segments.parquet", "app_series.parquet"]
    requests = pd.read_parquet(fake_run_dir / "app_requests.parquet")
    assert list(requests.columns[:2]) == ["app", "kind"]
    expected = {n: len(a.tables["requests"]) for n, a in fake_result.apps.items() if "requests" in a.tables}
    assert requests.groupby("app").size().to_dict() == expected
    # columns of one app only are null in the others' rows; types are kept
    batch = requests[requests["app"] == "agent"]
    assert set(batch["outcome"]) <= {"ok", "timeout"}
    assert requests.loc[requests["app"] == "web-rr", "outcome"].isna().all()
    series = pd.read_parquet(fake_run_dir / "app_series.parquet", dtype_backend="numpy_nullable")
    assert str(series["playing"].dtype) == "boolean"
    assert set(series["app"]) == {"viewer", "media", "agent"}


def test_app_parquet_is_deterministic(fake_result, tmp_path):
    a = fake_result.write(tmp_path / "a", plots=False)
    b = run_apps(fake_core).write(tmp_path / "b", plots=False)
    for name in ("app_requests.parquet", "app_series.parquet", "summary.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes()


def test_force_replaces_a_run_directory_with_app_tables(fake_result, tmp_path):
    out = fake_result.write(tmp_path / "run", plots=False)
    assert check_output_dir(out, overwrite=True) == out.resolve()
    fake_result.write(out, overwrite=True, plots=False)
    (out / "app_evil.txt").write_text("mine")  # not a name tcplab writes
    with pytest.raises(tcplab.ScenarioError, match="app_evil.txt"):
        check_output_dir(out, overwrite=True)


def test_table_names_that_are_not_file_safe_are_not_written():
    app = AppResult("a", "x", {}, {"../up": pd.DataFrame({"v": [1]}), "ok": pd.DataFrame({"v": [1]})})
    assert list(app_table_frames({"a": app})) == ["ok"]


# -- report and plots ---------------------------------------------------------------------


def test_report_has_a_section_and_a_figure_per_app(fake_result, fake_run_dir):
    html = (fake_run_dir / "report.html").read_text()
    assert "<h2>Applications</h2>" in html
    sections = html[html.index("<h2>Applications</h2>") : html.index("Packet accounting")]
    for name, kind, *_ in APPS:
        assert f"<h3>{name} <span" in sections and f"({kind};" in sections
        assert f'alt="{name} ({kind}):' in sections  # its figure sits in its section
        assert_plot(fake_run_dir / "plots" / f"app-{name}.png")
    # the headline metrics head each section
    assert "<th>latency p99</th>" in sections and "<th>stalls</th>" in sections
    assert "<th>rate(TCPTimeouts) / CurrEstab</th>" in sections
    assert "app_requests.parquet" in sections


def test_plots_survive_missing_optional_tables_and_columns(tmp_path):
    sc = tcplab.load_scenario(SCENARIO)
    config = with_apps(sc.to_core())
    raw = fake_core.run(json.dumps(config))
    for app in raw["apps"]:
        tables = app["tables"]
        tables.pop("series", None)
        for table in tables.values():
            for optional in ("estimate_bps", "playing", "outcome", "flow", "attempt"):
                table.pop(optional, None)
        app["summary"] = {}
    r = Result(sc, config, parse_output(raw), views=write_run_views)
    out = r.write(tmp_path / "run")
    for name, *_ in APPS:
        assert (out / "plots" / f"app-{name}.png").is_file()
    assert all(h.value is None for app in r.apps.values() for h in headline(app))


def test_an_unknown_kind_gets_a_generic_section(tmp_path):
    sc = tcplab.load_scenario({**SCENARIO, "flows": [{"from": "c", "to": "s"}]})
    raw = fake_core.run(json.dumps(sc.to_core()))
    raw["apps"] = [
        {
            "name": "call",
            "kind": "video_call",
            "summary": {"frames": 120, "jitter_ms": {"p99": 4.5}},
            "tables": {"frames": {"t_ns": np.arange(3, dtype="u8") * 10**9, "codec": ["vp8", "vp8", "av1"]}},
        }
    ]
    r = Result(sc, sc.to_core(), parse_output(raw), views=write_run_views)
    assert headline(r.apps["call"]) == []
    assert headline_text(r.apps["call"]) == "call (video_call): (no headline metrics for this kind)"
    out = r.write(tmp_path / "run")
    html = (out / "report.html").read_text()
    assert "<h3>call <span" in html and "jitter_ms.p99" in html
    assert "<th>codec</th>" in html and "<td>av1</td>" in html  # a preview of its table
    assert not list((out / "plots").glob("app-*.png"))
    assert pd.read_parquet(out / "app_frames.parquet")["codec"].tolist() == ["vp8", "vp8", "av1"]


def test_stall_spans():
    t = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    playing = np.array([False, False, True, False, False, True, False])
    startup, stalls = stall_spans(t, playing, 1.0)
    assert startup == (0.0, 3.0)
    assert stalls == [(4.0, 6.0), (7.0, 8.0)]
    assert stall_spans(t, np.zeros(7, bool), 1.0) == ((0.0, 8.0), [])


def test_nfs_buffer_min_counts_from_the_start_of_playback():
    series = pd.DataFrame(
        {"t_ns": [1, 2, 3, 4], "buffer_ns": [0, 5 * 10**9, 3 * 10**9, 4 * 10**9], "playing": [False, True, True, True]}
    )
    app = AppResult("m", "nfs_stream", {"share_of_bytes": [0.5, 0.25, 0.25]}, {"series": series})
    by_label = {h.label: h.value for h in headline(app)}
    assert by_label["buffer min"] == 3.0
    assert by_label["share per connection"] == "50/25/25 %"


# -- CLI and compare ----------------------------------------------------------------------


class AppsFake(fake_core.FakeCore):
    """The engine double, with the scenario's flows driven by ``APPS`` (until scenarios name apps)."""

    def run(self, config_json, progress=None):
        return super().run(json.dumps(with_apps(json.loads(config_json))), progress)


def test_cli_run_prints_one_line_per_app(tmp_path, monkeypatch, write_yaml):
    import tcplab.engine
    from tcplab.cli import app as cli

    monkeypatch.setattr(tcplab.engine, "import_core", lambda: AppsFake())
    out = tmp_path / "run"
    r = CliRunner().invoke(cli, ["run", str(write_yaml(SCENARIO)), "-o", str(out), "--no-plots"])
    assert r.exit_code == 0, r.output
    lines = {line.split(" (")[0]: line for line in r.stdout.splitlines() if line.startswith("app ")}
    assert set(lines) == {f"app {a[0]}" for a in APPS}
    summary = json.loads((out / "summary.json").read_text())["apps"]
    rr = summary["web-rr"]
    assert f"transactions {rr['transactions_per_sec']:.1f}/s" in lines["app web-rr"]
    assert f"latency p99 {rr['latency_ms']['p99']:.1f} ms" in lines["app web-rr"]
    assert f"stalls {summary['viewer']['stalls']}" in lines["app viewer"]
    assert "startup" in lines["app viewer"] and "on HD" in lines["app viewer"]
    assert "share per connection" in lines["app media"] and "buffer min" in lines["app media"]
    batch = summary["agent"]
    assert f"timeouts {batch['timeouts']}, retries {batch['retries']}, dropped {batch['dropped']}" in lines["app agent"]
    rate = summary["fanout"]["timeouts_rate_per_estab"]  # None: no burst in this short run
    assert f"rate(TCPTimeouts) / CurrEstab {'-' if rate is None else f'{100 * rate:.3g} %/s'}" in lines["app fanout"]


def test_compare_has_app_headline_rows(monkeypatch):
    from tcplab.compare import compare_table

    a, b = run_apps(fake_core), run_apps(fake_core, {**SCENARIO, "duration": "20s"})
    table = compare_table({"30s": a, "20s": b})
    assert table.loc["web-rr: latency p99 (ms)", "30s"] == a.apps["web-rr"].summary["latency_ms"]["p99"]
    assert table.loc["agent: timeouts", "20s"] == b.apps["agent"].summary["timeouts"]
    assert "media: share per connection" not in table.index  # text: in the reports, not the table


def test_an_app_with_many_connections_is_one_row(tmp_path):
    scenario = {**SCENARIO, "flows": [{"from": "c", "to": "s", "count": 21}]}
    apps = [("fanout", "broadcast", {"connections_per_sender": 20}, list(range(20)), "client")]
    r = run_apps(fake_core, scenario, apps)
    out = r.write(tmp_path / "run", plots=False)
    html = (out / "report.html").read_text()
    assert "fanout (20 connections)" in html
    assert "c-s-0.19" not in html.split("<h2>Links</h2>")[0]  # no row per connection
    from tcplab.compare import compare_table

    table = compare_table({"x": r})
    assert "RTT p50 (ms)" in table.index  # the one flow outside the app keeps its rows


# -- the real engine ----------------------------------------------------------------------


@pytest.mark.engine
def test_real_rr_results(real_core, tmp_path):
    """netperf TCP_RR with 1-byte messages on an idle 10 ms RTT path: each transaction
    takes one round trip (plus a few microseconds of serialization), and with one
    connection back to back, transactions per second is 1 / mean latency (netperf's
    RT_LATENCY = 1 / TPS)."""
    scenario = {
        "name": "rr",
        "duration": "3s",
        "hosts": {"c": {}, "s": {}},
        "links": [{"between": ["c", "s"], "rate": "100Mbit", "delay": "5ms"}],
        "flows": [{"from": "c", "to": "s"}],
    }
    r = run_apps(real_core, scenario, [("rr", "rr", {}, [0], "client")])
    app = r.apps["rr"]
    req = app.tables["requests"]
    assert app.summary["transactions"] == len(req) > 0
    assert set(req["flow_name"]) == {r.config["flows"][0]["name"]}
    assert (req["latency_ms"] >= 10.0).all() and (req["latency_ms"] < 10.5).all()
    mean_s = req["latency_ns"].mean() / 1e9
    assert app.summary["transactions_per_sec"] == pytest.approx(1 / mean_s, rel=0.02)
    assert app.summary["latency_ms"]["p50"] == pytest.approx(np.percentile(req["latency_ms"], 50), abs=0.05)
    out = r.write(tmp_path / "run")
    assert pd.read_parquet(out / "app_requests.parquet")["app"].unique().tolist() == ["rr"]
    assert json.loads((out / "summary.json").read_text())["apps"]["rr"]["kind"] == "rr"
    assert '<h3>rr <span class="note">(rr;' in (out / "report.html").read_text()
    assert_plot(out / "plots" / "app-rr.png")
    line = headline_text(app)
    assert line.startswith("rr (rr): transactions ") and "latency p99" in line


@pytest.mark.engine
def test_real_hls_stalls_shaded_are_the_stalls_counted(real_core, tmp_path):
    """HLS below its lowest profile (600 kbit/s for an 800 kbit/s ladder floor) stalls; each
    stall is a run of samples not playing after playback started, so the figure shades as
    many stalls as the player counted, and their total is the stalled time to within a
    sample interval per stall."""
    scenario = {
        "name": "hls",
        "duration": "60s",
        "hosts": {"c": {}, "s": {}},
        "links": [{"between": ["c", "s"], "rate": "600kbit", "delay": "50ms"}],
        "flows": [{"from": "c", "to": "s"}],
    }
    spec = {"profiles": [{"name": "HD", "bitrate_bps": 3_000_000}, {"name": "low", "bitrate_bps": 800_000}]}
    r = run_apps(real_core, scenario, [("viewer", "hls", spec, [0], "server")])
    app = r.apps["viewer"]
    series = app.tables["series"]
    _startup, stalls = stall_spans(series["t_s"].to_numpy(), series["playing"].to_numpy(), r.sample_interval_s)
    assert app.summary["stalls"] > 0
    assert len(stalls) == app.summary["stalls"]
    shaded = sum(hi - lo for lo, hi in stalls)
    assert shaded == pytest.approx(app.summary["stall_s"], abs=r.sample_interval_s * (len(stalls) + 1))
    assert set(app.tables["segments"]["profile"]) <= {"HD", "low"}
    out = r.write(tmp_path / "run")
    assert_plot(out / "plots" / "app-viewer.png")
    assert pd.read_parquet(out / "app_segments.parquet")["app"].unique().tolist() == ["viewer"]


@pytest.mark.engine
def test_the_fake_apps_look_like_the_engine_apps(real_core):
    """The double's apps report a subset of the engine's summary keys and table columns,
    with the engine's dtypes, so tests on the double hold on real runs (a kind the engine
    does not implement yet, with an empty summary, is skipped)."""
    config = with_apps(tcplab.load_scenario({**SCENARIO, "duration": "4s"}).to_core())
    real = {a["name"]: a for a in real_core.run(json.dumps(config))["apps"]}
    fake = {a["name"]: a for a in fake_core.run(json.dumps(config))["apps"]}
    compared = 0
    for name, f in fake.items():
        r = real[name]
        assert r["kind"] == f["kind"]
        if not r["summary"]:
            continue
        compared += 1
        assert set(f["summary"]) <= set(r["summary"]), (name, set(f["summary"]) - set(r["summary"]))
        assert set(f["tables"]) == set(r["tables"]), name
        for table, columns in f["tables"].items():
            assert set(columns) <= set(r["tables"][table]), (name, table, set(columns) - set(r["tables"][table]))
            for column, values in columns.items():
                real_values = r["tables"][table][column]
                if isinstance(values, list):
                    assert isinstance(real_values, list), (name, table, column)
                else:
                    assert values.dtype == real_values.dtype, (name, table, column, values.dtype, real_values.dtype)
    assert compared >= 1


@pytest.mark.engine
def test_real_batch_writer_per_batch_latency_is_the_apps(real_core, tmp_path):
    """A path down for 40 s under a 10 s request timeout: the figure's per-batch latency
    (from a batch's first attempt to its successful response, read off the requests table)
    is the app's own ``batch_latency_ms``, and every timeout and retry it counted is a row."""
    from tcplab.views.apps import _batch_latency_ms

    sc = tcplab.load_scenario(
        {
            "name": "batch",
            "duration": "120s",
            "hosts": {"c": {}, "s": {}},
            "links": [{"between": ["c", "s"], "rate": "10Mbit", "delay": "5ms"}],
            "flows": [{"from": "c", "to": "s"}],
        }
    )
    config = with_apps(sc.to_core(), [("agent", "batch_writer", {"timeout_ns": 10 * 10**9}, [0], "client")])
    for link in config["links"]:
        link["loss"] = {"kind": "outage", "start_ns": 20 * 10**9, "end_ns": 60 * 10**9}
    r = Result(sc, config, run_core(config, core=real_core), views=write_run_views)
    app = r.apps["agent"]
    req = app.tables["requests"]
    assert app.summary["timeouts"] > 0
    assert (req["outcome"] == "timeout").sum() == app.summary["timeouts"]
    assert (req["attempt"] > req["attempt"].min()).sum() == app.summary["retries"]
    per_batch = np.sort(_batch_latency_ms(req))
    assert len(per_batch) == app.summary["batch_latency_ms"]["count"]
    assert per_batch[-1] == pytest.approx(app.summary["batch_latency_ms"]["max"], abs=1e-6)
    assert per_batch[-1] > 10_000  # a batch that waited out at least one timeout
    out = r.write(tmp_path / "run")
    assert_plot(out / "plots" / "app-agent.png")
    assert f"timeouts {app.summary['timeouts']}, retries {app.summary['retries']}" in headline_text(app)


def test_legends_of_many_connections_stay_inside_the_figure():
    """A workload's many connections (or their distinct base RTTs) would make a legend taller
    or wider than the figure; it lists the first entries and says how many more."""
    from tcplab.views.drawing import MAX_LEGEND_ENTRIES
    from tcplab.views.drawing import figure as _figure
    from tcplab.views.drawing import legend_outside as _legend
    from tcplab.views.drawing import png_bytes as _png
    from tcplab.views.plots import _reference_lines

    fig = _figure()
    ax = fig.add_subplot()
    for k in range(30):
        ax.plot([0, 1], [k, k], label=f"events.0.{k}")
    _reference_lines(ax, {f"f{k}": 1.0 + (k % 2) for k in range(12)}, [f"f{k}" for k in range(12)], {}, str)
    _legend(ax)
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(texts) == MAX_LEGEND_ENTRIES and texts[-1] == f"... and {32 - MAX_LEGEND_ENTRIES + 1} more"
    lines = [line.get_label() for line in ax.get_lines()[30:]]
    assert lines == ["1.0 (f0, f2, f4 and 3 more)", "2.0 (f1, f3, f5 and 3 more)"]
    _png(fig)  # no "constrained_layout not applied" warning (an error under pytest)


#: Every workload on one topology, in the scenario syntax (flows.N.app).
ALL_APPS_YAML = {
    "name": "all-apps",
    "duration": "20s",
    "hosts": {"c": {}, "s": {}, "b1": {}, "b2": {}},
    "routers": ["r"],
    "links": [
        {"between": ["c", "r"], "rate": "100Mbit", "delay": "5ms"},
        {"between": ["b1", "r"], "rate": "100Mbit", "delay": "1ms"},
        {"between": ["b2", "r"], "rate": "100Mbit", "delay": "1ms"},
        {"between": ["r", "s"], "rate": "100Mbit", "delay": "5ms"},
    ],
    "flows": [
        {"name": "web", "from": "c", "to": "s", "app": {"rr": {"request": "100B", "response": "1KB", "parallel": 2}}},
        {
            "name": "video",
            "from": "c",
            "to": "s",
            "app": {"hls": {"profiles": [{"name": "HD", "bitrate": "3Mbit"}, {"name": "low", "bitrate": "800kbit"}]}},
        },
        {"name": "plex", "from": "c", "to": "s", "app": {"nfs_stream": {"nconnect": 4, "bitrate": "20Mbit"}}},
        {"name": "vmagent", "from": "c", "to": "s", "app": {"batch_writer": {"timeout": "10s"}}},
        {"name": "events", "from": ["b1", "b2"], "to": "s", "app": {"broadcast": {"connections": 10}}},
        {"name": "bulk", "from": "c", "to": "s"},
    ],
}
ALL_KINDS = {"web": "rr", "video": "hls", "plex": "nfs_stream", "vmagent": "batch_writer", "events": "broadcast"}


def _check_all_apps_run(out, stdout, plots=True):
    summary = json.loads((out / "summary.json").read_text())
    assert {n: a["kind"] for n, a in summary["apps"].items()} == ALL_KINDS
    lines = [line for line in stdout.splitlines() if line.startswith("app ")]
    assert [line.split(" ")[1] for line in lines] == list(ALL_KINDS)
    for name, kind in ALL_KINDS.items():
        assert SUMMARY_KEYS[kind] <= set(summary["apps"][name])
        assert (out / "plots" / f"app-{name}.png").is_file() or not plots
    assert "events (20 connections)" in stdout  # the broadcast's connections: one row
    requests = pd.read_parquet(out / "app_requests.parquet")
    assert set(requests["app"]) == {"web", "plex", "vmagent"}
    # flows named as the scenario names them: W.k for a workload's connections
    assert set(requests.loc[requests["app"] == "plex", "flow_name"]) == {f"plex.{k}" for k in range(4)}
    html = (out / "report.html").read_text()
    for name in ALL_KINDS:
        assert f"<h3>{name} <span" in html


def test_cli_run_of_every_workload_in_a_scenario(tmp_path, patched_core, write_yaml):
    from tcplab.cli import app as cli

    out = tmp_path / "run"
    r = CliRunner().invoke(cli, ["run", str(write_yaml(ALL_APPS_YAML)), "-o", str(out), "--no-plots"])
    assert r.exit_code == 0, r.output
    _check_all_apps_run(out, r.stdout, plots=False)


@pytest.mark.engine
@pytest.mark.slow
def test_cli_run_of_every_workload_on_the_engine(tmp_path, monkeypatch, real_core, write_yaml):
    import tcplab.engine
    from tcplab.cli import app as cli

    monkeypatch.setattr(tcplab.engine, "import_core", lambda: real_core)
    out = tmp_path / "run"
    r = CliRunner().invoke(cli, ["run", str(write_yaml(ALL_APPS_YAML)), "-o", str(out)])
    assert r.exit_code == 0, r.output
    _check_all_apps_run(out, r.stdout)


# -- summary.json / report / CLI flow rows: rwnd-limited, data direction, aggregate rows ---


def test_summary_flows_carry_the_chronographs_and_the_data_direction(fake_result, fake_run_dir):
    flows = {f["name"]: f for f in json.loads((fake_run_dir / "summary.json").read_text())["flows"]}
    frame = fake_result.flows.set_index("name")
    for name, f in flows.items():
        # ss -i's rwnd_limited:Xms(Y%): Y = rwnd_limited / busy
        assert f["rwnd_limited_pct"] == pytest.approx(100 * f["rwnd_limited_ms"] / f["busy_ms"])
        assert f["rwnd_limited_ms"] == pytest.approx(frame.loc[name, "rwnd_limited_ms"])
        assert f["sndbuf_limited_ms"] == pytest.approx(frame.loc[name, "sndbuf_limited_ms"])
    config_flows = fake_result.config["flows"]
    for _name, kind, _spec, indices, side in APPS:
        for k in indices:
            f = flows[config_flows[k]["name"]]
            # the server (`to`) sends the data of hls and nfs_stream, the client (`from`) the others
            expected = (f["to"], f["from"]) if side == "server" else (f["from"], f["to"])
            assert (f["data_from"], f["data_to"]) == expected, (kind, f)
    html = (fake_run_dir / "report.html").read_text()
    assert "rwnd-limited (%)" in html and "s \u2192 c" in html  # hls/nfs rows: data s -> c


def test_cli_flow_table_shows_the_data_direction_and_rwnd_limited(tmp_path, patched_core, write_yaml):
    from tcplab.cli import app as cli
    from tcplab.commands.summary import _show_limited

    scenario = {**SCENARIO, "flows": [{"from": "c", "to": "s", "app": "maerts"}, {"from": "c", "to": "s"}]}
    out = tmp_path / "run"
    r = CliRunner().invoke(
        cli, ["run", str(write_yaml(scenario)), "-o", str(out), "--no-plots"], env={"COLUMNS": "250"}
    )
    assert r.exit_code == 0, r.output
    assert "data" in r.stdout and "rwnd-lim %" in r.stdout
    summary = json.loads((out / "summary.json").read_text())
    hls = next(f for f in summary["flows"] if f["data_from"] != f["from"])
    row = next(line for line in r.stdout.splitlines() if line.strip().startswith(hls["name"] + " "))
    assert "s -> c" in row and f"{hls['rwnd_limited_pct']:.1f}" in row
    # the column: a non-immediate reader, or a flow limited for >= 1 % of its busy time
    quiet = [{"rwnd_limited_pct": 0.5, "busy_ms": 1000.0, "sndbuf_limited_ms": 5.0}]
    assert not _show_limited(quiet, {"flows": [{}]})
    assert _show_limited(quiet, {"flows": [{"reader": {"kind": "rate", "rate_bps": 1}}]})
    assert _show_limited([{**quiet[0], "rwnd_limited_pct": 2.0}], {})
    assert _show_limited([{**quiet[0], "sndbuf_limited_ms": 20.0}], {})


@pytest.mark.parametrize("connections", [16, 17])
def test_summary_folds_an_app_of_more_than_16_connections(tmp_path, connections):
    scenario = {**SCENARIO, "flows": [{"from": "c", "to": "s", "count": connections + 1}]}
    apps = [("fanout", "broadcast", {"connections_per_sender": connections}, list(range(connections)), "client")]
    r = run_apps(fake_core, scenario, apps)
    out = r.write(tmp_path / "run", plots=False)
    summary = json.loads((out / "summary.json").read_text())
    names = [f["name"] for f in summary["flows"]]
    alone = r.config["flows"][connections]["name"]
    if connections <= 16:  # listed one by one, as before
        assert names == [f["name"] for f in r.config["flows"]]
        assert all("connections" not in f for f in summary["flows"])
        return
    assert names == ["fanout", alone]
    agg = summary["flows"][0]
    members = r.flows[r.flows["app"] == "fanout"]
    assert agg["connections"] == connections == len(members)
    assert agg["per_connection"] == "flows.parquet"
    assert agg["goodput_bps"] == pytest.approx(members["goodput_bps"].sum())
    assert agg["retrans_segs"] == members["retrans_segs"].sum()
    assert agg["retrans_ratio"] == pytest.approx(members["retrans_segs"].sum() / members["data_segs_out"].sum())
    assert agg["timeouts"] == members["timeouts"].sum()
    assert agg["rwnd_limited_pct"] == pytest.approx(100 * members["rwnd_limited_ms"].sum() / members["busy_ms"].sum())
    assert agg["rtt_p50_ms"] is None
    # every connection is in flows.parquet, with its app
    parquet = pd.read_parquet(out / "flows.parquet")
    assert len(parquet) == connections + 1
    assert (parquet["app"] == "fanout").sum() == connections
    html = (out / "report.html").read_text()
    assert f"fanout ({connections} connections)" in html


def test_a_large_engine_configuration_is_not_embedded_in_the_report(tmp_path):
    from tcplab.views.report import REPORT_MAX_CONFIG_CHARS

    n = 400
    scenario = {**SCENARIO, "flows": [{"from": "c", "to": "s", "count": n}]}
    apps = [("fanout", "broadcast", {"connections_per_sender": n}, list(range(n)), "client")]
    r = run_apps(fake_core, scenario, apps)
    out = r.write(tmp_path / "run", plots=False)
    resolved = (out / "scenario.resolved.json").read_text()
    assert len(resolved) > REPORT_MAX_CONFIG_CHARS
    html = (out / "report.html").read_text()
    assert "not embedded here" in html and "scenario.resolved.json" in html
    assert len(html) < len(resolved)  # the configuration's text is not in the page
    assert '"flows": [' not in html
    summary = json.loads((out / "summary.json").read_text())
    assert [f["name"] for f in summary["flows"]] == ["fanout"]
    # a small run embeds it
    small = run_apps(fake_core).write(tmp_path / "small", plots=False)
    assert "engine configuration (<code>scenario.resolved.json</code>)" in (small / "report.html").read_text()


def test_app_result_table_and_get():
    app = AppResult(
        name="v",
        kind="hls",
        summary={"stalls": 2, "latency_ms": {"p99": 1.5}},
        tables={"segments": pd.DataFrame({"index": [0]})},
    )
    assert list(app.table("segments")["index"]) == [0]
    with pytest.raises(KeyError, match=r"no table 'requests'; its tables: segments"):
        app.table("requests")
    # like dict.get: a default for a missing key, the value otherwise; key paths for nested values
    assert app.get("stalls") == 2 and app.get("stalls", 0) == 2
    assert app.get("missing") is None and app.get("missing", 0) == 0
    assert app.get("latency_ms", "p99") == 1.5 and app.get("latency_ms", "p50", default=-1) == -1
    assert app.get("missing", default="n/a") == "n/a"


def _fig_texts(fig) -> list[str]:
    texts = []
    for ax in fig.axes:
        texts += [t.get_text() for t in ax.texts] + [ax.get_title("left"), ax.get_title()]
        legend = ax.get_legend()
        if legend is not None:
            texts += [t.get_text() for t in legend.get_texts()]
    return texts


def test_app_plot_labels(fake_result):
    import dataclasses

    import matplotlib.pyplot as plt

    from tcplab.views.apps import _batch, _broadcast, _hls

    # batch_writer: every request timed out, an unbounded queue (max_pending 0), counts of 0/1
    n = 4
    req = pd.DataFrame(
        {
            "flow": np.zeros(n, dtype="u4"),
            "batch": np.arange(n, dtype="u8"),
            "attempt": np.ones(n, dtype="u8"),
            "start_s": np.arange(n, dtype=float),
            "latency_ms": np.full(n, 2000.0),
            "outcome": ["timeout"] * n,
        }
    )
    series = pd.DataFrame({"t_s": np.arange(5, dtype=float), "pending": np.array([0, 1, 0, 1, 0])})
    batch = AppResult(
        "agent", "batch_writer", {"dropped": 0}, {"requests": req, "series": series}, ["f"], {"max_pending": 0}
    )
    fig, _ = _batch(fake_result, batch)
    fig.canvas.draw()
    texts = _fig_texts(fig)
    assert "no request completed" in texts
    assert "queue unbounded" in texts and not any("queue limit" in t for t in texts)
    _cdf_ax, events_ax, queue_ax = fig.axes
    for ax in (events_ax, queue_ax):  # counts: integer ticks only
        ticks = [t for t in ax.get_yticks() if ax.get_ylim()[0] <= t <= ax.get_ylim()[1]]
        assert ticks and all(float(t).is_integer() for t in ticks), ticks
    plt.close(fig)
    # hls: "1 switch", not "1 switches"
    viewer = fake_result.apps["viewer"]
    for switches, text in ((1, "1 switch"), (3, "3 switches")):
        fig, _ = _hls(fake_result, dataclasses.replace(viewer, summary={**viewer.summary, "switches": switches}))
        assert any(t.endswith(f", {text}") for t in _fig_texts(fig)), _fig_texts(fig)
        plt.close(fig)
    # broadcast: the alert line is the story's
    fig, caption = _broadcast(fake_result, fake_result.apps["fanout"])
    texts = _fig_texts(fig)
    assert any("story 004" in t for t in texts) and not any("seed 004" in t for t in texts)
    assert "story 004" in caption
    plt.close(fig)
