"""Every kind of bad scenario gives one line naming the field path, the value and what was expected."""

from __future__ import annotations

import re

import pytest
import yaml
from typer.testing import CliRunner

import tcplab
from conftest import BASE_SCENARIO
from tcplab.cli import app
from tcplab.errors import ScenarioError


def doc(snippet: str) -> str:
    """The base scenario with the top-level keys of ``snippet`` (YAML) replaced or added."""
    data = dict(BASE_SCENARIO)
    patch = yaml.safe_load(snippet)
    for key, value in patch.items():
        if value == "__delete__":
            data.pop(key, None)
        else:
            data[key] = value
    return yaml.safe_dump(data, sort_keys=False)


LINK2 = "{between: [r1, client], rate: 10Mbit, delay: 5ms}"

# (id, YAML snippet replacing top-level keys, fragments that must all appear in the line)
CASES = [
    (
        "rate-typo",
        f"links: [{{between: [server, r1], rate: 5Mbt}}, {LINK2}]",
        ['links.0.rate: "5Mbt" is not a rate', "expected a number with a unit such as 5Mbit, 100Kbit, 1Gbit"],
    ),
    (
        "rate-zero",
        f"links: [{{between: [server, r1], rate: 0Mbit}}, {LINK2}]",
        ['links.0.rate: "0Mbit" is zero', "expected a positive rate"],
    ),
    (
        "rate-negative",
        f"links: [{{between: [server, r1], rate: -5Mbit}}, {LINK2}]",
        ['links.0.rate: "-5Mbit" is negative'],
    ),
    (
        "rate-missing",
        f"links: [{{between: [server, r1]}}, {LINK2}]",
        ["links.0.rate: missing; expected a rate such as 5Mbit"],
    ),
    (
        "delay-no-unit",
        f"links: [{{between: [server, r1], rate: 1Mbit, delay: 5}}, {LINK2}]",
        ["links.0.delay: 5 has no unit", "expected a number with a unit such as 50ms"],
    ),
    (
        "unknown-host",
        "flows: [{from: server, to: clinet}]",
        ['flows.0.to: unknown host "clinet"', "expected one of: client, server"],
    ),
    (
        "flow-from-router",
        "flows: [{from: r1, to: client}]",
        ['flows.0.from: "r1" is a router, not a host', "expected one of: client, server"],
    ),
    ("flow-to-itself", "flows: [{from: server, to: server}]", ['flows.0.to: flow from "server" to itself']),
    (
        "second-flow",
        "flows: [{from: server, to: client}, {from: server, to: clinet}]",
        ['flows.1.to: unknown host "clinet"'],
    ),
    (
        "unreachable",
        "links: [{between: [server, r1], rate: 1Mbit}]",
        ['flows.0: no route from "server" to "client"', "expected links that connect the two hosts"],
    ),
    (
        "top-typo",
        "durration: 10s",
        [
            'durration: unknown key "durration" (did you mean "duration"?)',
            "expected one of: name, description, seed, duration",
        ],
    ),
    (
        "flow-typo",
        "flows: [{from: server, to: client, stat: 1s}]",
        ['flows.0.stat: unknown key "stat" (did you mean "start"?)'],
    ),
    ("missing-name", "name: __delete__", ["name: missing; expected a scenario name"]),
    ("missing-duration", "duration: __delete__", ["duration: missing; expected a duration such as 60s"]),
    ("bad-name", "name: my scenario", ['name: "my scenario" is not a valid name']),
    ("duration-zero", "duration: 0s", ['duration: "0s" is zero']),
    ("sample-too-long", "sample_interval: 20s", ["sample_interval: 20s is longer than the duration (10s)"]),
    ("seed-negative", "seed: -1", ["seed: -1 is out of range", "expected an integer of at least 0"]),
    (
        "loss-too-big",
        f"links: [{{between: [server, r1], rate: 1Mbit, loss: 150%}}, {LINK2}]",
        ['links.0.loss: "150%" is more than 100%'],
    ),
    (
        "loss-bare-number",
        f"links: [{{between: [server, r1], rate: 1Mbit, loss: 101}}, {LINK2}]",
        ["links.0.loss: 101 is more than 100%"],
    ),
    (
        "loss-negative",
        f"links: [{{between: [server, r1], rate: 1Mbit, loss: -1%}}, {LINK2}]",
        ['links.0.loss: "-1%" is negative'],
    ),
    (
        "loss-model-unknown",
        f"links: [{{between: [server, r1], rate: 1Mbit, loss: {{burst: 1}}}}, {LINK2}]",
        ['links.0.loss.burst: unknown loss model "burst"', "expected one of: random, gilbert_elliott, drop"],
    ),
    (
        "ge-key",
        f"links: [{{between: [server, r1], rate: 1Mbit, loss: {{gilbert_elliott: {{p: 1%, q: 2%}}}}}}, {LINK2}]",
        ['links.0.loss.gilbert_elliott.q: unknown key "q"'],
    ),
    (
        "ge-missing-p",
        f"links: [{{between: [server, r1], rate: 1Mbit, loss: {{gilbert_elliott: {{r: 2%}}}}}}, {LINK2}]",
        ["links.0.loss.gilbert_elliott.p: missing"],
    ),
    (
        "ge-range",
        f"links: [{{between: [server, r1], rate: 1Mbit, loss: {{gilbert_elliott: {{p: 1%, r: 130%}}}}}}, {LINK2}]",
        ['links.0.loss.gilbert_elliott.r: "130%" is more than 100%'],
    ),
    (
        "drop-list",
        f"links: [{{between: [server, r1], rate: 1Mbit, loss: {{drop: [5, -3]}}}}, {LINK2}]",
        ["links.0.loss.drop.1: -3 is out of range"],
    ),
    (
        "reorder-missing-delay",
        f"links: [{{between: [server, r1], rate: 1Mbit, reorder: {{probability: 1%}}}}, {LINK2}]",
        ["links.0.reorder.delay: missing"],
    ),
    (
        "queue-qdisc",
        f"links: [{{between: [server, r1], rate: 1Mbit, queue: {{qdisc: sfq}}}}, {LINK2}]",
        ['links.0.queue.qdisc: unknown qdisc "sfq"', "expected one of: pfifo"],
    ),
    (
        "pfifo-bytes",
        f"links: [{{between: [server, r1], rate: 1Mbit, queue: {{limit: 150KB}}}}, {LINK2}]",
        ['links.0.queue.limit: "150KB" is not a packet count', "use qdisc: bfifo"],
    ),
    (
        "pfifo-zero",
        f"links: [{{between: [server, r1], rate: 1Mbit, queue: {{limit: 0}}}}, {LINK2}]",
        ["links.0.queue.limit: 0 is not a packet count of at least 1"],
    ),
    (
        "bfifo-bits",
        f"links: [{{between: [server, r1], rate: 1Mbit, queue: {{qdisc: bfifo, limit: 10Kbit}}}}, {LINK2}]",
        ['links.0.queue.limit: "10Kbit" is not a size'],
    ),
    (
        "bdp-negative",
        f"links: [{{between: [server, r1], rate: 1Mbit, queue: {{limit: -1bdp}}}}, {LINK2}]",
        ['links.0.queue.limit: "-1bdp" is not positive'],
    ),
    (
        "reverse-typo",
        f"links: [{{between: [server, r1], rate: 1Mbit, reverse: {{lose: 0}}}}, {LINK2}]",
        ['links.0.reverse.lose: unknown key "lose" (did you mean "loss"?)'],
    ),
    (
        "link-self",
        f"links: [{{between: [server, server], rate: 1Mbit}}, {LINK2}]",
        ['links.0.between: link from "server" to itself', "expected two different node names"],
    ),
    (
        "link-unknown-node",
        f"links: [{{between: [server, r9], rate: 1Mbit}}, {LINK2}]",
        ['links.0.between.1: unknown node "r9"', "expected one of: client, r1, server"],
    ),
    (
        "link-three-nodes",
        f"links: [{{between: [server, r1, client], rate: 1Mbit}}, {LINK2}]",
        ["links.0.between: 3 nodes given", "expected two node names"],
    ),
    ("router-dup-host", "routers: [r1, server]", ['routers.1: duplicate node name "server" (already a host)']),
    ("router-dup", "routers: [r1, r1]", ['routers.1: duplicate node name "r1" (already a router)']),
    (
        "count-zero",
        "flows: [{from: server, to: client, count: 0}]",
        ["flows.0.count: 0 is out of range", "expected an integer from 1 to"],
    ),
    ("count-text", "flows: [{from: server, to: client, count: two}]", ['flows.0.count: "two" is not an integer']),
    (
        "cc-unknown",
        "flows: [{from: server, to: client, cc: vegas}]",
        ['flows.0.cc: unknown congestion control "vegas"', "expected one of: reno, cubic, bbr"],
    ),
    (
        "sysctl-cc",
        "hosts: {server: {sysctl: {net.ipv4.tcp_congestion_control: bbr2}}, client: {}}",
        ['hosts.server.sysctl.net.ipv4.tcp_congestion_control: unknown congestion control "bbr2"'],
    ),
    (
        "sysctl-typo",
        "hosts: {server: {sysctl: {tcp_congestion_contol: bbr}}, client: {}}",
        [
            'hosts.server.sysctl.tcp_congestion_contol: unknown key "tcp_congestion_contol" (did you mean "tcp_congestion_control"?)'
        ],
    ),
    (
        "sysctl-bool",
        "hosts: {server: {sysctl: {tcp_slow_start_after_idle: 2}}, client: {}}",
        ["hosts.server.sysctl.tcp_slow_start_after_idle: 2 is not a boolean"],
    ),
    (
        "rmem-two",
        "hosts: {server: {}, client: {sysctl: {tcp_rmem: '4096 87380'}}}",
        ['hosts.client.sysctl.tcp_rmem: "4096 87380" has 2 values, not 3'],
    ),
    (
        "rmem-order",
        "hosts: {server: {}, client: {sysctl: {tcp_rmem: [4096, 1MB, 64KB]}}}",
        ["hosts.client.sysctl.tcp_rmem: a list is not ordered min <= default <= max"],
    ),
    (
        "host-key",
        "hosts: {server: {qdisk: fq}, client: {}}",
        ['hosts.server.qdisk: unknown key "qdisk" (did you mean "qdisc"?)', "expected one of: sysctl"],
    ),
    ("host-name", "hosts: {'my server': {}, client: {}}", ['hosts.my server: "my server" is not a valid node name']),
    ("hosts-list", "hosts: [server, client]", ["hosts: a list is not a mapping"]),
    ("flows-mapping", "flows: {from: server, to: client}", ["flows: a mapping is not a list"]),
    ("flows-empty", "flows: []", ["flows: no flows", "expected at least one flow"]),
    (
        "start-late",
        "flows: [{from: server, to: client, start: 20s}]",
        ["flows.0.start: 20s is not before the end of the run (10s)"],
    ),
    (
        "stop-early",
        "flows: [{from: server, to: client, start: 2s, stop: 1s}]",
        ["flows.0.stop: 1s is not after start (2s)"],
    ),
    (
        "app-unknown",
        "flows: [{from: server, to: client, app: rrr}]",
        ['flows.0.app: unknown app "rrr" (did you mean "rr"?)', "expected bulk, maerts, or a mapping"],
    ),
    (
        "app-bytes-zero",
        "flows: [{from: server, to: client, app: {bulk: {bytes: 0}}}]",
        ["flows.0.app.bulk.bytes: 0 is zero"],
    ),
    (
        "dup-flow-names",
        "flows: [{from: server, to: client, name: a}, {from: server, to: client, name: a}]",
        ['flows.1.name: duplicate flow name "a" (also flows.0)'],
    ),
    (
        "mss-range",
        "flows: [{from: server, to: client, tcp: {mss: 10}}]",
        ["flows.0.tcp.mss: 10 bytes is out of range", "expected an MSS from 88 to 65000"],
    ),
    ("tcp-key", "flows: [{from: server, to: client, tcp: {cwnd: 10}}]", ['flows.0.tcp.cwnd: unknown key "cwnd"']),
    (
        "beta-range",
        "flows: [{from: server, to: client, cc_params: {beta: 2000}}]",
        ["flows.0.cc_params.beta: 2000 is out of range", "expected an integer from 1 to 1023"],
    ),
    (
        "rto-min",
        "flows: [{from: server, to: client, tcp: {rto_min: 1500us}}]",
        ["flows.0.tcp.rto_min: 1500us is not a whole number of milliseconds"],
    ),
]


