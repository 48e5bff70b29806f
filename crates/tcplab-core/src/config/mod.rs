//! The engine's input: a fully resolved scenario.
//!
//! Python parses and validates the user's scenario file (human units, names, defaults
//! from the host's sysctls) and hands the engine this plain structure as JSON: every
//! time in nanoseconds, every rate in bits per second, every size in bytes or packets,
//! every reference an index.
//!
//! A schema the other modules read, and a leaf: it imports serde and the other leaves
//! (`crate::time`) only, never a module that acts on it. The types of the configuration
//! live here (the applications' in [`apps`], the capture's in [`capture`]) with their
//! defaults (Linux's sysctl and module defaults) and the ranges of their own fields
//! ([`in_range`], [`TcpConfig::validate`]). The checks that need a module's knowledge live
//! in that module, and `crate::sim::validate` walks the whole structure when the simulator
//! is assembled, so that a bad structure becomes a clear error, never a panic.

pub mod apps;
pub mod capture;

use serde::{Deserialize, Serialize};

use crate::time::NSEC_PER_SEC;

/// Longest run the engine accepts: one year of simulated time. Engine times are `u64`
/// nanoseconds from boot; keeping every configured time far below `u64::MAX` (584 years)
/// means sums of a time and a delay can never wrap (issue 7, item 2.4).
pub const MAX_DURATION_NS: u64 = 366 * 24 * 3600 * NSEC_PER_SEC;
/// Longest delay of any one kind (a link's propagation delay, a reordering delay, the
/// SACK-compression delay): one hour.
pub const MAX_DELAY_NS: u64 = 3600 * NSEC_PER_SEC;
/// Fastest link: 1 Pbit/s (serialization times stay whole nanoseconds for small frames).
pub const MAX_RATE_BPS: u64 = 1_000_000_000_000_000;
/// `TCP_RTO_MAX` (120 s): the largest `rto_min` that means anything.
pub const TCP_RTO_MAX_MS: u32 = 120_000;
/// Default of [`SimConfig::max_memory_bytes`]: 4 GiB.
pub const DEFAULT_MAX_MEMORY_BYTES: u64 = 4 << 30;
/// Largest IP packet (the IPv4 total-length field).
pub const MAX_IP_BYTES: u64 = 65_535;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    pub seed: u64,
    pub duration_ns: u64,
    /// Interval of the per-flow and per-queue time series; 0 disables sampling.
    #[serde(default = "default_sample_interval_ns")]
    pub sample_interval_ns: u64,
    pub nodes: Vec<NodeConfig>,
    pub links: Vec<LinkConfig>,
    pub flows: Vec<FlowConfig>,
    /// Applications driving flows whose `app` is `driven` (`crate::app`).
    #[serde(default)]
    pub apps: Vec<apps::AppInstanceConfig>,
    /// Refuse runs whose estimated memory (`crate::memory::estimate`) exceeds this.
    #[serde(default = "default_max_memory_bytes")]
    pub max_memory_bytes: u64,
    /// Capture one flow's packets at one of its hosts, as tcpdump there would
    /// (`crate::capture`); `None` = off. An observation only: the run is the same.
    #[serde(default)]
    pub capture: Option<capture::CaptureConfig>,
}

pub fn default_sample_interval_ns() -> u64 {
    100_000_000
}

fn default_max_memory_bytes() -> u64 {
    DEFAULT_MAX_MEMORY_BYTES
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    pub name: String,
    /// "host" terminates flows; "router" only forwards.
    #[serde(default = "default_node_kind")]
    pub kind: NodeKind,
    /// The host kernel's `CONFIG_HZ` (100, 250 or 1000): the tick of its jiffy clocks and
    /// timers (RTO, TLP, delayed ACK, CUBIC's clock, BBR's min_rtt window).
    #[serde(default = "default_hz")]
    pub hz: u32,
    /// A host that also forwards (a Kubernetes node carrying its pods' traffic).
    #[serde(default)]
    pub forwarding: bool,
    /// The host runs in periodic CPU time slices (a vCPU under contention); `None` = always on.
    #[serde(default)]
    pub cpu: Option<CpuConfig>,
    /// The host's NIC receive side (ring, NAPI, ingress allowance); `None` = packets go
    /// straight to TCP (an ideal NIC).
    #[serde(default)]
    pub nic: Option<NicConfig>,
    /// GRO on the host's receive path (`ethtool -K DEV gro on`, see `host::gro`), for
    /// packets addressed to the host. The engine's default is off; the Python front sets it
    /// from `offload: {gro}` (on by default, as Linux's).
    #[serde(default)]
    pub gro: bool,
    /// The host's TCP builds GSO skbs of several segments (Linux >= 4.19 always does:
    /// v6.12 net/core/sock.c sk_setup_caps() sets NETIF_F_GSO for every TCP socket, whatever
    /// `ethtool -K` says): the qdisc on the host's first link takes each skb as one unit
    /// and the link puts it on the wire as MSS frames back to back (`net::link`). The Python
    /// front sets it for every host; `false` (the engine's default) is one MSS per skb, kept
    /// for the engine's own tests and for comparing with simulators that have no skbs.
    #[serde(default)]
    pub gso_skbs: bool,
    /// `ethtool -K DEV tso on`: the NIC cuts the skbs into frames. Off, software GSO cuts
    /// them after the qdisc (`validate_xmit_skb()` -> `skb_gso_segment()`): the same wire,
    /// but each frame after the first costs the CPU `tx_gso_frame_ns` (`host::cpu`).
    #[serde(default)]
    pub tso: bool,
    /// The CPU time the host's network stack takes per skb and packet (`host::cpu`,
    /// "The CPU cost of packets"); `None` = none beyond the NIC's `rx_cost_ns`.
    #[serde(default)]
    pub cpu_cost: Option<CpuCostConfig>,
}

