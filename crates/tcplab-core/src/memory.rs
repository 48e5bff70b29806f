//! How much memory a run will hold, estimated before it starts.
//!
//! A run that outgrows the machine must be refused up front with a message naming the
//! setting to change (issue 7, item 2.2), not abort half-way. The estimate adds:
//!
//! - **time series**: exact. One row per flow and per link at every sample time
//!   (`duration_ns / sample_interval_ns + 2` sample times, as the simulator reserves);
//! - **endpoints**: two sockets per flow and their RTT histograms;
//! - **packets held by links**: an upper bound on the packets queued, serializing or
//!   propagating at one time, each with its retransmit-queue entry at the sender. It is
//!   the smaller of what the links can hold (per link: the packets its delay and any
//!   reordering delay keep in flight at line rate, at the smallest frame, plus its queue
//!   limit) and what the flows can put in flight (per flow: its largest window in
//!   segments, as data plus as many ACKs).
//!
//! - **host models** (`host::model`): per host with a CPU or NIC model, its state, its
//!   rows of the host time series, and the capacity of its NIC: `rx_ring x rx_queues`
//!   descriptors and the allowance's `queue_packets`, one packet each.
//!
//! The sum is compared with [`SimConfig::max_memory_bytes`](crate::config::SimConfig).
//! The Python front computes the time-series part the same way (`tcplab.limits`), and a
//! test checks the two agree.
//!
//! Imports: the leaves and the rooms whose sizes it adds up (`host`, `net`, `tcp`); it
//! is read by `sim` (validation) and the binding.

use std::mem::size_of;

use crate::config::{NodeConfig, QueueConfig, SimConfig};
use crate::host::model::HostModel;
use crate::metrics::histogram::LogHistogram;
use crate::metrics::timeseries::{FlowSeries, HostSeries, QueueSeries};
use crate::net::link::Link;
use crate::packet::{Packet, TCP_IP_HEADER_BYTES};
use crate::tcp::rtx_queue::Skb;
use crate::tcp::socket::TcpSocket;

/// The parts of a run's memory, in bytes (saturating: a huge estimate stays huge).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MemoryEstimate {
    /// Sample times the time series will hold.
    pub sample_rows: u64,
    pub series_bytes: u64,
    pub endpoints_bytes: u64,
    pub packets_held: u64,
    pub packets_bytes: u64,
    /// Hosts with a CPU or NIC model: state, host time series and NIC capacity.
    pub hosts_bytes: u64,
    pub total_bytes: u64,
}

/// Sample times of a run: t = 0, every interval up to the end, and one spare.
pub fn sample_rows(duration_ns: u64, sample_interval_ns: u64) -> u64 {
    duration_ns
        .checked_div(sample_interval_ns)
        .map_or(0, |n| n.saturating_add(2))
}

/// Bytes of time series for `rows` sample times of `flows` flows and `links` links.
/// Packets a link's pipe holds room for before it first grows.
const LINK_PIPE_INITIAL_PACKETS: u64 = 256;

pub fn series_bytes(rows: u64, flows: u64, links: u64) -> u64 {
    let per_row = (flows as u128) * FlowSeries::ROW_BYTES as u128
        + (links as u128) * QueueSeries::ROW_BYTES as u128;
    (rows as u128 * per_row).min(u64::MAX as u128) as u64
}

pub fn estimate(cfg: &SimConfig) -> MemoryEstimate {
    let rows = sample_rows(cfg.duration_ns, cfg.sample_interval_ns);
    let sampled = cfg.flows.iter().filter(|f| f.sample).count() as u64;
    let series = series_bytes(rows, sampled, cfg.links.len() as u64);

    // Two sockets per flow; one RTT histogram (the sender's: the receiving end takes no RTT
    // samples), which holds only the powers of two its samples span: charged at
    // TYPICAL_HISTOGRAM_BYTES (RTTs within a factor of 256 of each other), not the 58 KB of
    // every bucket, which would refuse tens of thousands of flows for memory they never use.
    let per_flow = (2 * size_of::<TcpSocket>() + LogHistogram::TYPICAL_HEAP_BYTES) as u64;
    // A link's own state and the initial capacity of its packet pipe.
    let per_link =
        size_of::<Link>() as u64 + LINK_PIPE_INITIAL_PACKETS * size_of::<(u64, Packet)>() as u64;
    let endpoints = (cfg.flows.len() as u64)
        .saturating_mul(per_flow)
        .saturating_add((cfg.links.len() as u64).saturating_mul(per_link));

    let mut link_bound: u128 = 0;
    for l in &cfg.links {
        let min_frame = (TCP_IP_HEADER_BYTES + l.overhead_bytes) as u128;
        let mut delay = l.delay_ns as u128;
        if let Some(r) = &l.reorder {
            delay += r.delay_ns as u128;
        }
        let in_flight = delay * l.rate_bps as u128 / (8 * 1_000_000_000 * min_frame) + 1;
        let queued = queue_bound_packets(&l.queue, min_frame);
        link_bound += in_flight + queued;
    }
    let mut flow_bound: u128 = 0;
    for f in &cfg.flows {
        let t = &f.tcp;
        let window = t.tcp_rmem[2].max(t.tcp_rmem[1]).max(t.tcp_wmem[2]) as u128;
        let segs = window / t.mss_bytes.max(1) as u128 + t.initial_cwnd as u128 + 1;
        flow_bound += 2 * segs; // data and as many ACKs
    }
    let held = link_bound.min(flow_bound).min(u64::MAX as u128) as u64;
    let per_packet = (size_of::<(u64, Packet)>() + size_of::<Skb>()) as u64;
    let packets = held.saturating_mul(per_packet);

    let hosts = cfg
        .nodes
        .iter()
        .map(|n| host_bytes(n, rows))
        .fold(0u64, u64::saturating_add);

    MemoryEstimate {
        sample_rows: rows,
        series_bytes: series,
        endpoints_bytes: endpoints,
        packets_held: held,
        packets_bytes: packets,
        hosts_bytes: hosts,
        total_bytes: series
            .saturating_add(endpoints)
            .saturating_add(packets)
            .saturating_add(hosts),
    }
}

