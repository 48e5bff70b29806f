//! CoDel (Controlled Delay, Nichols and Jacobson 2012), as Linux runs it per flow inside
//! fq_codel: Linux v6.12 include/net/codel.h (types, clock) and include/net/codel_impl.h
//! (`codel_should_drop()`, `codel_dequeue()`, the control law).
//!
//! The model, in the kernel's words:
//!
//! - Every packet is stamped with the CoDel clock when it is enqueued; at dequeue its
//!   sojourn time (`ldelay`) is `now - enqueue time`.
//! - While the sojourn time stays at or above `target` (5 ms) and more than one MTU is
//!   queued, `first_above_time` remembers when that began (plus `interval`); once a packet
//!   is dequeued strictly after `first_above_time`, CoDel enters the **dropping** state and
//!   drops that packet.
//! - In the dropping state the next drop is due at `drop_next`, which advances by the
//!   **control law** `interval / sqrt(count)` after each drop, `count` being the number of
//!   drops since the state was entered. `1/sqrt(count)` is kept as a Q0.16 fixed-point
//!   `rec_inv_sqrt`, refined by one Newton step per drop (`codel_Newton_step()`), so the
//!   spacing follows the Newton iterate, not the exact square root (the first steps are
//!   coarse: after `count` = 2 the factor is 0.5, not 0.707; it converges within a few
//!   drops).
//! - A packet below target (or a backlog of at most one MTU) leaves the dropping state.
//!   Re-entering soon after (within 16 intervals of the last `drop_next`) restarts
//!   `count` from the drops of the last cycle (`count - lastcount`), not from 1.
//!
//! Time is the kernel's: a u32 clock of 1024-ns ticks (`CODEL_SHIFT` 10), compared with
//! wrap-around arithmetic (`codel_time_after()`), so the rounding of target, interval and
//! drop times is Linux's.
//!
//! ECN: when `ecn` is on (fq_codel's default), a packet the control law picks is marked CE
//! instead of dropped if it is ECN-capable (`INET_ECN_set_ce()`, counted in `ecn_mark`);
//! a not-ECT packet is dropped as before. Independently, `ce_threshold` (off by default)
//! marks every ECN-capable packet whose sojourn exceeds it as it leaves (`codel_dequeue()`'s
//! `end:`, counted in `ce_mark`), the step marking DCTCP deployments configure; tcplab has
//! no `ce_threshold_selector`/mask (every packet is eligible).

/// `codel_time_t`: 1024-ns ticks in a u32.
pub type CodelTime = u32;

/// `CODEL_SHIFT`: the CoDel clock counts 2^10 ns ticks.
pub const CODEL_SHIFT: u32 = 10;

/// `REC_INV_SQRT_SHIFT`: `rec_inv_sqrt` is a u16 holding the top bits of a Q0.32 number.
const REC_INV_SQRT_SHIFT: u32 = 32 - 16;

/// The CoDel clock at `now_ns` (`codel_get_time()`: `ktime_get_ns() >> CODEL_SHIFT`).
#[inline]
pub fn codel_time(now_ns: u64) -> CodelTime {
    (now_ns >> CODEL_SHIFT) as u32
}

/// A duration in ns as CoDel ticks (the kernel converts tc's microseconds the same way:
/// `(us * NSEC_PER_USEC) >> CODEL_SHIFT`).
#[inline]
pub fn codel_duration(ns: u64) -> CodelTime {
    (ns >> CODEL_SHIFT) as u32
}

/// CoDel ticks back to ns.
#[inline]
pub fn codel_to_ns(t: CodelTime) -> u64 {
    (t as u64) << CODEL_SHIFT
}

/// `codel_time_after(a, b)`: a is after b (RFC 1982 serial arithmetic).
#[inline]
pub fn time_after(a: CodelTime, b: CodelTime) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// `codel_time_after_eq(a, b)`.
#[inline]
pub fn time_after_eq(a: CodelTime, b: CodelTime) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}

