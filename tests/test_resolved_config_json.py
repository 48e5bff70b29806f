"""scenario.resolved.json: indented for a readable config, compact for thousands of flows; same JSON."""

import json

from tcplab.results.result import COMPACT_CONFIG_FLOWS, _config_json


def _config(n_flows: int) -> dict:
    return {
        "seed": 1,
        "flows": [{"name": f"f{i}", "src": 0, "dst": 1, "tcp": {"mss_bytes": 1448}} for i in range(n_flows)],
    }


def test_small_config_is_indented() -> None:
    text = _config_json(_config(2))
    assert "\n  " in text
    assert json.loads(text) == _config(2)


def test_large_config_is_compact_and_equal() -> None:
    cfg = _config(COMPACT_CONFIG_FLOWS + 1)
    text = _config_json(cfg)
    assert text.count("\n") == 1 and ", " not in text
    assert json.loads(text) == cfg
    assert len(text) < len(json.dumps(cfg, indent=2)) * 0.7
