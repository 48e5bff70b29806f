"""A host's segmentation offloads: ``hosts.NAME.offload: {tso: on, gro: on}`` (``ethtool -K DEV ...``).

``gro`` is generic receive offload (ethtool's ``generic-receive-offload``, ``rx-gro``): TCP
segments of one flow that arrive within one NAPI poll are merged into one packet of up to
64 KB before TCP sees them, so the receiver ACKs once per aggregate (the engine's
``host::gro``). Linux's default is on; tcplab's is **off** for now, because the sender's
half (TSO/GSO: ``tso``, ``gso``, ethtool's ``tcp-segmentation-offload`` and
``generic-segmentation-offload``) is not modelled yet and GRO alone would move every
existing result without it.

``tso`` is TCP segmentation offload (``tcp-segmentation-offload``): the host's TCP sends skbs
of several segments (``tcp_tso_autosize()``), its first qdisc takes each as one unit and the
link puts MSS frames on the wire back to back (the engine's ``tcp::output``, ``net::link``).
**Off** by default while the sender's skb model is built (docs/tso-progress.md); off, tcplab
sends MSS-sized segments, as a host with ``ethtool -K DEV tso off gso off`` does. ``gso`` is
refused as not modelled separately yet (with ``tso: on`` the wire and qdiscs see the same
thing either way: GSO segments before the driver, TSO in the NIC).

A pod's veth takes its node's setting.
"""

from __future__ import annotations

from typing import Any

from pydantic import field_validator, model_validator

from tcplab.errors import UnitError, show_value
from tcplab.scenario.base import _Model

#: Offloads named in ethtool's ``-k`` text, in the order ``ethtool -k`` prints them.
NOT_MODELLED = ("gso",)


def parse_on_off(value: Any) -> bool:
    """``on``/``off`` as ``ethtool -K`` takes them (YAML reads a bare on/off as a boolean)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("on", "off"):
        return value.strip().lower() == "on"
    raise UnitError(f"{show_value(value)} is not on or off", "on or off", value)


class Offload(_Model):
    """``offload: {tso: on|off, gro: on|off}``; see the module docstring."""

    tso: bool = False
    gro: bool = False

    @field_validator("tso", "gro", mode="before")
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
                        "tso or gro",
                        value[name],
                        subpath=(name,),
                    )
        return value
