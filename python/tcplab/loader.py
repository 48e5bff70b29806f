"""Finding and reading scenarios: files, built-ins, dicts; overrides applied; validated.

The model: a scenario reference is one of

* a path to a YAML file;
* ``builtin:NAME``, or a bare ``NAME`` that is not an existing file, for the scenarios shipped
  in ``tcplab/scenarios/NAME.yaml`` (``tcplab scenarios`` lists them);
* a ``dict`` with the same structure as the YAML;
* an already validated :class:`~tcplab.scenario.Scenario` (overrides re-validate its data).

Reading is strict: YAML syntax errors carry their line, duplicate mapping keys are errors
(YAML would silently keep the last; a key that overrides one merged with ``<<: *anchor`` is
no duplicate: merge keys follow YAML 1.1, see :class:`_StrictLoader`), numbers are bounded
(:mod:`tcplab.literals`), an empty file or a top level that is not a mapping is an
error, and so is nesting deeper than :data:`MAX_NESTING` levels (checked on the parser's event
stream, before anything recursive sees the document). Every failure is a
:class:`~tcplab.errors.ScenarioError`.

Line numbers: the file is also composed into YAML nodes, which record where each key and list
item starts; :func:`node_lines` maps every field path (``("links", "0", "rate")``) to its line,
so that each validation error names ``file.yaml:LINE``.

Floor 1 (DESIGN.md's "Layout"): imports the leaves, :mod:`tcplab.scenario` and
:mod:`tcplab.overrides`, nothing above.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from tcplab.errors import ScenarioError, ScenarioWarning, show_value
from tcplab.literals import BoundedSafeLoader, value_text
from tcplab.overrides import Override, apply_overrides, parse_overrides
from tcplab.scenario import Scenario, validate_scenario

__all__ = [
    "load_scenario",
    "builtin_scenarios",
    "builtin_dir",
    "read_scenario_data",
    "resolve_reference",
    "node_lines",
    "MAX_NESTING",
]

BUILTIN_PREFIX = "builtin:"

#: The deepest nesting of mappings and lists a scenario may have. The real schema needs 5
#: (``links.0.loss.gilbert_elliott.p``); the limit keeps PyYAML's recursive composer and
#: pydantic far from Python's recursion limit.
MAX_NESTING = 64


class _Document(dict):
    """A scenario's plain data, with the line of each field path in the file it came from."""

    lines: dict[tuple[str, ...], int]


_MERGE_TAG = "tag:yaml.org,2002:merge"
_VALUE_TAG = "tag:yaml.org,2002:value"
_STR_TAG = "tag:yaml.org,2002:str"

Pair = tuple[yaml.Node, yaml.Node]


def _merge_sources(node: yaml.MappingNode) -> list[yaml.MappingNode]:
    """The mappings merged into ``node`` by its ``<<`` key, in precedence order (earliest first).

    yaml.org/type/merge.html: the value of ``<<`` is a mapping, or a list of mappings "merged
    in turn according to its order in the sequence. Keys in mapping nodes earlier in the
    sequence override keys specified in later mapping nodes."
    """
    sources: list[yaml.MappingNode] = []
    for key_node, value_node in node.value:
        if key_node.tag != _MERGE_TAG:
            continue
        items = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
        for item in items:
            if not isinstance(item, yaml.MappingNode):
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"expected a mapping or a list of mappings for merging, but found {item.id}",
                    item.start_mark,
                )
            sources.append(item)
    return sources