/// Periodic time slices: the host runs for `share` of every `period_ns`, starting
/// `phase_ns` into each period (see `host::cpu`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CpuConfig {
    pub period_ns: u64,
    /// Fraction of each period the host runs, in (0, 1].
    pub share: f64,
    #[serde(default)]
    pub phase_ns: u64,
}

/// The CPU time of a host's network stack (see `host::cpu`, "The CPU cost of packets"):
/// per skb sent, per packet received (driver, IP, GRO) and per skb TCP receives.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CpuCostConfig {
    /// Per skb sent: TCP's transmit path, the qdisc and the driver's xmit, ns.
    pub tx_skb_ns: u64,
    /// Per packet received: the driver's poll, IP and GRO, ns. Replaces the NIC's
    /// `rx_cost_ns` on a host with both (they are the same parameter).
    pub rx_packet_ns: u64,
    /// Per skb TCP receives (a GRO aggregate, or each packet with GRO off), ns.
    pub rx_skb_ns: u64,
    /// Per frame that software GSO cuts from an skb beyond its first (a host with `tso`
    /// off: `skb_segment()` and the driver's xmit of each frame), ns.
    #[serde(default)]
    pub tx_gso_frame_ns: u64,
}

/// A NIC's receive side (see `host::nic`); defaults are ENA's and the kernel's.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct NicConfig {
    /// Driver whose counter names `ethtool -S` shows ("ena", "ixgbe", "mlx5", "virtio").
    pub driver: String,
    /// Receive descriptors per queue (`ethtool -g` rx).
    pub rx_ring: u32,
    /// Receive queues (RSS spreads flows over them by hash).
    pub rx_queues: u32,
    /// CPU time to process one received packet in the NAPI poll, ns.
    pub rx_cost_ns: u64,
    /// NAPI weight: packets per poll of one queue.
    pub napi_weight: u32,
    /// `net.core.netdev_budget`: packets per softirq round.
    pub netdev_budget: u32,
    /// `net.core.netdev_budget_usecs`, as ns: time per softirq round.
    pub netdev_budget_ns: u64,
    /// Delay from the first packet in an empty ring to the poll (interrupt moderation), ns.
    pub irq_delay_ns: u64,
    /// A cloud ingress allowance in front of the ring; `None` = none.
    pub allowance: Option<AllowanceConfig>,
}

impl Default for NicConfig {
    fn default() -> Self {
        NicConfig {
            driver: "ena".into(),
            rx_ring: 1024,
            rx_queues: 1,
            rx_cost_ns: 1_000,
            napi_weight: 64,
            netdev_budget: 300,
            netdev_budget_ns: 2_000_000,
            irq_delay_ns: 0,
            allowance: None,
        }
    }
}

/// An instance's ingress allowance: token buckets in bytes and packets. AWS does not
/// publish the bucket depths; they are parameters. Packets beyond the allowance are
/// "queued or dropped" (ENA's `bw_in_allowance_exceeded` / `pps_allowance_exceeded`):
/// they wait in a queue of `queue_packets`, dropped beyond it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AllowanceConfig {
    pub rate_bps: u64,
    pub burst_bytes: u64,
    #[serde(default)]
    pub pps: Option<u64>,
    #[serde(default)]
    pub pps_burst: Option<u64>,
    #[serde(default = "default_allowance_queue")]
    pub queue_packets: u32,
}

fn default_allowance_queue() -> u32 {
    1024
}

impl NodeConfig {
    /// A node with the defaults: always on its CPU, an ideal NIC, not forwarding.
    pub fn new(name: impl Into<String>, kind: NodeKind) -> NodeConfig {
        NodeConfig {
            name: name.into(),
            kind,
            hz: default_hz(),
            forwarding: false,
            cpu: None,
            nic: None,
            gro: false,
            gso_skbs: false,
            tso: false,
            cpu_cost: None,
        }
    }
}

fn default_node_kind() -> NodeKind {
    NodeKind::Host
}

fn default_hz() -> u32 {
    crate::time::DEFAULT_HZ
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    Host,
    Router,
}

