"""--set PATH=VALUE: parsing, applying before validation, and variants."""

from __future__ import annotations

import pytest

import tcplab
from tcplab.compare import plan_variants
from tcplab.errors import ScenarioError
from tcplab.overrides import apply_overrides, expand_variants, parse_override, split_top_level


@pytest.mark.parametrize(
    ("text", "path", "values"),
    [
        ("links.0.loss=0.1%", ("links", "0", "loss"), ("0.1%",)),
        ("duration=10s", ("duration",), ("10s",)),
        ("seed=7", ("seed",), (7,)),
        ("flows.0.cc=cubic,bbr", ("flows", "0", "cc"), ("cubic", "bbr")),
        ("links.0.loss={drop: [5, 17]}", ("links", "0", "loss"), ({"drop": [5, 17]},)),
        ("links.0.between=[a, b],[a, c]", ("links", "0", "between"), (["a", "b"], ["a", "c"])),
        ("description=", ("description",), (None,)),
        ("name='a,b'", ("name",), ("a,b",)),
        (
            "hosts.server.sysctl.tcp_congestion_control=bbr",
            ("hosts", "server", "sysctl", "tcp_congestion_control"),
            ("bbr",),
        ),
        (
            "hosts.server.sysctl.net.ipv4.tcp_wmem=4096 16384 8MB",
            ("hosts", "server", "sysctl", "net.ipv4.tcp_wmem"),
            ("4096 16384 8MB",),
        ),
        ("flows.0.tcp.initial_cwnd=true", ("flows", "0", "tcp", "initial_cwnd"), (True,)),
    ],
)
def test_parse_override(text, path, values):
    ov = parse_override(text)
    assert ov.path == path
    assert ov.values == values


def test_split_top_level():
    assert split_top_level("a,b") == ["a", "b"]
    assert split_top_level("[1, 2],{x: 1, y: 2}") == ["[1, 2]", "{x: 1, y: 2}"]
    assert split_top_level("'a,b',c") == ["'a,b'", "c"]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("links.0.loss", 'error: --set: "links.0.loss" has no "="'),
        ("=5", "is not a field path"),
        ("links..loss=1%", '"links..loss" is not a field path'),
        ("links.0.loss=[1, 2", "is not valid YAML"),
    ],
)
def test_bad_override_text(text, fragment):
    with pytest.raises(ScenarioError) as info:
        parse_override(text)
    assert fragment.removeprefix("error: ") in str(info.value)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("links.5.loss=1%", "--set: links.5.loss: no element 5 (links has 2 elements); expected an index from 0 to 1"),
        (
            "links.x.loss=1%",
            '--set: links.x.loss: "x" is not a list index (links is a list); expected a number from 0 to 1',
        ),
        ("duration.x=1", '--set: duration.x: duration is "10s", not a mapping or list'),
        ("routers.0.x=1", '--set: routers.0.x: routers.0 is "r1", not a mapping or list'),
        ("newlist.0=1", "--set: newlist.0: newlist has no list element 0"),
        ("flows.0.cc=cubic,bbr", "--set: flows.0.cc: 2 values given (cubic, bbr); expected one value"),
    ],
)
def test_bad_override_path(base_scenario, text, fragment):
    with pytest.raises(ScenarioError) as info:
        tcplab.load_scenario(base_scenario, [text])
    assert fragment in str(info.value)


def test_overrides_apply_before_validation(base_scenario):
    sc = tcplab.load_scenario(
        base_scenario,
        [
            "links.0.loss=0.1%",
            "flows.0.cc=bbr",
            "duration=20s",
            "hosts.server.sysctl.tcp_wmem=4096 16384 8MiB",
            "hosts.client.sysctl.net.ipv4.tcp_rmem=[4096, 1MB, 8MB]",
            "links.1.queue={qdisc: bfifo, limit: 150KB}",
        ],
    )
    core = sc.to_core()
    assert core["duration_ns"] == 20_000_000_000
    assert core["links"][0]["loss"] == {"kind": "bernoulli", "p": 0.001}
    assert core["links"][1]["loss"] == {"kind": "bernoulli", "p": 0.001}  # reverse copies forward
    assert core["links"][2]["queue"] == {"kind": "bfifo", "limit_bytes": 150_000}
    assert core["flows"][0]["cc"] == "bbr"
    assert core["flows"][0]["tcp"]["tcp_wmem"] == [4096, 16384, 8 * 2**20]
    assert core["flows"][0]["tcp"]["tcp_rmem"] == [4096, 1_000_000, 8_000_000]
    assert base_scenario["duration"] == "10s"  # the input is not modified


