//! `tbf`, the token bucket filter (Linux v6.12 net/sched/sch_tbf.c), with tc's parameters.
//!
//! # The model
//!
//! tbf keeps its tokens as *time*, in nanoseconds, not as bytes: the bucket holds
//! `buffer` = the time `burst` bytes take at `rate` (`psched_l2t_ns()`), and a packet of
//! `len` bytes costs `psched_l2t_ns(rate, len)` of it. Tokens grow with the clock since the
//! last send (`t_c`), capped at `buffer`. The head of the child queue leaves when the tokens
//! cover it; otherwise tbf arms its watchdog for the moment they will
//! (`qdisc_watchdog_schedule_ns()`; here [`Dequeue::Wait`]) and counts one `overlimits`.
//! An optional second bucket (`peakrate`, depth `mtu` as time at the peak rate) limits how
//! fast the head may leave on a small time scale (tbf_dequeue()).
//!
//! Packets wait in a child qdisc. The kernel installs a **bfifo** of `limit` bytes
//! (tbf_change() -> `fifo_create_dflt(sch, &bfifo_qdisc_ops, qopt->limit)`), not a pfifo:
//! tcplab follows the kernel, so the default child counts bytes, and `tc -s qdisc` shows it
//! as `bfifo`. Any other qdisc may be grafted as the child ([`TbfConfig::child`]); tbf
//! then ignores `limit` (the kernel passes `limit` only to a FIFO child: `fifo_set_limit()`).
//! tbf looks at the child's head before taking it: a FIFO child is peeked in place; any
//! other child is dequeued and the packet held in tbf until the tokens cover it, as the
//! kernel's `qdisc_peek_dequeued()` does (the held packet counts in tbf's backlog and, as
//! `tc -s qdisc` shows it, in the child's).
//!
//! Counters, as `tc -s qdisc` prints them: `dropped` = packets refused (no room in the
//! child, or larger than the bucket) or dropped later by the child; `overlimits` = dequeue
//! attempts that found the head waiting for tokens. tbf has no `xstats` of its own.
//!
//! # tc's parameters and how tcplab receives them
//!
//! The engine takes bytes and bits per second; the scenario front end converts what the
//! user types to tc as `tc qdisc add ... tbf` does (iproute2 tc/q_tbf.c tbf_parse_opt()):
//!
//! - `rate`: the kernel works in bytes/s: `rate_bytes_ps = rate_bps / 8` (tc's
//!   `get_rate64()` truncates).
//! - `burst` (`buffer`, `maxburst`): bytes (tc's `get_size()`; `32kbit` = 4096 bytes,
//!   `10kb` = 10240 bytes). Modern tc sends it as `TCA_TBF_BURST`, so the kernel computes
//!   `buffer_ns = psched_l2t_ns(rate, burst_bytes)` (≈ `burst_bytes * 1e9 / rate_bytes_ps`)
//!   and the largest packet tbf accepts, `max_size = burst_bytes`.
//! - `limit` in bytes, or `latency`: tc turns `latency` (parsed to whole microseconds) into
//!   `limit_bytes = floor(rate_bytes_ps * latency_us / 1e6 + burst_bytes)`, and with a
//!   peak rate the smaller of that and
//!   `floor(peakrate_bytes_ps * latency_us / 1e6 + mtu_bytes)`.
//! - `peakrate` and `mtu` (`minburst`): tc sends `mtu` as `TCA_TBF_PBURST`, so
//!   `mtu_ns = psched_l2t_ns(peakrate, mtu_bytes)` and `max_size = min(burst, mtu)`.
//!
//! Note what `latency` promises: tc's formula assumes a full bucket when the queue starts
//! (`lat = (limit - burst) / rate`, the comment atop sch_tbf.c). Under a standing queue the
//! bucket is empty, so a packet at the tail of a full child waits `limit / rate` =
//! `latency + burst / rate`. tcplab reproduces the kernel, so it shows the same.
//!
//! Byte counts include the link's framing overhead (`skb->len` on Ethernet: IP length plus
//! 14), so a 10 Mbit/s tbf carries TCP payload at 10 Mbit/s × 1448 / 1514.
//!
//! Simplifications: no GSO (tcplab's packets are single segments, so tbf_segment() never
//! applies); no `overhead`/`mpu`/`linklayer` options (0, 0, Ethernet).

use crate::config::{QueueConfig, TbfConfig};
use crate::net::qdisc::fifo::HeldFifo;
use crate::net::qdisc::{new_timed, ChildStats, Dequeue, QdiscStats, TimedQdisc};
use crate::packet::Packet;

/// A full Ethernet frame: 1500 bytes of IP plus the 14-byte header (`psched_mtu()`).
pub const ETH_FRAME_BYTES: u64 = 1514;

const NSEC_PER_SEC: u64 = 1_000_000_000;

/// A rate as the kernel precomputes it (`struct psched_ratecfg`): bytes per second and a
/// reciprocal (`mult`, `shift`) so that the time of `len` bytes is `(len * mult) >> shift`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateCfg {
    pub rate_bytes_ps: u64,
    mult: u32,
    shift: u8,
}

