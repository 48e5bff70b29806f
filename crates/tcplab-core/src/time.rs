//! Simulated time.
//!
//! The engine keeps time as integer nanoseconds since the start of the run (`u64`, good
//! for 584 years). The Linux code paths that tcplab follows use three clocks, and the
//! helpers here derive them from the nanosecond clock exactly as the kernel does:
//!
//! - `tcp_clock_ns()` / `tcp_clock_cache`: nanoseconds (EDT, pacing, fq);
//! - `tcp_mstamp`: microseconds (RTT samples, delivery-rate sampling);
//! - `jiffies`: ticks of `1/HZ` second (RTO, delayed ACK, CUBIC epochs, BBR's min_rtt
//!   window). `HZ` is a property of each host's kernel build (`hz` in the host config):
//!   250 as Debian builds its kernels (CONFIG_HZ_250, the default here), 1000 as Fedora and
//!   RHEL do, 100 on some servers. Every helper below takes the host's `hz`. Only values
//!   that divide 1000 are accepted (100, 250, 1000), so that every conversion is exact
//!   integer arithmetic, as the kernel's are for those values (CONFIG_HZ_300 is not offered).
//!
//! A leaf. Imports: nothing of the crate.

/// Nanoseconds per microsecond / millisecond / second.
pub const NSEC_PER_USEC: u64 = 1_000;
pub const NSEC_PER_MSEC: u64 = 1_000_000;
pub const NSEC_PER_SEC: u64 = 1_000_000_000;
pub const USEC_PER_MSEC: u64 = 1_000;
pub const USEC_PER_SEC: u64 = 1_000_000;

/// Default kernel tick rate of a host (Debian's CONFIG_HZ_250; see module docs).
pub const DEFAULT_HZ: u32 = 250;

/// The `CONFIG_HZ` values a host may have.
pub const SUPPORTED_HZ: [u32; 3] = [100, 250, 1000];

/// Engine time of the scenario's t = 0: the engine's clock starts at 1 s rather than 0,
/// because Linux's TCP reads a zero timestamp as "unset" (`tcp_mstamp`, `epoch_start`,
/// `delivered_mstamp`); a real host's clock is never 0. Times reported to callers are
/// relative to it.
pub const BOOT_NS: u64 = 1_000_000_000;

/// A time that never comes: used for "timer not armed".
pub const NEVER: u64 = u64::MAX;

/// Latest time the engine computes (2^62 ns, 146 years): sums of times saturate here, far
/// beyond any run's end (configured times are bounded to a year, `config::MAX_DURATION_NS`)
/// and below [`NEVER`], so an overflow can only push an event past the end, never wrap it
/// to the past.
pub const MAX_TIME_NS: u64 = 1 << 62;

/// `t + d` on the simulated clock, saturating at [`MAX_TIME_NS`].
#[inline]
pub fn time_add(t: u64, d: u64) -> u64 {
    t.saturating_add(d).min(MAX_TIME_NS)
}

/// `tcp_mstamp`-style microsecond clock from nanoseconds (truncating, as `div_u64`).
#[inline]
pub fn ns_to_us(ns: u64) -> u64 {
    ns / NSEC_PER_USEC
}

/// `tcp_jiffies32` from nanoseconds at `hz` ticks per second (wraps like the kernel's
/// u32 jiffies).
#[inline]
pub fn ns_to_jiffies32(ns: u64, hz: u32) -> u32 {
    (ns / (NSEC_PER_SEC / hz as u64)) as u32
}

/// `usecs_to_jiffies()`: rounds up, as the kernel does for HZ dividing 1e6.
#[inline]
pub fn usecs_to_jiffies(us: u64, hz: u32) -> u32 {
    let per = USEC_PER_SEC / hz as u64;
    us.div_ceil(per) as u32
}

/// `msecs_to_jiffies()`: rounds up (identity at HZ=1000).
#[inline]
pub fn msecs_to_jiffies(ms: u32, hz: u32) -> u32 {
    ((ms as u64 * hz as u64).div_ceil(1000)) as u32
}

/// `jiffies_to_usecs()`.
#[inline]
pub fn jiffies_to_usecs(j: u32, hz: u32) -> u64 {
    j as u64 * (USEC_PER_SEC / hz as u64)
}