def test_override_errors_name_set(base_scenario):
    with pytest.raises(ScenarioError) as info:
        tcplab.load_scenario(base_scenario, ["links.0.rate=5Mbt"])
    assert str(info.value).startswith('--set: links.0.rate: "5Mbt" is not a rate')
    with pytest.raises(ScenarioError) as info:
        tcplab.load_scenario(base_scenario, ["hosts.server.sysctl.net.ipv4.tcp_congestion_control=vegas"])
    assert str(info.value).startswith(
        "--set: hosts.server.sysctl.net.ipv4.tcp_congestion_control: unknown congestion control"
    )


def test_override_mapping_and_seed(base_scenario):
    sc = tcplab.load_scenario(base_scenario, {"links.0.delay": "7ms", "flows.0.count": 3}, seed=42)
    core = sc.to_core()
    assert core["seed"] == 42
    assert core["links"][0]["delay_ns"] == 7_000_000
    assert [f["name"] for f in core["flows"]] == ["server-client-0.0", "server-client-0.1", "server-client-0.2"]


def test_override_creates_missing_mappings(base_scenario):
    sc = tcplab.load_scenario(base_scenario, ["hosts.server.sysctl.tcp_congestion_control=reno"])
    assert sc.to_core()["flows"][0]["cc"] == "reno"
    base_scenario["hosts"]["client"] = None  # `client:` with no value in YAML
    sc = tcplab.load_scenario(base_scenario, ["hosts.client.sysctl.tcp_rmem=4096 4096 4096"])
    assert sc.to_core()["flows"][0]["tcp"]["tcp_rmem"] == [4096, 4096, 4096]


def test_apply_overrides_choice():
    ovs = [parse_override("a=1,2"), parse_override("b.c=x")]
    assert apply_overrides({"b": {}}, ovs, choice=(1, 0)) == {"a": 2, "b": {"c": "x"}}


def test_expand_variants_is_a_cartesian_product_in_order():
    ovs = [
        parse_override("flows.0.cc=cubic,bbr"),
        parse_override("duration=5s"),
        parse_override("links.0.loss=1%,0.1%,0"),
    ]
    variants = expand_variants(ovs)
    assert [labels for _, labels in variants] == [
        ["cubic", "1%"],
        ["cubic", "0.1%"],
        ["cubic", "0"],
        ["bbr", "1%"],
        ["bbr", "0.1%"],
        ["bbr", "0"],
    ]
    assert variants[4][0] == (1, 0, 1)


def test_plan_variants_labels_from_values(base_scenario):
    variants = plan_variants([base_scenario], ["flows.0.cc=cubic,bbr", "links.0.loss=1%,0.1%"])
    assert [v.label for v in variants] == ["cubic_1pct", "cubic_0.1pct", "bbr_1pct", "bbr_0.1pct"]
    assert variants[3].scenario.to_core()["flows"][0]["cc"] == "bbr"
    assert variants[3].scenario.to_core()["links"][0]["loss"]["p"] == pytest.approx(0.001)
    assert variants[3].overrides == ["flows.0.cc=bbr", "links.0.loss=0.1%"]


def test_plan_variants_labels_from_files(write_yaml, base_scenario):
    a = write_yaml(base_scenario, "a.yaml")
    b = write_yaml(base_scenario, "b.yaml")
    assert [v.label for v in plan_variants([a, b])] == ["a", "b"]
    assert [v.label for v in plan_variants([a, a])] == ["a", "a-2"]
    both = plan_variants([a, "builtin:cubic-vs-bbr-lossy"], ["flows.0.cc=cubic,bbr"])
    assert [v.label for v in both] == ["a_cubic", "a_bbr", "cubic-vs-bbr-lossy_cubic", "cubic-vs-bbr-lossy_bbr"]


def test_plan_variants_labels_are_unique_and_never_a_compare_file(write_yaml, base_scenario):
    # Each label names a run directory inside the comparison's: a-2.yaml beside two a.yaml
    # must not give two "a-2", and a label may not be a file the comparison writes.
    a = write_yaml(base_scenario, "a.yaml")
    (a.parent / "sub").mkdir()
    a2 = write_yaml(base_scenario, "sub/a.yaml")
    dash = write_yaml(base_scenario, "a-2.yaml")
    labels = [v.label for v in plan_variants([a, a2, dash])]
    assert len(set(labels)) == 3 and labels[:2] == ["a", "a-2"]
    report = write_yaml(base_scenario, "report.html.yaml")
    assert "report.html" not in [v.label for v in plan_variants([report, a], labels=["report.html", "x"])]


def test_plan_variants_needs_two(base_scenario):
    with pytest.raises(ScenarioError, match="only one variant to compare"):
        plan_variants([base_scenario], ["flows.0.cc=bbr"])


def test_plan_variants_validates_every_variant_first(base_scenario):
    with pytest.raises(ScenarioError, match=r'--set: flows.0.cc: unknown congestion control "vegas"'):
        plan_variants([base_scenario], ["flows.0.cc=cubic,vegas"])