impl RateCfg {
    /// Linux v6.12 net/sched/sch_generic.c: psched_ratecfg_precompute() and
    /// __psched_ratecfg_precompute(): the largest `mult` below 2^32 (bit 31 set) for
    /// `NSEC_PER_SEC << shift / rate`.
    pub fn new(rate_bytes_ps: u64) -> RateCfg {
        let (mut mult, mut shift) = (1u64, 0u8);
        let mut factor = NSEC_PER_SEC;
        while let Some(m) = factor.checked_div(rate_bytes_ps) {
            mult = m;
            if mult & (1 << 31) != 0 || factor & (1 << 63) != 0 {
                break;
            }
            factor <<= 1;
            shift += 1;
        }
        RateCfg {
            rate_bytes_ps,
            mult: mult as u32,
            shift,
        }
    }

    /// A rate given in bits per second, as tc hands it to the kernel (bytes/s, truncated).
    pub fn from_bps(rate_bps: u64) -> RateCfg {
        RateCfg::new(rate_bps / 8)
    }

    /// Linux v6.12 include/net/sch_generic.h: psched_l2t_ns(): the time `len_bytes` take
    /// at this rate (no `overhead`, `mpu` or ATM cells: tc's defaults).
    #[inline]
    pub fn l2t_ns(&self, len_bytes: u32) -> u64 {
        ((len_bytes as u64) * self.mult as u64) >> self.shift
    }
}

/// Checks a tbf's parameters as tc and tbf_change() would; `at` is the field path.
pub fn validate(cfg: &TbfConfig, at: &str) -> Result<(), String> {
    // tc's rate is bytes per second: anything under 8 bit/s is a rate of 0.
    if cfg.rate_bps < 8 {
        return Err(format!(
            "{at}.rate_bps: {}, expected a positive rate (at least 8 bit/s: tc counts bytes/s)",
            cfg.rate_bps
        ));
    }
    // sch_tbf.c tbf_change() only warns ("burst ... is lower than device mtu"), but then
    // every full-size frame is larger than the bucket and dropped (tbf_enqueue()).
    if cfg.burst_bytes < ETH_FRAME_BYTES {
        return Err(format!(
            "{at}.burst_bytes: {}, expected at least one MTU, {ETH_FRAME_BYTES} bytes",
            cfg.burst_bytes
        ));
    }
    if cfg.burst_bytes > u32::MAX as u64 {
        return Err(format!(
            "{at}.burst_bytes: {}, expected at most {} bytes (TCA_TBF_BURST is a u32)",
            cfg.burst_bytes,
            u32::MAX
        ));
    }
    if cfg.limit_bytes == 0 || cfg.limit_bytes > u32::MAX as u64 {
        return Err(format!(
            "{at}.limit_bytes: {}, expected 1 to {} bytes (tc needs a limit or a latency; tc_tbf_qopt.limit is a u32)",
            cfg.limit_bytes,
            u32::MAX
        ));
    }
    match (cfg.peakrate_bps, cfg.mtu_bytes) {
        (None, None) => {}
        (None, Some(m)) => {
            return Err(format!("{at}.mtu_bytes: {m}, expected no mtu without a peakrate (mtu is the peak bucket's depth)"));
        }
        (Some(p), None) => {
            return Err(format!("{at}.mtu_bytes: missing, expected the peak bucket's depth in bytes (tc requires mtu with peakrate {p} bit/s)"));
        }
        (Some(p), Some(m)) => {
            // tbf_change(): "peakrate ... is lower than or equals to rate" -> -EINVAL.
            if p / 8 <= cfg.rate_bps / 8 {
                return Err(format!("{at}.peakrate_bps: {p}, expected more than rate_bps {} (tbf refuses a peakrate <= rate)", cfg.rate_bps));
            }
            if m < ETH_FRAME_BYTES {
                return Err(format!(
                    "{at}.mtu_bytes: {m}, expected at least one MTU, {ETH_FRAME_BYTES} bytes"
                ));
            }
            if m > u32::MAX as u64 {
                return Err(format!(
                    "{at}.mtu_bytes: {m}, expected at most {} bytes (TCA_TBF_PBURST is a u32)",
                    u32::MAX
                ));
            }
        }
    }
    if let Some(child) = &cfg.child {
        super::validate(child, &format!("{at}.child"))?;
    }
    Ok(())
}

/// The child qdisc. A FIFO is peeked in place (the common case, no dynamic dispatch);
/// any other child is dequeued ahead and its packet held in [`Tbf`].
#[derive(Debug)]
enum Child {
    Fifo(HeldFifo),
    Other(Box<dyn TimedQdisc>),
}

impl Child {
    #[inline]
    fn stats(&self) -> &QdiscStats {
        match self {
            Child::Fifo(f) => &f.stats,
            Child::Other(q) => q.stats(),
        }
    }
}

/// The head of the child, looked at before tbf decides.
enum Head {
    Len(u32),
    Wait(u64),
    Empty,
}

