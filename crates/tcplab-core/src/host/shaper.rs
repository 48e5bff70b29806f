//! Cilium's Bandwidth Manager: EDT rate limiting of pod aggregates at a node's device.
//!
//! Cilium enforces a pod's `kubernetes.io/egress-bandwidth` with a BPF program on the
//! node's physical device that stamps each of the pod's packets with an earliest
//! departure time (`skb->tstamp`), and fq on that device holds every packet to its stamp.
//! This follows `edt_sched_departure()` (cilium bpf/lib/edt.h), per aggregate (one pod):
//!
//! ```text
//! t      = max(skb->tstamp, now)
//! delay  = wire_len * NSEC_PER_SEC / bytes_per_sec
//! t_next = t_last + delay
//! t_next <= t               -> pass unchanged, t_last = t
//! t_next - now >= horizon   -> drop (t_last unchanged)
//! otherwise                 -> skb->tstamp = t_next, t_last = t_next
//! ```
//!
//! `wire_len` is `__sk_buff->wire_len`, the packet's length at the device's tc egress
//! hook: `skb->len`, the IP packet plus the 14-byte Ethernet header (the link's framing
//! `overhead_bytes`), one segment per packet here (a GSO skb counts each segment's
//! headers, the same total). So a bulk TCP stream's payload ceiling is
//! `rate x 1448 / 1514` on a 1500-byte MTU.
//!
//! The shaper runs at the link's enqueue, before its qdisc, on packets whose source node
//! is in an aggregate's `nodes` (the pod's packets, which Cilium marks on the pod's veth
//! with the aggregate id in `skb->queue_mapping`). A dropped packet is counted per
//! aggregate (`drops`; Cilium's drop reason "EDT horizon") and in the link's data
//! accounting as a queue drop. The drop horizon is Cilium's `t_horizon_drop` (2 s by
//! default, the same as the fq horizon Cilium installs).
//!
//! ECN (a what-if, `ce_threshold_ns`): no Cilium release marks ECN here. cilium/cilium PR
//! #33220 ("bandwidth-manager: introduce ecn marking to prevent bufferbloat", June 2024,
//! closed without being merged) proposed marking CE on packets that would wait more than
//! a threshold (1 ms by default) for their departure time, and measured TCP_RR at 3.1 ms
//! against 2247 ms without marking (128 bulk flows, a 100 Mbit/s pod). fq's own
//! `ce_threshold` cannot do this: it measures how late a packet leaves after its stamp,
//! and the wait the stamp itself imposes does not count (`net::qdisc::fq`).

use crate::config::EdtConfig;
use crate::packet::Packet;
use crate::time::NSEC_PER_SEC;

/// No aggregate for this node.
const NONE: u32 = u32::MAX;

/// One aggregate (`struct edt_info` plus counters).
#[derive(Clone, Debug)]
pub struct EdtAggregate {
    pub rate_bps: u64,
    /// `info->bps`: the rate in bytes per second.
    bytes_per_sec: u64,
    /// `info->t_horizon_drop`, ns.
    drop_horizon_ns: u64,
    /// `info->t_last`: the departure time given to the aggregate's last packet.
    t_last_ns: u64,
    /// Packets dropped beyond the horizon.
    pub drops: u64,
    /// Packets given a later departure time.
    pub stamped: u64,
    /// Packets that passed unchanged.
    pub passed: u64,
    /// `ce_threshold_ns` (PR #33220's marking); `u64::MAX` = off.
    ce_threshold_ns: u64,
    /// Packets marked CE.
    pub ce_marks: u64,
}

/// The EDT aggregates of one link, looked up by the packet's source node.
#[derive(Clone, Debug)]
pub struct EdtShaper {
    /// node index -> aggregate index (or `NONE`).
    by_node: Vec<u32>,
    pub aggregates: Vec<EdtAggregate>,
}

impl EdtShaper {
    /// `None` if the link has no aggregate (the hot path then costs one branch).
    pub fn new(cfgs: &[EdtConfig]) -> Option<EdtShaper> {
        if cfgs.is_empty() {
            return None;
        }
        let max_node = cfgs
            .iter()
            .flat_map(|c| c.nodes.iter().copied())
            .max()
            .unwrap_or(0);
        let mut by_node = vec![NONE; max_node as usize + 1];
        for (i, c) in cfgs.iter().enumerate() {
            for &n in &c.nodes {
                by_node[n as usize] = i as u32;
            }
        }
        let aggregates = cfgs
            .iter()
            .map(|c| EdtAggregate {
                rate_bps: c.rate_bps,
                bytes_per_sec: c.rate_bps / 8,
                drop_horizon_ns: c.drop_horizon_ns,
                t_last_ns: 0,
                drops: 0,
                stamped: 0,
                passed: 0,
                ce_threshold_ns: c.ce_threshold_ns.unwrap_or(u64::MAX),
                ce_marks: 0,
            })
            .collect();
        Some(EdtShaper {
            by_node,
            aggregates,
        })
    }

