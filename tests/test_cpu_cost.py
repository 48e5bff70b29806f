"""The CPU cost of packets: ``hosts.NAME.cpu.cost: {tx_skb, rx_packet, rx_skb}`` (the engine's
``host::cpu``). Parsed with defaults, passed to the engine as the node's ``cpu_cost`` only
when given (scenarios without it keep their engine config), ``nic.rx_cost`` as the same
parameter as ``rx_packet``, bad values refused in one line, and the host's stack time in
summary.json."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import tcplab
from tcplab.errors import ScenarioError
from tcplab.scenario.cpu import DEFAULT_RX_PACKET_NS, DEFAULT_RX_SKB_NS, DEFAULT_TX_GSO_FRAME_NS, DEFAULT_TX_SKB_NS

BASE = {
    "name": "cpu-cost",
    "duration": "200ms",
    "hosts": {"a": {}, "b": {}},
    "links": [{"between": ["a", "b"], "rate": "1Gbit", "delay": "1ms"}],
    "flows": [{"from": "a", "to": "b"}],
}


def _nodes(sets=(), data=BASE):
    return {n["name"]: n for n in tcplab.load_scenario(data, list(sets)).to_core()["nodes"]}


def test_without_a_cost_the_engine_config_is_as_it_was():
    nodes = _nodes(["hosts.a.cpu={share: 50%}", "hosts.b.nic={rx_ring: 256}"])
    assert all("cpu_cost" not in n for n in nodes.values())


def test_the_cost_round_trips_with_its_units_and_defaults():
    nodes = _nodes(["hosts.a.cpu={share: 35%, cost: {tx_skb: 2us, rx_skb: 1.5us}}", "hosts.b.cpu.cost={}"])
    assert nodes["a"]["cpu"]["share"] == pytest.approx(0.35)
    assert nodes["a"]["cpu_cost"] == {
        "tx_skb_ns": 2000,
        "tx_gso_frame_ns": DEFAULT_TX_GSO_FRAME_NS,
        "rx_packet_ns": DEFAULT_RX_PACKET_NS,
        "rx_skb_ns": 1500,
    }
    # A cost alone: the share defaults to 100 %.
    assert nodes["b"]["cpu"]["share"] == 1.0
    assert nodes["b"]["cpu_cost"] == {
        "tx_skb_ns": DEFAULT_TX_SKB_NS,
        "tx_gso_frame_ns": DEFAULT_TX_GSO_FRAME_NS,
        "rx_packet_ns": DEFAULT_RX_PACKET_NS,
        "rx_skb_ns": DEFAULT_RX_SKB_NS,
    }


def test_nic_rx_cost_is_rx_packet():
    nodes = _nodes(["hosts.b.nic={rx_cost: 3us}", "hosts.b.cpu.cost={tx_skb: 1us}"])
    assert nodes["b"]["cpu_cost"]["rx_packet_ns"] == 3000
    # An explicit rx_packet wins over the nic's default.
    nodes = _nodes(["hosts.b.nic={rx_ring: 64}", "hosts.b.cpu.cost={rx_packet: 2us}"])
    assert nodes["b"]["cpu_cost"]["rx_packet_ns"] == 2000


def test_a_pods_stack_is_not_charged_twice():
    # Only hosts get the account (a pod runs on its node's CPU; its own stack is not charged).
    for name, node in _nodes(["hosts.a.cpu.cost={}"]).items():
        assert ("cpu_cost" in node) == (name == "a")


@pytest.mark.parametrize(
    ("sets", "path", "expected"),
    [
        (["hosts.a.cpu.cost.tx_skb=-1us"], "hosts.a.cpu.cost.tx_skb", "expected a duration >= 0"),
        (["hosts.a.cpu.cost.rx_packet=5"], "hosts.a.cpu.cost.rx_packet", "has no unit"),
        (["hosts.a.cpu.cost.rx_skb=2s"], "hosts.a.cpu.cost.rx_skb", "longer than a second"),
        (["hosts.a.cpu.cost.per_byte=1ns"], "hosts.a.cpu.cost.per_byte", "unknown key"),
        (
            ["hosts.a.nic={rx_cost: 2us}", "hosts.a.cpu.cost.rx_packet=1us"],
            "hosts.a.cpu.cost.rx_packet",
            "the same parameter",
        ),
    ],
)
def test_bad_costs_are_refused_with_their_path(sets, path, expected):
    with pytest.raises(ScenarioError) as info:
        tcplab.load_scenario(BASE, sets)
    assert path in str(info.value) and expected in str(info.value)


def test_cli_error_is_one_line():
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from tcplab.cli import main; main()",
            "check",
            "builtin:rr",
            "--set",
            "hosts.server.cpu.cost.tx_skb=-1us",
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0] == (
        'error: --set: hosts.server.cpu.cost.tx_skb: "-1us" is negative; expected a duration >= 0 such as 1us'
    )


def test_a_capped_sender_reports_its_stack_time(tmp_path):
    # 20 us per skb and per frame software GSO cuts (tso off) at 50 %: the sender's stack is
    # busy (nearly) all the CPU time it has, and goodput is capped at 0.5 / 20 us x 1448 B =
    # 289.6 Mbit/s.
    sets = [
        "duration=1s",
        "hosts.a.offload.tso=off",
        "hosts.a.cpu={share: 50%, period: 1ms, cost: {tx_skb: 20us, tx_gso_frame: 20us, rx_packet: 0us, rx_skb: 0us}}",
    ]
    sc = tcplab.load_scenario(BASE, sets)
    result = tcplab.run(sc)
    result.write(tmp_path / "run", plots=False)
    # The run directory's scenario.yaml reloads to the same engine nodes (the cost round-trips).
    again = tcplab.load_scenario(str(tmp_path / "run" / "scenario.yaml"))
    assert again.to_core()["nodes"] == sc.to_core()["nodes"]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    cpu = {h["name"]: h["cpu"] for h in summary["hosts"]}
    assert cpu["b"] is None
    assert cpu["a"]["busy_ratio"] > 0.95 and cpu["a"]["busy_ns"] <= cpu["a"]["on_ns"]
    goodput = summary["flows"][0]["goodput_bps"]
    assert 0.9 * 289.6e6 < goodput <= 289.6e6 * 1.001
