//! The simulator: builds the network and the endpoints from a [`SimConfig`], runs the
//! event loop, samples time series, and checks two invariants at the end of every run:
//!
//! - **packet conservation**: every data packet is accounted for (delivered, dropped for a
//!   counted reason, or still inside a link);
//! - **RTT floor**: no RTT sample of any flow is below its path's propagation round trip
//!   (the one-way delays of the links from sender to receiver and back). Serialization and
//!   queueing only add to an RTT, so this bound is conservative; a sample below it means
//!   a segment was stamped with a transmit time it did not leave at (issue 7, item 1.7).
//!
//! Failures that are not bugs of the model, such as running out of memory while the time
//! series grow, end the run with a [`SimError`] rather than a panic or an abort.
//!
//! Clock: the engine starts at [`BOOT_NS`] (1 s) rather than 0,
//! because Linux's TCP reads a zero timestamp as "unset" (`tcp_mstamp`, `epoch_start`,
//! `delivered_mstamp`); a real host's clock is never 0. All times reported to callers are
//! relative to the start of the scenario.
//!
//! The top: it imports every room and no room imports it. `sim::validate` (in
//! `validate.rs`) is the check of a whole configuration, walked here where the simulator
//! is assembled.

pub mod scripted;
mod validate;

pub use validate::{validate, warnings};

use serde::Serialize;

use crate::app::{App, AppCx, AppOutput, Side};
use crate::capture::{CaptureAt, CaptureBuf, CaptureOutput};
use crate::cc::CongestionOps;
use crate::config::{NodeKind, SimConfig};
use crate::event::{EventKind, EventQueue};
use crate::host::gro::Gro;
use crate::host::model::HostModel;
use crate::host::nic::PollEnd;
use crate::metrics::histogram::LogHistogram;
use crate::metrics::timeseries::{FlowSeries, HostSeries, QueueSeries};
use crate::mib::{Mib, MibCounters};
use crate::net::link::Link;
use crate::net::link::WireStats;
use crate::net::qdisc::QdiscStats;
use crate::net::routing::Routes;
use crate::net::{DataAccounting, Network};
use crate::tcp::chrono::ChronoStats;
use crate::tcp::rate::delivery_rate_bytes_per_sec;
use crate::tcp::sock::{CaState, PacingStatus};
use crate::tcp::socket::{Ctx, TcpSocket, NO_APP, T_DELACK, T_PACING, T_READ, T_XMIT};
use crate::time::{time_add, BOOT_NS, NEVER, NSEC_PER_MSEC, NSEC_PER_USEC};

/// A flow's RTT samples (`rtt_us` in the output: the keys drop the unit, the mapping has it).
#[derive(Clone, Debug, Serialize)]
pub struct RttSummary {
    pub count: u64,
    #[serde(rename = "min")]
    pub min_us: u64,
    #[serde(rename = "mean")]
    pub mean_us: f64,
    #[serde(rename = "p50")]
    pub p50_us: u64,
    #[serde(rename = "p90")]
    pub p90_us: u64,
    #[serde(rename = "p99")]
    pub p99_us: u64,
    #[serde(rename = "max")]
    pub max_us: u64,
    /// The percentiles are low edges of log-linear histogram buckets, within this
    /// relative error (`metrics::histogram::RELATIVE_ERROR`).
    pub relative_error: f64,
}

impl RttSummary {
    fn from_hist(h: &LogHistogram) -> Self {
        RttSummary {
            count: h.count,
            min_us: if h.count == 0 { 0 } else { h.min },
            mean_us: h.mean(),
            p50_us: h.quantile(0.5),
            p90_us: h.quantile(0.9),
            p99_us: h.quantile(0.99),
            max_us: h.max,
            relative_error: crate::metrics::histogram::RELATIVE_ERROR,
        }
    }
}

/// One flow's totals (the `flows` of the output, in `SimConfig.flows` order).
#[derive(Clone, Debug, Serialize)]
pub struct FlowSummary {
    pub name: String,
    pub src: u32,
    pub dst: u32,
    pub cc: String,
    pub start_ns: u64,
    pub end_ns: u64,
    pub bytes_sent: u64,
    pub bytes_retrans: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub data_segs_out: u64,
    pub retrans_segs: u64,
    pub timeouts: u64,
    #[serde(rename = "rtt_us")]
    pub rtt: RttSummary,
    /// The data sender's chronographs at the end (`tcp::chrono`), as tcp_info reports
    /// them: `tcpi_busy_time` (all three), `tcpi_rwnd_limited`, `tcpi_sndbuf_limited`, us:
    /// ss -i's busy / rwnd_limited / sndbuf_limited.
    pub chrono: ChronoStats,
    /// Both endpoints' counters, by the name nstat prints.
    pub counters: MibCounters,
    /// ECN at the end of the run (`tcp::ecn`).
    pub ecn: EcnSummary,
}

/// A flow's ECN state: what `ss -i` shows (`ecn`, `ecnseen`, `dctcp:(...)`) and
/// `tcpi_delivered_ce`.
#[derive(Clone, Debug, Serialize)]
pub struct EcnSummary {
    /// `tp->ecn_flags` of the data sender's socket and of the data receiver's
    /// (`TCP_ECN_OK` 1, `_QUEUE_CWR` 2, `_DEMAND_CWR` 4, `_SEEN` 8).
    pub sender_flags: u8,
    pub receiver_flags: u8,
    /// The data sender's `tp->delivered_ce`: packets it learnt were CE-marked.
    pub delivered_ce: u64,
    /// The data sender's DCTCP state (`None` unless it runs DCTCP with ECN).
    pub dctcp: Option<DctcpSummary>,
}

/// `struct tcp_dctcp_info` as ss prints it.
#[derive(Clone, Debug, Serialize)]
pub struct DctcpSummary {
    pub ce_state: u8,
    pub alpha: u32,
    pub ab_ecn: u64,
    pub ab_tot: u64,
}

/// One link's counters (the `links` of the output, in `SimConfig.links` order): its qdisc
/// as `tc -s qdisc` shows it, and its wire.
#[derive(Clone, Debug, Serialize)]
pub struct LinkSummary {
    pub name: String,
    pub from: u32,
    pub to: u32,
    pub qdisc: &'static str,
    #[serde(flatten)]
    pub stats: QdiscStats,
    /// Data and other packets the wire lost: the random loss model's and the drop list's.
    pub loss_drops: u64,
    pub reorder_events: u64,
    /// The qdisc's own counters, named as `tc -s qdisc` prints them.
    #[serde(serialize_with = "crate::metrics::serialize_pairs")]
    pub xstats: Vec<(&'static str, u64)>,
    /// A child qdisc (tbf's inner queue): its kind, stats and xstats.
    pub child: Option<crate::net::qdisc::ChildStats>,
    /// The wire's counters (`loss_drops` and `reorder_events` above come from them).
    #[serde(skip)]
    pub wire: WireStats,
    /// Cilium EDT aggregates on this link (`LinkConfig.edt`), in configuration order.
    pub edt: Vec<EdtSummary>,
}

/// One EDT aggregate's counters (see `host::shaper`).
#[derive(Clone, Debug, Serialize)]
pub struct EdtSummary {
    pub rate_bps: u64,
    /// Packets dropped beyond the drop horizon (before the qdisc).
    pub drops: u64,
    /// Packets given a later departure time.
    pub stamped: u64,
    /// Packets that passed unchanged.
    pub passed: u64,
    /// Packets marked CE (`EdtConfig::ce_threshold_ns`, PR #33220's what-if).
    pub ce_marks: u64,
}

/// One node's counters (the `hosts` of the output: every node, in `SimConfig.nodes` order).
#[derive(Clone, Debug, Serialize)]
pub struct HostSummary {
    pub name: String,
    pub counters: MibCounters,
    /// The host's NIC, if it has one configured.
    pub nic: Option<NicSummary>,
    /// The host's CPU time slices, if configured (a 100 % share included: no steal).
    pub cpu: Option<CpuSummary>,
}

#[derive(Clone, Debug, Serialize)]
pub struct NicSummary {
    pub driver: &'static str,
    pub rx_ring: u32,
    pub rx_queues: u32,
    /// Counters named as the driver's `ethtool -S` prints them (see `host::nic`).
    #[serde(serialize_with = "crate::metrics::serialize_pairs")]
    pub ethtool: Vec<(String, u64)>,
}

#[derive(Clone, Debug, Serialize)]
pub struct CpuSummary {
    pub period_ns: u64,
    pub share: f64,
    /// Time the host was off its CPU over the run (`/proc/stat` steal), ns.
    pub steal_ns: u64,
    /// Time the host had its CPU over the run, ns.
    pub on_ns: u64,
    /// With a `cpu.cost`: CPU time its network stack used over the run, ns (`host::cpu`,
    /// "The CPU cost of packets"; work still queued at the end counts whole).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy_ns: Option<u64>,
    /// `busy_ns / on_ns`: the share of the host's CPU time its stack used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy_share: Option<f64>,
}

/// The end-of-run checks (module docs).
#[derive(Clone, Debug, Serialize)]
pub struct Invariant {
    /// Both checks passed.
    pub ok: bool,
    /// Every data packet is accounted for.
    #[serde(rename = "accounting_ok")]
    pub data_ok: bool,
    #[serde(flatten)]
    pub data: DataAccounting,
    pub in_flight: u64,
    pub message: String,
    /// The RTT-floor check (see module docs).
    pub rtt_floor: RttFloor,
}

/// The RTT-floor check and its message (names the first offender).
#[derive(Clone, Debug, Serialize)]
pub struct RttFloor {
    pub ok: bool,
    pub message: String,
}

/// Why a run stopped before its end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimError {
    /// An allocation the run needed failed (reported, never an abort).
    OutOfMemory { what: String, at_ns: u64 },
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimError::OutOfMemory { what, at_ns } => write!(
                f,
                "out of memory at simulated time {:.6} s while {what}; lower the run's memory \
                 (a longer sample_interval_ns, a shorter duration_ns, fewer flows)",
                *at_ns as f64 / 1e9
            ),
        }
    }
}