/// `codel_time_before(a, b)`.
#[inline]
pub fn time_before(a: CodelTime, b: CodelTime) -> bool {
    time_after(b, a)
}

/// `struct codel_params`.
#[derive(Clone, Copy, Debug)]
pub struct CodelParams {
    pub target: CodelTime,
    pub interval: CodelTime,
    /// Backlog (bytes) at or below which CoDel never drops: the device's `psched_mtu()`.
    pub mtu_bytes: u32,
    pub ecn: bool,
    /// `ce_threshold` in CoDel ticks; [`CODEL_DISABLED_THRESHOLD`] = off.
    pub ce_threshold: CodelTime,
}

/// `CODEL_DISABLED_THRESHOLD` (INT_MAX): no sojourn is after it.
pub const CODEL_DISABLED_THRESHOLD: CodelTime = i32::MAX as u32;

/// `struct codel_vars`: one per fq_codel flow.
#[derive(Clone, Copy, Debug, Default)]
pub struct CodelVars {
    /// Drops since the dropping state was entered.
    pub count: u32,
    /// `count` when the dropping state was last entered.
    pub lastcount: u32,
    pub dropping: bool,
    /// 1/sqrt(count) in Q0.16.
    pub rec_inv_sqrt: u16,
    /// When the sojourn time went (or will have gone) above target for an interval; 0 = below.
    pub first_above_time: CodelTime,
    /// When the next drop is due (or when the last one happened).
    pub drop_next: CodelTime,
    /// Sojourn time of the last dequeued packet.
    pub ldelay: CodelTime,
}

/// `struct codel_stats`, shared by all flows of a qdisc.
#[derive(Clone, Copy, Debug, Default)]
pub struct CodelStats {
    /// Largest packet seen at dequeue (bytes).
    pub maxpacket: u32,
    /// Packets dropped by the control law (cumulative here; Linux keeps a per-dequeue
    /// temporary for `qdisc_tree_reduce_backlog()`, which tcplab has no parent to tell).
    pub drop_count: u64,
    /// Packets ECN-marked instead of dropped.
    pub ecn_mark: u64,
    /// Packets marked CE for a sojourn above `ce_threshold`.
    pub ce_mark: u64,
}

/// The queue CoDel pulls from and drops into (`dequeue_func` and `drop_func` in Linux).
pub trait CodelQueue {
    type Item;
    /// Take the head packet off the queue (backlogs reduced), if any.
    fn dequeue(&mut self) -> Option<Self::Item>;
    /// Free a packet CoDel decided to drop (counted as a qdisc drop).
    fn drop(&mut self, item: Self::Item);
    /// `qdisc_pkt_len()`.
    fn len_bytes(item: &Self::Item) -> u32;
    /// `codel_get_enqueue_time()`.
    fn enqueue_time(item: &Self::Item) -> CodelTime;
    /// The whole qdisc's backlog in bytes (`sch->qstats.backlog`), after the dequeue.
    fn backlog_bytes(&self) -> u64;
    /// `INET_ECN_set_ce()`: mark the packet CE if it is ECN-capable; false if not-ECT.
    fn set_ce(item: &mut Self::Item) -> bool;
}

#[inline]
fn inet_ecn_set_ce<Q: CodelQueue>(item: &mut Q::Item) -> bool {
    Q::set_ce(item)
}

/// `codel_Newton_step()`: one Newton iteration of 1/sqrt(count) in fixed point,
/// `new = (invsqrt / 2) * (3 - count * invsqrt^2)`, with the kernel's truncations.
#[inline]
pub fn newton_step(vars: &mut CodelVars) {
    let invsqrt = (vars.rec_inv_sqrt as u32) << REC_INV_SQRT_SHIFT;
    let invsqrt2 = ((invsqrt as u64 * invsqrt as u64) >> 32) as u32;
    let mut val = (3u64 << 32).wrapping_sub(vars.count as u64 * invsqrt2 as u64);
    val >>= 2; // avoid overflow in the multiply below
    val = val.wrapping_mul(invsqrt as u64) >> (32 - 2 + 1);
    vars.rec_inv_sqrt = (val >> REC_INV_SQRT_SHIFT) as u16;
}

