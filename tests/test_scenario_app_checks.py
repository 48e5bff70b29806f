"""Checks of application settings found by a new-user review: rates in tc's bytes units,
profile ladder errors, every engine bound mirrored in Python (reported in the user's units at
the YAML path before the engine runs), loss outages, hidden problems."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import tcplab
from tcplab.errors import ScenarioError

BASE: dict[str, Any] = {
    "name": "apps",
    "duration": "10s",
    "hosts": {"c": {}, "s": {}},
    "links": [{"between": ["c", "s"], "rate": "100Mbit", "delay": "5ms"}],
}
HLS = {"hls": {"profiles": [{"name": "HD", "bitrate": "3Mbit"}, {"name": "low", "bitrate": "800kbit"}]}}


def scenario(*flows: dict[str, Any], overrides: list[str] | None = None, **top: Any) -> tcplab.Scenario:
    data = copy.deepcopy(BASE)
    data.update(top)
    data["flows"] = list(flows)
    return tcplab.load_scenario(data, overrides)


def errors_of(*flows: dict[str, Any], **top: Any) -> list[str]:
    """Every error line (path: problem) of a scenario, in order."""
    with pytest.raises(ScenarioError) as info:
        scenario(*flows, **top)
    return [f"{e.path}: {e.problem}" for e in info.value.errors]


def flow(app: Any, **kw: Any) -> dict[str, Any]:
    return {"from": "c", "to": "s", "app": app, **kw}


# -- 1. rates in tc's bytes units --------------------------------------------------------


@pytest.mark.parametrize(
    "app, reader, path",
    [
        ({"hls": {"profiles": [{"name": "HD", "bitrate": "3Mbps"}]}}, None, "flows.0.app.hls.profiles.0.bitrate"),
        ({"hls": {**HLS["hls"], "start_estimate": "1Mbps"}}, None, "flows.0.app.hls.start_estimate"),
        ({"nfs_stream": {"bitrate": "10MBps"}}, None, "flows.0.app.nfs_stream.bitrate"),
        ("bulk", {"rate": "2Mbps"}, "flows.0.reader.rate"),
    ],
)
def test_app_and_reader_rates_in_tc_bytes_units_warn_as_link_rates_do(app, reader, path):
    """tc reads ``3Mbps`` as 3 megabytes per second (24 Mbit/s): every rate of a scenario
    gets the same warning, not only link and qdisc rates."""
    f = flow(app, **({"reader": reader} if reader else {}))
    (w,) = scenario(f).warnings
    assert w.path == path and "tc's units" in w.line()
    bits = copy.deepcopy(f)  # the same value in bits: no warning
    text = repr(bits).replace("Mbps", "Mbit").replace("MBps", "Mbit")
    assert not scenario(eval(text)).warnings


# -- 2. hls profile ladders: one precise line per problem -------------------------------


@pytest.mark.parametrize(
    "profiles, lines",
    [
        ([], ["flows.0.app.hls.profiles: an empty profile ladder"]),
        ([{"name": "HD", "bitrate": 0}], ["flows.0.app.hls.profiles.0.bitrate: 0 is zero"]),
        (
            [{"name": "HD", "bitrate": "3Mbit"}, {"name": "HD", "bitrate": "1Mbit"}],
            ['flows.0.app.hls.profiles.1.name: duplicate profile name "HD" (also profiles.0)'],
        ),
        (
            [{"name": "HD", "bitrat": "3Mbit"}],
            [
                'flows.0.app.hls.profiles.0.bitrat: unknown key "bitrat" (did you mean "bitrate"?)',
                "flows.0.app.hls.profiles.0.bitrate: missing",
            ],
        ),
        ([{"name": "HD"}], ["flows.0.app.hls.profiles.0.bitrate: missing"]),
        (
            [{"name": "a b", "bitrate": "500bit"}],  # two problems in one entry: both
            [
                'flows.0.app.hls.profiles.0.name: "a b" is not a valid profile name',
                'flows.0.app.hls.profiles.0.bitrate: "500bit" is out of range',
            ],
        ),
    ],
)
def test_a_broken_ladder_gets_one_line_per_problem_and_no_false_no_profiles(profiles, lines):
    assert errors_of(flow({"hls": {"profiles": profiles}})) == lines


def test_no_ladder_at_all_is_one_no_profiles_line():
    assert errors_of(flow({"hls": {}})) == ["flows.0.app.hls.profiles: no profiles"]


# -- 3. the engine's bounds, in Python ---------------------------------------------------


@pytest.mark.parametrize(
    "app, line",
    [
        (
            {"batch_writer": {"retry_min": "120s"}},
            "flows.0.app.batch_writer.retry_min: 120s is longer than retry_max (60s, its default)",
        ),
        (
            {"batch_writer": {"retry_min": "2s", "retry_max": "1s"}},
            'flows.0.app.batch_writer.retry_max: "1s" is shorter than retry_min (2s)',
        ),
        ({"batch_writer": {"overflow": "block"}}, 'flows.0.app.batch_writer.overflow: unknown overflow "block"'),
        ({"batch_writer": {"jitter": "150%"}}, 'flows.0.app.batch_writer.jitter: "150%" is out of range'),
        ({"batch_writer": {"interval": "999us"}}, 'flows.0.app.batch_writer.interval: "999us" is out of range'),
        ({"broadcast": {"window": "2s"}}, 'flows.0.app.broadcast.window: "2s" is longer than interval (1s)'),
        (
            {"broadcast": {"interval": "5ms"}},
            "flows.0.app.broadcast.interval: 5ms is shorter than window (10ms, its default)",
        ),
        ({"hls": {**HLS["hls"], "start_profile": "XX"}}, 'flows.0.app.hls.start_profile: "XX" is not a profile'),
        ({"hls": {**HLS["hls"], "bw_factor": 0}}, "flows.0.app.hls.bw_factor: 0 is out of range"),
        ({"nfs_stream": {"readahead": "2GiB"}}, 'flows.0.app.nfs_stream.readahead: "2GiB" is out of range'),
        ({"nfs_stream": {"rsize": "5000B"}}, 'flows.0.app.nfs_stream.rsize: "5000B" is not whole pages'),
    ],
)
def test_engine_only_checks_are_made_in_python_at_the_key_written(app, line):
    assert errors_of(flow(app)) == [line]


def test_an_engine_bound_error_has_the_file_line_and_exits_2(tmp_path):
    from typer.testing import CliRunner

    from tcplab.cli import app

    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\nduration: 1s\nhosts: {c: {}, s: {}}\nlinks: [{between: [c, s], rate: 10Mbit, delay: 1ms}]\n"
        "flows:\n  - from: c\n    to: s\n    app:\n      batch_writer:\n        overflow: block\n"
    )
    for command in ("check", "run"):
        extra = ["--output", str(tmp_path / "runs")] if command == "run" else []
        r = CliRunner().invoke(app, [command, str(path), *extra])
        assert r.exit_code == 2, (command, r.output)
        assert 's.yaml:10: flows.0.app.batch_writer.overflow: unknown overflow "block"' in r.stderr


def test_rsize_below_its_bound_says_the_real_lower_bound():
    with pytest.raises(ScenarioError) as info:
        scenario(flow({"nfs_stream": {"rsize": "-1MiB"}}))
    (e,) = info.value.errors
    assert e.expected == "a multiple of 4096 bytes from 4KiB to 1MiB"


def _edges() -> list[tuple[str, str, Any]]:
    """(kind, key, value) at each numeric bound Python accepts, in the user's units."""
    from tcplab.scenario.app_bounds import RANGES, show

    out = []
    for kind, fields in RANGES.items():
        for field, (lo, hi) in fields.items():
            key = field.rsplit("_", 1)[0] if field.endswith(("_ns", "_bps", "_bytes")) else field
            for bound in (lo, hi):
                if isinstance(bound, (int, float)) and not isinstance(bound, bool):
                    if field in ("bw_factor", "bw_up_factor") and bound == lo:
                        bound = 1e-6  # (0, 100]: the smallest we try above 0
                    out.append((kind, key, show(field, bound) if isinstance(bound, int) else bound))
    return out


