//! The drop-tail FIFOs `pfifo` (limit in packets) and `bfifo` (limit in bytes),
//! as Linux's sch_fifo.c: a packet that would exceed the limit is dropped at enqueue
//! (tail drop). Statistics use the names `tc -s qdisc` prints (`Sent`, `dropped`,
//! `overlimits`, `requeues`, `backlog`). Byte counts are IP lengths plus the link's
//! framing overhead, which is what `skb->len` holds on an Ethernet device.
//!
//! A FIFO in front of a serializer needs no dequeue events: the time each packet starts
//! transmission is known when it is enqueued (Lindley's recursion,
//! `start = max(now, previous finish)`), so the link sends the packet on at once and the
//! queue only remembers the start times of the packets still waiting. The backlog at any
//! instant is the set of packets whose start lies in the future, exactly what the kernel's
//! qdisc would hold (the packet being transmitted has left the qdisc).

use std::collections::VecDeque;

use crate::config::QueueConfig;
use crate::net::qdisc::{Dequeue, QdiscStats, TimedQdisc};
use crate::packet::Packet;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Limit {
    Packets(u32),
    Bytes(u64),
}

impl Limit {
    fn of(cfg: &QueueConfig) -> Limit {
        match *cfg {
            QueueConfig::Pfifo { limit_packets } => Limit::Packets(limit_packets),
            QueueConfig::Bfifo { limit_bytes } => Limit::Bytes(limit_bytes),
            _ => unreachable!("a FIFO built from a timed qdisc's config"),
        }
    }

    fn kind(self) -> &'static str {
        match self {
            Limit::Packets(_) => "pfifo",
            Limit::Bytes(_) => "bfifo",
        }
    }

    /// Whether a packet of `len_bytes` fits beside the backlog in `stats`.
    #[inline]
    fn fits(self, stats: &QdiscStats, len_bytes: u32) -> bool {
        match self {
            // sch_fifo.c pfifo_enqueue: qlen < limit
            Limit::Packets(n) => stats.backlog_packets < n,
            // bfifo_enqueue: backlog + len <= limit
            Limit::Bytes(b) => stats.backlog_bytes + len_bytes as u64 <= b,
        }
    }
}

/// A drop-tail FIFO (`pfifo` or `bfifo`) holding the start times of waiting packets.
#[derive(Debug)]
pub struct Fifo {
    limit: Limit,
    /// (transmission start ns, length, GSO segments) of packets still waiting, in order.
    waiting: VecDeque<(u64, u32, u16)>,
    pub stats: QdiscStats,
}

impl Fifo {
    pub fn new(cfg: &QueueConfig) -> Fifo {
        let limit = Limit::of(cfg);
        let cap = match limit {
            Limit::Packets(n) => (n as usize).min(4096),
            Limit::Bytes(b) => ((b / 1500) as usize).min(4096),
        };
        Fifo {
            limit,
            waiting: VecDeque::with_capacity(cap + 1),
            stats: QdiscStats::default(),
        }
    }

    pub fn kind(&self) -> &'static str {
        self.limit.kind()
    }

    /// Account for every waiting packet whose transmission has started by `now_ns`.
    #[inline]
    pub fn advance(&mut self, now_ns: u64) {
        while let Some(&(start, len, segs)) = self.waiting.front() {
            if start > now_ns {
                break;
            }
            self.waiting.pop_front();
            self.stats.backlog_packets -= 1;
            self.stats.backlog_bytes -= len as u64;
            self.stats.sent_packets += segs as u64;
            self.stats.sent_skbs += 1;
            self.stats.sent_bytes += len as u64;
        }
    }

    /// Offer a packet of `len_bytes` (an skb of `segs` GSO segments) at `now_ns` that would
    /// start transmission at `start_ns` (>= now). Returns false (and counts a drop) if the
    /// queue is full.
    // `always`: with `#[inline]` alone the compiler kept it out of line, and its prologue
    // and epilogue (callee-saved registers) were a third of its cost, once per packet on
    // every FIFO link: 2 % of all instructions in bench scenario 5 (BENCHMARKS.md).
    #[inline(always)]
    pub fn offer(&mut self, now_ns: u64, start_ns: u64, len_bytes: u32, segs: u16) -> bool {
        self.advance(now_ns);
        let fits = self.limit.fits(&self.stats, len_bytes);
        if !fits {
            self.stats.drops += 1;
            return false;
        }
        if start_ns > now_ns {
            self.waiting.push_back((start_ns, len_bytes, segs));
            self.stats.backlog_bytes += len_bytes as u64;
            self.stats.backlog_packets += 1;
            if self.stats.backlog_packets > self.stats.max_backlog_packets {
                self.stats.max_backlog_packets = self.stats.backlog_packets;
            }
        } else {
            self.stats.sent_packets += segs as u64;
            self.stats.sent_skbs += 1;
            self.stats.sent_bytes += len_bytes as u64;
        }
        true
    }
}

