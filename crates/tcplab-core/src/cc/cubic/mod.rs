//! CUBIC congestion control with HyStart, ported from Linux v6.12 `net/ipv4/tcp_cubic.c`.
//!
//! # Model
//!
//! After a congestion event at window `W_max`, the window follows a cubic function of the
//! time `t` since the start of the epoch (the first ACK in congestion avoidance):
//!
//! ```text
//!     W(t) = C·(t − K)³ + W_max,        K = cbrt(W_max·(1 − β) / C)
//! ```
//!
//! so it restarts at `β·W_max`, grows fast and then flattens (concave) to a plateau at
//! `W_max` reached at `t = K`, then probes beyond it ever faster (convex).
//!
//! - `β = beta / 1024 = 717/1024 ≈ 0.7`: multiplicative decrease (`ssthresh = β·cwnd`).
//! - `C = bic_scale·10 / 1024 ≈ 0.4` packets/s³. The kernel folds `C` into two integer
//!   constants: `cube_rtt_scale = bic_scale·10` (`C` × 2^10) and
//!   `cube_factor = 2^40 / cube_rtt_scale` (`1/C` × 2^30, so `cbrt` yields `K` × 2^10).
//! - Fast convergence: a loss below the previous `W_max` sets
//!   `W_max = cwnd·(1 + β)/2`, releasing bandwidth to newer flows.
//! - Reno-friendly region (`tcp_friendliness`): an estimate of a Reno flow with the same
//!   `β` grows `3(1 − β)/(1 + β) ≈ 0.53` packet per RTT; cwnd never grows slower than it.
//!   With small windows or short RTTs the cubic curve is slower and this region rules.
//! - Before any loss (`W_max = 0`) growth is at least 5% per RTT; it is never more than
//!   50% per RTT (one packet per two ACKed).
//! - HyStart (in slow start; rounds are tracked from the first ACK, the checks run once
//!   `cwnd >= hystart_low_window`): leave slow start
//!   (`ssthresh = cwnd`) when either the ACK train of a round (ACKs at most
//!   `hystart_ack_delta_us` apart) spans more than the minimum RTT (half of it when not
//!   paced), or the minimum of the round's first 8 RTT samples exceeds
//!   `delay_min + clamp(delay_min/8, 4 ms, 16 ms)`.
//!
//! # Units and fixed point
//!
//! `snd_cwnd`, `last_max_cwnd`, `bic_origin_point`, `tcp_cwnd`: packets. `epoch_start`,
//! `last_time`: jiffies (`tcp_jiffies32`, at the host's HZ). `delay_min`, `curr_rtt`: µs.
//! `round_start`, `last_ack`: µs, the low 32 bits of `tcp_mstamp` (as the kernel's u32
//! fields). `bic_K` and the time `t` of the cubic function: 2^-10 s (`BICTCP_HZ`).
//! All arithmetic is the kernel's integer arithmetic, including u32 wraparound.
//!
//! # Where tcplab differs
//!
//! - Sequence numbers are 64-bit byte offsets, so `end_seq` is a `u64` and the kernel's
//!   `after(snd_una, end_seq)` is `snd_una > end_seq`.
//! - Module parameters come per flow from [`CcParams`] instead of per host; the scale
//!   factors the kernel precomputes at module load are computed in [`Cubic::new`].
//! - `get_info` reports `last_max_cwnd` for tcplab's time series (the kernel's CUBIC has
//!   no `.get_info`).
//! - The Reno-estimate loop in `bictcp_update` takes at least 1 ACK per step; the kernel
//!   would spin forever for a tiny `beta` with cwnd < 4 (unreachable at beta = 717).
//! - As in the kernel, `epoch_start == 0` means "no epoch". tcplab's jiffies count from 0
//!   at the start of the run (Linux starts 5 minutes before the wrap), so an epoch begun
//!   in the run's first jiffy restarts on the next ACK.
//!
//! # Jiffies and the update gate
//!
//! The cubic clock, the "at most once per jiffy" rule and the gate that skips
//! recomputation for `HZ/32` jiffies while cwnd is unchanged all run on the sending host's
//! `HZ` (`nodes[].hz`): at HZ=250 (Debian) a jiffy is 4 ms, `usecs_to_jiffies(delay_min)`
//! is at least 4 ms and the gate is 7 jiffies; at HZ=1000 they are 1 ms and 31 jiffies.
//! At sub-jiffy RTTs this changes the window dynamics markedly (see docs/kernel-pin.md).
//! The gate is v6.12's `HZ / 32`: the proposal "tcp_cubic: fix to run bictcp_update() at
//! least once per RTT" (`min(HZ/32, usecs_to_jiffies(delay_min))`, netdev, Aug-Sep 2024)
//! was never merged (mainline v6.17 still has `HZ / 32`), so tcplab does not apply it.
//!
//! # Files
//!
//! This file: the cubic function (`bictcp_update`, `cubic_root`) and the hooks of
//! [`CongestionOps`]. `hystart.rs`: HyStart's rounds and its two detectors (called from
//! `pkts_acked`). `tests.rs`: the unit tests of both against the kernel's formulas.
//! Imports: `cc`'s own items, `tcp` (the socket's state the hooks read, as Linux's
//! `struct sock`), and leaves.

