//! Queueing disciplines at a link's egress.
//!
//! v0.1 has the drop-tail FIFOs `pfifo` (limit in packets) and `bfifo` (limit in bytes),
//! as Linux's sch_fifo.c: a packet that would exceed the limit is dropped at enqueue
//! (tail drop). Statistics use the names `tc -s qdisc` prints (`Sent`, `dropped`,
//! `overlimits`, `requeues`, `backlog`). Byte counts are IP lengths plus the link's
//! framing overhead, which is what `skb->len` holds on an Ethernet device.

use std::collections::VecDeque;

use crate::config::QueueConfig;
use crate::packet::Packet;

/// `tc -s qdisc` statistics.
#[derive(Clone, Debug, Default)]
pub struct QdiscStats {
    pub sent_bytes: u64,
    pub sent_packets: u64,
    pub drops: u64,
    pub overlimits: u64,
    pub requeues: u64,
    pub backlog_bytes: u64,
    pub backlog_packets: u32,
    pub max_backlog_packets: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Limit {
    Packets(u32),
    Bytes(u64),
}

/// A drop-tail FIFO (`pfifo` or `bfifo`).
#[derive(Debug)]
pub struct Fifo {
    limit: Limit,
    q: VecDeque<(Packet, u32)>,
    pub stats: QdiscStats,
}

impl Fifo {
    pub fn new(cfg: &QueueConfig) -> Fifo {
        let limit = match *cfg {
            QueueConfig::Pfifo { limit_packets } => Limit::Packets(limit_packets),
            QueueConfig::Bfifo { limit_bytes } => Limit::Bytes(limit_bytes),
        };
        let cap = match limit {
            Limit::Packets(n) => (n as usize).min(4096),
            Limit::Bytes(b) => ((b / 1500) as usize).min(4096),
        };
        Fifo { limit, q: VecDeque::with_capacity(cap + 1), stats: QdiscStats::default() }
    }

    pub fn kind(&self) -> &'static str {
        match self.limit {
            Limit::Packets(_) => "pfifo",
            Limit::Bytes(_) => "bfifo",
        }
    }

    /// Enqueue `pkt` whose on-device length is `len_bytes`; returns the packet back if dropped.
    #[inline]
    pub fn enqueue(&mut self, pkt: Packet, len_bytes: u32) -> Result<(), Packet> {
        let fits = match self.limit {
            // sch_fifo.c pfifo_enqueue: qlen < limit
            Limit::Packets(n) => self.stats.backlog_packets < n,
            // bfifo_enqueue: backlog + len <= limit
            Limit::Bytes(b) => self.stats.backlog_bytes + len_bytes as u64 <= b,
        };
        if !fits {
            self.stats.drops += 1;
            return Err(pkt);
        }
        self.stats.backlog_bytes += len_bytes as u64;
        self.stats.backlog_packets += 1;
        if self.stats.backlog_packets > self.stats.max_backlog_packets {
            self.stats.max_backlog_packets = self.stats.backlog_packets;
        }
        self.q.push_back((pkt, len_bytes));
        Ok(())
    }

    #[inline]
    pub fn dequeue(&mut self) -> Option<(Packet, u32)> {
        let (p, len) = self.q.pop_front()?;
        self.stats.backlog_bytes -= len as u64;
        self.stats.backlog_packets -= 1;
        self.stats.sent_bytes += len as u64;
        self.stats.sent_packets += 1;
        Some((p, len))
    }

    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Packet> {
        self.q.iter().map(|(p, _)| p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt() -> Packet {
        Packet {
            dst_ep: 0,
            dst_node: 0,
            src_node: 0,
            ip_bytes: 1500,
            seq: 0,
            end_seq: 1448,
            ack_seq: 0,
            rwnd_bytes: 0,
            tsval_ns: 0,
            tsecr_ns: 0,
            sack: Default::default(),
            num_sacks: 0,
            flags: 0,
        }
    }

    #[test]
    fn pfifo_tail_drops_at_limit() {
        let mut q = Fifo::new(&QueueConfig::Pfifo { limit_packets: 2 });
        assert!(q.enqueue(pkt(), 1514).is_ok());
        assert!(q.enqueue(pkt(), 1514).is_ok());
        assert!(q.enqueue(pkt(), 1514).is_err());
        assert_eq!(q.stats.drops, 1);
        assert_eq!(q.stats.backlog_packets, 2);
        q.dequeue();
        assert_eq!(q.stats.sent_packets, 1);
        assert_eq!(q.stats.backlog_bytes, 1514);
    }

    #[test]
    fn bfifo_counts_bytes() {
        let mut q = Fifo::new(&QueueConfig::Bfifo { limit_bytes: 3000 });
        assert!(q.enqueue(pkt(), 1514).is_ok());
        assert!(q.enqueue(pkt(), 1514).is_err());
        assert!(q.enqueue(pkt(), 66).is_ok());
        assert_eq!(q.stats.backlog_bytes, 1580);
    }
}
