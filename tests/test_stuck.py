"""The stuck / cwnd-collapse detector (tcplab.results.stuck): episode bounds on synthetic time
series, none on a healthy run, a stuck episode over a path outage, summary / CLI / report,
and the same name as diagnose's finding on ``ss -tin`` text."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tcplab
from tcplab.engine import run_core
from tcplab.results import Result
from tcplab.results.paths import flow_path
from tcplab.results.stuck import COLLAPSE, STUCK, episode_line, find_episodes

INF = 2147483647
DT_NS = 100_000_000  # 100 ms samples


def _config(flows: list[dict], duration_s: float = 20.0) -> dict:
    """Two hosts joined by a 10 Mbit/s link each way: every flow's bottleneck is a->b."""
    return {
        "duration_ns": int(duration_s * 1e9),
        "sample_interval_ns": DT_NS,
        "nodes": [{"name": "a", "kind": "host"}, {"name": "b", "kind": "host"}],
        "links": [
            {"name": "a-b", "from": 0, "to": 1, "rate_bps": 10_000_000, "delay_ns": 5_000_000, "overhead_bytes": 14},
            {"name": "b-a", "from": 1, "to": 0, "rate_bps": 10_000_000, "delay_ns": 5_000_000, "overhead_bytes": 14},
        ],
        "flows": [{"src": 0, "dst": 1, "start_ns": 0, "stop_ns": None, **f} for f in flows],
    }


def _series(name: str, n: int, cwnd, ssthresh, goodput_bps) -> pd.DataFrame:
    t = np.arange(1, n + 1) * DT_NS / 1e9
    goodput = np.broadcast_to(np.asarray(goodput_bps, dtype=np.float64), (n,))
    return pd.DataFrame(
        {
            "t_s": t,
            "flow_name": name,
            "cwnd": np.broadcast_to(cwnd, (n,)).astype(np.uint32),
            "ssthresh": np.broadcast_to(ssthresh, (n,)).astype(np.uint32),
            "goodput_bps": goodput,
            "bytes_received": np.cumsum(goodput * DT_NS / 1e9 / 8),
            "ca_state_name": "Open",
            "cc_mode_name": "",
            "bbr_bw_bps": np.zeros(n, dtype=np.uint64),
        }
    )


def test_synthetic_collapse_found_with_its_bounds():
    """cwnd <= 2 and ssthresh <= 2 on samples t = 2.0 .. 4.0 s: one episode from 1.9 s (the
    first sample covers the 100 ms before it) to 4.0 s, with the state seen; a 0.5 s dip and
    a cwnd of 2 with ssthresh 3 are not collapses."""
    n = 100  # 10 s
    t = np.arange(1, n + 1) * 0.1
    cwnd = np.full(n, 40)
    ssthresh = np.full(n, INF)
    in_collapse = (t > 1.95) & (t < 4.05)
    cwnd[in_collapse], ssthresh[in_collapse] = 2, 2
    cwnd[(t > 3.0) & (t < 3.35)] = 1  # an RTO inside it: still collapsed
    short = (t > 6.95) & (t < 7.45)  # 0.5 s: below the 1 s threshold
    cwnd[short], ssthresh[short] = 2, 2
    not_floor = (t > 8.0) & (t < 9.9)  # ssthresh 3: not at Linux's floor of 2
    cwnd[not_floor], ssthresh[not_floor] = 2, 3
    ts = _series("f", n, cwnd, ssthresh, 9e6)
    ts.loc[in_collapse, "ca_state_name"] = "Loss"
    eps = find_episodes(ts, _config([{"name": "f", "app": {"kind": "bulk"}}]))
    assert [e["kind"] for e in eps] == [COLLAPSE]
    (e,) = eps
    assert e["flow"] == "f"
    assert e["start_s"] == pytest.approx(1.9) and e["end_s"] == pytest.approx(4.0)
    assert e["duration_s"] == pytest.approx(2.1)
    assert e["cwnd_min"] == 1 and e["cwnd_median"] == 2 and e["ssthresh_median"] == 2
    assert e["ca_states"] == ["Loss"]
    # the threshold is a parameter: at 0.4 s the short dip counts too
    kinds = [
        (x["kind"], round(x["start_s"], 6)) for x in find_episodes(ts, _config([{"name": "f"}]), collapse_min_s=0.4)
    ]
    assert (COLLAPSE, 6.9) in kinds


