"""Hostile numbers: a number too large for its field, wherever it enters (a scenario file,
``--set``, ``--grid``/``--random``, ``--choose``/``--over``, an integer option, a unit, a
JSON file read back), is one ``error:`` line naming the field, the value abbreviated
(``99999999999999999999… (5000 digits)``) and what was expected, exit 2, no traceback.

Before: CPython refuses to convert a decimal string of more than 4300 digits to an int
(``sys.get_int_max_str_digits()``), so a 5000-digit integer in the YAML or in ``--set``
was a ``ValueError`` traceback (exit 1); YAML's hex, octal, binary and sexagesimal ints
have no such limit and made ints whose ``str()`` failed later, the same traceback.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from tcplab.cli import app
from tcplab.errors import ScenarioError, UnitError, show_value
from tcplab.literals import (
    BoundedSafeLoader,
    JsonNumberError,
    Oversized,
    int_text,
    json_loads,
    load_yaml_scalar,
)
from tcplab.loader import load_scenario, read_scenario_data, validate_with_overrides
from tcplab.overrides import Override, parse_override
from tcplab.units import parse_rate, parse_size, parse_time
from test_hostile_sweep import SCENARIO, assert_one_line_error

HUGE = "9" * 5000  # past CPython's 4300-digit limit for str <-> int
SHOWN = "99999999999999999999… (5000 digits)"  # its first 20 digits and its count


def _cli(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    return path


def test_the_limit_is_cpythons():
    """The premise: without the bound, these inputs are CPython's ValueError."""
    assert sys.get_int_max_str_digits() < len(HUGE)
    with pytest.raises(ValueError, match="4300"):
        yaml.safe_load(f"seed: {HUGE}")
    with pytest.raises(ValueError, match="4300"):
        str(int("f" * 5000, 16))


# -- the scenario file ------------------------------------------------------------------
@pytest.mark.parametrize(
    "literal, shown",
    [
        (HUGE, SHOWN),
        ("-" + HUGE, "-" + SHOWN),
        ("1_" + HUGE, "1" + "9" * 19 + "… (5001 digits)"),
        ("0x" + "9" * 5000, "0x" + SHOWN),  # int(..., 16) has no limit, str() of it has
        ("0" + "7" * 5000, "0" + "7" * 19 + "… (5001 digits)"),  # YAML 1.1 octal
        ("0b" + "1" * 20000, "0b" + "1" * 20 + "… (20000 digits)"),
        (":".join(["59"] * 400), "59:59:59:59:59:59:59… (1199 characters)"),  # sexagesimal
    ],
    ids=["decimal", "negative", "underscores", "hex", "octal", "binary", "sexagesimal"],
)
def test_a_huge_integer_in_the_file_names_its_line_field_and_value(write_yaml, literal, shown):
    text = SCENARIO + f"seed: {literal}\n"
    path = write_yaml(text)
    line = len(SCENARIO.splitlines()) + 1
    with pytest.raises(ScenarioError) as e:
        load_scenario(path)
    assert str(e.value) == f"{path}:{line}: seed: {shown} is too large; expected an integer of at least 0"


@pytest.mark.parametrize(
    "field, literal, needle",
    [
        ("links.0.rate", HUGE, f"{SHOWN} is too large; expected a number with a unit such as 5Mbit"),
        ("links.0.rate", HUGE + "Mbit", f'"{SHOWN}Mbit" is out of range; expected a number with a unit'),
        ("links.0.rate", "1e999Mbit", '"1e999Mbit" is out of range; expected a number with a unit'),
        ("links.0.delay", "1.5e+999", "1.5e+999 is too large; expected a number with a unit such as 50ms"),
        ("links.0.delay", ".inf", "inf is not a time; expected a number with a unit such as 50ms"),
        ("links.0.delay", ".nan", "nan is not a time; expected a number with a unit such as 50ms"),
        ("links.0.loss", HUGE, f"{SHOWN} is too large; expected a percentage"),
        ("links.0.queue", "{qdisc: pfifo, limit: " + HUGE + "}", f"{SHOWN} is too large; expected a packet count"),
        ("links.0.queue", "{qdisc: pfifo, limit: " + "9" * 40 + "}", "(40 digits) is out of range"),
        ("flows.0.count", "9" * 40, "99999999999999999999… (40 digits) is out of range; expected an integer"),
    ],
)
def test_a_number_too_large_for_a_field_is_one_line(base_scenario, field, literal, needle):
    """Each field says what it takes; a 40-digit int was "is not an integer" before."""
    data = read_scenario_data(yaml.safe_dump(base_scenario), "s.yaml")
    ov = Override(text="x", path=tuple(field.split(".")), values=(load_yaml_scalar(literal),), labels=("x",))
    with pytest.raises(ScenarioError) as e:
        validate_with_overrides(data, [ov], "s.yaml")
    assert needle in str(e.value), str(e.value)
    assert len(str(e.value)) < 400 and "\n" not in str(e.value)