#[derive(Debug)]
pub struct Tbf {
    rate: RateCfg,
    peak: Option<RateCfg>,
    /// Bucket depth as time at `rate` (`q->buffer`), ns.
    buffer_ns: i64,
    /// Peak bucket depth as time at `peakrate` (`q->mtu`), ns; 0 without a peak rate.
    mtu_ns: i64,
    /// Largest packet the buckets can ever pass (`q->max_size`), bytes.
    max_size_bytes: u32,
    /// Frames of a GSO skb the child refused in `segment` (reused, no per-packet allocation).
    refused: Vec<Packet>,
    /// Tokens of each bucket, ns (`q->tokens`, `q->ptokens`); negative never stored.
    tokens_ns: i64,
    ptokens_ns: i64,
    /// Time of the last send (`q->t_c`), ns.
    t_c_ns: u64,
    child: Child,
    /// A non-FIFO child's head, dequeued ahead (`qdisc_peek_dequeued()`), with its length.
    held: Option<(Packet, u32)>,
    stats: QdiscStats,
}

impl Tbf {
    /// tbf_init() + tbf_change() at time 0: both buckets full.
    pub fn new(cfg: &TbfConfig) -> Tbf {
        let rate = RateCfg::from_bps(cfg.rate_bps);
        let burst = cfg.burst_bytes.min(u32::MAX as u64) as u32;
        // TCA_TBF_BURST: buffer = psched_l2t_ns(&rate, burst); max_size = burst.
        let buffer_ns = rate.l2t_ns(burst) as i64;
        let mut max_size_bytes = burst;
        let (peak, mtu_ns) = match (cfg.peakrate_bps, cfg.mtu_bytes) {
            (Some(p), Some(m)) => {
                let peak = RateCfg::from_bps(p);
                let m = m.min(u32::MAX as u64) as u32;
                // TCA_TBF_PBURST: max_size = min(max_size, pburst); mtu = psched_l2t_ns(&peak, pburst).
                max_size_bytes = max_size_bytes.min(m);
                (Some(peak), peak.l2t_ns(m) as i64)
            }
            _ => (None, 0),
        };
        let child = match &cfg.child {
            None => Child::Fifo(HeldFifo::new(&QueueConfig::Bfifo {
                limit_bytes: cfg.limit_bytes,
            })),
            Some(c) if c.is_fifo() => Child::Fifo(HeldFifo::new(c)),
            Some(c) => Child::Other(new_timed(c)),
        };
        Tbf {
            rate,
            peak,
            buffer_ns,
            mtu_ns,
            max_size_bytes,
            refused: Vec::new(),
            tokens_ns: buffer_ns,
            ptokens_ns: mtu_ns,
            t_c_ns: 0,
            child,
            held: None,
            stats: QdiscStats::default(),
        }
    }

    /// The bucket depth as time (`q->buffer`), ns.
    pub fn buffer_ns(&self) -> u64 {
        self.buffer_ns as u64
    }

    /// The largest packet tbf accepts (`q->max_size`), bytes.
    pub fn max_size_bytes(&self) -> u32 {
        self.max_size_bytes
    }

    /// The rate as the kernel holds it.
    pub fn rate(&self) -> RateCfg {
        self.rate
    }

    /// tbf's backlog is its child's plus a held head, as tbf_dump() reports it
    /// (`sch->qstats.backlog = q->qdisc->qstats.backlog`); drops inside the child reach
    /// tbf through qdisc_tree_reduce_backlog() in the kernel, through this sync here.
    #[inline]
    fn sync_backlog(&mut self) {
        let c = self.child.stats();
        let (held_bytes, held_pkts) = match &self.held {
            Some((_, len)) => (*len as u64, 1),
            None => (0, 0),
        };
        self.stats.backlog_bytes = c.backlog_bytes + held_bytes;
        self.stats.backlog_packets = c.backlog_packets + held_pkts;
        if self.stats.backlog_packets > self.stats.max_backlog_packets {
            self.stats.max_backlog_packets = self.stats.backlog_packets;
        }
    }

    /// `q->qdisc->ops->peek()`: the length of the child's head.
    #[inline]
    fn peek(&mut self, now_ns: u64, dropped: &mut Vec<Packet>) -> Head {
        match &mut self.child {
            Child::Fifo(f) => match f.peek_len() {
                Some(len) => Head::Len(len),
                None => Head::Empty,
            },
            Child::Other(q) => {
                if let Some((_, len)) = &self.held {
                    return Head::Len(*len);
                }
                // qdisc_peek_dequeued(): take the head out now and keep it.
                match q.dequeue(now_ns, dropped) {
                    Dequeue::Packet(pkt, len) => {
                        self.held = Some((pkt, len));
                        Head::Len(len)
                    }
                    Dequeue::Wait(t) => Head::Wait(t),
                    Dequeue::Empty => Head::Empty,
                }
            }
        }
    }

