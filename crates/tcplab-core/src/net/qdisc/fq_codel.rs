//! `fq_codel`: fair queueing with a CoDel queue per flow, as Linux v6.12
//! net/sched/sch_fq_codel.c runs it (the default qdisc of most distributions).
//!
//! The model:
//!
//! - **Classification** (`fq_codel_classify()`, `fq_codel_hash()`): each packet goes to one
//!   of `flows` (1024) buckets by a hash of its flow, `reciprocal_scale(hash, flows)`.
//!   Linux hashes the 5-tuple with a per-boot random key (`skb_get_hash()`); tcplab hashes
//!   the sending socket (`pkt.dst_ep ^ 1`, one per TCP connection and direction) with a
//!   fixed mixing function, so runs are reproducible. Two flows that land in the same
//!   bucket share one queue and one CoDel state, as in Linux: collisions are part of the
//!   model (with few flows and 1024 buckets they are rare).
//! - **Scheduling** (`fq_codel_dequeue()`): deficit round robin over two lists. A bucket
//!   that becomes active joins `new_flows` with a deficit of one `quantum` (1514 bytes);
//!   new flows are served before old ones. A flow whose deficit is used up gets another
//!   quantum and moves to the tail of `old_flows`; a new flow found empty moves to
//!   `old_flows` (if any) so that it cannot starve them, an old flow found empty leaves.
//! - **AQM**: each bucket's packets pass through CoDel ([`super::codel`]) when dequeued:
//!   sojourn time against `target` (5 ms) over `interval` (100 ms), drops at the control
//!   law's spacing. CoDel never drops while the whole qdisc holds at most one MTU
//!   (`psched_mtu()`: 1514 bytes for a 1500-byte Ethernet device).
//! - **Overflow** (`fq_codel_drop()`): when a packet brings the qdisc above `limit` (10240
//!   packets) or its memory above `memory_limit` (32 MB), the fattest bucket (most bytes)
//!   loses packets from its head until half its bytes are gone or `drop_batch` (64)
//!   packets were dropped, whichever comes first; they are counted in `drop_overlimit`
//!   (and `drop_overmemory` if memory was the cause), and that bucket's CoDel `count` grows
//!   by the number dropped.
//! - **Work-conserving**: fq_codel never holds a packet for later; dequeue answers a packet
//!   or nothing ([`Dequeue::Wait`] is never used).
//!
//! Memory is counted in `skb->truesize`, approximated (see [`truesize_bytes`]) as a linear
//! skb whose data buffer comes from kmalloc: `SKB_DATA_ALIGN(len + NET_SKB_PAD) +
//! sizeof(skb_shared_info)` rounded up to kmalloc's power-of-two size, plus the
//! `struct sk_buff` itself (256 bytes aligned): 2304 bytes for a full-size frame, 768 for
//! a pure ACK. tcplab sends one MSS per packet (no TSO/GSO, whose skbs carry up to 64 KB
//! and a truesize to match), so at the defaults the 10240-packet limit binds before the
//! 32 MB memory limit (10240 x 2304 B = 23.6 MB), as it does in Linux without GSO.
//!
//! What the sender sees of an overflow drop: Linux returns `NET_XMIT_CN` when the fattest
//! bucket was the one the new packet went to, which TCP counts as sent (`net_xmit_eval()`)
//! while entering CWR (`__tcp_transmit_skb()`). tcplab's enqueue answers only "dropped or
//! not": when the new packet itself was among those dropped (its bucket held only it),
//! enqueue returns false, which a local sender takes as `NET_XMIT_DROP` (enters CWR and
//! sends the segment again later rather than repairing it by loss recovery); when only
//! older packets of its bucket went, it returns true (the packet is queued) and the sender
//! does not enter CWR. The other dropped packets go into the `dropped` buffer (the link
//! returns their TSQ budget, as freeing the skb does).
//!
//! Statistics: `tc -s qdisc` counters (`dropped` counts CoDel and overflow drops) and the
//! xstats iproute2's tc/q_fq_codel.c prints: `maxpacket`, `drop_overlimit`,
//! `new_flow_count`, `ecn_mark`, `ce_mark`, `memory_used`, `drop_overmemory`,
//! `new_flows_len`, `old_flows_len`.
//!
//! ECN: `ecn` (on by default, as fq_codel_init() sets it) makes CoDel mark an ECN-capable
//! packet CE where it would drop it (`ecn_mark`); `ce_threshold` marks every ECN-capable
//! packet leaving with a sojourn above it (`ce_mark`); see `codel`. The overflow drop
//! (`fq_codel_drop()`) never marks.