/// Jiffies to nanoseconds (for arming engine timers from kernel jiffy timeouts).
#[inline]
pub fn jiffies_to_ns(j: u32, hz: u32) -> u64 {
    j as u64 * (NSEC_PER_SEC / hz as u64)
}

/// When a kernel timer armed at `now_ns` for `when` jiffies (`jiffies + when`) fires:
/// at the start of tick `jiffies + when`, so 0 to 1 jiffy earlier than `now + when`.
/// (The timer wheel's coarser levels, which round long timeouts up by up to 1/8, are
/// not modelled.)
#[inline]
pub fn jiffy_timer_deadline_ns(now_ns: u64, when: u32, hz: u32) -> u64 {
    let tick_ns = NSEC_PER_SEC / hz as u64;
    ((now_ns / tick_ns + when as u64) * tick_ns).max(now_ns)
}

/// A host's jiffy clock: the conversions above at one fixed `hz`, with the divisions by the
/// tick length precomputed (strength-reduced to a multiplication and shifts). TCP converts
/// between jiffies and ns/us several times per ACK (timer deadlines, RTO and loss-probe
/// timeouts); a division by a run-time value costs tens of cycles each, which was 15-20 %
/// of the engine's time on sub-millisecond paths. Results are identical to the free
/// functions (tested below).
#[derive(Clone, Copy, Debug)]
pub struct JiffyClock {
    hz: u32,
    tick_ns: u64,
    tick_us: u64,
    div_tick_ns: strength_reduce::StrengthReducedU64,
    div_tick_us: strength_reduce::StrengthReducedU64,
}

impl JiffyClock {
    /// The clock of a kernel built with `CONFIG_HZ = hz` (`hz` divides 10^6; see module docs).
    pub fn new(hz: u32) -> JiffyClock {
        assert!(
            hz > 0 && USEC_PER_SEC % hz as u64 == 0,
            "HZ {hz} does not divide 10^6"
        );
        let tick_ns = NSEC_PER_SEC / hz as u64;
        let tick_us = USEC_PER_SEC / hz as u64;
        JiffyClock {
            hz,
            tick_ns,
            tick_us,
            div_tick_ns: strength_reduce::StrengthReducedU64::new(tick_ns),
            div_tick_us: strength_reduce::StrengthReducedU64::new(tick_us),
        }
    }

    /// `HZ`.
    #[inline]
    pub fn hz(&self) -> u32 {
        self.hz
    }

    /// [`ns_to_jiffies32`].
    #[inline]
    pub fn ns_to_jiffies32(&self, ns: u64) -> u32 {
        (ns / self.div_tick_ns) as u32
    }

    /// [`usecs_to_jiffies`] (rounds up).
    #[inline]
    pub fn usecs_to_jiffies(&self, us: u64) -> u32 {
        let q = us / self.div_tick_us;
        (q + u64::from(q * self.tick_us != us)) as u32
    }

    /// [`msecs_to_jiffies`] (rounds up).
    #[inline]
    pub fn msecs_to_jiffies(&self, ms: u32) -> u32 {
        self.usecs_to_jiffies(ms as u64 * USEC_PER_MSEC)
    }

    /// [`jiffies_to_usecs`].
    #[inline]
    pub fn jiffies_to_usecs(&self, j: u32) -> u64 {
        j as u64 * self.tick_us
    }

    /// [`jiffies_to_ns`].
    #[inline]
    pub fn jiffies_to_ns(&self, j: u32) -> u64 {
        j as u64 * self.tick_ns
    }

    /// [`jiffy_timer_deadline_ns`].
    #[inline]
    pub fn timer_deadline_ns(&self, now_ns: u64, when: u32) -> u64 {
        ((now_ns / self.div_tick_ns + when as u64) * self.tick_ns).max(now_ns)
    }
}

impl Default for JiffyClock {
    fn default() -> JiffyClock {
        JiffyClock::new(DEFAULT_HZ)
    }
}

