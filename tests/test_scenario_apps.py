"""The workloads of ``app:`` (tcplab.scenario.apps / flows): parsing, defaults, errors with
their YAML paths, flow and app naming, the engine form (to_core), ``--set`` of app fields."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import tcplab
from tcplab.errors import ScenarioError
from tcplab.loader import builtin_scenarios
from tcplab.scenario.apps import APP_KINDS, CONNECTION_KEYS, app_keys, engine_app_defaults
from tcplab.scenario.flows import BROADCAST_FIRST_BURST_AFTER_NS, BROADCAST_WARMUP_NS

BASE: dict[str, Any] = {
    "name": "apps",
    "duration": "10s",
    "hosts": {"c": {}, "s": {}, "c2": {}},
    "links": [
        {"between": ["c", "s"], "rate": "100Mbit", "delay": "5ms"},
        {"between": ["c2", "s"], "rate": "100Mbit", "delay": "20ms"},
    ],
}
HLS = {
    "hls": {"profiles": [{"name": "HD", "bitrate": "3Mbit"}, {"name": "low", "bitrate": "800kbit"}], "segment": "4s"}
}


def scenario(*flows: dict[str, Any], overrides: list[str] | None = None) -> tcplab.Scenario:
    data = copy.deepcopy(BASE)
    data["flows"] = list(flows)
    return tcplab.load_scenario(data, overrides)


def core(*flows: dict[str, Any], overrides: list[str] | None = None) -> dict[str, Any]:
    return scenario(*flows, overrides=overrides).to_core()


def error_of(*flows: dict[str, Any]) -> str:
    with pytest.raises(ScenarioError) as info:
        scenario(*flows)
    return info.value.line()


def flow(app: Any, **kw: Any) -> dict[str, Any]:
    return {"from": "c", "to": "s", "app": app, **kw}


# -- bulk, maerts, bidir -----------------------------------------------------------------


def test_bulk_flows_keep_their_engine_json():
    f = core(flow("bulk"))["flows"][0]
    assert f["app"] == {"kind": "bulk"}
    assert not {"data_side", "reader", "sample"} & set(f)  # the engine's defaults, left out


def test_maerts_sends_from_the_server():
    c = core(flow("maerts"), flow({"maerts": {"bytes": "1MB"}}))
    assert [f["data_side"] for f in c["flows"]] == ["server", "server"]
    assert c["flows"][1]["app"] == {"kind": "bulk_bytes", "bytes": 1_000_000}
    assert "apps" not in c  # the socket's own bulk writer, no app object
    # the client connects: src is always `from`
    assert (c["flows"][0]["src"], c["flows"][0]["dst"]) == (0, 1)


def test_maerts_takes_tcp_settings_from_the_data_sender():
    """tcp_rmem from the data's receiver (the client), the rest and the cc from the server."""
    data = copy.deepcopy(BASE)
    data["hosts"]["s"] = {"sysctl": {"tcp_congestion_control": "bbr", "tcp_wmem": "4096 1000000 8000000"}}
    data["hosts"]["c"] = {"sysctl": {"tcp_rmem": "4096 200000 3000000"}}
    data["flows"] = [flow("maerts")]
    f = tcplab.load_scenario(data).to_core()["flows"][0]
    assert f["cc"] == "bbr"
    assert f["tcp"]["tcp_wmem"] == [4096, 1_000_000, 8_000_000]
    assert f["tcp"]["tcp_rmem"] == [4096, 200_000, 3_000_000]


def test_bidir_is_two_connections_fwd_and_rev():
    c = core(flow({"bulk": {"bidir": True, "bytes": "10MB"}}, name="x"))
    names = [f["name"] for f in c["flows"]]
    assert names == ["x.fwd", "x.rev"]
    assert [f.get("data_side", "client") for f in c["flows"]] == ["client", "server"]
    assert all(f["app"] == {"kind": "bulk_bytes", "bytes": 10_000_000} for f in c["flows"])


