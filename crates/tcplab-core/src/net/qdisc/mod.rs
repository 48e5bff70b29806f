//! Queueing disciplines at a link's egress, with the statistics `tc -s qdisc` prints.
//!
//! Two shapes of qdisc:
//!
//! - **FIFOs** (`pfifo`, `bfifo`; [`fifo`]): the departure time of each packet is known
//!   when it is enqueued (the serializer takes packets in order), so the link sends it on
//!   at once and needs no dequeue events: the fast path every scenario without a timed
//!   qdisc runs on.
//! - **Timed qdiscs** (`tbf`, `fq`, `fq_codel`; [`TimedQdisc`]): they hold packets by
//!   tokens, time or flow, and release them only when asked. The link calls
//!   [`TimedQdisc::dequeue`] when its serializer is free (as the kernel's `qdisc_run()`
//!   does when the device can take a packet), and a qdisc that holds packets until a later
//!   time answers [`Dequeue::Wait`] with that time (the kernel arms its watchdog hrtimer,
//!   `qdisc_watchdog_schedule_ns()`); the link keeps one dequeue event for it.
//!
//! Byte counts are IP lengths plus the link's framing overhead (`skb->len` on an Ethernet
//! device); the link passes that length in, so a qdisc never recomputes it.
//!
//! A qdisc that drops packets already queued (fq_codel's CoDel and overlimit drops) hands
//! them back in the `dropped` buffer: the link accounts for them (packet conservation) and
//! gives the sender its TSQ budget back, as freeing the skb does in Linux (`tcp_wfree()`).

pub mod codel;
pub mod fifo;
pub mod fq;
pub mod fq_codel;
pub mod tbf;

use crate::config::{in_range, QueueConfig};
use crate::packet::Packet;

pub use fifo::Fifo;

/// Checks a qdisc's parameters (`at` is the field path): each qdisc checks what its
/// module relies on.
pub fn validate(q: &QueueConfig, at: &str) -> Result<(), String> {
    match q {
        &QueueConfig::Pfifo { limit_packets } => in_range(
            &format!("{at}.limit_packets"),
            limit_packets as u64,
            1,
            u32::MAX as u64,
            "packets",
        ),
        &QueueConfig::Bfifo { limit_bytes } => in_range(
            &format!("{at}.limit_bytes"),
            limit_bytes,
            1,
            u32::MAX as u64,
            "bytes (tc's u32 limit)",
        ),
        QueueConfig::Tbf(c) => tbf::validate(c, at),
        QueueConfig::Fq(c) => fq::validate(c, at),
        QueueConfig::FqCodel(c) => fq_codel::validate(c, at),
    }
}

/// `tc -s qdisc` statistics common to every qdisc (`struct gnet_stats_basic` and
/// `struct gnet_stats_queue`): `Sent B bytes P pkt (dropped D, overlimits O requeues R)`,
/// `backlog Bb Pp`.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct QdiscStats {
    pub sent_bytes: u64,
    /// Segments sent: `tc -s`'s `pkt` counts a GSO skb's `gso_segs` (see [`Self::dequeued`]).
    pub sent_packets: u64,
    /// skbs sent (what `tc -s` does not show: a GSO skb is one); for the engine's tests and
    /// benchmarks.
    #[serde(skip)]
    pub sent_skbs: u64,
    pub drops: u64,
    pub overlimits: u64,
    pub requeues: u64,
    pub backlog_bytes: u64,
    pub backlog_packets: u32,
    pub max_backlog_packets: u32,
}

impl QdiscStats {
    /// Count a packet entering the backlog.
    #[inline]
    pub fn enqueued(&mut self, len_bytes: u32) {
        self.backlog_bytes += len_bytes as u64;
        self.backlog_packets += 1;
        if self.backlog_packets > self.max_backlog_packets {
            self.max_backlog_packets = self.backlog_packets;
        }
    }

    /// Count a packet (an skb of `segs` GSO segments) leaving the backlog to the device.
    /// `Sent ... pkt` counts segments, as Linux's `qdisc_bstats_update()` does
    /// (include/net/sch_generic.h, v6.12: `bstats_update()` adds `gso_segs` for a GSO skb);
    /// the backlog, limits and drops count skbs.
    #[inline]
    pub fn dequeued(&mut self, len_bytes: u32, segs: u32) {
        self.backlog_bytes -= len_bytes as u64;
        self.backlog_packets -= 1;
        self.sent_bytes += len_bytes as u64;
        self.sent_packets += segs as u64;
        self.sent_skbs += 1;
    }

    /// Count a packet dropped from the backlog (it had been enqueued).
    #[inline]
    pub fn dropped_queued(&mut self, len_bytes: u32) {
        self.backlog_bytes -= len_bytes as u64;
        self.backlog_packets -= 1;
        self.drops += 1;
    }
}