/// One direction of a link: `from` transmits into `to`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    pub name: String,
    pub from: u32,
    pub to: u32,
    pub rate_bps: u64,
    pub delay_ns: u64,
    /// Per-packet framing bytes counted by the serializer on top of the IP length
    /// (14 = Ethernet header, as qdiscs and netem count `skb->len`).
    #[serde(default = "default_overhead")]
    pub overhead_bytes: u32,
    #[serde(default)]
    pub loss: LossConfig,
    /// Which packets the loss model applies to (default: all).
    #[serde(default)]
    pub loss_filter: LossFilter,
    /// When the random loss models (Bernoulli, Gilbert-Elliott) are active (default:
    /// the whole run).
    #[serde(default)]
    pub loss_window: LossWindow,
    #[serde(default)]
    pub reorder: Option<ReorderConfig>,
    #[serde(default)]
    pub queue: QueueConfig,
    /// EDT rate limiters applied before the qdisc (Cilium's Bandwidth Manager at the
    /// node's device: one aggregate per pod; see `host::shaper`).
    #[serde(default)]
    pub edt: Vec<EdtConfig>,
    /// The link is a veth crossing into another network namespace: a local sender's
    /// packets leave its socket's accounting (TSQ, `skb_still_in_host_queue()`) the moment
    /// they enter it, because the packet is orphaned on its way into the node: Linux v6.12
    /// net/ipv4/ip_input.c: ip_rcv_core() calls skb_orphan() before ip_forward (Cilium's
    /// legacy host routing). skb_scrub_packet() itself no longer orphans in v6.12. Whatever
    /// queues it meets after that (the node's fq) no longer holds the sender back. The CNI
    /// plugin's path through the IFB keeps the socket through the IFB's tbf:
    /// `orphan_after_queue`.
    #[serde(default)]
    pub orphan: bool,
    /// With `orphan`: the crossing keeps `skb->sk` instead, so a local sender's packets
    /// stay on its TSQ budget (`sk_wmem_alloc`) until they leave the next device, the
    /// node's own: a queue there (Cilium's fq holding EDT-stamped packets) holds the
    /// sender back, as `tcp_small_queue_check()` does on a host. This is the datapath of
    /// Cilium's BPF host routing: Linux v6.12 net/core/skbuff.c: skb_scrub_packet() no
    /// longer orphans on a namespace change (it clears mark and tstamp only), and the
    /// host-side veth's tc program sends the packet on with bpf_redirect_neigh()
    /// (net/core/filter.c), skipping net/ipv4/ip_input.c: ip_rcv_core(), whose
    /// skb_orphan() is what orphans it on the legacy (upper-stack) path, which `orphan`
    /// alone models.
    #[serde(default)]
    pub keeps_sk: bool,
    /// With `orphan`: the crossing keeps `skb->sk` through this link's own qdisc only, and
    /// the skb is orphaned as it leaves it. This is the CNI bandwidth plugin's egress path
    /// (its tbf on an IFB, modelled as the pod -> node veth's qdisc): Linux v6.12
    /// drivers/net/veth.c: veth_xmit() -> __dev_forward_skb() -> skb_scrub_packet() keeps
    /// the socket; at the host-side veth's tc ingress, net/sched/act_mirred.c:
    /// tcf_mirred_to_dev() redirects the skb itself, not a clone (`dont_clone`: at ingress,
    /// a redirect whose action is TC_ACT_STOLEN, as vishvananda/netlink's
    /// NewMirredAction() gives the plugin's U32 filter), so the IFB's tbf queues the pod's
    /// own skbs; drivers/net/ifb.c hands each one, once the tbf releases it, back to the
    /// veth's receive path, where net/ipv4/ip_input.c: ip_rcv_core() orphans it. So the
    /// pod's TSQ budget (`sk_wmem_alloc`, tcp_small_queue_check()) counts what waits in
    /// the tbf, and comes back when the tbf releases a packet or drops it
    /// (kfree_skb() -> tcp_wfree()); the drop is not reported to TCP: veth_xmit() has
    /// returned NET_RX_SUCCESS from the pod's __netif_rx() long before.
    #[serde(default)]
    pub orphan_after_queue: bool,
    /// Whether a TSO/GSO skb crosses this link whole (`None`: a veth into another
    /// namespace, `orphan`, passes; any other link cuts). A veth advertises
    /// NETIF_F_GSO_SOFTWARE (Linux v6.12 drivers/net/veth.c: veth_setup()), so
    /// validate_xmit_skb() leaves the skb whole and the node's stack forwards it as one
    /// (ip_finish_output_gso()); the device that cannot take it — a NIC's TSO, or GSO in
    /// validate_xmit_skb() before a driver without it, as a TUN — cuts it into MSS frames
    /// after its qdisc. The link's qdisc and counters then see one packet per skb.
    #[serde(default)]
    pub passes_gso: Option<bool>,
    /// The link clears the IP ECN field of every packet it carries (a middlebox or tunnel
    /// that bleaches the TOS byte): marks made before it are lost, and ECN-capable packets
    /// reach the queues after it as not-ECT.
    #[serde(default)]
    pub bleach_ecn: bool,
}