def test_bidir_with_count_prefixes_the_copy():
    names = [f["name"] for f in core(flow({"bulk": {"bidir": True}}, name="x", count=2))["flows"]]
    assert names == ["x.0.fwd", "x.0.rev", "x.1.fwd", "x.1.rev"]


# -- engine apps: keys, units, defaults --------------------------------------------------


def test_keys_are_engine_fields_without_their_unit_suffix():
    for kind in APP_KINDS:
        keys = app_keys(kind)
        for key, field in keys.items():
            assert field == key or field in (f"{key}_ns", f"{key}_bps", f"{key}_bytes")
        if kind in CONNECTION_KEYS:
            assert CONNECTION_KEYS[kind][0] in keys


def test_values_are_parsed_by_the_fields_suffix():
    c = core(
        flow({"rr": {"request": "1KiB", "response": "2KB", "think": "5ms"}}),
        flow({"nfs_stream": {"rsize": "64KiB", "bitrate": "40Mbit", "max_buffer": "1min"}}),
        flow({"batch_writer": {"jitter": "25%", "max_pending": 7}}),
        flow({"batch_writer": {"jitter": 0.25}}),
    )
    rr, nfs, bw, bw2 = (a["spec"] for a in c["apps"])
    assert (rr["request_bytes"], rr["response_bytes"], rr["think_ns"]) == (1024, 2000, 5_000_000)
    assert (nfs["rsize_bytes"], nfs["bitrate_bps"], nfs["max_buffer_ns"]) == (65536, 40_000_000, 60 * 10**9)
    assert bw["jitter"] == bw2["jitter"] == 0.25 and bw["max_pending"] == 7


def test_unset_fields_are_the_engines_defaults():
    """A spec holds every engine field: the given ones, the rest the engine's defaults."""
    spec = core(flow({"rr": {"request": "100B"}}))["apps"][0]["spec"]
    defaults = engine_app_defaults()["rr"]
    assert set(spec) == {"kind", *defaults}
    assert spec["request_bytes"] == 100
    assert {k: v for k, v in spec.items() if k not in ("kind", "request_bytes")} == {
        k: v for k, v in defaults.items() if k != "request_bytes"
    }


def test_app_name_alone_takes_every_default():
    spec = core(flow("batch_writer"))["apps"][0]["spec"]
    assert spec == {"kind": "batch_writer", **engine_app_defaults()["batch_writer"]}


def test_hls_profiles():
    spec = core(flow(HLS))["apps"][0]["spec"]
    assert spec["profiles"] == [{"name": "HD", "bitrate_bps": 3_000_000}, {"name": "low", "bitrate_bps": 800_000}]
    assert spec["segment_ns"] == 4 * 10**9


def test_a_new_engine_field_is_a_key_without_python_edits(monkeypatch):
    """The mapping is driven by the engine's defaults: a field the engine adds is a key."""
    import tcplab.scenario.apps as apps

    fields = {k: dict(v) for k, v in engine_app_defaults().items()}
    fields["rr"]["warmup_ns"] = 0
    fields["rr"]["burst_bytes"] = 0
    fields["rr"]["nodelay"] = False
    fields["rr"]["label"] = None  # Option<String>
    fields["rr"]["limit"] = None  # Option<u64>
    monkeypatch.setattr(apps, "engine_app_defaults", lambda: fields)
    app = {"rr": {"warmup": "2s", "burst": "3KB", "nodelay": True, "label": "HD", "limit": 7}}
    spec = core(flow(app))["apps"][0]["spec"]
    assert (spec["warmup_ns"], spec["burst_bytes"], spec["nodelay"]) == (2 * 10**9, 3000, True)
    assert (spec["label"], spec["limit"]) == ("HD", 7)
    assert core(flow({"rr": {"limit": None}}))["apps"][0]["spec"]["limit"] is None


# -- connections, naming, to_core shapes -------------------------------------------------


def test_rr_parallel_instances_are_one_app_over_n_flows():
    c = core(flow({"rr": {"parallel": 3}}, name="r"))
    assert [f["name"] for f in c["flows"]] == ["r.0", "r.1", "r.2"]
    assert all(f["app"] == {"kind": "driven"} for f in c["flows"])
    assert [(a["name"], a["flows"]) for a in c["apps"]] == [("r", [0, 1, 2])]