impl std::error::Error for SimError {}

/// What a run reports: the engine's output contract. `Serialize` gives the binding its
/// dict (`tcplab._core.run`), so a field added here reaches Python as it is, in this
/// order; the column stores (`series`, `queues`, `host_series`, the apps' tables and the
/// capture's columns) are not copied through serde: it writes a null in their place
/// (`metrics::columns::handed_over`) and the binding puts there NumPy arrays that take over
/// their buffers (`into_columns`).
#[derive(Serialize)]
pub struct SimOutput {
    pub events: u64,
    /// Link transmissions (a packet crossing three links counts three times).
    pub packets: u64,
    /// Packets sent by hosts, each counted once however many links it crosses (a GSO skb
    /// counts the frames it becomes).
    pub host_packets: u64,
    pub flows: Vec<FlowSummary>,
    pub hosts: Vec<HostSummary>,
    pub links: Vec<LinkSummary>,
    pub invariant: Invariant,
    /// Per sample time, one row per sampled flow (`timeseries` in the output).
    #[serde(
        rename = "timeseries",
        serialize_with = "crate::metrics::columns::handed_over"
    )]
    pub series: FlowSeries,
    /// Per sample time, one row per link (`queue_timeseries`).
    #[serde(
        rename = "queue_timeseries",
        serialize_with = "crate::metrics::columns::handed_over"
    )]
    pub queues: QueueSeries,
    /// Per sample time, one row per host with a CPU or NIC model (`host_series`).
    #[serde(serialize_with = "crate::metrics::columns::handed_over")]
    pub host_series: HostSeries,
    /// The names of the series' coded columns.
    pub names: SeriesNames,
    /// Settings that are valid but defeat the run's purpose ([`warnings`]).
    pub warnings: Vec<String>,
    /// Each app's report, in `SimConfig.apps` order.
    pub apps: Vec<AppOutput>,
    /// The packets of `SimConfig.capture`, when it is set (`crate::capture`).
    pub capture: Option<CaptureOutput>,
}

/// What the coded columns of the flow series mean: `ca_state` indexes `ca_state`
/// (`tcp::sock::CaState`, as ss names them), `cc_mode` indexes `cc_mode[cc]` (BBR's modes;
/// 0 = none).
#[derive(Clone, Debug, Serialize)]
pub struct SeriesNames {
    pub ca_state: Vec<&'static str>,
    pub cc_mode: CcModeNames,
}

#[derive(Clone, Debug, Serialize)]
pub struct CcModeNames {
    pub bbr: Vec<&'static str>,
}

impl SeriesNames {
    pub fn new() -> SeriesNames {
        SeriesNames {
            ca_state: CaState::ALL.map(|s| s.name()).to_vec(),
            cc_mode: CcModeNames {
                bbr: crate::cc::bbr::MODE_NAMES.to_vec(),
            },
        }
    }
}

impl Default for SeriesNames {
    fn default() -> Self {
        SeriesNames::new()
    }
}

pub struct Simulator {
    cfg: SimConfig,
    net: Network,
    ev: EventQueue,
    socks: Vec<TcpSocket>,
    now_ns: u64,
    end_ns: u64,
    events: u64,
    series: FlowSeries,
    queues: QueueSeries,
    /// Per flow: propagation delay from sender to receiver and back, ns.
    base_rtt_ns: Vec<u64>,
    failed: Option<SimError>,
    /// The hosts with a CPU or NIC model (`host::model`); an event's `id` names one.
    hosts: Vec<HostModel>,
    /// Per node: its index in `hosts`, or `NO_HOST`.
    host_of_node: Vec<u32>,
    /// Some host has a model: the one flag the fast path checks per event.
    host_models: bool,
    /// The sampled flows (`FlowConfig.sample`), each as (flow index, its `data_side`): listed
    /// once, so that a sample does not walk every flow's config (a broadcast's thousands of
    /// unsampled connections) twice.
    sampled: Vec<(u32, u8)>,
    /// Per node: its GRO table if `gro` is on (`host::gro`), and whether a flush of it is
    /// queued for the current instant (a host without a NIC model).
    gro: Vec<Option<Gro>>,
    gro_flush_queued: Vec<bool>,
    /// Nodes whose end-of-instant GRO flush is due right after the current event: nothing
    /// else was queued at this instant when it was asked for, so its `GroFlush` event would
    /// have been the next one popped (see `gro_receive`); run without the event.
    gro_flush_after_event: Vec<u32>,
    /// Some node has GRO on.
    any_gro: bool,
    /// Aggregates released by a flush (reused, never shrinks).
    gro_out: Vec<crate::packet::Packet>,
    host_series: HostSeries,
    /// The applications (`SimConfig.apps`), their timer deadlines and the event queued
    /// for each (as `TcpSocket::sched_ns`).
    apps: Vec<Box<dyn App>>,
    app_timer_ns: Vec<u64>,
    app_timer_sched_ns: Vec<u64>,
    /// Endpoints an app wrote to during a callback (reused, never shrinks).
    app_touched: Vec<u32>,
    /// The capture endpoint, and the link whose tap holds its sent packets (when on).
    capture_ep: u32,
    capture_link: u32,
    /// A scripted run's script endpoint (`scripted`): what is addressed to it is kept in
    /// `script_out`, not delivered; [`NO_SCRIPT`] otherwise.
    script_ep: u32,
    script_out: Vec<(u64, crate::packet::Packet)>,
}

/// No scripted peer (`Simulator::script_ep`).
const NO_SCRIPT: u32 = u32::MAX;

const NO_HOST: u32 = u32::MAX;

/// If `node` has a CPU model and is off it at `now_ns`: the start of its next slice.
#[inline]
fn host_off_until(
    hosts: &[HostModel],
    host_of_node: &[u32],
    node: u32,
    now_ns: u64,
) -> Option<u64> {
    let h = host_of_node[node as usize];
    if h == NO_HOST {
        return None;
    }
    hosts[h as usize].off_until(now_ns)
}

impl Simulator {
    pub fn new(cfg: SimConfig) -> Result<Simulator, String> {
        validate(&cfg)?;
        Simulator::build_checked(cfg, true)
    }

    /// Build without validating (tests that must run a configuration `validate` refuses).
    #[cfg(test)]
    fn build(cfg: SimConfig) -> Result<Simulator, String> {
        Simulator::build_checked(cfg, false)
    }

