"""Applications: what a flow's sender writes (``bulk``, or a fixed number of bytes)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict

from tcplab.errors import UnitError, show_value
from tcplab.scenario.fields import _sub
from tcplab.units import parse_size


class AppSpec(BaseModel):
    """A parsed ``app:`` value."""

    model_config = ConfigDict(frozen=True)
    kind: Literal["bulk", "bulk_bytes"]
    bytes: int | None = None

    def to_core(self) -> dict[str, Any]:
        if self.kind == "bulk":
            return {"kind": "bulk"}
        return {"kind": "bulk_bytes", "bytes": self.bytes}


APP_EXPECTED = "bulk or {bulk: {bytes: 10MB}}"
#: The most a ``bulk_bytes`` app may write (the engine's bound: sequence arithmetic stays far
#: from u64 overflow).
MAX_APP_BYTES = 1 << 60


def _parse_app(value: Any) -> AppSpec:
    if isinstance(value, AppSpec):
        return value
    if value is None or value == "bulk":
        return AppSpec(kind="bulk")
    if isinstance(value, str):
        raise UnitError(f"unknown app {show_value(value)}", APP_EXPECTED, value)
    if not isinstance(value, dict) or len(value) != 1:
        raise UnitError(f"{show_value(value)} is not an app", APP_EXPECTED, value)
    kind, body = next(iter(value.items()))
    if kind != "bulk":
        raise UnitError(f"unknown app {show_value(kind)}", APP_EXPECTED, kind, subpath=(str(kind),))
    if body is None or body == {}:
        return AppSpec(kind="bulk")
    if not isinstance(body, dict):
        raise UnitError(f"{show_value(body)} is not a mapping", "{bytes: 10MB}", body, subpath=("bulk",))
    for key in body:
        if key != "bytes":
            raise UnitError(f"unknown key {show_value(key)}", "bytes", key, subpath=("bulk", str(key)))
    try:
        size = parse_size(body["bytes"], allow_zero=False)
    except UnitError as e:
        raise _sub(e, "bulk", "bytes") from None
    if size > MAX_APP_BYTES:
        raise UnitError(
            f"{show_value(body['bytes'])} is too large",
            "at most 1EiB (2^60 bytes)",
            body["bytes"],
            subpath=("bulk", "bytes"),
        )
    return AppSpec(kind="bulk_bytes", bytes=size)


App = Annotated[AppSpec, BeforeValidator(_parse_app)]