def test_every_field_of_the_builtins_refuses_a_huge_number_in_one_line():
    """Every field written in a built-in scenario (and the mapping holding it), given a
    5000-digit integer: a ScenarioError whose message shows it abbreviated; where the field
    takes a number, it says "too large". Before: ValueError tracebacks."""
    from tcplab.loader import builtin_scenarios, resolve_reference

    huge = load_yaml_scalar(HUGE)
    checked = 0
    for name in builtin_scenarios():
        label, text = resolve_reference(f"builtin:{name}")
        data = read_scenario_data(text, label)
        for path in _leaf_paths(data):
            for target in {path, path[:-1]} - {()}:
                with pytest.raises(ScenarioError) as e:
                    validate_with_overrides(data, [Override("x", target, (huge,), ("x",))], label)
                message = str(e.value)
                assert SHOWN in message and "\n" not in message, (target, message)
                checked += 1
    assert checked > 300


def _leaf_paths(node, path=()):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaf_paths(v, (*path, str(k)))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _leaf_paths(v, (*path, str(i)))
    else:
        yield path


def test_a_huge_int_from_python_is_shown_abbreviated(base_scenario):
    """A dict given to load_scenario can hold any int: shown without str() (which fails)."""
    with pytest.raises(ScenarioError) as e:
        load_scenario({**base_scenario, "seed": 10**5000})
    assert str(e.value).endswith(
        "seed: 10000000000000000000… (5001 digits) is out of range; expected an integer of at least 0"
    )


def test_huge_ints_given_to_the_python_api_are_one_line(tmp_path):
    """load_scenario(seed=...), overrides={...} and sweep(grid={...}) label a value with
    str(): past 4300 digits that was CPython's ValueError."""
    import tcplab

    shown = r"10000000000000000000… \(5001 digits\) is out of range"
    for kw in ({"seed": 10**5000}, {"overrides": {"seed": 10**5000}}):
        with pytest.raises(ScenarioError, match=rf"^--set: seed: {shown}; expected an integer"):
            load_scenario("builtin:cubic-100mbit-20ms", **kw)
    with pytest.raises(ScenarioError, match=rf"^--grid: links.0.rate: {shown}; expected a number with a unit"):
        tcplab.sweep(
            "builtin:cubic-100mbit-20ms", grid={"links.0.rate": [10**5000, "1Mbit"]}, seeds=1, out=tmp_path / "o"
        )
    assert not (tmp_path / "o").exists()


def test_a_huge_kubernetes_exponent_is_unreasonably_large_as_kubelet_says(base_scenario):
    """Before: decimal.Overflow traceback (10 ** 9999999 past Decimal's Emax)."""
    from tcplab.scenario.bandwidth import parse_k8s_bandwidth

    for value in ("1e9999999", HUGE + "M", 10**5000):
        with pytest.raises(UnitError, match="unreasonably large"):
            parse_k8s_bandwidth(value)
    with pytest.raises(UnitError, match="unreasonably small"):
        parse_k8s_bandwidth("1e-9999999")
    assert parse_k8s_bandwidth("1e7") == parse_k8s_bandwidth("10M") == 10_000_000


# -- units ------------------------------------------------------------------------------
@pytest.mark.parametrize("parse", [parse_rate, parse_time, parse_size])
def test_units_refuse_huge_numbers_showing_them_abbreviated(parse):
    unit = {parse_rate: "Mbit", parse_time: "ms", parse_size: "KB"}[parse]
    for value in (HUGE + unit, f"1e{HUGE}{unit}", f"1e999{unit}", Oversized(HUGE), 10**5000):
        with pytest.raises(UnitError) as e:
            parse(value)
        assert len(str(e.value)) < 200, str(e.value)
        assert "out of range" in e.value.problem or "too large" in e.value.problem, e.value.problem
    with pytest.raises(UnitError, match=r"\(5000 digits\)"):
        parse(HUGE + unit)


# -- the command line ---------------------------------------------------------------------
def test_set_of_a_huge_integer_is_one_line(tmp_path, scenario):
    r = _cli("check", scenario, "--set", f"seed={HUGE}")
    assert_one_line_error(r, f"error: --set: seed: {SHOWN} is too large; expected an integer")


@pytest.mark.parametrize("index", [HUGE, "²", "٣"])
def test_set_of_a_list_index_that_is_no_small_ascii_number_is_one_line(scenario, index):
    """Before: ValueError (int() of 5000 digits; "²".isdigit() is True but int("²") fails)."""
    r = _cli("check", scenario, "--set", f"links.{index}.rate=1Mbit")
    line = assert_one_line_error(r, "error: --set: links.")
    assert len(line) < 300


