//! RTT estimation and the retransmission timeout (Linux v6.12 net/ipv4/tcp_input.c:
//! `tcp_rtt_estimator()`, `tcp_set_rto()`, `tcp_update_rtt_min()`; tcp_output.c:
//! `tcp_rtt_estimator` callers).
//!
//! Jacobson/Karels with Linux's refinements: `srtt_us` holds 8x the smoothed RTT,
//! `mdev_us` 4x the mean deviation; a falling RTT only feeds 1/8 of its deviation into
//! mdev. `rttvar_us` is the per-window max of mdev and decays slowly, never below
//! `TCP_RTO_MIN` (200 ms), so `RTO = srtt + rttvar >= srtt + 200 ms`. The RTO backs off
//! exponentially on each timeout, up to `TCP_RTO_MAX` (120 s).

use crate::tcp::sock::TcpSock;

/// `TCP_RTO_MAX` = 120 s (`TcpSock::tcp_rto_max()` gives it in the host's jiffies; v6.12
/// has no `tcp_rto_max_ms` sysctl yet, it came in v6.15).
pub const TCP_RTO_MAX_S: u32 = 120;

/// `tcp_rtt_estimator()`; `rto_min_us` is `tcp_rto_min_us()`.
pub fn rtt_estimator(tp: &mut TcpSock, mrtt_us: i64, rto_min_us: u32) {
    let mut m = mrtt_us;
    let mut srtt = tp.srtt_us as i64;
    if srtt != 0 {
        m -= srtt >> 3; // m is now error in rtt est
        srtt += m; // rtt = 7/8 rtt + 1/8 new
        let mut mdev = tp.mdev_us as i64;
        if m < 0 {
            m = -m; // m is now abs(error)
            m -= mdev >> 2; // similar update on mdev
                            // This is similar to one of Eifel findings: if the RTT falls, the deviation
                            // gets only 1/8 of the weight so that RTO does not jump up.
            if m > 0 {
                m >>= 3;
            }
        } else {
            m -= mdev >> 2;
        }
        mdev += m; // mdev = 3/4 mdev + 1/4 new
        tp.mdev_us = mdev.max(0) as u32;
        if tp.mdev_us > tp.mdev_max_us {
            tp.mdev_max_us = tp.mdev_us;
            if tp.mdev_max_us > tp.rttvar_us {
                tp.rttvar_us = tp.mdev_max_us;
            }
        }
        if tp.snd_una > tp.rtt_seq {
            if tp.mdev_max_us < tp.rttvar_us {
                tp.rttvar_us -= (tp.rttvar_us - tp.mdev_max_us) >> 2;
            }
            tp.rtt_seq = tp.snd_nxt;
            tp.mdev_max_us = rto_min_us;
        }
    } else {
        // No previous measure.
        srtt = m << 3;
        tp.mdev_us = (m << 1) as u32; // make sure rto = 3*rtt
        tp.rttvar_us = tp.mdev_us.max(rto_min_us);
        tp.mdev_max_us = tp.rttvar_us;
        tp.rtt_seq = tp.snd_nxt;
    }
    tp.srtt_us = (srtt.max(1)) as u32;
}

/// `tcp_set_rto()` = `__tcp_set_rto()` + `tcp_bound_rto()`.
pub fn set_rto(tp: &mut TcpSock) {
    let rto_us = (tp.srtt_us >> 3) as u64 + tp.rttvar_us as u64;
    tp.icsk_rto = tp.usecs_to_jiffies(rto_us).min(tp.tcp_rto_max());
}

/// `tcp_update_rtt_min()`.
pub fn update_rtt_min(tp: &mut TcpSock, rtt_us: u32, ack_maybe_delayed: bool, wlen_s: u32) {
    if ack_maybe_delayed && rtt_us > tp.min_rtt_us() {
        return;
    }
    let wlen = wlen_s * tp.hz();
    let now = tp.jiffies32();
    let sample_us = if rtt_us != 0 {
        rtt_us
    } else {
        tp.jiffies_to_usecs(1) as u32
    };
    tp.rtt_min.running_min(wlen, now, sample_us);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_gives_rto_of_three_rtts_or_srtt_plus_200ms() {
        let mut tp = TcpSock::init_sock(1448, 10);
        rtt_estimator(&mut tp, 100_000, 200_000);
        set_rto(&mut tp);
        // srtt = 100 ms, rttvar = max(2*100, 200) ms -> RTO = 300 ms
        assert_eq!(tp.srtt_us >> 3, 100_000);
        assert_eq!(tp.icsk_rto, 300);
        let mut tp = TcpSock::init_sock(1448, 10);
        rtt_estimator(&mut tp, 500, 200_000);
        set_rto(&mut tp);
        // 0.5 ms RTT: RTO = 0.5 + 200 ms -> 201 jiffies (rounded up)
        assert_eq!(tp.icsk_rto, 201);
    }

    #[test]
    fn rto_stays_at_least_srtt_plus_rto_min_on_steady_rtt() {
        let mut tp = TcpSock::init_sock(1448, 10);
        for i in 0..1000u64 {
            tp.snd_una = i * 10;
            tp.snd_nxt = i * 10 + 10;
            rtt_estimator(&mut tp, 20_000, 200_000);
            set_rto(&mut tp);
        }
        assert_eq!(tp.srtt_us >> 3, 20_000);
        assert!(tp.icsk_rto >= 220, "rto {}", tp.icsk_rto);
        assert!(tp.icsk_rto <= 221, "rto {}", tp.icsk_rto);
    }

    #[test]
    fn srtt_converges_with_gain_one_eighth() {
        let mut tp = TcpSock::init_sock(1448, 10);
        rtt_estimator(&mut tp, 10_000, 200_000);
        rtt_estimator(&mut tp, 18_000, 200_000);
        // 10 ms + (18 - 10) / 8 = 11 ms
        assert_eq!(tp.srtt_us >> 3, 11_000);
    }
}