class _StrictLoader(BoundedSafeLoader):
    """SafeLoader that rejects duplicate keys in a mapping, numbers bounded (tcplab.literals).

    Merge keys (``<<: *anchor``, ``<<: [*a, *b]``) follow YAML 1.1 (yaml.org/type/merge.html):
    duplicates are looked for among the keys written in one mapping (a key that overrides a
    merged one is none), explicit keys override merged ones, earlier merged mappings override
    later ones. Unlike PyYAML's flatten_mapping, nodes are not rewritten (a mapping merged here
    and used again through its anchor is read the same), each mapping is flattened once (no
    blow-up from merging the same anchors again and again, yaml/pyyaml#897), and of a merged
    list the earlier mapping wins for every key (PyYAML 6.0.4 lets the later win for keys of
    more than one character, yaml/pyyaml#953).
    """

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._checked: set[int] = set()
        self._flat: dict[int, list[Pair]] = {}
        self._flattening: set[int] = set()

    def _check_duplicates(self, node: yaml.MappingNode) -> None:
        """Refuse a key written twice in ``node`` (merge keys included), naming both lines."""
        if id(node) in self._checked:
            return
        seen: dict[Any, int] = {}
        for key_node, _value_node in node.value:
            if key_node.tag == _VALUE_TAG:  # "=", as PyYAML reads it
                key_node.tag = _STR_TAG
            key = "<<" if key_node.tag == _MERGE_TAG else self.construct_object(key_node)
            try:
                hash(key)
            except TypeError:
                raise yaml.constructor.ConstructorError(
                    None, None, "a mapping key must be a plain value", key_node.start_mark
                ) from None
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    f"the key {show_value(key)} first given on line {seen[key] + 1}",
                    node.start_mark,
                    f"duplicate key {show_value(key)}",
                    key_node.start_mark,
                )
            seen[key] = key_node.start_mark.line
        self._checked.add(id(node))

    def flat_pairs(self, node: yaml.MappingNode) -> list[Pair]:
        """``node``'s (key, value) pairs with its merges applied, in PyYAML's order (merged
        keys first, then the explicit ones), each key once with the value that wins."""
        if id(node) in self._flat:
            return self._flat[id(node)]
        self._check_duplicates(node)
        self._flattening.add(id(node))
        merged: dict[Any, Pair] = {}
        for source in _merge_sources(node):
            if id(source) in self._flattening:  # an anchor merged into itself: nothing to add
                continue
            for key_node, value_node in self.flat_pairs(source):
                merged.setdefault(self.construct_object(key_node), (key_node, value_node))  # earlier wins
        self._flattening.discard(id(node))
        # Explicit keys win; one that overrides a merged key keeps its place (PyYAML's order:
        # merged keys first, then the mapping's own).
        result = dict(merged)
        result.update((self.construct_object(k), (k, v)) for k, v in node.value if k.tag != _MERGE_TAG)
        pairs = list(result.values())
        self._flat[id(node)] = pairs
        return pairs


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    mapping = {}
    for key_node, value_node in loader.flat_pairs(node):
        mapping[loader.construct_object(key_node, deep=deep)] = loader.construct_object(value_node, deep=deep)
    return mapping


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def builtin_dir() -> Any:
    """The directory of the built-in scenarios (``builtin:NAME`` is ``NAME.yaml`` there)."""
    return resources.files("tcplab") / "scenarios"


def builtin_names() -> list[str]:
    """Built-in scenario names, sorted (no file is parsed: resolving ``builtin:NAME`` reads one)."""
    return sorted(e.name[: -len(".yaml")] for e in builtin_dir().iterdir() if e.name.endswith(".yaml"))


def builtin_scenarios() -> dict[str, str]:
    """Built-in scenario names and their one-line descriptions."""
    out = {}
    for entry in sorted(builtin_dir().iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".yaml"):
            name = entry.name[: -len(".yaml")]
            try:
                data = yaml.safe_load(entry.read_text(encoding="utf-8")) or {}
                text = " ".join(str(data.get("description") or "").split())
            except yaml.YAMLError:
                text = ""
            first = text.split(": ")[0].split(". ")[0].rstrip(".")
            out[name] = first
    return out


def resolve_reference(ref: str | Path) -> tuple[str, str]:
    """(label, YAML text) for a file path, ``builtin:NAME`` or a bare built-in NAME."""
    text_ref = str(ref)
    if text_ref.startswith(BUILTIN_PREFIX):
        return _read_builtin(text_ref[len(BUILTIN_PREFIX) :], text_ref)
    if not text_ref.strip():  # Path("") is the current directory
        raise ScenarioError(
            "an empty name", file="SCENARIO", value=text_ref, expected="a scenario YAML file or builtin:NAME"
        )
    path = Path(text_ref)
    if path.is_file():
        try:
            return text_ref, path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ScenarioError(
                f"cannot read the file ({e.__class__.__name__}: {e})",
                file=text_ref,
                expected="a readable UTF-8 YAML file",
            ) from None
    if path.is_dir():
        raise ScenarioError("is a directory", file=text_ref, expected="a scenario YAML file")
    names = builtin_names()
    if text_ref in names:
        return _read_builtin(text_ref, f"{BUILTIN_PREFIX}{text_ref}")
    raise ScenarioError(
        "no such file or built-in scenario",
        file=text_ref,
        expected="a path to a scenario YAML file or a built-in name (" + ", ".join(names) + ")",
    )


def _read_builtin(name: str, label: str) -> tuple[str, str]:
    names = builtin_names()
    if name not in names:
        raise ScenarioError(
            f"unknown built-in scenario {show_value(name)}", file=label, expected="one of: " + ", ".join(names)
        )
    return label, (builtin_dir() / f"{name}.yaml").read_text(encoding="utf-8")


