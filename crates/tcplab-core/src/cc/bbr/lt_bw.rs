//! The long-term ("LT") bandwidth estimator: token-bucket policer detection.
//!
//! Policers are common (Flach et al., "An Internet-Wide Analysis of Traffic Policing",
//! SIGCOMM 2016). Their burst lets BBR measure a bw far above the policed rate, and
//! pacing at it means heavy loss. BBR estimates it is policed after two consecutive
//! sampling intervals that are both lossy and consistent:
//!
//! - sampling starts at the first loss (the bucket's burst is spent by then), and is
//!   reset by any app-limited sample;
//! - an interval spans 4 to 16 packet-timed rounds and ends on an ACK reporting a loss,
//!   once `lost / delivered >= 50/256` over it; its rate is `delivered / elapsed` at
//!   millisecond resolution;
//! - two intervals are consistent if their rates differ by at most 1/8 or 4 kbit/s.
//!
//! Then `lt_bw` = the mean of the two rates becomes the bw for pacing and cwnd, with
//! pacing gain 1.0, until 48 rounds of PROBE_BW have passed; then the estimator resets
//! and gain cycling restarts.

use super::{
    Bbr, Mode, BBR_LT_BW_DIFF, BBR_LT_BW_MAX_RTTS, BBR_LT_BW_RATIO, BBR_LT_INTVL_MIN_RTTS,
    BBR_LT_LOSS_THRESH, BBR_SCALE, BBR_UNIT, BW_UNIT,
};
use crate::tcp::rate_sample::RateSample;
use crate::tcp::sock::TcpSock;
use crate::time::USEC_PER_MSEC;

/// `lt_rtt_cnt` is a 7-bit field of `struct bbr`.
const LT_RTT_CNT_MASK: u32 = 0x7F;

impl Bbr {
    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_reset_lt_bw_sampling_interval()
    /// Start a new long-term sampling interval.
    fn reset_lt_bw_sampling_interval(&mut self, tp: &TcpSock) {
        self.lt_last_stamp = (tp.delivered_mstamp / USEC_PER_MSEC) as u32;
        self.lt_last_delivered = tp.delivered;
        self.lt_last_lost = tp.lost;
        self.lt_rtt_cnt = 0;
    }

    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_reset_lt_bw_sampling()
    /// Reset long-term sampling completely.
    pub(super) fn reset_lt_bw_sampling(&mut self, tp: &TcpSock) {
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_bw_sampling_interval(tp);
    }

    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_lt_bw_interval_done()
    /// An interval ended with rate `bw`: are we policed?
    fn lt_bw_interval_done(&mut self, tp: &TcpSock, bw: u32) {
        if self.lt_bw != 0 {
            // Is the new rate close to the previous interval's? (The kernel's abs() of a
            // u32 difference works on its value as a signed int.)
            let diff = (bw.wrapping_sub(self.lt_bw) as i32).wrapping_abs() as u32;
            if diff.wrapping_mul(BBR_UNIT) <= BBR_LT_BW_RATIO.wrapping_mul(self.lt_bw)
                || Self::rate_bytes_per_sec(tp, diff as u64, BBR_UNIT) <= BBR_LT_BW_DIFF as u64
            {
                // All criteria met: estimate we are policed.
                self.lt_bw = bw.wrapping_add(self.lt_bw) >> 1; // mean of the 2 intervals
                self.lt_use_bw = true;
                self.pacing_gain = BBR_UNIT; // try to avoid drops
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_bw_sampling_interval(tp);
    }

    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_lt_bw_sampling()
    pub(super) fn lt_bw_sampling(&mut self, tp: &TcpSock, rs: &RateSample) {
        if self.lt_use_bw {
            // Already policed: after bbr_lt_bw_max_rtts rounds, probe again.
            if self.mode == Mode::ProbeBw && self.round_start {
                self.lt_rtt_cnt = (self.lt_rtt_cnt + 1) & LT_RTT_CNT_MASK;
                if self.lt_rtt_cnt >= BBR_LT_BW_MAX_RTTS {
                    self.reset_lt_bw_sampling(tp); // stop using lt_bw
                    self.reset_probe_bw_mode(tp); // restart gain cycling
                }
            }
            return;
        }

        // Wait for the first loss before sampling, so that the policer has spent its
        // tokens and the samples show its steady rate, not the burst.
        if !self.lt_is_sampling {
            if rs.losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval(tp);
            self.lt_is_sampling = true;
        }

        // Running out of data would underestimate the rate.
        if rs.is_app_limited {
            self.reset_lt_bw_sampling(tp);
            return;
        }

        if self.round_start {
            self.lt_rtt_cnt = (self.lt_rtt_cnt + 1) & LT_RTT_CNT_MASK;
        }
        if self.lt_rtt_cnt < BBR_LT_INTVL_MIN_RTTS {
            return; // the interval needs to be longer
        }
        if self.lt_rtt_cnt > 4 * BBR_LT_INTVL_MIN_RTTS {
            self.reset_lt_bw_sampling(tp); // the interval is too long
            return;
        }

        // End the interval on a loss, when the tokens are estimated spent: ending earlier
        // underestimates the policed rate.
        if rs.losses == 0 {
            return;
        }

        let lost = tp.lost.wrapping_sub(self.lt_last_lost);
        let delivered = tp.delivered.wrapping_sub(self.lt_last_delivered);
        // Lossy enough (lost/delivered >= 50/256)? If not, wait.
        if delivered == 0 || (lost << BBR_SCALE) < BBR_LT_LOSS_THRESH.wrapping_mul(delivered) {
            return;
        }

        // Mean delivery rate over the interval, at ms resolution.
        let mut t = ((tp.delivered_mstamp / USEC_PER_MSEC) as u32).wrapping_sub(self.lt_last_stamp);
        if (t as i32) < 1 {
            return; // shorter than 1 ms: wait
        }
        if t as u64 >= u32::MAX as u64 / USEC_PER_MSEC {
            self.reset_lt_bw_sampling(tp); // too long to scale to µs
            return;
        }
        t *= USEC_PER_MSEC as u32;
        let bw = delivered as u64 * BW_UNIT / t as u64;
        self.lt_bw_interval_done(tp, bw as u32);
    }
}
