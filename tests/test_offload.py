"""A host's ``offload: {gro: on|off}`` (``ethtool -K``): parsed, passed to the engine as the
node's ``gro``, printed as ``ethtool -k`` text in the run directory, and followed by kernel
mode's ``ethtool -K``. ``tso`` reaches the engine; ``gso`` is refused (not modelled apart from TSO); the default is off
(docs/kernel-pin.md, "GRO at the receiver")."""

from __future__ import annotations

import subprocess
import sys

import pytest

import tcplab
from tcplab.errors import ScenarioError
from tcplab.results.ethtool import format_ethtool_features
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


def test_default_is_off_and_leaves_the_engine_config_as_it_was():
    assert all("gro" not in n for n in _nodes().values())


@pytest.mark.parametrize("value", ["on", "ON", True])
def test_gro_on_reaches_the_engine(value):
    data = {**BASE, "hosts": {"a": {}, "b": {"offload": {"gro": value}}}}
    nodes = {n["name"]: n for n in tcplab.load_scenario(data).to_core()["nodes"]}
    assert nodes["b"]["gro"] is True and "gro" not in nodes["a"]


def test_gro_off_is_the_default():
    assert "gro" not in _nodes(["hosts.b.offload.gro=off"])["b"]


@pytest.mark.parametrize(
    ("sets", "path", "expected"),
    [
        (["hosts.b.offload.gro=maybe"], "hosts.b.offload.gro", "on or off"),
        (["hosts.b.offload.tso=perhaps"], "hosts.b.offload.tso", "on or off"),
        (["hosts.b.offload.gso=off"], "hosts.b.offload.gso", "not modelled yet"),
    ],
)
def test_bad_offloads_are_refused_with_their_path(sets, path, expected):
    with pytest.raises(ScenarioError) as info:
        tcplab.load_scenario(BASE, sets)
    assert path in str(info.value) and expected in str(info.value)


def test_cli_error_is_one_line(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from tcplab.cli import main; main()",
            "check",
            "builtin:rr",
            "--set",
            "hosts.server.offload.gso=on",
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert "hosts.server.offload.gso" in lines[0] and "not modelled yet" in lines[0]


def test_ethtool_k_text_has_ethtools_format():
    # ethtool netlink/features.c: "Features for DEV:", "name: on|off", " [fixed]" for a
    # feature that cannot change, sub-features indented by a tab.
    text = format_ethtool_features(True)
    assert text.splitlines() == [
        "Features for eth0:",
        "tcp-segmentation-offload: off",
        "\ttx-tcp-segmentation: off",
        "\ttx-tcp6-segmentation: off [fixed]",
        "generic-segmentation-offload: off [fixed]",
        "generic-receive-offload: on",
    ]
    assert format_ethtool_features(False).endswith("generic-receive-offload: off\n")
    assert "tcp-segmentation-offload: on\n\ttx-tcp-segmentation: on\n" in format_ethtool_features(False, tso=True)


def test_tso_on_reaches_the_engine_and_ethtool_k():
    # offload: {tso: on} (ethtool -K DEV tso on): the host's node in the engine config says
    # tso, its ethtool -k text says on, and the run delivers its data (MSS frames beyond the
    # first hop: the engine's host_tso tests).
    nodes = _nodes(["hosts.a.offload.tso=on"])
    assert nodes["a"]["tso"] is True and "tso" not in nodes["b"]
    sc = tcplab.load_scenario(BASE, ["hosts.a.offload.tso=on"])
    res = tcplab.run(sc)
    files = res.stats_files()
    assert "tcp-segmentation-offload: on" in files["ethtool-k-a.txt"]
    assert "tcp-segmentation-offload: off" in files["ethtool-k-b.txt"]


def test_run_directory_has_ethtool_k_per_host(tmp_path):
    res = tcplab.run(tcplab.load_scenario(BASE, ["hosts.b.offload.gro=on"]))
    files = res.stats_files()
    assert files["ethtool-k-a.txt"].endswith("generic-receive-offload: off\n")
    assert files["ethtool-k-b.txt"].endswith("generic-receive-offload: on\n")


def test_kernel_mode_follows_the_hosts_gro():
    _, plan = plan_of("builtin:cubic-100mbit-20ms", ["hosts.receiver.offload.gro=on"])
    cmds = [c for c in texts(plan) if " ethtool -K " in c]
    on = [c for c in cmds if c.endswith("gro on")]
    # exactly the receiver's own device; every other device keeps tso/gso/gro off
    assert len(on) == 1 and "-receiver " in on[0], on
    assert all(c.endswith("tso off gso off gro off") for c in cmds if c not in on)


def test_kernel_mode_follows_the_hosts_tso():
    _, plan = plan_of("builtin:cubic-100mbit-20ms", ["hosts.sender.offload.tso=on"])
    cmds = [c for c in texts(plan) if " ethtool -K " in c]
    on = [c for c in cmds if "tso on gso on" in c]
    # exactly the sender's own device; every other device keeps tso/gso/gro off
    assert len(on) == 1 and "-sender " in on[0], on
    assert on[0].endswith("tso on gso on gro off")
    assert all(c.endswith("tso off gso off gro off") for c in cmds if c not in on)