    /// `edt_sched_departure()` for a packet of `wire_len` bytes at `now_ns`. Returns false
    /// if the packet is dropped; otherwise `pkt.tstamp_ns` may have moved later.
    #[inline]
    pub fn apply(&mut self, pkt: &mut Packet, wire_len: u32, now_ns: u64) -> bool {
        let Some(&a) = self.by_node.get(pkt.src_node as usize) else {
            return true;
        };
        if a == NONE {
            return true;
        }
        let agg = &mut self.aggregates[a as usize];
        if agg.bytes_per_sec == 0 {
            // `if (!info->bps) goto out`: no limit.
            agg.passed += 1;
            return true;
        }
        let t = pkt.tstamp_ns.max(now_ns);
        let delay_ns = wire_len as u64 * NSEC_PER_SEC / agg.bytes_per_sec;
        let t_next = agg.t_last_ns.saturating_add(delay_ns);
        if t_next <= t {
            agg.t_last_ns = t;
            agg.passed += 1;
            return true;
        }
        // Drop before t_last moves, so that a dropped packet leaves no hole in the schedule.
        if t_next - now_ns >= agg.drop_horizon_ns {
            agg.drops += 1;
            return false;
        }
        agg.t_last_ns = t_next;
        pkt.tstamp_ns = t_next;
        agg.stamped += 1;
        // PR #33220: a packet that will wait more than the threshold for its departure
        // time is marked, so that an ECN sender backs off before the horizon drops.
        if t_next - now_ns > agg.ce_threshold_ns && crate::packet::ecn::set_ce(&mut pkt.ecn) {
            agg.ce_marks += 1;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEN: u32 = 1514;

    fn shaper(rate_bps: u64, horizon_ns: u64) -> EdtShaper {
        EdtShaper::new(&[EdtConfig {
            nodes: vec![3],
            rate_bps,
            drop_horizon_ns: horizon_ns,
            ce_threshold_ns: None,
        }])
        .unwrap()
    }

    fn pkt(src_node: u32, tstamp_ns: u64) -> Packet {
        Packet {
            src_node,
            tstamp_ns,
            ip_bytes: 1500,
            ..Packet::default()
        }
    }

    #[test]
    fn packets_of_an_aggregate_are_stamped_one_wire_time_apart() {
        // 10 Mbit/s = 1.25 MB/s: 1514 bytes every 1211.2 us.
        let mut s = shaper(10_000_000, 2_000_000_000);
        let gap = 1514 * 1_000_000_000 / 1_250_000;
        let now = 5_000_000_000;
        let mut p = pkt(3, now - 10);
        assert!(s.apply(&mut p, LEN, now));
        assert_eq!(p.tstamp_ns, now - 10, "the first packet passes unchanged");
        for k in 1..=5 {
            let mut p = pkt(3, now);
            assert!(s.apply(&mut p, LEN, now));
            assert_eq!(p.tstamp_ns, now + k * gap);
        }
        assert_eq!((s.aggregates[0].passed, s.aggregates[0].stamped), (1, 5));
        // Other nodes' packets are not touched.
        let mut q = pkt(2, now);
        assert!(s.apply(&mut q, LEN, now));
        assert_eq!(q.tstamp_ns, now);
        // A packet stamped later than t_last + delay by its sender passes, and moves t_last.
        let late = now + 100 * gap;
        let mut p = pkt(3, late);
        assert!(s.apply(&mut p, LEN, now));
        assert_eq!(p.tstamp_ns, late);
        let mut p = pkt(3, now);
        assert!(s.apply(&mut p, LEN, now));
        assert_eq!(p.tstamp_ns, late + gap);
    }

    #[test]
    fn a_packet_that_would_leave_beyond_the_horizon_is_dropped_without_moving_t_last() {
        let gap = 1514 * 1_000_000_000 / 1_250_000;
        // Horizon of 3 gaps: stamps now+gap, now+2gap are kept; now+3gap is dropped.
        let mut s = shaper(10_000_000, 3 * gap);
        let now = 5_000_000_000;
        let mut p = pkt(3, 0);
        assert!(s.apply(&mut p, LEN, now));
        for k in 1..=2 {
            let mut p = pkt(3, 0);
            assert!(s.apply(&mut p, LEN, now));
            assert_eq!(p.tstamp_ns, now + k * gap);
        }
        assert!(!s.apply(&mut pkt(3, 0), LEN, now));
        assert!(!s.apply(&mut pkt(3, 0), LEN, now));
        assert_eq!(s.aggregates[0].drops, 2);
        // One gap later the next slot (now + 3 gap) is within the horizon again.
        let mut p = pkt(3, 0);
        assert!(s.apply(&mut p, LEN, now + gap));
        assert_eq!(p.tstamp_ns, now + 3 * gap);
    }
}