mod hystart;
#[cfg(test)]
mod tests;

pub use hystart::{
    hystart_ack_delay, HYSTART_ACK_TRAIN, HYSTART_DELAY, HYSTART_DELAY_MAX, HYSTART_DELAY_MIN,
    HYSTART_MIN_SAMPLES,
};

use super::{tcp_cong_avoid_ai, tcp_slow_start, CcInfo, CongestionOps};
use crate::config::CcParams;
use crate::tcp::rate_sample::AckSample;
use crate::tcp::sock::{CaEvent, CaState, TcpSock};

/// Scale of `beta`: `β = beta / BICTCP_BETA_SCALE`.
pub const BICTCP_BETA_SCALE: u32 = 1024;
/// The cubic function's time unit is 2^-BICTCP_HZ s (1/1024 s).
pub const BICTCP_HZ: u32 = 10;

/// `fls64()`: 1-based index of the most significant set bit, 0 for 0.
#[inline]
fn fls64(x: u64) -> u32 {
    64 - x.leading_zeros()
}

// Linux v6.12 net/ipv4/tcp_cubic.c: cubic_root() (the table `v[]`).
// Cube roots of the 6-bit mantissa, scaled by 2^6 (refined by hand upstream, so it is
// reproduced rather than recomputed: bit-exactness depends on it).
const CBRT_MSB: [u8; 64] = [
    0, 54, 54, 54, 118, 118, 118, 118, //
    123, 129, 134, 138, 143, 147, 151, 156, //
    157, 161, 164, 168, 170, 173, 176, 179, //
    181, 185, 187, 190, 192, 194, 197, 199, //
    200, 202, 204, 206, 209, 211, 213, 215, //
    217, 219, 221, 222, 224, 225, 227, 229, //
    231, 232, 234, 236, 237, 239, 240, 242, //
    244, 245, 246, 248, 250, 251, 252, 254, //
];

// Linux v6.12 net/ipv4/tcp_cubic.c: cubic_root()
/// Integer cube root: a table lookup on the top bits of `a`, then one Newton-Raphson step
/// (`x' = (2x + a/x²)/3`, with `x(x−1)` for `x²` and `·341/1024` for `/3`). The kernel
/// states an average error of about 0.195%.
pub fn cubic_root(a: u64) -> u32 {
    let b = fls64(a);
    if b < 7 {
        // a in [0, 63]: the table alone, rounded.
        return (CBRT_MSB[a as usize] as u32 + 35) >> 6;
    }
    // ⌊84b/256⌋ − 1 ≈ b/3 − 1: shift `a` right by a multiple of 3 bits (divides the root by
    // a power of two) leaving its top bits (< 64) as the table index.
    let b = ((b * 84) >> 8) - 1;
    let shift = (a >> (b * 3)) as u32;
    let mut x = ((CBRT_MSB[shift as usize] as u32 + 10) << b) >> 6;
    x = (2 * x).wrapping_add((a / (x as u64 * (x - 1) as u64)) as u32);
    x.wrapping_mul(341) >> 10
}

