//! A step ECN marker on a serialising TUN (`--ce-threshold NAME:NS`): the counterpart, in
//! kernel mode on kernels without sch_fq_codel, of a one-flow fq_codel with `ce_threshold`
//! (docs/kernel-pin.md, "ECN and the marking qdiscs").
//!
//! Model: on a TUN with a rate, a packet waits for the wire from when the line read it to
//! when its serialisation starts (`serializer`); that wait is its sojourn in the link's
//! queue. A packet whose sojourn is above the threshold has its IPv4 ECN field set to CE
//! if it is ECN-capable, and is counted. This is what Linux v6.12 does at the end of
//! `codel_dequeue()` (include/net/codel_impl.h):
//!
//! ```c
//! if (skb && codel_time_after(vars->ldelay, params->ce_threshold)) {
//!         ... if (set_ce && INET_ECN_set_ce(skb)) stats->ce_mark++;
//! ```
//!
//! with CoDel's clock: times in 1024-ns ticks (`codel_get_time()`: ns >> CODEL_SHIFT),
//! `ldelay` = the dequeue tick minus the enqueue tick, the threshold `(us * 1000) >> 10`
//! (fq_codel_change()), compared as signed 32-bit (`codel_time_after()`). The marking
//! (`IP_ECN_set_ce()`, include/net/inet_ecn.h): ECT(0) and ECT(1) become CE with the header
//! checksum updated incrementally; a CE packet stays CE and counts (the function returns 1);
//! a not-ECT packet is left alone and does not count. Only IPv4 is marked (kernel mode
//! disables IPv6 in its namespaces).
//!
//! What this marker is not: CoDel's own control law (marking at intervals once the sojourn
//! has stayed above `target` for an `interval`) is not run. For ECN-capable packets and a
//! threshold at or below `target` it marks no packet the step does not: it acts only on
//! packets whose sojourn is at or above `target`, which the step has marked already. (A
//! not-ECT packet it would drop, the step lets through.)
#![forbid(unsafe_code)]

/// `CODEL_SHIFT`: CoDel's clock counts 2^10 ns ticks.
pub const CODEL_SHIFT: u32 = 10;
/// `INET_ECN_MASK`: the two ECN bits of the IPv4 TOS byte; CE is both set.
const INET_ECN_MASK: u8 = 3;
const INET_ECN_CE: u8 = 3;

/// A TUN's step marker: CE above `threshold_ns` of sojourn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepMarker {
    pub threshold_ns: u64,
}

impl StepMarker {
    pub fn new(threshold_ns: u64) -> StepMarker {
        StepMarker { threshold_ns }
    }

    /// Whether a packet that arrived at `arrival_ns` and started on the wire at `start_ns`
    /// waited longer than the threshold, in CoDel's ticks (module doc).
    #[inline]
    pub fn over(&self, arrival_ns: u64, start_ns: u64) -> bool {
        let ldelay = codel_time(start_ns).wrapping_sub(codel_time(arrival_ns));
        let threshold = (self.threshold_ns >> CODEL_SHIFT) as u32;
        // codel_time_after(a, b): (s32)(a - b) > 0
        (ldelay.wrapping_sub(threshold) as i32) > 0
    }

    /// Marks `packet` if it waited too long: true when it counts as a CE mark.
    #[inline]
    pub fn apply(&self, packet: &mut [u8], arrival_ns: u64, start_ns: u64) -> bool {
        self.over(arrival_ns, start_ns) && ipv4_set_ce(packet)
    }
}

/// `codel_get_time()` of a CLOCK_MONOTONIC time.
#[inline]
fn codel_time(ns: u64) -> u32 {
    (ns >> CODEL_SHIFT) as u32
}

