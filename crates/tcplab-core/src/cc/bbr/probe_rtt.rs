//! The min_rtt filter and PROBE_RTT.
//!
//! min_rtt is the lowest RTT sample of the last `BBR_MIN_RTT_WIN_SEC` (10 s): a sample
//! replaces it if strictly lower (Linux >= v5.10, upstream 1b9e2a8c99a5: with `<=`,
//! millisecond-granular timestamp RTTs during recovery could postpone PROBE_RTT forever),
//! or if the window has expired and the ACK is not flagged as possibly delayed.
//!
//! When the window expires, a flow that is not restarting from idle enters PROBE_RTT:
//! cwnd is capped at `BBR_CWND_MIN_TARGET` (4) to drain the bottleneck queue so that
//! the flows sharing it measure the true propagation delay. Once inflight is at most 4
//! the flow stays for `BBR_PROBE_RTT_MODE_MS` (200 ms) and at least one packet-timed
//! round, then restores its cwnd and returns to PROBE_BW (or STARTUP if the pipe was
//! never full). 200 ms per 10 s bounds the cost to about 2%, paid only by flows that
//! stayed busy the whole window: most applications have quiet periods that refresh
//! min_rtt for free.

use super::{after, Bbr, Mode, BBR_CWND_MIN_TARGET, BBR_MIN_RTT_WIN_SEC, BBR_PROBE_RTT_MODE_MS};
use crate::tcp::rate_sample::RateSample;
use crate::tcp::sock::TcpSock;

impl Bbr {
    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_reset_mode()
    /// Leave PROBE_RTT for the mode the flow had reached.
    fn reset_mode(&mut self, tp: &TcpSock) {
        if !self.full_bw_reached() {
            self.reset_startup_mode();
        } else {
            self.reset_probe_bw_mode(tp);
        }
    }

    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_check_probe_rtt_done()
    pub(super) fn check_probe_rtt_done(&mut self, tp: &mut TcpSock) {
        if !(self.probe_rtt_done_stamp != 0 && after(tp.jiffies32(), self.probe_rtt_done_stamp)) {
            return;
        }

        self.min_rtt_stamp = tp.jiffies32(); // next PROBE_RTT in a full window
        tp.set_cwnd(tp.snd_cwnd.max(self.prior_cwnd));
        self.reset_mode(tp);
    }

    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_update_min_rtt()
    pub(super) fn update_min_rtt(&mut self, tp: &mut TcpSock, rs: &RateSample) {
        // Track the min RTT over the BBR_MIN_RTT_WIN_SEC window.
        let filter_expired = after(
            tp.jiffies32(),
            self.min_rtt_stamp
                .wrapping_add(BBR_MIN_RTT_WIN_SEC * tp.hz()),
        );
        if rs.rtt_us >= 0
            && (rs.rtt_us < self.min_rtt_us as i64 || (filter_expired && !rs.is_ack_delayed))
        {
            self.min_rtt_us = rs.rtt_us as u32;
            self.min_rtt_stamp = tp.jiffies32();
        }

        if BBR_PROBE_RTT_MODE_MS > 0
            && filter_expired
            && !self.idle_restart
            && self.mode != Mode::ProbeRtt
        {
            self.transition_to(Mode::ProbeRtt); // dip, drain the queue
            self.save_cwnd(tp); // to restore it on exit
            self.probe_rtt_done_stamp = 0;
        }

        if self.mode == Mode::ProbeRtt {
            // Samples taken at 4 packets say nothing about bw: mark them app-limited.
            let mark = tp.delivered.wrapping_add(tp.packets_in_flight());
            tp.app_limited = if mark != 0 { mark } else { 1 };
            // Stay at minimum inflight for max(200 ms, one round).
            if self.probe_rtt_done_stamp == 0 && tp.packets_in_flight() <= BBR_CWND_MIN_TARGET {
                self.probe_rtt_done_stamp = tp
                    .jiffies32()
                    .wrapping_add(tp.msecs_to_jiffies(BBR_PROBE_RTT_MODE_MS));
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = tp.delivered;
            } else if self.probe_rtt_done_stamp != 0 {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(tp);
                }
            }
        }
        // The restart from idle ends with the first (S)ACK of new data.
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }
}