    fn build_checked(cfg: SimConfig, checked: bool) -> Result<Simulator, String> {
        let mut links: Vec<Link> = cfg.links.iter().map(|l| Link::new(l, cfg.seed)).collect();
        for (l, c) in links.iter_mut().zip(&cfg.links) {
            // A packet that crossed a wire loses its EDT stamp: a host forwarding it clears
            // skb->tstamp (Linux v6.12 net/ipv4/ip_forward.c: ip_forward_finish() ->
            // skb_clear_tstamp()), and one addressed to the host no longer needs it. Only a
            // veth (`orphan`) keeps it: Cilium redirects a pod's packets into the node by BPF
            // (no ip_forward), and since Linux 5.18 the mono delivery time survives the
            // namespace crossing.
            l.clears_tstamp = !c.orphan;
        }
        let pairs: Vec<(u32, u32)> = cfg.links.iter().map(|l| (l.from, l.to)).collect();
        // Routers forward, and so do hosts with `forwarding` (a Kubernetes node carrying its pods).
        let forwards: Vec<bool> = cfg
            .nodes
            .iter()
            .map(|n| n.kind == NodeKind::Router || n.forwarding)
            .collect();
        let routes = Routes::build(cfg.nodes.len(), &pairs, &forwards);
        let mut base_rtt_ns = Vec::with_capacity(cfg.flows.len());
        for (i, f) in cfg.flows.iter().enumerate() {
            let (Some(fwd), Some(rev)) = (
                routes.path(f.src, f.dst, &pairs),
                routes.path(f.dst, f.src, &pairs),
            ) else {
                return Err(format!(
                    "flows.{i}: no route between {} and {}",
                    cfg.nodes[f.src as usize].name, cfg.nodes[f.dst as usize].name
                ));
            };
            let prop = fwd.iter().chain(rev.iter()).fold(0u64, |acc, &l| {
                time_add(acc, cfg.links[l as usize].delay_ns)
            });
            base_rtt_ns.push(prop);
        }
        let mut net = Network {
            links,
            routes,
            data: DataAccounting::default(),
            host_packets: 0,
            capture_in: None,
            cpu_tx_node: Vec::new(),
            cpu_tx: Vec::new(),
            cpu_tx_queued: Vec::new(),
            cpu_waiters: Vec::new(),
        };
        let end_ns = BOOT_NS + cfg.duration_ns;
        let mut socks = Vec::with_capacity(cfg.flows.len() * 2);
        let mut ev = EventQueue::with_capacity(1024 + cfg.flows.len() * 8 + cfg.links.len() * 4);
        for (i, f) in cfg.flows.iter().enumerate() {
            let hz = |node: u32| cfg.nodes[node as usize].hz;
            let (mut c, mut s) =
                TcpSocket::pair(f, i as u32, cfg.seed, BOOT_NS, end_ns, hz(f.src), hz(f.dst));
            // Each socket builds GSO skbs or one-MSS skbs as its own host says (`gso_skbs`).
            c.set_gso_skbs(cfg.nodes[f.src as usize].gso_skbs);
            s.set_gso_skbs(cfg.nodes[f.dst as usize].gso_skbs);
            // SK_PACING_FQ: fq on the socket's own egress takes pacing over from TCP.
            let (src_fq, dst_fq) = (
                fq_paces(&cfg, &net.routes, f.src, f.dst),
                fq_paces(&cfg, &net.routes, f.dst, f.src),
            );
            if checked && f.tcp.fq_pacing && !src_fq {
                let l = net.routes.next_hop(f.src, f.dst) as usize;
                return Err(format!(
                    "flows.{i}.tcp.fq_pacing: true, but the sender's egress qdisc (link {}) is {}, not fq with pacing; \
                     expected false (the engine sets SK_PACING_FQ itself when the sender's first link has fq)",
                    cfg.links[l].name,
                    cfg.links[l].queue.kind()
                ));
            }
            for (sock, fq) in [(&mut c, src_fq), (&mut s, dst_fq)] {
                if fq {
                    sock.tp.sk_pacing_status = PacingStatus::Fq;
                }
            }
            socks.push(c);
            socks.push(s);
            if f.start_ns < cfg.duration_ns {
                ev.push(BOOT_NS + f.start_ns, EventKind::App, i as u32);
            }
        }
        let rows = crate::memory::sample_rows(cfg.duration_ns, cfg.sample_interval_ns) as usize;
        if cfg.sample_interval_ns > 0 {
            ev.push(BOOT_NS, EventKind::Sample, 0);
        }
        // Reserve the time series up front (no reallocation while sampling), but not beyond
        // ~1M rows: very large scenarios grow as they go instead (fallibly, see `sample`).
        let mut series = FlowSeries::default();
        let mut queues = QueueSeries::default();
        let oom = |what: &str| {
            format!("out of memory reserving the {what} time series ({rows} sample times)")
        };
        series
            .try_reserve(
                rows.saturating_mul(cfg.flows.iter().filter(|f| f.sample).count())
                    .min(1 << 20),
            )
            .map_err(|_| oom("flow"))?;
        queues
            .try_reserve(rows.saturating_mul(cfg.links.len()).min(1 << 20))
            .map_err(|_| oom("queue"))?;
        let mut hosts = Vec::new();
        let mut host_of_node = vec![NO_HOST; cfg.nodes.len()];
        for (i, n) in cfg.nodes.iter().enumerate() {
            if let Some(h) = HostModel::new(n, i as u32, BOOT_NS) {
                host_of_node[i] = hosts.len() as u32;
                hosts.push(h);
            }
        }
        if hosts.iter().any(|h| h.acct.tx_skb_ns > 0) {
            // Hosts whose transmit path costs CPU time (`host::cpu`): their skbs wait for it.
            net.cpu_tx_node = (0..cfg.nodes.len())
                .map(|i| {
                    let h = host_of_node[i];
                    h != NO_HOST && hosts[h as usize].acct.tx_skb_ns > 0
                })
                .collect();
            net.cpu_tx = Vec::with_capacity(64);
            net.cpu_tx_queued = vec![0; cfg.nodes.len()];
            net.cpu_waiters = (0..cfg.nodes.len())
                .map(|i| {
                    let n = if net.cpu_tx_node[i] { 16 } else { 0 };
                    std::collections::VecDeque::with_capacity(n)
                })
                .collect();
        }
        let cfg_gro: Vec<Option<Gro>> = cfg
            .nodes
            .iter()
            .map(|n| (n.gro && n.kind == NodeKind::Host).then(|| Gro::new(n.hz)))
            .collect();
        let mut host_series = HostSeries::default();
        host_series
            .try_reserve(rows.saturating_mul(hosts.len()).min(1 << 20))
            .map_err(|_| oom("host"))?;
        let apps: Vec<Box<dyn App>> = cfg
            .apps
            .iter()
            .map(|a| crate::app::build(a, cfg.seed))
            .collect();
        for (a, (app_cfg, app)) in cfg.apps.iter().zip(&apps).enumerate() {
            for &f in &app_cfg.flows {
                for ep in [2 * f as usize, 2 * f as usize + 1] {
                    socks[ep].app_id = a as u32;
                    socks[ep].notify_acked = app.wants_acked();
                }
            }
        }
        let napps = apps.len();
        let (mut capture_ep, mut capture_link) = (u32::MAX, u32::MAX);
        if let Some(c) = &cfg.capture {
            // The capture endpoint: the data's sender or receiver (`FlowConfig.data_side`).
            let d = cfg.flows[c.flow as usize].data_side as u32;
            let ep = 2 * c.flow + if c.at == CaptureAt::Sender { d } else { 1 - d };
            let (node, peer) = (socks[ep as usize].node, socks[ep as usize ^ 1].node);
            // Every packet of the endpoint leaves its host on the route's first link.
            let l = net.routes.next_hop(node, peer);
            if l == crate::net::routing::NO_ROUTE {
                return Err(format!(
                    "capture.flow: {}: no route from the capture host",
                    c.flow
                ));
            }
            let software_gso = !cfg.nodes[node as usize].tso;
            crate::capture::install_tap(
                &mut net.links[l as usize],
                ep ^ 1,
                c.max_packets,
                software_gso,
            );
            net.capture_in = Some(Box::new(CaptureBuf::new(c.max_packets)));
            socks[ep as usize].captured = true;
            (capture_ep, capture_link) = (ep, l);
        }
        let sampled: Vec<(u32, u8)> = cfg
            .flows
            .iter()
            .enumerate()
            .filter(|(_, f)| f.sample)
            .map(|(i, f)| (i as u32, f.data_side as u8))
            .collect();
        let mut sim = Simulator {
            cfg,
            net,
            ev,
            socks,
            now_ns: BOOT_NS,
            end_ns,
            events: 0,
            series,
            queues,
            base_rtt_ns,
            failed: None,
            host_models: !hosts.is_empty(),
            sampled,
            any_gro: cfg_gro.iter().any(|g| g.is_some()),
            gro_flush_queued: vec![false; cfg_gro.len()],
            gro_flush_after_event: Vec::new(),
            gro: cfg_gro,
            gro_out: Vec::with_capacity(crate::host::gro::GRO_MAX_HELD),
            hosts,
            host_of_node,
            host_series,
            apps,
            app_timer_ns: vec![NEVER; napps],
            app_timer_sched_ns: vec![NEVER; napps],
            app_touched: Vec::new(),
            capture_ep,
            capture_link,
            script_ep: NO_SCRIPT,
            script_out: Vec::new(),
        };
        for a in 0..napps {
            sim.with_app(a as u32, |app, cx| app.start(cx));
        }
        Ok(sim)
    }

    /// Run `f` on app `a` with its context, then re-sync the timers of the endpoints it
    /// wrote to (and deliver what those writes made them report).
    #[inline(never)]
    fn with_app(&mut self, a: u32, f: impl FnOnce(&mut dyn App, &mut AppCx)) {
        let mut touched = std::mem::take(&mut self.app_touched);
        touched.clear();
        {
            let mut cx = AppCx {
                now_ns: self.now_ns,
                boot_ns: BOOT_NS,
                socks: &mut self.socks,
                net: &mut self.net,
                ev: &mut self.ev,
                app: a,
                timer_ns: &mut self.app_timer_ns[a as usize],
                timer_sched_ns: &mut self.app_timer_sched_ns[a as usize],
                touched: &mut touched,
            };
            f(self.apps[a as usize].as_mut(), &mut cx);
        }
        for &ep in &touched {
            self.sync_timers(ep);
        }
        self.app_touched = touched;
    }

    /// After a call into endpoint `ep`: re-arm its timers, and tell its app what happened.
    #[inline]
    fn after_sock(&mut self, ep: u32) {
        self.sync_timers(ep);
        let s = &self.socks[ep as usize];
        if s.notify != 0 && s.app_id != NO_APP {
            self.notify_app(ep);
        }
    }

    /// Deliver endpoint `ep`'s pending notifications to its app.
    #[inline(never)]
    fn notify_app(&mut self, ep: u32) {
        let s = &mut self.socks[ep as usize];
        let bits = std::mem::take(&mut s.notify);
        let (a, flow, side) = (s.app_id, ep / 2, Side::of_ep(ep));
        use crate::tcp::socket::notify;
        if bits & notify::ESTABLISHED != 0 {
            self.with_app(a, |app, cx| app.on_established(cx, flow, side));
        }
        if bits & notify::ACKED != 0 {
            let acked = self.socks[ep as usize].tp.snd_una;
            self.with_app(a, |app, cx| app.on_acked(cx, flow, side, acked));
        }
        let s = &mut self.socks[ep as usize];
        if bits & notify::READ != 0 && s.rcv.copied_seq > s.notified_read {
            let read = s.rcv.copied_seq;
            s.notified_read = read;
            self.with_app(a, |app, cx| app.on_read(cx, flow, side, read));
        }
    }

    /// Simulated time since the scenario start, ns.
    pub fn now_rel_ns(&self) -> u64 {
        self.now_ns - BOOT_NS
    }

    pub fn duration_ns(&self) -> u64 {
        self.cfg.duration_ns
    }

    /// Process every event due at or before scenario time `until_rel_ns`. After an error
    /// the simulator stays stopped at the time of the failure.
    pub fn run_until(&mut self, until_rel_ns: u64) -> Result<(), SimError> {
        self.run_until_at_most(until_rel_ns, u64::MAX).map(|_| ())
    }