@pytest.mark.parametrize(
    "args",
    [
        ["run", "{s}", "--seed", HUGE],
        ["compare", "{s}", "--set", "flows.0.cc=cubic,bbr", "-j", HUGE],
        ["sweep", "{s}", "--random", "links.0.loss=0%..1%", "-n", HUGE, "-o", "{o}"],
        ["sweep", "{s}", "--seeds", HUGE, "-o", "{o}"],
        ["sweep", "{s}", "--seeds", "1", "--seed", HUGE, "-o", "{o}"],
        ["recommend", "{s}", "--choose", "flows.0.cc=cubic,bbr", "--seeds", HUGE, "-o", "{o}"],
        ["validate", "{s}", "--runs", HUGE, "-o", "{o}"],
        ["validate", "{s}", "--runs", "10000000000000000", "-o", "{o}"],  # was a MemoryError
        ["collect", "--count", HUGE, "-o", "{o}"],
    ],
    ids=["seed", "jobs", "n", "seeds", "sweep-seed", "recommend-seeds", "runs", "runs-1e16", "count"],
)
def test_integer_options_refuse_huge_values_in_one_abbreviated_line(tmp_path, scenario, args):
    out = tmp_path / "o"
    r = _cli(*[a.format(s=scenario, o=out) for a in args])
    line = assert_one_line_error(r, "is out of range; expected")
    assert len(line) < 300, line
    assert not out.exists()


def test_grid_and_random_refuse_huge_values_before_anything_runs(tmp_path, scenario):
    out = tmp_path / "o"
    r = _cli("sweep", scenario, "--grid", f"links.0.rate=10Mbit,{HUGE}", "-o", out, "-q")
    assert_one_line_error(r, f"error: --grid: links.0.rate: {SHOWN} is too large; expected a number with a unit")
    r = _cli("sweep", scenario, "--random", f"links.0.rate=1Mbit..{HUGE}Mbit", "-n", "2", "-o", out, "-q")
    assert_one_line_error(r, f'error: --random: links.0.rate: "{SHOWN}Mbit" is too large')
    assert not out.exists()


def test_choose_and_over_refuse_huge_values_before_anything_runs(tmp_path, scenario):
    out = tmp_path / "o"
    args = ("--maximize", "goodput", "-o", out, "-q")
    r = _cli("recommend", scenario, "--choose", "flows.0.cc=cubic,bbr", "--over", f"links.0.loss=0%,{HUGE}", *args)
    assert_one_line_error(r, f"error: --over: links.0.loss: {SHOWN} is too large; expected a percentage")
    r = _cli("recommend", scenario, "--choose", f"links.0.rate=10Mbit,{HUGE}", *args)
    assert_one_line_error(r, f"error: --choose: links.0.rate: {SHOWN} is too large")
    assert not out.exists()


def test_tolerance_of_a_huge_number_is_too_large_abbreviated(tmp_path, scenario):
    from tcplab.kernel.tolerances import parse_tolerances

    with pytest.raises(ScenarioError) as e:
        parse_tolerances([f"goodput={HUGE}%"])
    assert str(e.value).startswith(f'--tolerance: goodput: "{SHOWN}%" is too large; expected a percentage')


# -- JSON files read back -----------------------------------------------------------------
@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """One 1 s run of the real engine (one flow, server-client-0)."""
    pytest.importorskip("tcplab._core")
    base = tmp_path_factory.mktemp("run")
    (base / "s.yaml").write_text(SCENARIO, encoding="utf-8")
    r = _cli("run", base / "s.yaml", "-o", base / "run", "-q")
    assert r.exit_code == 0, r.output
    return base / "run"


def _tampered(run_dir: Path, tmp_path: Path, name: str, key: str, literal: str) -> Path:
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    text = (copy / name).read_text(encoding="utf-8")
    doc = json.loads(text)
    old = json.dumps(doc[key])
    assert text.count(f'"{key}": {old}') == 1
    (copy / name).write_text(text.replace(f'"{key}": {old}', f'"{key}": {literal}'), encoding="utf-8")
    return copy


