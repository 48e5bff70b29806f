"""The base of every scenario model: a mapping whose keys are checked first.

Unknown keys are errors (typos must not be silently ignored), with a "did you mean" hint;
missing required keys are reported with what is expected. ``net.ipv4.`` prefixes of sysctl
names are stripped where a model allows them.

Key problems do not stop validation: an unknown key is kept with an :class:`UnknownKey`
marker as its value (pydantic then reports it as an extra key, at its own path) and a missing
required key gets a :class:`MissingKey` marker that the field's first validator turns into a
"missing" error; so one pass reports every problem of the file, each at its own path
(:mod:`tcplab.scenario.validation`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from tcplab.errors import UnitError, show_value
from tcplab.scenario.fields import _did_you_mean

#: A top-level key that starts with this is the file's own, a place for YAML anchors (as
#: Docker Compose's ``x-`` extension fields are): ``x-slow: &slow {rate: 10Mbit}``, then
#: ``<<: *slow`` in a link. The scenario leaves it out; ``--set`` refuses it (aliases are
#: resolved when the file is read, so setting the anchor would change nothing).
EXTENSION_PREFIX = "x-"


class UnknownKey:
    """Stands for the value of an unknown key: the problem to report at that key's path."""

    def __init__(self, problem: str, expected: str, key: Any):
        self.problem = problem
        self.expected = expected
        self.key = key


class MissingKey:
    """Stands for a required key that is absent; its field reports "missing"."""

    def __init__(self, expected: str):
        self.expected = expected


class _Model(BaseModel):
    """Base: a mapping whose keys are checked first, with messages that name the key."""

    model_config = ConfigDict(extra="forbid", populate_by_name=False)
    _key_prefixes: ClassVar[tuple[str, ...]] = ()
    #: Keys that start with this are left out, not refused (:data:`EXTENSION_PREFIX`).
    _extension_prefix: ClassVar[str | None] = None
    #: Keys refused with a message of their own (a setting that belongs elsewhere):
    #: key -> (why, where it goes); also with one of :attr:`_key_prefixes` before it.
    _misplaced: ClassVar[dict[str, tuple[str, str]]] = {}

    @classmethod
    def _keys(cls) -> list[str]:
        return [f.alias or name for name, f in cls.model_fields.items()]

    @model_validator(mode="before")
    @classmethod
    def _check_keys(cls, data: Any) -> Any:
        if data is None:
            data = {}
        if isinstance(data, BaseModel):
            return data
        allowed = cls._keys()
        if not isinstance(data, dict):
            raise UnitError(f"{show_value(data)} is not a mapping", "a mapping with keys: " + ", ".join(allowed), data)
        if cls._key_prefixes:
            data = {cls._strip_prefix(k, allowed): v for k, v in data.items()}
        if cls._extension_prefix:
            data = {k: v for k, v in data.items() if not (isinstance(k, str) and k.startswith(cls._extension_prefix))}
        data = dict(data)
        for key in data:
            if key not in allowed:
                misplaced = cls._misplaced_key(key)
                if misplaced is not None:
                    why, where = misplaced
                    data[key] = UnknownKey(f"unknown key {show_value(key)}: {why}", where, key)
                    continue
                problem = f"unknown key {show_value(key)}{_did_you_mean(key, allowed)}"
                data[key] = UnknownKey(problem, "one of: " + ", ".join(allowed), key)
        for name, field in cls.model_fields.items():
            key = field.alias or name
            if field.is_required() and key not in data:
                data[key] = MissingKey(field.description or "a value")
        return data

    @field_validator("*", mode="before")
    @classmethod
    def _missing(cls, value: Any) -> Any:
        """Runs before each field's own parser: a :class:`MissingKey` is reported as "missing"."""
        if isinstance(value, MissingKey):
            raise UnitError("missing", value.expected, None)
        return value

    @classmethod
    def _misplaced_key(cls, key: Any) -> tuple[str, str] | None:
        if not isinstance(key, str) or not cls._misplaced:
            return None
        for prefix in ("", *cls._key_prefixes):
            if key.startswith(prefix) and key[len(prefix) :] in cls._misplaced:
                return cls._misplaced[key[len(prefix) :]]
        return None

    @classmethod
    def _strip_prefix(cls, key: Any, allowed: list[str]) -> Any:
        if not isinstance(key, str):
            return key
        for prefix in cls._key_prefixes:
            if key.startswith(prefix) and key[len(prefix) :] in allowed:
                return key[len(prefix) :]
        return key
