"""The top-level scenario model: name, duration, hosts, pods, routers, links, flows.

``to_core()`` resolves it into the engine's configuration (see :mod:`tcplab.scenario`).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import BeforeValidator, Field, PrivateAttr, model_validator

from tcplab.errors import ScenarioWarning, UnitError, UnitErrors
from tcplab.scenario.base import EXTENSION_PREFIX, _Model
from tcplab.scenario.checks import (
    app_warnings,
    check_connections,
    check_flows,
    check_nodes,
    check_pods,
    check_queue_limits,
)
from tcplab.scenario.cost import DEFAULT_CPU_TIME_NS, check_cpu_time
from tcplab.scenario.fields import Int, NodeName, PosTime, ScenarioName, _t
from tcplab.scenario.flows import Flow, flow_names, sampled_connections_of
from tcplab.scenario.hosts import Host, Sysctl
from tcplab.scenario.limits import DEFAULT_MEMORY_BYTES, check_limits
from tcplab.scenario.links import Link
from tcplab.scenario.offload import Offload
from tcplab.scenario.pods import BandwidthManager, Pod
from tcplab.scenario.topology import _Topology
from tcplab.units import U64_MAX, parse_size


def sampled_flows(sc: Scenario) -> int:
    """Engine flows with time series (a broadcast's connections have none)."""
    return sum(sampled_connections_of(flow) for flow in sc.flows)


class Limits(_Model):
    """``limits:``: what a run may hold (see :mod:`tcplab.scenario.limits`) and cost
    (:mod:`tcplab.scenario.cost`)."""

    memory: Annotated[int, BeforeValidator(lambda v: parse_size(v, allow_zero=False))] = DEFAULT_MEMORY_BYTES
    cpu_time: PosTime = DEFAULT_CPU_TIME_NS


class Scenario(_Model):
    """A validated scenario. Build one with :func:`tcplab.load_scenario`.

    ``to_core()`` gives the engine's fully resolved configuration (times in ns, rates in
    bit/s, sizes in bytes, references as indices, every TCP setting explicit).
    """

    name: ScenarioName = Field(description="a scenario name such as lossy-long-path")
    description: str | None = None
    seed: Int(0, U64_MAX) = 1
    duration: PosTime = Field(description="a duration such as 60s")
    sample_interval: PosTime = 100_000_000
    hosts: dict[NodeName, Host] = Field(
        description="a mapping of host names to settings, such as {server: {}, client: {}}"
    )
    routers: list[NodeName] = []
    pods: dict[NodeName, Pod] = {}
    bandwidth_manager: BandwidthManager = Field(default_factory=BandwidthManager)
    links: list[Link] = []
    flows: list[Flow] = Field(description="a list of flows such as [{from: server, to: client}]")
    limits: Limits = Field(default_factory=Limits)

    #: ``x-slow: &slow {rate: 10Mbit, delay: 5ms}`` at the top holds an anchor for ``<<: *slow``
    _extension_prefix: ClassVar[str | None] = EXTENSION_PREFIX

    _source: str = PrivateAttr(default="")
    _raw: dict = PrivateAttr(default_factory=dict)
    _lines: dict = PrivateAttr(default_factory=dict)  # field path -> line in the source file
    _warnings: list = PrivateAttr(default_factory=list)
    # the resolved topology while the cross-reference checks run (each of four checks reads
    # it; expanding the flows of a 40,000-connection workload is the costly part), else None
    _topology_in_checks: Any = PrivateAttr(default=None)
    # (path, message) of the valid application settings that are probably not meant
    # (checks.app_warnings), found while the checks' topology is at hand
    _app_warnings: list = PrivateAttr(default_factory=list)

    # -- cross-reference checks -------------------------------------------------------

    @model_validator(mode="after")
    def _check_references(self) -> Scenario:
        """Cross-field checks; every problem found is reported, each with its own path."""
        try:
            self._check_references_once()
        finally:
            self._topology_in_checks = None
        return self

    def _check_references_once(self) -> None:
        self._topology_in_checks = False  # False: compute on first use; then kept until the end
        errors: list[UnitError] = []

        def error(path: tuple, problem: str, expected: str, value: Any = None) -> None:
            errors.append(UnitError(problem, expected, value, subpath=path))

        if self.sample_interval > self.duration:
            error(
                ("sample_interval",),
                f"{_t(self.sample_interval)} is longer than the duration ({_t(self.duration)})",
                "a sample interval no longer than the duration",
                self.sample_interval,
            )
        kinds = check_nodes(self, error)
        check_pods(self, error, kinds)
        sizes_ok = check_connections(self, error)
        topology_ok = not errors
        if sizes_ok:  # (else expanding the flows is what would not end)
            check_flows(self, error, kinds, topology_ok)
        if topology_ok:
            check_queue_limits(self, error)
        check_limits(self, error, sampled_flows(self))
        if not errors:  # the estimate resolves the whole scenario: only a valid one
            check_cpu_time(self, error)
        if not errors:
            self._app_warnings = app_warnings(self)
        if len(errors) == 1:
            raise errors[0]
        if errors:
            raise UnitErrors(errors)

    def workloads(self) -> list[dict[str, Any]]:
        """The engine applications as to_core gives them, each with the index of its
        ``flows:`` entry (``entry``)."""
        return [dict(a) for a in self._topology().apps]

    @staticmethod
    def _flow_names(index: int, flow: Flow) -> list[str]:
        return flow_names(index, flow)

    # -- resolved views ---------------------------------------------------------------

    @property
    def source(self) -> str:
        """Where the scenario came from (a path, ``builtin:NAME`` or ``<dict>``)."""
        return self._source

    @property
    def warnings(self) -> list[ScenarioWarning]:
        """Valid values that probably do not mean what was intended (``5Mbps`` is 40 Mbit/s)."""
        return list(self._warnings)

    @property
    def node_names(self) -> list[str]:
        """Node names by index: hosts in file order, then pods, then routers."""
        return list(self.hosts) + list(self.pods) + list(self.routers)

    def sysctl_of(self, name: str) -> Sysctl:
        """The sysctls of a host or pod (a pod's namespace has its own)."""
        if name in self.pods:
            return self.pods[name].sysctl
        return self.hosts.get(name, Host()).sysctl

    def default_cc_of(self, name: str) -> str:
        """A sender's default congestion control: its ``tcp_congestion_control``, or BBR for a
        pod with ``bbr: true`` (or under ``bandwidth_manager: {bbr: true}``)."""
        pod = self.pods.get(name)
        if pod is not None and pod.uses_bbr(self.bandwidth_manager):
            return "bbr"
        return self.sysctl_of(name).tcp_congestion_control

    def _node_to_core(self, name: str) -> dict[str, Any]:
        """A node's engine form; ``forwarding``, ``cpu``, ``nic``, ``cpu_cost``, ``gro`` and ``tso`` only when
        set; ``gso_skbs`` for every host."""
        if name in self.routers:
            return {"name": name, "kind": "router", "hz": Host().hz}
        pod = self.pods.get(name)
        host = self.host_of(name)
        node: dict[str, Any] = {"name": name, "kind": "host", "hz": host.hz}
        if pod is None and any(p.node == name for p in self.pods.values()):
            node["forwarding"] = True
        if host.cpu is not None:
            node["cpu"] = host.cpu.to_core()  # a pod runs on its node's CPU: the same slices
        if pod is None and host.nic is not None:
            node["nic"] = host.nic_to_core()
        if pod is None and (cost := host.cpu_cost_to_core()) is not None:
            node["cpu_cost"] = cost  # a pod's own stack work is not charged (cpu.py)
        # Linux's TCP always builds GSO skbs (tcplab.scenario.offload); ``tso`` says whether the
        # NIC or software GSO cuts them. A pod's veth takes its node's offloads.
        node["gso_skbs"] = True
        if host.offload.tso:
            node["tso"] = True
        if host.offload.gro:
            node["gro"] = True
        return node

    def host_of(self, name: str) -> Host:
        """Host ``name``, or the node a pod ``name`` runs on (its CPU, offloads, HZ)."""
        pod = self.pods.get(name)
        return self.hosts[pod.node if pod is not None else name]

    def offload_of(self, name: str) -> Offload:
        """The offloads of host or pod ``name`` (a pod's veth takes its node's)."""
        return self.host_of(name).offload

    def _topology(self) -> _Topology:
        kept = self._topology_in_checks
        if kept is None:
            return _Topology(self)
        if kept is False:
            kept = self._topology_in_checks = _Topology(self)
        return kept

    def routes(self) -> list[dict[str, Any]]:
        """Per engine flow: its name and the one-way link names of its data and ACK routes
        (data from the side that writes it: the server of a maerts, hls or nfs_stream)."""
        topo = self._topology()
        out = []
        for flow in topo.flows:
            # the data goes from the side that writes it (the server for maerts, hls, ...)
            data, ack = (flow["fwd"], flow["rev"]) if flow["data_side"] == "client" else (flow["rev"], flow["fwd"])
            out.append(
                {
                    "flow": flow["name"],
                    "data": [topo.links[i]["name"] for i in data],
                    "ack": [topo.links[i]["name"] for i in ack],
                    "base_rtt_ns": flow["base_rtt_ns"],
                }
            )
        return out

    def to_core(self) -> dict[str, Any]:
        """The engine configuration (``tcplab._core.run``'s JSON), fully resolved."""
        topo = self._topology()
        links = []
        for link in topo.links:
            core_link = {
                "name": link["name"],
                "from": link["from"],
                "to": link["to"],
                "rate_bps": link["rate_bps"],
                "delay_ns": link["delay_ns"],
                "overhead_bytes": link["overhead_bytes"],
                "loss": link["loss"].to_core(),
                "loss_filter": link["loss"].filter_to_core(),
                "reorder": link["reorder"],
                "queue": link["queue"],
            }
            if link["loss"].window_start_ns or link["loss"].window_end_ns is not None:
                # only when set: scenarios without a window keep their JSON
                core_link["loss_window"] = link["loss"].window_to_core()
            if link.get("edt"):
                core_link["edt"] = link["edt"]
            if link.get("orphan"):
                core_link["orphan"] = True
            if link.get("keeps_sk"):
                core_link["keeps_sk"] = True
            if link.get("orphan_after_queue"):
                core_link["orphan_after_queue"] = True
            if link.get("bleach_ecn"):  # only when set: scenarios without it keep their JSON
                core_link["bleach_ecn"] = True
            links.append(core_link)
        flows = []
        for f in topo.flows:
            core_flow = {
                k: f[k] for k in ("name", "src", "dst", "cc", "start_ns", "stop_ns", "app", "tcp", "cc_params")
            }
            # data_side, reader and sample only when not the engine's default, so that the
            # engine JSON of bulk scenarios is what it always was.
            if f["data_side"] != "client":
                core_flow["data_side"] = f["data_side"]
            if f.get("receiver_cc"):  # the data receiver's host runs another cc
                core_flow["receiver_cc"] = f["receiver_cc"]
            if f.get("nodelay"):  # TCP_NODELAY on the flow's sockets
                core_flow["nodelay"] = True
            if f["reader"]["kind"] != "immediate":
                core_flow["reader"] = f["reader"]
            if not f["sample"]:
                core_flow["sample"] = False
            flows.append(core_flow)
        apps = [{k: a[k] for k in ("name", "flows", "spec")} for a in topo.apps]
        return {
            "seed": self.seed,
            "duration_ns": self.duration,
            "sample_interval_ns": self.sample_interval,
            "nodes": [self._node_to_core(n) for n in topo.nodes],
            "links": links,
            "flows": flows,
            "max_memory_bytes": self.limits.memory,
            **({"apps": apps} if apps else {}),
        }

    def to_core_json(self) -> str:
        import json

        return json.dumps(self.to_core(), separators=(",", ":"))