    /// [`run_until`](Self::run_until), but return after at most `max_events` events:
    /// `Ok(true)` when every event due by `until_rel_ns` is done (the clock then stands at
    /// it), `Ok(false)` when the budget ran out first (the clock at the last event
    /// processed; call again to go on). A caller that must regain control every bounded
    /// amount of work (the Python binding, to check for Ctrl-C) uses this. The events run
    /// in the same order however the budget splits them, so the results are the same.
    pub fn run_until_at_most(
        &mut self,
        until_rel_ns: u64,
        max_events: u64,
    ) -> Result<bool, SimError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let until = time_add(BOOT_NS, until_rel_ns).min(self.end_ns);
        let mut budget = max_events;
        while let Some(t) = self.ev.peek_time() {
            if t > until {
                break;
            }
            if budget == 0 {
                return Ok(false);
            }
            budget -= 1;
            let e = self.ev.pop().unwrap();
            self.now_ns = e.at_ns;
            self.events += 1;
            self.dispatch(e.kind(), e.id());
            if !self.net.cpu_tx.is_empty() {
                self.queue_cpu_tx();
            }
            if !self.gro_flush_after_event.is_empty() {
                self.gro_flushes_after_event();
            }
            if let Some(e) = &self.failed {
                return Err(e.clone());
            }
        }
        if self.now_ns < until {
            self.now_ns = until;
        }
        Ok(true)
    }

    #[inline]
    fn dispatch(&mut self, kind: EventKind, id: u32) {
        let now = self.now_ns;
        match kind {
            EventKind::LinkTxDone => {
                if self.host_models && self.defer_link_event(kind, id, now) {
                    return;
                }
                // TX completion for TSQ: a data packet left its sender's NIC.
                if let Some(c) = self.net.on_tx_done(id, now, &mut self.ev) {
                    let ep = c.ep;
                    let mut ctx = Ctx {
                        now_ns: now,
                        net: &mut self.net,
                        ev: &mut self.ev,
                    };
                    self.socks[ep as usize].on_tx_complete(
                        &mut ctx,
                        c.seq,
                        c.payload_bytes,
                        c.wmem_bytes,
                    );
                    self.after_sock(ep);
                }
            }
            EventKind::LinkArrive => {
                let Some(pkt) = self.net.links[id as usize].on_arrive(now, id, &mut self.ev) else {
                    return;
                };
                let node = self.net.links[id as usize].to;
                // A host's NIC and CPU take every packet it receives from a wire, also those
                // it forwards (a node carrying pods, or any host with `forwarding`): Linux
                // forwards in the receive softirq (v6.12 net/core/dev.c:
                // __netif_receive_skb() -> net/ipv4/ip_input.c: ip_rcv() -> ip_forward()).
                // A packet from a pod's veth (`orphan`) does not cross the physical NIC's
                // ring, so only those addressed to the host go through the model, as before.
                let pkt = if self.host_models
                    && (node == pkt.dst_node || !self.net.links[id as usize].orphan)
                {
                    match self.host_receive(id, node, pkt, now) {
                        Some(p) => p,
                        None => return,
                    }
                } else {
                    pkt
                };
                self.deliver_or_forward(node, pkt, now, false);
            }
            EventKind::XmitTimer
            | EventKind::DelackTimer
            | EventKind::PacingTimer
            | EventKind::ReadTimer => {
                let slot = match kind {
                    EventKind::XmitTimer => T_XMIT,
                    EventKind::DelackTimer => T_DELACK,
                    EventKind::ReadTimer => T_READ,
                    _ => T_PACING,
                };
                let s = &mut self.socks[id as usize];
                if s.sched_ns[slot] != now {
                    return; // superseded
                }
                if self.host_models {
                    // Off its CPU: the timer runs at the start of the host's next slice.
                    if let Some(next) = host_off_until(&self.hosts, &self.host_of_node, s.node, now)
                    {
                        s.sched_ns[slot] = next;
                        self.ev.push(next, kind, id);
                        return;
                    }
                }
                s.sched_ns[slot] = NEVER;
                if s.deadlines()[slot] <= now {
                    let mut ctx = Ctx {
                        now_ns: now,
                        net: &mut self.net,
                        ev: &mut self.ev,
                    };
                    match slot {
                        T_XMIT => s.on_xmit_timer(&mut ctx),
                        T_DELACK => s.on_delack_timer(&mut ctx),
                        T_READ => s.on_read_timer(&mut ctx),
                        _ => s.on_pacing_timer(&mut ctx),
                    }
                }
                self.after_sock(id);
            }
            EventKind::AppTimer => {
                let a = id as usize;
                if self.app_timer_sched_ns[a] != now {
                    return; // superseded
                }
                // Simplification: app timers are not deferred by a host's CPU model (an app
                // may span hosts: an HLS client and its server); packet processing is.
                self.app_timer_sched_ns[a] = NEVER;
                if self.app_timer_ns[a] <= now {
                    self.app_timer_ns[a] = NEVER;
                    self.with_app(id, |app, cx| app.on_timer(cx));
                }
                let at = self.app_timer_ns[a];
                if at != NEVER && at < self.app_timer_sched_ns[a] {
                    self.app_timer_sched_ns[a] = at;
                    self.ev.push(at, EventKind::AppTimer, id);
                }
            }
            EventKind::LinkDequeue => {
                if self.host_models && self.defer_link_event(kind, id, now) {
                    return;
                }
                self.net.links[id as usize].on_dequeue(now, id, &mut self.ev)
            }
            EventKind::App => {
                if self.script_ep != NO_SCRIPT {
                    return; // the script connects by calling connect()
                }
                let ep = 2 * id;
                if self.host_models {
                    let node = self.socks[ep as usize].node;
                    if let Some(next) = host_off_until(&self.hosts, &self.host_of_node, node, now) {
                        self.ev.push(next, kind, id);
                        return;
                    }
                }
                let mut ctx = Ctx {
                    now_ns: now,
                    net: &mut self.net,
                    ev: &mut self.ev,
                };
                self.socks[ep as usize].connect(&mut ctx);
                self.after_sock(ep);
            }
            EventKind::Sample => {
                if let Err(e) = self.sample() {
                    self.failed = Some(e);
                    return;
                }
                let next = time_add(now, self.cfg.sample_interval_ns);
                if next <= self.end_ns {
                    self.ev.push(next, EventKind::Sample, 0);
                }
            }
            EventKind::NicPoll => {
                if let Some(pkt) = self.hosts[id as usize].on_poll(now) {
                    let node = self.hosts[id as usize].node;
                    self.deliver_or_forward(node, pkt, now, true);
                    if self.any_gro && self.gro[node as usize].is_some() {
                        // The end of a napi_poll(): napi_complete_done() flushes every
                        // aggregate, a poll that used its weight only the old ones.
                        match self.hosts[id as usize].nic.poll_end {
                            PollEnd::Running => {}
                            PollEnd::Weight => self.gro_flush(node, false, now),
                            PollEnd::Complete => self.gro_flush(node, true, now),
                        }
                    }
                    // What TCP sent in response (an ACK) takes the CPU before the next packet.
                    if !self.net.cpu_tx.is_empty() {
                        self.queue_cpu_tx();
                    }
                    self.hosts[id as usize].after_poll(now, id, &mut self.ev);
                    if !self.net.cpu_tx_node.is_empty() && self.hosts[id as usize].nic.idle() {
                        self.wake_cpu_waiters(id, now);
                    }
                }
            }
            EventKind::HostTx => self.host_tx(id, now),
            EventKind::GroFlush => {
                self.gro_flush_queued[id as usize] = false;
                self.gro_flush(id, true, now);
            }
            EventKind::NicAllowance => self.hosts[id as usize].on_allowance(now, id, &mut self.ev),
        }
    }

    /// A packet that `node` received (and, with a host model, processed): to its
    /// endpoint's TCP if addressed to the node (through GRO if on; `polled`: it came from
    /// a NAPI poll of the host's NIC model, which flushes GRO itself), else forwarded.
    #[inline]
    fn deliver_or_forward(
        &mut self,
        node: u32,
        pkt: crate::packet::Packet,
        now: u64,
        polled: bool,
    ) {
        if node == pkt.dst_node {
            if self.any_gro {
                if let Some(g) = &self.gro[node as usize] {
                    if g.held() != 0 {
                        return self.gro_receive(node, pkt, now, polled);
                    }
                    // Nothing held: a packet GRO cannot merge (no payload, SYN, FIN) or a PSH
                    // segment passes at once, as `Gro::receive` would pass it; a data segment
                    // alone in its
                    // instant (not in a NAPI poll, nothing else queued now) would be held and
                    // flushed unmerged right after this event: it goes on now as that
                    // one-segment aggregate (the same packet at the same time).
                    if crate::host::gro::passes_at_once(&pkt) {
                        return self.deliver(pkt, now);
                    }
                    if !polled && self.ev.peek_time() != Some(now) {
                        return self.deliver(crate::host::gro::one_segment_aggregate(pkt), now);
                    }
                    return self.gro_receive(node, pkt, now, polled);
                }
            }
            self.deliver(pkt, now);
        } else {
            self.net.forward(node, pkt, now, &mut self.ev);
        }
    }

    /// A packet for a node with GRO on: merged into its flow's aggregate or handed on
    /// (`host::gro`). A host without a NIC model (no poll of its own) flushes at the end
    /// of the current instant: Linux processes packets that arrive back to back in one
    /// softirq run (a veth's or an uncoalesced NIC's NAPI poll takes what is queued when
    /// it runs), so the packets of one instant are one poll.
    #[inline(never)]
    fn gro_receive(&mut self, node: u32, pkt: crate::packet::Packet, now: u64, polled: bool) {
        let Some(g) = self.gro[node as usize].as_mut() else {
            return self.deliver(pkt, now);
        };
        let r = g.receive(pkt, now);
        let held = g.held() > 0;
        if let Some(p) = r.first {
            self.deliver(p, now);
        }
        if let Some(p) = r.then {
            self.deliver(p, now);
        }
        if held && !polled && !self.gro_flush_queued[node as usize] {
            self.gro_flush_queued[node as usize] = true;
            // An event per flush is most of what GRO costs the engine when frames arrive
            // spaced (nothing to merge): when no other event is queued at this instant, the
            // flush would be the next event anyway, so it runs right after this one.
            if self.ev.peek_time() == Some(now) {
                self.ev.push(now, EventKind::GroFlush, node);
            } else {
                self.gro_flush_after_event.push(node);
            }
        }
    }

    /// The flushes `gro_receive` left for the end of the current event, in the order they
    /// were asked for, each as its `GroFlush` event would have run (with its own CPU queueing
    /// after it); a flush that asks for another (a zero-delay path) is run in turn.
    #[inline(never)]
    fn gro_flushes_after_event(&mut self) {
        let mut i = 0;
        while i < self.gro_flush_after_event.len() {
            let node = self.gro_flush_after_event[i];
            i += 1;
            self.gro_flush_queued[node as usize] = false;
            self.gro_flush(node, true, self.now_ns);
            if !self.net.cpu_tx.is_empty() {
                self.queue_cpu_tx();
            }
        }
        self.gro_flush_after_event.clear();
    }

    /// Flush node `node`'s GRO table (`all`, or only aggregates of older jiffies).
    #[inline(never)]
    fn gro_flush(&mut self, node: u32, all: bool, now: u64) {
        let Some(g) = self.gro[node as usize].as_mut() else {
            return;
        };
        let mut out = std::mem::take(&mut self.gro_out);
        g.flush(all, now, &mut out);
        for p in out.drain(..) {
            self.deliver(p, now);
        }
        self.gro_out = out;
    }

    /// The skbs hosts with a transmit cost sent during this event: each queued on its
    /// host's CPU, to reach the egress link when its work is done (`host::cpu`).
    #[inline(never)]
    fn queue_cpu_tx(&mut self) {
        let now = self.now_ns;
        let mut buf = std::mem::take(&mut self.net.cpu_tx);
        for (node, pkt) in buf.drain(..) {
            let h = self.host_of_node[node as usize];
            let done = self.hosts[h as usize].transmit(pkt, now);
            self.ev.push(done, EventKind::HostTx, h);
        }
        self.net.cpu_tx = buf;
    }

    /// A host's transmit work on its oldest waiting skb is done: to the egress link. A
    /// qdisc that refuses it frees it (`kfree_skb()` -> `tcp_wfree()`): its sender's TSQ
    /// budget comes back at once.
    #[inline(never)]
    fn host_tx(&mut self, h: u32, now: u64) {
        let host = &mut self.hosts[h as usize];
        let Some(pkt) = host.tx_backlog.pop_front() else {
            return;
        };
        let node = host.node;
        self.net.cpu_tx_queued[node as usize] -= 1;
        if !self.net.forward(node, pkt, now, &mut self.ev)
            && pkt.flags & crate::packet::flags::TSQ != 0
        {
            let ep = pkt.dst_ep ^ 1;
            let mut ctx = Ctx {
                now_ns: now,
                net: &mut self.net,
                ev: &mut self.ev,
            };
            self.socks[ep as usize].on_tx_complete(
                &mut ctx,
                pkt.seq,
                pkt.payload_bytes(),
                pkt.wmem_charge(),
            );
            self.after_sock(ep);
        }
        self.wake_cpu_waiters(h, now);
    }

    /// Host `h`'s CPU is free of transmit work: the next socket waiting for it goes on
    /// (each in turn; one that sends waits at the back again) -- once its NAPI round is
    /// over: the receive softirq runs before the process context the sender's loop is in,
    /// and the ACKs it processes send from softirq themselves (`tcp_data_snd_check()`).
    fn wake_cpu_waiters(&mut self, h: u32, now: u64) {
        let node = self.hosts[h as usize].node;
        while self.net.cpu_tx_queued[node as usize] == 0 && self.hosts[h as usize].nic.idle() {
            let Some(ep) = self.net.cpu_waiters[node as usize].pop_front() else {
                break;
            };
            let mut ctx = Ctx {
                now_ns: now,
                net: &mut self.net,
                ev: &mut self.ev,
            };
            self.socks[ep as usize].cpu_wake(&mut ctx);
            self.after_sock(ep);
        }
    }

    /// Hand a packet that reached its host to its endpoint's TCP.
    #[inline]
    fn deliver(&mut self, pkt: crate::packet::Packet, now: u64) {
        if pkt.dst_ep == self.script_ep {
            return self.script_out.push((now, pkt));
        }
        if pkt.is_data() {
            self.net.data.received += pkt.segs() as u64;
        }
        if self.host_models {
            // GRO on: TCP's work on each skb it gets (`host::cpu`).
            let h = self.host_of_node[pkt.dst_node as usize];
            if h != NO_HOST && self.hosts[h as usize].rx_skb_at_delivery {
                let cost = self.hosts[h as usize].acct.rx_skb_ns;
                self.hosts[h as usize].charge(now, cost);
            }
        }
        let ep = pkt.dst_ep;
        let mut ctx = Ctx {
            now_ns: now,
            net: &mut self.net,
            ev: &mut self.ev,
        };
        self.socks[ep as usize].on_packet(&mut ctx, &pkt);
        self.after_sock(ep);
    }

    /// A packet arrived over link `link` at host `node`, which may have a model: the
    /// packet if the host takes it now (TCP, or forwarding), else `None` (held or dropped
    /// by the NIC).
    #[inline(never)]
    fn host_receive(
        &mut self,
        link: u32,
        node: u32,
        pkt: crate::packet::Packet,
        now: u64,
    ) -> Option<crate::packet::Packet> {
        let h = self.host_of_node[node as usize];
        if h == NO_HOST {
            return Some(pkt);
        }
        let len = pkt.ip_bytes + self.net.links[link as usize].overhead_bytes;
        self.hosts[h as usize].receive(pkt, len, now, h, &mut self.ev)
    }

    /// A transmit completion (TSQ runs in softirq) or a timed qdisc's dequeue on the
    /// egress of a host that is off its CPU: moved to the start of its next slice. True if
    /// deferred.
    #[inline(never)]
    fn defer_link_event(&mut self, kind: EventKind, id: u32, now: u64) -> bool {
        let l = &mut self.net.links[id as usize];
        let Some(next) = host_off_until(&self.hosts, &self.host_of_node, l.from, now) else {
            return false;
        };
        match kind {
            EventKind::LinkTxDone if l.pending_tx_done_ns() == now => {
                l.defer_tx_done(next, id, &mut self.ev)
            }
            EventKind::LinkDequeue if l.pending_dequeue_ns() == now => {
                l.defer_dequeue(next, id, &mut self.ev)
            }
            _ => return false, // superseded: the normal path ignores it
        }
        true
    }

    /// Keep one event queued per timer at its earliest deadline.
    #[inline]
    fn sync_timers(&mut self, ep: u32) {
        let s = &mut self.socks[ep as usize];
        let d = s.deadlines();
        for (slot, kind) in [
            (T_XMIT, EventKind::XmitTimer),
            (T_DELACK, EventKind::DelackTimer),
            (T_PACING, EventKind::PacingTimer),
            (T_READ, EventKind::ReadTimer),
        ] {
            let at = d[slot];
            if at != NEVER && at < s.sched_ns[slot] {
                let at = at.max(self.now_ns);
                s.sched_ns[slot] = at;
                self.ev.push(at, kind, ep);
            }
        }
    }

    fn sample(&mut self) -> Result<(), SimError> {
        let t = self.now_ns - BOOT_NS;
        // Grow the columns fallibly (amortized doubling) so that running out of memory is
        // an error, not an abort inside `Vec::push`.
        let (nf, nl) = (self.sampled.len(), self.net.links.len());
        if self.series.spare_rows() < nf {
            let at_ns = t;
            self.series
                .try_reserve(nf)
                .map_err(|_| SimError::OutOfMemory {
                    what: format!(
                        "growing the flow time series beyond {} rows",
                        self.series.len()
                    ),
                    at_ns,
                })?;
        }
        if self.queues.spare_rows() < nl {
            let at_ns = t;
            let rows = self.queues.t_ns.len();
            self.queues
                .try_reserve(nl)
                .map_err(|_| SimError::OutOfMemory {
                    what: format!("growing the queue time series beyond {rows} rows"),
                    at_ns,
                })?;
        }
        let now_ns = self.now_ns;
        for &(i, d) in &self.sampled {
            // The data's sender and receiver (`FlowConfig.data_side`).
            let (i, d) = (i as usize, d as usize);
            let c = &self.socks[2 * i + d];
            let srv = &self.socks[2 * i + (1 - d)];
            let tp = &c.tp;
            let info = c.cc.get_info(tp);
            let s = &mut self.series;
            s.t_ns.push(t);
            s.flow.push(i as u32);
            s.cwnd.push(tp.snd_cwnd);
            s.ssthresh.push(tp.snd_ssthresh);
            s.srtt_us.push(tp.srtt_us >> 3);
            // What ss shows as the Y of `rtt:X/Y`: tcp_info's tcpi_rttvar = mdev_us >> 2
            // (Linux v6.12 net/ipv4/tcp.c: tcp_get_info()), not the RTO's internal rttvar_us,
            // which is floored at TCP_RTO_MIN.
            s.rttvar_us.push(tp.mdev_us >> 2);
            s.min_rtt_us.push(if tp.min_rtt_us() == u32::MAX {
                0
            } else {
                tp.min_rtt_us()
            });
            s.pacing_rate_bps.push(tp.sk_pacing_rate.saturating_mul(8));
            s.delivery_rate_bps
                .push(delivery_rate_bytes_per_sec(tp) * 8);
            s.inflight.push(tp.packets_in_flight());
            s.bytes_acked.push(tp.bytes_acked);
            s.bytes_received.push(srv.rcv.bytes_received);
            s.retrans_segs.push(tp.total_retrans as u64);
            s.lost.push(tp.lost as u64);
            s.ca_state.push(tp.ca_state as u8);
            s.cc_mode.push(info.mode);
            s.bbr_bw_bps.push(info.bw_bps);
            s.bbr_lt_use_bw.push(info.lt_use_bw as u8);
            s.bbr_lt_bw_bps.push(info.lt_bw_bps);
            s.pacing_gain.push(info.pacing_gain as f64 / 256.0);
            s.cwnd_gain.push(info.cwnd_gain as f64 / 256.0);
            s.snd_wnd_bytes.push(tp.snd_wnd);
            // tcp_info as tcp_get_info() fills it at this moment (Linux v6.12 net/ipv4/tcp.c)
            s.rto_us
                .push(tp.jiffies_to_usecs(tp.icsk_rto).min(u32::MAX as u64) as u32);
            s.backoff.push(c.icsk_backoff.min(u8::MAX as u32) as u8);
            s.bytes_sent.push(tp.bytes_sent);
            s.bytes_retrans.push(tp.bytes_retrans);
            s.data_segs_out.push(tp.data_segs_out);
            let chrono = c.chrono.stats(tp.clock().ns_to_jiffies32(now_ns), tp.hz());
            s.busy_us.push(chrono.busy_us);
            s.rwnd_limited_us.push(chrono.rwnd_limited_us);
            s.sndbuf_limited_us.push(chrono.sndbuf_limited_us);
            // the socket queues ss prints on the state line (tcp_diag_get_info(): u32 fields)
            s.send_q_bytes
                .push(tp.write_seq.saturating_sub(tp.snd_una).min(u32::MAX as u64) as u32);
            s.recv_q_bytes
                .push(srv.rcv.unread_bytes().min(u32::MAX as u64) as u32);
            // the receiver's socket as its own host's ss shows it (its requests and ACKs)
            let rp = &srv.tp;
            s.receiver_cwnd.push(rp.snd_cwnd);
            s.receiver_ssthresh.push(rp.snd_ssthresh);
            s.receiver_ca_state.push(rp.ca_state as u8);
            s.receiver_srtt_us.push(rp.srtt_us >> 3);
            s.receiver_rto_us
                .push(rp.jiffies_to_usecs(rp.icsk_rto).min(u32::MAX as u64) as u32);
            s.receiver_backoff
                .push(srv.icsk_backoff.min(u8::MAX as u32) as u8);
            s.receiver_retrans_segs.push(rp.total_retrans as u64);
        }
        let now = self.now_ns;
        for (i, l) in self.net.links.iter_mut().enumerate() {
            l.advance(now);
            let q = &mut self.queues;
            q.t_ns.push(t);
            q.link.push(i as u32);
            let st = l.qdisc.stats();
            q.backlog_packets.push(st.backlog_packets);
            q.backlog_bytes.push(st.backlog_bytes);
            q.drops.push(st.drops);
        }
        if self.host_models {
            if self.host_series.spare_rows() < self.hosts.len() {
                let rows = self.host_series.t_ns.len();
                self.host_series
                    .try_reserve(self.hosts.len())
                    .map_err(|_| SimError::OutOfMemory {
                        what: format!("growing the host time series beyond {rows} rows"),
                        at_ns: t,
                    })?;
            }
            let hs = &mut self.host_series;
            for h in &self.hosts {
                hs.t_ns.push(t);
                hs.host.push(h.node);
                hs.cpu_on.push(h.is_on(now) as u8);
                hs.rx_ring_used
                    .push(h.nic.ring_used().min(u32::MAX as u64) as u32);
                hs.rx_dropped.push(h.nic.ring_drops());
                hs.allowance_queued.push(h.allowance_queued());
            }
        }
        for app in self.apps.iter_mut() {
            app.sample(t, &self.socks);
        }
        Ok(())
    }

    /// Run to the end and collect the results.
    pub fn try_run(mut self) -> Result<SimOutput, SimError> {
        let d = self.cfg.duration_ns;
        self.run_until(d)?;
        Ok(self.finish())
    }

    /// Run to the end and collect the results; panics if the run failed (tests, benches).
    pub fn run(self) -> SimOutput {
        self.try_run()
            .unwrap_or_else(|e| panic!("simulation failed: {e}"))
    }

    /// The RTT-floor invariant (see module docs): `(ok, message)`.
    fn check_rtt_floor(&self) -> (bool, String) {
        for (i, f) in self.cfg.flows.iter().enumerate() {
            let base = self.base_rtt_ns[i];
            for ep in [2 * i, 2 * i + 1] {
                let st = &self.socks[ep].stats;
                if let Some((sample_us, floor_us)) =
                    rtt_floor_violation(base, st.min_timed_rtt_us, st.min_ts_rtt_us)
                {
                    let side = if ep % 2 == 0 { "sender" } else { "receiver" };
                    return (
                        false,
                        format!(
                            "flow {} ({side}): RTT sample of {} us is below the path's propagation round trip of {} us \
                             (floor {} us); a segment was timed from a moment it did not leave at",
                            f.name,
                            sample_us,
                            base as f64 / 1e3,
                            floor_us
                        ),
                    );
                }
            }
        }
        (
            true,
            format!(
                "no RTT sample below its path's propagation round trip ({} flows)",
                self.cfg.flows.len()
            ),
        )
    }

    pub fn finish(mut self) -> SimOutput {
        let now = self.now_ns;
        for l in self.net.links.iter_mut() {
            l.advance(now);
        }
        // Packets waiting at a host's NIC (allowance queue, rings) are still in flight.
        let in_flight = self.net.data_in_flight()
            + self.hosts.iter().map(|h| h.data_held()).sum::<u64>()
            + self
                .gro
                .iter()
                .flatten()
                .map(|g| g.data_held())
                .sum::<u64>();
        let mut d = self.net.data_accounting();
        d.dropped.nic = self.hosts.iter().map(|h| h.data_dropped).sum();
        let d = &d;
        let dropped = d.dropped.queue
            + d.dropped.loss
            + d.dropped.drop_list
            + d.dropped.no_route
            + d.dropped.nic;
        let accounted = d.received + dropped + in_flight;
        let ok = accounted == d.sent;
        let message = if ok {
            format!("all {} data packets accounted for", d.sent)
        } else {
            format!(
                "data packets: {} sent but {} accounted for (received {}, dropped {} (queue {}, loss {}, drop list {}, no route {}, nic {}), in flight {})",
                d.sent, accounted, d.received, dropped, d.dropped.queue, d.dropped.loss, d.dropped.drop_list, d.dropped.no_route, d.dropped.nic, in_flight
            )
        };
        let (rtt_ok, rtt_message) = self.check_rtt_floor();
        // One message for readers that show only `message` (the report): both failures.
        let message = if rtt_ok {
            message
        } else if ok {
            rtt_message.clone()
        } else {
            format!("{message}; {rtt_message}")
        };
        let invariant = Invariant {
            ok: ok && rtt_ok,
            data_ok: ok,
            data: d.clone(),
            in_flight,
            message,
            rtt_floor: RttFloor {
                ok: rtt_ok,
                message: rtt_message,
            },
        };

        let mut hosts: Vec<HostSummary> = self
            .cfg
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let model = match self.host_of_node[i] {
                    NO_HOST => None,
                    h => Some(&self.hosts[h as usize]),
                };
                HostSummary {
                    name: n.name.clone(),
                    counters: MibCounters::default(),
                    nic: model.filter(|m| m.has_nic).map(|m| NicSummary {
                        driver: m.nic.driver.name(),
                        rx_ring: m.nic.rx_ring,
                        rx_queues: m.nic.rx_queues(),
                        ethtool: m.nic.ethtool(
                            m.allowance
                                .as_ref()
                                .map(|a| (a.bw_in_allowance_exceeded, a.pps_allowance_exceeded)),
                        ),
                    }),
                    cpu: n.cpu.as_ref().map(|c| {
                        let elapsed = now - BOOT_NS;
                        let on_ns = match model.and_then(|m| m.cpu.as_ref()) {
                            Some(m) => m.on_ns_between(BOOT_NS, now),
                            None => elapsed, // a 100 % share
                        };
                        let busy_ns = model.filter(|m| m.has_cost).map(|m| m.acct.busy_ns);
                        CpuSummary {
                            period_ns: c.period_ns,
                            share: c.share,
                            steal_ns: elapsed - on_ns,
                            on_ns,
                            busy_ns,
                            busy_share: busy_ns.map(|b| b as f64 / on_ns.max(1) as f64),
                        }
                    }),
                }
            })
            .collect();
        for s in &self.socks {
            hosts[s.node as usize].counters.merge(&s.tp.mib);
        }
        let mut flows = Vec::with_capacity(self.cfg.flows.len());
        for (i, f) in self.cfg.flows.iter().enumerate() {
            let d = f.data_side as usize;
            let c = &self.socks[2 * i + d];
            let srv = &self.socks[2 * i + (1 - d)];
            let start = f.start_ns;
            let end = c
                .app
                .done_ns
                .map(|t| t - BOOT_NS)
                .unwrap_or(self.cfg.duration_ns)
                .max(start);
            let mut counters = c.tp.mib.clone();
            counters.merge(&srv.tp.mib);
            let chrono = c.chrono.stats(c.tp.clock().ns_to_jiffies32(now), c.tp.hz());
            flows.push(FlowSummary {
                name: f.name.clone(),
                src: f.src,
                dst: f.dst,
                cc: c.cc.name().to_string(),
                start_ns: start,
                end_ns: end,
                bytes_sent: c.tp.bytes_sent,
                bytes_retrans: c.tp.bytes_retrans,
                bytes_acked: c.tp.bytes_acked,
                bytes_received: srv.rcv.bytes_received,
                data_segs_out: c.tp.data_segs_out as u64,
                retrans_segs: c.tp.total_retrans as u64,
                timeouts: c.tp.mib.get(Mib::TCPTimeouts),
                rtt: RttSummary::from_hist(&c.stats.rtt_hist),
                chrono,
                counters,
                ecn: EcnSummary {
                    sender_flags: c.tp.ecn_flags,
                    receiver_flags: srv.tp.ecn_flags,
                    delivered_ce: c.tp.delivered_ce as u64,
                    dctcp: match &c.cc {
                        crate::cc::Cc::Dctcp(d) if !d.fallback => {
                            let i = d.get_info(&c.tp);
                            Some(DctcpSummary {
                                ce_state: i.dctcp_ce_state,
                                alpha: i.dctcp_alpha,
                                ab_ecn: i.dctcp_ab_ecn,
                                ab_tot: i.dctcp_ab_tot,
                            })
                        }
                        _ => None,
                    },
                },
            });
        }
        let links = self
            .net
            .links
            .iter()
            .map(|l| LinkSummary {
                name: l.name.clone(),
                from: l.from,
                to: l.to,
                qdisc: l.qdisc.kind(),
                stats: l.qdisc.stats().clone(),
                loss_drops: l.wire.loss_drops + l.wire.drop_list_drops,
                reorder_events: l.wire.reorder_events,
                xstats: l.qdisc.xstats(),
                child: l.qdisc.child(),
                wire: l.wire.clone(),
                edt: l
                    .shaper
                    .iter()
                    .flat_map(|s| s.aggregates.iter())
                    .map(|a| EdtSummary {
                        rate_bps: a.rate_bps,
                        drops: a.drops,
                        stamped: a.stamped,
                        passed: a.passed,
                        ce_marks: a.ce_marks,
                    })
                    .collect(),
            })
            .collect();
        let capture = self.cfg.capture.as_ref().map(|c| {
            let out = crate::capture::take_tap(&mut self.net.links[self.capture_link as usize]);
            let inc = self.net.capture_in.take().map(|b| *b).unwrap_or_default();
            let ep = self.capture_ep;
            crate::capture::merge(c, self.socks[ep as usize].node, ep, out, inc, BOOT_NS)
        });
        let end_rel = now - BOOT_NS;
        let socks = &self.socks;
        let apps = self
            .apps
            .iter_mut()
            .map(|a| a.finish(end_rel, socks))
            .collect();
        SimOutput {
            apps,
            flows,
            links,
            hosts,
            invariant,
            series: self.series,
            queues: self.queues,
            host_series: self.host_series,
            events: self.events,
            packets: self.net.packets_transmitted(),
            host_packets: self.net.host_packets,
            names: SeriesNames::new(),
            warnings: warnings(&self.cfg),
            capture,
        }
    }

    /// Endpoint access for tests.
    pub fn socket(&self, ep: usize) -> &TcpSocket {
        &self.socks[ep]
    }

    /// Link access for tests (qdisc statistics while running).
    pub fn link(&self, id: usize) -> &Link {
        &self.net.links[id]
    }
}

