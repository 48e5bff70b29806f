"""The Python front's floor plan, as data and as a checker (issue 22; used by tests/test_layout.py).

The plan is the "Layout" section of ``../shared/DESIGN.md`` (its floor picture and its
"Never" line) as fixed by ARCH22: data flows one way, scenario -> engine -> results ->
views -> runs -> the commands' packages -> the commands. :data:`FLOORS` is that picture as a
table, the one place the test reads it: a change that needs another shape changes DESIGN.md's
picture and this table together, and says why.

The checker reads the sources with :mod:`ast` (nothing is imported). An import is an edge
from the importing module to the module that defines what it imports: ``from tcplab.views
import plots`` is an edge to ``tcplab.views.plots``, ``from tcplab.views import Figure`` an
edge to ``tcplab.views`` (its ``__init__``). Function-local imports count like any other;
``importlib.import_module("tcplab.x")`` with a literal name counts too. Imports under ``if
TYPE_CHECKING:`` are type hints only (they never run) and are not edges.

A *package* is a directory under ``tcplab/`` or a top-level module (``tcplab.views.plots``
belongs to ``views``, ``tcplab.runner`` to ``runner``); ``tcplab/__init__.py`` is the
facade of the Python API, the package named ``tcplab`` here. The rules:

1. floors: a package imports packages of lower floors freely, of its own floor only where
   :data:`SAME_FLOOR` says so, never of a higher floor; every package has a floor.
2. loops: no import loop between two packages; and no module imports a name from the
   ``__init__`` of a package that contains it (it imports the submodule that defines the
   name), so a package's ``__init__`` may re-export its submodules without a loop; the
   facade ``tcplab`` is the outermost such package (nothing inside tcplab imports it).
3. never: results -> views; views -> floor 5 or above; anything -> ``cli`` or ``commands``
   except ``cli`` -> ``commands``; a module -> a private name (``_x``, not ``__x__``) of
   another package, by ``from ... import _x``, by importing a private module, or by
   ``module._x`` on a module it imported.

(Rule 4 of ARCH22, the engine's leaves, is checked on the Rust side.)
"""

from __future__ import annotations

import ast
import collections
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

#: The floors of python/tcplab, lowest first: the picture of ../shared/DESIGN.md's "Layout"
#: section as ARCH22 fixes it (runner and compare sit above results and views because run()
#: returns a Result and writes its run directory with plots and exports). Keys are packages
#: (a directory under tcplab/ or a top-level module); the facade ``tcplab`` has no floor (it
#: is the API over all of them, and nothing inside imports it).
FLOORS: dict[str, int] = {
    # 0 leaves
    "units": 0,
    "errors": 0,
    "columns": 0,
    "progress": 0,
    "signals": 0,
    "literals": 0,
    "output_files": 0,
    "version": 0,
    "procpool": 0,
    # 1 scenario
    "scenario": 1,
    "loader": 1,
    "overrides": 1,
    "routing": 1,
    # 2 engine: the bridge to the compiled engine, and the compiled engine behind it
    "engine": 2,
    "_core": 2,
    # 3 results (Result, the run directory's files, counters, ss/tc texts, paths)
    "results": 3,
    # 4 views (plots, reports, the drawing module) and exports (flent, iperf3, ss, pcap)
    "views": 4,
    "exports": 4,
    # 5 runs
    "runner": 5,
    "compare": 5,
    # 6 the commands' packages
    "experiments": 6,
    "sweep": 6,
    "recommend": 6,
    "kernel": 6,
    "packetdrill": 6,
    "diagnose": 6,
    "collect": 6,
    # 7 commands: one module per command (commands/), and cli.py, which only assembles
    "commands": 7,
    "cli": 7,
}