def read_scenario_data(text: str, label: str) -> dict:
    """Parse YAML text into the plain data of a scenario (a mapping), with its line map.

    A text read before is not parsed again: ``tcplab reproduce`` plans ~160 runs from a
    dozen files (PyYAML's pure-Python parser reads each three times: nesting, data, lines).
    The caller gets its own copy of the data, to override as it likes."""
    parsed = _parse_scenario_text(text, label)
    doc = _Document(copy.deepcopy(dict(parsed)))
    doc.lines = dict(parsed.lines)
    return doc


@functools.lru_cache(maxsize=32)
def _parse_scenario_text(text: str, label: str) -> _Document:
    """:func:`read_scenario_data`'s parse (errors are raised, never cached); never mutate the result."""
    try:
        _check_yaml_nesting(text, label)
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
        root = yaml.compose(text, Loader=_StrictLoader)  # noqa: S506 - nodes only, for line numbers
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = e.problem or "invalid YAML"
        if e.context and "first given" in str(e.context):
            problem += f" ({e.context})"
        raise ScenarioError(f"{where}{problem}", file=label, expected="valid YAML") from None
    except yaml.YAMLError as e:
        raise ScenarioError(f"invalid YAML ({e})", file=label, expected="valid YAML") from None
    except RecursionError:  # a backstop: _check_yaml_nesting bounds the depth first
        raise _too_deep(label) from None
    if data is None:
        raise ScenarioError(
            "the file is empty", file=label, expected="a scenario mapping with name, duration, hosts, links and flows"
        )
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else show_value(data)
        raise ScenarioError(
            f"the top level is {kind}",
            file=label,
            expected="a mapping with keys such as name, duration, hosts, links, flows",
        )
    doc = _Document(data)
    doc.lines = node_lines(root) if root is not None else {}
    return doc


def _too_deep(label: str, line: int | None = None) -> ScenarioError:
    return ScenarioError(
        f"nested more than {MAX_NESTING} levels deep",
        file=label,
        lineno=line,
        expected=f"a scenario nested at most {MAX_NESTING} levels (mappings and lists)",
    )


def _check_yaml_nesting(text: str, label: str) -> None:
    """Refuse documents nested deeper than MAX_NESTING, from PyYAML's (iterative) event stream."""
    depth = 0
    for event in yaml.parse(text, Loader=_StrictLoader):  # noqa: S506 - events only
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_NESTING:
                raise _too_deep(label, event.start_mark.line + 1)
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def check_data_nesting(data: Any, label: str) -> None:
    """The same bound for data given as Python objects (a dict passed to :func:`load_scenario`)."""
    stack = [(data, 1)]
    seen: set[int] = set()
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list, tuple)):
            if depth > MAX_NESTING:
                raise _too_deep(label)
            if id(value) in seen:
                continue
            seen.add(id(value))
            children = value.values() if isinstance(value, dict) else value
            stack.extend((child, depth + 1) for child in children)


_SYSCTL_PREFIXES = ("net.ipv4.", "net/ipv4/")
_MAX_LINE_ENTRIES = 1_000_000


def _line_pairs(node: yaml.MappingNode, memo: dict[int, list[Pair]], busy: frozenset[int] = frozenset()) -> list[Pair]:
    """The (key, value) nodes of a mapping with plain keys, merges applied as the loader applies
    them (explicit keys first, then each merged mapping's in order, a key's first one kept), so
    that a merged field's line is where its value is written: in the anchored mapping."""
    if id(node) in memo:
        return memo[id(node)]
    pairs: dict[str, Pair] = {}
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.tag != _MERGE_TAG:
            pairs.setdefault(str(key_node.value), (key_node, value_node))
    try:
        sources = _merge_sources(node)
    except yaml.YAMLError:  # the loader reports it; lines are best effort
        sources = []
    for source in sources:
        if id(source) not in busy and id(source) != id(node):
            for key_node, value_node in _line_pairs(source, memo, busy | {id(node)}):
                pairs.setdefault(str(key_node.value), (key_node, value_node))
    memo[id(node)] = list(pairs.values())
    return memo[id(node)]


