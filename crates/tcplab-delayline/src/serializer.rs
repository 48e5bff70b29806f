//! A link's serialisation on one direction of the line (`--tun NAME:DELAY:RATE:OVERHEAD`).
//!
//! Model: the wire carries one packet at a time. A packet of `len` IP bytes that the line
//! reads at `t` starts when it arrives or when the packet before it is done, whichever is
//! later, and is done `(len + overhead) * 8 / rate` later; its delay runs from then. This
//! is what the simulator's link does (`tcplab_core::net::link`: a frame's last bit leaves
//! at the end of its serialisation, then propagates).
//!
//! Why the line does it: kernel mode shapes a link's rate with a tbf on the sender's
//! egress, which must hold a bucket of at least two full frames. tbf releases a packet as
//! soon as it has the tokens and the veth carries it at once, so the first two frames of a
//! burst into an idle link cross together, where a link of that rate would have taken one
//! frame time for each: 2.4 ms per 1514-byte frame at 5 Mbit/s, on every round trip of a
//! flow that sends two-segment skbs (docs/kernel-pin.md, departure 4). Behind the tbf, the
//! line spaces them as the link would; the tbf's average rate and its queue (and its drops)
//! are unchanged, the bucket's frames wait here instead.
//!
//! Integer arithmetic: the time is rounded up to the nanosecond.
#![forbid(unsafe_code)]

#[derive(Debug, Clone, Copy, Default)]
pub struct Serializer {
    /// Bits per second; 0: no serialisation (the delay alone).
    pub rate_bps: u64,
    /// Framing bytes each packet adds on the wire (14: an Ethernet header, as tbf counts).
    pub overhead_bytes: u32,
    /// When the wire is next free (ns, the line's clock).
    free_ns: u64,
}

impl Serializer {
    pub fn new(rate_bps: u64, overhead_bytes: u32) -> Serializer {
        Serializer {
            rate_bps,
            overhead_bytes,
            free_ns: 0,
        }
    }

    /// (start, done): when a packet of `len_bytes` read at `arrival_ns` starts on the wire
    /// and when it has been serialised (its delay starts then); `start - arrival_ns` is its
    /// wait in the link's queue (the step marker's sojourn, `marker.rs`). Both `arrival_ns`
    /// without a rate.
    #[inline]
    pub fn schedule(&mut self, arrival_ns: u64, len_bytes: usize) -> (u64, u64) {
        if self.rate_bps == 0 {
            return (arrival_ns, arrival_ns);
        }
        let bits = (len_bytes as u128 + self.overhead_bytes as u128) * 8;
        let tx_ns = (bits * 1_000_000_000).div_ceil(self.rate_bps as u128) as u64;
        let start = arrival_ns.max(self.free_ns);
        self.free_ns = start + tx_ns;
        (start, self.free_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_leaves_one_frame_time_apart_and_an_idle_wire_starts_at_once() {
        // 5 Mbit/s, 1500-byte IP packets + 14 bytes: 1514 * 8 / 5e6 s = 2422.4 us.
        let mut s = Serializer::new(5_000_000, 14);
        let frame_ns = 2_422_400;
        assert_eq!(s.schedule(1_000, 1500).1, 1_000 + frame_ns);
        // The second of a burst read at the same time waits for the first.
        assert_eq!(s.schedule(1_000, 1500).1, 1_000 + 2 * frame_ns);
        // After the wire went idle, a packet starts when it arrives.
        let later = 10_000_000;
        assert_eq!(
            s.schedule(later, 52).1,
            later + (66 * 8 * 1_000_000_000u64).div_ceil(5_000_000)
        );
    }

    #[test]
    fn the_start_is_when_the_wire_is_free() {
        let mut s = Serializer::new(5_000_000, 14);
        let frame_ns = 2_422_400;
        assert_eq!(s.schedule(1_000, 1500), (1_000, 1_000 + frame_ns));
        // the second of a burst waits one frame time for the wire
        assert_eq!(
            s.schedule(1_000, 1500),
            (1_000 + frame_ns, 1_000 + 2 * frame_ns)
        );
        assert_eq!(Serializer::default().schedule(7, 1500), (7, 7));
    }

    #[test]
    fn without_a_rate_the_arrival_stands() {
        let mut s = Serializer::default();
        assert_eq!(s.schedule(5, 1500).1, 5);
        assert_eq!(s.schedule(5, 1500).1, 5);
    }
}
