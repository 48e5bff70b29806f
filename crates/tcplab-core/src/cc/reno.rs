//! Reno (NewReno) congestion avoidance: `tcp_reno_cong_avoid`, `tcp_reno_ssthresh` and
//! `tcp_reno_undo_cwnd` from net/ipv4/tcp_cong.c (Linux v6.12). Loss recovery itself
//! (fast retransmit, PRR, RACK) lives in the core TCP code, as in Linux.

use super::{tcp_cong_avoid_ai, tcp_slow_start, CongestionOps};
use crate::tcp::sock::TcpSock;

/// `tcp_reno_cong_avoid()` (exported in Linux: DCTCP's `.cong_avoid` is this function).
pub fn tcp_reno_cong_avoid(tp: &mut TcpSock, mut acked: u32) {
    if !tp.is_cwnd_limited() {
        return;
    }
    // In "safe" area, increase.
    if tp.in_slow_start() {
        acked = tcp_slow_start(tp, acked);
        if acked == 0 {
            return;
        }
    }
    // In dangerous area, increase slowly.
    let w = tp.snd_cwnd;
    tcp_cong_avoid_ai(tp, w, acked);
}

#[derive(Clone, Debug, Default)]
pub struct Reno;

impl CongestionOps for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }

    /// `tcp_reno_cong_avoid()`.
    fn cong_avoid(&mut self, tp: &mut TcpSock, _ack: u64, acked: u32) {
        tcp_reno_cong_avoid(tp, acked);
    }

    /// `tcp_reno_ssthresh()`: slow start threshold is half the congestion window (min 2).
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        (tp.snd_cwnd >> 1).max(2)
    }

    /// `tcp_reno_undo_cwnd()`.
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        tp.snd_cwnd.max(tp.prior_cwnd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_on_loss_and_grows_one_per_rtt() {
        let mut r = Reno;
        let mut tp = TcpSock::init_sock(1448, 40);
        tp.snd_ssthresh = 20;
        tp.is_cwnd_limited = true;
        assert_eq!(r.ssthresh(&mut tp), 20);
        // One window of ACKs in congestion avoidance adds one packet.
        for _ in 0..40 {
            r.cong_avoid(&mut tp, 0, 1);
        }
        assert_eq!(tp.snd_cwnd, 41);
    }

    #[test]
    fn no_growth_when_not_cwnd_limited() {
        let mut r = Reno;
        let mut tp = TcpSock::init_sock(1448, 40);
        tp.snd_ssthresh = 20;
        tp.is_cwnd_limited = false;
        tp.max_packets_out = 5;
        r.cong_avoid(&mut tp, 0, 10);
        assert_eq!(tp.snd_cwnd, 40);
    }
}
