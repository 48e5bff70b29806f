//! GRO on a host's receive path (`ethtool -K DEV gro on`): TCP segments of one flow that
//! arrive within one NAPI poll are merged into one packet before TCP sees them.
//!
//! Follows Linux v6.12 net/core/gro.c (`dev_gro_receive()`, `skb_gro_receive()`,
//! `__napi_gro_flush_chain()`) and net/ipv4/tcp_offload.c (`tcp_gro_receive()`):
//! - a packet is matched to the held aggregate of its flow (tcplab: its receiving
//!   endpoint, which names one direction of one connection);
//! - it merges only if its header says nothing new: the same ACK number, window and TCP
//!   options (timestamps at the TS clock's 1 ms resolution, SACK blocks), no SYN, and its
//!   sequence continues the aggregate (`th2->seq + skb_gro_len(p) == th->seq`), with a
//!   payload of at least 1 byte and at most the aggregate's `gso_size` (its first
//!   segment's payload: `(len - 1) >= mss` flushes);
//! - `skb_gro_receive()` refuses a merge that would make the aggregate's IP length reach
//!   `gro_max_size` (65536, `GRO_LEGACY_MAX_SIZE`): `p->len + len >= gro_max_size`, so an
//!   aggregate holds at most 45 segments of 1448 bytes;
//! - a packet that cannot merge flushes its flow's aggregate first (`pp`), then is either
//!   held as the new aggregate or, if it carries a flag that ends one (SYN, FIN, PSH) or
//!   no payload (a pure ACK: `len < mss`), handed on at once (`NAPI_GRO_CB(skb)->flush`);
//! - a merged segment shorter than `gso_size` or carrying FIN or PSH is the aggregate's
//!   last: the aggregate is flushed at once (`out_check_final`). Linux's senders put PSH
//!   on the last frame of every multi-segment skb (`tcp::push`), so an aggregate holds
//!   at most the frames of one TSO/GSO skb.
//!
//! The caller flushes what is held at the end of the poll: all of it when the poll
//! completes (`napi_complete_done()` -> `gro_flush()`), only aggregates started in an
//! earlier jiffy when the poll used its whole weight (`__napi_poll()`:
//! `napi_gro_flush(n, HZ >= 1000)`, "flush too old packets").
//!
//! Simplified: Linux hashes flows into 8 buckets of at most 8 held skbs
//! (`GRO_HASH_BUCKETS`, `MAX_GRO_SKBS`) and flushes a full bucket's oldest; tcplab holds
//! up to 64 aggregates in arrival order and flushes the oldest when full, and flushes in
//! arrival order (Linux: bucket by bucket, oldest first in each).
//!
//! ECN: segments with different IP ECN fields do not merge (a TOS change flushes in
//! `inet_gro_receive()`), so a CE mark is never hidden in an aggregate of ECT segments;
//! nor do segments that differ in ECE, and a segment with CWR is never merged
//! (`tcp_gro_receive()`: `flush |= flags & TCP_FLAG_CWR`).
//!
//! No allocation after construction: the table is a fixed-capacity `Vec`.
//!
//! Imports: the leaves only (`packet`).

use crate::packet::{flags, Packet};

/// `GRO_LEGACY_MAX_SIZE`: the default `gro_max_size` (include/linux/netdevice.h).
pub const GRO_MAX_SIZE: u32 = 65536;
/// `GRO_HASH_BUCKETS * MAX_GRO_SKBS` (include/net/gro.h).
pub const GRO_MAX_HELD: usize = 64;

#[derive(Clone, Copy, Debug)]
struct Held {
    pkt: Packet,
    /// `skb_shinfo(p)->gso_size`: the first segment's payload.
    mss: u32,
    /// `NAPI_GRO_CB(p)->age`: the jiffy the aggregate started in.
    jiffy: u64,
}

