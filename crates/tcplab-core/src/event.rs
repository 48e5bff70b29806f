//! The event queue.
//!
//! Events pop in `(at_ns, seq)` order, where `seq` is a counter incremented on every push:
//! two events due at the same nanosecond fire in the order they were scheduled, on every
//! machine. Events are 24-byte plain values; packets never travel through the queue (links
//! keep their own FIFO of packets in flight and schedule one event for the head).
//!
//! The order is a total order on `(at_ns, seq)`, so how the queue stores its events (see
//! [`EventQueue`]: a front buffer, a near and a far 4-ary heap) cannot change which event
//! pops next; only the cost of finding it. (A radix heap was tried and was slower: the
//! queue rarely holds more than a few dozen events.)
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

/// Children per heap node.
const ARITY: usize = 4;

/// A 4-ary min-heap written out so that sifting moves a "hole" and keeps the element
/// being placed in registers (see [`Event`] on store forwarding). Four children per node
/// halve the levels a push climbs (one comparison each) and cost a pop the same comparisons
/// as a binary heap (three among the children and one against the element per level, over
/// half the levels), on fewer cache lines. The order popped is the (time, insertion) order
/// whatever the heap's shape.
#[derive(Default)]
struct Heap {
    h: Vec<Event>,
}

impl Heap {
    #[inline]
    fn first(&self) -> Option<&Event> {
        self.h.first()
    }

    #[inline]
    fn push(&mut self, e: Event) {
        let mut i = self.h.len();
        self.h.push(e);
        // A local slice: its length is a value the optimiser can see, so the indexing below
        // (always within it) needs no bounds checks.
        let h = self.h.as_mut_slice();
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
    fn pop(&mut self) -> Option<Event> {
        let last = self.h.pop()?;
        let n = self.h.len();
        if n == 0 {
            return Some(last);
        }
        let h = self.h.as_mut_slice();
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
}

/// Events the front buffer holds (2 does as well on the bench; 1 leaves a fifth of its
/// events displaced into a heap).
const FRONT: usize = 4;

/// Events due this far ahead of the clock or more wait in the far heap (see [`EventQueue`]).
/// Any value gives the same order; 50 to 200 us measured alike on the bench (1 ms keeps
/// fq's pacing watchdogs, about a millisecond apart at 10 flows on 1 Gbit/s, in the near
/// heap and loses most of the gain).
const FAR_NS: u64 = 100_000;

/// The pending events, popped in (time, insertion) order.
///
/// Three places, one order:
/// - an event due before every event in the two heaps goes into a small front buffer, kept
///   sorted, which a pop takes from without a sift. That is more than half of all events
///   (the bench's 7b: 56 % of its pops): the next frame of a burst reaching the far end, a
///   transmit completion, the dequeue when a serializer frees;
/// - of the others, those due within [`FAR_NS`] of the clock go into the near heap,
/// - the rest into the far heap: retransmission and delayed-ACK timers (most of them
///   superseded long before they are due, and left in the queue until then), samples,
///   fq's pacing watchdogs, arrivals after a long propagation delay.
///
/// A pop takes the front's first event if there is one, else the earlier of the two heaps'
/// first events. So the near heap, which serves most of the other pops (7b: 38 % of all
/// pops, the far heap 6 %), stays small (7b: 2.5 events on average, the far heap 74) where
/// a single heap held every stale timer too (77): its sift-down, whose child comparisons
/// are as good as random to a branch predictor, was half of the engine's branch
/// mispredictions (cachegrind --branch-sim on 7a/7b).
pub struct EventQueue {
    /// `front[..n_front]`, latest first (a pop takes the last); each before every event in
    /// `near` and `far`.
    front: [Event; FRONT],
    n_front: usize,
    near: Heap,
    far: Heap,
    /// The time of the last event popped.
    now_ns: u64,
    next_seq: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue::with_capacity(0)
    }
}

impl EventQueue {
    pub fn with_capacity(n: usize) -> Self {
        EventQueue {
            front: [Event {
                at_ns: 0,
                seq: 0,
                payload: 0,
            }; FRONT],
            n_front: 0,
            near: Heap {
                h: Vec::with_capacity(n),
            },
            far: Heap {
                h: Vec::with_capacity(n),
            },
            now_ns: 0,
            next_seq: 0,
        }
    }

