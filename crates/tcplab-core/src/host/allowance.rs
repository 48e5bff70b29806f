//! A cloud instance's ingress allowance: the packets of an instance are policed by token
//! buckets before they reach its NIC's receive ring (on AWS, in the Nitro card).
//!
//! Two buckets, both optional in the packet dimension: bytes (`rate_bps`, depth
//! `burst_bytes`) and packets (`pps`, depth `pps_burst`). A packet passes when both hold
//! enough tokens and nothing waits before it; otherwise it waits in a FIFO of
//! `queue_packets` packets, and is dropped beyond it. AWS documents the counters, not the
//! mechanism: ENA's `bw_in_allowance_exceeded` and `pps_allowance_exceeded` count "the
//! number of packets queued or dropped because the inbound aggregate bandwidth [the PPS]
//! exceeded the maximum for the instance". AWS publishes neither the bucket depths nor the
//! queue, so they are parameters (tcplab's assumption: a token bucket with a FIFO, as a
//! policer with a shaping queue). A packet that cannot pass counts once in each counter
//! whose bucket is short of what it needs (with the packets queued before it).
//! `pps_burst` defaults to the same depth in time as the byte bucket (`burst_bytes` at
//! `rate_bps`, in packets at `pps`), at least one packet.
//!
//! Tokens are kept as `units x 1e9` (bit-nanoseconds, packet-nanoseconds) in u128, so the
//! refill `dt_ns x rate` is exact.

use std::collections::VecDeque;

use crate::config::AllowanceConfig;
use crate::packet::Packet;
use crate::time::NEVER;

const NS: u128 = 1_000_000_000;

#[derive(Debug)]
pub struct Allowance {
    rate_bps: u64,
    cap_bits: u128,
    tokens_bits: u128,
    pps: u64,
    cap_pkts: u128,
    tokens_pkts: u128,
    last_ns: u64,
    queue: VecDeque<(Packet, u32)>,
    queue_packets: usize,
    /// Bytes of the packets waiting (frame lengths).
    queued_bytes: u64,
    /// The time of the scheduled release event (NEVER: none).
    pub pending_ns: u64,
    pub bw_in_allowance_exceeded: u64,
    pub pps_allowance_exceeded: u64,
    /// Packets dropped because the queue was full (no ENA counter of its own: they are
    /// among the "exceeded" ones).
    pub dropped: u64,
}

/// What the allowance did with an arriving packet.
pub enum Admit {
    Pass(Packet),
    Held,
    Dropped(Packet),
}

impl Allowance {
    pub fn new(cfg: &AllowanceConfig) -> Allowance {
        let cap_bits = cfg.burst_bytes as u128 * 8 * NS;
        let (pps, cap_pkts) = match cfg.pps {
            None => (0, 0),
            Some(pps) => {
                let burst = cfg.pps_burst.unwrap_or_else(|| {
                    // The byte bucket's depth in time, in packets at `pps`.
                    let depth_ns = cfg.burst_bytes as u128 * 8 * NS / cfg.rate_bps.max(1) as u128;
                    (depth_ns * pps as u128 / NS).max(1).min(u64::MAX as u128) as u64
                });
                (pps, burst as u128 * NS)
            }
        };
        Allowance {
            rate_bps: cfg.rate_bps,
            cap_bits,
            tokens_bits: cap_bits,
            pps,
            cap_pkts,
            tokens_pkts: cap_pkts,
            last_ns: 0,
            queue: VecDeque::with_capacity((cfg.queue_packets as usize).min(4096)),
            queue_packets: cfg.queue_packets as usize,
            queued_bytes: 0,
            pending_ns: NEVER,
            bw_in_allowance_exceeded: 0,
            pps_allowance_exceeded: 0,
            dropped: 0,
        }
    }

    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    pub fn data_held(&self) -> u64 {
        self.queue.iter().filter(|(p, _)| p.is_data()).count() as u64
    }

    fn refill(&mut self, now_ns: u64) {
        if now_ns <= self.last_ns {
            return;
        }
        let dt = (now_ns - self.last_ns) as u128;
        self.last_ns = now_ns;
        self.tokens_bits = (self.tokens_bits + dt * self.rate_bps as u128).min(self.cap_bits);
        if self.pps > 0 {
            self.tokens_pkts = (self.tokens_pkts + dt * self.pps as u128).min(self.cap_pkts);
        }
    }

    #[inline]
    fn bits_short(&self, bytes: u64) -> bool {
        self.tokens_bits < bytes as u128 * 8 * NS
    }

    #[inline]
    fn pkts_short(&self, pkts: u64) -> bool {
        self.pps > 0 && self.tokens_pkts < pkts as u128 * NS
    }

