"""Cilium's host routing for Bandwidth Manager pods: ``bandwidth_manager: {host_routing: bpf}``.

Legacy host routing sends a pod's packets up the node's IP stack, whose ip_rcv_core()
orphans them: the pod's TSQ budget comes back as they enter the node, and fq on the node's
device holds them without holding the socket back. BPF host routing (bpf_redirect_neigh)
keeps skb->sk, so TSQ counts them until they leave the device: a CUBIC pod keeps far less
in fq and fq's flow_limit never drops (story 002: "improves TCP TSQ handling").
"""

from __future__ import annotations

import pytest

import tcplab
from tcplab.errors import ScenarioError
from tcplab.loader import load_scenario

SCENARIO = {
    "name": "host-routing",
    "seed": 1,
    "duration": "10s",
    "hosts": {"node": {}, "dst": {}},
    "pods": {"pod": {"node": "node", "egress_bandwidth": "10M", "mode": "bandwidth-manager"}},
    "links": [{"between": ["node", "dst"], "rate": "1Gbit", "delay": "5ms"}],
    "flows": [{"from": "pod", "to": "dst", "app": "bulk"}],
}


def _veth(core: dict, name: str) -> dict:
    return next(link for link in core["links"] if link["name"] == name)


def test_bpf_host_routing_keeps_the_socket_on_the_pod_veth_only():
    sc = load_scenario(SCENARIO, ["bandwidth_manager.host_routing=bpf"])
    core = sc.to_core()
    assert _veth(core, "pod->node").get("keeps_sk") is True
    assert not _veth(core, "node->pod").get("keeps_sk")
    legacy = load_scenario(SCENARIO).to_core()
    assert not _veth(legacy, "pod->node").get("keeps_sk")
    assert _veth(legacy, "pod->node").get("orphan") is True


def test_cni_pods_are_not_affected():
    sc = load_scenario(SCENARIO, ["bandwidth_manager.host_routing=bpf", "pods.pod.mode=cni"])
    assert not _veth(sc.to_core(), "pod->node").get("keeps_sk")


def test_unknown_host_routing_names_the_field():
    with pytest.raises(ScenarioError) as e:
        load_scenario(SCENARIO, ["bandwidth_manager.host_routing=ebpf"])
    text = str(e.value)
    assert "bandwidth_manager.host_routing" in text and "ebpf" in text and "legacy" in text


@pytest.mark.engine
def test_tsq_holds_a_bpf_routed_pod_back_at_fq(real_core):
    legacy = tcplab.run(SCENARIO)
    bpf = tcplab.run(SCENARIO, overrides=["bandwidth_manager.host_routing=bpf"])
    held_legacy = int(legacy.links.set_index("name").loc["node->dst", "max_backlog_packets"])
    held_bpf = int(bpf.links.set_index("name").loc["node->dst", "max_backlog_packets"])
    plimit_bpf = int(bpf.links.set_index("name").loc["node->dst", "xstats"].get("flows_plimit", 0))
    assert held_legacy >= 100  # orphaned: CUBIC fills fq's flow_limit
    assert held_bpf <= 16, held_bpf  # TSQ: two skbs of a few segments each
    assert plimit_bpf == 0
    assert bpf.flows.goodput_bps[0] == pytest.approx(legacy.flows.goodput_bps[0], rel=0.02)
