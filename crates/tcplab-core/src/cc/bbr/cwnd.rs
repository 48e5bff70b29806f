//! The congestion window: BDP target, quantization budget, EDT-aware inflight, and loss
//! recovery.
//!
//! ```text
//!   bdp(bw, gain)      = ceil(((bw * min_rtt_us * gain) >> BBR_SCALE) / BW_UNIT)
//!   inflight(bw, gain) = quantization_budget(bdp(bw, gain))
//!   target_cwnd        = quantization_budget(bdp(bw, cwnd_gain) + ack_aggregation_cwnd)
//!   quantization_budget(c) = round_up_even(c + 3 * tso_segs_goal) (+2 in PROBE_BW phase 0)
//! ```
//!
//! On each ACK cwnd slow-starts toward the target (or snaps down to it once the pipe has
//! been full), never below 4 packets, and is capped at 4 in PROBE_RTT. The first round of
//! Recovery uses packet conservation; leaving Recovery or Loss restores `prior_cwnd`.

use super::{
    Bbr, Mode, BBR_CWND_MIN_TARGET, BBR_EXTRA_ACKED_GAIN, BBR_EXTRA_ACKED_MAX_US, BBR_SCALE,
    BBR_UNIT, BW_SCALE, BW_UNIT, TCP_INIT_CWND,
};
use crate::tcp::rate_sample::RateSample;
use crate::tcp::sock::{CaState, TcpSock};
use crate::time::NSEC_PER_USEC;

