"""What kernel mode needs of the machine, checked at the start, one line per thing missing
(issue 23: the README's kernel-mode requirements, said by tcplab too). A fake probe
(tcplab.kernel.env.KernelEnv with the tools and qdiscs we choose); no root needed.
"""

from __future__ import annotations

import pytest

from tcplab.kernel.env import ALWAYS_QDISCS, KernelEnv
from tcplab.kernel.errors import KernelUnsupported
from tcplab.kernel.needs import MachineLacks, check_needs, machine_needs, missing, needed_qdiscs
from tcplab.loader import load_scenario

ALL_TOOLS = {t: f"/usr/sbin/{t}" for t in ("ip", "tc", "ss", "nstat", "nft", "ethtool", "ping")}


def env(*, qdiscs=("tbf",), tools=ALL_TOOLS, delayline="/opt/tcplab-delayline", cpus=2) -> KernelEnv:
    return KernelEnv(
        release="6.18-test",
        hz=250,
        hz_source="test",
        cc_available=["cubic", "bbr"],
        cc_allowed=["cubic"],
        cubic_params={},
        qdiscs=[*ALWAYS_QDISCS, *qdiscs],
        qdiscs_source="test",
        tools=dict(tools),
        delayline=delayline,
        cpus=cpus,
    )


def lossy_delayed_config() -> dict:
    # 100 ms RTT with 1 % loss on the bottleneck: a wire that delays and drops
    return load_scenario("builtin:cubic-vs-bbr-lossy").to_core()


def test_a_ready_machine_lacks_nothing():
    assert missing(env(), lossy_delayed_config(), euid=0) == []
    check_needs(env(), lossy_delayed_config(), euid=0)


def test_everything_missing_is_listed_at_once_one_line_each():
    tools = {t: p for t, p in ALL_TOOLS.items() if t not in ("tc", "nft")}
    lines = missing(env(qdiscs=(), tools=tools, delayline=None), lossy_delayed_config(), euid=0)
    assert len(lines) == len(set(lines)) and all("\n" not in line for line in lines)
    text = "\n".join(lines)
    assert "kernel: missing: tool tc: not found (Debian: apt-get install iproute2)" in lines
    assert "kernel: missing: tool nft (random loss): not found (Debian: apt-get install nftables)" in lines
    # the rate shaper: tbf, which this fake kernel lacks
    assert any(line.startswith("kernel: missing: qdisc tbf: this kernel lacks sch_tbf (CONFIG_NET_SCH_TBF)")
               for line in lines)  # fmt: skip
    # no netem here: the delays need the delay line, which is not there
    assert "kernel: missing: delay line tcplab-delayline:" in text
    with pytest.raises(MachineLacks) as e:
        check_needs(env(qdiscs=(), tools=tools, delayline=None), lossy_delayed_config(), euid=0)
    assert e.value.lines == lines
    # kernel mode cannot build it here: the exit status of what it cannot build (2)
    assert isinstance(e.value, KernelUnsupported)


def test_netem_makes_the_delay_line_unneeded_and_its_absence_is_a_note():
    with_netem = machine_needs(env(qdiscs=("tbf", "netem"), delayline=None), lossy_delayed_config(), euid=0)
    assert not any(n.what.startswith("delay line") for n in with_netem)
    without = machine_needs(env(), lossy_delayed_config(), euid=0)
    netem = next(n for n in without if n.what == "qdisc netem")
    assert not netem.ok and not netem.required and "delay line" in netem.detail


def test_a_scenario_without_loss_or_delay_needs_no_nft_nor_delay_line():
    config = load_scenario("builtin:cubic-vs-bbr-lossy", ["links.0.loss=0", "links.1.loss=0"]).to_core()
    for link in config["links"]:
        link["delay_ns"] = 0
        link["loss"] = None
    tools = {t: p for t, p in ALL_TOOLS.items() if t != "nft"}
    assert missing(env(tools=tools, delayline=None), config, euid=0) == []


def test_the_qdisc_a_link_asks_for():
    config = lossy_delayed_config()
    config["links"][0]["queue"] = {"kind": "fq_codel"}
    assert needed_qdiscs(config) == {"tbf": "links.*.rate (the rate shaper)", "fq_codel": "links.0.queue"}
    lines = missing(env(), config, euid=0)
    assert lines == [
        "kernel: missing: qdisc fq_codel: this kernel lacks sch_fq_codel (CONFIG_NET_SCH_FQ_CODEL): links.0.queue"
    ]


def test_not_root_and_one_cpu():
    needs = machine_needs(env(cpus=1), lossy_delayed_config(), euid=1000)
    root = next(n for n in needs if n.what == "root")
    assert not root.ok and root.required
    cpus = next(n for n in needs if n.what == "CPUs")
    assert not cpus.ok and not cpus.required  # a note: a 1-CPU machine runs, late


def test_cli_lists_every_missing_thing(tmp_path, monkeypatch):
    import os

    from typer.testing import CliRunner

    import tcplab.kernel.env as kenv
    from tcplab.cli import app

    tools = {t: p for t, p in ALL_TOOLS.items() if t not in ("tc", "ethtool")}
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(kenv, "probe", lambda prefix="tcplab": env(tools=tools))
    r = CliRunner().invoke(app, ["kernel", "run", "builtin:cubic-vs-bbr-lossy", "-o", str(tmp_path / "k")])
    assert r.exit_code == 2
    assert r.stderr.strip().splitlines() == [
        "error: kernel: missing: tool tc: not found (Debian: apt-get install iproute2)",
        "error: kernel: missing: tool ethtool: not found (Debian: apt-get install ethtool)",
    ]
    assert not (tmp_path / "k").exists()


def test_validate_lists_them_before_simulating(tmp_path, monkeypatch, patched_core):
    import os

    from typer.testing import CliRunner

    import tcplab.kernel.env as kenv
    from tcplab.cli import app

    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(kenv, "probe", lambda prefix="tcplab": env(qdiscs=(), delayline=None))
    r = CliRunner().invoke(app, ["validate", "builtin:cubic-vs-bbr-lossy", "-o", str(tmp_path / "v")])
    assert r.exit_code == 2
    lines = r.stderr.strip().splitlines()
    assert lines[0].startswith("error: kernel: missing: qdisc tbf: this kernel lacks sch_tbf")
    assert lines[1].startswith("error: kernel: missing: delay line tcplab-delayline:")
    assert len(lines) == 2 and patched_core.calls == []  # nothing simulated
    assert not (tmp_path / "v").exists()