#: Imports between two packages of one floor that the plan allows (importer, imported).
#: ARCH22 names the floor-6 pairs and cli -> commands; the others are today's imports inside
#: floors 0, 1, 2 and 5, which run one way (no loop): the leaves' error and literal helpers,
#: the scenario parsers reading the model, the bridge to the compiled engine, compare running
#: runner's run(). Any other import inside a floor is a violation.
SAME_FLOOR: frozenset[tuple[str, str]] = frozenset(
    {
        ("errors", "literals"),
        ("units", "errors"),
        ("units", "literals"),
        ("output_files", "errors"),
        ("procpool", "signals"),
        ("loader", "scenario"),
        ("loader", "overrides"),
        ("overrides", "scenario"),
        ("scenario", "routing"),
        ("engine", "_core"),
        ("compare", "runner"),
        ("recommend", "sweep"),  # recommend's scenario form runs a sweep
        ("experiments", "diagnose"),  # the reports' cross-checks
        ("kernel", "diagnose"),  # a kernel run reads its hosts' ss/nstat/tc text with diagnose's readers
        ("collect", "diagnose"),  # collect names what it gathered with diagnose's readers (sysctl)
        ("cli", "commands"),
    }
)

#: Private names one package may take from another: the bridge to the compiled engine.
#: kernel -> _core: kernel.delayline_main runs the delay line linked into the compiled module
#: (``_core.delayline_main``) in a process of its own, without the engine's pandas bridge.
PRIVATE_ALLOWED: frozenset[tuple[str, str]] = frozenset({("engine", "_core"), ("kernel", "_core")})

#: Modules with no Python source (compiled), known by name.
EXTENSION_MODULES = ("tcplab._core",)

TOP = "tcplab"

RULE_FLOORS = "1 floors"
RULE_LOOPS = "2 loops between packages"
RULE_OWN_INIT = "2 a module imports its own package's __init__"
RULE_NEVER = "3 never arrows"
RULE_PRIVATE = "3 private names of another package"
RULES = (RULE_FLOORS, RULE_LOOPS, RULE_OWN_INIT, RULE_NEVER, RULE_PRIVATE)


@dataclass(frozen=True)
class Module:
    name: str  # dotted, "tcplab.views.plots"; a package by its own name ("tcplab.views")
    path: Path | None  # None for a compiled module
    is_package: bool


@dataclass(frozen=True)
class Edge:
    """One import: ``src`` (a module) imports ``dst`` (the module that defines it)."""

    src: str
    dst: str
    name: str | None  # the name taken from dst's namespace (not a submodule), else None
    where: str  # "path:line"
    attribute: bool = False  # a read of ``module._x``, not an import (rule 3's private names only)