/// `codel_control_law()`: `t + interval / sqrt(count)`, as
/// `t + reciprocal_scale(interval, rec_inv_sqrt << REC_INV_SQRT_SHIFT)`.
#[inline]
pub fn control_law(t: CodelTime, interval: CodelTime, rec_inv_sqrt: u16) -> CodelTime {
    let scale = (rec_inv_sqrt as u32) << REC_INV_SQRT_SHIFT;
    t.wrapping_add(((interval as u64 * scale as u64) >> 32) as u32)
}

/// `codel_should_drop()`: whether the packet just dequeued (`item`) may be dropped, updating
/// `ldelay`, `maxpacket` and `first_above_time`.
#[inline]
fn should_drop<Q: CodelQueue>(
    q: &Q,
    item: Option<&Q::Item>,
    vars: &mut CodelVars,
    params: &CodelParams,
    stats: &mut CodelStats,
    now: CodelTime,
) -> bool {
    let Some(item) = item else {
        vars.first_above_time = 0;
        return false;
    };
    let len = Q::len_bytes(item);
    vars.ldelay = now.wrapping_sub(Q::enqueue_time(item));
    if len > stats.maxpacket {
        stats.maxpacket = len;
    }
    if time_before(vars.ldelay, params.target) || q.backlog_bytes() <= params.mtu_bytes as u64 {
        // Went below: stay below for at least an interval.
        vars.first_above_time = 0;
        return false;
    }
    if vars.first_above_time == 0 {
        // Just went above: if we stay above for an interval, dropping is allowed.
        vars.first_above_time = now.wrapping_add(params.interval);
        false
    } else {
        time_after(now, vars.first_above_time)
    }
}

/// `codel_dequeue()`: the next packet CoDel lets through from `q` at CoDel time `now`,
/// dropping (into `q.drop`) or marking what the control law says, then marking it CE if
/// its sojourn is above `ce_threshold` (the function's `end:`).
pub fn codel_dequeue<Q: CodelQueue>(
    q: &mut Q,
    params: &CodelParams,
    vars: &mut CodelVars,
    stats: &mut CodelStats,
    now: CodelTime,
) -> Option<Q::Item> {
    let mut out = control_law_dequeue(q, params, vars, stats, now)?;
    if time_after(vars.ldelay, params.ce_threshold) && inet_ecn_set_ce::<Q>(&mut out) {
        stats.ce_mark += 1;
    }
    Some(out)
}

