"""Scenario files: the user's description of a network, its hosts and its traffic.

The model
---------
A scenario is a YAML mapping (see ``tcplab/scenarios/*.yaml`` for complete examples)::

    name: lossy-long-path
    duration: 60s
    hosts:
      server: {sysctl: {tcp_congestion_control: bbr}}
      client: {}
    routers: [r1]
    links:
      - {between: [server, r1], rate: 5Mbit, delay: 25ms, loss: 1%, queue: {limit: 1bdp}}
      - {between: [r1, client], rate: 100Mbit, delay: 25ms}
    flows:
      - {from: server, to: client, app: bulk}

It is parsed in three steps, each of which can only fail with a
:class:`~tcplab.errors.ScenarioError` naming the field path, the value and what was expected:

1. YAML -> plain dict (duplicate keys are errors), then ``--set PATH=VALUE`` overrides are
   applied to that dict (:mod:`tcplab.overrides`).
2. The dict is validated by the pydantic models below. Unknown keys are errors (typos must
   not be silently ignored), every human unit is parsed by :mod:`tcplab.units`.
3. Cross-references are checked: node names unique, links join two different known nodes,
   flows go from a host to another host that is reachable (:mod:`tcplab.routing`).

Defaults are Linux v6.12's: a host's ``sysctl`` block takes ``net.ipv4.tcp_*`` names (with or
without the ``net.ipv4.`` prefix) and their default values; cc module parameters are those of
``/sys/module/tcp_cubic/parameters``.

Where a flow's TCP settings come from
    ``tcp_rmem`` from the **receiving** host's sysctl (it sizes the receive buffer);
    ``tcp_ecn`` from each end by its role (the engine's ``tcp_ecn = [client, server]``: the
    client's asks for ECN, the server's accepts it) and ``tcp_ecn_fallback`` from the client;
    every other TCP setting from the **sending** host's sysctl; then the flow's own ``tcp:``
    block overrides any but the ECN two, which it refuses (they are host sysctls). ``cc``
    defaults to the sender's ``tcp_congestion_control``, and the receiver's socket runs its
    own host's (it sends requests and ACKs with it: an NFS client's ``ss`` shows its own
    cc); a flow's own ``cc:`` is set on both sockets.

Links and queues
    Each ``links:`` entry makes two one-way links, ``a->b`` with the entry's settings and
    ``b->a`` with the same settings except those given under ``reverse:`` (field by field: a
    ``reverse.queue`` replaces the whole queue block). Each one-way link serializes at
    ``rate`` (counting ``overhead`` framing bytes per packet), holds a drop-tail queue, then
    applies loss, reordering and the propagation ``delay``.

    Queue limits may be given in bandwidth-delay products: ``limit: 1bdp``. For a one-way link,
    ``bdp_bytes = rate_bps / 8 * base_rtt`` where ``base_rtt`` is the largest round-trip
    propagation delay (sum of one-way delays along the flow's data route plus its ACK route)
    among the flows whose data or ACK route crosses that link; if no flow crosses it,
    ``base_rtt = 2 * delay`` of the link itself. Then ``pfifo`` gets
    ``max(1, round(k * bdp_bytes / (1500 + overhead)))`` packets and ``bfifo`` gets
    ``max(1500 + overhead, round(k * bdp_bytes))`` bytes for ``limit: kbdp`` (rounding half
    up). ``1500 + overhead`` (1514 by default) is a full-size segment as the link counts it
    (1448 B MSS + 52 B TCP/IP headers with timestamps + Ethernet framing): the serializer
    spends ``rate`` on those bytes, and qdiscs count them (``skb->len``), so a ``1bdp``
    ``pfifo`` holds exactly the packets that fill the path once, and the same as a ``1bdp``
    ``bfifo`` (the engine's test helpers count the same way).
    Defaults: ``pfifo`` with 1000 packets (a device's ``txqueuelen``); ``bfifo`` defaults to
    1 514 000 bytes (``txqueuelen * (1500 + 14)``, as Linux sizes it).

Loss (``netem`` meanings)
    ``loss: 1%`` (or ``1``: a bare number is percent, as netem reads it): each packet
    independently. ``{gilbert_elliott: {p, r, h, k}}``:
    two states; ``p`` = P(good->bad), ``r`` = P(bad->good), ``h`` = P(packet survives | bad),
    ``k`` = P(packet survives | good). netem's command line takes ``p r 1-h 1-k``; tcplab takes
    ``h`` and ``k`` themselves. Defaults as current iproute2: ``r = 1 - p``, ``h = 0%`` (bad
    state loses everything), ``k = 100%``. ``{drop: [5, 17]}`` drops exactly those data packets,
    counted from 0 in the order they enter the link (for tests). ``{random: 1%}`` is
    ``loss: 1%`` written as a mapping, so that a filter can be added beside the model, as
    loss is emulated with nftables: ``only: data`` applies it to segments carrying data only
    (never a SYN or a pure ACK), ``min_size: 101B`` to packets of at least that IP length
    (nftables ``meta length``), e.g. ``loss: {random: 1%, only: data}``.
    ``{outage: {start: 10s, end: 200s}}`` loses every packet leaving the link in that window
    of scenario time (netem ``loss 100%`` added at start, removed at end; one window per link).
    A random model (``random``, ``gilbert_elliott``) may take ``start:`` and/or ``end:``
    beside it, ``loss: {gilbert_elliott: {p: 1%, r: 20%}, start: 60s, end: 30min}``: the loss
    applies to packets leaving the link in [start, end) only, as a netem qdisc added at start
    and removed at end (no end: never removed). Outside the window no random number is drawn,
    so nothing else in the run changes; a Gilbert-Elliott chain starts in its good state.

Qdiscs, hosts' devices, CPU and NIC
    ``queue:`` names any qdisc (``pfifo``, ``bfifo``, ``pfifo_fast``, ``tbf``, ``fq``,
    ``fq_codel``) with tc's parameters and units (:mod:`~tcplab.scenario.qdiscs`). A link
    that sets no ``queue:`` gets its sending host's ``qdisc:``, else the host's
    ``sysctl.net.core.default_qdisc``, else pfifo_fast (a pfifo of 1000 packets, the default
    it always had); a node under Cilium's Bandwidth Manager gets Cilium's fq on its links
    out. ``hosts.NAME.cpu`` (:mod:`~tcplab.scenario.cpu`) and ``hosts.NAME.nic``
    (:mod:`~tcplab.scenario.nic`) add CPU time slices and a NIC receive side. Nodes get the
    engine's ``forwarding``/``cpu``/``nic`` keys only when set, links ``edt`` only when
    non-empty: scenarios without these components resolve to the same engine JSON as before.

Pods
    ``pods:`` (:mod:`~tcplab.scenario.pods`) are hosts joined to their node by a veth pair
    (links appended after the scenario's own, pod -> node then node -> pod), with Kubernetes
    egress/ingress limits enforced by the CNI bandwidth plugin or Cilium's Bandwidth Manager
    (the arithmetic in :mod:`~tcplab.scenario.bandwidth`). Node indices: hosts in file order,
    then pods, then routers.

Limits
    Times and rates are bounded to what the engine represents (a year, an hour per delay,
    1 Pbit/s; see :mod:`tcplab.scenario.limits`), a run's time series to ``limits: {memory: 4GiB}``
    and its estimated CPU time to ``limits: {cpu_time: 1h}`` (the defaults, see
    :mod:`tcplab.scenario.cost`), which a scenario may raise.

Flows and workloads
    A ``flows:`` entry is a workload from ``from`` (the client: it connects and sends the
    requests) to ``to`` (the server); ``app:`` says which (:mod:`~tcplab.scenario.apps`):
    ``bulk`` (netperf ``TCP_STREAM``: the client sends, the default), ``maerts`` (the server
    sends), ``{bulk: {bidir: true}}`` (iperf3 ``--bidir``), ``rr``, ``hls``, ``nfs_stream``,
    ``batch_writer``, ``broadcast`` (``from`` a list of senders). An app's keys are the
    engine's fields without their unit suffix, with the engine's defaults. ``reader:`` makes
    the data's receiving application read slowly. ``count: N`` makes N independent copies.
    The default name is ``<from>-<to>-<index in flows>``; the engine flows (one per TCP
    connection) and apps are named as :mod:`~tcplab.scenario.flows` says (``<name>.0`` ...
    ``<name>.N-1`` for N copies of one connection). ``tcp_rmem`` comes from the host that
    receives the data, the other TCP settings and the default cc from the one that sends it
    (the server for ``maerts``, ``hls``, ``nfs_stream``).

Layout: :mod:`~tcplab.scenario.fields` (field parsers on top of :mod:`tcplab.units`),
:mod:`~tcplab.scenario.base` (the key-checking base model), :mod:`~tcplab.scenario.hosts`
(sysctls, Linux defaults), :mod:`~tcplab.scenario.links` (links, loss, reordering),
:mod:`~tcplab.scenario.queues` (the qdisc of a link) and :mod:`~tcplab.scenario.qdiscs` (tbf, fq,
fq_codel parameters), :mod:`~tcplab.scenario.cpu`, :mod:`~tcplab.scenario.nic`,
:mod:`~tcplab.scenario.pods` and :mod:`~tcplab.scenario.bandwidth` (pod limits),
:mod:`~tcplab.scenario.flows` and :mod:`~tcplab.scenario.apps`,
:mod:`~tcplab.scenario.model` (the top-level :class:`Scenario`), :mod:`~tcplab.scenario.checks`
(cross-references), :mod:`~tcplab.scenario.topology` (routes, "bdp" limits, the engine form) and
:mod:`~tcplab.scenario.validation` (dict -> Scenario or ScenarioError).

Floor 1 (DESIGN.md's "Layout"): this package imports the leaves of floor 0 (units, errors,
literals, columns, ...) and :mod:`tcplab.routing`, nothing above: not the engine (the app
defaults it reads are :data:`~tcplab.scenario.apps.APP_DEFAULTS`, tests hold them equal to
the engine's), not results or views. Its modules import the module that defines a name, never
this ``__init__``, which only re-exports them.
"""