/// A child qdisc as `tc -s qdisc` shows it: its kind, stats and own counters.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ChildStats {
    pub qdisc: &'static str,
    #[serde(flatten)]
    pub stats: QdiscStats,
    #[serde(serialize_with = "crate::metrics::serialize_pairs")]
    pub xstats: Vec<(&'static str, u64)>,
}

/// What a timed qdisc gives the device when asked for a packet.
#[derive(Debug)]
pub enum Dequeue {
    /// This packet (with its length in bytes, as enqueued) goes to the device now.
    Packet(Packet, u32),
    /// Nothing may leave before this time (ns); ask again then. (A later enqueue may make
    /// a packet eligible earlier: the link asks again after every enqueue.)
    Wait(u64),
    /// Nothing queued.
    Empty,
}

/// A qdisc that holds packets and releases them on dequeue (tbf, fq, fq_codel).
pub trait TimedQdisc: std::fmt::Debug + Send {
    /// The name `tc qdisc` prints (`tbf`, `fq`, `fq_codel`).
    fn kind(&self) -> &'static str;

    /// Offer `pkt` (`len_bytes` on the wire) at `now_ns`. Returns false if this packet was
    /// dropped (counted in the stats; `NET_XMIT_DROP` to a local sender). Other packets
    /// dropped to make room go into `dropped`.
    fn enqueue(
        &mut self,
        pkt: Packet,
        len_bytes: u32,
        now_ns: u64,
        dropped: &mut Vec<Packet>,
    ) -> bool;

    /// The device can take a packet at `now_ns`. Packets dropped on the way (CoDel) go
    /// into `dropped`.
    fn dequeue(&mut self, now_ns: u64, dropped: &mut Vec<Packet>) -> Dequeue;

    fn stats(&self) -> &QdiscStats;

    /// Every packet held (for the end-of-run conservation check; not on the hot path).
    fn for_each_packet(&self, f: &mut dyn FnMut(&Packet));

    /// The qdisc's own `tc -s qdisc` counters (fq's `throttled`, `flows_plimit`, ...;
    /// fq_codel's `drop_overlimit`, ...), named as `tc -s qdisc` prints them, in its order.
    fn xstats(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// Statistics of a child qdisc (tbf's inner queue), if any: its kind, stats and xstats.
    fn child(&self) -> Option<ChildStats> {
        None
    }

    /// The packets the capture's tap recorded on dequeue, if this qdisc carries it
    /// (`crate::net::tap::TappedQdisc`); taken once, at the end of the run.
    fn take_capture(&mut self) -> Option<crate::net::tap::CaptureBuf> {
        None
    }
}

/// A link's egress qdisc.
#[derive(Debug)]
pub enum Qdisc {
    Fifo(Fifo),
    Timed(Box<dyn TimedQdisc>),
}

impl Qdisc {
    pub fn new(cfg: &QueueConfig) -> Qdisc {
        match cfg {
            QueueConfig::Pfifo { .. } | QueueConfig::Bfifo { .. } => Qdisc::Fifo(Fifo::new(cfg)),
            _ => Qdisc::Timed(new_timed(cfg)),
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Qdisc::Fifo(f) => f.kind(),
            Qdisc::Timed(q) => q.kind(),
        }
    }

    pub fn stats(&self) -> &QdiscStats {
        match self {
            Qdisc::Fifo(f) => &f.stats,
            Qdisc::Timed(q) => q.stats(),
        }
    }

    pub fn xstats(&self) -> Vec<(&'static str, u64)> {
        match self {
            Qdisc::Fifo(_) => Vec::new(),
            Qdisc::Timed(q) => q.xstats(),
        }
    }

    /// The child qdisc's kind, stats and xstats (tbf's inner queue), if any.
    pub fn child(&self) -> Option<ChildStats> {
        match self {
            Qdisc::Fifo(_) => None,
            Qdisc::Timed(q) => q.child(),
        }
    }
}

/// Build any qdisc as a [`TimedQdisc`] (a FIFO too, as the child of tbf).
pub fn new_timed(cfg: &QueueConfig) -> Box<dyn TimedQdisc> {
    match cfg {
        QueueConfig::Pfifo { .. } | QueueConfig::Bfifo { .. } => Box::new(fifo::HeldFifo::new(cfg)),
        QueueConfig::Tbf(c) => Box::new(tbf::Tbf::new(c)),
        QueueConfig::Fq(c) => Box::new(fq::Fq::new(c)),
        QueueConfig::FqCodel(c) => Box::new(fq_codel::FqCodel::new(c)),
    }
}
