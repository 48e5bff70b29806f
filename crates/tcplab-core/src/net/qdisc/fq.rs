//! `fq`: the Fair Queue packet scheduler with per-flow pacing, following Linux v6.12
//! net/sched/sch_fq.c.
//!
//! The model, as the kernel has it:
//!
//! - **Flows** are sockets: every packet of one socket is one flow (`fq_classify()`). In
//!   tcplab the socket that sent a packet is endpoint `pkt.dst_ep ^ 1`, the flow key.
//!   Flows live in `buckets` hash buckets (an rb-tree per bucket in Linux, a short list
//!   here); a flow left empty is *detached* and collected 3 s later by `fq_gc()`
//!   (`gc` counter) when a lookup passes through its bucket.
//! - **Round robin** (`fq_dequeue()`): flows with packets wait on a `new_flows` or an
//!   `old_flows` list of their priority band. A flow pays each packet's length out of its
//!   `credit`; with no credit left it gets `quantum` more and goes to the tail of
//!   `old_flows`. A new flow starts with `initial_quantum`; a flow idle longer than
//!   `refill_delay` comes back with at least `quantum`. New flows are served first.
//!   v6.12 has three bands (`prio2band`, weighted 9:3:1 x 64 KiB of credit); every tcplab
//!   packet has priority 0 (`TC_PRIO_BESTEFFORT`), which the default priomap puts in
//!   band 1, so the other two bands stay empty but the band round robin runs as in Linux.
//! - **Pacing**: a packet may leave at its `time_to_send`: its EDT timestamp
//!   (`skb->tstamp`, [`Packet::tstamp_ns`]) or, without one, the enqueue time; and not
//!   before its flow's `time_next_packet`. A flow whose head packet is not due yet is
//!   *throttled*: it leaves the round robin for a time-ordered structure (`q->delayed`,
//!   an rb-tree in Linux; a binary heap here, which needs only its minimum) until
//!   `fq_check_throttled()` puts it back on `old_flows`. When every flow with packets is
//!   throttled, dequeue answers [`Dequeue::Wait`] with the earliest of their times: the
//!   kernel's watchdog (`q->time_next_delayed_flow`).
//! - **Rates**: `maxrate` (`flow_max_rate`) spaces each flow's packets after it sends
//!   them: `time_next_packet = now + len / rate`, less up to half of that for a late
//!   dequeue. Packets without a timestamp would also be paced at their socket's
//!   `sk_pacing_rate` (and below `low_rate_threshold` lose their credit so that slow
//!   flows send one packet per turn); in tcplab TCP stamps every packet it sends
//!   (`__tcp_transmit_skb()` sets `skb->tstamp = tcp_wstamp_ns`), so the only rate fq
//!   applies itself is `maxrate`. A socket's own pacing rate reaches fq through the
//!   timestamps: TCP spaces them at `sk_pacing_rate` once fq has set its
//!   `sk_pacing_status` to `SK_PACING_FQ` (see `sim::Simulator::build`).
//! - **Horizon**: a packet stamped more than `horizon` ahead is dropped
//!   (`horizon_drops`) or, with `horizon_cap`, restamped to `now + horizon`
//!   (`horizon_caps`) (`fq_packet_beyond_horizon()`).
//! - **Limits**: a flow holding `flow_limit` packets drops the next packet of *that* flow
//!   (`flows_plimit`); a band holding `limit` packets drops (`bandN_drops`).
//! - **Fast path** (`fq_fastpath_check()`): a packet due now, when no flow is eligible
//!   and fewer than 8 packets wait in the fast queue, skips the flow tables and leaves
//!   first (`fastpath`); never with `maxrate`.
//!
//! Simplifications, each without effect on what leaves when:
//! - Times are kept in ns where the kernel counts some in jiffies (a flow's age for gc and
//!   `refill_delay`): the kernel's comparisons are exact to within one tick.
//! - The watchdog fires exactly at `time_next_delayed_flow` (the kernel's hrtimer has
//!   10 us of slack, `timer_slack`).
//! - `fq_gc()` collects every stale flow of the bucket it searches (the kernel, those on
//!   its rb-tree search path).
//! - No `orphan_mask` hashing (TCP packets always have a socket), no `offload_horizon`
//!   (0 by default).
//!
//! ECN: `ce_threshold` (off by default: `~0U` us, 4294 s) marks CE on a packet that leaves
//! its flow queue more than the threshold after it was due, `now - max(time_to_send,
//! f->time_next_packet)`; packets of the fast path (`q->internal`) are never marked. As in
//! v6.12's fq_dequeue(), `ce_mark` counts every packet over the threshold, ECN-capable or
//! not (`INET_ECN_set_ce()`'s result is ignored). The time a packet waits for its own EDT
//! stamp or its flow's pacing does not count, so fq does not mark the queue a pacing rate
//! or an EDT shaper (Cilium's Bandwidth Manager) builds.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::config::FqConfig;
use crate::net::qdisc::{Dequeue, QdiscStats, TimedQdisc};
use crate::packet::Packet;
use crate::time::NSEC_PER_SEC;

