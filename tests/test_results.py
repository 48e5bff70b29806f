"""Results from the engine double: DataFrames, the run directory and its files."""

from __future__ import annotations

import json
import re
import sys

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import fake_core
import tcplab
from plotcheck import assert_plot
from tcplab.engine import QUEUE_DTYPES, TIMESERIES_DTYPES, import_core, parse_output, run_core
from tcplab.errors import EngineError, ScenarioError
from tcplab.results import RUN_FILES, SUMMARY_FLOW_KEYS, SUMMARY_LINK_KEYS, Result, _interval_rate
from tcplab.results.counters import format_nstat, parse_nstat

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def result(fake) -> Result:
    return tcplab.run("builtin:cubic-vs-bbr-lossy", overrides=["flows.0.count=2", "duration=5s"], core=fake)


def test_run_sends_the_resolved_config(fake):
    tcplab.run("builtin:cubic-vs-bbr-lossy", seed=9, core=fake)
    (config,) = fake.calls
    assert config == tcplab.load_scenario("builtin:cubic-vs-bbr-lossy", seed=9).to_core()


def test_flows_frame(result):
    flows = result.flows
    assert list(flows["name"]) == ["server-client-0.0", "server-client-0.1"]
    assert list(flows["from"]) == ["server", "server"] and list(flows["to"]) == ["client", "client"]
    row = flows.iloc[0]
    # goodput = bytes_received * 8 / (end - start)
    assert row["goodput_bps"] == pytest.approx(row["bytes_received"] * 8 / (row["end_s"] - row["start_s"]))
    assert row["retrans_ratio"] == pytest.approx(row["retrans_segs"] / row["data_segs_out"])
    # the double's RTT is 2 x the mean one-way delay (2 x 100.1 ms / 4 links); p99 is 5 us above
    assert row["rtt_p50_ms"] == pytest.approx(50.05) and row["rtt_p99_ms"] == pytest.approx(50.055)


def test_flows_frame_chrono_columns(result, fake):
    # ss -i prints busy:Xms rwnd_limited:Yms(Z%): Z = 100 * Y / X. The double reports the
    # flow busy for its lifetime, a quarter of it window-limited.
    row = result.flows.iloc[0]
    assert row["busy_ms"] == pytest.approx((row["end_s"] - row["start_s"]) * 1000, rel=1e-6)
    assert row["rwnd_limited_ms"] == pytest.approx(row["busy_ms"] / 4, rel=1e-6)
    assert row["rwnd_limited_pct"] == pytest.approx(25.0, rel=1e-6)
    assert row["sndbuf_limited_ms"] == 0.0
    # An engine output without the chronographs still parses: NaN columns.
    out = fake.run(json.dumps(fake.calls[0]))
    for f in out["flows"]:
        del f["chrono"]
    frame = result._flows_frame(parse_output(out))
    assert frame["busy_ms"].isna().all() and frame["rwnd_limited_pct"].isna().all()


def test_timeseries_frame(result):
    ts = result.timeseries
    for column, dtype in TIMESERIES_DTYPES.items():
        assert str(ts[column].dtype) == dtype, column
    for column in ("flow_name", "t_s", "goodput_bps", "ca_state_name", "cc_mode_name"):
        assert column in ts.columns
    assert set(ts["flow_name"]) == {"server-client-0.0", "server-client-0.1"}
    assert np.allclose(ts["t_s"], ts["t_ns"] / 1e9)
    assert set(ts["ca_state_name"]) <= {"Open", "Disorder", "CWR", "Recovery", "Loss"}
    assert set(ts["cc_mode_name"]) == {""}  # cubic has no modes
    # the double delivers at a constant 0.8 * 5 Mbit/s shared by two flows
    assert ts["goodput_bps"].to_numpy() == pytest.approx(np.full(len(ts), 2_000_000), rel=1e-3)


def test_bbr_mode_names(fake):
    r = tcplab.run("builtin:cubic-vs-bbr-lossy", overrides=["flows.0.cc=bbr", "duration=1s"], core=fake)
    assert set(r.timeseries["cc_mode_name"]) == {"PROBE_BW"}


def test_interval_rate_by_hand():
    frame = pd.DataFrame(
        {
            "t_ns": np.array([100, 100, 200, 200, 400, 400], dtype=np.uint64) * 1_000_000,
            "flow": np.array([0, 1, 0, 1, 0, 1], dtype=np.uint32),
            "bytes_received": np.array([1000, 0, 3500, 100, 3500, 100], dtype=np.uint64),
        }
    )
    rate = _interval_rate(frame, "flow", "bytes_received", 100_000_000)
    # flow 0: 1000 B in the first 100 ms, 2500 B in the next 100 ms, nothing over 200 ms
    # flow 1: 0, 100 B / 100 ms, 0
    assert rate.tolist() == pytest.approx([80_000, 0, 200_000, 8_000, 0, 0])