def node_lines(root: yaml.Node) -> dict[tuple[str, ...], int]:
    """Field path -> 1-based line: of the key for a mapping entry, of the item for a list item.

    A field merged from an anchored mapping (``<<: *slow``) has the line where it is written
    in that mapping; one that overrides it, its own line.

    Paths use the text of the keys as validation errors do (``("flows", "0", "from")``); a
    sysctl key written with its ``net.ipv4.`` prefix is also recorded without it.
    """
    lines: dict[tuple[str, ...], int] = {}
    merged: dict[int, list[Pair]] = {}
    stack: list[tuple[tuple[str, ...], yaml.Node]] = [((), root)]
    budget = _MAX_LINE_ENTRIES  # aliases can repeat a subtree many times: stop early, not hang
    while stack and budget > 0:
        path, node = stack.pop()
        if len(path) > MAX_NESTING:  # a recursive alias
            continue
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in _line_pairs(node, merged):
                key = str(key_node.value)
                for k in [key] + [key[len(p) :] for p in _SYSCTL_PREFIXES if key.startswith(p)]:
                    lines.setdefault((*path, k), key_node.start_mark.line + 1)
                    stack.append(((*path, k), value_node))
                    budget -= 1
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                lines.setdefault((*path, str(i)), item.start_mark.line + 1)
                stack.append(((*path, str(i)), item))
                budget -= 1
    return lines


def load_scenario(
    source: str | Path | Mapping[str, Any] | Scenario,
    overrides: Iterable[str | Override] | Mapping[str, Any] | None = None,
    *,
    seed: int | None = None,
) -> Scenario:
    """Read, override and validate a scenario.

    Args:
        source: a path, ``builtin:NAME``, a bare built-in name, a dict, or a Scenario.
        overrides: ``["links.0.loss=0.1%", ...]`` as on the command line, or a mapping
            ``{"links.0.loss": "0.1%"}`` whose values are used as they are.
        seed: shorthand for the override ``seed=N``.

    Raises:
        ScenarioError: for any problem with the scenario, with file, field path and value.
    """
    ovs = parse_overrides(overrides)
    if seed is not None:
        label = value_text(seed)
        ovs.append(Override(text=f"seed={label}", path=("seed",), values=(seed,), labels=(label,)))
    label, data = scenario_data(source)
    return validate_with_overrides(data, ovs, label)


def scenario_data(source: str | Path | Mapping[str, Any] | Scenario) -> tuple[str, dict]:
    """(label, plain data) of a scenario reference, before overrides."""
    if isinstance(source, Scenario):
        doc = _Document(source._raw)
        doc.lines = dict(source._lines)
        return source.source or "<scenario>", doc
    if isinstance(source, Mapping):
        return "<dict>", dict(source)
    if isinstance(source, (str, Path)):
        label, text = resolve_reference(source)
        return label, read_scenario_data(text, label)
    raise TypeError(f"expected a path, a dict or a Scenario, not {type(source).__name__}")


def validate_with_overrides(
    data: dict, overrides: list[Override], label: str, choice: tuple[int, ...] | None = None
) -> Scenario:
    """Apply ``overrides`` (alternative ``choice``) to ``data``, validate, remember the source.

    Errors name the line of the field in the file when ``data`` came from one
    (:func:`read_scenario_data`), and ``--set`` for values that came from an override.
    """
    lines = getattr(data, "lines", None) or {}
    try:
        check_data_nesting(data, label)
        raw = apply_overrides(data, overrides, choice=choice)
        check_data_nesting(raw, label)
        scenario = validate_scenario(raw, label, lines=lines)
    except ScenarioError as e:
        _attribute_to_overrides(e, overrides)
        raise
    except RecursionError:  # a backstop: the nesting checks above bound the depth first
        raise _too_deep(label) from None
    _attribute_to_overrides(scenario._warnings, overrides)
    scenario._source = label
    scenario._raw = raw
    scenario._lines = lines
    return scenario


def _attribute_to_overrides(error: ScenarioError | list[ScenarioWarning], overrides: list[Override]) -> None:
    """Errors (and warnings) in a value that came from ``--set`` name ``--set`` instead of the file."""
    # Error paths name sysctl keys as written (validation._as_written); a bare key in the
    # override can still meet a prefixed one in the file, so compare both forms.
    dotted = [ov.dotted for ov in overrides] + [
        ov.dotted.replace(f"sysctl.{p}", "sysctl.") for ov in overrides for p in ("net.ipv4.", "net.core.")
    ]
    items = error if isinstance(error, list) else error.errors
    for e in items:
        if any(e.path == d or e.path.startswith(d + ".") for d in dotted):
            e.file = "--set"
            e.lineno = None
    if isinstance(error, ScenarioError) and error.errors:
        first = error.errors[0]
        error.file = first.file
        error.lineno = first.lineno
        error.args = (error.line(),)
