"""The entry point: a plain dict -> a :class:`Scenario`, or a :class:`ScenarioError`.

pydantic's errors are converted into ScenarioErrors naming the field path, the value and
what was expected.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from tcplab.errors import ScenarioError, UnitError, UnitErrors, show_value
from tcplab.scenario.model import Scenario


def validate_scenario(data: Mapping[str, Any], file: str = "") -> Scenario:
    """Validate a plain dict (already parsed and overridden) into a :class:`Scenario`."""
    if not isinstance(data, Mapping):
        raise ScenarioError(
            f"the top level is {show_value(data) if not isinstance(data, list) else 'a list'}",
            file=file,
            expected="a mapping with keys such as name, duration, hosts, links, flows",
        )
    try:
        return Scenario.model_validate(dict(data))
    except ValidationError as exc:
        raise _convert(exc, file) from None


def _convert(exc: ValidationError, file: str) -> ScenarioError:
    errors: list[ScenarioError] = []
    for err in exc.errors(include_url=False):
        loc = [p for p in err["loc"] if p != "[key]"]
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, UnitError):
            causes = cause.errors if isinstance(cause, UnitErrors) else [cause]
            for c in causes:
                path = ".".join(str(p) for p in [*loc, *c.subpath])
                errors.append(ScenarioError(c.problem, file=file, path=path, value=c.value, expected=c.expected))
            continue
        path = ".".join(str(p) for p in loc)
        value = err.get("input")
        if err["type"] == "missing":
            errors.append(ScenarioError("missing", file=file, path=path, expected="a value"))
        elif err["type"] == "extra_forbidden":
            errors.append(
                ScenarioError(
                    f"unknown key {show_value(str(loc[-1]))}", file=file, path=path, value=value, expected="a known key"
                )
            )
        elif err["type"] in ("list_type", "dict_type", "tuple_type"):
            kind = {"list_type": "a list", "dict_type": "a mapping", "tuple_type": "a list"}[err["type"]]
            errors.append(
                ScenarioError(f"{show_value(value)} is not {kind}", file=file, path=path, value=value, expected=kind)
            )
        elif err["type"] == "string_type":
            errors.append(
                ScenarioError(
                    f"{show_value(value)} is not text", file=file, path=path, value=value, expected="a string"
                )
            )
        else:
            msg = err["msg"]
            errors.append(ScenarioError(f"{show_value(value)}: {msg}", file=file, path=path, value=value))
    first = errors[0]
    return ScenarioError(
        first.problem, file=first.file, path=first.path, value=first.value, expected=first.expected, errors=errors
    )
