"""NIC counters as ``ethtool -S DEV`` prints them, one text per host with a NIC model.

The model: the engine's NIC model counts what a driver counts and names each counter as
that driver's ``ethtool -S`` string table does (``out["hosts"][i]["nic"]["ethtool"]``, in
the driver's order: ENA's ``bw_in_allowance_exceeded`` and ``pps_allowance_exceeded``,
ixgbe's ``rx_missed_errors``, ...); this module only prints them.
``ethtool-S-HOST.txt`` is what ``ethtool -S eth0`` prints on that host (ethtool
``ethtool.c: dump_stats()``)::

    NIC statistics:
         rx_packets: 81234
         bw_in_allowance_exceeded: 12

a header line, then one ``"     %.*s: %llu"`` line per counter (five spaces; a name is cut at
ETH_GSTRING_LEN, 32 bytes). The host's
receive device is named ``eth0`` (the device of its first link; tcplab hosts have one NIC).

``ethtool-k-HOST.txt`` (every host) is its offloads as ``ethtool -k eth0`` prints them
(ethtool ``netlink/features.c``: ``Features for DEV:``, then ``name: on|off``, `` [fixed]``
for a feature that cannot be changed, a sub-feature indented by a tab), limited to the lines
tcplab models::

    Features for eth0:
    tcp-segmentation-offload: on
    \ttx-tcp-segmentation: on
    \ttx-tcp6-segmentation: off [fixed]
    generic-segmentation-offload: on
    generic-receive-offload: on

from the scenario's ``offload: {tso, gso, gro}`` (:mod:`tcplab.scenario.offload`; all on by
default, as Linux's); ``tx-tcp6-segmentation`` stays ``off [fixed]``: no IPv6.
"""

from __future__ import annotations

from collections.abc import Mapping

from tcplab.scenario.offload import Offload

__all__ = ["format_ethtool_features", "format_ethtool_stats", "NIC_DEVICE", "NOT_ETHTOOL"]

#: The device the NIC model stands for on every host.
NIC_DEVICE = "eth0"


#: Counters the NIC model reports that ``ethtool -S`` does not print: ``time_squeeze`` is
#: the third column of ``/proc/net/softnet_stat`` (a softirq round that ran out of budget or
#: time with work left). They stay in ``summary.json`` and the report, not in the text.
NOT_ETHTOOL = frozenset({"time_squeeze"})


def format_ethtool_stats(counters: Mapping[str, int]) -> str:
    """``ethtool -S`` text for ``{name: value}`` (order kept, as the driver lists them;
    :data:`NOT_ETHTOOL` left out)."""
    lines = ["NIC statistics:"]
    for name, value in counters.items():
        if name in NOT_ETHTOOL:
            continue
        lines.append("     %.32s: %d" % (name, int(value)))  # ETH_GSTRING_LEN = 32
    return "\n".join(lines) + "\n"


def format_ethtool_features(offload: Offload, dev: str = NIC_DEVICE) -> str:
    """``ethtool -k DEV`` text for a host's offloads (module doc)."""

    def on(flag: bool) -> str:
        return "on" if flag else "off"

    return (
        f"Features for {dev}:\n"
        f"tcp-segmentation-offload: {on(offload.tso)}\n"
        f"\ttx-tcp-segmentation: {on(offload.tso)}\n"
        "\ttx-tcp6-segmentation: off [fixed]\n"
        f"generic-segmentation-offload: {on(offload.gso)}\n"
        f"generic-receive-offload: {on(offload.gro)}\n"
    )