/// Whether fq paces the sockets of `node` talking to `peer`: the first link from the host
/// toward its peer (the socket's own egress device) has fq with pacing on. Linux sets
/// `sk->sk_pacing_status = SK_PACING_FQ` when the socket's first packet (the SYN, before
/// any congestion control initialises) is classified by fq (Linux v6.12
/// net/sched/sch_fq.c: fq_classify(), also on its fast path, only with `rate_enable`), so
/// setting it when the socket is built is the same. A pod's packets reach its node's
/// device orphaned (the veth crossing scrubs `skb->sk`), so fq further along the path
/// never sets it: only the socket's own host's egress counts. TCP then stops its
/// internal pacing timer (tcp_needs_internal_pacing()) but keeps spacing `tcp_wstamp_ns`
/// at `sk_pacing_rate` (tcp_update_skb_after_send()), and fq holds each packet to its
/// stamp.
fn fq_paces(cfg: &SimConfig, routes: &Routes, node: u32, peer: u32) -> bool {
    let l = routes.next_hop(node, peer);
    if l == crate::net::routing::NO_ROUTE {
        return false;
    }
    fq_in(&cfg.links[l as usize].queue)
}

/// Whether `q` or a qdisc under it is fq with pacing: fq as tbf's child still classifies
/// the socket's skbs (tbf_enqueue() -> qdisc_enqueue() of the child -> fq_enqueue() ->
/// fq_classify(), Linux v6.12 net/sched/sch_tbf.c, sch_fq.c), so it sets SK_PACING_FQ too.
fn fq_in(q: &crate::config::QueueConfig) -> bool {
    use crate::config::QueueConfig;
    match q {
        QueueConfig::Fq(f) => f.pacing,
        QueueConfig::Tbf(t) => t.child.as_deref().is_some_and(fq_in),
        _ => false,
    }
}

