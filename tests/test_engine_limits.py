"""Issue 7, engine side: loss filter (1.6), fq_pacing and the RTT floor (1.7), memory limits
(2.2), time bounds (2.4) and the engine's own validation and warnings (2.9), each through
the scenario front and through the engine's entry ``tcplab._core.run`` directly."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap

import pytest
from typer.testing import CliRunner

import tcplab
from tcplab.cli import app
from tcplab.engine import run_core
from tcplab.errors import EngineError, EngineMemoryError, EngineWarning, ScenarioError
from tcplab.scenario.limits import sample_rows, series_bytes

BUILTIN = "builtin:cubic-100mbit-20ms"


def two_hosts(**over) -> dict:
    doc = {
        "name": "t",
        "duration": "4s",
        "hosts": {"a": {}, "b": {}},
        "links": [{"between": ["a", "b"], "rate": "10Mbit", "delay": "5ms"}],
        "flows": [{"from": "a", "to": "b", "cc": "cubic"}],
    }
    doc.update(over)
    return doc


def scenario_error(doc_or_name, overrides=()) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        tcplab.load_scenario(doc_or_name, list(overrides))
    return info.value


# -- 1.6 loss filter ----------------------------------------------------------------------


def test_loss_filter_syntax_maps_to_the_engine():
    link = {"between": ["a", "b"], "rate": "10Mbit", "delay": "5ms", "loss": {"random": "2%", "only": "data"}}
    core = tcplab.load_scenario(two_hosts(links=[link])).to_core()
    assert core["links"][0]["loss"] == {"kind": "bernoulli", "p": 0.02}
    assert core["links"][0]["loss_filter"] == {"data_only": True, "min_ip_bytes": 0}
    link["loss"] = {"gilbert_elliott": {"p": "1%", "r": "30%"}, "min_size": "101B"}
    core = tcplab.load_scenario(two_hosts(links=[link])).to_core()
    assert core["links"][0]["loss"]["kind"] == "gilbert_elliott"
    assert core["links"][0]["loss_filter"] == {"data_only": False, "min_ip_bytes": 101}
    link["loss"] = "1%"
    core = tcplab.load_scenario(two_hosts(links=[link])).to_core()
    assert core["links"][0]["loss_filter"] == {"data_only": False, "min_ip_bytes": 0}


@pytest.mark.parametrize(
    ("loss", "path", "fragment"),
    [
        ({"random": "1%", "only": "acks"}, "links.0.loss.only", '"acks" is not a packet class'),
        ({"only": "data"}, "links.0.loss", "no loss model given"),
        ({"drop": [3], "only": "data"}, "links.0.loss.only", "a drop list takes no filter"),
        ({"random": "1%", "min_size": "70000B"}, "links.0.loss.min_size", "larger than any IP packet"),
    ],
)
def test_bad_loss_filters_name_their_field(loss, path, fragment):
    link = {"between": ["a", "b"], "rate": "10Mbit", "delay": "5ms", "loss": loss}
    err = scenario_error(two_hosts(links=[link]))
    assert f"{path}: " in str(err) and fragment in str(err), str(err)


@pytest.mark.engine
def test_data_only_loss_spares_acks_and_handshake_and_hits_data_at_p(real_core):
    p = 0.05
    link = {"between": ["a", "b"], "rate": "10Mbit", "delay": "5ms", "loss": {"random": "5%", "only": "data"}}
    r = tcplab.run(two_hosts(links=[link], duration="10s"), core=real_core)
    fwd, rev = r.links.to_dict("records")
    assert rev["loss_drops"] == 0  # the SYN-ACK and every ACK went through
    sent = r.invariant["data_packets_sent"]
    lost = r.invariant["dropped"]["loss"]
    assert fwd["loss_drops"] == lost  # every loss on the data path was a data segment
    assert sent > 2000
    assert abs(lost - p * sent) < 5 * math.sqrt(sent * p * (1 - p)), (lost, sent)


# -- 1.7 fq_pacing and the RTT floor ------------------------------------------------------


def test_fq_pacing_is_refused_by_validation():
    err = scenario_error(BUILTIN, ["flows.0.tcp.fq_pacing=true"])
    assert "flows.0.tcp.fq_pacing: true is not a per-flow setting" in str(err)


@pytest.mark.engine
def test_fq_pacing_is_refused_by_the_engine(real_core):
    config = tcplab.load_scenario(BUILTIN).to_core()
    config["flows"][0]["tcp"]["fq_pacing"] = True
    # The engine sets SK_PACING_FQ itself from the topology; a hand-set true without fq
    # on the sender's egress is refused.
    with pytest.raises(EngineError, match=r"^flows\.0\.tcp\.fq_pacing: true, but the sender's egress qdisc .* not fq"):
        run_core(config, core=real_core)


@pytest.mark.engine
def test_every_run_checks_the_rtt_floor(real_core):
    r = tcplab.run(BUILTIN, overrides=["duration=2s", "flows.0.cc=bbr"], core=real_core)
    floor = r.invariant["rtt_floor"]
    assert floor["ok"] is True and "no RTT sample below" in floor["message"]
    assert r.invariant["ok"] is True


# -- 2.2 memory -----------------------------------------------------------------------------


def test_a_1ns_sample_interval_is_refused_naming_the_field():
    err = scenario_error(BUILTIN, ["sample_interval=1ns", "duration=2s"])
    assert "sample_interval: 1ns over a 2s run keeps 2000000002 samples" in str(err)
    assert "limits.memory" in str(err)


def test_a_10_year_run_is_refused():
    err = scenario_error(BUILTIN, ["duration=315360000s"])
    assert "duration: " in str(err) and "longer than a year" in str(err)


def test_the_memory_limit_is_the_users_to_raise():
    sc = tcplab.load_scenario(BUILTIN, ["sample_interval=1ns", "duration=2s", "limits.memory=1TB"])
    assert sc.to_core()["max_memory_bytes"] == 10**12


def test_check_refuses_it_too(tmp_path):
    r = CliRunner().invoke(app, ["check", BUILTIN, "--set", "sample_interval=1ns", "--set", "duration=2s"])
    assert r.exit_code == 2, r.output
    assert "error: " in r.output and "sample_interval: 1ns" in r.output


@pytest.mark.engine
@pytest.mark.parametrize(
    "over",
    [[], ["sample_interval=1ms"], ["duration=3600s", "sample_interval=10us"], ["flows.0.count=7"]],
)
def test_python_and_engine_estimate_the_same_time_series(real_core, over):
    sc = tcplab.load_scenario(BUILTIN, over + ["limits.memory=1000TB"])
    config = sc.to_core()
    est = real_core.estimate_memory(json.dumps(config))
    rows = sample_rows(config["duration_ns"], config["sample_interval_ns"])
    assert est["sample_rows"] == rows
    assert est["series_bytes"] == series_bytes(rows, len(config["flows"]), len(config["links"]))


@pytest.mark.engine
def test_the_engine_refuses_over_its_limit_naming_the_field(real_core):
    config = tcplab.load_scenario(BUILTIN, ["duration=2s"]).to_core()
    config["sample_interval_ns"] = 1
    with pytest.raises(EngineError, match=r"^sample_interval_ns: 1 over duration_ns 2000000000 keeps"):
        run_core(config, core=real_core)


@pytest.mark.engine
def test_an_allocation_failure_is_a_python_exception_not_an_abort(real_core, tmp_path):
    # Before: `sample_interval: 1ns` grew the time series until `memory allocation failed`
    # aborted the process (rc 134). Cap the address space, lift the estimate's limit, and
    # the engine must raise MemoryError instead.
    config = tcplab.load_scenario(BUILTIN, ["duration=2s"]).to_core()
    config["sample_interval_ns"] = 100
    config["max_memory_bytes"] = 1 << 50
    (tmp_path / "config.json").write_text(json.dumps(config))
    script = textwrap.dedent(
        f"""
        import resource, sys
        from tcplab import _core
        text = open({str(tmp_path / "config.json")!r}).read()
        with open("/proc/self/status") as f:
            vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
        limit = vm + 400 * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        try:
            _core.run(text)
        except MemoryError as e:
            print("MemoryError:", e)
            sys.exit(3)
        sys.exit(0)
        """
    )
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert p.returncode == 3, (p.returncode, p.stdout, p.stderr[-2000:])
    assert "out of memory at simulated time" in p.stdout and "time series" in p.stdout


def test_engine_memory_error_is_an_engine_error():
    class Failing:
        def run(self, config_json, progress, /):
            raise MemoryError("engine: out of memory at simulated time 0.5 s while growing the flow time series")

    with pytest.raises(EngineMemoryError, match="out of memory at simulated time 0.5 s"):
        run_core(tcplab.load_scenario(BUILTIN).to_core(), core=Failing())


# -- 2.4 time bounds ------------------------------------------------------------------------


def test_an_18446744073s_delay_is_refused_by_validation():
    link = {"between": ["a", "b"], "rate": "100Mbit", "delay": "18446744073s", "reverse": {"delay": "10ms"}}
    err = scenario_error(two_hosts(links=[link]))
    assert "links.0.delay: " in str(err) and "longer than an hour" in str(err)


@pytest.mark.engine
def test_an_18446744073s_delay_is_refused_by_the_engine(real_core):
    config = tcplab.load_scenario(BUILTIN).to_core()
    config["links"][0]["delay_ns"] = 18446744073 * 10**9
    with pytest.raises(EngineError, match=r"^links\.0\.delay_ns: 18446744073000000000 is outside \[0, 3600000000000\]"):
        run_core(config, core=real_core)


@pytest.mark.parametrize(
    ("override", "path"),
    [
        ("links.0.reorder={probability: 1%, delay: 7200s}", "links.0.reorder.delay"),
        ("flows.0.stop=34560000s", "flows.0.stop"),
        ("flows.0.tcp.rto_min=121s", "flows.0.tcp.rto_min"),
        ("links.0.rate=2000Tbit", "links.0.rate"),
    ],
)
def test_other_out_of_range_times_name_their_field(override, path):
    err = scenario_error(BUILTIN, [override])
    assert f"{path}: " in str(err), str(err)


# -- 2.9 the engine's own entry -------------------------------------------------------------


@pytest.mark.engine
@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda c: c.update(sample_interval_ns=0), r"^sample_interval_ns: 0 is outside \[1, "),
        (
            lambda c: c["flows"][0]["tcp"].update(tcp_rmem=[8000, 4000, 2000]),
            r"^flows\.0\.tcp\.tcp_rmem: \[8000, 4000, 2000\], expected min <= default <= max",
        ),
        (
            lambda c: c["flows"][0]["tcp"].update(rto_min_ms=0),
            r"^flows\.0\.tcp\.rto_min_ms: 0 is outside \[1, 120000\] ms",
        ),
    ],
)
def test_the_engine_validates_its_own_input(real_core, edit, message):
    config = tcplab.load_scenario(BUILTIN).to_core()
    edit(config)
    with pytest.raises(EngineError, match=message):
        run_core(config, core=real_core)


@pytest.mark.engine
def test_a_receive_buffer_below_one_segment_is_warned_about(real_core, tmp_path):
    over = ["duration=1s", "hosts.receiver.sysctl.tcp_rmem=88 88 88"]
    with pytest.warns(EngineWarning, match=r"^flows\.0\.tcp\.tcp_rmem: the receiver's largest window is 0 bytes"):
        r = tcplab.run(BUILTIN, overrides=over, core=real_core)
    # nothing but what a zero-window probe carries into the receiver's sliver of window
    # (tcp_write_wakeup sends what fits), far below one segment
    assert r.flows["bytes_received"].iloc[0] < 1448
    res = CliRunner().invoke(
        app, ["run", BUILTIN, "-q", "--no-plots", "-o", tmp_path / "o", *sum((["--set", o] for o in over), [])]
    )
    assert res.exit_code == 0, res.output
    assert "warning: flows.0.tcp.tcp_rmem: the receiver's largest window" in res.stderr


@pytest.mark.engine
def test_the_engine_checks_can_run_alone(real_core):
    # `_core.validate` gives the front the engine's own verdict before any simulation.
    config = tcplab.load_scenario(BUILTIN).to_core()
    assert real_core.validate(json.dumps(config)) == []
    config["flows"][0]["tcp"]["tcp_rmem"] = [88, 88, 88]
    (warning,) = real_core.validate(json.dumps(config))
    assert warning.startswith("flows.0.tcp.tcp_rmem: ")
    config["sample_interval_ns"] = 0
    with pytest.raises(ValueError, match="^sample_interval_ns: "):
        real_core.validate(json.dumps(config))


@pytest.mark.engine
def test_the_default_memory_limit_is_the_engines(real_core):
    from tcplab.scenario.limits import DEFAULT_MEMORY_BYTES

    config = tcplab.load_scenario(BUILTIN).to_core()
    del config["max_memory_bytes"]
    assert real_core.estimate_memory(json.dumps(config))["max_memory_bytes"] == DEFAULT_MEMORY_BYTES


@pytest.mark.engine
def test_check_gives_the_engines_warnings_and_shows_the_loss_filter(real_core):
    r = CliRunner().invoke(app, ["check", BUILTIN, "--set", "hosts.receiver.sysctl.tcp_rmem=88 88 88"])
    assert r.exit_code == 0, r.output
    assert "warning: flows.0.tcp.tcp_rmem: the receiver's largest window" in r.stderr
    r = CliRunner().invoke(app, ["check", BUILTIN, "--set", "links.0.loss={random: 1%, only: data}"])
    assert r.exit_code == 0, r.output
    assert "loss 1% (data segments only)" in r.stdout