    /// Schedule `kind` for `id` at `at_ns`, after every event already scheduled for that
    /// time.
    #[inline]
    pub fn push(&mut self, at_ns: u64, kind: EventKind, id: u32) {
        let e = Event {
            at_ns,
            seq: self.next_seq,
            payload: (id as u64) << 8 | kind as u64,
        };
        self.next_seq += 1;
        // `e` is the newest: it precedes an event only by an earlier time.
        let before_heaps = self.near.first().is_none_or(|m| at_ns < m.at_ns)
            && self.far.first().is_none_or(|m| at_ns < m.at_ns);
        if !before_heaps {
            self.heap_push(e);
            return;
        }
        // Before both heaps: into the front buffer, in order (latest first).
        let mut i = self.n_front;
        if i == FRONT {
            // Full: the latest of the five goes to a heap (still before every event there).
            if self.front[0].at_ns <= at_ns {
                self.heap_push(e);
                return;
            }
            let latest = self.front[0];
            self.heap_push(latest);
            self.front.copy_within(1..FRONT, 0);
            i -= 1;
        } else {
            self.n_front += 1;
        }
        while i > 0 && self.front[i - 1].at_ns <= at_ns {
            self.front[i] = self.front[i - 1];
            i -= 1;
        }
        self.front[i] = e;
    }

    /// Into the near or the far heap, by how far ahead of the clock (the last event
    /// popped) `e` is due. Either heap would keep the order; this only keeps the near one
    /// small.
    #[inline]
    fn heap_push(&mut self, e: Event) {
        if e.at_ns.saturating_sub(self.now_ns) < FAR_NS {
            self.near.push(e);
        } else {
            self.far.push(e);
        }
    }

    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        let e = if self.n_front > 0 {
            self.n_front -= 1;
            self.front[self.n_front]
        } else {
            let from_far = match (self.near.first(), self.far.first()) {
                (Some(n), Some(f)) => f.before(n),
                (None, Some(_)) => true,
                (_, None) => false,
            };
            if from_far {
                self.far.pop()?
            } else {
                self.near.pop()?
            }
        };
        self.now_ns = e.at_ns;
        Some(e)
    }

    #[inline]
    pub fn peek_time(&self) -> Option<u64> {
        if self.n_front > 0 {
            return Some(self.front[self.n_front - 1].at_ns);
        }
        match (self.near.first(), self.far.first()) {
            (Some(n), Some(f)) => Some(n.at_ns.min(f.at_ns)),
            (n, f) => n.or(f).map(|e| e.at_ns),
        }
    }

    pub fn len(&self) -> usize {
        self.n_front + self.near.h.len() + self.far.h.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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

    /// The simulator's pattern: events pushed at or after the time of the last one popped,
    /// many in the same nanosecond, at every distance (the front buffer, the near and the
    /// far heap, and the moves between them when the front is full).
    #[test]
    fn front_near_and_far_pop_in_time_then_insertion_order() {
        use crate::rng::Rng;
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        for seed in 0..20 {
            let mut rng = Rng::from_seed(1000 + seed);
            let mut q = EventQueue::default();
            let mut reference = BinaryHeap::new();
            let (mut now, mut id, mut popped) = (0u64, 0u32, 0u32);
            for _ in 0..50_000 {
                if rng.chance(0.5) || reference.is_empty() {
                    let ahead = match rng.below(6) {
                        0 => 0,                           // ties with the clock
                        1 => rng.below(4) as u64 * 1_000, // ties among themselves
                        2 => rng.below(20_000) as u64,
                        3 => FAR_NS - 2 + rng.below(4) as u64, // at the boundary
                        4 => rng.below(2_000_000) as u64,
                        _ => 200_000_000 + rng.below(8) as u64 * 4_000_000,
                    };
                    let at = now + ahead;
                    q.push(at, EventKind::App, id);
                    reference.push(Reverse((at, id)));
                    id += 1;
                } else {
                    let Reverse((at, want)) = reference.pop().unwrap();
                    assert_eq!(q.peek_time(), Some(at), "seed {seed}, pop {popped}");
                    let e = q.pop().unwrap();
                    assert_eq!((e.at_ns, e.id()), (at, want), "seed {seed}, pop {popped}");
                    now = at;
                    popped += 1;
                }
                assert_eq!(q.len(), reference.len());
            }
            while let Some(Reverse((at, want))) = reference.pop() {
                let e = q.pop().unwrap();
                assert_eq!((e.at_ns, e.id()), (at, want), "seed {seed}, draining");
            }
            assert!(q.is_empty() && q.pop().is_none() && q.peek_time().is_none());
        }
    }
}
