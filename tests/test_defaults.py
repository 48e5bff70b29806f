"""One source of truth: the engine's defaults, Python's copy, the docs, and the fake engine.

Linux's sysctl and module defaults live in the engine (``crates/tcplab-core/src/config/``,
exported as ``tcplab._core.defaults()``), in Python (``LINUX_TCP_DEFAULTS`` and friends,
applied when a scenario leaves them out) and in ``docs/kernel-pin.md``. These tests hold them
equal, and hold the engine double (``tests/fake_core.py``) to the engine's output shape.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fake_core
import tcplab
from tcplab.scenario import DEFAULT_PFIFO_LIMIT, LINUX_CC_DEFAULTS, LINUX_TCP_DEFAULTS

DOCS = Path(__file__).resolve().parents[1] / "docs" / "kernel-pin.md"

MINIMAL = {
    "name": "d",
    "duration": "1s",
    "hosts": {"a": {}, "b": {}},
    "links": [{"between": ["a", "b"], "rate": "10Mbit", "delay": "5ms"}],
    "flows": [{"from": "a", "to": "b"}],
}


@pytest.mark.engine
def test_python_defaults_are_the_engine_defaults(real_core):
    engine = real_core.defaults()
    assert engine["tcp"] == LINUX_TCP_DEFAULTS
    assert engine["cc_params"] == LINUX_CC_DEFAULTS
    assert engine["queue"] == {"kind": "pfifo", "limit_packets": DEFAULT_PFIFO_LIMIT}
    # a scenario that sets nothing gets exactly the engine's defaults
    core = tcplab.load_scenario(MINIMAL).to_core()
    assert core["flows"][0]["tcp"] == engine["tcp"]
    assert core["flows"][0]["cc_params"] == engine["cc_params"]
    assert core["links"][0]["overhead_bytes"] == engine["overhead_bytes"]
    assert core["links"][0]["queue"] == engine["queue"]
    assert core["sample_interval_ns"] == engine["sample_interval_ns"]


@pytest.mark.engine
def test_the_fake_engine_has_the_engine_defaults(real_core):
    assert fake_core.defaults() == real_core.defaults()


def _doc_constants() -> dict[str, Any]:
    """The "Constants and sysctl defaults" paragraph of docs/kernel-pin.md as {name: value}."""
    text = DOCS.read_text(encoding="utf-8")
    start = text.index("Constants and sysctl defaults")
    paragraph = text[start : text.index("\n\n", start)]
    scale = {None: 1, "ms": 1, "s": 1000, "MB": 1 << 20}
    found: dict[str, Any] = {}
    for m in re.finditer(r"`(\w+)`(?:/`\w+`)?\s+(\d+(?: \d+)*)(?: (ms|s|MB)\b)?", paragraph):
        name, numbers, unit = m.group(1), [int(x) for x in m.group(2).split()], m.group(3)
        found[name] = numbers if len(numbers) > 1 else numbers[0] * scale[unit]
    return found


# docs name -> (engine tcp key, factor from the docs' unit to the engine's)
DOC_TO_ENGINE = {
    "TCP_INIT_CWND": ("initial_cwnd", 1),
    "TCP_RTO_MIN": ("rto_min_ms", 1),  # docs: ms
    "tcp_rmem": ("tcp_rmem", 1),
    "tcp_wmem": ("tcp_wmem", 1),
    "tcp_early_retrans": ("tcp_early_retrans", 1),
    "tcp_recovery": ("tcp_recovery", 1),
    "tcp_frto": ("tcp_frto", 1),
    "tcp_reordering": ("tcp_reordering", 1),
    "tcp_min_rtt_wlen": ("tcp_min_rtt_wlen_s", 1),
    "tcp_limit_output_bytes": ("tcp_limit_output_bytes", 1),
    "tcp_pacing_ss_ratio": ("tcp_pacing_ss_ratio", 1),
    "tcp_pacing_ca_ratio": ("tcp_pacing_ca_ratio", 1),
    "tcp_comp_sack_delay_ns": ("tcp_comp_sack_delay_ns", 1_000_000),  # docs: ms
    "tcp_comp_sack_nr": ("tcp_comp_sack_nr", 1),
    "tcp_min_tso_segs": ("tcp_min_tso_segs", 1),
    "tcp_tso_rtt_log": ("tcp_tso_rtt_log", 1),
}


def test_docs_state_the_defaults_the_code_uses():
    docs = _doc_constants()
    compared = 0
    for doc_name, (key, factor) in DOC_TO_ENGINE.items():
        if doc_name not in docs:
            continue
        value = docs[doc_name]
        value = value if isinstance(value, list) else value * factor
        assert value == LINUX_TCP_DEFAULTS[key], f"docs/kernel-pin.md: `{doc_name}` {docs[doc_name]} != {key}"
        compared += 1
    # the paragraph must keep naming most of them (a rewrite that drops them is a failure too)
    assert compared >= len(DOC_TO_ENGINE) - 2, f"only {compared} defaults found in docs/kernel-pin.md"


def _shape(value: Any) -> Any:
    """The structure of an engine output: dict keys, list element shapes, array dtypes."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value and isinstance(value[0], dict) else "list"
    if isinstance(value, np.ndarray):
        return f"array[{value.dtype}]"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


@pytest.mark.engine
def test_the_fake_engine_returns_what_the_engine_returns(real_core):
    config = tcplab.load_scenario(MINIMAL).to_core()
    config["duration_ns"] = 300_000_000
    real = real_core.run(json.dumps(config))
    fake = fake_core.run(json.dumps(config))
    real_shape, fake_shape = _shape(real), _shape(fake)
    # counters: the fake fills a few; each must be one the engine reports
    for side in (real_shape, fake_shape):
        for entry in side["flows"] + side["hosts"]:
            entry.pop("counters")
    for f in fake["flows"]:
        assert set(f["counters"]) <= set(real["flows"][0]["counters"])
    for h in fake["hosts"]:
        assert set(h["counters"]) <= set(real["hosts"][0]["counters"])
    assert fake_shape == real_shape


@pytest.mark.engine
def test_python_app_defaults_are_the_engine_defaults(real_core):
    """Python's copy of each application's defaults (used when the engine is not built) is the
    engine's; a scenario that sets nothing in an app gets exactly them in its spec."""
    from tcplab.scenario.apps import APP_DEFAULTS

    engine = real_core.defaults()["apps"]
    assert engine == APP_DEFAULTS
    data = dict(MINIMAL, flows=[{"from": "a", "to": "b", "app": kind} for kind in ("rr", "batch_writer")])
    data["flows"] += [
        {"from": "a", "to": "b", "app": {"hls": {"profiles": [{"name": "p", "bitrate": "1Mbit"}]}}},
        {"from": "a", "to": "b", "app": "nfs_stream"},
        {"from": "a", "to": "b", "app": "broadcast", "name": "bc"},
    ]
    core = tcplab.load_scenario(data).to_core()
    for app in core["apps"]:
        spec = dict(app["spec"])
        kind = spec.pop("kind")
        expected = dict(engine[kind])
        if kind == "hls":
            expected["profiles"] = [{"name": "p", "bitrate_bps": 1_000_000}]
        if kind == "broadcast":  # the first burst after the connections' warm-up (flows.py)
            expected["first_burst_ns"] = spec["first_burst_ns"]
        assert spec == expected, kind