/// What a packet given to [`Gro::receive`] releases, in order: an aggregate flushed
/// before it (its flow's, or the oldest when the table is full), then possibly the packet
/// itself or the aggregate it completed.
#[derive(Debug, Default)]
pub struct Released {
    pub first: Option<Packet>,
    pub then: Option<Packet>,
}

#[derive(Debug)]
pub struct Gro {
    held: Vec<Held>,
    /// Ticks of the host's jiffy clock, ns (for the "too old" flush).
    jiffy_ns: u64,
}

/// A packet `tcp_gro_receive()` never merges (no payload, SYN, FIN): it flushes its flow's
/// aggregate and goes on alone.
#[inline]
pub fn cannot_merge(pkt: &Packet) -> bool {
    pkt.payload_bytes() == 0 || pkt.has(flags::SYN | flags::FIN)
}

/// A packet GRO hands on at once when no aggregate of its flow is held: one it never
/// merges, or a PSH segment, which `out_check_final` makes final by itself.
#[inline]
pub fn passes_at_once(pkt: &Packet) -> bool {
    cannot_merge(pkt) || pkt.has(flags::PSH)
}

/// A segment as GRO holds it when it starts an aggregate (`gso_segs` 1), which is what a
/// flush hands on when nothing joined it.
#[inline]
pub fn one_segment_aggregate(pkt: Packet) -> Packet {
    let mut p = pkt;
    p.gso_segs = 1;
    p
}

/// TSval/TSecr as the wire carries them: Linux's TCP timestamp clock ticks in ms
/// (tcp_time_stamp_ms()); tcplab stores ns.
#[inline]
fn ts_ms(ns: u64) -> u64 {
    ns / 1_000_000
}

/// Header fields other than sequence and length are the same (`tcp_gro_receive()`'s
/// flag-word, `ack_seq` and options comparisons).
#[inline]
fn same_header(a: &Packet, b: &Packet) -> bool {
    a.ack_seq == b.ack_seq
        && a.rwnd_bytes == b.rwnd_bytes
        && ts_ms(a.tsval_ns) == ts_ms(b.tsval_ns)
        && ts_ms(a.tsecr_ns) == ts_ms(b.tsecr_ns)
        && a.num_sacks == b.num_sacks
        && a.sack[..a.num_sacks as usize] == b.sack[..b.num_sacks as usize]
        && (a.flags ^ b.flags) & (flags::SYN | flags::DSACK | flags::ECE) == 0
        && (a.flags | b.flags) & flags::CWR == 0
        && a.ecn == b.ecn
}

impl Gro {
    /// A host's GRO table; `hz` is its `CONFIG_HZ`.
    pub fn new(hz: u32) -> Gro {
        Gro {
            held: Vec::with_capacity(GRO_MAX_HELD),
            jiffy_ns: 1_000_000_000 / hz.max(1) as u64,
        }
    }

    /// Aggregates held.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Data segments held (in flight for the conservation check).
    pub fn data_held(&self) -> u64 {
        self.held.iter().map(|h| h.pkt.segs() as u64).sum()
    }

    /// `dev_gro_receive()` for a packet addressed to this host, at `now_ns`.
    pub fn receive(&mut self, pkt: Packet, now_ns: u64) -> Released {
        let mut out = Released::default();
        let len = pkt.payload_bytes();
        let found = self.held.iter().position(|h| h.pkt.dst_ep == pkt.dst_ep);
        if let Some(i) = found {
            let h = &mut self.held[i];
            let p = &h.pkt;
            let flush = pkt.has(flags::SYN)
                || !same_header(p, &pkt)
                || len.wrapping_sub(1) >= h.mss
                || p.end_seq != pkt.seq
                || p.ip_bytes + len >= GRO_MAX_SIZE;
            if !flush {
                // skb_gro_receive(): append; tcp_flag_word(th2) |= flags & (FIN | PSH).
                h.pkt.end_seq = pkt.end_seq;
                h.pkt.ip_bytes += len;
                h.pkt.gso_segs += 1;
                h.pkt.flags |= pkt.flags & (flags::FIN | flags::PSH);
                // out_check_final: a short, PSH or FIN segment ends the aggregate.
                if len < h.mss || pkt.has(flags::FIN | flags::PSH) {
                    out.then = Some(self.held.remove(i).pkt);
                }
                return out;
            }
            out.first = Some(self.held.remove(i).pkt);
        }
        // Not merged: handed on at once (out_check_final: a PSH segment is final by
        // itself), or held as a new aggregate.
        if passes_at_once(&pkt) {
            out.then = Some(pkt);
            return out;
        }
        if self.held.len() >= GRO_MAX_HELD {
            // gro_flush_oldest(); `first` is empty here: no aggregate of this flow was held.
            out.first = Some(self.held.remove(0).pkt);
        }
        self.held.push(Held {
            pkt: one_segment_aggregate(pkt),
            mss: len,
            jiffy: now_ns / self.jiffy_ns,
        });
        out
    }

