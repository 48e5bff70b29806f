//! STARTUP and DRAIN: fill the pipe, then drain the queue that filling it built.
//!
//! STARTUP paces and sizes cwnd at `BBR_HIGH_GAIN` (2/ln 2), doubling the delivery rate
//! each round. The pipe is estimated full once `BBR_FULL_BW_CNT` (3) consecutive rounds,
//! judged on their first ACK and not app-limited, fail to raise `max_bw` to 5/4 of the
//! `full_bw` seen at the last growth. Three rounds, because receive-window autotuning
//! needs one round to grow rwin, one to fill it, and one to show the higher rate (and
//! transient cross traffic or radio noise may pass meanwhile).
//!
//! DRAIN then paces at 1/high_gain until the packets in the network at the next EDT fit
//! `bbr_inflight(max_bw, 1.0)`, which usually takes about one round.

use super::{Bbr, Mode, BBR_FULL_BW_CNT, BBR_FULL_BW_THRESH, BBR_SCALE, BBR_UNIT};
use crate::tcp::rate_sample::RateSample;
use crate::tcp::sock::TcpSock;

impl Bbr {
    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_reset_startup_mode()
    pub(super) fn reset_startup_mode(&mut self) {
        self.transition_to(Mode::Startup);
    }

    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_check_full_bw_reached()
    pub(super) fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached() || !self.round_start || rs.is_app_limited {
            return;
        }

        let bw_thresh = ((self.full_bw as u64 * BBR_FULL_BW_THRESH as u64) >> BBR_SCALE) as u32;
        if self.max_bw() >= bw_thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= BBR_FULL_BW_CNT;
    }

    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_check_drain()
    /// If the pipe is probably full, drain the queue, then enter steady state.
    pub(super) fn check_drain(&mut self, tp: &mut TcpSock) {
        if self.mode == Mode::Startup && self.full_bw_reached() {
            self.transition_to(Mode::Drain);
            tp.snd_ssthresh = self.inflight(tp, self.max_bw(), BBR_UNIT);
        }
        // Inflight may already be small enough: check on the same ACK.
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(tp, tp.packets_in_flight())
                <= self.inflight(tp, self.max_bw(), BBR_UNIT)
        {
            self.reset_probe_bw_mode(tp); // the queue is estimated drained
        }
    }
}