/// Memory of a node's CPU/NIC model over `rows` sample times (0 without a model).
pub fn host_bytes(n: &NodeConfig, rows: u64) -> u64 {
    let cpu_model = n
        .cpu
        .as_ref()
        .is_some_and(|c| (c.share * c.period_ns as f64).round() < c.period_ns as f64);
    if !cpu_model && n.nic.is_none() {
        return 0;
    }
    let mut b = size_of::<HostModel>() as u128 + rows as u128 * HostSeries::ROW_BYTES as u128;
    if let Some(nic) = &n.nic {
        let ring = nic.rx_ring as u128 * nic.rx_queues as u128;
        let allowance = nic
            .allowance
            .as_ref()
            .map_or(0, |a| a.queue_packets as u128);
        b += ring * size_of::<Packet>() as u128 + allowance * size_of::<(Packet, u32)>() as u128;
    }
    b.min(u64::MAX as u128) as u64
}

/// `12.3 GB` (decimal units, as the figure is an estimate).
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 6] = ["B", "kB", "MB", "GB", "TB", "PB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1000.0 && u + 1 < UNITS.len() {
        v /= 1000.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

impl MemoryEstimate {
    /// The one-line refusal for a run over `cfg.max_memory_bytes`, naming the field that
    /// contributes most.
    pub fn refusal(&self, cfg: &SimConfig) -> String {
        let limit = cfg.max_memory_bytes;
        if self.hosts_bytes
            >= self
                .series_bytes
                .max(self.endpoints_bytes.saturating_add(self.packets_bytes))
        {
            let rows = self.sample_rows;
            let (i, n) = cfg
                .nodes
                .iter()
                .enumerate()
                .max_by_key(|(_, n)| host_bytes(n, rows))
                .expect("a node");
            let (ring, queues) = n.nic.as_ref().map_or((0, 0), |c| (c.rx_ring, c.rx_queues));
            return format!(
                "nodes.{i}.nic: {ring} descriptors x {queues} queues and the host models' time series need about {} \
                 (the run would hold about {}), above max_memory_bytes {} ({}); expected a smaller rx_ring or rx_queues, \
                 a longer sample_interval_ns or a larger max_memory_bytes",
                human_bytes(self.hosts_bytes),
                human_bytes(self.total_bytes),
                limit,
                human_bytes(limit)
            );
        }
        if self.series_bytes >= self.endpoints_bytes.saturating_add(self.packets_bytes) {
            format!(
                "sample_interval_ns: {} over duration_ns {} keeps {} samples of {} flow(s) and {} link(s), about {} of time series \
                 (the run would hold about {}), above max_memory_bytes {} ({}); expected a longer sample_interval_ns, \
                 a shorter duration_ns or a larger max_memory_bytes",
                cfg.sample_interval_ns,
                cfg.duration_ns,
                self.sample_rows,
                cfg.flows.len(),
                cfg.links.len(),
                human_bytes(self.series_bytes),
                human_bytes(self.total_bytes),
                limit,
                human_bytes(limit)
            )
        } else {
            format!(
                "flows: {} flow(s) over {} link(s) could hold about {} (endpoints {}, up to {} packets in links and \
                 retransmit queues {}), above max_memory_bytes {} ({}); expected fewer flows, smaller tcp_rmem/tcp_wmem or \
                 queue limits, or a larger max_memory_bytes",
                cfg.flows.len(),
                cfg.links.len(),
                human_bytes(self.total_bytes),
                human_bytes(self.endpoints_bytes),
                self.packets_held,
                human_bytes(self.packets_bytes),
                limit,
                human_bytes(limit)
            )
        }
    }
}

/// The most packets a qdisc can hold (frames of at least `min_frame` bytes).
fn queue_bound_packets(q: &QueueConfig, min_frame: u128) -> u128 {
    match q {
        QueueConfig::Pfifo { limit_packets } => *limit_packets as u128,
        QueueConfig::Bfifo { limit_bytes } => *limit_bytes as u128 / min_frame + 1,
        QueueConfig::Tbf(t) => match &t.child {
            Some(c) => queue_bound_packets(c, min_frame),
            None => t.limit_bytes as u128 / min_frame + 1,
        },
        QueueConfig::Fq(f) => f.limit_packets as u128,
        QueueConfig::FqCodel(f) => f.limit_packets as u128,
    }
}
