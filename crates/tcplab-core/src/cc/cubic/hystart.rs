//! HyStart (hybrid slow start) in CUBIC: leave slow start before the first loss when the
//! path looks full. Linux v6.12 `net/ipv4/tcp_cubic.c`: `bictcp_hystart_reset()`,
//! `hystart_update()`, `hystart_ack_delay()`.
//!
//! # Model
//!
//! Rounds are tracked from the first ACK: a round ends once everything sent at its start
//! is ACKed (`end_seq`). Once `cwnd >= hystart_low_window`, two detectors may end slow
//! start (`ssthresh = cwnd`, `found`):
//!
//! - **ACK train** (`hystart_detect` bit 1): the ACKs of a round arriving at most
//!   `hystart_ack_delta_us` apart span more than `delay_min` (half of it when TCP does not
//!   pace: an unpaced full pipe's train lasts about `delay_min / 2`), plus the TSO/GRO
//!   allowance of [`hystart_ack_delay`];
//! - **delay increase** (bit 2): the minimum RTT of the round's first
//!   `HYSTART_MIN_SAMPLES` (8) samples exceeds `delay_min + clamp(delay_min / 8, 4 ms,
//!   16 ms)`.
//!
//! Units: `round_start`, `last_ack`: µs, the low 32 bits of `tcp_mstamp`; `delay_min`,
//! `curr_rtt`: µs. The state lives in [`Cubic`] (the kernel's `struct bictcp`); the hook
//! that calls it is CUBIC's `pkts_acked` (`cubictcp_acked()`, in `mod.rs`).

use super::Cubic;
use crate::mib::Mib;
use crate::tcp::sock::{PacingStatus, TcpSock};
use crate::time::{USEC_PER_MSEC, USEC_PER_SEC};

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
pub(super) fn hystart_delay_thresh(x_us: u32) -> u32 {
    x_us.clamp(HYSTART_DELAY_MIN, HYSTART_DELAY_MAX)
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

impl Cubic {
    // Linux v6.12 net/ipv4/tcp_cubic.c: bictcp_hystart_reset()
    /// Starts a HyStart round now; it lasts until everything sent so far is ACKed.
    pub(super) fn bictcp_hystart_reset(&mut self, tp: &TcpSock) {
        self.round_start = bictcp_clock_us(tp);
        self.last_ack = self.round_start;
        self.end_seq = tp.snd_nxt;
        self.curr_rtt = u32::MAX;
        self.sample_cnt = 0;
    }

    // Linux v6.12 net/ipv4/tcp_cubic.c: hystart_update() (+ stable fix 25c1a9ca53db)
    /// One HyStart step on an RTT sample `delay_us` (slow start): a new round once the last
    /// one is ACKed, then, with cwnd >= low window, the ACK-train and delay checks.
    pub(super) fn hystart_update(&mut self, tp: &mut TcpSock, delay_us: u32) {
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
                > self
                    .delay_min
                    .wrapping_add(hystart_delay_thresh(self.delay_min >> 3))
            {
                self.found = true;
                tp.mib.inc(Mib::TCPHystartDelayDetect);
                tp.mib.add(Mib::TCPHystartDelayCwnd, tp.snd_cwnd as u64);
                tp.snd_ssthresh = tp.snd_cwnd;
            }
        }
    }
}
