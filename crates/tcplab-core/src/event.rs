//! The event queue.
//!
//! A binary min-heap ordered by `(at_ns, seq)`, where `seq` is a counter incremented on
//! every push: two events due at the same nanosecond fire in the order they were
//! scheduled, on every machine. Events are 24-byte plain values; packets never travel
//! through the heap (links keep their own FIFO of packets in flight and schedule one
//! event for the head).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// What an event is about. `id` in [`Event`] names the component (link index, endpoint
/// index, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum EventKind {
    /// A link finished serializing its current packet.
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
}

#[derive(Clone, Copy, Debug)]
pub struct Event {
    pub at_ns: u64,
    seq: u64,
    pub kind: EventKind,
    pub id: u32,
}

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        self.at_ns == other.at_ns && self.seq == other.seq
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Event {
    // Reversed so that BinaryHeap (a max-heap) pops the earliest (then lowest seq) first.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .at_ns
            .cmp(&self.at_ns)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Event>,
    next_seq: u64,
}

impl EventQueue {
    pub fn with_capacity(n: usize) -> Self {
        EventQueue { heap: BinaryHeap::with_capacity(n), next_seq: 0 }
    }

    #[inline]
    pub fn push(&mut self, at_ns: u64, kind: EventKind, id: u32) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Event { at_ns, seq, kind, id });
    }

    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        self.heap.pop()
    }

    #[inline]
    pub fn peek_time(&self) -> Option<u64> {
        self.heap.peek().map(|e| e.at_ns)
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
        q.push(5, EventKind::App, 2);
        q.push(10, EventKind::App, 3);
        q.push(10, EventKind::App, 4);
        let order: Vec<u32> = std::iter::from_fn(|| q.pop()).map(|e| e.id).collect();
        assert_eq!(order, vec![2, 1, 3, 4]);
    }
}