/// One pod's EDT aggregate (Cilium `bpf/lib/edt.h`): packets from `nodes` are stamped
/// to leave no faster than `rate_bps`; a packet stamped `drop_horizon_ns` or more ahead
/// of now is dropped before the qdisc.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EdtConfig {
    pub nodes: Vec<u32>,
    pub rate_bps: u64,
    #[serde(default = "default_edt_horizon_ns")]
    pub drop_horizon_ns: u64,
    /// Mark CE (`bpf_skb_ecn_set_ce()`) on an ECN-capable packet stamped more than this
    /// ahead of now: the ECN marking cilium/cilium PR #33220 proposed for the Bandwidth
    /// Manager (1 ms by default there); `None` = no marking, as every Cilium release does.
    #[serde(default)]
    pub ce_threshold_ns: Option<u64>,
}

fn default_edt_horizon_ns() -> u64 {
    2 * NSEC_PER_SEC
}

pub fn default_overhead() -> u32 {
    14
}

impl LinkConfig {
    /// A link with the defaults of everything the JSON may leave out: Ethernet framing, no
    /// loss, no reordering, pfifo_fast's 1000 packets, no EDT shaping, not a veth. Change
    /// the rest with a field update: `LinkConfig { queue, ..LinkConfig::new(..) }`.
    pub fn new(
        name: impl Into<String>,
        from: u32,
        to: u32,
        rate_bps: u64,
        delay_ns: u64,
    ) -> LinkConfig {
        LinkConfig {
            name: name.into(),
            from,
            to,
            rate_bps,
            delay_ns,
            overhead_bytes: default_overhead(),
            loss: LossConfig::default(),
            loss_filter: LossFilter::default(),
            loss_window: LossWindow::default(),
            reorder: None,
            queue: QueueConfig::default(),
            edt: Vec::new(),
            orphan: false,
            keeps_sk: false,
            orphan_after_queue: false,
            passes_gso: None,
            bleach_ecn: false,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LossConfig {
    #[default]
    None,
    /// Each packet lost independently with probability `p`.
    Bernoulli { p: f64 },
    /// Gilbert-Elliott two-state burst loss, as netem's `loss gemodel p r 1-h 1-k`:
    /// `p` good->bad, `r` bad->good, loss probability `1-k` in good, `1-h` in bad.
    /// netem's defaults: h = 0 (every packet in the bad state is lost), k = 1.
    GilbertElliott {
        p: f64,
        r: f64,
        #[serde(default)]
        h: f64,
        #[serde(default = "one")]
        k: f64,
    },
    /// Drop exactly these packets, counted from 0 among the data packets entering the link.
    DropList { data_packets: Vec<u64> },
    /// Lose every packet that leaves the serializer in `[start_ns, end_ns)` of scenario
    /// time, and none outside it: a path that is down for a while (netem `loss 100%`
    /// added at `start_ns` and removed at `end_ns`, or an nftables drop rule; the loss
    /// filter still applies).
    Outage { start_ns: u64, end_ns: u64 },
}

/// Which packets a link's random loss applies to, as people restrict netem-style loss with
/// an nftables match (`tcp payload`-carrying segments, or `meta length >= N`), so that
/// SYNs and pure ACKs are never lost by accident. Packets outside the filter pass without
/// drawing from the loss model's random stream (an nftables rule that does not match
/// never reaches its `numgen`/`random` expression).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LossFilter {
    /// Only segments carrying TCP payload (not SYNs, pure ACKs or bare FINs).
    pub data_only: bool,
    /// Only packets whose IP length is at least this many bytes (0 = any).
    pub min_ip_bytes: u32,
}

impl LossConfig {
    /// The `kind` tag as written in the configuration.
    pub fn kind_name(&self) -> &'static str {
        match self {
            LossConfig::None => "none",
            LossConfig::Bernoulli { .. } => "bernoulli",
            LossConfig::GilbertElliott { .. } => "gilbert_elliott",
            LossConfig::DropList { .. } => "drop_list",
            LossConfig::Outage { .. } => "outage",
        }
    }
}

fn one() -> f64 {
    1.0
}

/// The window of scenario time `[start_ns, end_ns)` in which a link's random loss model
/// (Bernoulli or Gilbert-Elliott) applies, judged by the time a packet leaves the
/// serializer: a netem `loss` qdisc added at `start_ns` and removed at `end_ns` (`None`:
/// never removed). Outside the window packets pass without drawing a random number, so
/// the loss stream inside the window does not depend on the traffic before it, and no
/// other component's random stream is touched (each link owns its own). The
/// Gilbert-Elliott chain starts in its Good state at `start_ns`, as a fresh netem qdisc does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LossWindow {
    pub start_ns: u64,
    pub end_ns: Option<u64>,
}

impl LossWindow {
    /// The whole run.
    pub fn is_always(&self) -> bool {
        self.start_ns == 0 && self.end_ns.is_none()
    }
}

/// netem-style reordering: with probability `p` a packet is held back `delay_ns` longer.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReorderConfig {
    pub p: f64,
    pub delay_ns: u64,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum QueueConfig {
    /// Drop-tail FIFO limited in packets (`tc qdisc add ... pfifo limit N`).
    Pfifo { limit_packets: u32 },
    /// Drop-tail FIFO limited in bytes (`bfifo limit N`), counting IP bytes as tc does.
    Bfifo { limit_bytes: u64 },
    /// Token bucket filter (Linux v6.12 net/sched/sch_tbf.c), with tc's parameters resolved
    /// to engine units: `limit` (or `latency`, converted as tc does) in bytes.
    Tbf(TbfConfig),
    /// Fair queueing with pacing and EDT timestamps (net/sched/sch_fq.c).
    Fq(FqConfig),
    /// Flow queueing with CoDel per flow (net/sched/sch_fq_codel.c).
    FqCodel(FqCodelConfig),
}