from __future__ import annotations

from tcplab.scenario.apps import APP_DEFAULTS, APP_EXPECTED, APP_KINDS, App, AppSpec
from tcplab.scenario.fields import (
    CC_NAMES,
    NAME_PATTERN,
    Bool,
    CcName,
    Int,
    MemTriple,
    Name,
    NodeName,
    PosTime,
    Probability,
    Rate,
    Size,
    Time,
)
from tcplab.scenario.flows import CcParams, Flow, FlowTcp, ReaderSpec, expand_flow, flow_names
from tcplab.scenario.hosts import LINUX_CC_DEFAULTS, LINUX_TCP_DEFAULTS, Host, Sysctl
from tcplab.scenario.links import LOSS_EXPECTED, Link, LinkOverrides, Loss, LossSpec, Reorder
from tcplab.scenario.model import Scenario
from tcplab.scenario.queues import (
    DEFAULT_BFIFO_LIMIT,
    DEFAULT_PFIFO_LIMIT,
    NOMINAL_PACKET_BYTES,
    Queue,
    QueueLimit,
    QueueSpec,
    parse_queue,
    parse_queue_limit,
)
from tcplab.scenario.validation import validate_scenario

__all__ = [
    "Scenario",
    "validate_scenario",
    "CC_NAMES",
    "LINUX_TCP_DEFAULTS",
    "LINUX_CC_DEFAULTS",
    "Host",
    "Sysctl",
    "Link",
    "LinkOverrides",
    "Reorder",
    "Loss",
    "LossSpec",
    "LOSS_EXPECTED",
    "Queue",
    "QueueLimit",
    "QueueSpec",
    "parse_queue",
    "parse_queue_limit",
    "NOMINAL_PACKET_BYTES",
    "DEFAULT_PFIFO_LIMIT",
    "DEFAULT_BFIFO_LIMIT",
    "Flow",
    "FlowTcp",
    "CcParams",
    "flow_names",
    "expand_flow",
    "ReaderSpec",
    "App",
    "AppSpec",
    "APP_EXPECTED",
    "APP_DEFAULTS",
    "APP_KINDS",
    "NAME_PATTERN",
    "Bool",
    "CcName",
    "Int",
    "MemTriple",
    "Name",
    "NodeName",
    "PosTime",
    "Probability",
    "Rate",
    "Size",
    "Time",
]