/// `codel_dequeue()` up to its `end:` label.
#[inline]
fn control_law_dequeue<Q: CodelQueue>(
    q: &mut Q,
    params: &CodelParams,
    vars: &mut CodelVars,
    stats: &mut CodelStats,
    now: CodelTime,
) -> Option<Q::Item> {
    let Some(mut item) = q.dequeue() else {
        vars.dropping = false;
        return None;
    };
    let drop = should_drop(q, Some(&item), vars, params, stats, now);
    if vars.dropping {
        if !drop {
            // Sojourn time below target: leave the dropping state.
            vars.dropping = false;
            return Some(item);
        }
        if !time_after_eq(now, vars.drop_next) {
            return Some(item);
        }
        // Time for the next drop: drop this packet and take the next one; that may end the
        // dropping state, or the next drop may be due at once (a large backlog), hence the
        // loop. The loop only runs with a packet in hand: an empty queue ends the state.
        let mut cur = Some(item);
        while vars.dropping && time_after_eq(now, vars.drop_next) {
            let Some(mut it) = cur.take() else { break };
            vars.count = vars.count.wrapping_add(1); // no divide, so wrap is harmless
            newton_step(vars);
            if params.ecn && inet_ecn_set_ce::<Q>(&mut it) {
                stats.ecn_mark += 1;
                vars.drop_next = control_law(vars.drop_next, params.interval, vars.rec_inv_sqrt);
                return Some(it);
            }
            q.drop(it);
            stats.drop_count += 1;
            cur = q.dequeue();
            if !should_drop(q, cur.as_ref(), vars, params, stats, now) {
                vars.dropping = false; // leave the dropping state
            } else {
                vars.drop_next = control_law(vars.drop_next, params.interval, vars.rec_inv_sqrt);
            }
        }
        return cur;
    }
    if !drop {
        return Some(item);
    }
    // Enter the dropping state: drop (or mark) this packet.
    let cur = if params.ecn && inet_ecn_set_ce::<Q>(&mut item) {
        stats.ecn_mark += 1;
        Some(item)
    } else {
        q.drop(item);
        stats.drop_count += 1;
        let next = q.dequeue();
        // Linux recomputes `drop` here; only its effect on the flow's state matters.
        should_drop(q, next.as_ref(), vars, params, stats, now);
        next
    };
    vars.dropping = true;
    // If the sojourn went above target soon after it last went below, the drop rate that
    // controlled the queue on the last cycle is a good starting point.
    let delta = vars.count.wrapping_sub(vars.lastcount);
    if delta > 1
        && time_before(
            now.wrapping_sub(vars.drop_next),
            params.interval.wrapping_mul(16),
        )
    {
        vars.count = delta;
        // Coarse, but the next Newton steps correct it quadratically.
        newton_step(vars);
    } else {
        vars.count = 1;
        vars.rec_inv_sqrt = (!0u32 >> REC_INV_SQRT_SHIFT) as u16;
    }
    vars.lastcount = vars.count;
    vars.drop_next = control_law(now, params.interval, vars.rec_inv_sqrt);
    cur
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newton_iterate_converges_to_the_reciprocal_square_root() {
        // Drive the fixed-point iterate as the dropping state does (count 1, 2, 3, ...)
        // and compare with the same recurrence in floating point, then with 1/sqrt(n)
        // once it has converged.
        let mut v = CodelVars {
            count: 1,
            rec_inv_sqrt: (!0u32 >> REC_INV_SQRT_SHIFT) as u16,
            ..Default::default()
        };
        let mut r = 1.0f64;
        for n in 2..=200u32 {
            v.count = n;
            newton_step(&mut v);
            r = r / 2.0 * (3.0 - n as f64 * r * r);
            let got = v.rec_inv_sqrt as f64 / 65536.0;
            assert!(
                (got - r).abs() < 2e-3,
                "count {n}: fixed point {got} vs float Newton {r}"
            );
            if n >= 10 {
                let exact = 1.0 / (n as f64).sqrt();
                assert!(
                    (got - exact).abs() / exact < 0.02,
                    "count {n}: {got} vs 1/sqrt = {exact}"
                );
            }
        }
    }

    /// A bare queue of (length, enqueue time) for driving `codel_dequeue()` directly.
    #[derive(Default)]
    struct Mock {
        items: std::collections::VecDeque<(u32, CodelTime)>,
        backlog: u64,
        drops: u32,
    }

    impl Mock {
        fn refill(&mut self, n: usize, enq: CodelTime) {
            self.items.clear();
            self.backlog = 0;
            for _ in 0..n {
                self.items.push_back((1514, enq));
                self.backlog += 1514;
            }
        }
    }

    impl CodelQueue for Mock {
        type Item = (u32, CodelTime);
        fn dequeue(&mut self) -> Option<Self::Item> {
            let it = self.items.pop_front()?;
            self.backlog -= it.0 as u64;
            Some(it)
        }
        fn drop(&mut self, _item: Self::Item) {
            self.drops += 1;
        }
        fn len_bytes(item: &Self::Item) -> u32 {
            item.0
        }
        fn enqueue_time(item: &Self::Item) -> CodelTime {
            item.1
        }
        fn backlog_bytes(&self) -> u64 {
            self.backlog
        }
        fn set_ce(_item: &mut Self::Item) -> bool {
            false
        }
    }

    fn params() -> CodelParams {
        CodelParams {
            target: codel_duration(5_000_000),
            interval: codel_duration(100_000_000),
            mtu_bytes: 1514,
            ecn: false,
            ce_threshold: CODEL_DISABLED_THRESHOLD,
        }
    }

    /// Dequeue every `step` ticks from `*now` with a standing queue (head enqueued at
    /// `now - 1 s`) until `count` reaches `until`; returns with `*now` advanced.
    fn stand(
        q: &mut Mock,
        vars: &mut CodelVars,
        stats: &mut CodelStats,
        now: &mut CodelTime,
        until: u32,
    ) {
        let p = params();
        let mut guard = 0;
        while !(vars.dropping && vars.count >= until) {
            if q.items.len() < 10 {
                q.refill(1000, now.wrapping_sub(codel_duration(1_000_000_000)));
            }
            codel_dequeue(q, &p, vars, stats, *now);
            *now = now.wrapping_add(1000);
            guard += 1;
            assert!(guard < 100_000, "never reached count {until}");
        }
    }

    /// One dequeue of a fresh packet (sojourn 0): leaves the dropping state.
    fn below(q: &mut Mock, vars: &mut CodelVars, stats: &mut CodelStats, now: &mut CodelTime) {
        q.refill(10, *now);
        codel_dequeue(q, &params(), vars, stats, *now);
        assert!(!vars.dropping);
        *now = now.wrapping_add(1000);
    }

    #[test]
    fn reentering_soon_resumes_from_the_last_cycles_drop_count() {
        // codel_dequeue(): entering the dropping state within 16 intervals of the last
        // drop_next sets count = count - lastcount (the drops of the last cycle) when that
        // is above 1; later, or after a short cycle, count restarts at 1.
        let (mut q, mut vars, mut stats) =
            (Mock::default(), CodelVars::default(), CodelStats::default());
        let mut now: CodelTime = 1_000_000;
        stand(&mut q, &mut vars, &mut stats, &mut now, 1);
        assert_eq!((vars.count, vars.lastcount), (1, 1));
        stand(&mut q, &mut vars, &mut stats, &mut now, 6);
        let count = vars.count;
        below(&mut q, &mut vars, &mut stats, &mut now);
        // Above target again at once: entry after one interval, well within 16 intervals.
        let before = q.drops;
        stand(&mut q, &mut vars, &mut stats, &mut now, 1);
        assert_eq!(
            vars.count,
            count - 1,
            "count restarts from the last cycle's drops"
        );
        assert_eq!(vars.lastcount, count - 1);
        assert_eq!(q.drops, before + 1, "entering the state drops one packet");

        // Now leave and stay below for 20 intervals: the next entry restarts at 1.
        stand(&mut q, &mut vars, &mut stats, &mut now, count + 2);
        below(&mut q, &mut vars, &mut stats, &mut now);
        now = now.wrapping_add(20 * params().interval);
        stand(&mut q, &mut vars, &mut stats, &mut now, 1);
        assert_eq!((vars.count, vars.lastcount), (1, 1));
        assert_eq!(stats.drop_count, q.drops as u64);
    }

    #[test]
    fn control_law_scales_the_interval() {
        let interval = codel_duration(100_000_000);
        // rec_inv_sqrt = 0x8000 is 0.5: half an interval later.
        assert_eq!(control_law(1000, interval, 0x8000), 1000 + interval / 2);
        // Wraps like the kernel's u32 clock.
        assert_eq!(control_law(u32::MAX, interval, 0x8000), (interval / 2) - 1);
    }

    #[test]
    fn serial_comparisons_survive_wrap() {
        assert!(time_after(5, u32::MAX - 5));
        assert!(time_before(u32::MAX - 5, 5));
        assert!(time_after_eq(7, 7));
        assert!(!time_after(7, 7));
    }
}
