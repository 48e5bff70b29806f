"""``--set PATH=VALUE``: changing a scenario from the command line, and variants.

The model: an override edits the scenario's plain data (the parsed YAML) *before*
validation, so an overridden value is checked exactly like one written in the file.

* ``PATH`` is dotted, list elements by index: ``links.0.loss``, ``flows.1.cc``, ``duration``,
  ``hosts.server.sysctl.tcp_congestion_control`` (after ``sysctl`` the rest of the path is one
  key, so ``hosts.server.sysctl.net.ipv4.tcp_wmem`` works too). Missing mappings on the way
  are created; list elements are not. A value written as a name is its mapping when the
  path goes through it: with ``app: rr``, ``flows.0.app.rr.request=100B`` gives
  ``app: {rr: {request: 100B}}``.
* ``VALUE`` is read as a YAML scalar or flow collection: ``0.1%`` (text), ``10`` (number),
  ``true``, ``[5, 17]``, ``{drop: [5, 17]}``; an empty value is null.
* Commas at the top level of ``VALUE`` (not inside ``[]``, ``{}`` or quotes) separate
  alternatives: ``flows.0.cc=cubic,bbr`` asks ``tcplab compare`` for one variant per value.
  With several such overrides, variants are the cartesian product, in the order given.

Floor 1 (DESIGN.md's "Layout"): imports the leaves and :mod:`tcplab.scenario`, nothing above.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from tcplab.errors import ScenarioError, show_value
from tcplab.literals import MAX_DIGITS, load_yaml_scalar, value_text
from tcplab.scenario.base import EXTENSION_PREFIX

__all__ = ["Override", "parse_override", "parse_overrides", "apply_overrides", "expand_variants", "split_top_level"]

SET_EXPECTED = "PATH=VALUE such as links.0.loss=0.1% or flows.0.cc=bbr"


@dataclass(frozen=True)
class Override:
    """One ``--set``: a path and one or more alternative values (raw text kept for labels)."""

    text: str
    path: tuple[str, ...]
    values: tuple[Any, ...]
    labels: tuple[str, ...]

    @property
    def dotted(self) -> str:
        return ".".join(self.path)

    @property
    def varies(self) -> bool:
        return len(self.values) > 1


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split at ``sep`` outside brackets, braces and quotes."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth = max(0, depth - 1)
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _yaml_value(text: str, whole: str) -> Any:
    if text.strip() == "":
        return None
    try:
        return load_yaml_scalar(text)
    except yaml.YAMLError as e:
        problem = getattr(e, "problem", None) or "not valid YAML"
        raise ScenarioError(
            f"value {show_value(text)} is not valid YAML ({problem})", file="--set", path=whole, expected=SET_EXPECTED
        ) from None


def parse_override(text: str) -> Override:
    """Parse ``"links.0.loss=0.1%"`` (or a ``(path, value)`` pair given as text)."""
    if "=" not in text:
        raise ScenarioError(f'{show_value(text)} has no "="', file="--set", expected=SET_EXPECTED)
    path_text, value_text = text.split("=", 1)
    path_text = path_text.strip()
    parts = path_text.split(".") if path_text else []
    if not parts or any(p.strip() == "" for p in parts):
        raise ScenarioError(
            f"{show_value(path_text)} is not a field path", file="--set", path=path_text, expected=SET_EXPECTED
        )
    parts = [p.strip() for p in parts]
    if "sysctl" in parts[:-1]:
        k = parts.index("sysctl")
        parts = parts[: k + 1] + [".".join(parts[k + 1 :])]
    alternatives = split_top_level(value_text)
    values = tuple(_yaml_value(v, path_text) for v in alternatives)
    labels = tuple(v.strip() for v in alternatives)
    return Override(text=text, path=tuple(parts), values=values, labels=labels)


def parse_overrides(items: Iterable[str | Override] | Mapping[str, Any] | None) -> list[Override]:
    """Accept ``["a.b=1", ...]``, ``{"a.b": 1}`` (values used as they are) or Overrides."""
    if items is None:
        return []
    if isinstance(items, Mapping):
        out = []
        for path, value in items.items():
            parts = tuple(str(path).split("."))
            if "sysctl" in parts[:-1]:
                k = parts.index("sysctl")
                parts = parts[: k + 1] + (".".join(parts[k + 1 :]),)
            label = value_text(value)
            out.append(Override(text=f"{path}={label}", path=parts, values=(value,), labels=(label,)))
        return out
    if isinstance(items, str):
        items = [items]
    return [item if isinstance(item, Override) else parse_override(item) for item in items]


def _is_index(part: str) -> bool:
    """A list index as a path part: ASCII digits (``str.isdigit`` also takes ``²``)."""
    return part.isascii() and part.isdigit()


def _apply_one(data: dict, path: Sequence[str], value: Any) -> None:
    node: Any = data
    dotted = ".".join(path)
    if path and path[0].startswith(EXTENSION_PREFIX):
        raise ScenarioError(
            f"{show_value(path[0])} holds YAML anchors, resolved when the file is read: setting it changes nothing",
            file="--set",
            path=dotted,
            expected="the path of a field that uses it, such as links.0.delay",
        )
    for depth, part in enumerate(path):
        here = ".".join(path[:depth]) or "the top level"
        last = depth == len(path) - 1
        if isinstance(node, dict):
            if last:
                node[part] = value
                return
            child = node.get(part)
            if isinstance(child, str) and child == path[depth + 1]:
                # a shorthand named by the next key: "app: rr" is "app: {rr: {}}", so
                # flows.0.app.rr.request=100B sets a key of it
                child = node[part] = {child: {}}
            if child is None:
                if _is_index(path[depth + 1]):
                    raise ScenarioError(
                        f"{'.'.join(path[: depth + 1])} has no list element {path[depth + 1]}",
                        file="--set",
                        path=dotted,
                        expected="a path to an existing list element",
                    )
                child = node[part] = {}
            node = child
        elif isinstance(node, list):
            if not _is_index(part):
                raise ScenarioError(
                    f"{show_value(part)} is not a list index ({here} is a list)",
                    file="--set",
                    path=dotted,
                    expected=f"a number from 0 to {len(node) - 1}"
                    if node
                    else "an existing element (the list is empty)",
                )
            index = int(part) if len(part.lstrip("0")) <= MAX_DIGITS else len(node)  # past any list
            if index >= len(node):
                n = len(node)
                raise ScenarioError(
                    f"no element {show_value(part)[1:-1]} ({here} has {n} element{'s' if n != 1 else ''})",
                    file="--set",
                    path=dotted,
                    expected=f"an index from 0 to {n - 1}" if n else "an existing element (the list is empty)",
                )
            if last:
                node[index] = value
                return
            if node[index] is None and not _is_index(path[depth + 1]):
                node[index] = {}
            node = node[index]
        else:
            raise ScenarioError(
                f"{here} is {show_value(node)}, not a mapping or list",
                file="--set",
                path=dotted,
                expected="a path through mappings and lists",
            )


def apply_overrides(
    data: Mapping[str, Any], overrides: Iterable[Override], *, choice: Sequence[int] | None = None
) -> dict:
    """A deep copy of ``data`` with the overrides applied (value ``choice[i]`` of override i).

    Without ``choice``, every override must have exactly one value.
    """
    out = copy.deepcopy(dict(data))
    for i, ov in enumerate(overrides):
        if choice is None:
            if ov.varies:
                raise ScenarioError(
                    f"{len(ov.values)} values given ({', '.join(ov.labels)})",
                    file="--set",
                    path=ov.dotted,
                    expected="one value (tcplab compare runs one variant per comma-separated value)",
                )
            value = ov.values[0]
        else:
            value = ov.values[choice[i]]
        _apply_one(out, ov.path, copy.deepcopy(value))
    return out


def expand_variants(overrides: Sequence[Override]) -> list[tuple[tuple[int, ...], list[str]]]:
    """Every combination of alternatives: ``[(choice, labels of the varied values), ...]``."""
    ranges = [range(len(ov.values)) for ov in overrides]
    out = []
    for choice in itertools.product(*ranges):
        labels = [ov.labels[c] for ov, c in zip(overrides, choice, strict=True) if ov.varies]
        out.append((tuple(choice), labels))
    return out