impl Bbr {
    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_save_cwnd()
    /// Remember the last known good cwnd, to restore after recovery or PROBE_RTT.
    pub(super) fn save_cwnd(&mut self, tp: &TcpSock) {
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = tp.snd_cwnd; // this cwnd is good enough
        } else {
            // Recovery or PROBE_RTT has cut cwnd for now: keep the larger one.
            self.prior_cwnd = self.prior_cwnd.max(tp.snd_cwnd);
        }
    }

    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_bdp()
    /// `ceil(bw * min_rtt * gain)` in packets; `TCP_INIT_CWND` before any RTT sample (so
    /// that after an early RTO cwnd slow-starts toward something safe).
    pub(super) fn bdp(&self, bw: u32, gain: u32) -> u32 {
        if self.min_rtt_us == u32::MAX {
            return TCP_INIT_CWND;
        }
        let w = bw as u64 * self.min_rtt_us as u64;
        // Round up, so that a low estimate cannot feed back into a lower one.
        (w.wrapping_mul(gain as u64) >> BBR_SCALE).div_ceil(BW_UNIT) as u32
    }

    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_quantization_budget()
    /// Room for one full TSO skb in each of the sender's qdisc, its TSO engine and the
    /// receiver's GRO/delayed-ACK engine; rounded to an even count against delayed ACKs;
    /// plus 2 in the probing phase so that even a tiny BDP gets inflight above BDP.
    pub(super) fn quantization_budget(&self, tp: &TcpSock, cwnd: u32) -> u32 {
        let mut cwnd = cwnd.wrapping_add(3 * Self::tso_segs_goal(tp));
        cwnd = cwnd.wrapping_add(1) & !1u32;
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            cwnd = cwnd.wrapping_add(2);
        }
        cwnd
    }

    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_inflight()
    /// Inflight target in packets for `bw` and `gain`, quantization budget included.
    pub(super) fn inflight(&self, tp: &TcpSock, bw: u32, gain: u32) -> u32 {
        let inflight = self.bdp(bw, gain);
        self.quantization_budget(tp, inflight)
    }

    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_packets_in_net_at_edt()
    /// Packets likely still in the network when the next skb departs at its earliest
    /// departure time: `inflight_at_edt - bw * (EDT - now)`. With fq or internal pacing
    /// several skbs may already be scheduled, so inflight overstates the network's share.
    /// When raising inflight, the departing TSO burst is counted in.
    pub(super) fn packets_in_net_at_edt(&self, tp: &TcpSock, inflight_now: u32) -> u32 {
        let now_ns = tp.tcp_clock_cache;
        let edt_ns = tp.tcp_wstamp_ns.max(now_ns);
        let interval_us = (edt_ns - now_ns) / NSEC_PER_USEC;
        let interval_delivered =
            ((self.bbr_bw() as u64).wrapping_mul(interval_us) >> BW_SCALE) as u32;
        let mut inflight_at_edt = inflight_now;
        if self.pacing_gain > BBR_UNIT {
            inflight_at_edt = inflight_at_edt.wrapping_add(Self::tso_segs_goal(tp));
        }
        if interval_delivered >= inflight_at_edt {
            return 0;
        }
        inflight_at_edt - interval_delivered
    }

    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_ack_aggregation_cwnd()
    /// cwnd allowance for ACK aggregation, once the pipe has been full:
    /// `min(extra_acked * gain, bw * 100 ms)`.
    pub(super) fn ack_aggregation_cwnd(&self) -> u32 {
        let mut aggr_cwnd = 0;
        if BBR_EXTRA_ACKED_GAIN != 0 && self.full_bw_reached() {
            let max_aggr_cwnd =
                (self.bbr_bw() as u64 * BBR_EXTRA_ACKED_MAX_US as u64 / BW_UNIT) as u32;
            aggr_cwnd = (BBR_EXTRA_ACKED_GAIN * self.extra_acked() as u32) >> BBR_SCALE;
            aggr_cwnd = aggr_cwnd.min(max_aggr_cwnd);
        }
        aggr_cwnd
    }

    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_set_cwnd_to_recover_or_restore()
    /// Loss response. Each ACK first takes the newly lost packets off cwnd (so that an
    /// ACK for P packets releases at most 2P). The first round of Recovery sends one
    /// packet per packet delivered; leaving Recovery or Loss restores `prior_cwnd`.
    /// Sets `*cwnd`; returns true while conserving packets (`*cwnd` is then final).
    pub(super) fn set_cwnd_to_recover_or_restore(
        &mut self,
        tp: &TcpSock,
        rs: &RateSample,
        acked: u32,
        cwnd: &mut u32,
    ) -> bool {
        let prev_state = self.prev_ca_state;
        let state = tp.ca_state;
        let mut c = tp.snd_cwnd;

        if rs.losses > 0 {
            c = (c.wrapping_sub(rs.losses as u32) as i32).max(1) as u32;
        }

        if state == CaState::Recovery && prev_state != CaState::Recovery {
            // First round of Recovery: packet conservation, and a round starts now.
            self.packet_conservation = true;
            self.next_rtt_delivered = tp.delivered;
            // Drop cwnd left unused by the application, TSQ or TSO deferral.
            c = tp.packets_in_flight().wrapping_add(acked);
        } else if prev_state >= CaState::Recovery && state < CaState::Recovery {
            // Leaving loss recovery: restore the cwnd saved when it began.
            c = c.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;

        if self.packet_conservation {
            *cwnd = c.max(tp.packets_in_flight().wrapping_add(acked));
            return true;
        }
        *cwnd = c;
        false
    }

    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_set_cwnd()
    /// Slow-start toward the target cwnd if below it (the bw estimate is growing, or a
    /// loss pulled cwnd down); once the pipe has been full, snap down to it if above.
    pub(super) fn set_cwnd(
        &mut self,
        tp: &mut TcpSock,
        rs: &RateSample,
        acked: u32,
        bw: u32,
        gain: u32,
    ) {
        let mut cwnd = tp.snd_cwnd;

        // No packet fully ACKed: only the caps apply.
        if acked != 0 && !self.set_cwnd_to_recover_or_restore(tp, rs, acked, &mut cwnd) {
            let mut target_cwnd = self.bdp(bw, gain);
            // Extra inflight for the aggregation (of data or ACKs) seen in the ACK stream.
            target_cwnd = target_cwnd.wrapping_add(self.ack_aggregation_cwnd());
            target_cwnd = self.quantization_budget(tp, target_cwnd);

            if self.full_bw_reached() {
                // Only cut cwnd once the pipe has been filled.
                cwnd = cwnd.wrapping_add(acked).min(target_cwnd);
            } else if cwnd < target_cwnd || tp.delivered < TCP_INIT_CWND {
                cwnd = cwnd.wrapping_add(acked);
            }
            cwnd = cwnd.max(BBR_CWND_MIN_TARGET);
        }

        tp.set_cwnd(cwnd.min(tp.snd_cwnd_clamp)); // global cap
        if self.mode == Mode::ProbeRtt {
            // Drain the queue and refresh min_rtt.
            tp.set_cwnd(tp.snd_cwnd.min(BBR_CWND_MIN_TARGET));
        }
    }
}
