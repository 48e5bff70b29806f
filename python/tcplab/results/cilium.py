"""``cilium status`` of each Kubernetes node that runs Cilium's Bandwidth Manager.

The text a user gets from ``kubectl exec -n kube-system ds/cilium -- cilium status`` on the
node (cilium ``pkg/client/client.go``: ``FormatStatusResponse`` through a tabwriter): the
lines ``tcplab diagnose`` reads (:mod:`tcplab.diagnose.cilium`), nothing else. A node gets
one when one of its pods has ``mode: bandwidth-manager``:

* ``BandwidthManager:   EDT with BPF [BBR] [eth0]`` -- the congestion control Cilium sets
  for the pods (``[BBR]`` with ``bandwidth_manager: {bbr: true}``, else ``[CUBIC]``, as
  Cilium 1.12+ prints it) and the node's devices (tcplab names a node's first device
  ``eth0``);
* ``Routing:            Network: Native   Host: BPF`` -- tcplab forwards a pod's packets
  natively through its node (no tunnel).

What tcplab cannot know (the Cilium version, the KVStore and Kubernetes lines) is left out,
so diagnose reports the version as unknown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tcplab.scenario import Scenario

__all__ = ["cilium_status_texts"]


def cilium_status_texts(scenario: Scenario) -> dict[str, str]:
    """``{node: cilium status text}`` for every node hosting a Bandwidth-Manager pod."""
    nodes: list[str] = []
    for pod in scenario.pods.values():
        if pod.mode == "bandwidth-manager" and pod.node not in nodes:
            nodes.append(pod.node)
    cc = "BBR" if scenario.bandwidth_manager.bbr else "CUBIC"
    text = (
        f"BandwidthManager:        EDT with BPF [{cc}] [eth0]\nRouting:                 Network: Native   Host: BPF\n"
    )
    return {node: text for node in nodes}