/// Serialization time of `bytes` at `rate_bps`, rounded up to the next nanosecond.
#[inline]
pub fn tx_time_ns(bytes: u64, rate_bps: u64) -> u64 {
    debug_assert!(rate_bps > 0);
    // 64-bit arithmetic is exact up to 2.3 GB per packet; fall back to 128 bits beyond.
    if bytes < (u64::MAX / (8 * NSEC_PER_SEC)) {
        (bytes * 8 * NSEC_PER_SEC).div_ceil(rate_bps)
    } else {
        ((bytes as u128 * 8 * NSEC_PER_SEC as u128).div_ceil(rate_bps as u128)) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jiffies_round_up_like_the_kernel() {
        assert_eq!(usecs_to_jiffies(1, 1000), 1);
        assert_eq!(usecs_to_jiffies(1000, 1000), 1);
        assert_eq!(usecs_to_jiffies(1001, 1000), 2);
        assert_eq!(jiffies_to_usecs(200, 1000), 200_000);
        assert_eq!(ns_to_jiffies32(2_999_999, 1000), 2);
    }

    #[test]
    fn jiffies_follow_hz() {
        // One jiffy is 1/HZ s: 4 ms at HZ=250, 10 ms at HZ=100.
        assert_eq!(usecs_to_jiffies(1, 250), 1);
        assert_eq!(usecs_to_jiffies(4000, 250), 1);
        assert_eq!(usecs_to_jiffies(4001, 250), 2);
        assert_eq!(msecs_to_jiffies(200, 250), 50);
        assert_eq!(msecs_to_jiffies(1, 250), 1);
        assert_eq!(jiffies_to_usecs(50, 250), 200_000);
        assert_eq!(ns_to_jiffies32(7_999_999, 250), 1);
        assert_eq!(ns_to_jiffies32(8_000_000, 250), 2);
        assert_eq!(msecs_to_jiffies(200, 100), 20);
        for hz in SUPPORTED_HZ {
            assert_eq!(NSEC_PER_SEC % hz as u64, 0);
            assert_eq!(jiffies_to_ns(hz, hz), NSEC_PER_SEC);
        }
    }

    #[test]
    fn the_jiffy_clock_computes_what_the_free_functions_do() {
        let values = [
            0u64,
            1,
            999,
            1000,
            1001,
            3999,
            4000,
            4001,
            9_999_999,
            10_000_000,
            123_456_789_012,
            u32::MAX as u64,
        ];
        for hz in SUPPORTED_HZ {
            let c = JiffyClock::new(hz);
            assert_eq!(c.hz(), hz);
            for &v in &values {
                assert_eq!(
                    c.ns_to_jiffies32(v),
                    ns_to_jiffies32(v, hz),
                    "ns {v} at HZ {hz}"
                );
                assert_eq!(
                    c.usecs_to_jiffies(v),
                    usecs_to_jiffies(v, hz),
                    "us {v} at HZ {hz}"
                );
                let j = (v % (1 << 31)) as u32;
                assert_eq!(
                    c.msecs_to_jiffies(j % 1_000_000),
                    msecs_to_jiffies(j % 1_000_000, hz)
                );
                assert_eq!(c.jiffies_to_usecs(j), jiffies_to_usecs(j, hz));
                assert_eq!(c.jiffies_to_ns(j), jiffies_to_ns(j, hz));
                assert_eq!(c.timer_deadline_ns(v, 3), jiffy_timer_deadline_ns(v, 3, hz));
            }
        }
    }

    #[test]
    fn jiffy_timers_fire_on_tick_boundaries() {
        // Armed 1 ms into a 4 ms tick for 2 jiffies: fires at the start of tick +2.
        assert_eq!(jiffy_timer_deadline_ns(5_000_000, 2, 250), 12_000_000);
        // Armed exactly on a tick: a full `when` later.
        assert_eq!(jiffy_timer_deadline_ns(8_000_000, 2, 250), 16_000_000);
        assert_eq!(jiffy_timer_deadline_ns(5_000_000, 2, 1000), 7_000_000);
    }

    #[test]
    fn time_sums_saturate_instead_of_wrapping() {
        // Issue 7 item 2.4: a delay near u64::MAX used to wrap the arrival time into the past.
        let delay = 18_446_744_073 * NSEC_PER_SEC;
        assert_eq!(time_add(NSEC_PER_SEC, delay), MAX_TIME_NS);
        assert!(time_add(u64::MAX - 1, u64::MAX) < NEVER);
        assert_eq!(time_add(5, 7), 12);
    }

    #[test]
    fn serialization_time() {
        // 1500 bytes at 1 Gbit/s = 12 us.
        assert_eq!(tx_time_ns(1500, 1_000_000_000), 12_000);
        // 1514 bytes at 5 Mbit/s = 2.4224 ms.
        assert_eq!(tx_time_ns(1514, 5_000_000), 2_422_400);
    }
}
