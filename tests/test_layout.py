"""The Python front keeps its floor plan (issue 22; the rules of ../shared/DESIGN.md's "Layout").

The plan and the checker live in tests/layout_rules.py (``python tests/layout_rules.py``
prints today's violations by rule). Each rule is shown to catch a violation planted in a
small synthetic package under tmp_path, then the real tree is checked rule by rule.
"""

from __future__ import annotations

import functools
import textwrap
from pathlib import Path

import pytest

import layout_rules as L

PYTHON = Path(__file__).resolve().parents[1] / "python"

#: The synthetic package's plan: a few floors of the real one.
FLOORS = {
    "units": 0,
    "scenario": 1,
    "engine": 2,
    "_core": 2,
    "results": 3,
    "views": 4,
    "runner": 5,
    "sweep": 6,
    "recommend": 6,
    "commands": 7,
    "cli": 7,
}
SAME_FLOOR = frozenset({("engine", "_core"), ("recommend", "sweep"), ("cli", "commands")})

#: A tree that keeps every rule: each test plants one violation in (a copy of) it.
CLEAN = {
    "__init__.py": """
        def __getattr__(name):
            from tcplab.runner import run  # the facade is the API over every floor
            return run
    """,
    "units.py": "SECOND_NS = 1_000_000_000\n",
    "scenario/__init__.py": "from tcplab.scenario.model import Scenario\n",
    "scenario/model.py": """
        from tcplab.units import SECOND_NS
        class Scenario: ...
    """,
    "engine.py": """
        def import_core():
            from tcplab import _core
            return _core
    """,
    "results/__init__.py": "from tcplab.results.paths import route\n",
    "results/paths.py": """
        from ..scenario import model
        from . import _hops
        def route(): return _hops.HOPS
    """,
    "results/_hops.py": "HOPS = 1\n",
    "views/__init__.py": "",
    "views/plots.py": """
        from typing import TYPE_CHECKING
        from tcplab.results import paths
        if TYPE_CHECKING:
            from tcplab.runner import Run  # a type hint only
        def draw(): return paths.route(), paths.__name__
    """,
    "runner.py": """
        from tcplab.engine import import_core
        from tcplab.views import plots
        def run(): return plots.draw()
    """,
    "sweep/__init__.py": "from tcplab.sweep.space import sweep\n",
    "sweep/space.py": "from tcplab.runner import run\ndef sweep(): return run()\n",
    "recommend/__init__.py": "",
    "recommend/choose.py": "from tcplab.sweep import sweep\n",
    "commands/__init__.py": "",
    "commands/common.py": "def guard(): ...\n",
    "commands/sweep.py": "from tcplab.commands.common import guard\nfrom tcplab.sweep import sweep\n",
    "cli.py": "import importlib\ndef main():\n    importlib.import_module('tcplab.commands.sweep')\n",
}


def tree(tmp_path: Path, files: dict[str, str]) -> Path:
    """Write the synthetic package tcplab/ under tmp_path: its root (the python/ of the tree)."""
    for name, text in files.items():
        path = tmp_path / "tcplab" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return tmp_path


def check(tmp_path: Path, changes: dict[str, str] | None = None) -> dict[str, list[str]]:
    """The violations of CLEAN with ``changes`` (file under tcplab/ -> its new text)."""
    return L.violations(tree(tmp_path, {**CLEAN, **(changes or {})}), floors=FLOORS, same_floor=SAME_FLOOR)


def only(found: dict[str, list[str]], rule: str, loops: bool = False) -> list[str]:
    """The violations of ``rule``, after checking that no other rule found any (but a loop,
    with ``loops``: an upward import in a layered tree closes one)."""
    others = {r: v for r, v in found.items() if r != rule and v and not (loops and r == L.RULE_LOOPS)}
    assert not others, others
    return found[rule]


def test_the_clean_tree_keeps_every_rule(tmp_path):
    found = check(tmp_path)
    assert found == {rule: [] for rule in L.RULES}


# --- rule 1: floors ------------------------------------------------------------------------