def test_queues_and_counters_frames(result):
    qs = result.queues
    for column, dtype in QUEUE_DTYPES.items():
        assert str(qs[column].dtype) == dtype
    assert set(qs["link_name"]) == {"server->emu", "emu->server", "emu->client", "client->emu"}
    assert list(result.counters.columns) == ["host", "counter", "value"]
    server = result.counters[result.counters["host"] == "server"].set_index("counter")["value"]
    assert server["TcpRetransSegs"] == result.flows["retrans_segs"].sum()
    assert list(result.flow_counters.columns) == ["flow", "counter", "value"]


def test_write_run_directory(result, tmp_path):
    out = result.write(tmp_path / "runs" / "one")
    for name in RUN_FILES:
        assert (out / name).is_file(), name
    assert sorted(p.name for p in tmp_path.joinpath("runs").iterdir()) == ["one"]  # no temp dirs left

    summary = json.loads((out / "summary.json").read_text())
    for key in ("scenario", "seed", "tcplab_version", "engine_version", "duration_s", "flows", "links", "invariant"):
        assert key in summary
    assert summary["scenario"] == "cubic-vs-bbr-lossy" and summary["seed"] == 1 and summary["duration_s"] == 5.0
    assert summary["tcplab_version"] == tcplab.__version__
    for flow in summary["flows"]:
        assert set(flow) == set(SUMMARY_FLOW_KEYS) | {"payload_ceiling_bps"}
        # the route's slowest link: emu->client at 5 Mbit/s, x 1448/1514 on Ethernet
        assert flow["payload_ceiling_bps"] == pytest.approx(5e6 * 1448 / 1514)
        assert flow["goodput_bps"] == pytest.approx(flow["bytes_received"] * 8 / (flow["end_s"] - flow["start_s"]))
    for link in summary["links"]:
        assert set(link) == set(SUMMARY_LINK_KEYS)
    assert summary["links"][0]["drops"] == 3
    assert summary["invariant"]["ok"] is True

    assert json.loads((out / "scenario.resolved.json").read_text()) == result.config

    ts = pq.read_table(out / "timeseries.parquet").to_pandas()
    assert set(TIMESERIES_DTYPES) | {"flow_name", "t_s", "goodput_bps", "ca_state_name", "cc_mode_name"} == set(
        ts.columns
    )
    assert len(ts) == len(result.timeseries)
    assert str(ts["cwnd"].dtype) == "uint32"
    qs = pq.read_table(out / "queues.parquet").to_pandas()
    assert set(QUEUE_DTYPES) | {"link_name", "node", "dev", "qdisc", "t_s"} == set(qs.columns)

    for png in ("goodput.png", "cwnd.png", "rtt.png", "queues.png", "flow-0.png", "flow-1.png"):
        assert (out / "plots" / png).read_bytes().startswith(PNG_MAGIC)
        assert_plot(out / "plots" / png)  # sizes and drawn lines: tests/test_views.py

    html = (out / "report.html").read_text()
    assert "cubic-vs-bbr-lossy" in html and "server-client-0.1" in html
    assert 'src="plots/' not in html and html.count('src="data:image/png;base64,') == 6


def test_counters_txt_format_and_round_trip(result, tmp_path):
    out = result.write(tmp_path / "run")
    text = (out / "counters.txt").read_text()
    lines = text.splitlines()
    assert lines[0] == "# host server" and lines[1] == "#kernel"
    assert "# host client" in lines
    line = next(x for x in lines if x.startswith("TcpRetransSegs"))
    # nstat: %-32s%-16llu%6.1f, rate = value / simulated seconds
    value = int(result.host_counters()["server"]["TcpRetransSegs"])
    assert line == "%-32s%-16d%6.1f" % ("TcpRetransSegs", value, value / 5.0)
    assert re.fullmatch(r"TcpRetransSegs {18}\d+ +\d+\.\d", line)
    assert parse_nstat(text) == result.host_counters()


def test_parse_real_nstat_output():
    text = "#kernel\nTcpExtTCPTimeouts               115                0.0\nTcpRetransSegs                  227                0.0\n"
    assert parse_nstat(text) == {"kernel": {"TcpExtTCPTimeouts": 115, "TcpRetransSegs": 227}}
    assert parse_nstat(format_nstat({"h": {"A": 1}}, 0)) == {"h": {"A": 1}}
    with pytest.raises(ValueError, match="line 2"):
        parse_nstat("#kernel\nTcpX notanumber\n")


