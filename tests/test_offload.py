"""A host's ``offload: {tso, gso, gro}`` (``ethtool -K``): on by default as in Linux; parsed,
passed to the engine (every host's TCP builds GSO skbs, ``gso_skbs``; ``tso``: the NIC cuts
them; ``gro``), printed as ``ethtool -k`` text in the run directory, and followed by kernel
mode's ``ethtool -K`` (GRO; TSO/GSO stay off on the test bed's veths, kernel/plan.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import tcplab
from tcplab.errors import ScenarioError
from tcplab.results.ethtool import format_ethtool_features
from tcplab.scenario.offload import Offload
from test_kernel_plan import plan_of, texts

BASE = {
    "name": "offload",
    "duration": "200ms",
    "hosts": {"a": {}, "b": {}},
    "links": [{"between": ["a", "b"], "rate": "10Gbit", "delay": "1ms"}],
    "flows": [{"from": "a", "to": "b"}],
}


def _nodes(sets=()):
    return {n["name"]: n for n in tcplab.load_scenario(BASE, list(sets)).to_core()["nodes"]}


def test_linux_defaults_every_offload_on():
    # ethtool -k on a veth, virtio or modern NIC: tso, gso and gro on
    for n in _nodes().values():
        assert n["gso_skbs"] is True and n["tso"] is True and n["gro"] is True


@pytest.mark.parametrize("value", ["off", "OFF", False])
def test_gro_off_reaches_the_engine(value):
    data = {**BASE, "hosts": {"a": {}, "b": {"offload": {"gro": value}}}}
    nodes = {n["name"]: n for n in tcplab.load_scenario(data).to_core()["nodes"]}
    assert "gro" not in nodes["b"] and nodes["a"]["gro"] is True


def test_tso_off_still_builds_gso_skbs():
    # Linux's TCP builds GSO skbs whatever ethtool says (sk_setup_caps()); tso off only moves
    # the cut into software GSO
    b = _nodes(["hosts.b.offload.tso=off", "hosts.b.offload.gso=off"])["b"]
    assert b["gso_skbs"] is True and "tso" not in b


@pytest.mark.parametrize(
    ("sets", "path"),
    [
        (["hosts.b.offload.gro=maybe"], "hosts.b.offload.gro"),
        (["hosts.b.offload.tso=perhaps"], "hosts.b.offload.tso"),
        (["hosts.b.offload.gso=2"], "hosts.b.offload.gso"),
    ],
)
def test_bad_offloads_are_refused_with_their_path(sets, path):
    with pytest.raises(ScenarioError) as info:
        tcplab.load_scenario(BASE, sets)
    assert path in str(info.value) and "on or off" in str(info.value)


def test_cli_error_is_one_line(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from tcplab.cli import main; main()",
            "check",
            "builtin:rr",
            "--set",
            "hosts.server.offload.lro=on",
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert "hosts.server.offload.lro" in lines[0]


def test_ethtool_k_text_has_ethtools_format():
    # ethtool netlink/features.c: "Features for DEV:", "name: on|off", " [fixed]" for a
    # feature that cannot change, sub-features indented by a tab.
    assert format_ethtool_features(Offload()).splitlines() == [
        "Features for eth0:",
        "tcp-segmentation-offload: on",
        "\ttx-tcp-segmentation: on",
        "\ttx-tcp6-segmentation: off [fixed]",
        "generic-segmentation-offload: on",
        "generic-receive-offload: on",
    ]
    off = format_ethtool_features(Offload(tso=False, gso=False, gro=False))
    assert "tcp-segmentation-offload: off\n\ttx-tcp-segmentation: off\n" in off
    assert "generic-segmentation-offload: off\n" in off and off.endswith("generic-receive-offload: off\n")


def test_run_directory_has_ethtool_k_per_host():
    # seed 000's hosts: tx-generic-segmentation and rx-gro off
    res = tcplab.run(tcplab.load_scenario(BASE, ["hosts.b.offload={tso: off, gso: off, gro: off}"]))
    files = res.stats_files()
    assert files["ethtool-k-a.txt"] == format_ethtool_features(Offload())
    assert files["ethtool-k-b.txt"] == format_ethtool_features(Offload(tso=False, gso=False, gro=False))


def test_kernel_mode_follows_the_hosts_gro_and_cuts_frames_at_every_device():
    _, plan = plan_of("builtin:cubic-100mbit-20ms", ["hosts.sender.offload.gro=off"])
    cmds = [c for c in texts(plan) if " ethtool -K " in c]
    on = [c for c in cmds if c.endswith("gro on")]
    # GRO on exactly the receiver's own device (the sender's is off here, routers' and
    # wires' always); tso/gso off everywhere, so the veths carry frames as a wire does
    assert len(on) == 1 and "-receiver " in on[0], on
    assert all(" tso off gso off gro " in c for c in cmds)
    assert all(c.endswith("gro off") for c in cmds if c not in on)