/// Priority bands (`FQ_BANDS`).
const FQ_BANDS: usize = 3;
/// `sch_default_prio2band`: skb->priority -> band.
const PRIO2BAND: [u8; 16] = [1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1];
/// Every tcplab packet has `skb->priority` 0 (`TC_PRIO_BESTEFFORT`).
const PKT_PRIORITY: usize = 0;
/// Per-band round-robin weights in bytes, `fq_init()`: 9 x 64 KiB, 3 x 64 KiB, 64 KiB.
const BAND_QUANTUM: [i64; FQ_BANDS] = [9 << 16, 3 << 16, 1 << 16];
/// `FQ_GC_AGE`: an empty flow is collected 3 s (3 * HZ jiffies) after it emptied.
const FQ_GC_AGE_NS: u64 = 3 * NSEC_PER_SEC;
/// Packets the fast-path queue may hold before fq falls back to fair queueing.
const FASTPATH_MAX: usize = 8;
/// `hash_32()`'s multiplier (`GOLDEN_RATIO_32`).
const GOLDEN_RATIO_32: u32 = 0x61C8_8647;
/// Largest `buckets` (`fq_change()`: log at most ilog2(256 * 1024)).
const MAX_BUCKETS: u32 = 256 * 1024;

/// Checks what the model relies on; errors name `{at}.field`, the value and what was
/// expected (tc passes these as u32 attributes: `fq_change()`).
pub fn validate(cfg: &FqConfig, at: &str) -> Result<(), String> {
    let u32_max = u32::MAX as u64;
    if cfg.horizon_ns == 0 || cfg.horizon_ns / 1000 > u32_max {
        return Err(format!(
            "{at}.horizon_ns: {}, expected a positive time of at most {} ns (tc's horizon is a u32 of us)",
            cfg.horizon_ns,
            u32_max * 1000
        ));
    }
    if cfg.quantum_bytes == 0 || cfg.quantum_bytes > 1 << 20 {
        return Err(format!(
            "{at}.quantum_bytes: {}, expected 1 to {} bytes (sch_fq: invalid quantum)",
            cfg.quantum_bytes,
            1 << 20
        ));
    }
    if cfg.initial_quantum_bytes > i32::MAX as u32 {
        return Err(format!(
            "{at}.initial_quantum_bytes: {}, expected at most {} bytes",
            cfg.initial_quantum_bytes,
            i32::MAX
        ));
    }
    if cfg.limit_packets == 0 {
        return Err(format!("{at}.limit_packets: 0, expected a positive number of packets (fq drops everything at 0)"));
    }
    if cfg.flow_limit_packets == 0 {
        return Err(format!("{at}.flow_limit_packets: 0, expected a positive number of packets (fq drops everything at 0)"));
    }
    if !cfg.buckets.is_power_of_two() || cfg.buckets < 2 || cfg.buckets > MAX_BUCKETS {
        return Err(format!(
            "{at}.buckets: {}, expected a power of two from 2 to {MAX_BUCKETS}",
            cfg.buckets
        ));
    }
    if let Some(r) = cfg.maxrate_bps {
        // TCA_FQ_FLOW_MAX_RATE is a u32 of bytes/s; ~0U means unlimited.
        if r < 8 || r / 8 >= u32_max {
            return Err(format!(
                "{at}.maxrate_bps: {r}, expected 8 to {} bit/s (a u32 of bytes/s; omit it for no limit)",
                (u32_max - 1) * 8
            ));
        }
    }
    if let Some(v) = cfg.ce_threshold_ns {
        // TCA_FQ_CE_THRESHOLD is a u32 of us; ~0U means off.
        if v < 1000 || v / 1000 >= u32_max {
            return Err(format!(
                "{at}.ce_threshold_ns: {v}, expected 1000 to {} ns (tc's u32 of microseconds), or null for off",
                (u32_max - 1) * 1000
            ));
        }
    }
    if cfg.low_rate_threshold_bps / 8 > u32_max {
        return Err(format!(
            "{at}.low_rate_threshold_bps: {}, expected at most {} bit/s",
            cfg.low_rate_threshold_bps,
            u32_max * 8
        ));
    }
    if cfg.refill_delay_ns / 1000 > u32_max {
        return Err(format!(
            "{at}.refill_delay_ns: {}, expected at most {} ns",
            cfg.refill_delay_ns,
            u32_max * 1000
        ));
    }
    Ok(())
}

/// A packet held by fq, with its length and `fq_skb_cb(skb)->time_to_send`.
#[derive(Debug)]
struct Held {
    pkt: Packet,
    len: u32,
    time_to_send: u64,
}

/// Where a flow is: on one of its band's lists, throttled, or on none (detached).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Detached,
    New,
    Old,
    Throttled,
}

/// `struct fq_flow`.
#[derive(Debug)]
struct Flow {
    /// The sending socket's endpoint (`f->sk`).
    key: u32,
    /// Packets in `time_to_send` order (the kernel's head/tail list plus `t_root` for the
    /// rare packet stamped earlier than the tail; FIFO among equal times).
    queue: VecDeque<Held>,
    /// skbs queued (`f->qlen`): a TSO burst's segments count once (`flags::GSO_TAIL`).
    skbs: u32,
    credit: i64,
    band: u8,
    place: Place,
    /// When the flow was detached (`f->age`), ns.
    age_ns: u64,
    time_next_packet: u64,
    /// The slot holds a flow (freed slots are reused by later flows).
    live: bool,
}

/// `struct fq_perband_flows`.
#[derive(Debug, Default)]
struct Band {
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    credit: i64,
    quantum: i64,
}