def test_a_lower_floor_importing_a_higher_one_is_caught(tmp_path):
    got = only(check(tmp_path, {"results/paths.py": "from tcplab.runner import run\n"}), L.RULE_FLOORS, loops=True)
    assert len(got) == 1 and "results/paths.py:1: results -> runner" in got[0] and "floor 3 imports floor 5" in got[0]


def test_a_function_local_import_counts(tmp_path):
    text = "from tcplab.units import SECOND_NS\nclass Scenario:\n    def run(self):\n        import tcplab.runner\n"
    got = only(check(tmp_path, {"scenario/model.py": text}), L.RULE_FLOORS, loops=True)
    assert len(got) == 1 and "scenario/model.py:4: scenario -> runner" in got[0]


def test_an_import_module_call_with_a_literal_name_counts(tmp_path):
    text = "import importlib\nimportlib.import_module('tcplab.sweep.space')\n"
    got = only(check(tmp_path, {"units.py": text}), L.RULE_FLOORS, loops=True)
    assert len(got) == 1 and "units -> sweep" in got[0]


def test_a_type_checking_import_is_exempt_but_its_else_branch_counts(tmp_path):
    text = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tcplab.runner import Run\nelse:\n    from tcplab.views import plots\n"
    got = only(check(tmp_path, {"units.py": text}), L.RULE_FLOORS, loops=True)
    assert len(got) == 1 and "units.py:5: units -> views" in got[0]


def test_an_import_inside_one_floor_needs_the_tables_leave(tmp_path):
    # sweep and recommend share floor 6: recommend -> sweep is allowed, not the other way
    got = only(check(tmp_path, {"sweep/space.py": "import tcplab.recommend\n"}), L.RULE_FLOORS, loops=True)
    assert len(got) == 1 and "sweep -> recommend" in got[0] and "its own floor" in got[0]


def test_a_package_without_a_floor_and_a_floor_without_a_package_are_caught(tmp_path):
    got = only(check(tmp_path, {"extra/__init__.py": "", "extra/x.py": "X = 1\n"}), L.RULE_FLOORS)
    assert got == ["package 'extra' has no floor: place it in FLOORS (and in DESIGN.md's picture)"]
    files = {k: v for k, v in CLEAN.items() if not k.startswith("recommend/")}
    found = L.violations(tree(tmp_path / "b", files), floors=FLOORS, same_floor=SAME_FLOOR)
    assert only(found, L.RULE_FLOORS) == [
        "FLOORS names 'recommend', which is not in the tree: remove it (and from DESIGN.md's picture)"
    ]


# --- rule 2: loops, and a submodule importing its own package's __init__ --------------------


def test_a_loop_between_two_packages_is_caught(tmp_path):
    # views -> results already; results -> views closes the loop (and breaks two other rules)
    found = check(tmp_path, {"results/_hops.py": "def hops():\n    from tcplab.views.plots import draw\n"})
    assert len(found[L.RULE_LOOPS]) == 1
    loop = found[L.RULE_LOOPS][0]
    assert loop.startswith("loop between results, views:")
    assert "results -> views: " in loop and "results/_hops.py:2" in loop and "views -> results: " in loop


def test_a_loop_through_a_same_floor_pair_is_caught(tmp_path):
    # recommend -> sweep is allowed; sweep -> recommend makes a loop as well as a floor violation
    found = check(tmp_path, {"sweep/space.py": "from tcplab.runner import run\nfrom tcplab.recommend import choose\n"})
    assert [line.split(":")[0] for line in found[L.RULE_LOOPS]] == ["loop between recommend, sweep"]


def test_a_loop_inside_one_package_is_allowed(tmp_path):
    found = check(tmp_path, {"results/_hops.py": "from tcplab.results import paths\nHOPS = 1\n"})
    assert found == {rule: [] for rule in L.RULES}


def test_a_submodule_taking_a_name_from_its_own_package_init_is_caught(tmp_path):
    got = only(
        check(tmp_path, {"sweep/space.py": "from . import sweep as _again\nfrom tcplab.runner import run\n"}),
        L.RULE_OWN_INIT,
    )
    assert (
        len(got) == 1
        and "sweep/space.py:1: tcplab.sweep.space imports name 'sweep' from tcplab.sweep/__init__" in got[0]
    )