/// CUBIC's per-socket state (the kernel's `struct bictcp`) and its module parameters.
#[derive(Clone, Debug)]
pub struct Cubic {
    // --- module parameters (tcp_cubic's module_param()s) ---
    fast_convergence: bool,
    beta: u32,
    initial_ssthresh: u32,
    tcp_friendliness: bool,
    hystart: bool,
    hystart_detect: u8,
    hystart_low_window: u32,
    hystart_ack_delta_us: u32,
    // --- scale factors precomputed from the parameters (cubictcp_register) ---
    /// `8·(1024 + beta)/3/(1024 − beta)` (15 for beta = 717): the Reno estimate grows one
    /// packet per `cwnd·beta_scale/8` packets ACKed.
    beta_scale: u32,
    /// `bic_scale·10`: C × 2^10.
    cube_rtt_scale: u32,
    /// `2^40 / (bic_scale·10)`: 2^30 / C.
    cube_factor: u64,

    // --- struct bictcp ---
    /// Increase cwnd by 1 after `cnt` packets ACKed.
    cnt: u32,
    /// W_max, packets.
    last_max_cwnd: u32,
    /// cwnd at the last `bictcp_update` recomputation, packets.
    last_cwnd: u32,
    /// Jiffies of the last recomputation.
    last_time: u32,
    /// Origin point (W_max or cwnd) of the cubic function, packets.
    bic_origin_point: u32,
    /// Time from the epoch start to the origin point, 2^-10 s.
    bic_k: u32,
    /// Minimum RTT sample, µs (0 = none yet).
    delay_min: u32,
    /// Jiffies at the beginning of the epoch (0 = no epoch).
    epoch_start: u32,
    /// Packets ACKed, for the Reno estimate.
    ack_cnt: u32,
    /// Reno-friendly window estimate, packets.
    tcp_cwnd: u32,
    /// RTT samples taken in this HyStart round.
    sample_cnt: u8,
    /// HyStart found the exit point.
    found: bool,
    /// Start of the HyStart round, µs (u32 `tcp_mstamp`).
    round_start: u32,
    /// `snd_nxt` when the round started: the round ends when `snd_una` passes it.
    end_seq: u64,
    /// Time of the last ACK of the current ACK train, µs (u32 `tcp_mstamp`).
    last_ack: u32,
    /// Minimum RTT of the current round, µs (`u32::MAX` = none).
    curr_rtt: u32,
}

impl Cubic {
    // Linux v6.12 net/ipv4/tcp_cubic.c: cubictcp_register() (scale factors)
    /// The module with `params`, in the all-zero state in which the kernel hands
    /// `icsk_ca_priv` to `init`.
    pub fn new(params: &CcParams) -> Self {
        let beta = params.beta;
        let bic_scale = params.bic_scale;
        // bic_scale is C × 2^10 for a reference RTT of 100 ms, hence the ×10.
        let cube_rtt_scale = bic_scale * 10;
        Cubic {
            fast_convergence: params.fast_convergence,
            beta,
            initial_ssthresh: params.initial_ssthresh,
            tcp_friendliness: params.tcp_friendliness,
            hystart: params.hystart,
            hystart_detect: params.hystart_detect,
            hystart_low_window: params.hystart_low_window,
            hystart_ack_delta_us: params.hystart_ack_delta_us,
            beta_scale: 8 * (BICTCP_BETA_SCALE + beta) / 3 / (BICTCP_BETA_SCALE - beta),
            cube_rtt_scale,
            cube_factor: (1u64 << (10 + 3 * BICTCP_HZ)) / cube_rtt_scale as u64,
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            bic_origin_point: 0,
            bic_k: 0,
            delay_min: 0,
            epoch_start: 0,
            ack_cnt: 0,
            tcp_cwnd: 0,
            sample_cnt: 0,
            found: false,
            round_start: 0,
            end_seq: 0,
            last_ack: 0,
            curr_rtt: 0,
        }
    }

    // Linux v6.12 net/ipv4/tcp_cubic.c: bictcp_reset()
    /// Clears the window state (the kernel's memset up to `unused`, plus `found`); the
    /// HyStart round fields are left to `bictcp_hystart_reset`.
    fn bictcp_reset(&mut self) {
        self.cnt = 0;
        self.last_max_cwnd = 0;
        self.last_cwnd = 0;
        self.last_time = 0;
        self.bic_origin_point = 0;
        self.bic_k = 0;
        self.delay_min = 0;
        self.epoch_start = 0;
        self.ack_cnt = 0;
        self.tcp_cwnd = 0;
        self.found = false;
    }