def test_same_run_same_files(fake, tmp_path):
    a = tcplab.run("builtin:cubic-vs-bbr-lossy", overrides=["duration=2s"], core=fake).write(tmp_path / "a")
    b = tcplab.run("builtin:cubic-vs-bbr-lossy", overrides=["duration=2s"], core=fake).write(tmp_path / "b")
    for name in RUN_FILES:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_report_escapes_user_text(fake, tmp_path, base_scenario):
    base_scenario["description"] = "<script>alert(1)</script> & more"
    out = tcplab.run(base_scenario, core=fake).write(tmp_path / "r")
    html = (out / "report.html").read_text()
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in html


def test_write_refuses_a_non_empty_directory(result, tmp_path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "keep.txt").write_text("x")
    with pytest.raises(ScenarioError, match="output directory exists and is not empty"):
        result.write(tmp_path / "busy")
    assert (tmp_path / "busy" / "keep.txt").exists()
    # overwrite replaces only a directory tcplab wrote (issue 7, 2.1)
    with pytest.raises(ScenarioError, match="--force refused: not a directory written by tcplab"):
        result.write(tmp_path / "busy", overwrite=True)
    assert (tmp_path / "busy" / "keep.txt").exists()
    (tmp_path / "busy" / "keep.txt").unlink()
    result.write(tmp_path / "busy")
    result.write(tmp_path / "busy", overwrite=True)
    assert (tmp_path / "busy" / "summary.json").exists()
    (tmp_path / "empty").mkdir()
    result.write(tmp_path / "empty")  # an empty directory is fine
    assert sorted(p.name for p in tmp_path.iterdir()) == ["busy", "empty"]


def test_failed_write_leaves_nothing(result, tmp_path, monkeypatch):
    import tcplab.views.plots

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(tcplab.views.plots, "write_plots", boom)
    with pytest.raises(OSError, match="disk full"):
        result.write(tmp_path / "new" / "deeper" / "run")
    assert list(tmp_path.iterdir()) == []


def test_plots_can_be_skipped(result, tmp_path):
    out = result.write(tmp_path / "np", plots=False)
    assert not (out / "plots").exists()
    assert "<img" not in (out / "report.html").read_text()


# -- the engine bridge -----------------------------------------------------------------------


def test_engine_errors_become_engine_error(base_scenario):
    for exc in (ValueError("engine config: flows.0.src: out of range"), RuntimeError("invariant violated\nat t=1s")):
        core = fake_core.FakeCore(fail=exc)
        with pytest.raises(EngineError) as info:
            tcplab.run(base_scenario, core=core)
        assert "\n" not in str(info.value)
        assert str(exc).splitlines()[0] in str(info.value)


def test_keyboard_interrupt_passes_through(base_scenario):
    with pytest.raises(KeyboardInterrupt):
        tcplab.run(base_scenario, core=fake_core.FakeCore(fail=KeyboardInterrupt()))


def test_progress_callback_is_forwarded(base_scenario, fake):
    seen = []
    tcplab.run(base_scenario, core=fake, progress=lambda now, total: seen.append((now, total)))
    assert seen == fake.progress_calls and seen[-1] == (10 * 10**9, 10 * 10**9)


def test_module_double_also_works(base_scenario):
    r = tcplab.run(base_scenario, core=fake_core)  # the module itself has run()
    assert len(r.flows) == 1


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda o: o.pop("invariant"), "missing key(s) invariant"),
        (lambda o: o["timeseries"].pop("cwnd"), "timeseries lacks column(s) cwnd"),
        (lambda o: o["timeseries"].__setitem__("cwnd", o["timeseries"]["cwnd"][:-1]), "timeseries.cwnd has"),
        (lambda o: o["queue_timeseries"].__setitem__("drops", [[1, 2]]), "not one-dimensional"),
    ],
)
def test_malformed_engine_output_is_an_engine_error(base_scenario, mutate, fragment):
    out = fake_core._output(tcplab.load_scenario(base_scenario).to_core())
    mutate(out)
    with pytest.raises(EngineError, match=re.escape(fragment)):
        parse_output(out)


def test_missing_engine_says_how_to_build_it(monkeypatch, base_scenario):
    monkeypatch.setitem(sys.modules, "tcplab._core", None)  # makes `from tcplab import _core` fail
    monkeypatch.delattr(tcplab, "_core", raising=False)  # in case the real engine was imported
    with pytest.raises(ImportError, match=r"pip install \.") as info:
        import_core()
    assert "maturin develop" in str(info.value)
    with pytest.raises(ImportError, match="tcplab._core"):
        run_core(tcplab.load_scenario(base_scenario).to_core())