use std::collections::VecDeque;

use crate::config::FqCodelConfig;
use crate::net::qdisc::codel::{
    codel_dequeue, codel_duration, codel_time, CodelParams, CodelQueue, CodelStats, CodelTime,
    CodelVars, CODEL_DISABLED_THRESHOLD,
};
use crate::net::qdisc::{Dequeue, QdiscStats, TimedQdisc};
use crate::packet::Packet;

/// `psched_mtu()` of a 1500-byte-MTU Ethernet device: MTU plus the 14-byte header.
/// CoDel's "at most one MTU queued" floor (`codel_params.mtu`).
pub const PSCHED_MTU_BYTES: u32 = 1514;

/// Most buckets `tc` accepts (`fq_codel_change()` refuses more than 65536).
pub const MAX_FLOWS: u32 = 65_536;

/// Smallest quantum: Linux raises a smaller one to 256 (`fq_codel_change()`).
pub const MIN_QUANTUM_BYTES: u32 = 256;

/// Largest memory_limit: Linux caps it at 2^31 bytes (`fq_codel_change()`).
pub const MAX_MEMORY_LIMIT_BYTES: u64 = 1 << 31;

/// tc takes target and interval in microseconds in a u32.
const MAX_TIME_NS: u64 = u32::MAX as u64 * 1_000;

/// Approximate `skb->truesize` of a `len_bytes` packet (see the module docs): a linear skb
/// from `__alloc_skb()` ([`crate::packet::linear_skb_truesize`]).
#[inline]
pub fn truesize_bytes(len_bytes: u32) -> u32 {
    crate::packet::linear_skb_truesize(len_bytes) as u32
}

/// Check an fq_codel configuration; one-line error naming `{at}.field`.
pub fn validate(cfg: &FqCodelConfig, at: &str) -> Result<(), String> {
    if cfg.limit_packets == 0 {
        return Err(format!(
            "{at}.limit_packets: 0, expected at least 1 packet (tc's fq_codel limit)"
        ));
    }
    if cfg.flows == 0 || cfg.flows > MAX_FLOWS {
        return Err(format!(
            "{at}.flows: {} is outside [1, {MAX_FLOWS}] (tc's fq_codel flows)",
            cfg.flows
        ));
    }
    if cfg.quantum_bytes == 0 {
        return Err(format!("{at}.quantum_bytes: 0, expected a positive number of bytes (Linux raises anything below 256 to 256)"));
    }
    for (name, v) in [
        ("target_ns", cfg.target_ns),
        ("interval_ns", cfg.interval_ns),
    ] {
        if v < 1 << 10 {
            return Err(format!(
                "{at}.{name}: {v}, expected at least 1024 ns (CoDel counts time in 1024-ns ticks)"
            ));
        }
        if v > MAX_TIME_NS {
            return Err(format!(
                "{at}.{name}: {v} is above {MAX_TIME_NS} ns (tc's u32 of microseconds)"
            ));
        }
    }
    if cfg.memory_limit_bytes == 0 {
        return Err(format!("{at}.memory_limit_bytes: 0, expected a positive number of bytes (Linux caps it at 2^31)"));
    }
    if let Some(v) = cfg.ce_threshold_ns {
        if v == 0 || v > MAX_TIME_NS {
            return Err(format!(
                "{at}.ce_threshold_ns: {v}, expected 1 to {MAX_TIME_NS} ns (tc's u32 of microseconds), or null for off"
            ));
        }
    }
    Ok(())
}

/// A packet waiting in a bucket.
#[derive(Debug)]
struct Held {
    pkt: Packet,
    len_bytes: u32,
    /// `codel_set_enqueue_time()`.
    enqueue_time: CodelTime,
}

/// `struct fq_codel_flow`: one hash bucket.
#[derive(Debug, Default)]
struct Flow {
    queue: VecDeque<Held>,
    deficit: i32,
    /// On `new_flows` or `old_flows` (`!list_empty(&flow->flowchain)`).
    listed: bool,
    cvars: CodelVars,
}