#[derive(Debug)]
pub struct Fq {
    // Configuration (`struct fq_sched_data`, read-mostly part); rates in bytes/s.
    limit: u32,
    flow_plimit: u32,
    quantum: i64,
    initial_quantum: i64,
    flow_refill_delay_ns: u64,
    /// `flow_max_rate`, bytes/s; `u64::MAX` = unlimited (`~0UL`).
    flow_max_rate: u64,
    low_rate_threshold: u64,
    horizon_ns: u64,
    horizon_drop: bool,
    rate_enable: bool,
    /// `q->ce_threshold` in ns (u64::MAX = off).
    ce_threshold_ns: u64,
    fq_trees_log: u32,

    buckets: Vec<Vec<u32>>,
    flows: Vec<Flow>,
    free_slots: Vec<u32>,
    bands: [Band; FQ_BANDS],
    band_nr: usize,
    /// The fast-path queue (`q->internal`).
    internal: VecDeque<Held>,
    /// Throttled flows by `(time_next_packet, insertion order)` (`q->delayed`).
    delayed: BinaryHeap<Reverse<(u64, u64, u32)>>,
    delayed_seq: u64,
    time_next_delayed_flow: u64,
    unthrottle_latency_ns: u64,

    band_pkt_count: [u32; FQ_BANDS],
    n_flows: u32,
    inactive_flows: u32,
    throttled_flows: u32,
    stat_throttled: u64,
    stat_gc_flows: u64,
    stat_fastpath_packets: u64,
    stat_band_drops: [u64; FQ_BANDS],
    stat_horizon_drops: u64,
    stat_horizon_caps: u64,
    stat_flows_plimit: u64,
    stat_pkts_too_long: u64,
    stat_allocation_errors: u64,
    stat_ce_mark: u64,
    stats: QdiscStats,
}

impl Fq {
    /// `fq_init()` + `fq_change()` with tc's parameters (rates converted from bit/s to the
    /// kernel's bytes/s).
    pub fn new(cfg: &FqConfig) -> Fq {
        let log = cfg.buckets.max(2).trailing_zeros();
        let bands = std::array::from_fn(|i| Band {
            quantum: BAND_QUANTUM[i],
            ..Band::default()
        });
        Fq {
            limit: cfg.limit_packets,
            flow_plimit: cfg.flow_limit_packets,
            quantum: cfg.quantum_bytes as i64,
            initial_quantum: cfg.initial_quantum_bytes as i64,
            flow_refill_delay_ns: cfg.refill_delay_ns,
            flow_max_rate: cfg.maxrate_bps.map(|r| (r / 8).max(1)).unwrap_or(u64::MAX),
            low_rate_threshold: cfg.low_rate_threshold_bps / 8,
            horizon_ns: cfg.horizon_ns,
            horizon_drop: cfg.horizon_drop,
            rate_enable: cfg.pacing,
            ce_threshold_ns: cfg.ce_threshold_ns.unwrap_or(u64::MAX),
            fq_trees_log: log,
            buckets: (0..1usize << log).map(|_| Vec::new()).collect(),
            flows: Vec::new(),
            free_slots: Vec::new(),
            bands,
            band_nr: 0,
            internal: VecDeque::with_capacity(FASTPATH_MAX),
            delayed: BinaryHeap::new(),
            delayed_seq: 0,
            time_next_delayed_flow: u64::MAX,
            unthrottle_latency_ns: 0,
            band_pkt_count: [0; FQ_BANDS],
            n_flows: 0,
            inactive_flows: 0,
            throttled_flows: 0,
            stat_throttled: 0,
            stat_gc_flows: 0,
            stat_fastpath_packets: 0,
            stat_band_drops: [0; FQ_BANDS],
            stat_horizon_drops: 0,
            stat_horizon_caps: 0,
            stat_flows_plimit: 0,
            stat_pkts_too_long: 0,
            stat_allocation_errors: 0,
            stat_ce_mark: 0,
            stats: QdiscStats::default(),
        }
    }

    /// `hash_ptr(sk, q->fq_trees_log)` on the socket's endpoint index.
    #[inline]
    fn bucket_of(&self, key: u32) -> usize {
        (key.wrapping_mul(GOLDEN_RATIO_32) >> (32 - self.fq_trees_log)) as usize
    }

    /// `fq_flow_add_tail()`.
    #[inline]
    fn add_tail(&mut self, f: u32, new: bool) {
        let flow = &mut self.flows[f as usize];
        let band = &mut self.bands[flow.band as usize];
        if new {
            flow.place = Place::New;
            band.new_flows.push_back(f);
        } else {
            flow.place = Place::Old;
            band.old_flows.push_back(f);
        }
    }

    /// Take the first flow off one of band `b`'s lists (`head->first = f->next`).
    #[inline]
    fn pop_head(&mut self, b: usize, new: bool) {
        let band = &mut self.bands[b];
        if new {
            band.new_flows.pop_front();
        } else {
            band.old_flows.pop_front();
        }
    }

    /// `fq_flow_set_throttled()`: the flow (already off its list) waits for its time.
    fn set_throttled(&mut self, f: u32) {
        let flow = &mut self.flows[f as usize];
        flow.place = Place::Throttled;
        let t = flow.time_next_packet;
        self.delayed.push(Reverse((t, self.delayed_seq, f)));
        self.delayed_seq += 1;
        self.throttled_flows += 1;
        self.stat_throttled += 1;
        if self.time_next_delayed_flow > t {
            self.time_next_delayed_flow = t;
        }
    }

