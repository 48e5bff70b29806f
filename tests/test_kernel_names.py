"""The names kernel mode creates (tcplab.kernel.names): the prefix every command checks the
same way, and namespaces, devices and work files no scenario name can meet.

No namespaces are created here: the plan is pure, and the CLI tests stop before anything
would run (a bad prefix is refused first).
"""

from __future__ import annotations

import os

import pytest
from typer.testing import CliRunner

import tcplab
from tcplab.cli import app
from tcplab.kernel.errors import KernelError
from tcplab.kernel.options import KernelOptions
from tcplab.kernel.plan import make_plan
from test_kernel_plan import env

BAD_PREFIXES = ["../x", "a" * 40, "", "Tcplab", "a/b", "-x", "a-b"]


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


# -- item 3: one prefix check for validate, kernel run and kernel cleanup -------------------


@pytest.mark.parametrize("prefix", ["../x", "a" * 40])
def test_validate_kernel_run_and_cleanup_refuse_a_bad_prefix_alike(prefix, monkeypatch, patched_core, tmp_path):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    import tcplab.kernel.testbed as testbed

    def nothing_runs(*a, **k):
        raise AssertionError("a namespace command ran")

    monkeypatch.setattr(testbed, "list_netns", nothing_runs)
    lines = {}
    for name, args in {
        "validate": ["validate", "builtin:cubic-vs-bbr-lossy", "-o", str(tmp_path / "v"), "--prefix", prefix],
        "kernel run": ["kernel", "run", "builtin:cubic-vs-bbr-lossy", "-o", str(tmp_path / "r"), "--prefix", prefix],
        "kernel cleanup": ["kernel", "cleanup", "--prefix", prefix],
    }.items():
        r = invoke(*args)
        assert r.exit_code == 2, (name, r.output)
        assert "Traceback" not in r.output, name
        assert len(r.stderr.strip().splitlines()) == 1, (name, r.stderr)
        lines[name] = r.stderr.strip()
    assert len(set(lines.values())) == 1, lines
    assert (
        lines["validate"] == f"error: --prefix: {prefix!r}: expected 1 to 16 of a-z and 0-9 (the namespaces are P-NODE)"
    )
    assert patched_core.calls == []  # validate refused before simulating
    assert not (tmp_path / "v").exists() and not (tmp_path / "r").exists()


@pytest.mark.parametrize("prefix", BAD_PREFIXES)
def test_the_api_refuses_what_the_cli_refuses(prefix):
    from tcplab.kernel.names import check_prefix
    from tcplab.kernel.testbed import cleanup, cleanup_workdirs

    sc = tcplab.load_scenario("builtin:cubic-vs-bbr-lossy")
    for call in (
        lambda: check_prefix(prefix),
        lambda: make_plan(sc.to_core(), env(), KernelOptions(prefix=prefix)),
        lambda: cleanup(prefix),
        lambda: cleanup_workdirs(prefix),
    ):
        with pytest.raises(KernelError, match=r"prefix: .*: expected 1 to 16 of a-z and 0-9"):
            call()


@pytest.mark.parametrize("prefix", ["tcplab", "tlh5", "a", "x" * 16, "0a9"])
def test_good_prefixes_pass(prefix):
    from tcplab.kernel.names import check_prefix

    assert check_prefix(prefix) == prefix


# -- item 5: no scenario name meets kernel mode's own ---------------------------------------


def hosts_named_like_wires() -> dict:
    """Hosts w0 and w1 and a router probe1, each link entry delayed (a wire namespace each)."""
    return {
        "name": "wires",
        "duration": "2s",
        "hosts": {"w0": {}, "w1": {}},
        "routers": [f"probe{os.getpid()}"],
        "links": [
            {"between": ["w0", f"probe{os.getpid()}"], "rate": "100Mbit", "delay": "1ms"},
            {"between": [f"probe{os.getpid()}", "w1"], "rate": "10Mbit", "delay": "2ms", "loss": "1%"},
        ],
        "flows": [{"from": "w0", "to": "w1"}],
    }


def test_hosts_named_like_wires_get_namespaces_of_their_own():
    from tcplab.kernel.names import probe_ns, wire_ns

    sc = tcplab.Scenario.model_validate(hosts_named_like_wires())
    plan = make_plan(sc.to_core(), env(), KernelOptions(prefix="tcplab"))
    assert [w.entry for w in plan.wires] == [0, 1]
    assert len(set(plan.namespaces)) == len(plan.namespaces) == 5
    internal = {wire_ns("tcplab", 0), wire_ns("tcplab", 1), probe_ns("tcplab", os.getpid())}
    assert {n.ns for n in plan.nodes} == {"tcplab-w0", "tcplab-w1", f"tcplab-probe{os.getpid()}"}
    assert not internal & {n.ns for n in plan.nodes}
    assert {w.ns for w in plan.wires} == {wire_ns("tcplab", 0), wire_ns("tcplab", 1)}


@pytest.mark.parametrize("node", ["w0", "w12", "probe1", "probe4242", "a-b", "..", "_", "-w0"])
def test_no_node_name_is_an_internal_name_and_no_prefix_meets_another(node):
    # every name a scenario allows (letters, digits, '_', '.', '-') against every name
    # kernel mode makes for itself, under this prefix or another
    from tcplab.kernel.names import is_ours, node_ns, probe_ns, wire_ns
    from tcplab.scenario.fields import NAME_PATTERN

    assert NAME_PATTERN.match(node)
    for prefix in ("tcplab", "a", "ab"):
        own = {wire_ns(prefix, k) for k in range(20)} | {probe_ns(prefix, p) for p in (1, 12, 4242)}
        assert node_ns(prefix, node) not in own
        assert is_ours(prefix, node_ns(prefix, node))
    # another prefix's names are never this one's: `kernel cleanup --prefix a` leaves `ab`'s
    assert not is_ours("a", node_ns("ab", node)) and not is_ours("a", wire_ns("ab", 0))
    assert node_ns("a", node) != node_ns("ab", node[1:] or "x")