    // Linux v6.12 net/ipv4/tcp_cubic.c: bictcp_update()
    /// Recomputes `cnt` (ACKed packets per cwnd increment) from the cubic function and the
    /// Reno estimate, at most once per jiffy and, while cwnd is unchanged, once per HZ/32.
    fn bictcp_update(&mut self, tp: &TcpSock, cwnd: u32, acked: u32) {
        let now = tp.jiffies32();

        self.ack_cnt = self.ack_cnt.wrapping_add(acked);

        let hz = tp.hz();
        if self.last_cwnd == cwnd && (now.wrapping_sub(self.last_time) as i32) <= (hz / 32) as i32 {
            return;
        }

        // The kernel's `goto tcp_friendliness`: within the same jiffy only the Reno estimate
        // is refreshed (every cwnd reduction clears epoch_start, forcing a recomputation).
        'cubic: {
            if self.epoch_start != 0 && now == self.last_time {
                break 'cubic;
            }

            self.last_cwnd = cwnd;
            self.last_time = now;

            if self.epoch_start == 0 {
                self.epoch_start = now;
                self.ack_cnt = acked;
                self.tcp_cwnd = cwnd;

                if self.last_max_cwnd <= cwnd {
                    self.bic_k = 0;
                    self.bic_origin_point = cwnd;
                } else {
                    // K = cbrt((W_max − cwnd)/C), in 2^-10 s.
                    let d = (self.last_max_cwnd - cwnd) as u64;
                    self.bic_k = cubic_root(self.cube_factor.wrapping_mul(d));
                    self.bic_origin_point = self.last_max_cwnd;
                }
            }

            // t = time since the epoch start plus one minimum RTT (the window aimed for is the
            // one due an RTT from now), converted from jiffies to 2^-10 s. The s32 difference
            // is sign-extended into u64, as in the kernel.
            let mut t = now.wrapping_sub(self.epoch_start) as i32 as i64 as u64;
            t = t.wrapping_add(tp.usecs_to_jiffies(self.delay_min as u64) as u64);
            t <<= BICTCP_HZ;
            t /= hz as u64;

            let k = self.bic_k as u64;
            let offs = k.abs_diff(t);

            // C·|t − K|³ in packets: offs³ carries 2^30, cube_rtt_scale 2^10.
            let delta = (self.cube_rtt_scale as u64)
                .wrapping_mul(offs)
                .wrapping_mul(offs)
                .wrapping_mul(offs)
                >> (10 + 3 * BICTCP_HZ);
            let delta = delta as u32;
            let bic_target = if t < k {
                self.bic_origin_point.wrapping_sub(delta)
            } else {
                self.bic_origin_point.wrapping_add(delta)
            };

            self.cnt = if bic_target > cwnd {
                cwnd / (bic_target - cwnd)
            } else {
                // At or above the target: a very small increment.
                cwnd.wrapping_mul(100)
            };

            // No loss yet: the bandwidth is unknown, grow at least 5% per RTT.
            if self.last_max_cwnd == 0 && self.cnt > 20 {
                self.cnt = 20;
            }
        }

        if self.tcp_friendliness {
            // tcplab: `.max(1)` keeps the loop's step positive; the kernel would spin forever
            // when `beta_scale·cwnd >> 3 == 0` (tiny beta and cwnd < 4), which cannot
            // happen with the default beta (beta_scale = 15).
            let delta = (cwnd.wrapping_mul(self.beta_scale) >> 3).max(1);
            while self.ack_cnt > delta {
                self.ack_cnt -= delta;
                self.tcp_cwnd = self.tcp_cwnd.wrapping_add(1);
            }
            // Reno would be faster: take its pace.
            if self.tcp_cwnd > cwnd {
                let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
                self.cnt = self.cnt.min(max_cnt);
            }
        }

        // At most one packet per two ACKed: 1.5× per RTT.
        self.cnt = self.cnt.max(2);
    }
}