#[derive(Debug)]
pub struct FqCodel {
    flows: Vec<Flow>,
    /// `q->backlogs[]`: bytes queued per bucket (scanned by the overflow drop).
    backlogs: Vec<u32>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    limit_packets: u32,
    quantum_bytes: u32,
    drop_batch: u32,
    memory_limit_bytes: u64,
    params: CodelParams,
    cstats: CodelStats,
    memory_usage_bytes: u64,
    drop_overlimit: u64,
    drop_overmemory: u64,
    new_flow_count: u64,
    stats: QdiscStats,
}

/// The queue side CoDel sees for one bucket (`dequeue_func()` / `drop_func()`).
struct BucketQueue<'a> {
    queue: &'a mut VecDeque<Held>,
    backlog: &'a mut u32,
    memory_usage_bytes: &'a mut u64,
    stats: &'a mut QdiscStats,
    dropped: &'a mut Vec<Packet>,
}

impl CodelQueue for BucketQueue<'_> {
    type Item = Held;

    #[inline]
    fn dequeue(&mut self) -> Option<Held> {
        let h = self.queue.pop_front()?;
        *self.backlog -= h.len_bytes;
        *self.memory_usage_bytes -= truesize_bytes(h.len_bytes) as u64;
        self.stats.backlog_packets -= 1;
        self.stats.backlog_bytes -= h.len_bytes as u64;
        Some(h)
    }

    #[inline]
    fn drop(&mut self, item: Held) {
        self.stats.drops += 1;
        self.dropped.push(item.pkt);
    }

    #[inline]
    fn len_bytes(item: &Held) -> u32 {
        item.len_bytes
    }

    #[inline]
    fn enqueue_time(item: &Held) -> CodelTime {
        item.enqueue_time
    }

    #[inline]
    fn backlog_bytes(&self) -> u64 {
        self.stats.backlog_bytes
    }

    #[inline]
    fn set_ce(item: &mut Held) -> bool {
        crate::packet::ecn::set_ce(&mut item.pkt.ecn)
    }
}

/// A fixed 32-bit mix of the flow key (murmur3's finalizer), standing in for Linux's
/// keyed `skb_get_hash()`.
#[inline]
fn flow_hash(key: u32) -> u32 {
    let mut h = key.wrapping_add(0x9e37_79b9);
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h
}

impl FqCodel {
    /// `fq_codel_init()` + `fq_codel_change()` (the config is validated).
    pub fn new(cfg: &FqCodelConfig) -> FqCodel {
        let n = cfg.flows.clamp(1, MAX_FLOWS) as usize;
        FqCodel {
            flows: (0..n).map(|_| Flow::default()).collect(),
            backlogs: vec![0; n],
            new_flows: VecDeque::with_capacity(n.min(1024)),
            old_flows: VecDeque::with_capacity(n.min(1024)),
            limit_packets: cfg.limit_packets,
            quantum_bytes: cfg.quantum_bytes.max(MIN_QUANTUM_BYTES),
            // max(1U, drop_batch_size) in fq_codel_change().
            drop_batch: cfg.drop_batch.max(1),
            memory_limit_bytes: cfg.memory_limit_bytes.min(MAX_MEMORY_LIMIT_BYTES),
            params: CodelParams {
                target: codel_duration(cfg.target_ns),
                interval: codel_duration(cfg.interval_ns),
                mtu_bytes: PSCHED_MTU_BYTES,
                ecn: cfg.ecn,
                ce_threshold: cfg
                    .ce_threshold_ns
                    .map_or(CODEL_DISABLED_THRESHOLD, codel_duration),
            },
            cstats: CodelStats::default(),
            memory_usage_bytes: 0,
            drop_overlimit: 0,
            drop_overmemory: 0,
            new_flow_count: 0,
            stats: QdiscStats::default(),
        }
    }

    /// `fq_codel_classify()` without filters: the bucket of `pkt` (0-based).
    #[inline]
    pub fn bucket_of(&self, pkt: &Packet) -> usize {
        let sender_ep = pkt.dst_ep ^ 1;
        // reciprocal_scale(hash, flows_cnt)
        ((flow_hash(sender_ep) as u64 * self.flows.len() as u64) >> 32) as usize
    }

