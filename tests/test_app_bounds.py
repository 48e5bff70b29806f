"""Python's mirror of the applications' bounds against the engine's, both ways.

:mod:`tcplab.scenario.app_bounds` checks each ``app:`` field in the user's units before
anything runs, mirroring the ranges the engine's ``validate()`` enforces. The engine exports
those ranges as data (``tcplab._core.bounds()``, crates/tcplab-core/src/app/bounds.rs, whose
own tests prove the tables are what ``validate()`` enforces). Here: every bound the engine
enforces has its Python mirror, and every Python mirror is an engine bound, limit for limit.
(tests/test_scenario_app_checks.py also feeds the edges Python accepts to the engine.)
"""

from __future__ import annotations

from typing import Any

import pytest

from tcplab.scenario import app_bounds
from tcplab.scenario.apps import CONNECTION_KEYS, DERIVED_FIELDS, MAX_CONNECTIONS

pytestmark = pytest.mark.engine

KINDS = ("rr", "hls", "nfs_stream", "batch_writer", "broadcast")


@pytest.fixture
def engine(real_core) -> dict[str, Any]:
    return real_core.bounds()


def _limits(entry: dict[str, Any]) -> tuple[Any, Any]:
    return entry["lo"], entry["hi"]


@pytest.mark.parametrize("kind", KINDS)
def test_every_engine_bound_has_its_python_mirror(engine, kind):
    mirror = app_bounds.RANGES.get(kind, {})
    for field, entry in engine["fields"][kind].items():
        if field in DERIVED_FIELDS.get(kind, {}):
            continue  # Python fills it in from other keys (apps.py), never from the user
        assert field in mirror, f"{kind}.{field}: the engine bounds it {_limits(entry)}, app_bounds.RANGES does not"
        assert mirror[field] == _limits(entry), f"{kind}.{field}: Python {mirror[field]}, engine {_limits(entry)}"


@pytest.mark.parametrize("kind", KINDS)
def test_every_python_mirror_is_an_engine_bound(engine, kind):
    for field, limits in app_bounds.RANGES.get(kind, {}).items():
        entry = engine["fields"][kind].get(field)
        assert entry is not None, f"{kind}.{field}: app_bounds.RANGES bounds it {limits}, the engine does not"
        assert limits == _limits(entry), f"{kind}.{field}: Python {limits}, engine {_limits(entry)}"


def test_the_kinds_are_the_same(engine):
    assert set(app_bounds.RANGES) == set(KINDS)
    assert set(engine["fields"]) == set(KINDS) | {"hls.profiles"}


def test_exclusive_lows_fractions_and_page_multiples_are_the_engines(engine):
    entries = [(f, e) for kind in KINDS for f, e in engine["fields"][kind].items()]
    assert {f for f, e in entries if e["lo_exclusive"]} == app_bounds.EXCLUSIVE_LOW
    assert {f for f, e in entries if e["multiple_of"] is not None} == app_bounds.PAGE_MULTIPLES
    assert {e["multiple_of"] for _, e in entries if e["multiple_of"] is not None} == {app_bounds.PAGE_BYTES}
    # a fraction is a float field from 0 to 1
    for f in app_bounds.FRACTIONS:
        assert [_limits(e) for g, e in entries if g == f] == [(0.0, 1.0)], f


def test_the_profile_bitrate_and_the_choices_are_the_engines(engine):
    assert _limits(engine["fields"]["hls.profiles"]["bitrate_bps"]) == app_bounds.PROFILE_BITRATE_BPS
    assert {k: {f: tuple(v) for f, v in c.items()} for k, c in engine["choices"].items()} == app_bounds.CHOICES


@pytest.mark.parametrize("kind", KINDS)
def test_the_connection_counts_are_the_engines(engine, kind):
    """``nconnect`` is Linux's 1 to 16 in both; where the engine has no upper bound Python
    caps at MAX_CONNECTIONS (its own memory guard); hls has one connection, no key."""
    lo, hi = engine["connections"][kind]["lo"], engine["connections"][kind]["hi"]
    if kind not in CONNECTION_KEYS:
        assert (lo, hi) == (1, 1), kind
        return
    _, py_lo, py_hi = CONNECTION_KEYS[kind]
    assert py_lo == lo, kind
    assert py_hi == (hi if hi is not None else MAX_CONNECTIONS), kind