    /// `fq_check_throttled()`: flows whose time has come go back to `old_flows`.
    fn check_throttled(&mut self, now_ns: u64) {
        if self.time_next_delayed_flow > now_ns {
            return;
        }
        // Unthrottle latency EWMA (1/8): how late the watchdog came.
        let sample = now_ns - self.time_next_delayed_flow;
        if sample > 0 {
            self.unthrottle_latency_ns -= self.unthrottle_latency_ns >> 3;
            self.unthrottle_latency_ns += sample >> 3;
        }
        self.time_next_delayed_flow = u64::MAX;
        while let Some(&Reverse((t, _, f))) = self.delayed.peek() {
            if t > now_ns {
                self.time_next_delayed_flow = t;
                break;
            }
            self.delayed.pop();
            self.throttled_flows -= 1;
            self.add_tail(f, false);
        }
    }

    /// `fq_fastpath_check()`: may this packet skip the flow tables?
    #[inline]
    fn fastpath_check(&self, time_to_send: u64, now_ns: u64) -> bool {
        if time_to_send > now_ns {
            return false;
        }
        if self.stats.backlog_packets != 0 {
            // Only if no flow is eligible, the fast queue is short, and no throttled flow
            // is already due (ordering).
            if self.n_flows != self.inactive_flows + self.throttled_flows
                || self.internal.len() >= FASTPATH_MAX
                || self.time_next_delayed_flow <= now_ns
            {
                return false;
            }
        }
        // (A non-TCP socket with SO_MAX_PACING_RATE also takes the slow path; tcplab's
        // packets are all TCP.)
        self.flow_max_rate == u64::MAX
    }

    /// `fq_gc()` on one bucket: free flows detached for longer than `FQ_GC_AGE`, except
    /// the one being looked up.
    fn gc(&mut self, bucket: usize, key: u32, now_ns: u64) {
        let flows = &self.flows;
        let stale = |&f: &u32| {
            let fl = &flows[f as usize];
            fl.key != key && fl.place == Place::Detached && now_ns > fl.age_ns + FQ_GC_AGE_NS
        };
        if !self.buckets[bucket].iter().any(stale) {
            return;
        }
        let mut b = std::mem::take(&mut self.buckets[bucket]);
        let mut freed = 0u32;
        b.retain(|&f| {
            let fl = &self.flows[f as usize];
            let gone =
                fl.key != key && fl.place == Place::Detached && now_ns > fl.age_ns + FQ_GC_AGE_NS;
            if gone {
                freed += 1;
                self.free_slots.push(f);
            }
            !gone
        });
        for &f in &self.free_slots[self.free_slots.len() - freed as usize..] {
            self.flows[f as usize].live = false;
        }
        self.buckets[bucket] = b;
        self.n_flows -= freed;
        self.inactive_flows -= freed;
        self.stat_gc_flows += freed as u64;
    }

    /// `fq_classify()` past the fast path: find or create the packet's flow.
    fn classify(&mut self, key: u32, now_ns: u64) -> u32 {
        let bucket = self.bucket_of(key);
        self.gc(bucket, key, now_ns);
        if let Some(&f) = self.buckets[bucket]
            .iter()
            .find(|&&f| self.flows[f as usize].key == key)
        {
            return f;
        }
        let flow = Flow {
            key,
            queue: VecDeque::new(),
            skbs: 0,
            credit: self.initial_quantum,
            band: 0,
            place: Place::Detached,
            age_ns: now_ns,
            time_next_packet: 0,
            live: true,
        };
        let f = match self.free_slots.pop() {
            Some(f) => {
                // Reuse the slot and its queue's memory.
                let slot = &mut self.flows[f as usize];
                let queue = std::mem::take(&mut slot.queue);
                *slot = Flow { queue, ..flow };
                f
            }
            None => {
                self.flows.push(flow);
                (self.flows.len() - 1) as u32
            }
        };
        self.buckets[bucket].push(f);
        self.n_flows += 1;
        self.inactive_flows += 1;
        f
    }

    /// `flow_queue_add()`: append in `time_to_send` order (after equal times).
    #[inline]
    fn flow_queue_add(q: &mut VecDeque<Held>, h: Held) {
        if q.back().is_none_or(|t| h.time_to_send >= t.time_to_send) {
            q.push_back(h);
        } else {
            let pos = q.partition_point(|x| x.time_to_send <= h.time_to_send);
            q.insert(pos, h);
        }
    }

    /// Flows currently allocated (tests).
    pub fn flow_count(&self) -> u32 {
        self.n_flows
    }
}