def test_one_connection_is_named_after_the_workload():
    c = core(flow("bulk"), flow(HLS))
    assert [f["name"] for f in c["flows"]] == ["c-s-0", "c-s-1"]
    assert c["apps"] == [{"name": "c-s-1", "flows": [1], "spec": c["apps"][0]["spec"]}]
    assert c["flows"][1]["data_side"] == "server"  # the video comes from the server


def test_count_makes_independent_copies():
    c = core(flow({"nfs_stream": {"nconnect": 2}}, name="n", count=2))
    assert [f["name"] for f in c["flows"]] == ["n.0.0", "n.0.1", "n.1.0", "n.1.1"]
    assert [(a["name"], a["flows"]) for a in c["apps"]] == [("n.0", [0, 1]), ("n.1", [2, 3])]


def test_app_flow_indices_are_global():
    c = core(flow("bulk"), flow({"batch_writer": {"queues": 2}}), flow("rr"))
    assert [a["flows"] for a in c["apps"]] == [[1, 2], [3]]
    assert [c["flows"][i]["name"] for i in c["apps"][0]["flows"]] == ["c-s-1.0", "c-s-1.1"]


def test_broadcast_senders_connections_and_names():
    c = core({"from": ["c", "c2"], "to": "s", "name": "b", "app": {"broadcast": {"connections": 3, "message": "2KB"}}})
    names = [f["name"] for f in c["flows"]]
    assert names == ["b.0.0", "b.0.1", "b.0.2", "b.1.0", "b.1.1", "b.1.2"]  # sender 0's first
    assert [f["src"] for f in c["flows"]] == [0, 0, 0, 2, 2, 2]  # c, then c2
    assert all(f["sample"] is False and f["app"] == {"kind": "driven"} for f in c["flows"])
    (app,) = c["apps"]
    spec = app["spec"]
    assert (spec["senders"], spec["connections_per_sender"], spec["message_bytes"]) == (2, 3, 2000)
    assert app["flows"] == list(range(6))