def app_keys_inverse(kind: str) -> dict[str, str]:
    from tcplab.scenario.apps import app_keys

    return {field: key for key, field in app_keys(kind).items()}


@pytest.mark.engine
@pytest.mark.parametrize("kind, key, value", _edges())
def test_every_edge_python_accepts_the_engine_accepts(real_core, kind, key, value):
    """The mirror holds: a value at a bound Python accepts passes the engine's validate()."""
    import json

    from tcplab.scenario.app_bounds import RANGES
    from tcplab.scenario.apps import app_keys

    body = {**(HLS["hls"] if kind == "hls" else {}), key: value}
    field = app_keys(kind)[key]
    for other, bounds in RANGES[kind].items():  # a field bounded by this one follows it
        if field in bounds:
            body[app_keys_inverse(kind)[other]] = value
    if kind == "broadcast":
        body["first_burst"] = "3s"
    c = scenario(flow({kind: body}), duration="3600s").to_core()
    real_core.validate(json.dumps(c))  # raises ValueError on what the engine refuses


@pytest.mark.parametrize(
    "kind, key, value", [e for e in _edges() if isinstance(e[2], str) and e[2] not in ("0ns", "0B")]
)
def test_just_past_each_edge_python_refuses(kind, key, value):
    """One unit past each integer bound is refused by Python (so the bound is really checked)."""
    from tcplab.scenario.app_bounds import RANGES
    from tcplab.scenario.apps import app_keys

    field = app_keys(kind)[key]
    lo, hi = RANGES[kind][field]
    from tcplab.scenario.apps import _parse_field

    n = _parse_field(field, 0, value)
    past = n - 1 if n == lo else n + 1
    from tcplab.scenario.app_bounds import show

    body = {**(HLS["hls"] if kind == "hls" else {}), key: show(field, past)}
    assert any(f"flows.0.app.{kind}.{key}:" in e for e in errors_of(flow({kind: body})))


