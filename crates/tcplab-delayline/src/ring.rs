//! The per-TUN packet queue: a FIFO ring of fixed 2048-byte slots, allocated once.
//!
//! A constant delay keeps arrival order, so the packet at the head is always the next one
//! due, and a FIFO is the whole scheduler. Slots are fixed-size so that a packet is read
//! straight into its slot (no copy, no allocation per packet): a TUN without offloads
//! hands over at most one MTU-sized IP packet per read (1500 bytes by default), which fits.
//!
//! The slot memory is requested zeroed in one allocation; for a large queue limit the
//! allocator maps fresh pages that the kernel only backs when first touched. The ring
//! wraps within an ACTIVE region (INITIAL_ACTIVE_SLOTS, doubled whenever it is full, up to
//! the capacity), so a run touches memory for the depth it reaches, not for the queue
//! limit: wrapping through all 100000 slots (200 MB) would page-fault once per two packets
//! on the first pass. Growing moves the wrapped part once (at most log2(capacity) times).
#![forbid(unsafe_code)]

/// Bytes per slot: the largest packet the line holds (a longer read is truncated by the
/// kernel; a TUN's default MTU is 1500).
pub const SLOT_BYTES: usize = 2048;

/// Slots the ring wraps within before it first grows (2 MB).
const INITIAL_ACTIVE_SLOTS: usize = 1024;

/// A bounded FIFO of packets, each with the time it is due (CLOCK_MONOTONIC ns).
pub struct Ring {
    slots: Vec<u8>,
    lens: Vec<u16>,
    due_ns: Vec<u64>,
    head: usize,
    len: usize,
    /// The ring wraps at `active` slots (<= capacity).
    active: usize,
}

impl Ring {
    /// An empty ring holding at most `capacity_packets` packets (>= 1).
    pub fn new(capacity_packets: usize) -> Ring {
        assert!(capacity_packets >= 1, "a ring holds at least one packet");
        Ring {
            slots: vec![0u8; capacity_packets * SLOT_BYTES],
            lens: vec![0u16; capacity_packets],
            due_ns: vec![0u64; capacity_packets],
            head: 0,
            len: 0,
            active: capacity_packets.min(INITIAL_ACTIVE_SLOTS),
        }
    }