def test_broadcast_starts_spread_over_the_warmup_and_first_burst_after_it():
    n = 8
    c = core(flow({"broadcast": {"connections": n}}, start="2s"))
    starts = [f["start_ns"] for f in c["flows"]]
    assert starts == [2 * 10**9 + j * BROADCAST_WARMUP_NS // n for j in range(n)]
    assert c["apps"][0]["spec"]["first_burst_ns"] == 2 * 10**9 + BROADCAST_WARMUP_NS + BROADCAST_FIRST_BURST_AFTER_NS
    given = core(flow({"broadcast": {"connections": n, "first_burst": "5s"}}))["apps"][0]["spec"]
    assert given["first_burst_ns"] == 5 * 10**9


def test_readers():
    c = core(flow("bulk", reader={"rate": "2Mbit"}), flow("maerts", reader={"every": "100ms", "bytes": "64KB"}))
    assert c["flows"][0]["reader"] == {"kind": "rate", "rate_bps": 2_000_000}
    assert c["flows"][1]["reader"] == {"kind": "bursts", "interval_ns": 100_000_000, "bytes": 64_000}


def test_broadcast_of_40k_connections_fits_the_default_memory_limit():
    """Unsampled connections hold no time series: the story's size passes the default limit
    even with samples every 10 ms (40 000 sampled flows would need 6002 rows x 40 000 flows
    of time series, tens of GB)."""
    from tcplab.scenario.limits import DEFAULT_MEMORY_BYTES, sample_rows, series_bytes

    assert series_bytes(sample_rows(60 * 10**9, 10**7), 40_000, 10) > DEFAULT_MEMORY_BYTES
    data = copy.deepcopy(BASE)
    data["duration"] = "60s"
    data["sample_interval"] = "10ms"
    data["hosts"] = {"a1": {}, "a2": {}, "a3": {}, "a4": {}, "nginx": {}}
    data["routers"] = ["sw"]
    data["links"] = [
        {"between": [h, "sw"], "rate": "25Gbit", "delay": "50us"} for h in ("a1", "a2", "a3", "a4", "nginx")
    ]
    data["flows"] = [{"from": ["a1", "a2", "a3", "a4"], "to": "nginx", "app": {"broadcast": {"connections": 10_000}}}]
    c = tcplab.load_scenario(data).to_core()
    assert len(c["flows"]) == 40_000
    assert c["flows"][-1]["name"] == "a1-nginx-0.3.9999"


# -- --set -----------------------------------------------------------------------------


def test_set_an_app_field():
    c = core(flow({"rr": {"request": "1B"}}), overrides=["flows.0.app.rr.request=100B"])
    assert c["apps"][0]["spec"]["request_bytes"] == 100


def test_set_an_app_field_of_a_shorthand():
    c = core(flow("nfs_stream"), overrides=["flows.0.app.nfs_stream.nconnect=8"])
    assert len(c["flows"]) == 8


def test_set_a_profile_bitrate():
    c = core(flow(HLS), overrides=["flows.0.app.hls.profiles.1.bitrate=500kbit"])
    assert c["apps"][0]["spec"]["profiles"][1]["bitrate_bps"] == 500_000


def test_a_bad_set_names_the_path():
    with pytest.raises(ScenarioError) as info:
        core(flow(HLS), overrides=["flows.0.app.hls.segment=0s"])
    assert "flows.0.app.hls.segment" in info.value.line()


# -- errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("app", "fragments"),
    [
        (
            {"hls": {"profiles": []}},
            ["flows.0.app.hls.profiles: an empty profile ladder", "expected a list of profiles"],
        ),
        ({"hls": {}}, ["flows.0.app.hls.profiles: no profiles"]),
        ({"hls": {**HLS["hls"], "segment": "0s"}}, ["flows.0.app.hls.segment:", "0s", "from 1ms"]),
        (
            {"hls": {"profiles": [{"name": "HD", "bitrate": "3Mbit"}, {"name": "HD", "bitrate": "1Mbit"}]}},
            ['flows.0.app.hls.profiles.1.name: duplicate profile name "HD" (also profiles.0)'],
        ),
        (
            {"hls": {"profiles": [{"name": "HD", "rate": "3Mbit"}]}},
            ['flows.0.app.hls.profiles.0.rate: unknown key "rate"'],
        ),
        ({"hls": {"profiles": [{"name": "HD"}]}}, ["flows.0.app.hls.profiles.0.bitrate: missing"]),
        ({"nfs_stream": {"nconnect": 17}}, ["flows.0.app.nfs_stream.nconnect: 17 is out of range", "from 1 to 16"]),
        ({"nfs_stream": {"nconnect": 0}}, ["flows.0.app.nfs_stream.nconnect: 0 is out of range"]),
        ({"rr": {"parallel": 0}}, ["flows.0.app.rr.parallel: 0 is out of range", "from 1"]),
        ({"rr": {"requests": "1B"}}, ['flows.0.app.rr.requests: unknown key "requests" (did you mean "request"?)']),
        ({"rr": {"request_bytes": 1}}, ['flows.0.app.rr.request_bytes: unknown key "request_bytes"', '"request"']),
        ({"rr": {"request": "5ms"}}, ["flows.0.app.rr.request:", '"5ms"']),
        ({"batch_writer": {"timeout": "1Mbit"}}, ["flows.0.app.batch_writer.timeout:", '"1Mbit"']),
        ({"batch_writer": {"jitter": "-5%"}}, ["flows.0.app.batch_writer.jitter:", "negative"]),
        ({"broadcast": {"senders": 4}}, ['flows.0.app.broadcast.senders: "senders" is not set here', "from list"]),
        ({"bulk": {"bidir": "maybe"}}, ["flows.0.app.bulk.bidir:", "not a boolean"]),
        ({"maerts": {"bidir": True}}, ['flows.0.app.maerts.bidir: unknown key "bidir"']),
        ({"videos": {}}, ['flows.0.app.videos: unknown app "videos"']),
        ({"rr": {}, "hls": {}}, ["flows.0.app:", "is not an app"]),
        ({"rr": [1]}, ["flows.0.app.rr:", "is not a mapping"]),
    ],
)
def test_app_errors_name_the_path_value_and_expectation(app, fragments):
    line = error_of(flow(app))
    assert "\n" not in line
    for fragment in fragments:
        assert fragment in line, line