impl TimedQdisc for Fq {
    fn kind(&self) -> &'static str {
        "fq"
    }

    /// `fq_enqueue()`.
    fn enqueue(
        &mut self,
        mut pkt: Packet,
        len_bytes: u32,
        now_ns: u64,
        _dropped: &mut Vec<Packet>,
    ) -> bool {
        let band = PRIO2BAND[PKT_PRIORITY] as usize;
        // The later segments of a TSO burst are the rest of an skb fq already accepted
        // (the head passed the limits); they count no packet of their own.
        let skb = !pkt.has(crate::packet::flags::GSO_TAIL) as u32;
        if skb == 1 && self.band_pkt_count[band] >= self.limit {
            self.stat_band_drops[band] += 1;
            self.stats.drops += 1;
            return false;
        }
        let time_to_send = if pkt.tstamp_ns == 0 {
            now_ns
        } else {
            // fq_packet_beyond_horizon()
            if pkt.tstamp_ns > now_ns.saturating_add(self.horizon_ns) {
                if self.horizon_drop {
                    self.stat_horizon_drops += 1;
                    self.stats.drops += 1;
                    return false;
                }
                self.stat_horizon_caps += 1;
                pkt.tstamp_ns = now_ns + self.horizon_ns;
            }
            pkt.tstamp_ns
        };
        let held = Held {
            pkt,
            len: len_bytes,
            time_to_send,
        };
        if self.fastpath_check(time_to_send, now_ns) {
            self.stat_fastpath_packets += 1;
            self.internal.push_back(held);
            self.stats.enqueued(len_bytes);
            return true;
        }
        let key = held.pkt.dst_ep ^ 1;
        let f = self.classify(key, now_ns);
        let flow = &self.flows[f as usize];
        if skb == 1 && flow.skbs >= self.flow_plimit {
            self.stat_flows_plimit += 1;
            self.stats.drops += 1;
            return false;
        }
        if flow.place == Place::Detached {
            let refill = now_ns > flow.age_ns + self.flow_refill_delay_ns;
            self.flows[f as usize].band = band as u8;
            self.add_tail(f, true);
            if refill {
                // `f->credit = max_t(u32, f->credit, q->quantum)`: compared as u32, a
                // negative credit (a debt) is a huge number and is kept.
                let flow = &mut self.flows[f as usize];
                if flow.credit >= 0 {
                    flow.credit = flow.credit.max(self.quantum);
                }
            }
        }
        let flow = &mut self.flows[f as usize];
        flow.band = band as u8;
        flow.skbs += skb;
        self.band_pkt_count[band] += skb;
        if flow.queue.is_empty() {
            self.inactive_flows -= 1;
        }
        Fq::flow_queue_add(&mut flow.queue, held);
        self.stats.enqueued(len_bytes);
        true
    }

    /// `fq_dequeue()`.
    fn dequeue(&mut self, now_ns: u64, _dropped: &mut Vec<Packet>) -> Dequeue {
        if self.stats.backlog_packets == 0 {
            return Dequeue::Empty;
        }
        if let Some(h) = self.internal.pop_front() {
            self.stats.dequeued(h.len, h.pkt.segs());
            return Dequeue::Packet(h.pkt, h.len);
        }
        self.check_throttled(now_ns);
        let mut retry = 0;
        let (f, held) = 'begin: loop {
            // fq_pband_head_select()
            let b = self.band_nr;
            let band = &self.bands[b];
            let head_new = if band.credit <= 0 {
                None
            } else if !band.new_flows.is_empty() {
                Some(true)
            } else if !band.old_flows.is_empty() {
                Some(false)
            } else {
                None
            };
            let Some(is_new) = head_new else {
                // Move to the next band with credit (refilled by its weight).
                loop {
                    retry += 1;
                    if retry > FQ_BANDS {
                        break;
                    }
                    self.band_nr = (self.band_nr + 1) % FQ_BANDS;
                    let band = &mut self.bands[self.band_nr];
                    band.credit = (band.credit + band.quantum).min(band.quantum);
                    if band.credit > 0 {
                        continue 'begin;
                    }
                    retry = 0;
                }
                if self.time_next_delayed_flow != u64::MAX {
                    // qdisc_watchdog_schedule_range_ns()
                    return Dequeue::Wait(self.time_next_delayed_flow);
                }
                debug_assert!(
                    false,
                    "fq: {} packets held but no flow to serve",
                    self.stats.backlog_packets
                );
                return Dequeue::Empty;
            };
            let f = if is_new {
                self.bands[b].new_flows[0]
            } else {
                self.bands[b].old_flows[0]
            };
            retry = 0;
            let flow = &self.flows[f as usize];
            if flow.credit <= 0 {
                self.flows[f as usize].credit += self.quantum;
                self.pop_head(b, is_new);
                self.add_tail(f, false);
                continue;
            }
            let Some(head) = flow.queue.front() else {
                self.pop_head(b, is_new);
                // Force a pass through old_flows to prevent starvation.
                if is_new {
                    self.add_tail(f, false);
                } else {
                    let flow = &mut self.flows[f as usize];
                    flow.place = Place::Detached;
                    flow.age_ns = now_ns;
                }
                continue;
            };
            let time_next_packet = head.time_to_send.max(flow.time_next_packet);
            if now_ns < time_next_packet {
                self.pop_head(b, is_new);
                self.flows[f as usize].time_next_packet = time_next_packet;
                self.set_throttled(f);
                continue;
            }
            // fq_dequeue(): `(s64)(now - time_next_packet - q->ce_threshold) > 0`.
            let over_ce_threshold = now_ns - time_next_packet > self.ce_threshold_ns;
            if over_ce_threshold {
                self.stat_ce_mark += 1;
            }
            let flow = &mut self.flows[f as usize];
            let mut held = flow.queue.pop_front().unwrap();
            if over_ce_threshold {
                crate::packet::ecn::set_ce(&mut held.pkt.ecn);
            }
            if flow.queue.is_empty() {
                self.inactive_flows += 1;
            }
            let skb = !held.pkt.has(crate::packet::flags::GSO_TAIL) as u32;
            flow.skbs -= skb;
            self.band_pkt_count[flow.band as usize] -= skb;
            break (f, held);
        };
        self.stats.dequeued(held.len, held.pkt.segs());
        let mut plen = held.len as i64;
        let flow = &mut self.flows[f as usize];
        flow.credit -= plen;
        self.bands[self.band_nr].credit -= plen;
        if !self.rate_enable {
            return Dequeue::Packet(held.pkt, held.len);
        }
        let rate = self.flow_max_rate;
        // An EDT timestamp already says when the packet leaves: time_next_packet moves
        // only if this qdisc enforces a max rate.
        if held.pkt.tstamp_ns == 0 {
            // (With a socket, rate = min(sk_pacing_rate, maxrate): see the module docs.)
            if rate <= self.low_rate_threshold {
                flow.credit = 0;
            } else {
                plen = plen.max(self.quantum);
                if flow.credit > 0 {
                    return Dequeue::Packet(held.pkt, held.len);
                }
            }
        }
        if rate != u64::MAX {
            let mut len_ns = (plen as u64).saturating_mul(NSEC_PER_SEC) / rate.max(1);
            // Since the socket rate can change later, clamp the delay to one second.
            if len_ns > NSEC_PER_SEC {
                len_ns = NSEC_PER_SEC;
                self.stat_pkts_too_long += 1;
            }
            // Account for timer drift: the previous packet's time may have passed a while
            // ago.
            if flow.time_next_packet != 0 {
                len_ns -= (len_ns / 2).min(now_ns.saturating_sub(flow.time_next_packet));
            }
            flow.time_next_packet = now_ns + len_ns;
        }
        Dequeue::Packet(held.pkt, held.len)
    }

    fn stats(&self) -> &QdiscStats {
        &self.stats
    }

    fn for_each_packet(&self, f: &mut dyn FnMut(&Packet)) {
        self.internal.iter().for_each(|h| f(&h.pkt));
        for flow in self.flows.iter().filter(|fl| fl.live) {
            flow.queue.iter().for_each(|h| f(&h.pkt));
        }
    }

    /// `fq_dump_stats()` in the order iproute2's `fq_print_xstats()` prints them. tc
    /// names two counters `throttled`: the first (flows throttled now) is
    /// `throttled_flows` here, the second (times a flow was throttled) `throttled`.
    /// `highprio` is always 0 in v6.12.
    fn xstats(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("flows", self.n_flows as u64),
            ("inactive", self.inactive_flows as u64),
            ("throttled_flows", self.throttled_flows as u64),
            ("band0_pkts", self.band_pkt_count[0] as u64),
            ("band1_pkts", self.band_pkt_count[1] as u64),
            ("band2_pkts", self.band_pkt_count[2] as u64),
            ("gc", self.stat_gc_flows),
            ("highprio", 0),
            ("fastpath", self.stat_fastpath_packets),
            ("throttled", self.stat_throttled),
            ("latency", self.unthrottle_latency_ns.min(u32::MAX as u64)),
            ("ce_mark", self.stat_ce_mark),
            ("flows_plimit", self.stat_flows_plimit),
            ("pkts_too_long", self.stat_pkts_too_long),
            ("alloc_errors", self.stat_allocation_errors),
            ("horizon_drops", self.stat_horizon_drops),
            ("horizon_caps", self.stat_horizon_caps),
            ("band0_drops", self.stat_band_drops[0]),
            ("band1_drops", self.stat_band_drops[1]),
            ("band2_drops", self.stat_band_drops[2]),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const LEN: u32 = 1514;

    /// A data packet of the socket at endpoint `sender` (its peer is `sender ^ 1`).
    fn pkt(sender: u32, tstamp_ns: u64) -> Packet {
        Packet {
            dst_ep: sender ^ 1,
            seq: 0,
            end_seq: 1448,
            ip_bytes: 1500,
            tstamp_ns,
            ..Packet::default()
        }
    }

    fn xstat(q: &Fq, name: &str) -> u64 {
        q.xstats().into_iter().find(|(n, _)| *n == name).unwrap().1
    }

    fn drain(q: &mut Fq, now: u64) -> Vec<Packet> {
        let mut out = Vec::new();
        let mut d = Vec::new();
        while let Dequeue::Packet(p, _) = q.dequeue(now, &mut d) {
            out.push(p);
        }
        out
    }

    #[test]
    fn a_packet_stamped_past_the_horizon_is_dropped_and_counted() {
        let cfg = FqConfig::default();
        let mut q = Fq::new(&cfg);
        let now = 5 * NSEC_PER_SEC;
        let mut d = Vec::new();
        // Exactly at the horizon is accepted (`tstamp > now + horizon` drops).
        assert!(q.enqueue(pkt(0, now + cfg.horizon_ns), LEN, now, &mut d));
        assert!(!q.enqueue(pkt(0, now + cfg.horizon_ns + 1), LEN, now, &mut d));
        assert_eq!(xstat(&q, "horizon_drops"), 1);
        assert_eq!(xstat(&q, "horizon_caps"), 0);
        assert_eq!(q.stats().drops, 1);
        assert_eq!(q.stats().backlog_packets, 1);
        // The accepted one waits for its stamp (the watchdog).
        assert!(matches!(q.dequeue(now, &mut d), Dequeue::Wait(t) if t == now + cfg.horizon_ns));
    }

    #[test]
    fn horizon_cap_restamps_instead_of_dropping() {
        let cfg = FqConfig {
            horizon_drop: false,
            ..FqConfig::default()
        };
        let mut q = Fq::new(&cfg);
        let now = 5 * NSEC_PER_SEC;
        let mut d = Vec::new();
        assert!(q.enqueue(pkt(0, now + 60 * NSEC_PER_SEC), LEN, now, &mut d));
        assert_eq!(xstat(&q, "horizon_caps"), 1);
        assert_eq!(xstat(&q, "horizon_drops"), 0);
        assert!(matches!(q.dequeue(now, &mut d), Dequeue::Wait(t) if t == now + cfg.horizon_ns));
        match q.dequeue(now + cfg.horizon_ns, &mut d) {
            Dequeue::Packet(p, _) => assert_eq!(p.tstamp_ns, now + cfg.horizon_ns),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn flow_limit_drops_only_the_offending_flow() {
        let cfg = FqConfig::default();
        let mut q = Fq::new(&cfg);
        let now = NSEC_PER_SEC;
        let mut d = Vec::new();
        // Flow A (endpoint 0) floods 150 packets due now; flow B (endpoint 2) sends 50.
        let accepted_a = (0..150)
            .filter(|_| q.enqueue(pkt(0, now), LEN, now, &mut d))
            .count();
        let accepted_b = (0..50)
            .filter(|_| q.enqueue(pkt(2, now), LEN, now, &mut d))
            .count();
        // The first 8 of A take the fast path (qdisc empty of eligible flows, fast queue
        // below 8); then A's flow fills to flow_limit (100) and the rest are dropped.
        assert_eq!(xstat(&q, "fastpath"), 8);
        assert_eq!(accepted_a, 8 + 100);
        assert_eq!(xstat(&q, "flows_plimit"), 150 - 108);
        assert_eq!(accepted_b, 50, "flow B lost packets to flow A's limit");
        let out = drain(&mut q, now);
        assert_eq!(out.iter().filter(|p| p.dst_ep == 3).count(), 50);
        assert_eq!(out.len(), 158);
        assert_eq!(q.stats().backlog_packets, 0);
    }

    #[test]
    fn backlogged_flows_share_by_quantum() {
        // Two flows with packets stamped in the past: round robin gives each the same
        // bytes, within a quantum plus the new flow's initial quantum.
        let cfg = FqConfig::default();
        let mut q = Fq::new(&cfg);
        let now = NSEC_PER_SEC;
        let mut d = Vec::new();
        // Fill the fast queue first so that the rest goes to the flows.
        for _ in 0..8 {
            q.enqueue(pkt(4, 1), LEN, now, &mut d);
        }
        for _ in 0..100 {
            q.enqueue(pkt(0, 1), LEN, now, &mut d);
            q.enqueue(pkt(2, 1), LEN, now, &mut d);
        }
        let out = drain(&mut q, now);
        let first: Vec<_> = out[8..8 + 100].iter().map(|p| p.dst_ep ^ 1).collect();
        let a = first.iter().filter(|&&e| e == 0).count() as i64;
        let b = first.iter().filter(|&&e| e == 2).count() as i64;
        let slack = (cfg.initial_quantum_bytes + cfg.quantum_bytes) as i64 / LEN as i64 + 1;
        assert!((a - b).abs() <= slack, "a {a} b {b}");
    }

    #[test]
    fn maxrate_spaces_a_flows_packets() {
        let rate_bps = 10_000_000;
        let cfg = FqConfig {
            maxrate_bps: Some(rate_bps),
            ..FqConfig::default()
        };
        let mut q = Fq::new(&cfg);
        let now = NSEC_PER_SEC;
        let mut d = Vec::new();
        for _ in 0..3 {
            assert!(q.enqueue(pkt(0, now), LEN, now, &mut d));
        }
        assert_eq!(xstat(&q, "fastpath"), 0, "no fast path with maxrate");
        assert!(matches!(q.dequeue(now, &mut d), Dequeue::Packet(..)));
        // Next packet: LEN bytes at rate_bps / 8 bytes/s later.
        let gap = LEN as u64 * NSEC_PER_SEC / (rate_bps / 8);
        assert!(matches!(q.dequeue(now, &mut d), Dequeue::Wait(t) if t == now + gap));
        assert_eq!(xstat(&q, "throttled"), 1);
        assert_eq!(xstat(&q, "throttled_flows"), 1);
        assert!(matches!(q.dequeue(now + gap, &mut d), Dequeue::Packet(..)));
        // Dequeued 0.2 ms late: the next gap is shortened by that much (drift credit).
        let late = 200_000;
        assert!(matches!(
            q.dequeue(now + 2 * gap + late, &mut d),
            Dequeue::Packet(..)
        ));
        assert_eq!(
            q.flows[0].time_next_packet,
            now + 2 * gap + late + gap - late
        );
    }

    #[test]
    fn maxrate_paces_unstamped_packets_a_quantum_at_a_time() {
        // Forwarded packets carry no timestamp: fq_dequeue() lets a flow spend its credit
        // unpaced, then charges max(len, quantum) at the rate each time the credit runs out.
        let rate_bps = 10_000_000;
        let cfg = FqConfig {
            maxrate_bps: Some(rate_bps),
            ..FqConfig::default()
        };
        let mut q = Fq::new(&cfg);
        let now = NSEC_PER_SEC;
        let mut d = Vec::new();
        for _ in 0..20 {
            q.enqueue(pkt(0, 0), LEN, now, &mut d);
        }
        // The initial quantum (10 frames) leaves at once.
        let first = drain(&mut q, now).len() as u32;
        assert_eq!(first, cfg.initial_quantum_bytes / LEN);
        let gap = cfg.quantum_bytes as u64 * NSEC_PER_SEC / (rate_bps / 8);
        assert!(matches!(q.dequeue(now, &mut d), Dequeue::Wait(t) if t == now + gap));
        // Then one quantum (2 frames) per quantum / rate.
        assert_eq!(
            drain(&mut q, now + gap).len() as u32,
            cfg.quantum_bytes / LEN
        );
        assert!(matches!(q.dequeue(now + gap, &mut d), Dequeue::Wait(t) if t == now + 2 * gap));
    }

    #[test]
    fn edt_stamps_hold_packets_until_due_and_the_watchdog_takes_the_earliest() {
        let mut q = Fq::new(&FqConfig::default());
        let now = NSEC_PER_SEC;
        let mut d = Vec::new();
        q.enqueue(pkt(0, now + 5 * MS), LEN, now, &mut d);
        q.enqueue(pkt(2, now + 3 * MS), LEN, now, &mut d);
        assert!(matches!(q.dequeue(now, &mut d), Dequeue::Wait(t) if t == now + 3 * MS));
        assert_eq!(xstat(&q, "throttled_flows"), 2);
        match q.dequeue(now + 3 * MS, &mut d) {
            Dequeue::Packet(p, _) => assert_eq!(p.dst_ep ^ 1, 2),
            other => panic!("{other:?}"),
        }
        assert!(matches!(q.dequeue(now + 3 * MS, &mut d), Dequeue::Wait(t) if t == now + 5 * MS));
        assert!(matches!(
            q.dequeue(now + 5 * MS, &mut d),
            Dequeue::Packet(..)
        ));
        assert!(matches!(q.dequeue(now + 5 * MS, &mut d), Dequeue::Empty));
    }

    #[test]
    fn idle_flows_are_garbage_collected_after_three_seconds() {
        // One-packet quanta so that the round robin moves flows to old_flows at once.
        let cfg = FqConfig {
            buckets: 2,
            quantum_bytes: LEN,
            initial_quantum_bytes: LEN,
            ..FqConfig::default()
        };
        let mut q = Fq::new(&cfg);
        let mut d = Vec::new();
        let t0 = NSEC_PER_SEC;
        // Flow A (endpoint 0) sends one packet (stamped ahead: no fast path), then flow B
        // (endpoint 2) three.
        q.enqueue(pkt(0, t0 + 1), LEN, t0, &mut d);
        assert!(matches!(q.dequeue(t0 + 1, &mut d), Dequeue::Packet(..)));
        for _ in 0..3 {
            q.enqueue(pkt(2, t0 + 2), LEN, t0 + 1, &mut d);
        }
        // A (empty) goes new -> old; B sends, runs out of credit, goes to old behind A;
        // then A, found empty on old_flows, is detached at t0 + 2.
        assert_eq!(drain(&mut q, t0 + 2).len(), 3);
        assert_eq!(q.flows[0].place, Place::Detached);
        assert_eq!(q.flow_count(), 2);
        // Lookups in every bucket: at exactly FQ_GC_AGE nothing is collected, just after,
        // flow A is (B is still on a list).
        let ta = t0 + 2;
        for k in 10..20 {
            q.enqueue(pkt(2 * k, 0), LEN, ta + FQ_GC_AGE_NS, &mut d);
        }
        assert_eq!(xstat(&q, "gc"), 0);
        for k in 10..20 {
            q.enqueue(pkt(2 * k, 0), LEN, ta + FQ_GC_AGE_NS + 1, &mut d);
        }
        assert_eq!(xstat(&q, "gc"), 1);
        assert!(q.flows.iter().filter(|f| f.live).all(|f| f.key != 0));
    }

    #[test]
    fn validation_names_the_field_the_value_and_what_was_expected() {
        let at = "links.0.queue";
        let cases: Vec<(FqConfig, &str)> = vec![
            (
                FqConfig {
                    horizon_ns: 0,
                    ..FqConfig::default()
                },
                "links.0.queue.horizon_ns: 0, expected a positive time",
            ),
            (
                FqConfig {
                    quantum_bytes: 0,
                    ..FqConfig::default()
                },
                "links.0.queue.quantum_bytes: 0, expected 1 to 1048576 bytes",
            ),
            (
                FqConfig {
                    limit_packets: 0,
                    ..FqConfig::default()
                },
                "links.0.queue.limit_packets: 0, expected a positive",
            ),
            (
                FqConfig {
                    flow_limit_packets: 0,
                    ..FqConfig::default()
                },
                "links.0.queue.flow_limit_packets: 0, expected a positive",
            ),
            (
                FqConfig {
                    buckets: 1000,
                    ..FqConfig::default()
                },
                "links.0.queue.buckets: 1000, expected a power of two",
            ),
            (
                FqConfig {
                    maxrate_bps: Some(0),
                    ..FqConfig::default()
                },
                "links.0.queue.maxrate_bps: 0, expected 8 to",
            ),
        ];
        validate(&FqConfig::default(), at).unwrap();
        for (cfg, want) in cases {
            let err = validate(&cfg, at).unwrap_err();
            assert!(err.starts_with(want), "want {want:?}, got {err:?}");
            assert!(!err.contains('\n'));
        }
    }
}