impl QueueConfig {
    /// The qdisc's name as `tc qdisc` prints it.
    pub fn kind(&self) -> &'static str {
        match self {
            QueueConfig::Pfifo { .. } => "pfifo",
            QueueConfig::Bfifo { .. } => "bfifo",
            QueueConfig::Tbf(_) => "tbf",
            QueueConfig::Fq(_) => "fq",
            QueueConfig::FqCodel(_) => "fq_codel",
        }
    }

    /// Drop-tail FIFOs keep the fast path (departure known at enqueue, no dequeue events).
    pub fn is_fifo(&self) -> bool {
        matches!(self, QueueConfig::Pfifo { .. } | QueueConfig::Bfifo { .. })
    }
}

/// `tc qdisc add ... tbf rate R burst B limit L [peakrate P mtu M]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TbfConfig {
    pub rate_bps: u64,
    /// Bucket size (`burst`/`buffer`), bytes.
    pub burst_bytes: u64,
    /// Bytes the child queue may hold (tbf's `limit`; tc turns `latency` into it).
    pub limit_bytes: u64,
    #[serde(default)]
    pub peakrate_bps: Option<u64>,
    /// Peak bucket size (`mtu`/`minburst`), bytes; required with `peakrate`.
    #[serde(default)]
    pub mtu_bytes: Option<u64>,
    /// The child qdisc; `None` = what the kernel installs (a bfifo of `limit_bytes`).
    #[serde(default)]
    pub child: Option<Box<QueueConfig>>,
}

/// `tc qdisc add ... fq ...` (v6.12 defaults in [`FqConfig::default`]).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct FqConfig {
    pub limit_packets: u32,
    pub flow_limit_packets: u32,
    /// Hash buckets (`buckets`, a power of two; Cilium sets 2^15).
    pub buckets: u32,
    pub quantum_bytes: u32,
    pub initial_quantum_bytes: u32,
    /// Per-flow rate cap (`maxrate`); `None` = unlimited.
    pub maxrate_bps: Option<u64>,
    pub low_rate_threshold_bps: u64,
    pub refill_delay_ns: u64,
    pub horizon_ns: u64,
    /// `horizon_drop` (true, default) or `horizon_cap`.
    pub horizon_drop: bool,
    /// `pacing` (default) or `nopacing`.
    pub pacing: bool,
    /// `ce_threshold`: mark CE on a packet dequeued more than this after it was due
    /// (Linux v6.12 sch_fq.c fq_dequeue()); `None` = off (`~0U`, the default).
    pub ce_threshold_ns: Option<u64>,
}

impl Default for FqConfig {
    /// Linux v6.12 net/sched/sch_fq.c: fq_init() with a 1514-byte psched_mtu.
    fn default() -> Self {
        FqConfig {
            limit_packets: 10_000,
            flow_limit_packets: 100,
            buckets: 1024,
            quantum_bytes: 2 * 1514,
            initial_quantum_bytes: 10 * 1514,
            maxrate_bps: None,
            low_rate_threshold_bps: 550_000,
            refill_delay_ns: 40_000_000,
            horizon_ns: 10 * NSEC_PER_SEC,
            horizon_drop: true,
            pacing: true,
            ce_threshold_ns: None,
        }
    }
}

/// `tc qdisc add ... fq_codel ...` (v6.12 defaults in [`FqCodelConfig::default`]).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct FqCodelConfig {
    pub limit_packets: u32,
    pub flows: u32,
    pub target_ns: u64,
    pub interval_ns: u64,
    pub quantum_bytes: u32,
    pub memory_limit_bytes: u64,
    pub drop_batch: u32,
    /// `ecn` (the default) or `noecn`: CoDel marks an ECN-capable packet CE instead of
    /// dropping it.
    pub ecn: bool,
    /// `ce_threshold`: mark CE on every ECN-capable packet whose sojourn exceeds it,
    /// whatever CoDel's state (`codel_dequeue()`'s end); `None` = off (the default).
    pub ce_threshold_ns: Option<u64>,
}

impl Default for FqCodelConfig {
    /// Linux v6.12 net/sched/sch_fq_codel.c: fq_codel_init().
    fn default() -> Self {
        FqCodelConfig {
            limit_packets: 10_240,
            flows: 1024,
            target_ns: 5_000_000,
            interval_ns: 100_000_000,
            quantum_bytes: 1514,
            memory_limit_bytes: 32 << 20,
            drop_batch: 64,
            // fq_codel_init(): `q->cparams.ecn = true`.
            ecn: true,
            ce_threshold_ns: None,
        }
    }
}