def test_synthetic_stuck_uses_the_fair_share_and_skips_app_driven_flows():
    """Two flows on one 10 Mbit/s bottleneck: the fair share is half the payload ceiling. A
    bulk flow at 0.3 Mbit/s (6 % of its share) for 6 s is stuck; the same series on a flow
    driven by an application (rr) is not; a bulk flow at 20 % of its share is not."""
    config = _config(
        [
            {"name": "bulk", "app": {"kind": "bulk"}},
            {"name": "rr", "app": {"kind": "driven"}},
            {"name": "ok", "app": {"kind": "bulk"}},
        ]
    )
    ceiling = flow_path(config, config["flows"][0]).payload_ceiling_bps
    share = ceiling / 3
    n = 150
    t = np.arange(1, n + 1) * 0.1
    goodput = np.full(n, share)
    low = (t > 4.05) & (t < 10.05)  # samples 4.1 .. 10.0: the intervals from 4.0 to 10.0 s
    goodput[low] = 0.06 * share
    ok_goodput = np.where(low, 0.2 * share, share)
    ts = pd.concat(
        [
            _series("bulk", n, 40, INF, goodput),
            _series("rr", n, 40, INF, goodput),
            _series("ok", n, 40, INF, ok_goodput),
        ],
        ignore_index=True,
    )
    eps = find_episodes(ts, config)
    assert [(e["kind"], e["flow"]) for e in eps] == [(STUCK, "bulk")]
    (e,) = eps
    assert e["start_s"] == pytest.approx(4.0) and e["end_s"] == pytest.approx(10.0)
    assert e["fair_share_bps"] == pytest.approx(share)
    assert e["goodput_median_bps"] == pytest.approx(0.06 * share)
    assert "stuck: flow bulk 4.00-10.00 s" in episode_line(e)
    # shorter than the threshold: nothing
    assert find_episodes(ts, config, stuck_min_s=6.5) == []


def test_bulk_bytes_flow_is_not_stuck_after_it_finished():
    """A bulk flow of N bytes that has received them all has no data waiting: its zero
    goodput afterwards is not stuck."""
    config = _config([{"name": "f", "app": {"kind": "bulk_bytes", "bytes": 1_000_000}}])
    n = 150
    goodput = np.zeros(n)
    goodput[:10] = 8e6  # 1 MB in the first second, then done
    ts = _series("f", n, 40, INF, goodput)
    assert find_episodes(ts, config) == []
    config["flows"][0]["app"]["bytes"] = 2_000_000  # half of it still waiting: stuck
    assert [e["kind"] for e in find_episodes(ts, config)] == [STUCK]


def _run(real_core, data: dict) -> Result:
    sc = tcplab.load_scenario(data)
    config = sc.to_core()
    return Result(sc, config, run_core(config, core=real_core))


@pytest.mark.engine
def test_healthy_bulk_run_has_no_episode(real_core, tmp_path):
    """The builtin CUBIC sawtooth (100 Mbit/s, 20 ms RTT, 1-BDP queue), its 30 s run: CUBIC's
    decrease leaves 70 % of the window, never below 10 % of the share nor at cwnd 2."""
    sc = tcplab.load_scenario(Path(tcplab.__file__).parent / "scenarios" / "cubic-100mbit-20ms.yaml")
    config = sc.to_core()
    r = Result(sc, config, run_core(config, core=real_core))
    assert r.summary["stuck"] == []
    out = r.write(tmp_path / "run", plots=False)
    assert json.loads((out / "summary.json").read_text())["stuck"] == []


@pytest.mark.engine
def test_outage_shows_a_stuck_episode_covering_it(real_core, tmp_path):
    """The path down from 2 s to 8 s: the bulk flow delivers nothing, so one stuck episode
    starts within a sample of 2 s and lasts at least to 8 s (an RTO backoff can hold it
    past the outage's end); it is in summary.json and the report."""
    data = {
        "name": "outage",
        "duration": "14s",
        "hosts": {"c": {}, "s": {}},
        "links": [
            {"between": ["c", "s"], "rate": "10Mbit", "delay": "5ms", "loss": {"outage": {"start": "2s", "end": "8s"}}}
        ],
        "flows": [{"from": "c", "to": "s", "cc": "cubic"}],
    }
    r = _run(real_core, data)
    stuck = [e for e in r.summary["stuck"] if e["kind"] == STUCK]
    assert len(stuck) == 1
    (e,) = stuck
    assert 2.0 - 1e-9 <= e["start_s"] <= 2.0 + r.sample_interval_s + 1e-9
    assert e["end_s"] >= 8.0
    assert e["goodput_median_bps"] == 0
    out = r.write(tmp_path / "run", plots=False)
    assert json.loads((out / "summary.json").read_text())["stuck"] == r.summary["stuck"]
    from tcplab.views.report import render_report

    html = render_report(r.summary, config=r.config)
    assert "Stuck and collapsed flows" in html and '<td class="l">stuck</td>' in html
    assert "Stuck and collapsed flows" not in render_report({**r.summary, "stuck": []}, config=r.config)


