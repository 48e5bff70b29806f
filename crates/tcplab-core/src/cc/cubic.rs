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

use super::{tcp_cong_avoid_ai, tcp_slow_start, CcInfo, CongestionOps};
use crate::config::CcParams;
use crate::mib::Mib;
use crate::tcp::rate_sample::AckSample;
use crate::tcp::sock::{CaEvent, CaState, PacingStatus, TcpSock};
use crate::time::{USEC_PER_MSEC, USEC_PER_SEC};

/// Scale of `beta`: `β = beta / BICTCP_BETA_SCALE`.
pub const BICTCP_BETA_SCALE: u32 = 1024;
/// The cubic function's time unit is 2^-BICTCP_HZ s (1/1024 s).
pub const BICTCP_HZ: u32 = 10;

/// `hystart_detect` bit: ACK-train detection.
pub const HYSTART_ACK_TRAIN: u8 = 0x1;
/// `hystart_detect` bit: delay-increase detection.
pub const HYSTART_DELAY: u8 = 0x2;

/// RTT samples per round before the delay detector may fire.
pub const HYSTART_MIN_SAMPLES: u8 = 8;
/// Bounds of the delay-increase threshold, µs.
pub const HYSTART_DELAY_MIN: u32 = 4000;
pub const HYSTART_DELAY_MAX: u32 = 16000;

/// `HYSTART_DELAY_THRESH(x)`: the delay-increase threshold, µs.
#[inline]
fn hystart_delay_thresh(x_us: u32) -> u32 {
    x_us.clamp(HYSTART_DELAY_MIN, HYSTART_DELAY_MAX)
}

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

// Linux v6.12 net/ipv4/tcp_cubic.c: hystart_ack_delay()
/// Allowance for TSO/GRO aggregation in the ACK-train threshold, µs: the time to send four
/// maximal GSO packets at the pacing rate, at most 1 ms; 0 without a pacing rate.
pub fn hystart_ack_delay(tp: &TcpSock) -> u32 {
    let rate_bytes_per_sec = tp.sk_pacing_rate;
    if rate_bytes_per_sec == 0 {
        return 0;
    }
    (tp.sk_gso_max_size as u64 * 4 * USEC_PER_SEC / rate_bytes_per_sec).min(USEC_PER_MSEC) as u32
}