    fn take(&mut self, len: u32) {
        self.tokens_bits -= len as u128 * 8 * NS;
        if self.pps > 0 {
            self.tokens_pkts -= NS;
        }
    }

    /// A packet of `len_bytes` (frame) arrives at `now_ns`.
    pub fn offer(&mut self, pkt: Packet, len_bytes: u32, now_ns: u64) -> Admit {
        self.refill(now_ns);
        if len_bytes as u128 * 8 * NS > self.cap_bits {
            // Larger than the whole byte bucket: its tokens can never be there, and a head
            // that never passes would stall the queue for good. Dropped (and counted as
            // exceeded, the only ENA counter such a packet can be in).
            self.bw_in_allowance_exceeded += 1;
            self.dropped += 1;
            return Admit::Dropped(pkt);
        }
        let need_bytes = self.queued_bytes + len_bytes as u64;
        let need_pkts = self.queue.len() as u64 + 1;
        let (bw, pps) = (self.bits_short(need_bytes), self.pkts_short(need_pkts));
        if !bw && !pps {
            debug_assert!(self.queue.is_empty());
            self.take(len_bytes);
            return Admit::Pass(pkt);
        }
        self.bw_in_allowance_exceeded += bw as u64;
        self.pps_allowance_exceeded += pps as u64;
        if self.queue.len() >= self.queue_packets {
            self.dropped += 1;
            return Admit::Dropped(pkt);
        }
        self.queue.push_back((pkt, len_bytes));
        self.queued_bytes += len_bytes as u64;
        Admit::Held
    }

    /// The head of the queue, if its tokens are there at `now_ns`.
    pub fn release(&mut self, now_ns: u64) -> Option<Packet> {
        self.refill(now_ns);
        let &(_, len) = self.queue.front()?;
        if self.bits_short(len as u64) || self.pkts_short(1) {
            return None;
        }
        self.take(len);
        self.queued_bytes -= len as u64;
        self.queue.pop_front().map(|(p, _)| p)
    }

    /// When the head of the queue will have its tokens (None: queue empty).
    pub fn wake_at(&self) -> Option<u64> {
        let &(_, len) = self.queue.front()?;
        let mut wait: u128 = 0;
        let need = len as u128 * 8 * NS;
        if self.tokens_bits < need {
            wait = (need - self.tokens_bits).div_ceil(self.rate_bps as u128);
        }
        if self.pps > 0 && self.tokens_pkts < NS {
            wait = wait.max((NS - self.tokens_pkts).div_ceil(self.pps as u128));
        }
        Some((self.last_ns as u128 + wait.max(1)).min(u64::MAX as u128) as u64)
    }
}

/// Checks of an `allowance` block, `at` being its path (`nodes.3.nic.allowance`).
pub fn validate(cfg: &AllowanceConfig, at: &str) -> Result<(), String> {
    if cfg.rate_bps == 0 || cfg.rate_bps > crate::config::MAX_RATE_BPS {
        return Err(format!(
            "{at}.rate_bps: {} is outside [1, {}] bit/s",
            cfg.rate_bps,
            crate::config::MAX_RATE_BPS
        ));
    }
    if cfg.burst_bytes < MTU_BYTES as u64 || cfg.burst_bytes > 1 << 40 {
        return Err(format!(
            "{at}.burst_bytes: {} is outside [{MTU_BYTES}, {}] bytes (at least one full frame)",
            cfg.burst_bytes,
            1u64 << 40
        ));
    }
    if let Some(pps) = cfg.pps {
        if pps == 0 || pps > 1 << 40 {
            return Err(format!(
                "{at}.pps: {pps} is outside [1, {}] packets/s",
                1u64 << 40
            ));
        }
    }
    if let Some(b) = cfg.pps_burst {
        if cfg.pps.is_none() {
            return Err(format!("{at}.pps_burst: {b} without pps; expected pps too"));
        }
        if b == 0 || b > 1 << 40 {
            return Err(format!(
                "{at}.pps_burst: {b} is outside [1, {}] packets",
                1u64 << 40
            ));
        }
    }
    if cfg.queue_packets > 1 << 20 {
        return Err(format!(
            "{at}.queue_packets: {} is outside [0, {}] packets",
            cfg.queue_packets,
            1u32 << 20
        ));
    }
    Ok(())
}

/// One full Ethernet frame (1500-byte MTU + 14-byte header): the smallest bucket that can
/// pass a full-sized packet (a frame with more link overhead than that is dropped).
pub const MTU_BYTES: u32 = 1514;

#[cfg(test)]
mod tests {
    use super::*;

    fn data(len: u32) -> Packet {
        Packet {
            seq: 0,
            end_seq: len as u64,
            ip_bytes: len + 52,
            ..Default::default()
        }
    }

