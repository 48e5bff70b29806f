"""What the engine or the file system would refuse late is refused by validation, with its path
(issue 7: 2.1 safe names, 2.8 late failures, 3.9 tc's bytes-per-second rates)."""

from __future__ import annotations

import os
import tempfile

import pytest
from typer.testing import CliRunner

import tcplab
from tcplab.cli import app
from tcplab.errors import ScenarioError


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def errors_of(data) -> dict[str, str]:
    with pytest.raises(ScenarioError) as info:
        tcplab.load_scenario(data)
    return {e.path: e.line() for e in info.value.errors}


# -- 2.1: the scenario name is a safe single path component --------------------------------


@pytest.mark.parametrize("name", [".", "..", ".hidden", "a" * 101, "a/b", "a\x00b", "a b"])
def test_unsafe_scenario_names_are_refused(base_scenario, name):
    base_scenario["name"] = name
    assert list(errors_of(base_scenario)) == ["name"]


@pytest.mark.parametrize("name", ["a", "lossy-long-path", "v1.2_x", "a" * 100, "a..b"])
def test_safe_scenario_names_are_accepted(base_scenario, name):
    base_scenario["name"] = name
    assert tcplab.load_scenario(base_scenario).name == name


def test_dot_name_never_reaches_the_output(tmp_path, patched_core, write_yaml, base_scenario, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "keep").mkdir()
    base_scenario["name"] = ".."
    r = invoke("run", write_yaml(base_scenario), "--force", "-q")
    assert r.exit_code == 2
    assert 'name: ".." starts with' in r.stderr
    assert (tmp_path / "runs" / "keep").is_dir() and (tmp_path / "s.yaml").is_file()
    assert patched_core.calls == []


# -- 2.8: values the engine keeps in fixed-width integers ----------------------------------


def test_queue_limit_too_large_for_u32_is_a_validation_error(base_scenario):
    # 10 Mbit/s x 20 ms base RTT = 25 000 bytes per BDP; 1e9 BDP = 1.65e10 packets of 1514 B > 2^32 - 1.
    base_scenario["links"][0]["queue"] = {"limit": "1e9bdp"}
    errors = errors_of(base_scenario)
    assert list(errors) == ["links.0.queue.limit"]
    assert "16512549538 packets" in errors["links.0.queue.limit"]
    assert "at most 4294967295 packets" in errors["links.0.queue.limit"]


def test_queue_limit_boundary_is_u32_max(base_scenario):
    # k BDP = k * 25 000 / 1514 packets (1500 B + 14 B overhead); the largest k whose rounded
    # count is <= 2^32 - 1 is floor((2^32 - 1.5) * 1514 / 25000) = 260103219.
    base_scenario["links"][0]["queue"] = {"limit": "260103219bdp"}
    core = tcplab.load_scenario(base_scenario).to_core()
    assert core["links"][0]["queue"]["limit_packets"] == round(260103219 * 25000 / 1514)
    assert core["links"][0]["queue"]["limit_packets"] <= 2**32 - 1
    base_scenario["links"][0]["queue"] = {"limit": "260103220bdp"}
    assert list(errors_of(base_scenario)) == ["links.0.queue.limit"]


def test_reverse_queue_limit_is_reported_at_its_path(base_scenario):
    base_scenario["links"][1]["reverse"] = {"queue": {"qdisc": "bfifo", "limit": "1e9bdp"}}
    assert list(errors_of(base_scenario)) == ["links.1.reverse.queue.limit"]


@pytest.mark.parametrize(
    ("patch", "path"),
    [
        ({"links.0.queue": {"qdisc": "bfifo", "limit": "5GB"}}, "links.0.queue.limit"),
        ({"hosts.client.sysctl": {"tcp_rmem": "0 87380 6291456"}}, "hosts.client.sysctl.tcp_rmem"),
        ({"hosts.server.sysctl": {"tcp_wmem": [4096, 16384, "4GB"]}}, "hosts.server.sysctl.tcp_wmem.2"),
        ({"hosts.server.sysctl": {"tcp_limit_output_bytes": "3GB"}}, "hosts.server.sysctl.tcp_limit_output_bytes"),
        ({"flows.0.tcp": {"max_pacing_rate": "4bit"}}, "flows.0.tcp.max_pacing_rate"),
        ({"flows.0.app": {"bulk": {"bytes": "2000000TB"}}}, "flows.0.app.bulk.bytes"),
    ],
)
def test_values_beyond_the_engine_types_are_refused(base_scenario, patch, path):
    for dotted, value in patch.items():
        target = base_scenario
        *parents, last = dotted.split(".")
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        target[last] = value
    assert path in errors_of(base_scenario)