def test_cli_run_prints_a_line_per_episode(patched_core, write_yaml, base_scenario, tmp_path, monkeypatch):
    """The fake engine's flows are healthy: no line; an episode gives one warning line."""
    from typer.testing import CliRunner

    import tcplab.results.result as result_mod
    from tcplab.cli import app

    path = write_yaml(base_scenario)
    runner = CliRunner()
    r = runner.invoke(app, ["run", str(path), "-o", str(tmp_path / "a")])
    assert r.exit_code == 0, r.output
    assert "stuck:" not in r.output and "cwnd-collapse:" not in r.output
    fake_ep = {
        "kind": COLLAPSE,
        "flow": "x",
        "start_s": 1.0,
        "end_s": 3.0,
        "duration_s": 2.0,
        "samples": 20,
        "ca_states": ["Loss"],
        "cc_modes": [],
        "cwnd_min": 1,
        "cwnd_median": 2.0,
        "ssthresh_min": 2,
        "ssthresh_median": 2.0,
        "goodput_median_bps": 1000.0,
        "bbr_bw_median_bps": None,
    }
    monkeypatch.setattr(result_mod, "find_episodes", lambda *a, **k: [fake_ep])
    r = runner.invoke(app, ["run", str(path), "-o", str(tmp_path / "b")])
    assert r.exit_code == 0, r.output
    assert r.output.count("warning: cwnd-collapse: flow x 1.00-3.00 s") == 1


def test_diagnose_names_the_same_collapse_from_ss(tmp_path):
    """``ss -tin`` with cwnd:2 ssthresh:2: diagnose's finding has the run detector's name."""
    from tcplab.diagnose import diagnose_paths

    line = (
        "\t cubic wscale:7,7 rto:204 rtt:0.4/0.2 mss:1448 cwnd:{c} ssthresh:{s} bytes_sent:10000 "
        "bytes_acked:9000 segs_out:10 segs_in:10 retrans:0/5 minrtt:0.2\n"
    )
    text = "State Recv-Q Send-Q Local Address:Port Peer Address:Port\n"
    for port, (c, s) in enumerate([(2, 2), (2, 2), (1, 2), (40, 30)]):
        text += f"ESTAB 0 0 10.0.0.1:{700 + port} 10.0.0.2:2049\n" + line.format(c=c, s=s)
    path = tmp_path / "ss.txt"
    path.write_text(text)
    _host, findings = diagnose_paths([path])
    collapse = [f for f in findings if f.id == COLLAPSE]
    assert len(collapse) == 1 and collapse[0].data["collapsed"] == 3 and collapse[0].data["connections"] == 4
    healthy = tmp_path / "healthy.txt"
    healthy.write_text(
        text.replace("cwnd:2 ssthresh:2", "cwnd:20 ssthresh:20").replace("cwnd:1 ssthresh:2", "cwnd:9 ssthresh:7")
    )
    assert COLLAPSE not in [f.id for f in diagnose_paths([healthy])[1]]


def test_bursty_delivery_at_full_share_is_not_stuck():
    """A shaped flow sampled every 20 ms: one sample in five holds no arrival (a burst
    released later), the others carry the rest, so the flow runs at its full share. Per
    sample it looks 'stuck' 20 % of the time, and those samples are at most 80 ms apart; the
    1 s average never falls below 10 % of the share, so there is no episode. The same flow
    delivering nothing for 6 s is one episode of 6 s."""
    config = _config([{"name": "bulk", "app": {"kind": "bulk"}}])
    config["sample_interval_ns"] = 20_000_000
    share = flow_path(config, config["flows"][0]).payload_ceiling_bps
    n = 1000  # 20 s
    t = np.arange(1, n + 1) * 0.02
    goodput = np.full(n, share * 1.25)
    goodput[::5] = 0.0  # mean = share
    ts = _series("bulk", n, 40, INF, goodput)
    ts["t_s"] = t
    assert find_episodes(ts, config) == []
    down = (t > 8.0 + 1e-9) & (t < 14.0 + 1e-9)  # the intervals from 8 to 14 s
    goodput[down] = 0.0
    ts = _series("bulk", n, 40, INF, goodput)
    ts["t_s"] = t
    (e,) = find_episodes(ts, config)
    assert e["kind"] == STUCK
    # (a 0-sample of the bursty pattern may sit at either edge: within one sample)
    assert e["start_s"] == pytest.approx(8.0, abs=0.021) and e["end_s"] == pytest.approx(14.0, abs=0.021)
