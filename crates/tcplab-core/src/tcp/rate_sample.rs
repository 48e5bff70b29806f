//! The per-ACK samples handed to congestion control.
//!
//! [`RateSample`] is Linux's `struct rate_sample` (include/net/tcp.h, v6.12), produced by
//! the delivery-rate estimator in `tcp::rate` (net/ipv4/tcp_rate.c). [`AckSample`] is
//! `struct ack_sample`, passed to `pkts_acked`.

/// `struct rate_sample`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateSample {
    /// Starting timestamp for the interval, us.
    pub prior_mstamp: u64,
    /// `tp->delivered` at `prior_mstamp`.
    pub prior_delivered: u32,
    pub prior_delivered_ce: u32,
    /// Number of packets delivered over the interval (-1 = invalid sample).
    pub delivered: i32,
    pub delivered_ce: i32,
    /// Time for `delivered` to be delivered, us (-1 = invalid sample).
    pub interval_us: i64,
    /// Send-phase and ack-phase lengths, us.
    pub snd_interval_us: u32,
    pub rcv_interval_us: u32,
    /// RTT of last (S)ACKed packet, us (-1 if none).
    pub rtt_us: i64,
    /// Number of packets freshly marked lost by this ACK.
    pub losses: i32,
    /// Number of packets newly (S)ACKed upon this ACK.
    pub acked_sacked: u32,
    /// Packets in flight before this ACK.
    pub prior_in_flight: u32,
    /// `end_seq` of the most recently (S)ACKed packet used for the sample.
    pub last_end_seq: u64,
    /// Is the sample from packets sent while application-limited?
    pub is_app_limited: bool,
    /// Is the sample from a retransmission?
    pub is_retrans: bool,
    /// Is this (likely) a delayed ACK?
    pub is_ack_delayed: bool,
}

impl Default for RateSample {
    fn default() -> Self {
        RateSample {
            prior_mstamp: 0,
            prior_delivered: 0,
            prior_delivered_ce: 0,
            delivered: 0,
            delivered_ce: 0,
            interval_us: 0,
            snd_interval_us: 0,
            rcv_interval_us: 0,
            rtt_us: -1,
            losses: 0,
            acked_sacked: 0,
            prior_in_flight: 0,
            last_end_seq: 0,
            is_app_limited: false,
            is_retrans: false,
            is_ack_delayed: false,
        }
    }
}

/// `struct ack_sample`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckSample {
    pub pkts_acked: u32,
    /// RTT sample in us, or -1 when the ACK gave none.
    pub rtt_us: i32,
    pub in_flight: u32,
}
