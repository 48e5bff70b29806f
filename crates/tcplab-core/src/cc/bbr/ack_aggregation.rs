//! ACK aggregation: provision cwnd for data that arrives in bursts of ACKs.
//!
//! Wi-Fi, cable and LRO/GRO deliver ACKs in clumps with silences between them. BBR
//! measures, per epoch, how many packets were ACKed beyond what `bw` predicts:
//!
//! ```text
//!   expected_acked = bw * (delivered_mstamp - ack_epoch_mstamp)
//!   extra_acked    = min(ack_epoch_acked - expected_acked, cwnd)
//! ```
//!
//! and keeps its max over two slots of `BBR_EXTRA_ACKED_WIN_RTTS` (5) rounds, i.e. over
//! the last 5 to 10 rounds. An epoch restarts when the ACK rate falls to the expected
//! rate, or after 2^20 packets. Once the pipe has been full, the max is added to the cwnd
//! target (see `Bbr::ack_aggregation_cwnd`), capped at bw x 100 ms.

use super::{
    tcp_stamp_us_delta, Bbr, BBR_ACK_EPOCH_ACKED_RESET_THRESH, BBR_EXTRA_ACKED_GAIN,
    BBR_EXTRA_ACKED_WIN_RTTS, BW_UNIT,
};
use crate::tcp::rate_sample::RateSample;
use crate::tcp::sock::TcpSock;

/// `ack_epoch_acked` is a 20-bit field of `struct bbr`.
const ACK_EPOCH_ACKED_MAX: u32 = 0xF_FFFF;
/// `extra_acked_win_rtts` is a 5-bit field.
const EXTRA_ACKED_WIN_RTTS_MAX: u32 = 0x1F;

impl Bbr {
    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_extra_acked()
    /// Max extra ACKed packets over the last 5-10 rounds.
    pub(super) fn extra_acked(&self) -> u16 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_update_ack_aggregation()
    pub(super) fn update_ack_aggregation(&mut self, tp: &TcpSock, rs: &RateSample) {
        if BBR_EXTRA_ACKED_GAIN == 0
            || rs.acked_sacked == 0
            || rs.delivered < 0
            || rs.interval_us <= 0
        {
            return;
        }

        if self.round_start {
            self.extra_acked_win_rtts =
                (self.extra_acked_win_rtts + 1).min(EXTRA_ACKED_WIN_RTTS_MAX);
            if self.extra_acked_win_rtts >= BBR_EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx = if self.extra_acked_win_idx != 0 { 0 } else { 1 };
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }

        // Packets the bw estimate says should have been delivered over the epoch.
        let epoch_us = tcp_stamp_us_delta(tp.delivered_mstamp, self.ack_epoch_mstamp);
        let mut expected_acked = (self.bbr_bw() as u64 * epoch_us as u64 / BW_UNIT) as u32;

        // Restart the epoch if the ACK rate is at or below the expected one, or if the
        // epoch has counted very many packets (and may be very old).
        if self.ack_epoch_acked <= expected_acked
            || self.ack_epoch_acked.wrapping_add(rs.acked_sacked)
                >= BBR_ACK_EPOCH_ACKED_RESET_THRESH
        {
            self.ack_epoch_acked = 0;
            self.ack_epoch_mstamp = tp.delivered_mstamp;
            expected_acked = 0;
        }

        // Packets delivered beyond the expected count.
        self.ack_epoch_acked =
            ACK_EPOCH_ACKED_MAX.min(self.ack_epoch_acked.wrapping_add(rs.acked_sacked));
        let mut extra_acked = self.ack_epoch_acked.wrapping_sub(expected_acked);
        extra_acked = extra_acked.min(tp.snd_cwnd);
        let idx = self.extra_acked_win_idx;
        if extra_acked > self.extra_acked[idx] as u32 {
            self.extra_acked[idx] = extra_acked as u16; // a u16 in the kernel too
        }
    }
}