    /// The CoDel state of a bucket (for tests and per-class statistics).
    pub fn codel_vars(&self, bucket: usize) -> &CodelVars {
        &self.flows[bucket].cvars
    }

    /// Packets queued in a bucket.
    pub fn bucket_len(&self, bucket: usize) -> usize {
        self.flows[bucket].queue.len()
    }

    #[inline]
    fn pop_list_head(&mut self, from_new: bool) {
        if from_new {
            self.new_flows.pop_front();
        } else {
            self.old_flows.pop_front();
        }
    }

    /// `fq_codel_drop()`: drop from the head of the fattest bucket until half its bytes are
    /// gone or `max_packets` were dropped. Returns (bucket, packets dropped).
    fn drop_fattest(&mut self, max_packets: u32, dropped: &mut Vec<Packet>) -> (usize, u32) {
        // Linear scan for the first bucket with the most bytes, as Linux does.
        let mut maxbacklog = 0;
        let mut idx = 0;
        for (i, &b) in self.backlogs.iter().enumerate() {
            if b > maxbacklog {
                maxbacklog = b;
                idx = i;
            }
        }
        // Goal: drop half of this fat flow's backlog.
        let threshold = maxbacklog >> 1;
        let flow = &mut self.flows[idx];
        let mut len = 0u32;
        let mut mem = 0u64;
        let mut i = 0u32;
        // do { ... } while (++i < max_packets && len < threshold): at least one packet.
        while let Some(h) = flow.queue.pop_front() {
            len += h.len_bytes;
            mem += truesize_bytes(h.len_bytes) as u64;
            dropped.push(h.pkt);
            i += 1;
            if i >= max_packets || len >= threshold {
                break;
            }
        }
        // Tell CoDel to increase its signal strength too.
        flow.cvars.count = flow.cvars.count.wrapping_add(i);
        self.backlogs[idx] -= len;
        self.memory_usage_bytes -= mem;
        self.stats.drops += i as u64;
        self.stats.backlog_bytes -= len as u64;
        self.stats.backlog_packets -= i;
        (idx, i)
    }
}

