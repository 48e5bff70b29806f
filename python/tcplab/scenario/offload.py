"""A host's segmentation offloads: ``hosts.NAME.offload: {gro: on}`` (``ethtool -K DEV gro on``).

``gro`` is generic receive offload (ethtool's ``generic-receive-offload``, ``rx-gro``): TCP
segments of one flow that arrive within one NAPI poll are merged into one packet of up to
64 KB before TCP sees them, so the receiver ACKs once per aggregate (the engine's
``host::gro``). Linux's default is on; tcplab's is **off** for now, because the sender's
half (TSO/GSO: ``tso``, ``gso``, ethtool's ``tcp-segmentation-offload`` and
``generic-segmentation-offload``) is not modelled yet and GRO alone would move every
existing result without it. ``tso`` and ``gso`` are refused until they are modelled: tcplab
sends MSS-sized segments, as a host with ``ethtool -K DEV tso off gso off`` does.

A pod's veth takes its node's setting.
"""

from __future__ import annotations

from typing import Any

from pydantic import field_validator, model_validator

from tcplab.errors import UnitError, show_value
from tcplab.scenario.base import _Model

#: Offloads named in ethtool's ``-k`` text, in the order ``ethtool -k`` prints them.
NOT_MODELLED = ("tso", "gso")


def parse_on_off(value: Any) -> bool:
    """``on``/``off`` as ``ethtool -K`` takes them (YAML reads a bare on/off as a boolean)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("on", "off"):
        return value.strip().lower() == "on"
    raise UnitError(f"{show_value(value)} is not on or off", "on or off", value)


class Offload(_Model):
    """``offload: {gro: on|off}``; see the module docstring."""

    gro: bool = False

    @field_validator("gro", mode="before")
    @classmethod
    def _on_off(cls, v: Any) -> bool:
        return parse_on_off(v)

    @model_validator(mode="before")
    @classmethod
    def _refuse_unmodelled(cls, value: Any) -> Any:
        if isinstance(value, dict):
            for name in NOT_MODELLED:
                if name in value:
                    raise UnitError(
                        f"{show_value(value[name])}: {name} is not modelled yet "
                        f"(tcplab sends MSS-sized segments, as with {name} off)",
                        "gro only",
                        value[name],
                        subpath=(name,),
                    )
        return value