def test_device_names_fit_ifnamsiz():
    # the longest ethK a plan can make (every link entry on one node), and the wire's own
    from tcplab.kernel.plan import MAX_LINK_ENTRIES

    IFNAMSIZ = 16  # include/uapi/linux/if.h, with the terminating NUL
    sc = tcplab.Scenario.model_validate(hosts_named_like_wires())
    plan = make_plan(sc.to_core(), env(), KernelOptions(prefix="tcplab"))
    devices = {v.dev for v in plan.veths} | {v.peer_dev for v in plan.veths}
    devices |= {t.name for w in plan.wires for t in w.tuns}
    assert devices == {"eth0", "eth1", "wa", "wb", "tab", "tba"}
    assert len(f"eth{2 * MAX_LINK_ENTRIES}") < IFNAMSIZ


def test_a_node_name_too_long_for_a_namespace_is_refused_naming_the_field():
    from tcplab.kernel.errors import KernelUnsupported
    from tcplab.kernel.names import NAME_MAX, max_node_name

    data = hosts_named_like_wires()
    prefix = "x" * 16
    longest = max_node_name(prefix)
    assert len(f"{prefix}-{'h' * longest}") <= NAME_MAX and len(f"ss-samples-{'h' * longest}.txt") <= NAME_MAX
    for n, ok in ((longest, True), (longest + 1, False)):
        name = "h" * n
        d = {**data, "hosts": {name: {}, "w1": {}}}
        d["links"] = [dict(link, between=[name if e == "w0" else e for e in link["between"]]) for link in data["links"]]
        d["flows"] = [{"from": name, "to": "w1"}]
        config = tcplab.Scenario.model_validate(d).to_core()
        if ok:
            make_plan(config, env(), KernelOptions(prefix=prefix))
            continue
        with pytest.raises(KernelUnsupported) as e:
            make_plan(config, env(), KernelOptions(prefix=prefix))
        assert str(e.value) == (
            f"kernel: hosts.{name}: a name of {n} characters: expected at most {longest} in kernel mode "
            f"(its namespace {prefix}-NAME and files are file names, at most {NAME_MAX} bytes)"
        )


def test_each_agents_files_are_its_own(tmp_path):
    # a host named spec-a beside a host a: a's SPEC is not spec-a's result, and collect reads
    # both results (it skipped spec-a's as a SPEC)
    import json
    import types

    from tcplab.kernel import measure
    from tcplab.kernel.names import agent_file, agent_stderr_file, spec_file, ss_samples_file

    nodes = ["a", "spec-a", "agent-a", "a.json"]
    files = [f(n) for n in nodes for f in (spec_file, agent_file, agent_stderr_file, ss_samples_file)]
    files += [agent_file(n) + ".tmp" for n in nodes]
    assert len(set(files)) == len(files)
    for n in nodes:
        (tmp_path / spec_file(n)).write_text(json.dumps({"node": n, "listen": []}))
        (tmp_path / agent_file(n)).write_text(json.dumps({"node": n, "endpoints": [], "errors": []}))
    plan = types.SimpleNamespace(nodes=[], wires=[], duration_ns=10**9, sample_interval_ns=10**8)
    m = measure.collect(plan, tmp_path, runner=lambda argv: "")
    assert {n: doc["node"] for n, doc in m.agents.items()} == {n: n for n in nodes}


@pytest.mark.kernel
def test_hosts_named_like_wires_come_up_on_the_kernel(tmp_path):
    # the case on the real kernel: a host named w0 (and w1, and a router named like
    # the probe's namespace) beside the wires of entries 0 and 1 ("netns ... File exists")
    import subprocess

    from tcplab.kernel.env import probe
    from tcplab.kernel.names import is_ours
    from tcplab.kernel.testbed import Testbed, cleanup, list_netns

    if os.geteuid() != 0:
        pytest.skip("kernel tests need root (network namespaces)")
    kernel = probe("tlk5n")
    if not kernel.delayline:
        pytest.skip("the delay line tcplab-delayline is not built (cargo build --release -p tcplab-delayline)")
    if not kernel.tools.get("nft"):
        pytest.skip("nft (nftables) is not installed: the scenario's loss needs it")
    cleanup("tlk5n")
    sc = tcplab.Scenario.model_validate(hosts_named_like_wires())
    plan = make_plan(sc.to_core(), kernel, KernelOptions(prefix="tlk5n"))
    try:
        with Testbed(plan, tmp_path):
            assert sorted(ns for ns in list_netns() if is_ours("tlk5n", ns)) == sorted(plan.namespaces)
            # w0 reaches w1 across both wires (node addresses 10.0.0.1 and 10.0.0.2; 1 % loss:
            # ping exits 0 when any of its three echoes is answered)
            if kernel.tools.get("ping"):
                done = subprocess.run(
                    [
                        "ip",
                        "netns",
                        "exec",
                        "tlk5n-w0",
                        "ping",
                        "-c",
                        "3",
                        "-i",
                        "0.2",
                        "-W",
                        "5",
                        "-I",
                        "10.0.0.1",
                        "10.0.0.2",
                    ],
                    capture_output=True,
                    text=True,
                    timeout=30,
                )
                assert done.returncode == 0, done.stdout + done.stderr
        assert not [ns for ns in list_netns() if is_ours("tlk5n", ns)]
    finally:
        cleanup("tlk5n")