def find_modules(root: Path, top: str = TOP, extensions: Iterable[str] = EXTENSION_MODULES) -> dict[str, Module]:
    """The modules of the package directory ``root/top``."""
    mods: dict[str, Module] = {}
    base = root / top
    for path in sorted(base.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        mods[".".join(parts)] = Module(".".join(parts), path, is_package)
    for name in extensions:
        if name.split(".")[0] == top:
            mods.setdefault(name, Module(name, None, False))
    return mods


def package_of(module: str) -> str:
    """The package a module belongs to: "tcplab.views.plots" -> "views"; the facade is "tcplab"."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of ``tree`` except the bodies of ``if TYPE_CHECKING:`` (their else runs)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            stack.append(node.test)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _existing(name: str, mods: dict[str, Module]) -> str | None:
    """The longest prefix of ``name`` that is a module of the tree."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def _from_base(module: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = module.name.split(".")
    package = parts if module.is_package else parts[:-1]
    package = package[: len(package) - (node.level - 1)]
    return ".".join(package + ([node.module] if node.module else []))


def _literal_import_module(node: ast.AST) -> str | None:
    """The name in ``importlib.import_module("x")`` / ``import_module("x")`` with a literal."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    arg = node.args[0]
    if called == "import_module" and isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    return None


def _dotted(node: ast.expr) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def module_edges(module: Module, source: str, mods: dict[str, Module], top: str = TOP) -> list[Edge]:
    """The imports of one module (the runtime ones) as edges to modules of the tree, plus
    ``alias._x`` reads on a module it imported (as an edge with ``name`` set)."""
    tree = ast.parse(source, filename=str(module.path))
    where = f"{module.path}" if module.path else module.name
    edges: list[Edge] = []
    bound: dict[str, str] = {}  # local name -> module of the tree it is bound to

    def add(dst_dotted: str, name: str | None, line: int) -> str | None:
        if dst_dotted.split(".")[0] != top:
            return None
        dst = _existing(dst_dotted, mods)
        if dst is None:
            return None
        if dst != dst_dotted and name is None:
            # "import tcplab._core" style with a part missing: the last known module's name
            name = dst_dotted[len(dst) + 1 :].split(".")[0]
        edges.append(Edge(module.name, dst, name, f"{where}:{line}"))
        return dst

    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                dst = add(alias.name, None, node.lineno)
                if dst is not None:
                    if alias.asname:
                        bound[alias.asname] = dst
                    else:
                        bound.setdefault(alias.name.split(".")[0], alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(module, node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in mods:
                    dst = add(sub, None, node.lineno)
                    if dst is not None:
                        bound[alias.asname or alias.name] = dst
                else:
                    add(base, alias.name, node.lineno)
        else:
            target = _literal_import_module(node)
            if target is not None:
                add(target, None, node.lineno)
    # module._x on a module bound by an import (module-wide, whatever the scope)
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            parts = _dotted(node.value)
            if parts and parts[0] in bound:
                owner = ".".join([bound[parts[0]], *parts[1:]])
                if owner in mods:
                    edges.append(Edge(module.name, owner, node.attr, f"{where}:{node.lineno}", attribute=True))
    return edges


def all_edges(mods: dict[str, Module], top: str = TOP) -> list[Edge]:
    edges = []
    for module in mods.values():
        if module.path is not None:
            edges += module_edges(module, module.path.read_text(encoding="utf-8"), mods, top)
    return [e for e in edges if e.src != e.dst or e.name is not None]


# --- the rules ----------------------------------------------------------------------------


def check_floors(
    edges: Iterable[Edge],
    mods: dict[str, Module],
    floors: dict[str, int],
    same_floor: frozenset[tuple[str, str]],
    top: str = TOP,
) -> list[str]:
    out = []
    packages = {package_of(m) for m in mods} - {top}
    for package in sorted(packages - set(floors)):
        out.append(f"package {package!r} has no floor: place it in FLOORS (and in DESIGN.md's picture)")
    for package in sorted(set(floors) - packages):
        out.append(f"FLOORS names {package!r}, which is not in the tree: remove it (and from DESIGN.md's picture)")
    seen = set()
    for e in edges:
        a, b = package_of(e.src), package_of(e.dst)
        if a == b or top in (a, b) or a not in floors or b not in floors:
            continue  # the facade is rule 2's; a package without a floor is reported above
        fa, fb = floors[a], floors[b]
        if fb > fa:
            why = f"floor {fa} imports floor {fb}"
        elif fb == fa and (a, b) not in same_floor:
            why = f"floor {fa} imports its own floor (not in SAME_FLOOR)"
        else:
            continue
        key = (e.src, e.dst, e.where)
        if key not in seen:
            seen.add(key)
            out.append(f"{e.where}: {a} -> {b} ({e.src} imports {e.dst}): {why}")
    return out


def _sccs(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def check_loops(edges: Iterable[Edge]) -> list[str]:
    """Import loops between packages: each loop with the imports that close it."""
    edges = list(edges)
    graph: dict[str, set[str]] = collections.defaultdict(set)
    for e in edges:
        a, b = package_of(e.src), package_of(e.dst)
        if a != b:
            graph[a].add(b)
    out = []
    for comp in _sccs(graph):
        members = set(comp)
        arrows = sorted(
            {
                (package_of(e.src), package_of(e.dst))
                for e in edges
                if package_of(e.src) in members
                and package_of(e.dst) in members
                and package_of(e.src) != package_of(e.dst)
            }
        )
        lines = [f"loop between {', '.join(comp)}:"]
        for a, b in arrows:
            first = next(e for e in edges if (package_of(e.src), package_of(e.dst)) == (a, b))
            lines.append(f"    {a} -> {b}: {first.where} ({first.src} imports {first.dst})")
        out.append("\n".join(lines))
    return out


def check_own_init(edges: Iterable[Edge], mods: dict[str, Module]) -> list[str]:
    """A module that takes a name (not a submodule) from a package containing it."""
    out = []
    for e in edges:
        if not mods[e.dst].is_package or e.src == e.dst:
            continue
        if e.src.startswith(e.dst + ".") and (e.name is None or f"{e.dst}.{e.name}" not in mods):
            what = f"name {e.name!r}" if e.name else "the package"
            out.append(
                f"{e.where}: {e.src} imports {what} from {e.dst}/__init__ (a package containing it): "
                "import the submodule that defines it"
            )
    return out


def check_never(edges: Iterable[Edge], floors: dict[str, int]) -> list[str]:
    out = []
    seen = set()
    for e in edges:
        a, b = package_of(e.src), package_of(e.dst)
        if a == b:
            continue
        if (a, b) == ("results", "views"):
            why = "results never imports views"
        elif a == "views" and floors.get(b, -1) >= 5:
            why = f"views never imports floor {floors[b]} ({b})"
        elif b in ("cli", "commands") and not (a == "cli" and b == "commands"):
            why = f"nothing imports {b} (only cli -> commands)"
        else:
            continue
        if (e.src, e.dst, e.where) not in seen:
            seen.add((e.src, e.dst, e.where))
            out.append(f"{e.where}: {a} -> {b} ({e.src} imports {e.dst}): {why}")
    return out


def check_private(edges: Iterable[Edge], allowed: frozenset[tuple[str, str]] = PRIVATE_ALLOWED) -> list[str]:
    out = []
    seen = set()
    for e in edges:
        a, b = package_of(e.src), package_of(e.dst)
        if a == b or (a, b) in allowed:
            continue
        if any(_is_private(p) for p in e.dst.split(".")[1:]):
            what = f"the private module {e.dst}"
        elif e.name is not None and _is_private(e.name):
            what = f"{e.name!r} of {e.dst}"
        else:
            continue
        if (e.src, what, e.where) not in seen:
            seen.add((e.src, what, e.where))
            out.append(f"{e.where}: {e.src} uses {what}, private to {b}: make it public (or move it)")
    return out


def violations(
    root: Path,
    top: str = TOP,
    floors: dict[str, int] = FLOORS,
    same_floor: frozenset[tuple[str, str]] = SAME_FLOOR,
    private_allowed: frozenset[tuple[str, str]] = PRIVATE_ALLOWED,
    extensions: Iterable[str] = EXTENSION_MODULES,
) -> dict[str, list[str]]:
    """Every violation of the rules under ``root/top``, by rule (empty lists when none)."""
    mods = find_modules(root, top, extensions)
    everything = all_edges(mods, top)
    edges = [e for e in everything if not e.attribute]
    return {
        RULE_FLOORS: check_floors(edges, mods, floors, same_floor, top),
        RULE_LOOPS: check_loops(edges),
        RULE_OWN_INIT: check_own_init(edges, mods),
        RULE_NEVER: check_never(edges, floors),
        RULE_PRIVATE: check_private(everything, private_allowed),
    }


def report(found: dict[str, list[str]]) -> str:
    lines = []
    for rule, items in found.items():
        lines.append(f"rule {rule}: {len(items)}")
        lines += [f"  {item}" for item in items]
    return "\n".join(lines)


if __name__ == "__main__":  # python tests/layout_rules.py [python-dir]
    import sys

    print(report(violations(Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parents[1] / "python"))))