impl TimedQdisc for FqCodel {
    fn kind(&self) -> &'static str {
        "fq_codel"
    }

    /// `fq_codel_enqueue()`.
    fn enqueue(
        &mut self,
        pkt: Packet,
        len_bytes: u32,
        now_ns: u64,
        dropped: &mut Vec<Packet>,
    ) -> bool {
        let idx = self.bucket_of(&pkt);
        let flow = &mut self.flows[idx];
        flow.queue.push_back(Held {
            pkt,
            len_bytes,
            enqueue_time: codel_time(now_ns),
        });
        self.backlogs[idx] += len_bytes;
        self.stats.enqueued(len_bytes);
        if !flow.listed {
            flow.listed = true;
            flow.deficit = self.quantum_bytes as i32;
            self.new_flows.push_back(idx as u32);
            self.new_flow_count += 1;
        }
        self.memory_usage_bytes += truesize_bytes(len_bytes) as u64;
        let memory_limited = self.memory_usage_bytes > self.memory_limit_bytes;
        if self.stats.backlog_packets <= self.limit_packets && !memory_limited {
            return true;
        }
        // Over the limit: drop half the fattest bucket (at most drop_batch packets) rather
        // than one packet, to amortize the linear scan.
        let first_dropped = dropped.len();
        let (fat, n) = self.drop_fattest(self.drop_batch, dropped);
        self.drop_overlimit += n as u64;
        if memory_limited {
            self.drop_overmemory += n as u64;
        }
        if fat == idx && self.flows[idx].queue.is_empty() {
            // The new packet (the bucket's tail) went too: report it as not sent
            // (see the module docs for how this departs from NET_XMIT_CN).
            let last = dropped.len() - 1;
            debug_assert!(last >= first_dropped);
            dropped.truncate(last);
            return false;
        }
        true
    }

    /// `fq_codel_dequeue()`.
    fn dequeue(&mut self, now_ns: u64, dropped: &mut Vec<Packet>) -> Dequeue {
        let now = codel_time(now_ns);
        loop {
            let (from_new, idx) = match self.new_flows.front() {
                Some(&i) => (true, i as usize),
                None => match self.old_flows.front() {
                    Some(&i) => (false, i as usize),
                    None => return Dequeue::Empty,
                },
            };
            let flow = &mut self.flows[idx];
            if flow.deficit <= 0 {
                flow.deficit += self.quantum_bytes as i32;
                self.pop_list_head(from_new);
                self.old_flows.push_back(idx as u32);
                continue;
            }
            let Flow {
                queue,
                cvars,
                deficit,
                listed,
            } = flow;
            let mut bq = BucketQueue {
                queue,
                backlog: &mut self.backlogs[idx],
                memory_usage_bytes: &mut self.memory_usage_bytes,
                stats: &mut self.stats,
                dropped,
            };
            match codel_dequeue(&mut bq, &self.params, cvars, &mut self.cstats, now) {
                Some(h) => {
                    *deficit -= h.len_bytes as i32;
                    // qdisc_bstats_update(): a GSO skb counts its segments
                    self.stats.sent_packets += h.pkt.segs() as u64;
                    self.stats.sent_skbs += 1;
                    self.stats.sent_bytes += h.len_bytes as u64;
                    return Dequeue::Packet(h.pkt, h.len_bytes);
                }
                None => {
                    // Force a pass through old_flows to prevent starvation.
                    let move_to_old = from_new && !self.old_flows.is_empty();
                    if !move_to_old {
                        *listed = false;
                    }
                    self.pop_list_head(from_new);
                    if move_to_old {
                        self.old_flows.push_back(idx as u32);
                    }
                }
            }
        }
    }

    fn stats(&self) -> &QdiscStats {
        &self.stats
    }

    fn for_each_packet(&self, f: &mut dyn FnMut(&Packet)) {
        for flow in &self.flows {
            flow.queue.iter().for_each(|h| f(&h.pkt));
        }
    }

    /// `fq_codel_dump_stats()`, in the order tc/q_fq_codel.c prints them (tc omits
    /// `memory_used`, `drop_overmemory` and `ce_mark` when they are 0).
    fn xstats(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("maxpacket", self.cstats.maxpacket as u64),
            ("drop_overlimit", self.drop_overlimit),
            ("new_flow_count", self.new_flow_count),
            ("ecn_mark", self.cstats.ecn_mark),
            ("ce_mark", self.cstats.ce_mark),
            ("memory_used", self.memory_usage_bytes),
            ("drop_overmemory", self.drop_overmemory),
            ("new_flows_len", self.new_flows.len() as u64),
            ("old_flows_len", self.old_flows.len() as u64),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truesize_follows_kmalloc_sizes() {
        // 1514 + 64 pad -> 1600 aligned + 320 shinfo = 1920 -> kmalloc-2048, + 256 sk_buff.
        assert_eq!(truesize_bytes(1514), 2048 + 256);
        // 66 + 64 -> 192 + 320 = 512 -> kmalloc-512, + 256.
        assert_eq!(truesize_bytes(66), 512 + 256);
        // At the defaults the packet limit binds before the memory limit.
        let cfg = FqCodelConfig::default();
        assert!(cfg.limit_packets as u64 * truesize_bytes(1514) as u64 <= cfg.memory_limit_bytes);
    }

    #[test]
    fn sockets_spread_over_the_buckets_like_a_uniform_hash() {
        // 1000 sockets into 1024 buckets: a uniform hash fills 1024 * (1 - (1 - 1/1024)^1000)
        // = 640 buckets on average (sd ~ 10); far fewer would mean a poor mix.
        let q = FqCodel::new(&FqCodelConfig::default());
        let mut seen = std::collections::HashSet::new();
        for ep in 0..1000u32 {
            let b = q.bucket_of(&Packet {
                dst_ep: (2 * ep) ^ 1,
                ..Default::default()
            });
            assert!(b < 1024);
            seen.insert(b);
        }
        assert!(
            (600..=680).contains(&seen.len()),
            "{} buckets used",
            seen.len()
        );
    }

    #[test]
    fn small_quantum_and_batch_are_raised_as_linux_does() {
        let q = FqCodel::new(&FqCodelConfig {
            quantum_bytes: 100,
            drop_batch: 0,
            memory_limit_bytes: u64::MAX,
            ..Default::default()
        });
        assert_eq!(q.quantum_bytes, MIN_QUANTUM_BYTES);
        assert_eq!(q.drop_batch, 1);
        assert_eq!(q.memory_limit_bytes, MAX_MEMORY_LIMIT_BYTES);
    }
}