    /// The end of a NAPI poll: `all` (the poll completed, `napi_complete_done()`) flushes
    /// every aggregate; otherwise (the poll used its whole weight) only those started
    /// before the current jiffy. Released aggregates go to `out`, oldest first.
    pub fn flush(&mut self, all: bool, now_ns: u64, out: &mut Vec<Packet>) {
        if all {
            out.extend(self.held.drain(..).map(|h| h.pkt));
            return;
        }
        let j = now_ns / self.jiffy_ns;
        let mut k = 0;
        while k < self.held.len() {
            if self.held[k].jiffy != j {
                out.push(self.held.remove(k).pkt);
            } else {
                k += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::TCP_IP_HEADER_BYTES;

    const MSS: u64 = 1448;

    fn seg(ep: u32, i: u64) -> Packet {
        Packet {
            dst_ep: ep,
            seq: i * MSS,
            end_seq: (i + 1) * MSS,
            ip_bytes: TCP_IP_HEADER_BYTES + MSS as u32,
            ack_seq: 1,
            rwnd_bytes: 65535,
            tsval_ns: 5_000_000,
            ..Default::default()
        }
    }

    #[test]
    fn one_flow_merges_up_to_gro_max_size() {
        let mut g = Gro::new(1000);
        let mut out = Vec::new();
        for i in 0..50 {
            let r = g.receive(seg(1, i), 0);
            out.extend(r.first);
            out.extend(r.then);
        }
        g.flush(true, 0, &mut out);
        // 52 + 45 * 1448 = 65212 < 65536 <= 65212 + 1448: 45 segments, then 5.
        let segs: Vec<u16> = out.iter().map(|p| p.gso_segs).collect();
        assert_eq!(segs, vec![45, 5]);
        assert!(out.iter().all(|p| p.ip_bytes < GRO_MAX_SIZE));
        assert_eq!((out[0].seq, out[0].end_seq), (0, 45 * MSS));
        assert_eq!(out[1].seq, 45 * MSS);
    }

    #[test]
    fn a_gap_another_header_or_a_pure_ack_flushes() {
        let mut g = Gro::new(1000);
        assert!(g.receive(seg(1, 0), 0).first.is_none());
        // A gap in sequence: the aggregate goes first, the segment starts a new one.
        let r = g.receive(seg(1, 2), 0);
        assert_eq!(r.first.map(|p| (p.seq, p.gso_segs)), Some((0, 1)));
        assert!(r.then.is_none());
        // Another ACK number (a retransmission sent later would also change TSval).
        let mut s = seg(1, 3);
        s.ack_seq = 2;
        assert_eq!(g.receive(s, 0).first.map(|p| p.seq), Some(2 * MSS));
        // Another TSval millisecond.
        let mut s = seg(1, 4);
        s.ack_seq = 2;
        s.tsval_ns = 6_000_000;
        assert_eq!(g.receive(s, 0).first.map(|p| p.seq), Some(3 * MSS));
        // A pure ACK of the same flow: the aggregate first, then the ACK itself.
        let mut a = seg(1, 0);
        a.end_seq = a.seq;
        let r = g.receive(a, 0);
        assert_eq!(r.first.map(|p| p.seq), Some(4 * MSS));
        assert_eq!(r.then.map(|p| p.is_data()), Some(false));
        assert_eq!(g.held(), 0);
    }

    #[test]
    fn flows_are_apart_and_a_short_segment_ends_an_aggregate() {
        let mut g = Gro::new(1000);
        g.receive(seg(1, 0), 0);
        g.receive(seg(2, 0), 0);
        g.receive(seg(1, 1), 0);
        assert_eq!(g.held(), 2);
        // A short segment merges and ends its aggregate (out_check_final: len < mss).
        let mut short = seg(2, 1);
        short.end_seq = short.seq + 100;
        let r = g.receive(short, 0);
        assert!(r.first.is_none());
        assert_eq!(
            r.then.map(|p| (p.dst_ep, p.gso_segs, p.end_seq)),
            Some((2, 2, MSS + 100))
        );
        // Flow 1's aggregate is untouched.
        let mut out = Vec::new();
        g.flush(true, 0, &mut out);
        assert_eq!(
            out.iter()
                .map(|p| (p.dst_ep, p.gso_segs))
                .collect::<Vec<_>>(),
            vec![(1, 2)]
        );
    }

    #[test]
    fn a_psh_segment_ends_its_aggregate_and_alone_is_not_held() {
        // tcp_gro_receive(): a PSH segment merges (its flag joins the aggregate's) and is
        // final (out_check_final); with nothing held it is final by itself and goes on at
        // once, as a sender's last frame of every multi-segment skb does.
        let mut g = Gro::new(1000);
        g.receive(seg(1, 0), 0);
        g.receive(seg(1, 1), 0);
        let mut last = seg(1, 2);
        last.flags = flags::PSH;
        let r = g.receive(last, 0);
        assert!(r.first.is_none());
        let agg = r.then.unwrap();
        assert_eq!((agg.seq, agg.end_seq, agg.gso_segs), (0, 3 * MSS, 3));
        assert!(agg.has(flags::PSH));
        assert_eq!(g.held(), 0);
        let mut alone = seg(1, 3);
        alone.flags = flags::PSH;
        assert!(passes_at_once(&alone));
        let r = g.receive(alone, 0);
        assert_eq!(r.then.map(|p| p.seq), Some(3 * MSS));
        assert_eq!(g.held(), 0);
        // Without PSH the next segment is held.
        assert!(!passes_at_once(&seg(1, 4)));
        g.receive(seg(1, 4), 0);
        assert_eq!(g.held(), 1);
    }

    #[test]
    fn a_longer_segment_or_a_retransmission_does_not_merge() {
        let mut g = Gro::new(1000);
        // gso_size is the first segment's payload: a longer one flushes ((len - 1) >= mss).
        let mut small = seg(1, 0);
        small.end_seq = 100;
        g.receive(small, 0);
        let mut next = seg(1, 0);
        next.seq = 100;
        next.end_seq = 100 + MSS;
        let r = g.receive(next, 0);
        assert_eq!(r.first.map(|p| p.gso_segs), Some(1));
        // A retransmission of a hole behind the aggregate: not contiguous, flushes.
        g.receive(seg(1, 5), 0);
        let r = g.receive(seg(1, 3), 0);
        assert_eq!(r.first.map(|p| p.seq), Some(5 * MSS));
        assert_eq!(g.held(), 1);
    }

    #[test]
    fn a_busy_poll_flushes_only_aggregates_of_older_jiffies() {
        let mut g = Gro::new(1000);
        g.receive(seg(1, 0), 400_000);
        g.receive(seg(2, 0), 1_200_000);
        let mut out = Vec::new();
        g.flush(false, 1_500_000, &mut out);
        assert_eq!(out.iter().map(|p| p.dst_ep).collect::<Vec<_>>(), vec![1]);
        g.flush(true, 1_500_000, &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(g.held(), 0);
    }
}
