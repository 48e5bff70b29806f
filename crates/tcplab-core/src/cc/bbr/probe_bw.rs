//! PROBE_BW: cycle the pacing gain to find and share bandwidth.
//!
//! The eight phases pace at 5/4, 3/4, then 1.0 six times, each lasting about one
//! min_rtt (measured on `tp.delivered_mstamp`):
//!
//! - gain 1.0 ends after min_rtt;
//! - gain 5/4 ends after min_rtt once inflight reached `bbr_inflight(bw, 5/4)` or a loss
//!   shows the path cannot hold that much;
//! - gain 3/4 ends after min_rtt, or as soon as inflight is down to `bbr_inflight(bw, 1)`.
//!
//! Entering PROBE_BW picks a random phase among the seven that are not the 3/4 one (the
//! draw is of `cycle_idx` in 1..=7 followed by one advance), so flows that enter together
//! do not probe in lockstep and a flow never starts by yielding.

use super::{tcp_stamp_us_delta, Bbr, Mode, BBR_CYCLE_RAND, BBR_UNIT, CYCLE_LEN};
use crate::tcp::rate_sample::RateSample;
use crate::tcp::sock::TcpSock;

impl Bbr {
    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_is_next_cycle_phase()
    /// Is it time to move on: the phase's duration and/or its inflight target reached?
    fn is_next_cycle_phase(&self, tp: &TcpSock, rs: &RateSample) -> bool {
        let is_full_length =
            tcp_stamp_us_delta(tp.delivered_mstamp, self.cycle_mstamp) > self.min_rtt_us;

        // Gain 1.0 paces at the estimated bw: full use of the pipe, no extra queue.
        if self.pacing_gain == BBR_UNIT {
            return is_full_length; // wall clock only
        }

        let inflight = self.packets_in_net_at_edt(tp, rs.prior_in_flight);
        let bw = self.max_bw();

        // Probing (> 1.0) tries to raise inflight to pacing_gain x BDP, which can take
        // more than min_rtt on a short path; it gives up on loss, as a shallow buffer may
        // not hold that much.
        if self.pacing_gain > BBR_UNIT {
            return is_full_length
                && (rs.losses != 0 || inflight >= self.inflight(tp, bw, self.pacing_gain));
        }

        // Draining (< 1.0) removes the probe's queue; once inflight is down to one BDP,
        // draining longer would leave the pipe underused.
        is_full_length || inflight <= self.inflight(tp, bw, BBR_UNIT)
    }

    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_advance_cycle_phase()
    pub(super) fn advance_cycle_phase(&mut self, tp: &TcpSock) {
        self.cycle_idx = (self.cycle_idx + 1) & (CYCLE_LEN - 1);
        self.cycle_mstamp = tp.delivered_mstamp;
    }

    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_update_cycle_phase()
    pub(super) fn update_cycle_phase(&mut self, tp: &TcpSock, rs: &RateSample) {
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(tp, rs) {
            self.advance_cycle_phase(tp);
        }
    }

    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_reset_probe_bw_mode()
    pub(super) fn reset_probe_bw_mode(&mut self, tp: &TcpSock) {
        self.transition_to(Mode::ProbeBw);
        // get_random_u32_below(bbr_cycle_rand), drawn from the flow's own stream.
        self.cycle_idx = CYCLE_LEN - 1 - self.rng.below(BBR_CYCLE_RAND);
        self.advance_cycle_phase(tp); // flip to the next phase of the gain cycle
    }
}