impl Default for QueueConfig {
    /// `pfifo_fast`'s default: the device's txqueuelen of 1000 packets.
    fn default() -> Self {
        QueueConfig::Pfifo {
            limit_packets: 1000,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CcKind {
    Reno,
    Cubic,
    Bbr,
    /// Data Center TCP (Linux v6.12 net/ipv4/tcp_dctcp.c): needs ECN (`TCP_CONG_NEEDS_ECN`).
    Dctcp,
}

/// Which endpoint of a connection: the client connects, the server accepts. Endpoint
/// `2 * flow + side` in the engine; TCP (`FlowConfig::data_side`) and the applications
/// both read it from here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    #[default]
    Client = 0,
    Server = 1,
}

impl Side {
    /// Endpoint index of this side of `flow` (the engine keeps `2 * flow + side`).
    #[inline]
    pub fn ep(self, flow: u32) -> u32 {
        2 * flow + self as u32
    }
    #[inline]
    pub fn of_ep(ep: u32) -> Side {
        if ep & 1 == 0 {
            Side::Client
        } else {
            Side::Server
        }
    }
    #[inline]
    pub fn other(self) -> Side {
        match self {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    pub name: String,
    /// The node that sends the data (the "client" of `netperf TCP_STREAM`).
    pub src: u32,
    pub dst: u32,
    /// The congestion control of the data's sender (`data_side`).
    pub cc: CcKind,
    /// The congestion control of the data's receiver, whose host may have another
    /// `tcp_congestion_control` (it sends requests and ACKs with it); `None`: the same as `cc`.
    #[serde(default)]
    pub receiver_cc: Option<CcKind>,
    /// `setsockopt(TCP_NODELAY, 1)` on both sockets before the first write: Nagle's
    /// algorithm off (Linux v6.12 net/ipv4/tcp_output.c: tcp_nagle_test() lets a small
    /// segment go while data is in flight).
    #[serde(default)]
    pub nodelay: bool,
    #[serde(default)]
    pub start_ns: u64,
    /// When the application stops writing; `None` = end of the run.
    #[serde(default)]
    pub stop_ns: Option<u64>,
    #[serde(default)]
    pub app: AppConfig,
    #[serde(default)]
    pub tcp: TcpConfig,
    #[serde(default)]
    pub cc_params: CcParams,
    /// The endpoint whose bulk writer `app` runs (client: netperf TCP_STREAM; server:
    /// TCP_MAERTS), and whose sender the time series and the flow summary report. For a
    /// `driven` flow: the side that carries most of the data (HLS, NFS: the server).
    #[serde(default)]
    pub data_side: Side,
    /// How the application at the other side (the data's receiver) reads.
    #[serde(default)]
    pub reader: ReaderConfig,
    /// Sample this flow into the time series (off for the thousands of connections of a
    /// broadcast, whose per-connection series nobody reads).
    #[serde(default = "default_true")]
    pub sample: bool,
}

fn default_true() -> bool {
    true
}

impl FlowConfig {
    /// A bulk flow (netperf TCP_STREAM from `src` to `dst`) with the defaults of everything
    /// the JSON may leave out: it starts at 0 and runs to the end, Linux's TCP settings and
    /// module parameters, the client sends, the receiver reads at once, sampled. Change the
    /// rest with a field update: `FlowConfig { reader, ..FlowConfig::new(..) }`.
    pub fn new(name: impl Into<String>, src: u32, dst: u32, cc: CcKind) -> FlowConfig {
        FlowConfig {
            name: name.into(),
            src,
            dst,
            cc,
            receiver_cc: None,
            nodelay: false,
            start_ns: 0,
            stop_ns: None,
            app: AppConfig::default(),
            tcp: TcpConfig::default(),
            cc_params: CcParams::default(),
            data_side: Side::default(),
            reader: ReaderConfig::default(),
            sample: default_true(),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AppConfig {
    /// netperf TCP_STREAM: the sender always has data (or `bytes` in all, then FIN).
    #[default]
    Bulk,
    BulkBytes {
        bytes: u64,
    },
    /// Written by an app of `SimConfig.apps` (request/response, video, ...).
    Driven,
}

/// The reading application of a flow's receiving endpoint (`crate::app` module docs).
#[derive(Debug, Clone, Copy, Deserialize, Default, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ReaderConfig {
    /// Reads everything as soon as it arrives (netperf, iperf3).
    #[default]
    Immediate,
    /// Reads at most `rate_bps` (a slow consumer).
    Rate { rate_bps: u64 },
    /// Reads up to `bytes` every `interval_ns` (a consumer that wakes up periodically).
    Bursts { interval_ns: u64, bytes: u64 },
}

/// Per-socket TCP settings, named after the sysctls they come from (v6.12 defaults).
/// Serialize: the binding exports the defaults (`tcplab._core.defaults()`) so Python's
/// copy is tested against them.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TcpConfig {
    pub mss_bytes: u32,
    /// `tcp_rmem` min, default, max.
    pub tcp_rmem: [u64; 3],
    /// `tcp_wmem` min, default, max.
    pub tcp_wmem: [u64; 3],
    pub tcp_slow_start_after_idle: bool,
    /// `tcp_early_retrans` (3 = TLP enabled).
    pub tcp_early_retrans: u8,
    /// `tcp_recovery` bits (1 = RACK loss detection; 4 = no DUPACK-threshold heuristic).
    pub tcp_recovery: u8,
    pub tcp_frto: u8,
    pub tcp_reordering: u32,
    pub tcp_max_reordering: u32,
    pub tcp_min_rtt_wlen_s: u32,
    pub tcp_limit_output_bytes: u64,
    pub tcp_pacing_ss_ratio: u32,
    pub tcp_pacing_ca_ratio: u32,
    pub tcp_moderate_rcvbuf: bool,
    pub tcp_comp_sack_delay_ns: u64,
    pub tcp_comp_sack_nr: u32,
    pub tcp_min_tso_segs: u32,
    pub tcp_tso_rtt_log: u32,
    pub initial_cwnd: u32,
    /// `TCP_RTO_MIN` in ms (200); a per-route `rto_min` may lower it.
    pub rto_min_ms: u32,
    /// `SK_PACING_FQ` (pacing done by the qdisc, not TCP). The engine sets it itself for
    /// every socket whose host's egress qdisc is fq with pacing (`sim::fq_paces`); `true`
    /// here is accepted only for such a sender (checked when the simulator is built), and
    /// a bare `build` (tests) honours it anyway.
    pub fq_pacing: bool,
    /// `sk_max_pacing_rate` (SO_MAX_PACING_RATE) in bytes per second; u64::MAX = unlimited.
    pub max_pacing_rate_bytes_per_sec: u64,
    /// `net.ipv4.tcp_ecn` of the client's host and of the server's host (indexed by
    /// [`Side`]): 0 never, 1 request on outgoing and accept on incoming connections, 2
    /// (Linux's default) only accept when asked (`tcp::ecn`).
    pub tcp_ecn: [u8; 2],
    /// `net.ipv4.tcp_ecn_fallback` of the client's host: a retransmitted SYN no longer asks
    /// for ECN (the default, 1).
    pub tcp_ecn_fallback: bool,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss_bytes: 1448,
            tcp_rmem: [4096, 131072, 6291456],
            tcp_wmem: [4096, 16384, 4194304],
            tcp_slow_start_after_idle: true,
            tcp_early_retrans: 3,
            tcp_recovery: 1,
            tcp_frto: 2,
            tcp_reordering: 3,
            tcp_max_reordering: 300,
            tcp_min_rtt_wlen_s: 300,
            tcp_limit_output_bytes: 1048576,
            tcp_pacing_ss_ratio: 200,
            tcp_pacing_ca_ratio: 120,
            tcp_moderate_rcvbuf: true,
            tcp_comp_sack_delay_ns: 1_000_000,
            tcp_comp_sack_nr: 44,
            tcp_min_tso_segs: 2,
            tcp_tso_rtt_log: 9,
            initial_cwnd: 10,
            rto_min_ms: 200,
            fq_pacing: false,
            max_pacing_rate_bytes_per_sec: u64::MAX,
            tcp_ecn: [2, 2],
            tcp_ecn_fallback: true,
        }
    }
}

/// Congestion-control module parameters (`/sys/module/tcp_cubic/parameters/*`, ...).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct CcParams {
    /// tcp_cubic `hystart` (1 = on).
    pub hystart: bool,
    /// tcp_cubic `hystart_detect` bits: 1 = ACK train, 2 = delay.
    pub hystart_detect: u8,
    pub hystart_low_window: u32,
    pub hystart_ack_delta_us: u32,
    pub fast_convergence: bool,
    pub tcp_friendliness: bool,
    /// tcp_cubic `beta` (x1024).
    pub beta: u32,
    pub bic_scale: u32,
    /// tcp_cubic `initial_ssthresh` (0 = unset).
    pub initial_ssthresh: u32,
    /// Apply the BBR inflight-deficit patch for CPU-starved VMs (seed 003).
    pub bbr_vm_patch: bool,
}

impl Default for CcParams {
    fn default() -> Self {
        CcParams {
            hystart: true,
            hystart_detect: 3,
            hystart_low_window: 16,
            hystart_ack_delta_us: 2000,
            fast_convergence: true,
            tcp_friendliness: true,
            beta: 717,
            bic_scale: 41,
            initial_ssthresh: 0,
            bbr_vm_patch: false,
        }
    }
}

impl SimConfig {
    /// Parse the engine's JSON input. The checks of every field (what each module relies
    /// on) are `crate::sim::validate`'s, run when the simulator is built.
    pub fn parse_json(s: &str) -> Result<Self, String> {
        serde_json::from_str(s).map_err(|e| format!("engine config: {e}"))
    }
}

/// `field: v is outside [lo, hi] unit` unless `lo <= v <= hi`: the form of every range
/// error of the engine's configuration checks.
pub fn in_range(field: &str, v: u64, lo: u64, hi: u64, unit: &str) -> Result<(), String> {
    if v < lo || v > hi {
        let unit = if unit.is_empty() {
            String::new()
        } else {
            format!(" {unit}")
        };
        return Err(format!("{field}: {v} is outside [{lo}, {hi}]{unit}"));
    }
    Ok(())
}

/// `field: p is not a probability in [0, 1]` unless it is one.
pub fn probability(field: &str, p: f64) -> Result<(), String> {
    if !(0.0..=1.0).contains(&p) {
        return Err(format!("{field}: {p} is not a probability in [0, 1]"));
    }
    Ok(())
}

impl TcpConfig {
    /// Ranges follow the kernel's sysctl tables (Linux v6.12 net/ipv4/sysctl_net_ipv4.c:
    /// `ipv4_net_table` extra1/extra2 bounds) where it has them, and what the engine's
    /// arithmetic relies on elsewhere.
    pub fn validate(&self, at: &str) -> Result<(), String> {
        let f = |name: &str| format!("{at}.{name}");
        in_range(&f("mss_bytes"), self.mss_bytes as u64, 88, 65_000, "bytes")?;
        in_range(
            &f("initial_cwnd"),
            self.initial_cwnd as u64,
            1,
            65_535,
            "packets",
        )?;
        for (name, m) in [("tcp_rmem", &self.tcp_rmem), ("tcp_wmem", &self.tcp_wmem)] {
            // sysctl tcp_rmem/tcp_wmem: ints of at least 1 (extra1 = SYSCTL_ONE).
            if m.iter().any(|&v| v == 0 || v > i32::MAX as u64) || !(m[0] <= m[1] && m[1] <= m[2]) {
                return Err(format!(
                    "{}: [{}, {}, {}], expected min <= default <= max, each in [1, {}] bytes",
                    f(name),
                    m[0],
                    m[1],
                    m[2],
                    i32::MAX
                ));
            }
        }
        in_range(
            &f("tcp_early_retrans"),
            self.tcp_early_retrans as u64,
            0,
            4,
            "",
        )?;
        in_range(&f("tcp_recovery"), self.tcp_recovery as u64, 0, 7, "(bits)")?;
        in_range(&f("tcp_frto"), self.tcp_frto as u64, 0, 2, "")?;
        in_range(
            &f("tcp_reordering"),
            self.tcp_reordering as u64,
            1,
            300,
            "packets",
        )?;
        in_range(
            &f("tcp_max_reordering"),
            self.tcp_max_reordering as u64,
            1,
            1 << 20,
            "packets",
        )?;
        in_range(
            &f("tcp_min_rtt_wlen_s"),
            self.tcp_min_rtt_wlen_s as u64,
            0,
            86_400,
            "s",
        )?;
        // sysctl tcp_limit_output_bytes: an int without bounds; 0 leaves TSQ its 2-skb floor.
        in_range(
            &f("tcp_limit_output_bytes"),
            self.tcp_limit_output_bytes,
            0,
            i32::MAX as u64,
            "bytes",
        )?;
        in_range(
            &f("tcp_pacing_ss_ratio"),
            self.tcp_pacing_ss_ratio as u64,
            0,
            1000,
            "%",
        )?;
        in_range(
            &f("tcp_pacing_ca_ratio"),
            self.tcp_pacing_ca_ratio as u64,
            0,
            1000,
            "%",
        )?;
        in_range(
            &f("tcp_comp_sack_delay_ns"),
            self.tcp_comp_sack_delay_ns,
            0,
            MAX_DELAY_NS,
            "ns (one hour)",
        )?;
        in_range(
            &f("tcp_comp_sack_nr"),
            self.tcp_comp_sack_nr as u64,
            0,
            255,
            "",
        )?;
        in_range(
            &f("tcp_min_tso_segs"),
            self.tcp_min_tso_segs as u64,
            1,
            255,
            "segments",
        )?;
        in_range(
            &f("tcp_tso_rtt_log"),
            self.tcp_tso_rtt_log as u64,
            0,
            31,
            "",
        )?;
        // RTO arithmetic is in microseconds (u32); TCP_RTO_MAX bounds what rto_min means.
        in_range(
            &f("rto_min_ms"),
            self.rto_min_ms as u64,
            1,
            TCP_RTO_MAX_MS as u64,
            "ms",
        )?;
        if self.max_pacing_rate_bytes_per_sec == 0 {
            return Err(format!(
                "{}: 0, expected a positive rate in bytes/s (u64::MAX = unlimited)",
                f("max_pacing_rate_bytes_per_sec")
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The constructors give what the JSON gives when it leaves a field out (serde's
    /// defaults), so that tests built on them run the configurations Python sends.
    #[test]
    fn constructors_match_the_json_defaults() {
        let link: LinkConfig = serde_json::from_str(
            r#"{"name":"a->b","from":0,"to":1,"rate_bps":1000000,"delay_ns":5}"#,
        )
        .unwrap();
        assert_eq!(
            format!("{link:?}"),
            format!("{:?}", LinkConfig::new("a->b", 0, 1, 1_000_000, 5))
        );
        let flow: FlowConfig =
            serde_json::from_str(r#"{"name":"f","src":0,"dst":1,"cc":"bbr"}"#).unwrap();
        assert_eq!(
            format!("{flow:?}"),
            format!("{:?}", FlowConfig::new("f", 0, 1, CcKind::Bbr))
        );
    }
}
