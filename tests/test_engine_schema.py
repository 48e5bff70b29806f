"""The engine's output against its one declared schema (:data:`tcplab.engine.OUTPUT_SCHEMA`).

The engine derives its dict from its output types (serde in crates/tcplab-py); the front
declares, once, what it reads from it. Every producer is held to that declaration: the real
engine and the test double give all of it (strict), an engine-shaped output that leaves out
what the schema marks optional (an older engine, a kernel run) still parses, and a dict that
breaks it is an :class:`~tcplab.errors.EngineError` naming the path of the problem.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import numpy as np
import pytest

import fake_core
import tcplab
from tcplab.columns import CAPTURE_DTYPES, HOST_DTYPES, QUEUE_DTYPES, TIMESERIES_DTYPES
from tcplab.engine import OUTPUT_SCHEMA, ListOf, Null, Opt, check_output, parse_output
from tcplab.errors import EngineError

MINIMAL: dict[str, Any] = {
    "name": "schema",
    "duration": "1s",
    "sample_interval": "100ms",
    "hosts": {"a": {}, "b": {}},
    "links": [{"between": ["a", "b"], "rate": "10Mbit", "delay": "5ms"}],
    "flows": [{"from": "a", "to": "b"}],
}


def _config(**extra: Any) -> dict[str, Any]:
    data = copy.deepcopy(MINIMAL)
    data.update(extra)
    return tcplab.load_scenario(data).to_core()


def _with_apps() -> dict[str, Any]:
    flows = [
        {"from": "a", "to": "b"},
        {"from": "a", "to": "b", "app": "rr"},
        {"from": "a", "to": "b", "app": {"hls": {"profiles": [{"name": "p", "bitrate": "1Mbit"}]}}},
    ]
    return _config(flows=flows)


@pytest.mark.engine
def test_the_engine_gives_everything_the_schema_declares(real_core):
    for config in (_config(), _with_apps()):
        config["capture"] = {"flow": 0}
        check_output(real_core.run(json.dumps(config), None), strict=True)


@pytest.mark.engine
def test_the_engines_column_stores_are_the_declared_columns(real_core):
    """Each column store the engine hands over has exactly the columns of
    :mod:`tcplab.columns`, in their order and with their dtypes (the engine declares each
    store once, ``column_store!`` in crates/tcplab-core/src/metrics/timeseries.rs; a column
    added there and not here, or the other way round, fails)."""
    config = _config(hosts={"a": {"nic": {"driver": "ena"}}, "b": {}})
    config["capture"] = {"flow": 0}
    raw = real_core.run(json.dumps(config), None)
    stores = {
        "timeseries": (raw["timeseries"], TIMESERIES_DTYPES),
        "queue_timeseries": (raw["queue_timeseries"], QUEUE_DTYPES),
        "host_series": (raw["host_series"], HOST_DTYPES),
        "capture.columns": (raw["capture"]["columns"], CAPTURE_DTYPES),
    }
    for what, (store, dtypes) in stores.items():
        assert [(name, str(array.dtype)) for name, array in store.items()] == list(dtypes.items()), what
        assert len(store["t_ns"]) > 0, f"{what}: no rows to check"


def test_the_test_double_gives_everything_the_schema_declares():
    for config in (_config(), _with_apps()):
        check_output(fake_core.run(json.dumps(config)), strict=True)


def test_what_the_schema_marks_optional_may_be_left_out():
    """An engine-shaped output with only the required keys (what the kernel runs give)."""
    raw = fake_core.run(json.dumps(_config()))

    def required(value: Any, spec: Any) -> Any:
        if isinstance(spec, Null):
            spec = spec.spec
        if isinstance(spec, dict) and isinstance(value, dict):
            return {k: required(value[k], s) for k, s in spec.items() if not isinstance(s, Opt)}
        if isinstance(spec, ListOf) and isinstance(value, list):
            return [required(v, spec.spec) for v in value]
        return value

    lean = required(raw, OUTPUT_SCHEMA)
    assert "apps" not in lean and "chrono" not in lean["flows"][0] and "rtt_floor" not in lean["invariant"]
    out = parse_output(lean)
    assert out.apps == [] and out.capture is None and len(out.host_series) == 0
    with pytest.raises(EngineError, match=r"missing key\(s\) host_packets, host_series, warnings, apps, capture"):
        check_output(lean, strict=True)


def _mutated(path: str, value: Any) -> dict[str, Any]:
    raw = fake_core.run(json.dumps(_config()))
    *parents, last = path.split(".")
    node: Any = raw
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if value is KeyError:
        del node[last]
    else:
        node[last] = value
    return raw


@pytest.mark.parametrize(
    "path, value, message",
    [
        ("flows.0.rtt_us.p50", "50", "flows.0.rtt_us.p50 is str '50', expected an integer"),
        ("flows.0.rtt_us", KeyError, "flows.0 lacks rtt_us"),
        ("flows.0.counters", [1, 2], "flows.0.counters is not a mapping"),
        ("flows.0.counters.TcpOutSegs", 1.5, "flows.0.counters.TcpOutSegs is float 1.5, expected an integer"),
        ("hosts.0.name", None, "hosts.0.name is NoneType None, expected a string"),
        ("links.0.sent_packets", True, "links.0.sent_packets is bool True, expected an integer"),
        ("links.0.child", {"qdisc": "bfifo"}, "links.0.child lacks sent_bytes"),
        ("invariant.ok", "yes", "invariant.ok is str 'yes', expected a bool"),
        ("invariant.rtt_floor", {"ok": True}, "invariant.rtt_floor lacks message"),
        ("names.cc_mode", ["STARTUP"], "names.cc_mode is not a mapping"),
        ("warnings", "one", "warnings is not a list"),
        ("events", KeyError, "missing key(s) events"),
    ],
)
def test_an_output_that_breaks_the_schema_is_an_engine_error(path, value, message):
    with pytest.raises(EngineError, match="^engine output: " + re.escape(message)):
        parse_output(_mutated(path, value))


def test_numpy_scalars_are_numbers():
    raw = _mutated("flows.0.bytes_sent", np.uint64(7))
    raw["flows"][0]["rtt_us"]["mean"] = np.float64(1.5)
    assert parse_output(raw).flows[0]["bytes_sent"] == 7


def test_keys_the_schema_does_not_declare_pass_through():
    """A field the engine adds reaches the front (the dicts, ``raw``) with no list to edit."""
    raw = _mutated("flows.0.new_field_us", 5)
    raw["new_top"] = {"x": 1}
    out = parse_output(raw)
    assert out.flows[0]["new_field_us"] == 5 and out.raw["new_top"] == {"x": 1}