/// A drop-tail FIFO that holds its packets (the child of a timed qdisc such as tbf,
/// which decides when the head may leave): sch_fifo.c's `pfifo_enqueue()` /
/// `bfifo_enqueue()` tail drop, `qdisc_dequeue_head()`.
#[derive(Debug)]
pub struct HeldFifo {
    limit: Limit,
    queue: VecDeque<(Packet, u32)>,
    pub stats: QdiscStats,
}

impl HeldFifo {
    pub fn new(cfg: &QueueConfig) -> HeldFifo {
        let limit = Limit::of(cfg);
        HeldFifo {
            limit,
            queue: VecDeque::with_capacity(64),
            stats: QdiscStats::default(),
        }
    }

    /// Length of the head packet, if any (tbf peeks before it dequeues).
    #[inline]
    pub fn peek_len(&self) -> Option<u32> {
        self.queue.front().map(|&(_, len)| len)
    }
}

impl TimedQdisc for HeldFifo {
    fn kind(&self) -> &'static str {
        self.limit.kind()
    }

    fn enqueue(
        &mut self,
        pkt: Packet,
        len_bytes: u32,
        _now_ns: u64,
        _dropped: &mut Vec<Packet>,
    ) -> bool {
        let fits = self.limit.fits(&self.stats, len_bytes);
        if !fits {
            self.stats.drops += 1;
            return false;
        }
        self.stats.enqueued(len_bytes);
        self.queue.push_back((pkt, len_bytes));
        true
    }

    fn dequeue(&mut self, _now_ns: u64, _dropped: &mut Vec<Packet>) -> Dequeue {
        match self.queue.pop_front() {
            Some((pkt, len)) => {
                self.stats.dequeued(len, pkt.segs());
                Dequeue::Packet(pkt, len)
            }
            None => Dequeue::Empty,
        }
    }

    fn stats(&self) -> &QdiscStats {
        &self.stats
    }

    fn for_each_packet(&self, f: &mut dyn FnMut(&Packet)) {
        self.queue.iter().for_each(|(p, _)| f(p));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pfifo_tail_drops_at_limit() {
        let mut q = Fifo::new(&QueueConfig::Pfifo { limit_packets: 2 });
        // The serializer is busy until t=100: three packets offered at t=0 wait.
        assert!(q.offer(0, 100, 1514, 1));
        assert!(q.offer(0, 200, 1514, 1));
        assert!(!q.offer(0, 300, 1514, 1));
        assert_eq!(q.stats.drops, 1);
        assert_eq!(q.stats.backlog_packets, 2);
        // At t=100 the first has started: it left the qdisc.
        q.advance(100);
        assert_eq!(q.stats.sent_packets, 1);
        assert_eq!(q.stats.backlog_bytes, 1514);
        assert!(q.offer(150, 300, 1514, 1));
    }

    #[test]
    fn a_packet_that_starts_at_once_never_waits() {
        let mut q = Fifo::new(&QueueConfig::Pfifo { limit_packets: 1 });
        assert!(q.offer(10, 10, 100, 1));
        assert_eq!(q.stats.backlog_packets, 0);
        assert_eq!(q.stats.sent_packets, 1);
    }

    #[test]
    fn bfifo_counts_bytes() {
        let mut q = Fifo::new(&QueueConfig::Bfifo { limit_bytes: 3000 });
        assert!(q.offer(0, 1, 1514, 1));
        assert!(!q.offer(0, 2, 1514, 1));
        assert!(q.offer(0, 2, 66, 1));
        assert_eq!(q.stats.backlog_bytes, 1580);
    }
}