@pytest.mark.parametrize(("snippet", "fragments"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_scenario_message(write_yaml, snippet, fragments):
    path = write_yaml(doc(snippet))
    with pytest.raises(ScenarioError) as info:
        tcplab.load_scenario(path)
    line = str(info.value)
    assert "\n" not in line
    # file:LINE: path: ... (a top-level key that is missing is written nowhere: no line)
    line_no = "" if snippet.endswith("__delete__") else r":\d+"
    assert re.match(rf"{re.escape(str(path))}{line_no}: ", line), line
    for fragment in fragments:
        assert fragment in line


def test_error_attributes(write_yaml):
    path = write_yaml(doc(f"links: [{{between: [server, r1], rate: 5Mbt}}, {LINK2}]"))
    with pytest.raises(ScenarioError) as info:
        tcplab.load_scenario(path)
    e = info.value
    assert e.file == str(path)
    assert e.path == "links.0.rate"
    assert e.value == "5Mbt"
    assert e.expected.startswith("a number with a unit")


def test_several_errors_are_all_reported(write_yaml):
    path = write_yaml(doc("flows: [{from: server, to: clinet}, {from: r1, to: client}]"))
    with pytest.raises(ScenarioError) as info:
        tcplab.load_scenario(path)
    paths = [e.path for e in info.value.errors]
    assert paths == ["flows.0.to", "flows.1.from"]


FILE_CASES = [
    ("yaml-syntax", "name: t\nduration: [10s\n", ["line 3, column 1:", "expected valid YAML"]),
    ("yaml-tab", "name: t\n\tduration: 10s\n", ["line 2", "expected valid YAML"]),
    (
        "duplicate-key",
        "name: t\nhosts:\n  a: {}\n  a: {}\n",
        ['line 4, column 3: duplicate key "a" (the key "a" first given on line 3)'],
    ),
    ("empty", "", ["the file is empty", "expected a scenario mapping"]),
    ("only-comment", "# nothing\n", ["the file is empty"]),
    ("top-list", "- name: t\n", ["the top level is a list", "expected a mapping with keys such as name, duration"]),
    ("top-scalar", "hello\n", ['the top level is "hello"']),
]


@pytest.mark.parametrize(("text", "fragments"), [c[1:] for c in FILE_CASES], ids=[c[0] for c in FILE_CASES])
def test_bad_file_message(write_yaml, text, fragments):
    path = write_yaml(text)
    with pytest.raises(ScenarioError) as info:
        tcplab.load_scenario(path)
    line = str(info.value)
    assert "\n" not in line
    assert line.startswith(f"{path}: ")
    for fragment in fragments:
        assert fragment in line


def test_missing_file(tmp_path):
    with pytest.raises(ScenarioError) as info:
        tcplab.load_scenario(tmp_path / "nope.yaml")
    assert "nope.yaml: no such file or built-in scenario" in str(info.value)
    assert "cubic-vs-bbr-lossy" in str(info.value)


def test_directory_is_not_a_scenario(tmp_path):
    with pytest.raises(ScenarioError, match="is a directory"):
        tcplab.load_scenario(tmp_path)


def test_unknown_builtin():
    with pytest.raises(
        ScenarioError, match=r'builtin:nope: unknown built-in scenario "nope"; expected one of: .*cubic-vs-bbr-lossy'
    ):
        tcplab.load_scenario("builtin:nope")


# -- the same through the CLI: exit 2, one line per error, no traceback, no output -----------

CLI_CASES = [
    c
    for c in CASES
    if c[0]
    in {
        "rate-typo",
        "unknown-host",
        "unreachable",
        "top-typo",
        "sample-too-long",
        "count-zero",
        "cc-unknown",
        "router-dup-host",
    }
]


@pytest.mark.parametrize(("snippet", "fragments"), [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES])
def test_cli_user_error_exit_2(write_yaml, tmp_path, patched_core, snippet, fragments):
    path = write_yaml(doc(snippet))
    out = tmp_path / "out" / "run"
    result = CliRunner().invoke(app, ["run", str(path), "-o", str(out)])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert re.match(rf"error: {re.escape(str(path))}:\d+: ", lines[0]), lines[0]
    for fragment in fragments:
        assert fragment in lines[0]
    assert "Traceback" not in result.output
    assert result.stdout == ""
    assert not (tmp_path / "out").exists()
    assert patched_core.calls == []  # nothing ran


@pytest.mark.parametrize(("text", "fragments"), [c[1:] for c in FILE_CASES], ids=[c[0] for c in FILE_CASES])
def test_cli_bad_file_exit_2(write_yaml, tmp_path, patched_core, text, fragments):
    path = write_yaml(text)
    result = CliRunner().invoke(app, ["run", str(path), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ")
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_cli_missing_file_exit_2(tmp_path, patched_core):
    result = CliRunner().invoke(app, ["run", str(tmp_path / "nope.yaml"), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "no such file or built-in scenario" in result.stderr
    assert not (tmp_path / "out").exists()


def test_every_unreachable_flow_is_reported(write_yaml):
    text = doc(
        "hosts: {server: {}, client: {}, lonely: {}, other: {}}\n"
        "flows: [{from: server, to: lonely, start: 20s}, {from: other, to: client}]"
    )
    with pytest.raises(ScenarioError) as info:
        tcplab.load_scenario(write_yaml(text))
    lines = [e.line() for e in info.value.errors]
    assert [e.path for e in info.value.errors] == ["flows.0", "flows.0.start", "flows.1"]  # file order
    assert 'no route from "server" to "lonely"' in lines[0]
    assert 'no route from "other" to "client"' in lines[2]


# -- every problem, each with its line (issue 7, 3.2) -------------------------------------

MULTI = """\
name: t
duration: 10s
durration: 5s
hosts: {server: {}, client: {}}
routers: [r1]
links:
  - between: [server, r1]
    rate: 5Mbitt
    delay: 5
  - between: [r1, client]
    rate: 10Mbit
    queue: {qdisc: pfifo, limit: lots}
flows:
  - {from: server, to: client, stat: 1s}
"""


def test_every_problem_is_reported_with_its_line(write_yaml):
    path = write_yaml(MULTI)
    with pytest.raises(ScenarioError) as info:
        tcplab.load_scenario(path)
    got = [(e.lineno, e.path) for e in info.value.errors]
    # The lines where each bad field is written in MULTI above, in file order.
    assert got == [
        (3, "durration"),
        (8, "links.0.rate"),
        (9, "links.0.delay"),
        (12, "links.1.queue.limit"),
        (14, "flows.0.stat"),
    ]
    for e in info.value.errors:
        assert e.line().startswith(f"{path}:{e.lineno}: {e.path}: ")
    assert str(info.value) == info.value.errors[0].line()


def test_cli_prints_one_line_per_problem(write_yaml, tmp_path, patched_core):
    path = write_yaml(MULTI)
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert [ln.split(": ")[:3] for ln in lines] == [
        ["error", f"{path}:3", "durration"],
        ["error", f"{path}:8", "links.0.rate"],
        ["error", f"{path}:9", "links.0.delay"],
        ["error", f"{path}:12", "links.1.queue.limit"],
        ["error", f"{path}:14", "flows.0.stat"],
    ]


def test_override_errors_are_named_as_set(write_yaml):
    path = write_yaml(MULTI)
    with pytest.raises(ScenarioError) as info:
        tcplab.load_scenario(path, ["links.0.rate=3Mbix", "durration=__x"])
    by_path = {e.path: e for e in info.value.errors}
    assert by_path["links.0.rate"].line().startswith('--set: links.0.rate: "3Mbix" is not a rate')
    assert by_path["links.0.rate"].lineno is None
    assert by_path["links.0.delay"].line().startswith(f"{path}:9: links.0.delay:")


def test_sysctl_with_prefix_gets_its_line(write_yaml):
    text = doc("hosts: {server: {sysctl: {net.ipv4.tcp_frto: 9}}, client: {}}")
    path = write_yaml(text)
    with pytest.raises(ScenarioError) as info:
        tcplab.load_scenario(path)
    e = info.value
    assert e.path == "hosts.server.sysctl.net.ipv4.tcp_frto"  # the key as written
    assert "net.ipv4.tcp_frto" in text.splitlines()[e.lineno - 1]


# -- nesting depth (issue 7, 2.6) ----------------------------------------------------------


@pytest.mark.parametrize("text", ["[" * 5000 + "]" * 5000, "a:\n" + "".join("  " * i + "- \n" for i in range(1, 3000))])
def test_deeply_nested_yaml_is_a_clean_error(write_yaml, text):
    path = write_yaml(text)
    with pytest.raises(ScenarioError, match=r"nested more than 64 levels deep") as info:
        tcplab.load_scenario(path)
    assert info.value.file == str(path)
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.stderr.startswith(f"error: {path}")


def test_deeply_nested_dict_is_a_clean_error():
    data = dict(BASE_SCENARIO)
    inner = data["description"] = {}
    for _ in range(5000):
        inner["a"] = {}
        inner = inner["a"]
    with pytest.raises(ScenarioError, match=r"<dict>: nested more than 64 levels deep"):
        tcplab.load_scenario(data)


def test_reference_problems_are_reported_beside_field_problems(write_yaml):
    # A bad rate used to hide every cross-reference problem (they ran only once all fields parsed).
    path = write_yaml(MULTI.replace("to: client", "to: clinet").replace("[server, r1]", "[server, r9]"))
    with pytest.raises(ScenarioError) as info:
        tcplab.load_scenario(path)
    got = [(e.lineno, e.path) for e in info.value.errors]
    assert (7, "links.0.between.1") in got
    assert (14, "flows.0.to") in got
    assert (8, "links.0.rate") in got
    by_path = {e.path: e.line() for e in info.value.errors}
    assert 'unknown host "clinet" (did you mean "client"?)' in by_path["flows.0.to"]
    assert 'unknown node "r9"' in by_path["links.0.between.1"]
    assert [e.lineno for e in info.value.errors] == sorted(e.lineno for e in info.value.errors)
