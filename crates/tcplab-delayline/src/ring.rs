//! The per-TUN packet queue: a FIFO of fixed 2048-byte slots in chunks that are reused.
//!
//! A constant delay keeps arrival order, so the packet at the head is always the next one
//! due, and a FIFO is the whole scheduler. Slots are fixed-size so that a packet is read
//! straight into its slot (no copy, no allocation per packet): a TUN without offloads
//! hands over at most one MTU-sized IP packet per read (1500 bytes by default), which fits.
//!
//! Slots come in chunks of CHUNK_SLOTS (512 KB). A chunk emptied at the head goes to a
//! free list and is reused at the tail; a new chunk is allocated only when the queue gets
//! deeper than ever before (at most queue_limit / CHUNK_SLOTS times in a run; the first
//! INITIAL_CHUNKS are allocated and touched at start). So memory follows the deepest queue
//! a run reaches, not the limit (100000 slots would be 200 MB), and growing never copies
//! packets (a ring doubling in place would move megabytes at once: milliseconds of stall).
#![forbid(unsafe_code)]

use std::collections::VecDeque;

/// Bytes per slot: the largest packet the line holds (a longer read is truncated by the
/// kernel; a TUN's default MTU is 1500).
pub const SLOT_BYTES: usize = 2048;

/// Slots per chunk (512 KB of packet memory).
const CHUNK_SLOTS: usize = 256;
/// Chunks allocated and touched before the line is ready (1024 slots, 2 MB).
const INITIAL_CHUNKS: usize = 4;

struct Chunk {
    data: Box<[u8]>,
    lens: [u16; CHUNK_SLOTS],
    due_ns: [u64; CHUNK_SLOTS],
}

impl Chunk {
    fn new() -> Chunk {
        let mut data = vec![0u8; CHUNK_SLOTS * SLOT_BYTES].into_boxed_slice();
        // Touch every page now (a fresh mapping is backed on first write), so the packet
        // path does not page-fault on it later.
        for byte in data.iter_mut().step_by(4096) {
            *byte = 1;
        }
        Chunk {
            data,
            lens: [0; CHUNK_SLOTS],
            due_ns: [0; CHUNK_SLOTS],
        }
    }
}

/// A bounded FIFO of packets, each with the time it is due (CLOCK_MONOTONIC ns).
pub struct Ring {
    /// Chunks in FIFO order: the head packet is in the first, the tail slot in the last.
    chunks: VecDeque<Chunk>,
    free: Vec<Chunk>,
    /// Index of the head packet in chunks[0].
    head: usize,
    /// Index of the next free slot in the last chunk (CHUNK_SLOTS: it is full).
    tail: usize,
    len: usize,
    /// IP bytes of the packets held.
    bytes: u64,
    capacity: usize,
}