# -- 4. a loss outage window -------------------------------------------------------------


def _outage_link(loss: Any) -> dict[str, Any]:
    return {"links": [{"between": ["c", "s"], "rate": "10Mbit", "delay": "5ms", "loss": loss}]}


def test_an_outage_is_one_window_of_the_engine():
    c = scenario(flow("bulk"), **_outage_link({"outage": {"start": "10s", "end": "200s"}}), duration="300s").to_core()
    assert c["links"][0]["loss"] == {"kind": "outage", "start_ns": 10 * 10**9, "end_ns": 200 * 10**9}


@pytest.mark.parametrize(
    "outage, line",
    [
        ({"start": "5s", "end": "5s"}, 'links.0.loss.outage.end: "5s" is not after start ("5s")'),
        ({"start": "5s"}, "links.0.loss.outage.end: missing"),
        (
            {"start": "5s", "end": "6s", "again": "7s"},
            'links.0.loss.outage.again: unknown key "again" (one window per link)',
        ),
        ({"start": "-1s", "end": "6s"}, 'links.0.loss.outage.start: "-1s" is negative'),
    ],
)
def test_a_bad_outage_names_its_field(outage, line):
    assert errors_of(flow("bulk"), **_outage_link({"outage": outage})) == [line]


@pytest.mark.engine
def test_a_batch_writer_behind_an_outage_times_out(real_core, tmp_path):
    """Every packet is lost for 4 s: the requests sent then get no response within the 1 s
    timeout; without the outage none times out."""

    def timeouts(loss: Any) -> int:
        sc = scenario(flow({"batch_writer": {"timeout": "1s"}}), **_outage_link(loss), duration="10s")
        result = tcplab.run(sc)
        (app,) = result.apps.values()
        return app.summary["timeouts"]

    assert timeouts(None) == 0
    assert timeouts({"outage": {"start": "3s", "end": "7s"}}) > 0


# -- 5. no problem hidden by another ------------------------------------------------------


def test_a_sender_list_for_rr_is_reported_beside_an_error_in_its_settings():
    lines = errors_of(
        {"from": ["c", "c2"], "to": "s", "app": {"rr": {"bogus": 1}}},
        hosts={"c": {}, "c2": {}, "s": {}},
        links=[{"between": [h, "s"], "rate": "10Mbit", "delay": "5ms"} for h in ("c", "c2")],
    )
    assert lines == [
        'flows.0.app.rr.bogus: unknown key "bogus"',
        "flows.0.from: a list of senders for app rr",
    ]


# -- 6. nits -------------------------------------------------------------------------------


def test_a_broadcast_sender_listed_twice_is_refused():
    lines = errors_of(
        {"from": ["c", "c"], "to": "s", "app": {"broadcast": {"connections": 2}}},
    )
    assert lines == ['flows.0.from.1: "c" is already sender 0']


@pytest.mark.parametrize(
    "body, path",
    [
        ({"readahead": "512KiB"}, "flows.0.app.nfs_stream.readahead"),  # rsize 1 MiB by default
        ({"rsize": "1MiB", "readahead": "64KiB"}, "flows.0.app.nfs_stream.readahead"),
    ],
)
def test_a_readahead_below_rsize_warns(body, path):
    (w,) = scenario(flow({"nfs_stream": body})).warnings
    assert w.path == path and "each READ asks for at most" in w.line()


def test_readahead_at_least_rsize_or_both_defaults_do_not_warn():
    assert not scenario(flow({"nfs_stream": {"readahead": "1MiB"}})).warnings
    assert not scenario(flow({"nfs_stream": {}})).warnings  # Linux's defaults: 128 KiB, 1 MiB


def test_every_builtin_one_line_description_is_whole():
    """``tcplab scenarios`` shows the first sentence: it must not stop inside parentheses."""
    from tcplab.loader import builtin_scenarios

    for name, line in builtin_scenarios().items():
        assert line.count("(") == line.count(")"), (name, line)


def test_the_bidir_builtin_is_iperf3_bidir():
    routes = tcplab.load_scenario("builtin:bidir").routes()
    assert [r["flow"] for r in routes] == ["bidir.fwd", "bidir.rev"]
    assert routes[0]["data"] == routes[1]["ack"] and routes[0]["ack"] == routes[1]["data"]


def test_check_prints_a_flows_reader():
    from typer.testing import CliRunner

    from tcplab.cli import app

    r = CliRunner().invoke(app, ["check", "builtin:slow-reader"])
    assert r.exit_code == 0
    lines = {line.split(":")[0].strip(): line for line in r.stdout.splitlines() if line.strip().startswith("flow ")}
    assert lines["flow rate-reader"].endswith("; reader: at most 2 Mbit/s")
    assert lines["flow burst-reader"].endswith("; reader: 64KB every 100ms")
    assert "; reader:" not in lines["flow fast-reader"]