    pub fn capacity(&self) -> usize {
        self.lens.len()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn is_full(&self) -> bool {
        self.len == self.capacity()
    }

    /// The free slot the next packet is read into (None when the ring is full). Nothing is
    /// queued until [`Ring::commit`].
    pub fn tail_slot(&mut self) -> Option<&mut [u8]> {
        if self.is_full() {
            return None;
        }
        if self.len == self.active {
            self.grow();
        }
        let i = (self.head + self.len) % self.active;
        Some(&mut self.slots[i * SLOT_BYTES..(i + 1) * SLOT_BYTES])
    }

    /// Queues the packet just read into [`Ring::tail_slot`]: `len_bytes` long, due at
    /// `due_ns`. Due times must not decrease (FIFO order is the schedule).
    pub fn commit(&mut self, len_bytes: usize, due_ns: u64) {
        assert!(!self.is_full(), "commit on a full ring");
        assert!(len_bytes <= SLOT_BYTES);
        if self.len == self.active {
            self.grow();
        }
        let i = (self.head + self.len) % self.active;
        self.lens[i] = len_bytes as u16;
        self.due_ns[i] = due_ns;
        self.len += 1;
    }

    /// When the oldest packet is due, if any.
    pub fn head_due_ns(&self) -> Option<u64> {
        (!self.is_empty()).then(|| self.due_ns[self.head])
    }

    /// The oldest packet's bytes.
    pub fn head_packet(&self) -> Option<&[u8]> {
        if self.is_empty() {
            return None;
        }
        let start = self.head * SLOT_BYTES;
        Some(&self.slots[start..start + self.lens[self.head] as usize])
    }

    /// Removes the oldest packet.
    pub fn pop(&mut self) {
        assert!(!self.is_empty(), "pop on an empty ring");
        self.head = (self.head + 1) % self.active;
        self.len -= 1;
    }

    /// Doubles the active region (capped by the capacity) of a ring that fills it, keeping
    /// FIFO order: the packets in [head, active) move to the end of the new region.
    fn grow(&mut self) {
        debug_assert!(self.len == self.active && self.active < self.capacity());
        let old = self.active;
        let new = (old * 2).min(self.capacity());
        let moved = old - self.head; // packets from head to the old end
        let new_head = new - moved;
        self.slots.copy_within(self.head * SLOT_BYTES..old * SLOT_BYTES, new_head * SLOT_BYTES);
        self.lens.copy_within(self.head..old, new_head);
        self.due_ns.copy_within(self.head..old, new_head);
        self.head = new_head;
        self.active = new;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push(r: &mut Ring, byte: u8, len: usize, due: u64) -> bool {
        match r.tail_slot() {
            Some(slot) => {
                slot[..len].fill(byte);
                r.commit(len, due);
                true
            }
            None => false,
        }
    }

    #[test]
    fn fifo_order_and_wrap_around() {
        let mut r = Ring::new(3);
        assert!(r.is_empty() && r.head_due_ns().is_none() && r.head_packet().is_none());
        for round in 0..5u8 {
            // Fill to capacity, then drain: the slots wrap around the end every round.
            for k in 0..3u8 {
                assert!(push(&mut r, round * 10 + k, 1 + k as usize, (round as u64) * 100 + k as u64));
            }
            assert!(r.is_full());
            assert!(!push(&mut r, 99, 1, 0), "a full ring refuses a packet");
            for k in 0..3u8 {
                assert_eq!(r.head_due_ns(), Some((round as u64) * 100 + k as u64));
                let p = r.head_packet().unwrap();
                assert_eq!(p.len(), 1 + k as usize);
                assert!(p.iter().all(|&b| b == round * 10 + k));
                r.pop();
            }
            assert!(r.is_empty());
            // Shift the head so the next round starts mid-ring.
            assert!(push(&mut r, 0, 1, 0));
            r.pop();
        }
    }

    #[test]
    fn growing_keeps_fifo_order() {
        // Capacity above the initial active region: the ring wraps, then grows twice with
        // the head in the middle, and still returns every packet in order.
        let cap = INITIAL_ACTIVE_SLOTS * 3;
        let mut r = Ring::new(cap);
        let mut next_in = 0u64;
        let mut next_out = 0u64;
        // Move the head to the middle of the initial region.
        for _ in 0..INITIAL_ACTIVE_SLOTS / 2 {
            assert!(push(&mut r, next_in as u8, 3, next_in));
            next_in += 1;
        }
        for _ in 0..INITIAL_ACTIVE_SLOTS / 2 {
            assert_eq!(r.head_due_ns(), Some(next_out));
            r.pop();
            next_out += 1;
        }
        while push(&mut r, next_in as u8, 1 + (next_in % 100) as usize, next_in) {
            next_in += 1;
        }
        assert_eq!(r.len(), cap);
        assert_eq!(r.active, cap);
        while let Some(due) = r.head_due_ns() {
            assert_eq!(due, next_out);
            let p = r.head_packet().unwrap();
            assert_eq!(p.len(), 1 + (next_out % 100) as usize);
            assert!(p.iter().all(|&b| b == next_out as u8));
            r.pop();
            next_out += 1;
        }
        assert_eq!(next_out, next_in);
    }

    #[test]
    fn a_full_slot_holds_2048_bytes() {
        let mut r = Ring::new(2);
        let slot = r.tail_slot().unwrap();
        assert_eq!(slot.len(), SLOT_BYTES);
        slot.fill(7);
        r.commit(SLOT_BYTES, 5);
        assert_eq!(r.head_packet().unwrap().len(), SLOT_BYTES);
        assert_eq!(r.len(), 1);
    }
}
