"""YAML merge keys (``<<: *anchor``) in scenario files, as YAML 1.1 defines them
(https://yaml.org/type/merge.html): the merged mapping's keys are added to the mapping, the
mapping's own (explicit) keys override them, and of a list ``<<: [*a, *b]`` the earlier
mappings override the later ones. Duplicate keys are refused among the keys written in one
mapping, with their lines; a key that overrides a merged one is not a duplicate.

Before: ``<<: *slow`` then ``delay: 20ms`` was refused as a duplicate key "delay" (the
duplicate check ran after PyYAML had flattened the merge into the mapping).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tcplab.errors import ScenarioError
from tcplab.loader import load_scenario, read_scenario_data

HEAD = """\
name: merge
duration: 1s
hosts: {a: {}, b: {}, c: {}}
routers: [r1]
"""
FLOWS = "flows: [{from: a, to: c}]\n"


def _load(tmp_path: Path, text: str):
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    return path, read_scenario_data(text, str(path))


def test_an_explicit_key_overrides_a_merged_one(tmp_path):
    text = (
        HEAD
        + """\
links:
  - &slow {between: [a, r1], rate: 10Mbit, delay: 50ms}
  - <<: *slow
    between: [r1, c]
    delay: 20ms
"""
        + FLOWS
    )
    path, data = _load(tmp_path, text)
    assert data["links"][1] == {"between": ["r1", "c"], "rate": "10Mbit", "delay": "20ms"}
    assert data["links"][1] == yaml.safe_load(text)["links"][1]  # as PyYAML's safe_load reads it
    sc = load_scenario(path)
    assert [link.delay for link in sc.links] == [50_000_000, 20_000_000]


def test_the_override_may_come_before_the_merge(tmp_path):
    """Explicit keys win wherever the merge key stands (yaml.org/type/merge.html, "Override")."""
    text = "a: &a {delay: 50ms, rate: 1Mbit}\nb:\n  delay: 20ms\n  <<: *a\n"
    assert yaml.safe_load(text)["b"] == {"delay": "20ms", "rate": "1Mbit"}
    _, data = _load(tmp_path, text)
    assert data["b"] == {"delay": "20ms", "rate": "1Mbit"}


def test_of_a_merged_list_the_earlier_mapping_wins(tmp_path):
    """The spec: "Keys in mapping nodes earlier in the sequence override keys specified in
    later mapping nodes." (PyYAML 6.0.4's safe_load gets this wrong for keys of more than one
    character: yaml/pyyaml#953; its one-character keys show the intended order.)"""
    text = """\
a: &a {delay: 1ms, rate: 1Mbit, x: 1}
b: &b {delay: 2ms, loss: 2%, x: 2}
c:
  <<: [*a, *b]
  queue: 10
"""
    _, data = _load(tmp_path, text)
    assert data["c"] == {"delay": "1ms", "rate": "1Mbit", "x": 1, "loss": "2%", "queue": 10}
    assert yaml.safe_load(text)["c"]["x"] == 1  # PyYAML's own first-wins, where it holds


def test_nested_merges(tmp_path):
    """A merged mapping may itself merge another; the nearest explicit key wins."""
    text = """\
base: &base {rate: 1Mbit, delay: 1ms, loss: 1%}
mid: &mid
  <<: *base
  delay: 5ms
top:
  <<: *mid
  loss: 0%
"""
    _, data = _load(tmp_path, text)
    assert data["mid"] == {"rate": "1Mbit", "delay": "5ms", "loss": "1%"}
    assert data["top"] == {"rate": "1Mbit", "delay": "5ms", "loss": "0%"}
    assert data == yaml.safe_load(text)


def test_a_mapping_merged_and_then_used_again_is_not_a_duplicate(tmp_path):
    """PyYAML's flatten_mapping rewrites the merged node in place; a check that ran on the
    rewritten node saw "source" twice when the node was used again through its anchor."""
    text = """\
first:
  <<: &defaults
    <<: &base
      source: staging
    source: production
second: *defaults
third: {<<: *defaults}
"""
    _, data = _load(tmp_path, text)
    assert data == {
        "first": {"source": "production"},
        "second": {"source": "production"},
        "third": {"source": "production"},
    }