    /// `qdisc_dequeue_peeked()`: take the head just peeked.
    #[inline]
    fn take_head(&mut self, now_ns: u64, dropped: &mut Vec<Packet>) -> (Packet, u32) {
        match &mut self.child {
            Child::Fifo(f) => match f.dequeue(now_ns, dropped) {
                Dequeue::Packet(pkt, len) => (pkt, len),
                _ => unreachable!("tbf: the FIFO child lost its peeked head"),
            },
            Child::Other(_) => self.held.take().expect("tbf: no held head after a peek"),
        }
    }
}

impl Tbf {
    /// Linux v6.12 net/sched/sch_tbf.c: tbf_segment(): the GSO skb is cut into its
    /// frames (`skb_gso_segment()`), each enqueued into the child with its own length;
    /// a frame the child refuses is dropped (`qdisc_qstats_drop`); the skb counts as
    /// enqueued if any frame was. Each frame keeps its socket's TSQ charge for its own
    /// bytes (net/ipv4/tcp_offload.c: tcp_gso_segment() gives every segment the
    /// `tcp_wfree` destructor and its share of truesize), so each owes its own completion.
    fn segment(
        &mut self,
        pkt: Packet,
        overhead: u32,
        now_ns: u64,
        dropped: &mut Vec<Packet>,
    ) -> bool {
        let before = dropped.len();
        self.refused.clear();
        let mut nb = 0u32;
        for k in 0..pkt.gso_segs as u32 {
            let frame = pkt.gso_frame(k);
            let len = frame.ip_bytes + overhead;
            let ok = match &mut self.child {
                Child::Fifo(f) => f.enqueue(frame, len, now_ns, dropped),
                Child::Other(q) => q.enqueue(frame, len, now_ns, dropped),
            };
            if ok {
                nb += 1;
            } else {
                self.refused.push(frame);
            }
        }
        // Each refused frame is a tbf drop (qdisc_qstats_drop), as is each packet the child
        // dropped to make room (qdisc_tree_reduce_backlog).
        self.stats.drops += (dropped.len() - before + self.refused.len()) as u64;
        self.sync_backlog();
        if nb == 0 {
            // kfree_skb(skb); NET_XMIT_DROP: the caller accounts for the whole skb.
            return false;
        }
        // consume_skb(skb); NET_XMIT_SUCCESS: the refused frames are drops of their own.
        dropped.extend(self.refused.drain(..));
        true
    }
}

