//! Pacing rate and TSO sizing.
//!
//! ```text
//!   rate_bytes_per_sec = ((bw * mss * gain) >> BBR_SCALE) * (USEC_PER_SEC / 100 * 99) >> BW_SCALE
//!   sk_pacing_rate     = min(rate_bytes_per_sec, sk_max_pacing_rate)
//! ```
//!
//! The multiplication order keeps the u64 from overflowing up to about 2.9 Tbit/s at
//! gain 2.89. Until STARTUP has filled the pipe, the pacing rate only ratchets up, so a
//! low early sample cannot slow the ramp.

use super::{
    Bbr, BBR_HIGH_GAIN, BBR_MIN_TSO_RATE, BBR_PACING_MARGIN_PERCENT, BBR_SCALE, BW_SCALE, BW_UNIT,
};
use crate::tcp::sock::{TcpSock, GSO_MAX_SIZE, MAX_TCP_HEADER};
use crate::time::{USEC_PER_MSEC, USEC_PER_SEC};

/// `GSO_LEGACY_MAX_SIZE` (v5.19+ name of the 64 KB legacy GSO limit).
const GSO_LEGACY_MAX_SIZE: u32 = GSO_MAX_SIZE;

impl Bbr {
    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_rate_bytes_per_sec()
    /// `rate` (packets/µs << 24) times `gain` (x256), in bytes per second, 1% under.
    pub(super) fn rate_bytes_per_sec(tp: &TcpSock, rate: u64, gain: u32) -> u64 {
        let mss = tp.mss_cache as u64;
        let mut rate = rate.wrapping_mul(mss);
        rate = rate.wrapping_mul(gain as u64);
        rate >>= BBR_SCALE;
        rate = rate.wrapping_mul(USEC_PER_SEC / 100 * (100 - BBR_PACING_MARGIN_PERCENT as u64));
        rate >> BW_SCALE
    }

    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_bw_to_pacing_rate()
    pub(super) fn bw_to_pacing_rate(tp: &TcpSock, bw: u32, gain: u32) -> u64 {
        let rate = Self::rate_bytes_per_sec(tp, bw as u64, gain);
        rate.min(tp.sk_max_pacing_rate)
    }

    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_init_pacing_rate_from_rtt()
    /// Initial pacing rate: high_gain x cwnd / srtt, or / 1 ms without an RTT sample.
    pub(super) fn init_pacing_rate_from_rtt(&mut self, tp: &mut TcpSock) {
        let rtt_us = if tp.srtt_us != 0 {
            self.has_seen_rtt = true;
            (tp.srtt_us >> 3).max(1)
        } else {
            USEC_PER_MSEC as u32 // nominal default RTT
        };
        let bw = tp.snd_cwnd as u64 * BW_UNIT / rtt_us as u64;
        // bbr_bw_to_pacing_rate() takes a u32 bw: the kernel truncates here too.
        tp.sk_pacing_rate = Self::bw_to_pacing_rate(tp, bw as u32, BBR_HIGH_GAIN);
    }

    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_set_pacing_rate()
    pub(super) fn set_pacing_rate(&mut self, tp: &mut TcpSock, bw: u32, gain: u32) {
        let rate = Self::bw_to_pacing_rate(tp, bw, gain);
        if !self.has_seen_rtt && tp.srtt_us != 0 {
            self.init_pacing_rate_from_rtt(tp);
        }
        if self.full_bw_reached() || rate > tp.sk_pacing_rate {
            tp.sk_pacing_rate = rate;
        }
    }

    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_min_tso_segs()
    /// Overrides `sysctl_tcp_min_tso_segs`: single segments below 1.2 Mbit/s.
    pub(super) fn bbr_min_tso_segs(tp: &TcpSock) -> u32 {
        if tp.sk_pacing_rate < (BBR_MIN_TSO_RATE >> 3) as u64 {
            1
        } else {
            2
        }
    }

    // Linux v6.12 net/ipv4/tcp_bbr.c: bbr_tso_segs_goal()
    /// Segments per TSO burst: about 1 ms of data (`sk_pacing_shift` = 10), like
    /// `tcp_tso_autosize()` but ignoring the device's `sk_gso_max_size`; at most 127.
    pub(super) fn tso_segs_goal(tp: &TcpSock) -> u32 {
        let per_shift = tp
            .sk_pacing_rate
            .checked_shr(tp.sk_pacing_shift)
            .unwrap_or(0);
        let bytes = per_shift.min((GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER) as u64) as u32;
        let segs = (bytes / tp.mss_cache).max(Self::bbr_min_tso_segs(tp));
        segs.min(0x7F)
    }
}