def test_importing_a_sibling_submodule_through_the_package_is_not_its_init(tmp_path):
    space = "from tcplab.runner import run\ndef sweep():\n    from tcplab.sweep import keys\n"
    found = check(tmp_path, {"sweep/space.py": space, "sweep/keys.py": "KEY = 1\n"})
    assert found == {rule: [] for rule in L.RULES}


def test_a_module_importing_the_facade_is_caught(tmp_path):
    found = check(tmp_path, {"units.py": "from tcplab import __version__\n"})
    assert len(found[L.RULE_OWN_INIT]) == 1 and "from tcplab/__init__" in found[L.RULE_OWN_INIT][0]
    # the facade imports runner, so units -> the facade also closes a loop
    assert found[L.RULE_LOOPS] and "units -> tcplab" in found[L.RULE_LOOPS][0]


# --- rule 3: the never arrows and private names ------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "arrow"),
    [
        ("results/_hops.py", "from tcplab.views import plots\n", "results -> views"),
        ("views/plots.py", "def f():\n    from tcplab.runner import run\n", "views -> runner"),
        ("sweep/space.py", "from tcplab.runner import run\nfrom tcplab.cli import main\n", "sweep -> cli"),
        (
            "recommend/choose.py",
            "from tcplab.sweep import sweep\nfrom tcplab.commands.common import guard\n",
            "recommend -> commands",
        ),
    ],
)
def test_a_never_arrow_is_caught(tmp_path, name, text, arrow):
    got = check(tmp_path, {name: text})[L.RULE_NEVER]
    assert len(got) == 1 and arrow in got[0]


@pytest.mark.parametrize(
    ("name", "text", "what"),
    [
        (
            "views/plots.py",
            "from tcplab.results.paths import route\nfrom tcplab.results import _hops\n",
            "the private module tcplab.results._hops",
        ),
        ("runner.py", "from tcplab.views.plots import draw as _draw\n", None),
        (
            "runner.py",
            "from tcplab.views import plots\nfrom tcplab.results.paths import _x\n",
            "'_x' of tcplab.results.paths",
        ),
        (
            "runner.py",
            "from tcplab.views import plots\ndef f():\n    return plots._draw()\n",
            "'_draw' of tcplab.views.plots",
        ),
        (
            "runner.py",
            "import tcplab.views.plots\ndef f():\n    return tcplab.views.plots._draw()\n",
            "'_draw' of tcplab.views.plots",
        ),
        ("runner.py", "import tcplab.views.plots as p\nX = p.__name__, p._SAVE\n", "'_SAVE' of tcplab.views.plots"),
        ("sweep/space.py", "import tcplab._core\n", "the private module tcplab._core"),
    ],
)
def test_a_private_name_of_another_package_is_caught(tmp_path, name, text, what):
    got = check(tmp_path, {name: text})[L.RULE_PRIVATE]
    if what is None:  # a private alias of a public name is the importer's own business
        assert got == []
    else:
        assert len(got) == 1 and what in got[0]


def test_private_names_inside_one_package_and_the_engine_bridge_are_allowed(tmp_path):
    # results/paths.py imports results._hops, engine imports tcplab._core (PRIVATE_ALLOWED)
    found = L.violations(tree(tmp_path, CLEAN), floors=FLOORS, same_floor=SAME_FLOOR)
    assert found[L.RULE_PRIVATE] == []
    found = L.violations(tree(tmp_path, CLEAN), floors=FLOORS, same_floor=SAME_FLOOR, private_allowed=frozenset())
    assert (
        len(found[L.RULE_PRIVATE]) == 1
        and "engine.py:3: tcplab.engine uses the private module tcplab._core" in found[L.RULE_PRIVATE][0]
    )


# --- the real tree -----------------------------------------------------------------------


@functools.cache
def real_violations() -> dict[str, list[str]]:
    return L.violations(PYTHON)


@pytest.mark.parametrize("rule", L.RULES)
def test_the_tree_keeps_the_rule(rule):
    found = real_violations()[rule]
    assert not found, f"rule {rule}:\n" + "\n".join(found)