impl TimedQdisc for Tbf {
    fn kind(&self) -> &'static str {
        "tbf"
    }

    /// Linux v6.12 net/sched/sch_tbf.c: tbf_enqueue().
    fn enqueue(
        &mut self,
        pkt: Packet,
        len_bytes: u32,
        now_ns: u64,
        dropped: &mut Vec<Packet>,
    ) -> bool {
        if len_bytes > self.max_size_bytes {
            // Larger than the bucket can ever pass: a GSO skb whose frames fit is
            // segmented (tbf_segment()), anything else is dropped (qdisc_drop()).
            if pkt.is_gso() {
                let overhead = (len_bytes - pkt.qdisc_len(0)) / pkt.gso_segs as u32;
                let frame_max = Packet::ip_len(pkt.gso_size as u32, pkt.num_sacks) + overhead;
                // skb_gso_validate_mac_len(skb, q->max_size)
                if frame_max <= self.max_size_bytes {
                    return self.segment(pkt, overhead, now_ns, dropped);
                }
            }
            self.stats.drops += 1;
            return false;
        }
        let before = dropped.len();
        let ok = match &mut self.child {
            Child::Fifo(f) => f.enqueue(pkt, len_bytes, now_ns, dropped),
            Child::Other(q) => q.enqueue(pkt, len_bytes, now_ns, dropped),
        };
        // The child's refusal (net_xmit_drop_count) and packets it dropped to make room
        // (qdisc_tree_reduce_backlog) both count as tbf drops.
        self.stats.drops += (dropped.len() - before) as u64 + u64::from(!ok);
        self.sync_backlog();
        ok
    }

    /// Linux v6.12 net/sched/sch_tbf.c: tbf_dequeue().
    fn dequeue(&mut self, now_ns: u64, dropped: &mut Vec<Packet>) -> Dequeue {
        let before = dropped.len();
        let head = self.peek(now_ns, dropped);
        let child_drops = (dropped.len() - before) as u64;
        if child_drops > 0 {
            self.stats.drops += child_drops;
            self.sync_backlog();
        }
        let len = match head {
            Head::Len(len) => len,
            Head::Wait(t) => return Dequeue::Wait(t),
            Head::Empty => return Dequeue::Empty,
        };
        let elapsed = now_ns.saturating_sub(self.t_c_ns).min(i64::MAX as u64) as i64;
        let mut toks = elapsed.min(self.buffer_ns);
        let mut ptoks = 0i64;
        if let Some(peak) = &self.peak {
            ptoks = (toks + self.ptokens_ns).min(self.mtu_ns);
            ptoks -= peak.l2t_ns(len) as i64;
        }
        toks = (toks + self.tokens_ns).min(self.buffer_ns);
        toks -= self.rate.l2t_ns(len) as i64;
        if (toks | ptoks) >= 0 {
            let (pkt, len) = self.take_head(now_ns, dropped);
            self.t_c_ns = now_ns;
            self.tokens_ns = toks;
            self.ptokens_ns = ptoks;
            self.sync_backlog();
            self.stats.sent_bytes += len as u64;
            self.stats.sent_packets += pkt.segs() as u64; // qdisc_bstats_update(): segments
            self.stats.sent_skbs += 1;
            return Dequeue::Packet(pkt, len);
        }
        // qdisc_watchdog_schedule_ns(now + max(-toks, -ptoks)); the head stays (no
        // reordering: "We MUST NOT reorder packets under these circumstances").
        self.stats.overlimits += 1;
        Dequeue::Wait(now_ns + (-toks).max(-ptoks) as u64)
    }

    fn stats(&self) -> &QdiscStats {
        &self.stats
    }

    fn for_each_packet(&self, f: &mut dyn FnMut(&Packet)) {
        if let Some((p, _)) = &self.held {
            f(p);
        }
        match &self.child {
            Child::Fifo(q) => q.for_each_packet(f),
            Child::Other(q) => q.for_each_packet(f),
        }
    }

    /// The child as `tc -s qdisc` shows it: a head dequeued ahead still counts in its
    /// backlog (qdisc_peek_dequeued() puts it back in the child's qlen and backlog).
    fn child(&self) -> Option<ChildStats> {
        let (kind, mut stats, xstats) = match &self.child {
            Child::Fifo(f) => (f.kind(), f.stats.clone(), Vec::new()),
            Child::Other(q) => (q.kind(), q.stats().clone(), q.xstats()),
        };
        if let Some((_, len)) = &self.held {
            stats.backlog_bytes += *len as u64;
            stats.backlog_packets += 1;
        }
        Some(ChildStats {
            qdisc: kind,
            stats,
            xstats,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::tx_time_ns;

    const MBIT: u64 = 1_000_000;
    const FRAME: u32 = ETH_FRAME_BYTES as u32;

    fn cfg(rate_bps: u64, burst_bytes: u64, limit_bytes: u64) -> TbfConfig {
        TbfConfig {
            rate_bps,
            burst_bytes,
            limit_bytes,
            peakrate_bps: None,
            mtu_bytes: None,
            child: None,
        }
    }

    fn pkt(seq: u64) -> Packet {
        Packet {
            seq,
            end_seq: seq + 1448,
            ip_bytes: 1500,
            ..Default::default()
        }
    }

    /// Drive `q` as a link of `line_bps` does (dequeue when the serializer is free, wait
    /// when told), from `start_ns` until empty: the departure time and length of each packet.
    fn drain(q: &mut dyn TimedQdisc, start_ns: u64, line_bps: u64) -> Vec<(u64, u32)> {
        let mut out = Vec::new();
        let mut dropped = Vec::new();
        let mut t = start_ns;
        loop {
            match q.dequeue(t, &mut dropped) {
                Dequeue::Packet(_, len) => {
                    out.push((t, len));
                    t += tx_time_ns(len as u64, line_bps);
                }
                Dequeue::Wait(w) => {
                    assert!(w > t, "wait {w} at {t}");
                    t = w;
                }
                Dequeue::Empty => return out,
            }
        }
    }

    fn fill(q: &mut dyn TimedQdisc, n: u64, now_ns: u64) -> u64 {
        let mut dropped = Vec::new();
        (0..n)
            .filter(|&i| q.enqueue(pkt(i * 1448), FRAME, now_ns, &mut dropped))
            .count() as u64
    }

    #[test]
    fn l2t_is_the_byte_time_at_the_rate() {
        for rate_bps in [8, 64_000, 10 * MBIT, 1_000 * MBIT, 100_000 * MBIT] {
            let r = RateCfg::from_bps(rate_bps);
            for len in [64u32, 1514, 65_536, 536_870_911] {
                let exact = len as f64 * 8e9 / (rate_bps / 8 * 8) as f64;
                let got = r.l2t_ns(len) as f64;
                // The reciprocal truncates: never above the exact time, and off by at most
                // one part in 2^30 (mult keeps 31 significant bits) plus a nanosecond.
                assert!(
                    got <= exact + 1e-6,
                    "rate {rate_bps} len {len}: {got} > {exact}"
                );
                assert!(
                    exact - got <= 1.0 + exact / (1u64 << 30) as f64,
                    "rate {rate_bps} len {len}: {got} vs {exact}"
                );
            }
        }
        // 10 Mbit/s = 1.25 MB/s: a 1514-byte frame takes 1211.2 us.
        assert_eq!(RateCfg::from_bps(10 * MBIT).l2t_ns(1514), 1_211_200);
    }

    #[test]
    fn a_burst_after_idle_passes_at_line_rate_up_to_burst_then_at_rate() {
        let rate_bps = 10 * MBIT;
        let line_bps = 1_000 * MBIT;
        let burst = 10 * ETH_FRAME_BYTES;
        let mut q = Tbf::new(&cfg(rate_bps, burst, 1 << 30));
        let t0 = 10_000_000_000; // long idle: the bucket is full
        let n = 40;
        assert_eq!(fill(&mut q, n, t0), n);
        let out = drain(&mut q, t0, line_bps);
        assert_eq!(out.len() as u64, n);
        let line_tx = tx_time_ns(ETH_FRAME_BYTES, line_bps);
        let rate_tx = RateCfg::from_bps(rate_bps).l2t_ns(FRAME);
        // The first burst / frame packets leave back to back at line rate.
        let in_burst = (burst / ETH_FRAME_BYTES) as usize;
        for (i, &(t, _)) in out.iter().take(in_burst).enumerate() {
            assert_eq!(t, t0 + i as u64 * line_tx, "packet {i} of the burst");
        }
        // TBF conformance (the definition atop sch_tbf.c): bytes sent by t_k never exceed
        // B + R (t_k - t_0), within the nanosecond rounding of the token arithmetic.
        let mut bytes = 0u64;
        for (i, &(t, len)) in out.iter().enumerate() {
            bytes += len as u64;
            let allowed = burst as f64 + (rate_bps / 8) as f64 * (t - t0) as f64 / 1e9;
            assert!(
                bytes as f64 <= allowed + 1.0,
                "packet {i} at {t}: {bytes} B > {allowed}"
            );
        }
        // Once the bucket is empty, packets leave exactly one frame time at `rate` apart.
        let gaps: Vec<u64> = out.windows(2).map(|w| w[1].0 - w[0].0).collect();
        let first_slow = gaps.iter().position(|&g| g > line_tx).unwrap();
        assert!(
            first_slow >= in_burst - 1 && first_slow <= in_burst + 1,
            "burst ended after {first_slow} gaps"
        );
        for (i, &g) in gaps.iter().enumerate().skip(first_slow + 1) {
            assert_eq!(g, rate_tx, "gap {i}");
        }
        // Overlimits: one per wait for tokens, no drops.
        assert_eq!(q.stats.drops, 0);
        assert_eq!(q.stats.overlimits, (gaps.len() - first_slow) as u64);
        assert_eq!(q.stats.sent_packets, n);
        assert_eq!(q.stats.backlog_packets, 0);
    }

    #[test]
    fn the_bucket_refills_at_rate_and_is_capped_at_burst() {
        let rate_bps = 10 * MBIT;
        let mut q = Tbf::new(&cfg(rate_bps, 4 * ETH_FRAME_BYTES, 1 << 30));
        let line_bps = 1_000 * MBIT;
        let line_tx = tx_time_ns(ETH_FRAME_BYTES, line_bps);
        // Empty the bucket.
        fill(&mut q, 4, 0);
        drain(&mut q, 0, line_bps);
        // Two frame times later, exactly two frames have tokens (a bucket of time).
        let rate_tx = q.rate().l2t_ns(FRAME);
        let t1 = 3 * line_tx + 2 * rate_tx;
        fill(&mut q, 3, t1);
        let out = drain(&mut q, t1, line_bps);
        assert_eq!(out[0].0, t1);
        assert_eq!(out[1].0, t1 + line_tx);
        assert!(
            out[2].0 > t1 + 2 * line_tx + rate_tx / 2,
            "third frame waited for tokens: {:?}",
            out
        );
    }

    #[test]
    fn limit_bounds_the_child_and_drops_are_apart_from_overlimits() {
        // A small limit: the default child is a bfifo of `limit` bytes (tbf_change()).
        let mut q = Tbf::new(&cfg(10 * MBIT, 2 * ETH_FRAME_BYTES, 3 * ETH_FRAME_BYTES));
        assert_eq!(q.child().unwrap().qdisc, "bfifo");
        assert_eq!(fill(&mut q, 5, 0), 3);
        assert_eq!(q.stats.drops, 2);
        let child = q.child().unwrap().stats;
        assert_eq!(
            child.drops, 2,
            "the child counts its own drops too, as tc -s shows"
        );
        assert_eq!(q.stats.backlog_bytes, 3 * ETH_FRAME_BYTES);
        assert_eq!(q.stats.overlimits, 0);
        drain(&mut q, 0, 1_000 * MBIT);
        assert!(q.stats.overlimits > 0);
        assert_eq!(q.stats.drops, 2);
        // A large limit: waiting for tokens never drops.
        let mut q = Tbf::new(&cfg(10 * MBIT, 2 * ETH_FRAME_BYTES, 1 << 30));
        assert_eq!(fill(&mut q, 50, 0), 50);
        drain(&mut q, 0, 1_000 * MBIT);
        assert_eq!(q.stats.drops, 0);
        assert!(q.stats.overlimits >= 48);
        assert_eq!(q.stats.sent_packets, 50);
    }

    #[test]
    fn a_packet_larger_than_the_bucket_is_dropped() {
        let mut q = Tbf::new(&cfg(10 * MBIT, 2000, 1 << 20));
        let mut dropped = Vec::new();
        assert!(!q.enqueue(pkt(0), 2001, 0, &mut dropped));
        assert!(q.enqueue(pkt(0), 2000, 0, &mut dropped));
        assert_eq!(q.stats.drops, 1);
        assert_eq!(
            q.child().unwrap().stats.drops,
            0,
            "dropped by tbf before the child"
        );
        // With a peak rate, the peak bucket (mtu) bounds the packet size too.
        let mut c = cfg(10 * MBIT, 100_000, 1 << 20);
        c.peakrate_bps = Some(20 * MBIT);
        c.mtu_bytes = Some(1600);
        let q = Tbf::new(&c);
        assert_eq!(q.max_size_bytes(), 1600);
    }

    #[test]
    fn with_a_peakrate_the_head_leaves_no_faster_than_peakrate() {
        let rate_bps = 10 * MBIT;
        let peak_bps = 25 * MBIT;
        let mut c = cfg(rate_bps, 20 * ETH_FRAME_BYTES, 1 << 30);
        c.peakrate_bps = Some(peak_bps);
        c.mtu_bytes = Some(ETH_FRAME_BYTES);
        let mut q = Tbf::new(&c);
        let t0 = 5_000_000_000;
        fill(&mut q, 40, t0);
        let out = drain(&mut q, t0, 1_000 * MBIT);
        assert_eq!(out.len(), 40);
        let peak_tx = RateCfg::from_bps(peak_bps).l2t_ns(FRAME);
        let rate_tx = RateCfg::from_bps(rate_bps).l2t_ns(FRAME);
        let gaps: Vec<u64> = out.windows(2).map(|w| w[1].0 - w[0].0).collect();
        for (i, &g) in gaps.iter().enumerate() {
            assert!(
                g >= peak_tx,
                "gap {i}: {g} ns < one frame at peakrate {peak_tx} ns"
            );
        }
        // While the rate bucket lasts the head leaves at peakrate; then at rate.
        assert_eq!(gaps[0], peak_tx);
        assert_eq!(*gaps.last().unwrap(), rate_tx);
        // Bytes by t_k <= mtu + P (t_k - t_0): the peak bucket's own conformance.
        let mut bytes = 0u64;
        for &(t, len) in &out {
            bytes += len as u64;
            let allowed = ETH_FRAME_BYTES as f64 + (peak_bps / 8) as f64 * (t - t0) as f64 / 1e9;
            assert!(bytes as f64 <= allowed + 1.0);
        }
    }

    #[test]
    fn queueing_delay_is_at_most_limit_over_rate() {
        // Packets arrive at twice the rate for a while; each one's time in tbf is at most
        // limit / rate = latency + burst / rate (tc's latency assumes a full bucket).
        let rate_bps = 10 * MBIT;
        let burst = 3 * ETH_FRAME_BYTES;
        let latency_us = 20_000u64;
        let limit = (rate_bps / 8) * latency_us / 1_000_000 + burst;
        let mut q = Tbf::new(&cfg(rate_bps, burst, limit));
        let line_bps = 1_000 * MBIT;
        let gap = tx_time_ns(ETH_FRAME_BYTES, rate_bps * 2);
        let mut dropped = Vec::new();
        let mut enq_at = std::collections::VecDeque::new();
        let mut max_delay = 0u64;
        let mut sent = 0;
        // A link as net/link.rs drives it: it asks when its serializer frees up or when
        // the qdisc said to wait, and at once after an enqueue if the serializer is free.
        let mut t_free = 0u64;
        let mut next_try: Option<u64> = None;
        let mut try_dequeue = |q: &mut Tbf,
                               t: u64,
                               t_free: &mut u64,
                               enq_at: &mut std::collections::VecDeque<(u64, u64)>|
         -> Option<u64> {
            match q.dequeue(t, &mut dropped) {
                Dequeue::Packet(p, len) => {
                    let (t_enq, seq) = enq_at.pop_front().unwrap();
                    assert_eq!(seq, p.seq);
                    max_delay = max_delay.max(t - t_enq);
                    sent += 1;
                    *t_free = t + tx_time_ns(len as u64, line_bps);
                    Some(*t_free)
                }
                Dequeue::Wait(w) => Some(w),
                Dequeue::Empty => None,
            }
        };
        for i in 0..2000u64 {
            let now = i * gap;
            while let Some(t) = next_try.filter(|&t| t <= now) {
                next_try = try_dequeue(&mut q, t, &mut t_free, &mut enq_at);
            }
            if q.enqueue(pkt(i * 1448), FRAME, now, &mut Vec::new()) {
                enq_at.push_back((now, i * 1448));
            }
            if t_free <= now {
                next_try = try_dequeue(&mut q, now, &mut t_free, &mut enq_at);
            }
        }
        while let Some(t) = next_try {
            next_try = try_dequeue(&mut q, t, &mut t_free, &mut enq_at);
        }
        assert!(q.stats.drops > 0, "the queue filled");
        assert_eq!(sent, q.stats.sent_packets);
        let bound = limit * 8 * 1_000_000_000 / rate_bps;
        assert!(
            max_delay <= bound,
            "max delay {max_delay} ns > limit/rate {bound} ns"
        );
        // ... and it is reached: a full child drains in about limit / rate.
        assert!(
            max_delay + 2 * q.rate().l2t_ns(FRAME) >= bound,
            "max delay {max_delay} ns, bound {bound} ns"
        );
    }

    #[test]
    fn a_timed_child_is_dequeued_ahead_and_held_in_tbf() {
        // tbf at 5 Mbit/s over a tbf child at 10 Mbit/s: the child hands its head over at
        // once (qdisc_peek_dequeued()), the outer tbf holds it until its own tokens allow.
        let mut c = cfg(5 * MBIT, ETH_FRAME_BYTES, 1 << 30);
        c.child = Some(Box::new(QueueConfig::Tbf(cfg(
            10 * MBIT,
            ETH_FRAME_BYTES,
            1 << 30,
        ))));
        let mut q = Tbf::new(&c);
        fill(&mut q, 3, 0);
        let mut dropped = Vec::new();
        assert!(matches!(q.dequeue(0, &mut dropped), Dequeue::Packet(..)));
        // The child's next head is dequeued ahead and held; the outer bucket is empty.
        assert!(matches!(
            q.dequeue(1_500_000, &mut dropped),
            Dequeue::Wait(_)
        ));
        assert!(q.held.is_some());
        assert_eq!(q.stats.backlog_packets, 2);
        let ChildStats {
            qdisc: kind,
            stats: child,
            ..
        } = q.child().unwrap();
        assert_eq!(kind, "tbf");
        assert_eq!(
            child.backlog_packets, 2,
            "the held head still counts in the child's backlog"
        );
        let mut n = 0;
        q.for_each_packet(&mut |_| n += 1);
        assert_eq!(n, 2);
        let out = drain(&mut q, 1_500_000, 1_000 * MBIT);
        assert_eq!(out.len(), 2);
        let slow = RateCfg::from_bps(5 * MBIT).l2t_ns(FRAME);
        assert_eq!(out[1].0 - out[0].0, slow);
        assert_eq!(q.stats.backlog_packets, 0);
        assert_eq!(q.stats.sent_packets, 3);
    }

    #[test]
    fn a_faster_outer_tbf_waits_for_its_slower_child() {
        // The child throttles (its watchdog): tbf passes the wait on, not an overlimit.
        let mut c = cfg(20 * MBIT, ETH_FRAME_BYTES, 1 << 30);
        c.child = Some(Box::new(QueueConfig::Tbf(cfg(
            5 * MBIT,
            ETH_FRAME_BYTES,
            1 << 30,
        ))));
        let mut q = Tbf::new(&c);
        fill(&mut q, 10, 0);
        let out = drain(&mut q, 0, 1_000 * MBIT);
        let slow = RateCfg::from_bps(5 * MBIT).l2t_ns(FRAME);
        for w in out.windows(2) {
            assert_eq!(w[1].0 - w[0].0, slow);
        }
        assert_eq!(q.stats.overlimits, 0);
        assert!(q.child().unwrap().stats.overlimits > 0);
    }

    #[test]
    fn validate_names_the_field_the_value_and_what_was_expected() {
        let ok = cfg(10 * MBIT, 10_000, 100_000);
        assert_eq!(validate(&ok, "links[0].queue"), Ok(()));
        let err = |c: TbfConfig| validate(&c, "links[0].queue").unwrap_err();

        let e = err(cfg(0, 10_000, 100_000));
        assert!(
            e.starts_with("links[0].queue.rate_bps: 0, expected a positive rate"),
            "{e}"
        );
        let e = err(cfg(10 * MBIT, 1513, 100_000));
        assert_eq!(
            e,
            "links[0].queue.burst_bytes: 1513, expected at least one MTU, 1514 bytes"
        );
        let e = err(cfg(10 * MBIT, 10_000, 0));
        assert!(
            e.starts_with("links[0].queue.limit_bytes: 0, expected 1 to"),
            "{e}"
        );

        let mut c = ok.clone();
        c.peakrate_bps = Some(20 * MBIT);
        let e = err(c.clone());
        assert!(
            e.starts_with("links[0].queue.mtu_bytes: missing, expected"),
            "{e}"
        );
        c.mtu_bytes = Some(1514);
        assert_eq!(validate(&c, "q"), Ok(()));
        c.peakrate_bps = Some(10 * MBIT);
        let e = err(c.clone());
        assert!(
            e.starts_with(
                "links[0].queue.peakrate_bps: 10000000, expected more than rate_bps 10000000"
            ),
            "{e}"
        );
        c.peakrate_bps = None;
        let e = err(c);
        assert!(
            e.starts_with("links[0].queue.mtu_bytes: 1514, expected no mtu without a peakrate"),
            "{e}"
        );

        let mut c = ok.clone();
        c.child = Some(Box::new(QueueConfig::Pfifo { limit_packets: 0 }));
        let e = err(c);
        assert!(
            e.starts_with("links[0].queue.child.limit_packets: 0"),
            "{e}"
        );
        for e in [err(cfg(0, 1, 0)), err(cfg(10 * MBIT, 1, 1))] {
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }
}