// Linux v6.12 net/ipv4/tcp_cubic.c: bictcp_clock_us()
/// HyStart's clock: `tcp_mstamp` truncated to the kernel's u32 field width, µs.
#[inline]
fn bictcp_clock_us(tp: &TcpSock) -> u32 {
    tp.tcp_mstamp as u32
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

    // Linux v6.12 net/ipv4/tcp_cubic.c: bictcp_hystart_reset()
    /// Starts a HyStart round now; it lasts until everything sent so far is ACKed.
    fn bictcp_hystart_reset(&mut self, tp: &TcpSock) {
        self.round_start = bictcp_clock_us(tp);
        self.last_ack = self.round_start;
        self.end_seq = tp.snd_nxt;
        self.curr_rtt = u32::MAX;
        self.sample_cnt = 0;
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

    // Linux v6.12 net/ipv4/tcp_cubic.c: hystart_update() (+ stable fix 25c1a9ca53db)
    /// One HyStart step on an RTT sample `delay_us` (slow start): a new round once the last
    /// one is ACKed, then, with cwnd >= low window, the ACK-train and delay checks.
    fn hystart_update(&mut self, tp: &mut TcpSock, delay_us: u32) {
        // A new round once everything sent at the last round start is ACKed (tracked here
        // from snd_una since v5.16, commit 4e1fddc98d25, not in cong_avoid).
        if tp.snd_una > self.end_seq {
            self.bictcp_hystart_reset(tp);
        }

        // The low-window gate comes after the round reset (upstream 25c1a9ca53db "tcp_cubic:
        // fix incorrect HyStart round start detection", v6.13; backported to the stable
        // trees, e.g. the 6.1-stable review of 2025-02-19; this machine's 6.18 has it): rounds start at flight boundaries even while cwnd is below
        // hystart_low_window, so a round's first samples are the first of a flight. Before
        // it, the first round began at the ACK where cwnd reached 16, mid-flight, and every
        // later round began mid-flight too (its first samples in the tail of a flight, where
        // the queue is longest): HyStart's delay check fired a round or more early.
        if tp.snd_cwnd < self.hystart_low_window {
            return;
        }

        if self.hystart_detect & HYSTART_ACK_TRAIN != 0 {
            let now_us = bictcp_clock_us(tp);

            // ACKs close together continue the train.
            if (now_us.wrapping_sub(self.last_ack) as i32) <= self.hystart_ack_delta_us as i32 {
                self.last_ack = now_us;

                let mut threshold_us = self.delay_min.wrapping_add(hystart_ack_delay(tp));
                // Unpaced, the train of a full pipe lasts about delay_min/2 (pacing may have
                // spread slow-start packets over up to RTT/2).
                if tp.sk_pacing_status == PacingStatus::None {
                    threshold_us >>= 1;
                }

                // The kernel compares `(s32)(now - round_start) > threshold` with a u32
                // threshold, so the comparison is unsigned.
                if now_us.wrapping_sub(self.round_start) > threshold_us {
                    self.found = true;
                    tp.mib.inc(Mib::TCPHystartTrainDetect);
                    tp.mib.add(Mib::TCPHystartTrainCwnd, tp.snd_cwnd as u64);
                    tp.snd_ssthresh = tp.snd_cwnd;
                }
            }
        }

        if self.hystart_detect & HYSTART_DELAY != 0 {
            // Every sample of the round may lower its minimum.
            if self.curr_rtt > delay_us {
                self.curr_rtt = delay_us;
            }
            if self.sample_cnt < HYSTART_MIN_SAMPLES {
                self.sample_cnt += 1;
            } else if self.curr_rtt
                > self.delay_min.wrapping_add(hystart_delay_thresh(self.delay_min >> 3))
            {
                self.found = true;
                tp.mib.inc(Mib::TCPHystartDelayDetect);
                tp.mib.add(Mib::TCPHystartDelayCwnd, tp.snd_cwnd as u64);
                tp.snd_ssthresh = tp.snd_cwnd;
            }
        }
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
        CcInfo { last_max_cwnd: self.last_max_cwnd, ..CcInfo::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::sock::TCP_INFINITE_SSTHRESH;
    use crate::time::NSEC_PER_MSEC;

    const MSS: u64 = 1448;
    /// Runs start well after time 0 so that no epoch begins at jiffy 0 (which means "none").
    const T0_NS: u64 = 10_000 * NSEC_PER_MSEC;
    /// `TcpSock::new_for_test()` runs at HZ=1000: one jiffy per millisecond.
    const HZ: u32 = 1000;

    /// A sender whose ACKs are placed by the test, calling the hooks in the kernel's order:
    /// `snd_una` advances (`tcp_ack`), then `pkts_acked` (`tcp_clean_rtx_queue`), then
    /// `cong_avoid` (`tcp_cong_control`).
    struct Harness {
        tp: TcpSock,
        cc: Cubic,
    }

    impl Harness {
        fn new(params: &CcParams, cwnd: u32) -> Self {
            let mut tp = TcpSock::new_for_test(MSS as u32, cwnd);
            tp.is_cwnd_limited = true;
            tp.set_now(T0_NS);
            let mut cc = Cubic::new(params);
            cc.init(&mut tp);
            Harness { tp, cc }
        }

        fn ack(&mut self, at_ns: u64, rtt_us: i32) {
            self.tp.set_now(at_ns);
            self.tp.snd_una += MSS;
            let sample = AckSample { pkts_acked: 1, rtt_us, in_flight: 0 };
            self.cc.pkts_acked(&mut self.tp, &sample);
            let ack = self.tp.snd_una;
            self.cc.cong_avoid(&mut self.tp, ack, 1);
        }

        /// One round trip: a window of `cwnd` packets is in flight (`snd_nxt` moves to its
        /// end) and is ACKed one packet at a time, the i-th ACK at `start_ns + i·spacing_ns`
        /// carrying the RTT sample `rtt_us(i)`. Returns the number of ACKs.
        fn round(&mut self, start_ns: u64, spacing_ns: u64, rtt_us: impl Fn(u32) -> i32) -> u32 {
            let n = self.tp.snd_cwnd;
            self.tp.snd_nxt = self.tp.snd_una + n as u64 * MSS;
            for i in 0..n {
                self.ack(start_ns + i as u64 * spacing_ns, rtt_us(i));
            }
            n
        }

        fn mib(&self, m: Mib) -> u64 {
            self.tp.mib.get(m)
        }
    }

    fn params_with(f: impl FnOnce(&mut CcParams)) -> CcParams {
        let mut p = CcParams::default();
        f(&mut p);
        p
    }

    #[test]
    fn scale_factors_follow_the_kernel_formulas() {
        let cc = Cubic::new(&CcParams::default());
        // 8·1741/3 = 4642 (integer), /307 = 15: one Reno-estimate packet per 15/8 cwnd ACKed.
        assert_eq!(cc.beta_scale, 15);
        assert_eq!(cc.cube_rtt_scale, 410);
        assert_eq!(cc.cube_factor, (1u64 << 40) / 410);
    }

    /// The integer cube root against `f64::cbrt`.
    ///
    /// - a < 64 (table only, result rounded to an integer): the result is ⌊∛a⌋ or ⌈∛a⌉.
    /// - a ≥ 64: |x − ∛a| ≤ 1.5 + 0.5%·∛a. Absolute part: the two truncating steps (the
    ///   quotient a/(x(x−1)) loses < 1, i.e. < 1/3 after the ×341/1024, and the final >>10
    ///   loses < 1), rounded up to 1.5. Relative part: the table guess keeps ≥ 3 bits of
    ///   mantissa (error ≤ 1/(3·8) + 1/128 ≈ 4.9%), one Newton step squares it (≈ 0.24%),
    ///   and 341/1024 is 0.1% below 1/3: ≈ 0.34%, rounded up to 0.5%.
    /// - Over the inputs CUBIC actually uses (a = cube_factor·(W_max − cwnd) for
    ///   W_max − cwnd in 1..=10^6 packets, where ∛a ≥ 1389 and the absolute part is
    ///   < 0.11%), the mean relative error is within the kernel's stated ~0.195%.
    #[test]
    fn cubic_root_matches_f64_cbrt() {
        for a in 0u64..64 {
            let x = cubic_root(a) as f64;
            let c = (a as f64).cbrt();
            assert!(x == c.floor() || x == c.ceil(), "cubic_root({a}) = {x}, cbrt = {c}");
        }

        let check = |a: u64| {
            let x = cubic_root(a) as f64;
            let c = (a as f64).cbrt();
            assert!((x - c).abs() <= 1.5 + 0.005 * c, "cubic_root({a}) = {x}, cbrt = {c}");
        };
        // Exhaustive over the small range, where truncation dominates.
        for a in 64u64..(1 << 20) {
            check(a);
        }
        // Both ends of every bit length (this also exercises every table index range).
        for b in 6..64 {
            check(1u64 << b);
            check(u64::MAX >> (63 - b));
            check((1u64 << b) + (1u64 << b) / 3);
        }
        check(u64::MAX);
        // A geometric sweep with a non-power-of-two ratio.
        let mut a: u64 = 1 << 20;
        while a < u64::MAX / 2 {
            check(a);
            a += a / 13 + 7;
        }

        let cube_factor = Cubic::new(&CcParams::default()).cube_factor;
        let (mut sum, mut max) = (0.0f64, 0.0f64);
        let n = 1_000_000u64;
        for d in 1..=n {
            let a = cube_factor * d;
            let c = (a as f64).cbrt();
            let rel = (cubic_root(a) as f64 - c).abs() / c;
            sum += rel;
            max = max.max(rel);
        }
        assert!(sum / n as f64 <= 0.00195, "mean relative error {}", sum / n as f64);
        assert!(max <= 0.005, "max relative error {max}");
    }

    /// The kernel's steps worked by hand, where the fixed-point details show.
    #[test]
    fn cubic_root_is_bit_exact_on_hand_worked_inputs() {
        // a = 90: fls64 = 7, b = ⌊7·84/256⌋ − 1 = 1, index 90 >> 3 = 11, v[11] = 138,
        // x = (148 << 1) >> 6 = 4; Newton: 2·4 + ⌊90/(4·3)⌋ = 15; 15·341 >> 10 = 4 (an exact
        // /3 would give 5).
        assert_eq!(cubic_root(90), 4);
        // a = 1000: fls64 = 10, b = 2, index 1000 >> 6 = 15, v[15] = 156,
        // x = (166 << 2) >> 6 = 10; Newton: 20 + ⌊1000/90⌋ = 31; 31·341 >> 10 = 10.
        assert_eq!(cubic_root(1000), 10);
        // a = 7 (table only): (v[7] + 35) >> 6 = 153 >> 6 = 2.
        assert_eq!(cubic_root(7), 2);
    }

    #[test]
    fn ssthresh_is_beta_times_cwnd_and_sets_w_max() {
        for cwnd in 1u32..=5000 {
            let mut cc = Cubic::new(&CcParams::default());
            let mut tp = TcpSock::new_for_test(1448, cwnd);
            cc.init(&mut tp);
            let ssthresh = cc.ssthresh(&mut tp);
            assert_eq!(ssthresh, (cwnd * 717 / 1024).max(2), "cwnd {cwnd}");
            // First loss: W_max is the window at the loss.
            assert_eq!(cc.last_max_cwnd, cwnd);
            assert_eq!(cc.get_info(&tp).last_max_cwnd, cwnd);
        }
    }

    #[test]
    fn fast_convergence_lowers_w_max_below_the_loss_window() {
        let mut tp = TcpSock::new_for_test(1448, 1000);
        let mut cc = Cubic::new(&CcParams::default());
        cc.init(&mut tp);
        cc.ssthresh(&mut tp);
        assert_eq!(cc.last_max_cwnd, 1000);

        // A second loss below W_max: W_max = cwnd·(1 + β)/2.
        tp.snd_cwnd = 800;
        let ssthresh = cc.ssthresh(&mut tp);
        assert_eq!(cc.last_max_cwnd, 800 * (1024 + 717) / 2048);
        assert_eq!(ssthresh, 800 * 717 / 1024);

        // A loss at or above W_max takes the window as is.
        tp.snd_cwnd = 900;
        cc.ssthresh(&mut tp);
        assert_eq!(cc.last_max_cwnd, 900);

        // Without fast convergence, W_max is always the loss window.
        let mut cc = Cubic::new(&params_with(|p| p.fast_convergence = false));
        tp.snd_cwnd = 1000;
        cc.ssthresh(&mut tp);
        tp.snd_cwnd = 800;
        cc.ssthresh(&mut tp);
        assert_eq!(cc.last_max_cwnd, 800);
    }

    #[test]
    fn ssthresh_ends_the_epoch() {
        let mut h = Harness::new(&CcParams::default(), 100);
        h.tp.snd_ssthresh = 50;
        h.round(T0_NS, NSEC_PER_MSEC, |_| 100_000);
        assert_ne!(h.cc.epoch_start, 0);
        h.cc.ssthresh(&mut h.tp);
        assert_eq!(h.cc.epoch_start, 0);
    }

    #[test]
    fn before_any_loss_growth_is_five_percent_per_rtt() {
        // Congestion avoidance with W_max = 0: the cubic curve starts flat at cwnd, so
        // `cnt` is clamped to 20 ACKs per packet, i.e. cwnd/20 per round trip.
        let cwnd = 100;
        let mut h = Harness::new(&CcParams::default(), cwnd);
        h.tp.snd_ssthresh = 50;
        h.round(T0_NS, NSEC_PER_MSEC, |_| 100_000);
        assert_eq!(h.tp.snd_cwnd, cwnd + cwnd / 20);
    }

    #[test]
    fn growth_is_at_most_one_packet_per_two_acked() {
        // Far below a large W_max the cubic target is more than 1.5·cwnd: cnt clamps to 2.
        let mut h = Harness::new(&CcParams::default(), 1000);
        h.cc.ssthresh(&mut h.tp);
        let cwnd = 10;
        h.tp.snd_cwnd = cwnd;
        h.tp.snd_ssthresh = cwnd;
        h.round(T0_NS, NSEC_PER_MSEC, |_| 100_000);
        assert_eq!(h.cc.cnt, 2);
        assert_eq!(h.tp.snd_cwnd, cwnd + cwnd / 2);
    }

    #[test]
    fn update_recomputes_at_most_once_per_hz_over_32_while_cwnd_is_unchanged() {
        let mut h = Harness::new(&CcParams::default(), 100);
        h.tp.snd_ssthresh = 50;
        h.ack(T0_NS, 100_000);
        let last_time = h.cc.last_time;
        // Corrupt cnt: only a recomputation can restore it.
        h.cc.cnt = 12345;
        let cwnd = h.tp.snd_cwnd;
        h.cc.bictcp_update(&h.tp, cwnd, 1);
        assert_eq!(h.cc.cnt, 12345);
        h.tp.set_now(T0_NS + (HZ / 32) as u64 * NSEC_PER_MSEC);
        h.cc.bictcp_update(&h.tp, cwnd, 1);
        assert_eq!(h.cc.cnt, 12345, "still within HZ/32 jiffies");
        h.tp.set_now(T0_NS + (HZ / 32 + 1) as u64 * NSEC_PER_MSEC);
        h.cc.bictcp_update(&h.tp, cwnd, 1);
        assert_eq!(h.cc.cnt, 20);
        assert_eq!(h.cc.last_time, last_time + HZ / 32 + 1);
    }

    #[test]
    fn update_gate_and_cubic_clock_follow_the_hosts_hz() {
        // At HZ=250 a jiffy is 4 ms: the unchanged-cwnd gate is HZ/32 = 7 jiffies (28 ms,
        // recomputation from the 8th jiffy on), and the cubic clock (tcp_jiffies32) only
        // moves in 4 ms steps, so two updates within one jiffy see the same time.
        let tick_ns = 4 * NSEC_PER_MSEC;
        let mut h = Harness::new(&CcParams::default(), 100);
        h.tp.set_hz(250);
        h.tp.set_now(T0_NS);
        h.tp.snd_ssthresh = 50;
        h.ack(T0_NS, 100_000);
        let last_time = h.cc.last_time;
        assert_eq!(last_time, (T0_NS / tick_ns) as u32, "last_time is in 250 Hz jiffies");
        let cwnd = h.tp.snd_cwnd;
        h.cc.cnt = 12345;
        h.tp.set_now(T0_NS + 7 * tick_ns + tick_ns - 1);
        h.cc.bictcp_update(&h.tp, cwnd, 1);
        assert_eq!(h.cc.cnt, 12345, "7 jiffies (31.99 ms) is still within HZ/32 at HZ=250");
        h.tp.set_now(T0_NS + 8 * tick_ns);
        h.cc.bictcp_update(&h.tp, cwnd, 1);
        assert_ne!(h.cc.cnt, 12345, "8 jiffies is past HZ/32 at HZ=250");
        assert_eq!(h.cc.last_time, last_time + 8);
    }

    #[test]
    fn no_growth_when_not_cwnd_limited() {
        let mut h = Harness::new(&CcParams::default(), 40);
        h.tp.snd_ssthresh = 20;
        h.tp.is_cwnd_limited = false;
        h.tp.max_packets_out = 5;
        h.round(T0_NS, NSEC_PER_MSEC, |_| 50_000);
        assert_eq!(h.tp.snd_cwnd, 40);
        assert_eq!(h.cc.epoch_start, 0, "no epoch starts without cwnd-limited ACKs");
        assert_eq!(h.tp.snd_cwnd_cnt, 0);
    }

    #[test]
    fn rto_resets_epoch_w_max_and_hystart() {
        let mut h = Harness::new(&CcParams::default(), 100);
        h.cc.ssthresh(&mut h.tp);
        h.tp.snd_cwnd = 70;
        h.tp.snd_ssthresh = 70;
        h.round(T0_NS, NSEC_PER_MSEC, |_| 80_000);
        assert!(h.cc.epoch_start != 0 && h.cc.last_max_cwnd == 100 && h.cc.delay_min == 80_000);

        // Recovery does not touch the state.
        h.cc.set_state(&mut h.tp, CaState::Recovery);
        assert_eq!(h.cc.last_max_cwnd, 100);

        h.tp.set_now(T0_NS + 5_000 * NSEC_PER_MSEC);
        h.tp.snd_nxt = h.tp.snd_una + 7 * MSS;
        h.cc.set_state(&mut h.tp, CaState::Loss);
        assert_eq!(h.cc.epoch_start, 0);
        assert_eq!(h.cc.last_max_cwnd, 0);
        assert_eq!(h.cc.get_info(&h.tp).last_max_cwnd, 0);
        assert_eq!(h.cc.delay_min, 0);
        assert_eq!((h.cc.cnt, h.cc.ack_cnt, h.cc.tcp_cwnd, h.cc.bic_k), (0, 0, 0, 0));
        assert!(!h.cc.found);
        assert_eq!(h.cc.round_start, h.tp.tcp_mstamp as u32);
        assert_eq!(h.cc.last_ack, h.tp.tcp_mstamp as u32);
        assert_eq!(h.cc.end_seq, h.tp.snd_nxt);
        assert_eq!(h.cc.curr_rtt, u32::MAX);
        assert_eq!(h.cc.sample_cnt, 0);
    }

    #[test]
    fn tx_start_after_idle_shifts_the_epoch() {
        let mut h = Harness::new(&CcParams::default(), 100);
        h.cc.cwnd_event(&mut h.tp, CaEvent::TxStart);
        assert_eq!(h.cc.epoch_start, 0, "no epoch, nothing to shift");

        h.tp.snd_ssthresh = 50;
        h.ack(T0_NS, 100_000);
        let epoch = h.cc.epoch_start;
        assert_eq!(epoch, h.tp.jiffies32());

        // Last transmission 20 ms into the epoch, idle for 500 ms.
        let last_send_ns = T0_NS + 20 * NSEC_PER_MSEC;
        h.tp.set_now(last_send_ns);
        h.tp.lsndtime = h.tp.jiffies32();
        h.tp.set_now(last_send_ns + 500 * NSEC_PER_MSEC);
        h.cc.cwnd_event(&mut h.tp, CaEvent::CwndRestart);
        assert_eq!(h.cc.epoch_start, epoch, "only TX_START shifts the epoch");
        h.cc.cwnd_event(&mut h.tp, CaEvent::TxStart);
        assert_eq!(h.cc.epoch_start, epoch + 500);

        // The shift never puts the epoch in the future.
        h.tp.lsndtime = epoch.wrapping_sub(1000);
        let now = h.tp.jiffies32();
        h.cc.cwnd_event(&mut h.tp, CaEvent::TxStart);
        assert_eq!(h.cc.epoch_start, now);
    }

    #[test]
    fn undo_restores_the_prior_cwnd() {
        let mut h = Harness::new(&CcParams::default(), 30);
        h.tp.prior_cwnd = 50;
        assert_eq!(h.cc.undo_cwnd(&mut h.tp), 50);
        h.tp.prior_cwnd = 20;
        assert_eq!(h.cc.undo_cwnd(&mut h.tp), 30);
    }

    #[test]
    fn initial_ssthresh_applies_only_without_hystart() {
        let mut tp = TcpSock::new_for_test(1448, 10);
        let mut cc = Cubic::new(&params_with(|p| p.initial_ssthresh = 100));
        cc.init(&mut tp);
        assert_eq!(tp.snd_ssthresh, TCP_INFINITE_SSTHRESH);

        let mut cc = Cubic::new(&params_with(|p| {
            p.initial_ssthresh = 100;
            p.hystart = false;
        }));
        cc.init(&mut tp);
        assert_eq!(tp.snd_ssthresh, 100);
    }

    #[test]
    fn samples_are_ignored_for_one_second_after_an_epoch_start() {
        let mut h = Harness::new(&CcParams::default(), 100);
        h.tp.snd_ssthresh = 50;
        h.ack(T0_NS, 100_000);
        assert_eq!(h.cc.delay_min, 100_000, "no epoch yet when the sample came");
        h.ack(T0_NS + (HZ as u64 - 1) * NSEC_PER_MSEC, 50_000);
        assert_eq!(h.cc.delay_min, 100_000);
        h.ack(T0_NS + HZ as u64 * NSEC_PER_MSEC, 50_000);
        assert_eq!(h.cc.delay_min, 50_000);
        // No sample, nothing learnt; a zero sample counts as 1 us.
        h.ack(T0_NS + 2 * HZ as u64 * NSEC_PER_MSEC, -1);
        assert_eq!(h.cc.delay_min, 50_000);
        h.ack(T0_NS + 2 * HZ as u64 * NSEC_PER_MSEC, 0);
        assert_eq!(h.cc.delay_min, 1);
    }

    #[test]
    fn hystart_ack_delay_is_four_gso_packets_at_the_pacing_rate_capped_at_1ms() {
        let mut tp = TcpSock::new_for_test(1448, 10);
        tp.sk_pacing_rate = 0;
        assert_eq!(hystart_ack_delay(&tp), 0);
        tp.sk_pacing_rate = 1_000_000_000;
        assert_eq!(hystart_ack_delay(&tp), (65536u64 * 4 * 1_000_000 / 1_000_000_000) as u32);
        tp.sk_pacing_rate = 1_000_000;
        assert_eq!(hystart_ack_delay(&tp), 1000);
    }

    // --- HyStart delay detection ---

    /// Round 1 at the base RTT sets delay_min; round 2 adds `bump_us` to every sample (or to
    /// the samples from `bump_from` on). Returns the harness and the cwnd at round 2's start.
    fn delay_rounds(base_us: u32, bump_us: u32, bump_from: u32) -> (Harness, u32) {
        let p = params_with(|p| p.hystart_detect = HYSTART_DELAY);
        let mut h = Harness::new(&p, 16);
        let spacing = 3 * NSEC_PER_MSEC;
        h.round(T0_NS, spacing, |_| base_us as i32);
        assert_eq!(h.cc.delay_min, base_us);
        assert_eq!(h.tp.snd_ssthresh, TCP_INFINITE_SSTHRESH);
        let cwnd2 = h.tp.snd_cwnd;
        let start2 = T0_NS + base_us as u64 * 1000;
        h.round(start2, spacing, |i| (base_us + if i >= bump_from { bump_us } else { 0 }) as i32);
        (h, cwnd2)
    }

    #[test]
    fn hystart_delay_exits_slow_start_when_the_round_min_rtt_rises() {
        // delay_min/8 below, inside and above the [4 ms, 16 ms] clamp.
        for base_us in [10_000u32, 50_000, 200_000] {
            let thresh_us = hystart_delay_thresh(base_us >> 3);

            let (h, cwnd2) = delay_rounds(base_us, thresh_us + 1, 0);
            assert_eq!(h.mib(Mib::TCPHystartDelayDetect), 1, "base {base_us}");
            // The check starts once HYSTART_MIN_SAMPLES samples are in: on the 9th ACK of the
            // round, after slow start grew cwnd by one per ACK for the first 8.
            let exit_cwnd = cwnd2 + HYSTART_MIN_SAMPLES as u32;
            assert_eq!(h.tp.snd_ssthresh, exit_cwnd);
            assert_eq!(h.mib(Mib::TCPHystartDelayCwnd), exit_cwnd as u64);
            assert!(h.cc.found);
            assert_eq!(h.mib(Mib::TCPHystartTrainDetect), 0);

            // Exactly at the threshold: no exit.
            let (h, _) = delay_rounds(base_us, thresh_us, 0);
            assert_eq!(h.mib(Mib::TCPHystartDelayDetect), 0, "base {base_us}");
            assert_eq!(h.tp.snd_ssthresh, TCP_INFINITE_SSTHRESH);
        }
    }

    #[test]
    fn hystart_delay_uses_the_minimum_of_the_round() {
        // The first 8 samples stay at the base RTT: the round's minimum never rises.
        let (h, _) = delay_rounds(50_000, 30_000, HYSTART_MIN_SAMPLES as u32);
        assert_eq!(h.mib(Mib::TCPHystartDelayDetect), 0);
        assert_eq!(h.tp.snd_ssthresh, TCP_INFINITE_SSTHRESH);
    }

    #[test]
    fn hystart_waits_for_the_low_window() {
        // Below hystart_low_window the RTT rise is ignored.
        let p = params_with(|p| p.hystart_detect = HYSTART_DELAY);
        let mut h = Harness::new(&p, 4);
        h.round(T0_NS, 3 * NSEC_PER_MSEC, |_| 50_000);
        h.round(T0_NS + 50 * NSEC_PER_MSEC, 3 * NSEC_PER_MSEC, |_| 80_000);
        // 4 → 8 → 16: every sample was taken at a cwnd below 16.
        assert_eq!(h.tp.snd_cwnd, p.hystart_low_window);
        assert_eq!(h.mib(Mib::TCPHystartDelayDetect), 0);
        assert_eq!(h.tp.snd_ssthresh, TCP_INFINITE_SSTHRESH);
    }

    /// Slow start from an initial window of 10 as a sender that always has data sees it: each
    /// ACK releases new packets up to cwnd (`snd_nxt = snd_una + cwnd`), and the packets sent
    /// on one flight's ACKs form the next flight. The bottleneck queue builds during a flight
    /// and drains in the gap before the next, so the i-th ACK of every flight carries
    /// `base_us + i·step_us` (the kernel trace of validate-path at 5 Mbit/s, 100 ms: each
    /// flight's ACKs rise 2.4 ms apiece from the base RTT while cwnd < BDP). Returns the
    /// harness once cwnd reached `until_cwnd` or HyStart fired.
    fn flights(base_us: u32, step_us: u32, until_cwnd: u32) -> Harness {
        let p = params_with(|p| p.hystart_detect = HYSTART_DELAY);
        let mut h = Harness::new(&p, 10); // init at establishment: snd_nxt == snd_una
        h.tp.snd_nxt = h.tp.snd_una + 10 * MSS; // the initial window goes out
        let mut flight_end = h.tp.snd_nxt;
        let (mut i, mut now_ns) = (0u32, T0_NS);
        while !h.cc.found && h.tp.snd_cwnd < until_cwnd {
            if h.tp.snd_una >= flight_end {
                // The first ACK of the next flight: everything sent so far is its flight.
                flight_end = h.tp.snd_nxt;
                i = 0;
            }
            now_ns += step_us as u64 * 1000;
            h.ack(now_ns, (base_us + i * step_us) as i32);
            h.tp.snd_nxt = h.tp.snd_una + h.tp.snd_cwnd as u64 * MSS;
            i += 1;
        }
        h
    }

    /// Linux (since upstream 25c1a9ca53db, v6.13 and the stable trees) resets the HyStart
    /// round on every ACK that passes `end_seq`, whatever cwnd; only the checks wait for
    /// `hystart_low_window`. So rounds coincide with flights, each round's minimum is its
    /// flight's first sample, the base RTT, and a within-flight rise however large never
    /// ends slow start. With the old gate (no round reset below cwnd 16) the first round
    /// began at the ACK where cwnd reached 16, mid-flight, and so did every later one: with
    /// a 2 ms rise per ACK a round starting 7 ACKs into a flight holds only samples
    /// >= base + 14 ms > base + 12.5 ms, and HyStart left slow start at a small cwnd.
    #[test]
    fn hystart_rounds_follow_flights_from_the_first_ack() {
        let h = flights(100_000, 2_000, 400);
        assert_eq!(h.mib(Mib::TCPHystartDelayDetect), 0, "exit at cwnd {}", h.tp.snd_cwnd);
        assert_eq!(h.tp.snd_ssthresh, TCP_INFINITE_SSTHRESH);
        assert!(h.tp.snd_cwnd >= 400);
        // The round is the current flight: it began at the flight's first ACK.
        assert!(h.cc.end_seq > h.tp.snd_una);
    }

    /// The same flights, but from some flight on every sample is past the threshold (the
    /// queue no longer drains between flights): HyStart exits on the 9th ACK of the first
    /// such flight, i.e. at that flight's starting cwnd + 8 (one packet per ACK).
    #[test]
    fn hystart_delay_exits_on_the_ninth_ack_of_the_first_high_flight() {
        // Flights start at cwnd 10, 20, 40, 80, 160: make the 80-flight the first high one.
        let p = params_with(|p| p.hystart_detect = HYSTART_DELAY);
        let mut h = Harness::new(&p, 10);
        h.tp.snd_nxt = h.tp.snd_una + 10 * MSS;
        let mut flight_end = h.tp.snd_nxt;
        let (mut i, mut now_ns, mut flight_cwnd) = (0u32, T0_NS, 10u32);
        let thresh_us = 100_000 + hystart_delay_thresh(100_000 >> 3);
        while !h.cc.found && h.tp.snd_cwnd < 400 {
            if h.tp.snd_una >= flight_end {
                flight_end = h.tp.snd_nxt;
                flight_cwnd = h.tp.snd_cwnd;
                i = 0;
            }
            now_ns += 2 * NSEC_PER_MSEC;
            let rtt_us = if flight_cwnd >= 80 { thresh_us + 1 } else { 100_000 + i * 1000 };
            h.ack(now_ns, rtt_us as i32);
            h.tp.snd_nxt = h.tp.snd_una + h.tp.snd_cwnd as u64 * MSS;
            i += 1;
        }
        assert_eq!(flight_cwnd, 80);
        assert_eq!(h.mib(Mib::TCPHystartDelayDetect), 1);
        assert_eq!(h.tp.snd_ssthresh, 80 + HYSTART_MIN_SAMPLES as u32);
    }

    // --- HyStart ACK train ---

    /// Up to `rounds` slow-start rounds from `*start_ns` with ACKs `spacing_us` apart and a
    /// constant RTT, stopping after the round where HyStart fired; `*start_ns` moves to the
    /// next round's start (one RTT later, or when the previous ACK train ends).
    fn train_rounds(
        h: &mut Harness,
        start_ns: &mut u64,
        rtt_us: u32,
        spacing_us: u64,
        rounds: u32,
    ) {
        for _ in 0..rounds {
            let n = h.round(*start_ns, spacing_us * 1000, |_| rtt_us as i32);
            *start_ns += (n as u64 * spacing_us).max(rtt_us as u64) * 1000;
            if h.cc.found {
                break;
            }
        }
    }

    #[test]
    fn hystart_ack_train_unpaced_fires_past_half_the_min_rtt() {
        let p = params_with(|p| p.hystart_detect = HYSTART_ACK_TRAIN);
        let mut h = Harness::new(&p, 16);
        let (rtt_us, spacing_us) = (20_000u32, 1_000u64);
        assert_eq!(h.tp.sk_pacing_status, PacingStatus::None);
        let mut start_ns = T0_NS;
        train_rounds(&mut h, &mut start_ns, rtt_us, spacing_us, 1);
        // Unpaced, no pacing rate: threshold = (delay_min + 0)/2. The first ACK of the round
        // opens it; the train fires on the first ACK more than the threshold after it.
        let threshold_us = rtt_us / 2;
        let first_k = threshold_us as u64 / spacing_us + 1;
        assert_eq!(h.mib(Mib::TCPHystartTrainDetect), 1);
        assert_eq!(h.tp.snd_ssthresh, 16 + first_k as u32);
        assert_eq!(h.mib(Mib::TCPHystartTrainCwnd), 16 + first_k);
        assert_eq!(h.mib(Mib::TCPHystartDelayDetect), 0);
    }

    #[test]
    fn hystart_ack_train_paced_needs_the_full_min_rtt_plus_ack_delay() {
        let p = params_with(|p| p.hystart_detect = HYSTART_ACK_TRAIN);
        let mut h = Harness::new(&p, 16);
        h.tp.sk_pacing_status = PacingStatus::Fq;
        h.tp.sk_pacing_rate = 1_000_000_000;
        let (rtt_us, spacing_us) = (20_000u32, 1_000u64);
        // Round 1 spans 15 ms: shorter than the paced threshold, no exit yet.
        let mut start_ns = T0_NS;
        train_rounds(&mut h, &mut start_ns, rtt_us, spacing_us, 1);
        assert_eq!(h.mib(Mib::TCPHystartTrainDetect), 0);
        let cwnd2 = h.tp.snd_cwnd;
        train_rounds(&mut h, &mut start_ns, rtt_us, spacing_us, 1);
        let threshold_us = rtt_us + hystart_ack_delay(&h.tp);
        let first_k = threshold_us as u64 / spacing_us + 1;
        assert!(first_k < cwnd2 as u64);
        assert_eq!(h.mib(Mib::TCPHystartTrainDetect), 1);
        assert_eq!(h.tp.snd_ssthresh as u64, cwnd2 as u64 + first_k);
        assert_eq!(h.mib(Mib::TCPHystartTrainCwnd), cwnd2 as u64 + first_k);
    }

    #[test]
    fn hystart_ack_train_needs_closely_spaced_acks() {
        // ACKs more than hystart_ack_delta_us (2 ms) apart never form a train, however long
        // the round lasts.
        let p = params_with(|p| p.hystart_detect = HYSTART_ACK_TRAIN);
        let mut h = Harness::new(&p, 16);
        let mut start_ns = T0_NS;
        train_rounds(&mut h, &mut start_ns, 20_000, p.hystart_ack_delta_us as u64 + 1_000, 3);
        assert_eq!(h.tp.snd_cwnd, 16 * 8);
        assert_eq!(h.mib(Mib::TCPHystartTrainDetect), 0);
        assert_eq!(h.tp.snd_ssthresh, TCP_INFINITE_SSTHRESH);
    }

    #[test]
    fn hystart_off_never_exits_slow_start() {
        let p = params_with(|p| p.hystart = false);
        let mut h = Harness::new(&p, 16);
        let mut start_ns = T0_NS;
        train_rounds(&mut h, &mut start_ns, 20_000, 100, 3);
        assert_eq!(h.tp.snd_ssthresh, TCP_INFINITE_SSTHRESH);
        assert_eq!(h.tp.snd_cwnd, 16 * 8);
    }
}
