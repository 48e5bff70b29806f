//! The packet capture's taps on the network (`crate::capture` assembles what they record):
//! a buffer of packets seen ([`CaptureBuf`]), the tap on the capture host's egress link
//! ([`EgressTap`], on the link itself for a FIFO: `Link::enqueue_tapped`), and a timed
//! qdisc wrapped so that its dequeues are seen ([`TappedQdisc`]). tcpdump's
//! `dev_queue_xmit_nit()` (Linux v6.12 net/core/dev.c) is where they sit: when the qdisc
//! hands a packet to the driver. The receive side records into a [`CaptureBuf`] held by
//! the network (`Network::capture_in`), filled by the capture endpoint's socket.
//!
//! Imports: leaves (`crate::packet`) and `crate::net` itself.

use super::link::Link;
use super::qdisc::{ChildStats, Dequeue, Fifo, Qdisc, QdiscStats, TimedQdisc};
use crate::packet::Packet;

/// A captured packet: when it was seen (engine time, ns) and what it was.
#[derive(Clone, Copy, Debug)]
pub struct Record {
    pub t_ns: u64,
    pub pkt: Packet,
}

/// One direction's packets, in the order seen.
#[derive(Debug, Default)]
pub struct CaptureBuf {
    records: Vec<Record>,
    max: usize,
    /// Packets not kept: beyond `max`, or when growing the buffer failed.
    pub dropped: u64,
}

impl CaptureBuf {
    /// The packets kept, in the order seen.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    pub fn new(max_packets: u64) -> CaptureBuf {
        CaptureBuf {
            records: Vec::new(),
            max: max_packets.min(usize::MAX as u64) as usize,
            dropped: 0,
        }
    }

    /// Keep `pkt`, seen at `t_ns`.
    #[inline]
    pub fn record(&mut self, t_ns: u64, pkt: &Packet) {
        let len = self.records.len();
        if len >= self.max {
            self.dropped += 1;
            return;
        }
        // Amortised doubling, fallibly: running out of memory truncates the capture
        // instead of aborting the run.
        if len == self.records.capacity()
            && self
                .records
                .try_reserve(len.max(1024).min(self.max - len))
                .is_err()
        {
            self.dropped += 1;
            return;
        }
        self.records.push(Record { t_ns, pkt: *pkt });
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

/// The tap on the capture host's egress link toward the peer: packets addressed to
/// `peer_ep` (the capture endpoint's peer) that leave the link's qdisc.
#[derive(Debug)]
pub struct EgressTap {
    pub peer_ep: u32,
    pub buf: CaptureBuf,
    /// The host cuts its GSO skbs in software (`offload: {tso: off}`): tcpdump sees the
    /// frames, since `validate_xmit_skb()` segments the skb before `dev_hard_start_xmit()`
    /// hands each segment to `dev_queue_xmit_nit()` (Linux v6.12 net/core/dev.c). With TSO
    /// it sees the skb itself, as one packet longer than the MTU.
    pub cut_frames: bool,
}

impl EgressTap {
    /// A packet starts serialization at `start_ns` (`dev_hard_start_xmit`).
    #[inline(never)]
    pub fn observe(&mut self, start_ns: u64, pkt: &Packet) {
        if pkt.dst_ep != self.peer_ep {
            return;
        }
        if self.cut_frames && pkt.is_gso() {
            // the driver takes the segment list in one loop: one instant for all of them
            for k in 0..pkt.gso_segs as u32 {
                self.buf.record(start_ns, &pkt.gso_frame(k));
            }
        } else {
            self.buf.record(start_ns, pkt);
        }
    }
}

/// A timed qdisc (tbf, fq, fq_codel) with the capture's egress tap on its dequeue: the
/// packet it hands to the serializer starts now (`Link::pull`). Wrapping only the capture
/// link's qdisc keeps every other link's path as it was (no test per packet there).
#[derive(Debug)]
pub struct TappedQdisc {
    inner: Box<dyn TimedQdisc>,
    tap: EgressTap,
}

impl TimedQdisc for TappedQdisc {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    fn enqueue(
        &mut self,
        pkt: Packet,
        len_bytes: u32,
        now_ns: u64,
        dropped: &mut Vec<Packet>,
    ) -> bool {
        self.inner.enqueue(pkt, len_bytes, now_ns, dropped)
    }

    fn dequeue(&mut self, now_ns: u64, dropped: &mut Vec<Packet>) -> Dequeue {
        let d = self.inner.dequeue(now_ns, dropped);
        if let Dequeue::Packet(pkt, _) = &d {
            self.tap.observe(now_ns, pkt);
        }
        d
    }

    fn stats(&self) -> &QdiscStats {
        self.inner.stats()
    }

    fn for_each_packet(&self, f: &mut dyn FnMut(&Packet)) {
        self.inner.for_each_packet(f)
    }

    fn xstats(&self) -> Vec<(&'static str, u64)> {
        self.inner.xstats()
    }

    fn child(&self) -> Option<ChildStats> {
        self.inner.child()
    }

    fn take_capture(&mut self) -> Option<CaptureBuf> {
        Some(std::mem::take(&mut self.tap.buf))
    }
}

/// Put the egress tap for packets to `peer_ep` on `link`: on the link itself for a FIFO
/// (`Link::set_tap`), around the qdisc for a timed one; `cut_frames`: the host segments
/// its GSO skbs in software (see [`EgressTap::cut_frames`]).
pub fn install_tap(link: &mut Link, peer_ep: u32, max_packets: u64, cut_frames: bool) {
    let tap = EgressTap {
        peer_ep,
        buf: CaptureBuf::new(max_packets),
        cut_frames,
    };
    match std::mem::replace(&mut link.qdisc, Qdisc::Fifo(Fifo::new(&Default::default()))) {
        Qdisc::Timed(inner) => link.qdisc = Qdisc::Timed(Box::new(TappedQdisc { inner, tap })),
        fifo => {
            link.qdisc = fifo;
            link.set_tap(tap);
        }
    }
}

/// The packets `install_tap` recorded on `link`.
pub fn take_tap(link: &mut Link) -> CaptureBuf {
    if let Some(t) = link.take_tap() {
        return t.buf;
    }
    match &mut link.qdisc {
        Qdisc::Timed(q) => q.take_capture().unwrap_or_default(),
        Qdisc::Fifo(_) => CaptureBuf::default(),
    }
}
