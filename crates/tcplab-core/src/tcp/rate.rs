//! Delivery-rate estimation (Linux v6.12 net/ipv4/tcp_rate.c; draft-cheng-iccrg-delivery-rate-estimation).
//!
//! Each transmitted skb records the connection's `delivered` count and timestamps at send
//! time (`tcp_rate_skb_sent`). When an ACK (S)ACKs skbs, the most recently sent of them
//! provides the sample's start (`tcp_rate_skb_delivered`), and `tcp_rate_gen` turns it
//! into `delivered / max(send phase, ack phase)`. A sample is marked app-limited when the
//! sender had nothing to send when the skb went out (`tcp_rate_check_app_limited`), so
//! BBR can discard it unless it raises the estimate.

use crate::tcp::rate_sample::RateSample;
use crate::tcp::rtx_queue::{Skb, TxState, TCPCB_RETRANS, TCPCB_SACKED_ACKED};
use crate::tcp::sock::TcpSock;

/// `tcp_skb_sent_after()`: was (t1, seq1) sent after (t2, seq2)?
#[inline]
pub fn skb_sent_after(t1: u64, t2: u64, seq1: u64, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

/// `tcp_rate_skb_sent()`: snapshot the delivery state into a skb about to be sent at
/// `tx_us` (the skb's EDT in us).
pub fn rate_skb_sent(tp: &mut TcpSock, tx_us: u64) -> TxState {
    // In general we need to start delivery rate samples from the time we received the
    // most recent ACK; with nothing in flight, any ACK after now shows the network could
    // deliver those packets completely within the interval since now.
    if tp.packets_out == 0 {
        tp.first_tx_mstamp = tx_us;
        tp.delivered_mstamp = tx_us;
    }
    TxState {
        first_tx_mstamp: tp.first_tx_mstamp,
        delivered_mstamp: tp.delivered_mstamp,
        delivered: tp.delivered,
        delivered_ce: tp.delivered_ce,
        is_app_limited: tp.app_limited != 0,
    }
}

/// `tcp_rate_skb_delivered()`: an skb was (S)ACKed; update the sample's start if this
/// skb is the most recently sent one seen on this ACK.
pub fn rate_skb_delivered(tp: &mut TcpSock, skb: &mut Skb, rs: &mut RateSample) {
    if skb.tx.delivered_mstamp == 0 {
        return;
    }
    let tx_tstamp = skb.mstamp_us();
    if rs.prior_delivered == 0
        || skb_sent_after(tx_tstamp, tp.first_tx_mstamp, skb.end_seq, rs.last_end_seq)
    {
        rs.prior_delivered_ce = skb.tx.delivered_ce;
        rs.prior_delivered = skb.tx.delivered;
        rs.prior_mstamp = skb.tx.delivered_mstamp;
        rs.is_app_limited = skb.tx.is_app_limited;
        rs.is_retrans = skb.sacked & TCPCB_RETRANS != 0;
        rs.last_end_seq = skb.end_seq;
        // Record send time of most recently ACKed packet.
        tp.first_tx_mstamp = tx_tstamp;
        // Find the duration of the "send phase" of this window.
        rs.interval_us = tx_tstamp.saturating_sub(skb.tx.first_tx_mstamp) as i64;
    }
    // Mark off the skb delivered once it's SACKed to avoid being used again when it's
    // cumulatively acked.
    if skb.sacked & TCPCB_SACKED_ACKED != 0 {
        skb.tx.delivered_mstamp = 0;
    }
}

/// `tcp_rate_gen()`: finish the sample for this ACK.
pub fn rate_gen(
    tp: &mut TcpSock,
    delivered: u32,
    lost: u32,
    is_sack_reneg: bool,
    rs: &mut RateSample,
) {
    // Clear app limited if bubble is acked and gone.
    if tp.app_limited != 0 && tp.delivered > tp.app_limited {
        tp.app_limited = 0;
    }
    if delivered != 0 {
        tp.delivered_mstamp = tp.tcp_mstamp;
    }
    rs.acked_sacked = delivered; // freshly ACKed or SACKed
    rs.losses = lost as i32; // freshly marked lost
                             // Return an invalid sample if no timing information is available or in recovery from
                             // loss with SACK reneging.
    if rs.prior_mstamp == 0 || is_sack_reneg {
        rs.delivered = -1;
        rs.interval_us = -1;
        return;
    }
    rs.delivered = (tp.delivered - rs.prior_delivered) as i32;
    rs.delivered_ce = (tp.delivered_ce - rs.prior_delivered_ce) as i32;
    // Model sending data and receiving ACKs as separate pipeline phases for a window; use
    // the longer phase.
    let snd_us = rs.interval_us;
    let ack_us = tp.tcp_mstamp.saturating_sub(rs.prior_mstamp) as i64;
    rs.interval_us = snd_us.max(ack_us);
    rs.snd_interval_us = snd_us.max(0) as u32;
    rs.rcv_interval_us = ack_us as u32;
    // Normally we expect interval_us >= min-rtt. A shorter interval (an RTT's worth of
    // data acked "too fast", e.g. after a spurious retransmit) is not a valid sample.
    if rs.interval_us < tp.min_rtt_us() as i64 {
        rs.interval_us = -1;
        return;
    }
    // Record the last non-app-limited or the highest app-limited bw.
    if !rs.is_app_limited
        || (rs.delivered as u64) * (tp.rate_interval_us as u64)
            >= (tp.rate_delivered as u64) * (rs.interval_us as u64)
    {
        tp.rate_delivered = rs.delivered as u32;
        tp.rate_interval_us = rs.interval_us as u32;
        tp.rate_app_limited = rs.is_app_limited;
    }
}

/// `tcp_rate_check_app_limited()`: mark the flow app-limited if it has nothing to send.
/// `unsent_bytes` = write_seq - snd_nxt; `host_queued_bytes` = bytes of this socket still
/// in the host's qdisc/NIC (`sk_wmem_alloc`).
pub fn rate_check_app_limited(tp: &mut TcpSock, unsent_bytes: u64, host_queued_bytes: u64) {
    if unsent_bytes < tp.mss_cache as u64          // We have less than one packet to send.
        && host_queued_bytes == 0                 // Nothing in sending host's qdisc queues or NIC tx queue.
        && tp.packets_in_flight() < tp.snd_cwnd   // We are not limited by CWND.
        && tp.lost_out <= tp.retrans_out
    // All lost packets have been retransmitted.
    {
        let v = tp.delivered.wrapping_add(tp.packets_in_flight());
        tp.app_limited = if v != 0 { v } else { 1 };
    }
}

/// The delivery rate `ss -i` shows (`tcp_compute_delivery_rate()`), bytes per second.
pub fn delivery_rate_bytes_per_sec(tp: &TcpSock) -> u64 {
    if tp.rate_interval_us == 0 {
        return 0;
    }
    tp.rate_delivered as u64 * tp.mss_cache as u64 * 1_000_000 / tp.rate_interval_us as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_uses_longer_of_send_and_ack_phases() {
        let mut tp = TcpSock::init_sock(1000, 10);
        tp.rtt_min.reset(0, 10_000);
        // 10 packets sent at t=0..9 ms, all delivered by an ACK at t=30 ms.
        // Times start at 1 s: a zero timestamp means "unset" in Linux's TCP.
        let t0 = 1_000_000_000u64;
        let mut skbs = Vec::new();
        for i in 0..10u64 {
            tp.set_now(t0 + i * 1_000_000);
            let tx = rate_skb_sent(&mut tp, (t0 + i * 1_000_000) / 1000);
            tp.packets_out += 1;
            let mut s = zeroed_skb();
            s.seq = i * 1000;
            s.end_seq = (i + 1) * 1000;
            s.skb_mstamp_ns = t0 + i * 1_000_000;
            s.tx = tx;
            skbs.push(s);
        }
        tp.set_now(t0 + 30_000_000);
        let mut rs = RateSample::default();
        for s in skbs.iter_mut() {
            rate_skb_delivered(&mut tp, s, &mut rs);
            tp.delivered += 1;
            tp.packets_out -= 1;
        }
        rate_gen(&mut tp, 10, 0, false, &mut rs);
        assert_eq!(rs.delivered, 10);
        // send phase = 9 ms (first to last send); ack phase = 30 ms since delivered_mstamp=0
        assert_eq!(rs.snd_interval_us, 9000);
        assert_eq!(rs.interval_us, 30_000);
    }

    fn zeroed_skb() -> Skb {
        // A zeroed skb for tests (fields are plain integers).
        let mut q = crate::tcp::rtx_queue::RtxQueue::new();
        q.push_sent(0, 0, 0, TxState::default());
        *q.front().unwrap()
    }

    #[test]
    fn interval_shorter_than_min_rtt_is_invalid() {
        let mut tp = TcpSock::init_sock(1000, 10);
        tp.rtt_min.reset(0, 50_000);
        tp.set_now(1_000_000);
        let tx = rate_skb_sent(&mut tp, 1000);
        let mut s = zeroed_skb();
        s.tx = tx;
        s.skb_mstamp_ns = 1_000_000;
        s.end_seq = 1000;
        tp.set_now(11_000_000);
        let mut rs = RateSample::default();
        rate_skb_delivered(&mut tp, &mut s, &mut rs);
        tp.delivered += 1;
        rate_gen(&mut tp, 1, 0, false, &mut rs);
        assert_eq!(rs.interval_us, -1);
    }

    #[test]
    fn app_limited_mark_is_cleared_after_the_bubble_is_delivered() {
        let mut tp = TcpSock::init_sock(1000, 10);
        tp.delivered = 100;
        tp.packets_out = 3;
        rate_check_app_limited(&mut tp, 0, 0);
        assert_eq!(tp.app_limited, 103);
        tp.delivered = 104;
        let mut rs = RateSample::default();
        rate_gen(&mut tp, 1, 0, false, &mut rs);
        assert_eq!(tp.app_limited, 0);
    }
}
