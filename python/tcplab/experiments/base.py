"""An experiment: a story from ``../shared/seeds`` replayed as scenario files plus the claims it checks.

The model. An experiment is a directory (a Python package) under ``tcplab/experiments/``
holding

* plain scenario files (``*.yaml``) a user can copy, run with ``tcplab run`` and change;
* ``claims.yaml``: the story's claims, each quoted verbatim from its seed file with the
  published figure (see :class:`Claim`);
* ``__init__.py``: ``EXPERIMENT``, an :class:`Experiment` that says which *runs* to make (a
  scenario file with ``--set``-style overrides, in full and in ``--quick`` mode), how the runs'
  results bear on each claim (:meth:`Experiment.evaluate`, returning a :class:`ClaimResult`
  per claim with tcplab's figure and a verdict), what the runs' own traces say about the
  mechanism (:meth:`Experiment.explain`, paragraphs with plots), and which ``tcplab diagnose``
  finding each run's tool texts must produce (:meth:`Experiment.crosschecks`).

Runs are planned and validated before anything is simulated (a bad scenario costs nothing),
then run in parallel worker processes (:mod:`tcplab.experiments.reproduce`), all experiments'
runs in one pool so that ``--all`` keeps both cores busy.

A verdict is derived from the model's result compared with the claim, never tuned: a claim the
model does not reproduce is reported ``not reproduced`` with the nearest figure and the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml

from tcplab.errors import ScenarioError

if TYPE_CHECKING:
    from tcplab.results import Result
    from tcplab.scenario import Scenario

__all__ = [
    "Verdict",
    "VERDICTS",
    "Claim",
    "ClaimResult",
    "SeedCount",
    "Run",
    "Explanation",
    "Crosscheck",
    "CROSSCHECK_RULES",
    "Experiment",
    "load_claims",
]

Verdict = Literal["reproduced", "partly", "not reproduced"]
#: Every verdict, in the order the index counts them.
VERDICTS: tuple[Verdict, ...] = ("reproduced", "partly", "not reproduced")


@dataclass(frozen=True)
class Claim:
    """One claim of a story, as ``claims.yaml`` gives it.

    ``quote`` is the story's own words (verbatim from ``story``, the seed file name);
    ``published`` is the figure or statement the story gives, in short (``"9.54 Mbit/s"``,
    ``"about 5x lower request latency"``); ``conditions`` what the story leaves unsaid and the
    experiment chose (stated in the report); ``out_of_scope`` the reason a claim is listed but
    not judged (the reports list such claims with it; :meth:`Experiment.evaluate` skips them).
    """

    id: str
    story: str
    quote: str
    published: str
    conditions: str = ""
    #: Why tcplab does not judge this claim (a control plane, a GPU driver, a design
    #: statement with nothing to measure); "" for a claim the experiment judges.
    out_of_scope: str = ""


@dataclass
class ClaimResult:
    """tcplab's answer to one claim.

    ``figure``: tcplab's figure in the claim's terms (``"9.43 Mbit/s"``, ``"p90 latency 152
    ms vs 600 ms (3.9x lower)"``). ``reason``: why the verdict, and for ``partly`` / ``not
    reproduced`` the nearest result and what the model lacks or does differently. ``data``:
    the numbers the verdict rests on (JSON-able; written to ``claims.json`` and used by tests).
    """

    claim: Claim
    figure: str
    verdict: Verdict
    reason: str
    data: dict[str, Any] = field(default_factory=dict)
    #: How quick and full mode judge this claim: the same runs, or what quick mode leaves
    #: out and whether that can change the verdict (a report never lets them differ silently).
    modes: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r}: expected one of {', '.join(VERDICTS)}")

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.claim.id,
            "story": self.claim.story,
            "quote": self.claim.quote,
            "published": self.claim.published,
            "conditions": self.claim.conditions,
            "figure": self.figure,
            "verdict": self.verdict,
            "reason": self.reason,
            "modes": self.modes,
            "data": self.data,
        }


@dataclass(frozen=True)
class Run:
    """One simulation of an experiment.

    ``scenario``: a file name in the experiment's directory. ``overrides``: ``--set`` texts
    (``"flows.0.cc=bbr"``, ``"hosts.nginx.nic.rx_ring=8192"``) applied in full and quick mode;
    ``quick_overrides`` are applied after them in ``--quick`` mode only (a shorter duration,
    fewer connections). ``quick``: whether the run is made in ``--quick`` mode at all (a sweep
    may keep only a few points). ``group``: a heading to gather runs under (``"case A"``).
    ``label`` is unique within the experiment and names the run's directory.
    """

    label: str
    scenario: str
    overrides: tuple[str, ...] = ()
    quick_overrides: tuple[str, ...] = ()
    quick: bool = True
    group: str = ""

    def overrides_for(self, quick: bool) -> list[str]:
        """The ``--set`` texts of the run, each path once with the value it takes: a quick
        override of a path the run also sets (``duration=40s``, then ``duration=6s``) replaces
        it (the same scenario as applying both in order: the later one overwrites)."""
        given = [*self.overrides, *(self.quick_overrides if quick else ())]
        path = [text.split("=", 1)[0].strip() for text in given]
        return [text for i, text in enumerate(given) if path[i] not in path[i + 1 :]]

    def command(self, experiment: str, quick: bool) -> str:
        """The ``tcplab run`` command line that makes this run by hand."""
        sets = " ".join(f"--set {o}" for o in self.overrides_for(quick))
        path = f"$(tcplab experiments path {experiment})/{self.scenario}"
        return f"tcplab run {path}" + (f" {sets}" if sets else "")


@dataclass
class Explanation:
    """A paragraph of the mechanism, drawn from the runs' own traces, with an optional figure.

    ``figure`` is a file name in the experiment's ``plots/`` directory (PNG), drawn by
    :meth:`Experiment.explain`; ``text`` is Markdown (one or a few paragraphs) whose numbers
    come from the results (times, modes, occupancies), not from the story.
    """

    title: str
    text: str
    figure: str | None = None


#: How a cross-check's expected findings combine: every one must appear, or one is enough.
CROSSCHECK_RULES = ("all", "any")


@dataclass(frozen=True)
class Crosscheck:
    """``tcplab diagnose`` on a run's own ``ss``/``nstat``/``tc``/``ethtool`` texts must name
    the findings of ``expect`` (finding ids, e.g. ``("nic-rx-drops",)``): all of them
    (``rule="all"``, the default) or at least one (``rule="any"``, for alternatives such as a
    tbf's drops, shaping or bufferbloat); ``absent``: finding ids that must not appear (the
    fixed variant: no ``nic-rx-drops`` with the large ring)."""

    run: str
    expect: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    why: str = ""
    #: None: the texts of the run directory (ss as at the end of the run). A time in seconds:
    #: ``ss -tin`` as it was at that moment (an operator running ss during the incident).
    at_s: float | None = None
    rule: str = "all"

    def __post_init__(self) -> None:
        if self.rule not in CROSSCHECK_RULES:
            raise ValueError(f"crosscheck {self.run}: rule {self.rule!r}: expected 'all' or 'any'")

    @property
    def expect_text(self) -> str:
        """The expected findings as the reports say them: ``all of: a, b`` / ``any of: a, b``
        (one finding: its id alone; none: ``-``)."""
        if len(self.expect) < 2:
            return ", ".join(self.expect) or "-"
        return f"{self.rule} of: {', '.join(self.expect)}"


@dataclass(frozen=True)
class SeedCount:
    """How many of ``n`` seeds showed an event (a stall, a collapse, a timeout): a rare event
    is judged by its count, never by one seed. ``holds``: at least half the seeds showed it
    (the event belongs to the condition); ``seen``: at least one did (it can happen there)."""

    k: int
    n: int

    @property
    def holds(self) -> bool:
        return self.n > 0 and 2 * self.k >= self.n

    @property
    def seen(self) -> bool:
        return self.k > 0

    @property
    def text(self) -> str:
        return f"{self.k} of {self.n} seed{'s' if self.n != 1 else ''}"

    @classmethod
    def of(cls, flags: Sequence[bool]) -> SeedCount:
        return cls(sum(1 for f in flags if f), len(flags))

    def as_dict(self) -> dict[str, Any]:
        return {"k": self.k, "n": self.n, "holds": self.holds}


def load_claims(path: Path) -> dict[str, Claim]:
    """``claims.yaml``: a list of mappings with id, story, quote, published and optional conditions."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise ScenarioError(f"cannot read claims: {e}", file=str(path)) from e
    if not isinstance(data, list):
        raise ScenarioError("claims file is not a list", file=str(path), expected="a list of claims")
    claims: dict[str, Claim] = {}
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise ScenarioError(f"claim {i} is not a mapping", file=str(path))
        missing = {"id", "story", "quote", "published"} - set(item)
        extra = set(item) - {"id", "story", "quote", "published", "conditions", "out_of_scope"}
        if missing or extra:
            raise ScenarioError(
                f"claim {i}: missing {sorted(missing)} / unknown {sorted(extra)}",
                file=str(path),
                expected="id, story, quote, published[, conditions][, out_of_scope]",
            )
        c = Claim(**{k: str(v).strip() for k, v in item.items()})
        if c.id in claims:
            raise ScenarioError(f"claim id {c.id!r} repeated", file=str(path))
        claims[c.id] = c
    return claims


class Experiment:
    """Base class of the five experiments; each package's ``EXPERIMENT`` is an instance.

    Subclasses set ``name`` (``cilium-bbr-demo``), ``story`` (the seed file name), ``title``
    and ``setup`` (one paragraph: topology, applications, what varies, what was chosen where
    the story is silent), and implement :meth:`runs`, :meth:`evaluate`, :meth:`explain` and
    :meth:`crosschecks`.
    """

    name: str = ""
    story: str = ""
    title: str = ""
    setup: str = ""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self._claims: dict[str, Claim] | None = None

    # -- the claims --------------------------------------------------------------------------
    @property
    def claims(self) -> dict[str, Claim]:
        if self._claims is None:
            self._claims = load_claims(self.directory / "claims.yaml")
        return self._claims

    def claim(self, claim_id: str) -> Claim:
        return self.claims[claim_id]

    @property
    def judged_claims(self) -> dict[str, Claim]:
        """The claims :meth:`evaluate` judges (in file order): all but the out-of-scope ones."""
        return {k: c for k, c in self.claims.items() if not c.out_of_scope}

    @property
    def out_of_scope_claims(self) -> list[Claim]:
        """The claims listed with the reason tcplab does not judge them."""
        return [c for c in self.claims.values() if c.out_of_scope]

    # -- what subclasses implement -----------------------------------------------------------
    def runs(self, quick: bool) -> list[Run]:
        """The simulations to make, in full or ``--quick`` mode."""
        raise NotImplementedError

    def evaluate(self, results: Mapping[str, Result], quick: bool) -> list[ClaimResult]:
        """One :class:`ClaimResult` per judged claim of ``claims.yaml`` (in file order,
        :attr:`judged_claims`), from the runs' results (keyed by run label)."""
        raise NotImplementedError

    def explain(self, results: Mapping[str, Result], quick: bool, plots_dir: Path) -> list[Explanation]:
        """The mechanism as the runs' traces show it; draws its figures into ``plots_dir``."""
        raise NotImplementedError

    def crosschecks(self, quick: bool) -> list[Crosscheck]:
        """Which diagnose findings the runs' own tool texts must (not) produce."""
        raise NotImplementedError

    # -- provided ----------------------------------------------------------------------------
    def scenario_path(self, file_name: str) -> Path:
        return self.directory / file_name

    def plan(self, quick: bool) -> list[tuple[Run, Scenario]]:
        """Every run validated (with its overrides) before anything is simulated."""
        from tcplab.loader import load_scenario

        runs = self.runs(quick)
        labels = [r.label for r in runs]
        if len(set(labels)) != len(labels):
            raise ScenarioError(f"{self.name}: run labels repeat: {labels}")
        planned = []
        for r in runs:
            planned.append((r, load_scenario(self.scenario_path(r.scenario), r.overrides_for(quick))))
        return planned

    def files(self) -> Sequence[Path]:
        """The experiment's scenario files and claims (what a user copies)."""
        return sorted(p for p in self.directory.iterdir() if p.suffix in (".yaml", ".yml"))