def test_a_list_of_senders_is_only_for_broadcast():
    line = error_of({"from": ["c", "c2"], "to": "s", "app": "rr"})
    assert "flows.0.from: a list of senders for app rr" in line and "only for a broadcast" in line


def test_broadcast_senders_are_checked_one_by_one():
    line = error_of({"from": ["c", "nope"], "to": "s", "app": "broadcast"})
    assert 'flows.0.from.1: unknown host "nope"' in line
    assert "flows.0.to: flow from" in error_of({"from": ["c", "s"], "to": "s", "app": "broadcast"})


@pytest.mark.parametrize(
    ("reader", "fragment"),
    [
        ({"rate": 0}, "flows.0.reader.rate:"),
        ({"every": "100ms"}, "flows.0.reader.bytes: missing"),
        ({"every": "0s", "bytes": "1KB"}, "flows.0.reader.every:"),
        ({"rate": "1Mbit", "every": "1s"}, "flows.0.reader: rate given with every/bytes"),
        ({"speed": "1Mbit"}, 'flows.0.reader.speed: unknown key "speed"'),
        ("slow", 'flows.0.reader: "slow" is not a reader'),
    ],
)
def test_reader_errors(reader, fragment):
    assert fragment in error_of(flow("bulk", reader=reader))


def test_duplicate_names_across_connections():
    line = error_of(flow({"rr": {"parallel": 2}}, name="a"), flow("bulk", name="a.1"))
    assert 'flows.1.name: duplicate flow name "a.1" (also flows.0)' in line


def test_several_app_errors_are_all_reported():
    with pytest.raises(ScenarioError) as info:
        scenario(flow({"nfs_stream": {"nconnect": 20, "rsize": "0B", "bogus": 1}}))
    paths = sorted(e.path for e in info.value.errors)
    assert paths == ["flows.0.app.nfs_stream.bogus", "flows.0.app.nfs_stream.nconnect", "flows.0.app.nfs_stream.rsize"]


# -- warnings --------------------------------------------------------------------------


def test_timeout_shorter_than_one_base_rtt_warns():
    """c2 <-> s has 40 ms of propagation there and back: a 30 ms timeout cannot be met."""
    sc = scenario({"from": "c2", "to": "s", "app": {"batch_writer": {"timeout": "30ms"}}, "count": 2})
    (w,) = sc.warnings  # one per entry and field, not per copy
    assert w.path == "flows.0.app.batch_writer.timeout" and "40ms" in w.line()
    assert not scenario({"from": "c2", "to": "s", "app": {"batch_writer": {"timeout": "41ms"}}}).warnings


def test_first_burst_before_the_connections_started_warns():
    sc = scenario(flow({"broadcast": {"connections": 10, "first_burst": "500ms"}}))
    assert [w.path for w in sc.warnings] == ["flows.0.app.broadcast.first_burst"]
    assert not scenario(flow({"broadcast": {"connections": 10}})).warnings


# -- built-ins -------------------------------------------------------------------------

WORKLOAD_BUILTINS = ["rr", "maerts", "hls", "nfs_stream", "batch_writer", "broadcast", "slow-reader"]


def test_one_builtin_per_workload():
    assert set(WORKLOAD_BUILTINS) <= set(builtin_scenarios())


@pytest.mark.parametrize("name", WORKLOAD_BUILTINS)
def test_workload_builtins_load_without_warnings(name):
    sc = tcplab.load_scenario(f"builtin:{name}")
    assert sc.name == name and not sc.warnings
    c = sc.to_core()
    kinds = {a["spec"]["kind"] for a in c.get("apps", [])}
    if name in APP_KINDS:
        assert kinds == {name}