# -- 2.8: the output path is checked before anything runs ----------------------------------


def test_output_under_a_file_fails_before_simulating(tmp_path, patched_core):
    (tmp_path / "afile").write_text("x")
    r = invoke("run", "builtin:cubic-vs-bbr-lossy", "-o", tmp_path / "afile" / "run", "-q")
    assert r.exit_code == 2
    assert "is not a directory" in r.stderr and ".tmp" not in r.stderr
    assert patched_core.calls == []


def test_output_name_too_long_fails_before_simulating(tmp_path, patched_core):
    out = tmp_path / "runs" / ("a" * 250)
    r = invoke("run", "builtin:cubic-vs-bbr-lossy", "-o", out, "-q")
    assert r.exit_code == 2
    assert "the directory name is 250 bytes long" in r.stderr and ".tmp" not in r.stderr
    assert patched_core.calls == []
    assert not (tmp_path / "runs").exists()  # no empty runs/ left behind


def test_unwritable_output_fails_before_simulating(tmp_path, patched_core, monkeypatch):
    real_mkdtemp = tempfile.mkdtemp

    def refuse(*args, **kwargs):
        if str(kwargs.get("dir", "")).startswith(str(tmp_path / "ro")):
            raise PermissionError(13, "Permission denied")
        return real_mkdtemp(*args, **kwargs)

    (tmp_path / "ro").mkdir()
    if os.geteuid() != 0:
        (tmp_path / "ro").chmod(0o555)
    else:  # root writes anywhere: make the file system refuse it instead
        monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    try:
        r = invoke("run", "builtin:cubic-vs-bbr-lossy", "-o", tmp_path / "ro" / "runs" / "x", "-q")
    finally:
        (tmp_path / "ro").chmod(0o755)
    assert r.exit_code == 2, r.output
    assert "cannot create it in" in r.stderr and "Permission denied" in r.stderr
    assert patched_core.calls == []
    assert list((tmp_path / "ro").iterdir()) == []


# -- 3.9: a rate in tc's bytes per second is valid but warned about ------------------------


def test_bytes_per_second_rate_warns_with_its_meaning(base_scenario, write_yaml, patched_core):
    base_scenario["links"][0]["rate"] = "5Mbps"
    sc = tcplab.load_scenario(base_scenario)
    assert sc.to_core()["links"][0]["rate_bps"] == 40_000_000  # tc: bps = bytes per second
    assert [w.line() for w in sc.warnings] == [
        '<dict>: links.0.rate: "5Mbps" is 5 megabytes per second in tc\'s units (40 Mbit/s); write 5Mbit for megabits'
    ]
    path = write_yaml(base_scenario)
    r = invoke("check", path)
    assert r.exit_code == 0
    warnings = [ln for ln in r.stderr.splitlines() if ln.startswith("warning: ")]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"warning: {path}:")
    assert 'links.0.rate: "5Mbps" is 5 megabytes per second' in warnings[0]


def test_bit_rates_do_not_warn(base_scenario):
    for rate in ("5Mbit", "5mbit", "5000000", "5Mibit"):
        base_scenario["links"][0]["rate"] = rate
        assert tcplab.load_scenario(base_scenario).warnings == []


def test_warning_from_set_is_named_as_set(base_scenario):
    sc = tcplab.load_scenario(base_scenario, ["flows.0.tcp.max_pacing_rate=1Gbps"])
    assert [w.line().split(": ")[:2] for w in sc.warnings] == [["--set", "flows.0.tcp.max_pacing_rate"]]