    #[test]
    fn burst_passes_then_rate_paces_and_the_queue_overflows() {
        // 8 Mbit/s = 1 byte/us, 3000-byte bucket, queue of 2: three 1000-byte packets pass
        // at once, the next two wait 1 ms each, the sixth is dropped.
        let cfg = AllowanceConfig {
            rate_bps: 8_000_000,
            burst_bytes: 3000,
            pps: None,
            pps_burst: None,
            queue_packets: 2,
        };
        let mut a = Allowance::new(&cfg);
        let t0 = 1_000_000_000;
        let mut passed = 0;
        for _ in 0..3 {
            passed += matches!(a.offer(data(948), 1000, t0), Admit::Pass(_)) as u32;
        }
        assert_eq!(passed, 3);
        assert!(matches!(a.offer(data(948), 1000, t0), Admit::Held));
        assert!(matches!(a.offer(data(948), 1000, t0), Admit::Held));
        assert!(matches!(a.offer(data(948), 1000, t0), Admit::Dropped(_)));
        assert_eq!(
            (
                a.bw_in_allowance_exceeded,
                a.pps_allowance_exceeded,
                a.dropped
            ),
            (3, 0, 1)
        );
        assert_eq!(a.wake_at(), Some(t0 + 1_000_000));
        assert!(a.release(t0 + 999_999).is_none());
        assert!(a.release(t0 + 1_000_000).is_some());
        assert_eq!(a.wake_at(), Some(t0 + 2_000_000));
        assert!(a.release(t0 + 2_000_000).is_some());
        assert_eq!(a.wake_at(), None);
    }

    #[test]
    fn a_frame_larger_than_the_bucket_is_dropped_not_queued_for_ever() {
        // 1514-byte bucket, 1538-byte frames (1514 + 24 bytes of preamble, FCS, gap): no
        // refill can ever hold one, so each is dropped and the queue stays empty.
        let cfg = AllowanceConfig {
            rate_bps: 1_000_000,
            burst_bytes: 1514,
            pps: None,
            pps_burst: None,
            queue_packets: 8,
        };
        let mut a = Allowance::new(&cfg);
        for k in 0..3u64 {
            assert!(matches!(
                a.offer(data(1448), 1538, 1_000_000_000 * (k + 1)),
                Admit::Dropped(_)
            ));
        }
        assert_eq!((a.queued(), a.wake_at()), (0, None));
        assert_eq!((a.bw_in_allowance_exceeded, a.dropped), (3, 3));
        // A frame that fits the bucket still passes.
        assert!(matches!(
            a.offer(data(1462), 1514, 4_000_000_000),
            Admit::Pass(_)
        ));
    }

    #[test]
    fn the_packet_bucket_counts_apart() {
        // Plenty of bytes, 1000 pps with a 2-packet bucket.
        let cfg = AllowanceConfig {
            rate_bps: 1 << 40,
            burst_bytes: 1 << 30,
            pps: Some(1000),
            pps_burst: Some(2),
            queue_packets: 10,
        };
        let mut a = Allowance::new(&cfg);
        let t0 = 5;
        assert!(matches!(a.offer(data(100), 152, t0), Admit::Pass(_)));
        assert!(matches!(a.offer(data(100), 152, t0), Admit::Pass(_)));
        assert!(matches!(a.offer(data(100), 152, t0), Admit::Held));
        assert_eq!(
            (a.bw_in_allowance_exceeded, a.pps_allowance_exceeded),
            (0, 1)
        );
        assert_eq!(a.wake_at(), Some(t0 + 1_000_000));
    }

    #[test]
    fn bad_input_names_the_field() {
        let base = AllowanceConfig {
            rate_bps: 1_000_000,
            burst_bytes: 10_000,
            pps: None,
            pps_burst: None,
            queue_packets: 10,
        };
        validate(&base, "x").unwrap();
        let e = validate(
            &AllowanceConfig {
                rate_bps: 0,
                ..base.clone()
            },
            "nodes.1.nic.allowance",
        )
        .unwrap_err();
        assert!(
            e.starts_with("nodes.1.nic.allowance.rate_bps: 0 is outside"),
            "{e}"
        );
        let e = validate(
            &AllowanceConfig {
                burst_bytes: 1513,
                ..base.clone()
            },
            "a",
        )
        .unwrap_err();
        assert!(
            e.starts_with("a.burst_bytes: 1513 is outside [1514,"),
            "{e}"
        );
        validate(
            &AllowanceConfig {
                burst_bytes: 1514,
                ..base.clone()
            },
            "a",
        )
        .unwrap();
        let e = validate(
            &AllowanceConfig {
                pps: Some(0),
                ..base
            },
            "a",
        )
        .unwrap_err();
        assert!(e.starts_with("a.pps: 0 is outside"), "{e}");
    }
}