@pytest.mark.parametrize(
    "name, key, literal, shown",
    [
        ("scenario.resolved.json", "duration_ns", HUGE, f"duration_ns: {SHOWN} is too large"),
        ("scenario.resolved.json", "duration_ns", "1e999", "duration_ns: 1e999 is too large"),
        ("scenario.resolved.json", "duration_ns", "NaN", "duration_ns: NaN is not finite"),
        ("summary.json", "seed", HUGE, f"seed: {SHOWN} is too large"),
        ("summary.json", "seed", "-Infinity", "seed: -Infinity is not finite"),
    ],
)
@pytest.mark.parametrize(
    "command",
    [["export", "flent"], ["export", "iperf3"], ["export", "pcap", "--flow", "0"], ["ss"]],
    ids=["flent", "iperf3", "pcap", "ss"],
)
def test_a_run_directory_with_a_bad_number_is_one_line_naming_file_and_key(
    tmp_path, run_dir, name, key, literal, shown, command
):
    """Before: ValueError tracebacks (int conversion of 5000 digits; int(NaN)), or "engine:
    Out of range float values are not JSON compliant"."""
    damaged = _tampered(run_dir, tmp_path, name, key, literal)
    out = tmp_path / "out.file"
    args = [*command[:2], damaged, *command[2:]] if command[0] == "export" else ["ss", damaged, "0"]
    r = _cli(*args, *(["-o", out] if command[0] == "export" else []))
    assert_one_line_error(r, name, shown)
    assert not out.exists()


def test_sweep_resume_with_a_huge_number_in_its_plan_is_one_line(tmp_path, scenario):
    pytest.importorskip("tcplab._core")
    out = tmp_path / "sw"
    r = _cli("sweep", scenario, "--seeds", "1", "-o", out, "-q", "-j", "1")
    assert r.exit_code == 0, r.output
    plan = out / "sweep.json"
    plan.write_text(plan.read_text(encoding="utf-8").replace('"sample_seed": 0', f'"sample_seed": {HUGE}'))
    r = _cli("sweep", scenario, "--seeds", "1", "-o", out, "-q", "-j", "1")
    assert_one_line_error(r, "sweep.json", f"sample_seed: {SHOWN} is too large")


# -- the readers themselves: the same values as PyYAML and json within the bound ---------------
@pytest.mark.parametrize(
    "literal",
    [
        "0", "-0", "17", "+17", "-17", "1_000", "0x1F", "-0x1f", "017", "0b101", "-0b101", "1:30", "190:20:30",
        "18446744073709551615", "9" * 100, "1.5", "-1.5e+3", "1_0.5", "6.8523015e+5", ".inf", "-.inf", "1:30.5",
        "1.0e+308", "!!int 12", "!!float 12", "!!float 1e3", "[1, 0x10, 2.5]", "{a: 1:00}", "abc", "'123'",
    ],
)  # fmt: skip
def test_bounded_loader_reads_what_pyyaml_reads_within_the_bound(literal):
    expected = yaml.safe_load(literal)
    got = yaml.load(literal, Loader=BoundedSafeLoader)  # noqa: S506 - a SafeLoader subclass
    assert got == expected and type(got) is type(expected)


def test_bounded_loader_keeps_nan():
    assert math.isnan(yaml.load(".nan", Loader=BoundedSafeLoader))  # noqa: S506


@pytest.mark.parametrize("literal", ["1" + "0" * 100, "0x" + "f" * 90, "1.0e+309", "-1.0e+999", "9" * 400 + ".5"])
def test_bounded_loader_keeps_what_is_past_the_bound_as_oversized(literal):
    got = yaml.load(literal, Loader=BoundedSafeLoader)  # noqa: S506
    assert isinstance(got, Oversized) and got.text == literal


def test_an_explicit_int_tag_on_text_is_a_yaml_error_not_a_value_error():
    with pytest.raises(yaml.YAMLError):
        yaml.load("!!int abc", Loader=BoundedSafeLoader)  # noqa: S506


def test_json_loads_reads_what_json_reads_within_the_bound():
    text = '{"a": [1, -2, 3.5, 1e300, "x", null, true], "b": {"c": 18446744073709551615}, "d": NaN}'
    assert json.dumps(json_loads(text)) == json.dumps(json.loads(text))
    with pytest.raises(JsonNumberError, match=r"^d: NaN is not finite"):
        json_loads(text, finite=True)
    with pytest.raises(JsonNumberError, match=r"^a\.1\.x: 99999999999999999999… \(5000 digits\) is too large"):
        json_loads('{"a": [0, {"x": ' + HUGE + "}]}")


@pytest.mark.parametrize("k", [31, 32, 99, 100, 4300, 4301, 10000])
def test_int_text_counts_digits_exactly(k):
    """10**k has k+1 digits and 10**k - 1 has k: the count is exact at each power of ten."""
    assert int_text(10**k) == "1" + "0" * 19 + f"… ({k + 1} digits)"
    assert int_text(-(10**k - 1)) == "-" + "9" * 20 + f"… ({k} digits)"
    assert show_value(10**k).endswith(f"({k + 1} digits)")


def test_small_numbers_are_shown_whole():
    assert int_text(10**30 - 1) == "9" * 30
    assert show_value("1" * 30 + "Mbit") == '"' + "1" * 30 + 'Mbit"'
    assert parse_override("seed=12").values == (12,)