@pytest.mark.engine
@pytest.mark.parametrize("name", WORKLOAD_BUILTINS)
def test_workload_builtins_are_accepted_by_the_engine(real_core, name):
    import json

    c = tcplab.load_scenario(f"builtin:{name}").to_core()
    real_core.validate(json.dumps(c))  # raises ValueError on what the engine refuses


# -- the engine's refusals, with the scenario's paths ------------------------------------


def test_engine_paths_are_translated_to_yaml_paths():
    from tcplab.scenario.checks import engine_message

    sc = scenario(flow("bulk"), flow({"rr": {"parallel": 2}}), flow(HLS, reader={"rate": "1Mbit"}))
    assert engine_message(sc, "apps.1.spec.segment_ns: 0 is zero") == "flows.2.app.hls.segment: 0 is zero"
    assert engine_message(sc, "apps.0.spec.request_bytes: x") == "flows.1.app.rr.request: x"
    assert engine_message(sc, "flows.3.reader.rate_bps: x") == "flows.2.reader.rate_bps: x"  # engine flow 3: entry 2
    assert engine_message(sc, "apps.9.spec.x: y") == "apps.9.spec.x: y"


@pytest.mark.engine
def test_check_reports_an_out_of_range_app_field_at_its_file_line(real_core, tmp_path):
    """The engine refuses a 2TB request (rr.rs: validate(), at most 2^40 bytes); Python checks
    the same bound first, in the user's units, at the field's line."""
    from typer.testing import CliRunner

    from tcplab.cli import app

    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\nduration: 1s\nhosts: {c: {}, s: {}}\nlinks: [{between: [c, s], rate: 10Mbit, delay: 1ms}]\n"
        "flows:\n  - {from: c, to: s}\n  - {from: c, to: s, app: {rr: {request: 2TB}}}\n"
    )
    r = CliRunner().invoke(app, ["check", str(path)])
    assert r.exit_code == 2
    assert 's.yaml:7: flows.1.app.rr.request: "2TB" is out of range; expected a size from 1B to 1TiB' in r.stderr


def test_routes_follow_the_data_side():
    routes = scenario(flow("bulk"), flow("maerts")).routes()
    assert routes[0]["data"] == ["c->s"] and routes[0]["ack"] == ["s->c"]
    assert routes[1]["data"] == ["s->c"] and routes[1]["ack"] == ["c->s"]  # the server sends


def test_check_shows_apps_and_elides_a_broadcasts_connections(tmp_path):
    from typer.testing import CliRunner

    from tcplab.cli import app

    r = CliRunner().invoke(app, ["check", "builtin:broadcast"])
    assert r.exit_code == 0, r.output
    assert "app events: broadcast over 400 connections" in r.stdout
    assert "... 396 more connections of app events" in r.stdout
    assert r.stdout.count("  flow events.") == 4


@pytest.fixture
def connections_made(monkeypatch) -> list[str]:
    """The engine connections built while the test runs (a name each)."""
    from tcplab.scenario.flows import Connection

    made: list[str] = []
    real = Connection.__init__

    def init(self, name, *args, **kwargs):
        made.append(name)
        real(self, name, *args, **kwargs)

    monkeypatch.setattr(Connection, "__init__", init)
    return made


def test_too_many_connections_are_refused_before_expanding_them(connections_made):
    """100 000 copies of 1 000 000 connections would never finish expanding: refused from the
    counts, before one connection is built."""
    line = error_of(flow({"broadcast": {"connections": 1_000_000}}, count=100_000))
    assert "flows.0.count: flows.0 brings the connections to 100000000000" in line
    assert "at most 1000000 connections" in line
    assert connections_made == []


def test_a_scenario_within_the_bound_builds_its_connections(connections_made):
    """The spy of the test above sees the connections a valid scenario expands to."""
    scenario(flow({"broadcast": {"connections": 3}}, count=2)).to_core()
    assert len(set(connections_made)) == 2 * 3
