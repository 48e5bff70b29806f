//! The event queue.
//!
//! A binary min-heap ordered by `(at_ns, seq)`, where `seq` is a counter incremented on
//! every push: two events due at the same nanosecond fire in the order they were
//! scheduled, on every machine. (A radix heap was tried and was slower: the queue rarely
//! holds more than a few dozen events.) Events are 24-byte plain values; packets never travel
//! through the heap (links keep their own FIFO of packets in flight and schedule one
//! event for the head).
//!
//! A leaf. Imports: other leaves only (`rng` in its tests); nothing above it.

/// What an event is about. `id` in [`Event`] names the component (link index, endpoint
/// index, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum EventKind {
    /// A sender's data packet finished serializing on its host's egress (TSQ completion).
    LinkTxDone,
    /// The packet at the head of a link's propagation pipe reaches the far end.
    LinkArrive,
    /// An endpoint timer (retransmit/TLP/RACK reorder timer) is due.
    XmitTimer,
    /// An endpoint's delayed-ACK (or compressed-SACK) timer is due.
    DelackTimer,
    /// An endpoint's pacing timer is due (the EDT of its next packet).
    PacingTimer,
    /// An application action (flow start, next request, ...).
    App,
    /// Periodic time-series sample.
    Sample,
    /// A link's timed qdisc may release a packet (serializer free or watchdog expired).
    LinkDequeue,
    /// A host's NAPI poll finishes processing a received packet (`host::nic`; id: host model).
    NicPoll,
    /// A host's ingress allowance may release queued packets (`host::allowance`; id: host model).
    NicAllowance,
    /// An app's timer is due (`crate::app`; id: app index).
    AppTimer,
    /// An endpoint's slow reader reads again (id: endpoint).
    ReadTimer,
    /// The softirq run that received packets at this instant ends: a GRO host without a
    /// NIC model flushes what it holds (`host::gro`; id: node).
    GroFlush,
    /// A host's transmit work on an skb is done: the skb goes to its egress link
    /// (`host::cpu`, "The CPU cost of packets"; id: host model).
    HostTx,
}

/// 24 bytes of three whole words. (Packing `kind` and `id` into one `u64` matters: the
/// heap's sift reads an element back right after writing it, and a wide load that spans
/// several narrow stores cannot be forwarded from the store buffer.)
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct Event {
    pub at_ns: u64,
    seq: u64,
    /// `id << 8 | kind`
    payload: u64,
}

impl Event {
    #[inline]
    pub fn kind(&self) -> EventKind {
        const KINDS: [EventKind; 14] = [
            EventKind::LinkTxDone,
            EventKind::LinkArrive,
            EventKind::XmitTimer,
            EventKind::DelackTimer,
            EventKind::PacingTimer,
            EventKind::App,
            EventKind::Sample,
            EventKind::LinkDequeue,
            EventKind::NicPoll,
            EventKind::NicAllowance,
            EventKind::AppTimer,
            EventKind::ReadTimer,
            EventKind::GroFlush,
            EventKind::HostTx,
        ];
        KINDS[(self.payload & 0xff) as usize]
    }

    #[inline]
    pub fn id(&self) -> u32 {
        (self.payload >> 8) as u32
    }
}

impl Event {
    /// Ordering key: earlier time first, then earlier insertion.
    #[inline]
    fn before(&self, other: &Event) -> bool {
        self.at_ns < other.at_ns || (self.at_ns == other.at_ns && self.seq < other.seq)
    }
}

/// A 4-ary min-heap written out so that sifting moves a "hole" and keeps the element
/// being placed in registers (see [`Event`] on store forwarding). Four children per node
/// halve the levels a push climbs (one comparison each) and cost a pop the same comparisons
/// as a binary heap (three among the children and one against the element per level, over
/// half the levels), on fewer cache lines. The order popped is the (time, insertion) order
/// whatever the heap's shape.
/// Children per heap node.
const ARITY: usize = 4;

#[derive(Default)]
pub struct EventQueue {
    heap: Vec<Event>,
    next_seq: u64,
}

impl EventQueue {
    pub fn with_capacity(n: usize) -> Self {
        EventQueue {
            heap: Vec::with_capacity(n),
            next_seq: 0,
        }
    }

    #[inline]
    pub fn push(&mut self, at_ns: u64, kind: EventKind, id: u32) {
        let e = Event {
            at_ns,
            seq: self.next_seq,
            payload: (id as u64) << 8 | kind as u64,
        };
        self.next_seq += 1;
        let mut i = self.heap.len();
        self.heap.push(e);
        // A local slice: its length is a value the optimiser can see, so the indexing below
        // (always within it) needs no bounds checks.
        let h = self.heap.as_mut_slice();
        while i > 0 {
            let parent = (i - 1) / ARITY;
            let p = h[parent];
            if !e.before(&p) {
                break;
            }
            h[i] = p;
            i = parent;
        }
        h[i] = e;
    }

    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        let last = self.heap.pop()?;
        let n = self.heap.len();
        if n == 0 {
            return Some(last);
        }
        let h = self.heap.as_mut_slice();
        let top = h[0];
        // Sift the hole at the root down to where `last` belongs.
        let mut i = 0;
        loop {
            let first = ARITY * i + 1;
            if first >= n {
                break;
            }
            // The earliest of the (up to four) children.
            let mut c = first;
            let mut k = first + 1;
            let end = (first + ARITY).min(n);
            while k < end {
                if h[k].before(&h[c]) {
                    c = k;
                }
                k += 1;
            }
            let child = h[c];
            if !child.before(&last) {
                break;
            }
            h[i] = child;
            i = c;
        }
        h[i] = last;
        Some(top)
    }

    #[inline]
    pub fn peek_time(&self) -> Option<u64> {
        self.heap.first().map(|e| e.at_ns)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_break_by_insertion_order() {
        let mut q = EventQueue::default();
        q.push(10, EventKind::App, 1);
        q.push(5, EventKind::Sample, 2);
        q.push(10, EventKind::App, 3);
        q.push(10, EventKind::App, 4);
        let order: Vec<u32> = std::iter::from_fn(|| q.pop()).map(|e| e.id()).collect();
        assert_eq!(order, vec![2, 1, 3, 4]);
        q.push(7, EventKind::PacingTimer, u32::MAX);
        let e = q.pop().unwrap();
        assert_eq!((e.kind(), e.id()), (EventKind::PacingTimer, u32::MAX));
    }

    #[test]
    fn matches_a_stable_reference_heap_on_random_workloads() {
        use crate::rng::Rng;
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        for seed in 0..20 {
            let mut rng = Rng::from_seed(seed);
            let mut q = EventQueue::default();
            let mut reference = BinaryHeap::new();
            let mut id = 0u32;
            for _ in 0..20_000 {
                if rng.chance(0.55) || reference.is_empty() {
                    let at = match rng.below(3) {
                        0 => rng.below(8) as u64, // many ties
                        1 => rng.below(1000) as u64,
                        _ => rng.next_u64() >> 20,
                    };
                    q.push(at, EventKind::App, id);
                    reference.push(Reverse((at, id)));
                    id += 1;
                } else {
                    let Reverse((at, want)) = reference.pop().unwrap();
                    let e = q.pop().unwrap();
                    assert_eq!((e.at_ns, e.id()), (at, want), "seed {seed}");
                }
            }
            assert_eq!(q.len(), reference.len());
        }
    }
}