impl CongestionOps for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    // Linux v6.12 net/ipv4/tcp_cubic.c: cubictcp_init()
    /// Note: as in the kernel, `initial_ssthresh` only applies when HyStart is off.
    fn init(&mut self, tp: &mut TcpSock) {
        self.bictcp_reset();
        if self.hystart {
            self.bictcp_hystart_reset(tp);
        }
        if !self.hystart && self.initial_ssthresh != 0 {
            tp.snd_ssthresh = self.initial_ssthresh;
        }
    }

    // Linux v6.12 net/ipv4/tcp_cubic.c: cubictcp_recalc_ssthresh()
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        let cwnd = tp.snd_cwnd;
        self.epoch_start = 0; // end of epoch

        // W_max, lowered further (fast convergence) if the flow was already shrinking.
        self.last_max_cwnd = if cwnd < self.last_max_cwnd && self.fast_convergence {
            cwnd.wrapping_mul(BICTCP_BETA_SCALE + self.beta) / (2 * BICTCP_BETA_SCALE)
        } else {
            cwnd
        };

        (cwnd.wrapping_mul(self.beta) / BICTCP_BETA_SCALE).max(2)
    }

    // Linux v6.12 net/ipv4/tcp_cubic.c: cubictcp_cong_avoid()
    /// `ack` is unused: since v5.16 (commit 4e1fddc98d25) the HyStart round is tracked in
    /// `hystart_update()` from `snd_una`, not here.
    fn cong_avoid(&mut self, tp: &mut TcpSock, _ack: u64, mut acked: u32) {
        if !tp.is_cwnd_limited() {
            return;
        }
        if tp.in_slow_start() {
            acked = tcp_slow_start(tp, acked);
            if acked == 0 {
                return;
            }
        }
        let cwnd = tp.snd_cwnd;
        self.bictcp_update(tp, cwnd, acked);
        tcp_cong_avoid_ai(tp, self.cnt, acked);
    }

    // Linux v6.12 net/ipv4/tcp_cubic.c: cubictcp_state()
    fn set_state(&mut self, tp: &mut TcpSock, new_state: CaState) {
        if new_state == CaState::Loss {
            self.bictcp_reset();
            self.bictcp_hystart_reset(tp);
        }
    }

    // Linux v6.12 net/ipv4/tcp_cubic.c: cubictcp_cwnd_event()
    /// After an idle (application-limited) period, shift the epoch by the idle time so that
    /// cwnd resumes on the cubic curve where it left it.
    fn cwnd_event(&mut self, tp: &mut TcpSock, ev: CaEvent) {
        if ev != CaEvent::TxStart {
            return;
        }
        let now = tp.jiffies32();
        let idle_jiffies = now.wrapping_sub(tp.lsndtime) as i32;
        if self.epoch_start != 0 && idle_jiffies > 0 {
            self.epoch_start = self.epoch_start.wrapping_add(idle_jiffies as u32);
            // after(epoch_start, now), jiffies comparison
            if (now.wrapping_sub(self.epoch_start) as i32) < 0 {
                self.epoch_start = now;
            }
        }
    }

    // Linux v6.12 net/ipv4/tcp_cong.c: tcp_reno_undo_cwnd() (CUBIC's `.undo_cwnd`)
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        tp.snd_cwnd.max(tp.prior_cwnd)
    }

    // Linux v6.12 net/ipv4/tcp_cubic.c: cubictcp_acked()
    fn pkts_acked(&mut self, tp: &mut TcpSock, sample: &AckSample) {
        // ACKs without an RTT sample (e.g. duplicates).
        if sample.rtt_us < 0 {
            return;
        }

        // Discard delay samples for one second (HZ jiffies) after an epoch start.
        let now = tp.jiffies32();
        if self.epoch_start != 0 && (now.wrapping_sub(self.epoch_start) as i32) < tp.hz() as i32 {
            return;
        }

        let delay_us = (sample.rtt_us as u32).max(1);

        if self.delay_min == 0 || self.delay_min > delay_us {
            self.delay_min = delay_us;
        }

        // The low-window gate is inside hystart_update(), after the round reset.
        if !self.found && tp.in_slow_start() && self.hystart {
            self.hystart_update(tp, delay_us);
        }
    }

    /// tcplab only: W_max for the time series.
    fn get_info(&self, _tp: &TcpSock) -> CcInfo {
        CcInfo {
            last_max_cwnd: self.last_max_cwnd,
            ..CcInfo::default()
        }
    }
}