/// `IP_ECN_set_ce()` on an IPv4 packet (module doc): true for an ECT packet now CE and for
/// a packet already CE, false for a not-ECT one (or anything that is not an IPv4 header).
pub fn ipv4_set_ce(packet: &mut [u8]) -> bool {
    if packet.len() < 20 || packet[0] >> 4 != 4 {
        return false;
    }
    let tos = packet[1];
    match tos & INET_ECN_MASK {
        0 => false,          // Not-ECT
        INET_ECN_CE => true, // already CE: INET_ECN_set_ce() says so, and it counts
        _ => {
            // RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), m the 16-bit word holding the TOS
            // byte (version/IHL in its high byte). Linux adds the same difference
            // (htons(0xFFFB) + htons(ecn)); the result is the same one's-complement sum.
            let old_word = u16::from_be_bytes([packet[0], tos]);
            let new_tos = tos | INET_ECN_CE;
            let new_word = u16::from_be_bytes([packet[0], new_tos]);
            let check = u16::from_be_bytes([packet[10], packet[11]]);
            let mut sum = (!check) as u32 + (!old_word) as u32 + new_word as u32;
            while sum > 0xFFFF {
                sum = (sum & 0xFFFF) + (sum >> 16);
            }
            let new_check = !(sum as u16);
            packet[1] = new_tos;
            packet[10..12].copy_from_slice(&new_check.to_be_bytes());
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The IPv4 header checksum computed from scratch (RFC 791).
    fn header_checksum(h: &[u8]) -> u16 {
        let ihl = ((h[0] & 0x0F) as usize) * 4;
        let mut sum: u32 = 0;
        for i in (0..ihl).step_by(2) {
            if i == 10 {
                continue;
            }
            sum += u16::from_be_bytes([h[i], h[i + 1]]) as u32;
        }
        while sum > 0xFFFF {
            sum = (sum & 0xFFFF) + (sum >> 16);
        }
        !(sum as u16)
    }

    /// A 20-byte IPv4/TCP header with `tos` and a correct checksum, then `payload` bytes.
    fn packet(tos: u8, payload: usize) -> Vec<u8> {
        let total = 20 + payload;
        let mut p = vec![0u8; total];
        p[0] = 0x45;
        p[1] = tos;
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[4..6].copy_from_slice(&0x1c46u16.to_be_bytes());
        p[8] = 63;
        p[9] = 6;
        p[12..16].copy_from_slice(&[10, 0, 0, 1]);
        p[16..20].copy_from_slice(&[10, 0, 0, 2]);
        let c = header_checksum(&p);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        p
    }

    #[test]
    fn ect_becomes_ce_with_a_checksum_that_still_holds() {
        for (tos, expected) in [(0x02u8, 0x03u8), (0x01, 0x03), (0xb8 | 0x02, 0xb8 | 0x03)] {
            let mut p = packet(tos, 1448);
            assert!(ipv4_set_ce(&mut p));
            assert_eq!(p[1], expected);
            let stored = u16::from_be_bytes([p[10], p[11]]);
            assert_eq!(stored, header_checksum(&p), "tos {tos:#x}");
        }
    }

    #[test]
    fn not_ect_is_left_alone_and_ce_counts_as_marked() {
        let mut p = packet(0x00, 0);
        let before = p.clone();
        assert!(!ipv4_set_ce(&mut p));
        assert_eq!(p, before);
        let mut ce = packet(0x03, 0);
        let before = ce.clone();
        assert!(ipv4_set_ce(&mut ce));
        assert_eq!(ce, before);
        // not IPv4, or too short: nothing
        let mut v6 = vec![
            0x60u8, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ];
        assert!(!ipv4_set_ce(&mut v6));
        assert!(!ipv4_set_ce(&mut [0x45, 0x02]));
    }

    #[test]
    fn the_threshold_is_compared_in_codel_ticks() {
        // 3 ms = 2929 ticks (3_000_000 >> 10); a wait marks only when it spans more ticks
        let m = StepMarker::new(3_000_000);
        let threshold_ticks = 3_000_000u64 >> 10;
        assert_eq!(threshold_ticks, 2929);
        let arrival = 1_000_000u64 << 10; // a tick boundary
        let at = |ticks: u64| arrival + (ticks << 10);
        assert!(!m.over(arrival, at(2929)));
        assert!(m.over(arrival, at(2930)));
        assert!(!m.over(arrival, arrival));
        // the enqueue and the dequeue time are each rounded down to a tick
        // (codel_get_time()): a wait 1023 ns short of 2930 ticks still spans 2930 of them,
        // and one 1 ns short of the 2930th tick spans 2929
        assert!(m.over(arrival + 1023, at(2930)));
        assert!(!m.over(arrival, at(2930) - 1));
    }

    #[test]
    fn apply_marks_only_an_ect_packet_that_waited_too_long() {
        let m = StepMarker::new(1_000_000);
        let mut p = packet(0x02, 100);
        assert!(!m.apply(&mut p, 0, 500_000));
        assert_eq!(p[1] & 3, 2);
        assert!(m.apply(&mut p, 0, 2_000_000));
        assert_eq!(p[1] & 3, 3);
        let mut plain = packet(0x00, 100);
        assert!(!m.apply(&mut plain, 0, 2_000_000));
    }
}