impl Ring {
    /// An empty ring holding at most `capacity_packets` packets (>= 1).
    pub fn new(capacity_packets: usize) -> Ring {
        assert!(capacity_packets >= 1, "a ring holds at least one packet");
        let max_chunks = capacity_packets.div_ceil(CHUNK_SLOTS) + 1;
        let mut free = Vec::with_capacity(max_chunks);
        for _ in 0..INITIAL_CHUNKS.min(max_chunks) {
            free.push(Chunk::new());
        }
        Ring {
            chunks: VecDeque::with_capacity(max_chunks),
            free,
            head: 0,
            tail: CHUNK_SLOTS,
            len: 0,
            bytes: 0,
            capacity: capacity_packets,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// IP bytes of the packets held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn is_full(&self) -> bool {
        self.len == self.capacity
    }

    /// Chunks the ring owns (in use and free): its memory is this x 512 KB.
    #[cfg(test)]
    fn chunks_owned(&self) -> usize {
        self.chunks.len() + self.free.len()
    }

    /// The free slot the next packet is read into (None when the ring is full). Nothing is
    /// queued until [`Ring::commit`].
    pub fn tail_slot(&mut self) -> Option<&mut [u8]> {
        if self.is_full() {
            return None;
        }
        if self.chunks.is_empty() || self.tail == CHUNK_SLOTS {
            let chunk = self.free.pop().unwrap_or_else(Chunk::new);
            self.chunks.push_back(chunk);
            self.tail = 0;
        }
        let t = self.tail;
        let chunk = self.chunks.back_mut().expect("a tail chunk");
        Some(&mut chunk.data[t * SLOT_BYTES..(t + 1) * SLOT_BYTES])
    }

    /// Queues the packet just read into [`Ring::tail_slot`]: `len_bytes` long, due at
    /// `due_ns`. Due times must not decrease (FIFO order is the schedule).
    pub fn commit(&mut self, len_bytes: usize, due_ns: u64) {
        assert!(!self.is_full(), "commit on a full ring");
        assert!(len_bytes <= SLOT_BYTES);
        assert!(
            !self.chunks.is_empty() && self.tail < CHUNK_SLOTS,
            "commit without tail_slot"
        );
        let t = self.tail;
        let chunk = self.chunks.back_mut().expect("a tail chunk");
        chunk.lens[t] = len_bytes as u16;
        chunk.due_ns[t] = due_ns;
        self.tail += 1;
        self.len += 1;
        self.bytes += len_bytes as u64;
    }

    /// When the oldest packet is due, if any.
    pub fn head_due_ns(&self) -> Option<u64> {
        (!self.is_empty()).then(|| self.chunks[0].due_ns[self.head])
    }

    /// The oldest packet's bytes.
    pub fn head_packet(&self) -> Option<&[u8]> {
        if self.is_empty() {
            return None;
        }
        let chunk = &self.chunks[0];
        let start = self.head * SLOT_BYTES;
        Some(&chunk.data[start..start + chunk.lens[self.head] as usize])
    }

    /// Removes the oldest packet; a chunk emptied at the head goes back to the free list.
    pub fn pop(&mut self) {
        assert!(!self.is_empty(), "pop on an empty ring");
        self.bytes -= u64::from(self.chunks[0].lens[self.head]);
        self.head += 1;
        self.len -= 1;
        if self.len == 0 && self.chunks.len() == 1 {
            // Empty with one chunk: start it over instead of walking on to a new one.
            self.head = 0;
            self.tail = 0;
        } else if self.head == CHUNK_SLOTS {
            let chunk = self.chunks.pop_front().expect("a head chunk");
            self.free.push(chunk);
            self.head = 0;
        }
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
                assert!(push(
                    &mut r,
                    round * 10 + k,
                    1 + k as usize,
                    (round as u64) * 100 + k as u64
                ));
            }
            assert!(r.is_full());
            assert_eq!(
                r.bytes(),
                1 + 2 + 3,
                "the bytes held are the packets' lengths"
            );
            assert!(!push(&mut r, 99, 1, 0), "a full ring refuses a packet");
            for k in 0..3u8 {
                assert_eq!(r.head_due_ns(), Some((round as u64) * 100 + k as u64));
                let p = r.head_packet().unwrap();
                assert_eq!(p.len(), 1 + k as usize);
                assert!(p.iter().all(|&b| b == round * 10 + k));
                r.pop();
            }
            assert!(r.is_empty());
            assert_eq!(r.bytes(), 0);
            // Shift the head so the next round starts mid-ring.
            assert!(push(&mut r, 0, 1, 0));
            r.pop();
        }
    }

    #[test]
    fn chunks_are_reused_and_order_is_kept() {
        // Capacity of several chunks: fill to the limit with the head mid-chunk, drain, and
        // run a steady queue of 300 packets for a long time: every packet comes out in
        // order, and the ring owns no more chunks than the deepest queue needed.
        let cap = CHUNK_SLOTS * 10 + 17;
        let mut r = Ring::new(cap);
        let mut next_in = 0u64;
        let mut next_out = 0u64;
        for _ in 0..CHUNK_SLOTS / 2 {
            assert!(push(
                &mut r,
                next_in as u8,
                1 + (next_in % 100) as usize,
                next_in
            ));
            next_in += 1;
        }
        for _ in 0..CHUNK_SLOTS / 4 {
            assert_eq!(r.head_due_ns(), Some(next_out));
            r.pop();
            next_out += 1;
        }
        while push(&mut r, next_in as u8, 1 + (next_in % 100) as usize, next_in) {
            next_in += 1;
        }
        assert_eq!(r.len(), cap);
        // The head is a quarter into the first chunk.
        assert_eq!(
            r.chunks_owned(),
            (CHUNK_SLOTS / 4 + cap).div_ceil(CHUNK_SLOTS)
        );
        while let Some(due) = r.head_due_ns() {
            assert_eq!(due, next_out);
            let p = r.head_packet().unwrap();
            assert_eq!(p.len(), 1 + (next_out % 100) as usize);
            assert!(p.iter().all(|&b| b == next_out as u8));
            r.pop();
            next_out += 1;
        }
        assert_eq!(next_out, next_in);
        let owned = r.chunks_owned();
        for _ in 0..100_000 {
            assert!(push(&mut r, next_in as u8, 2, next_in));
            next_in += 1;
            if r.len() > 300 {
                assert_eq!(r.head_due_ns(), Some(next_out));
                r.pop();
                next_out += 1;
            }
        }
        assert_eq!(
            r.chunks_owned(),
            owned,
            "no chunk allocated for a shallower queue"
        );
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