@pytest.mark.parametrize(
    "text, line, key, first",
    [
        ("a: &a {x: 1}\nb:\n  <<: *a\n  delay: 1ms\n  delay: 2ms\n", 5, "delay", 4),
        ("a: &a {x: 1}\nb:\n  delay: 1ms\n  <<: *a\n  delay: 2ms\n", 5, "delay", 3),
        ("a: &a {x: 1}\nb: &b {y: 1}\nc:\n  <<: *a\n  <<: *b\n", 5, "<<", 4),
        ("base: &base {x: 1, x: 2}\nc: {<<: *base}\n", 1, "x", 1),
    ],
    ids=["after-merge", "around-merge", "two-merge-keys", "inside-anchor"],
)
def test_a_key_written_twice_in_one_mapping_is_still_refused_with_its_line(tmp_path, text, line, key, first):
    with pytest.raises(ScenarioError) as e:
        _load(tmp_path, text)
    assert f": line {line}, column" in str(e.value), str(e.value)
    assert f'duplicate key "{key}" (the key "{key}" first given on line {first})' in str(e.value)


def test_errors_in_merged_values_name_the_line_where_the_value_is_written(tmp_path):
    """A bad value merged from an anchor is reported at the anchor's line; an overriding
    explicit value at its own line."""
    text = (
        HEAD
        + """\
links:
  - &slow {between: [a, r1], rate: 10Mbt, delay: 50ms}
  - <<: *slow
    between: [r1, c]
    rate: 10Mbit
    delay: 20parsecs
"""
        + FLOWS
    )
    path, _ = _load(tmp_path, text)
    with pytest.raises(ScenarioError) as e:
        load_scenario(path)
    lines = [err.line() for err in e.value.errors]
    assert f'{path}:6: links.0.rate: "10Mbt" is not a rate' in lines[0], lines
    assert any(f'{path}:10: links.1.delay: "20parsecs"' in x for x in lines), lines


def test_merging_what_is_not_a_mapping_is_one_line(tmp_path):
    for text in ("a: {<<: 5}\n", "a: {<<: [5]}\n", "b: &b [1]\na: {<<: *b}\n"):
        with pytest.raises(ScenarioError, match=r"expected a mapping"):
            _load(tmp_path, text)


def test_many_merges_of_the_same_anchors_stay_linear(tmp_path):
    """yaml/pyyaml#897: merging the same mapping again and again was exponential; here each
    mapping is flattened once (a 30-level chain of double merges is read at once)."""
    lines = ["l0: &l0 {k0: 0}"]
    for i in range(1, 30):
        lines.append(f"l{i}: &l{i} {{<<: [*l{i - 1}, *l{i - 1}], k{i}: {i}}}")
    _, data = _load(tmp_path, "\n".join(lines) + "\n")
    assert data["l29"] == {f"k{i}": i for i in range(30)}


def test_top_level_x_keys_hold_anchors(tmp_path):
    """A place for anchors that is not a link: top-level ``x-`` keys, as Docker Compose's
    extension fields, are left out of the scenario (before: 'unknown key "x-slow"')."""
    text = (
        HEAD
        + """\
x-slow: &slow {rate: 10Mbit, delay: 50ms}
links:
  - <<: *slow
    between: [a, r1]
  - <<: *slow
    between: [r1, c]
    delay: 20ms
"""
        + FLOWS
    )
    path, _ = _load(tmp_path, text)
    sc = load_scenario(path)
    assert [link.delay for link in sc.links] == [50_000_000, 20_000_000]
    assert [link.rate for link in sc.links] == [10_000_000, 10_000_000]


def test_x_keys_below_the_top_are_still_unknown(tmp_path):
    text = (
        HEAD + "links:\n  - {between: [a, r1], rate: 10Mbit, x-note: 1}\n  - {between: [r1, c], rate: 10Mbit}\n" + FLOWS
    )
    path, _ = _load(tmp_path, text)
    with pytest.raises(ScenarioError, match=r'unknown key "x-note"'):
        load_scenario(path)


def test_set_refuses_an_anchor_key(tmp_path):
    """Aliases are resolved when the file is read: ``--set x-slow.rate=...`` would change
    nothing, so it is one line, not a silent no-op."""
    text = (
        HEAD
        + "x-slow: &slow {rate: 10Mbit}\nlinks:\n  - {<<: *slow, between: [a, r1]}\n  - {<<: *slow, between: [r1, c]}\n"
        + FLOWS
    )
    path, _ = _load(tmp_path, text)
    with pytest.raises(ScenarioError, match=r"x-slow\.rate: .*holds YAML anchors"):
        load_scenario(path, overrides=["x-slow.rate=1Mbit"])
