"""A host's segmentation offloads: ``hosts.NAME.offload: {tso: on, gso: on, gro: on}`` (``ethtool -K DEV ...``).

All three are **on** by default, as Linux's are on a veth, virtio or any modern NIC.

**The sender's skbs.** Linux's TCP builds GSO skbs of several segments whatever ``ethtool``
says: since v4.19 (``tcp: remove non GSO code``) ``sk_setup_caps()`` (net/core/sock.c, v6.12)
gives every TCP socket ``NETIF_F_GSO``, so ``tcp_write_xmit()`` sends skbs of
``tcp_tso_autosize()`` segments and the host's qdisc takes each as one unit. tcplab does the
same for every host (the engine's ``gso_skbs``; ``tcp::output``). What ``tso`` and ``gso``
choose is *where* the skb is cut into MSS frames, and so what the CPU pays:

- ``tso: on`` (``tcp-segmentation-offload``): the NIC cuts them; one skb costs the CPU one
  ``cpu.cost.tx_skb`` however many frames it carries.
- ``tso: off``: software GSO cuts them after the qdisc (``validate_xmit_skb()`` ->
  ``skb_gso_segment()``), with ``gso`` on or off (TCP's skbs are GSO skbs either way): the wire
  sees the same frames back to back, and every frame after the first costs
  ``cpu.cost.tx_gso_frame`` more (:mod:`tcplab.scenario.cpu`).

``gso`` (``generic-segmentation-offload``) is accepted and shown in ``ethtool-k-HOST.txt``; it
changes nothing in tcplab's model of TCP (only non-TCP GSO, which tcplab does not send,
depends on it). Kernel mode applies ``gro`` and keeps ``tso``/``gso`` off on its veths
(tcplab.kernel.plan, "Offloads").

**The receiver's aggregates.** ``gro`` (``generic-receive-offload``, ``rx-gro``): TCP segments
of one flow that arrive within one NAPI poll are merged into one skb of up to 64 KB before TCP
sees them, so the receiver ACKs once per aggregate (the engine's ``host::gro``).

A pod's veth takes its node's setting. Seed 000's Kubernetes nodes ran with
``tx-generic-segmentation`` and ``rx-gro`` off: ``offload: {gso: off, gro: off}`` says so.
"""

from __future__ import annotations

from typing import Any

from pydantic import field_validator

from tcplab.errors import UnitError, show_value
from tcplab.scenario.base import _Model


def parse_on_off(value: Any) -> bool:
    """``on``/``off`` as ``ethtool -K`` takes them (YAML reads a bare on/off as a boolean)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("on", "off"):
        return value.strip().lower() == "on"
    raise UnitError(f"{show_value(value)} is not on or off", "on or off", value)


class Offload(_Model):
    """``offload: {tso: on|off, gso: on|off, gro: on|off}`` (all on by default); see the module docstring."""

    tso: bool = True
    gso: bool = True
    gro: bool = True

    @field_validator("tso", "gso", "gro", mode="before")
    @classmethod
    def _on_off(cls, v: Any) -> bool:
        return parse_on_off(v)