/// The smallest RTT sample a path with propagation round trip `base_ns` can produce, at
/// each clock's resolution: samples timed from the skb are differences of microsecond
/// stamps (`tcp_mstamp`), those from the echoed timestamp differences of millisecond
/// stamps; a difference of truncated stamps is at least the truncated true difference.
/// Returns `(sample_us, floor_us)` for the first sample below its floor.
pub fn rtt_floor_violation(
    base_ns: u64,
    min_timed_us: Option<u64>,
    min_ts_us: Option<u64>,
) -> Option<(u64, u64)> {
    let timed_floor_us = base_ns / NSEC_PER_USEC;
    if let Some(s) = min_timed_us.filter(|&s| s < timed_floor_us) {
        return Some((s, timed_floor_us));
    }
    let ts_floor_us = base_ns / NSEC_PER_MSEC * 1000;
    min_ts_us
        .filter(|&s| s < ts_floor_us)
        .map(|s| (s, ts_floor_us))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::*;

    /// Sender and receiver joined by one link each way (`fwd_delay_ns`, `rev_delay_ns`).
    pub(crate) fn two_hosts(
        rate_bps: u64,
        fwd_delay_ns: u64,
        rev_delay_ns: u64,
        duration_ns: u64,
    ) -> SimConfig {
        let link =
            |name: &str, from, to, delay_ns| LinkConfig::new(name, from, to, rate_bps, delay_ns);
        SimConfig {
            seed: 1,
            duration_ns,
            sample_interval_ns: 100_000_000,
            nodes: vec![
                NodeConfig::new("a", NodeKind::Host),
                NodeConfig::new("b", NodeKind::Host),
            ],
            links: vec![
                link("ab", 0, 1, fwd_delay_ns),
                link("ba", 1, 0, rev_delay_ns),
            ],
            flows: vec![FlowConfig::new("f", 0, 1, CcKind::Bbr)],
            apps: Vec::new(),
            max_memory_bytes: DEFAULT_MAX_MEMORY_BYTES,
            capture: None,
        }
    }

    #[test]
    fn every_link_but_a_veth_clears_the_edt_stamp() {
        // a -> b (a host that forwards, as a node carrying pods) -> c, b -> pod over a veth.
        let mut cfg = two_hosts(1_000_000_000, 0, 0, 1_000_000);
        cfg.nodes[1].forwarding = true;
        cfg.nodes.push(NodeConfig::new("r", NodeKind::Router));
        cfg.nodes.push(NodeConfig::new("pod", NodeKind::Host));
        let mut l = cfg.links[0].clone();
        (l.name, l.from, l.to) = ("br".into(), 1, 2);
        cfg.links.push(l.clone());
        (l.name, l.from, l.to, l.orphan) = ("bpod".into(), 1, 3, true);
        cfg.links.push(l);
        let sim = Simulator::build(cfg).unwrap();
        let clears: Vec<bool> = (0..4).map(|i| sim.link(i).clears_tstamp).collect();
        // host -> host, host -> host, host -> router, veth.
        assert_eq!(clears, [true, true, true, false]);
    }

    /// Everything a run reports, as text: two runs with equal text gave the same results.
    fn output_text(out: &SimOutput) -> String {
        format!(
            "{} {} {} {:?} {:?} {:?} {:?} {:?} {:?}",
            out.events,
            out.packets,
            out.host_packets,
            out.flows,
            out.links,
            out.hosts,
            out.series,
            out.queues,
            out.host_series
        )
    }

    #[test]
    fn an_event_budget_splits_a_run_without_changing_it() {
        // Issue 21 item 1: the binding regains control every few thousand events (to check
        // for Ctrl-C) instead of at fixed simulated times; the events must run in the same
        // order whatever the budget, so the output is the same as one uninterrupted run.
        let mut cfg = two_hosts(100_000_000, 10_000_000, 10_000_000, 3_000_000_000);
        cfg.links[0].loss = LossConfig::Bernoulli { p: 0.01 };
        let whole = Simulator::new(cfg.clone()).unwrap().run();
        assert!(
            whole.events > 10_000,
            "too short a run to split: {} events",
            whole.events
        );
        for budget in [1u64, 7, 4096] {
            let mut sim = Simulator::new(cfg.clone()).unwrap();
            let duration = sim.duration_ns();
            let (mut calls, mut last_events) = (0u64, 0u64);
            loop {
                let reached = sim.run_until_at_most(duration, budget).unwrap();
                assert!(
                    sim.events - last_events <= budget,
                    "a call ran more events than its budget"
                );
                last_events = sim.events;
                calls += 1;
                if reached {
                    break;
                }
            }
            assert!(
                calls >= whole.events / budget,
                "budget {budget}: {calls} calls for {} events",
                whole.events
            );
            assert_eq!(
                output_text(&sim.finish()),
                output_text(&whole),
                "budget {budget}"
            );
        }
    }

    #[test]
    fn a_budget_that_ends_with_the_last_event_due_reports_the_target_reached() {
        // Ok(false) means events due by the target remain: never when the budget runs out
        // exactly as the last one is done (a caller would otherwise call again for nothing).
        let cfg = two_hosts(100_000_000, 10_000_000, 10_000_000, 100_000_000);
        let events = Simulator::new(cfg.clone()).unwrap().run().events;
        let mut sim = Simulator::new(cfg).unwrap();
        let duration = sim.duration_ns();
        assert!(sim.run_until_at_most(duration, events).unwrap());
        assert_eq!(sim.now_rel_ns(), duration);
        let mut sim =
            Simulator::new(two_hosts(100_000_000, 10_000_000, 10_000_000, 100_000_000)).unwrap();
        assert!(!sim.run_until_at_most(duration, events - 1).unwrap());
        assert!(sim.now_rel_ns() < duration);
    }

    #[test]
    fn rtt_floor_uses_each_clocks_resolution() {
        // 20.3 ms path: a 20.299 ms skb-timed sample is impossible; a 20 ms TS sample is not.
        assert_eq!(
            rtt_floor_violation(20_300_000, Some(20_299), None),
            Some((20_299, 20_300))
        );
        assert_eq!(
            rtt_floor_violation(20_300_000, Some(20_300), Some(20_000)),
            None
        );
        assert_eq!(
            rtt_floor_violation(20_300_000, None, Some(19_000)),
            Some((19_000, 20_000))
        );
        assert_eq!(rtt_floor_violation(0, Some(0), Some(0)), None);
    }

    #[test]
    fn ordinary_runs_keep_rtt_samples_above_the_propagation_round_trip() {
        let out = Simulator::new(two_hosts(
            100_000_000,
            10_000_000,
            10_000_000,
            2_000_000_000,
        ))
        .unwrap()
        .run();
        assert!(
            out.invariant.rtt_floor.ok,
            "{}",
            out.invariant.rtt_floor.message
        );
        assert!(out.invariant.ok);
        assert!(out.flows[0].rtt.count > 100 && out.flows[0].rtt.min_us >= 20_000);
    }

    #[test]
    fn unhonoured_fq_departure_times_break_the_rtt_floor() {
        // Issue 7 item 1.7: with fq_pacing TCP stamps segments with future departure times
        // that nothing holds them to (no fq), so RTTs come out below the path's 20 ms.
        // `validate` refuses the option; built unchecked, the invariant must catch it.
        let mut cfg = two_hosts(100_000_000, 10_000_000, 10_000_000, 3_000_000_000);
        cfg.flows[0].tcp.fq_pacing = true;
        let err = Simulator::new(cfg.clone()).err().unwrap();
        assert!(
            err.starts_with(
                "flows.0.tcp.fq_pacing: true, but the sender's egress qdisc (link ab) is pfifo"
            ),
            "{err}"
        );
        let out = Simulator::build(cfg).unwrap().run();
        assert!(
            !out.invariant.rtt_floor.ok,
            "{}",
            out.invariant.rtt_floor.message
        );
        assert!(!out.invariant.ok);
        assert!(
            out.invariant.rtt_floor.message.contains("flow f (sender)"),
            "{}",
            out.invariant.rtt_floor.message
        );
        assert!(out.invariant.data_ok && out.invariant.message == out.invariant.rtt_floor.message);
    }

    #[test]
    fn a_huge_forward_delay_is_refused_by_field() {
        // Issue 7 item 2.4: 18446744073 s forward, 10 ms back used to wrap and "run".
        let cfg = two_hosts(
            100_000_000,
            18_446_744_073 * 1_000_000_000,
            10_000_000,
            1_000_000_000,
        );
        let err = Simulator::new(cfg).err().unwrap();
        assert!(
            err.starts_with("links.0.delay_ns: 18446744073000000000 is outside [0, 3600000000000]"),
            "{err}"
        );
    }

    #[test]
    fn a_delay_beyond_the_run_delivers_nothing_instead_of_wrapping() {
        // Built unchecked, a forward delay near u64::MAX saturates: nothing arrives, so
        // goodput is 0, not above the link rate.
        let cfg = two_hosts(100_000_000, u64::MAX - 1_000, 10_000_000, 1_000_000_000);
        let out = Simulator::build(cfg).unwrap().run();
        assert_eq!(out.flows[0].bytes_received, 0);
        assert!(out.invariant.ok, "{}", out.invariant.message);
    }

    #[test]
    fn data_loss_filter_spares_the_handshake_and_acks() {
        // Issue 7 item 1.6: 10% loss on both directions, restricted to data segments. The
        // reverse direction carries only the SYN-ACK and ACKs: nothing may be lost there; on
        // the forward direction only data segments are lost, at rate p.
        let p = 0.1;
        let mut cfg = two_hosts(10_000_000, 5_000_000, 5_000_000, 10_000_000_000);
        cfg.flows[0].cc = CcKind::Cubic;
        for l in cfg.links.iter_mut() {
            l.loss = LossConfig::Bernoulli { p };
            l.loss_filter = LossFilter {
                data_only: true,
                min_ip_bytes: 0,
            };
        }
        let out = Simulator::new(cfg.clone()).unwrap().run();
        assert_eq!(out.links[1].wire.loss_drops, 0, "an ACK was lost");
        let d = &out.invariant.data;
        assert!(d.sent > 1000, "only {} data packets", d.sent);
        let sd = (d.sent as f64 * p * (1.0 - p)).sqrt();
        assert!(
            (d.dropped.loss as f64 - d.sent as f64 * p).abs() < 5.0 * sd,
            "lost {} of {}",
            d.dropped.loss,
            d.sent
        );
        // Every forward loss was a data segment: the SYN (and the handshake's ACK) passed.
        assert_eq!(out.links[0].wire.loss_drops, d.dropped.loss);
        // Without the filter the same loss does hit the ACK path.
        for l in cfg.links.iter_mut() {
            l.loss_filter = LossFilter::default();
        }
        let out = Simulator::new(cfg).unwrap().run();
        assert!(out.links[1].wire.loss_drops > 0);
    }

    #[test]
    fn memory_estimate_refuses_a_1ns_sample_interval_by_field() {
        // Issue 7 item 2.2: sample_interval 1 ns over 2 s grew to 5.7 GB and aborted.
        let mut cfg = two_hosts(100_000_000, 10_000_000, 10_000_000, 2_000_000_000);
        cfg.sample_interval_ns = 1;
        let err = validate(&cfg).unwrap_err();
        assert!(
            err.starts_with(
                "sample_interval_ns: 1 over duration_ns 2000000000 keeps 2000000002 samples"
            ),
            "{err}"
        );
        assert!(err.contains("max_memory_bytes 4294967296"), "{err}");
        // The estimate is what the series will hold: rows x (flows x flow row + links x queue row).
        let e = crate::memory::estimate(&cfg);
        let per_row = FlowSeries::ROW_BYTES as u64 + 2 * QueueSeries::ROW_BYTES as u64;
        assert_eq!(e.series_bytes, 2_000_000_002 * per_row);
        // The limit is the user's to raise.
        cfg.max_memory_bytes = 2 * e.total_bytes;
        validate(&cfg).unwrap();
    }

    #[test]
    fn memory_estimate_covers_what_a_run_samples() {
        let cfg = two_hosts(100_000_000, 10_000_000, 10_000_000, 1_000_000_000);
        let e = crate::memory::estimate(&cfg);
        let out = Simulator::new(cfg).unwrap().run();
        let held = out.series.len() as u64 * FlowSeries::ROW_BYTES as u64
            + out.queues.t_ns.len() as u64 * QueueSeries::ROW_BYTES as u64;
        assert!(
            held > 0 && held <= e.series_bytes,
            "held {held}, estimated {}",
            e.series_bytes
        );
    }

    #[test]
    fn engine_config_checks_every_field_it_relies_on() {
        // Issue 7 item 2.9: each of these used to be accepted by the engine's own entry.
        let base = two_hosts(100_000_000, 1_000_000, 1_000_000, 1_000_000_000);
        type Edit = Box<dyn Fn(&mut SimConfig)>;
        let cases: Vec<(&str, Edit)> = vec![
            (
                "sample_interval_ns: 0 is outside [1, 1000000000]",
                Box::new(|c| c.sample_interval_ns = 0),
            ),
            (
                "flows.0.tcp.tcp_rmem: [8000, 4000, 2000], expected min <= default <= max",
                Box::new(|c| c.flows[0].tcp.tcp_rmem = [8000, 4000, 2000]),
            ),
            (
                "flows.0.tcp.tcp_wmem: [0, 16384, 4194304]",
                Box::new(|c| c.flows[0].tcp.tcp_wmem = [0, 16384, 4194304]),
            ),
            (
                "flows.0.tcp.rto_min_ms: 0 is outside [1, 120000] ms",
                Box::new(|c| c.flows[0].tcp.rto_min_ms = 0),
            ),
            (
                "flows.0.tcp.rto_min_ms: 5000000 is outside",
                Box::new(|c| c.flows[0].tcp.rto_min_ms = 5_000_000),
            ),
            (
                "duration_ns: 31622400000000001 is outside",
                Box::new(|c| c.duration_ns = MAX_DURATION_NS + 1),
            ),
            (
                "links.1.reorder.delay_ns:",
                Box::new(|c| {
                    c.links[1].reorder = Some(ReorderConfig {
                        p: 0.1,
                        delay_ns: u64::MAX,
                    })
                }),
            ),
            (
                "links.0.rate_bps: 0 is outside",
                Box::new(|c| c.links[0].rate_bps = 0),
            ),
            (
                "flows.0.start_ns: 1000000000 is not before duration_ns",
                Box::new(|c| c.flows[0].start_ns = 1_000_000_000),
            ),
            (
                "flows.0.tcp.tcp_comp_sack_delay_ns:",
                Box::new(|c| c.flows[0].tcp.tcp_comp_sack_delay_ns = u64::MAX),
            ),
            (
                "flows.0.tcp.max_pacing_rate_bytes_per_sec: 0",
                Box::new(|c| c.flows[0].tcp.max_pacing_rate_bytes_per_sec = 0),
            ),
            (
                "links.0.loss_filter.min_ip_bytes: 70000 is outside",
                Box::new(|c| c.links[0].loss_filter.min_ip_bytes = 70_000),
            ),
            (
                "links.1.loss.end_ns: 5 is outside [6, ",
                Box::new(|c| {
                    c.links[1].loss = LossConfig::Outage {
                        start_ns: 5,
                        end_ns: 5,
                    }
                }),
            ),
            (
                "links.1.loss_window.end_ns: 5 is outside [6, ",
                Box::new(|c| {
                    c.links[1].loss = LossConfig::Bernoulli { p: 0.01 };
                    c.links[1].loss_window = LossWindow {
                        start_ns: 5,
                        end_ns: Some(5),
                    };
                }),
            ),
            (
                "links.0.loss_window: set for a loss of kind none",
                Box::new(|c| {
                    c.links[0].loss_window = LossWindow {
                        start_ns: 5,
                        end_ns: None,
                    }
                }),
            ),
        ];
        validate(&base).unwrap();
        for (want, edit) in cases {
            let mut c = base.clone();
            edit(&mut c);
            let err = validate(&c).unwrap_err();
            assert!(err.starts_with(want), "want {want:?}, got {err:?}");
        }
    }

    #[test]
    fn a_receive_buffer_below_one_segment_is_warned_about() {
        // Issue 7 item 2.9: tcp_rmem "88 88 88" carried nothing for the whole run, silently.
        let mut cfg = two_hosts(100_000_000, 1_000_000, 1_000_000, 1_000_000_000);
        assert!(warnings(&cfg).is_empty());
        cfg.flows[0].tcp.tcp_rmem = [88, 88, 88];
        let out = Simulator::new(cfg).unwrap().run();
        // Nothing but what a zero-window probe may carry into the sliver of window the
        // receiver offers (tcp_write_wakeup() sends what fits; issue 9), far below a segment.
        assert!(
            out.flows[0].bytes_received < 1448,
            "{}",
            out.flows[0].bytes_received
        );
        assert_eq!(out.warnings.len(), 1);
        assert!(
            out.warnings[0]
                .starts_with("flows.0.tcp.tcp_rmem: the receiver's largest window is 0 bytes"),
            "{}",
            out.warnings[0]
        );
    }
}
