//! ACK processing: Linux v6.12 net/ipv4/tcp_input.c `tcp_ack()` and the functions it calls
//! (`tcp_sacktag_write_queue`, `tcp_clean_rtx_queue`, `tcp_ack_update_rtt`,
//! `tcp_check_sack_reordering`, `tcp_cong_control`), in the kernel's order:
//!
//! 1. tag SACKed skbs (D-SACK detection, RACK advance, delivery-rate sampling);
//! 2. remove cumulatively ACKed skbs, take the RTT sample, call `pkts_acked`;
//! 3. `tcp_rack_update_reo_wnd`, TLP ACK processing;
//! 4. loss detection and the recovery state machine (`tcp_fastretrans_alert`), if dubious;
//! 5. re-arm TLP/RTO; generate the rate sample (`tcp_rate_gen`);
//! 6. congestion control (`cong_control`, or PRR / `cong_avoid` + pacing-rate update);
//! 7. retransmit what is marked lost (`tcp_xmit_recovery`).

use crate::cc::CongestionOps;
use crate::mib::Mib;
use crate::packet::{flags, Packet, SackBlock, MAX_SACK_BLOCKS};
use crate::tcp::ecn::TCP_ECN_OK;
use crate::tcp::rate::{rate_gen, rate_skb_delivered};
use crate::tcp::rate_sample::{AckSample, RateSample};
use crate::tcp::rtt::{rtt_estimator, set_rto, update_rtt_min};
use crate::tcp::rtx_queue::{TCPCB_LOST, TCPCB_RETRANS, TCPCB_SACKED_ACKED, TCPCB_SACKED_RETRANS};
use crate::tcp::sock::CaState;
use crate::tcp::socket::{Ctx, TcpSocket};

// tcp_ack() flags (include/net/tcp.h / tcp_input.c)
pub const FLAG_DATA: u32 = 0x01;
pub const FLAG_WIN_UPDATE: u32 = 0x02;
pub const FLAG_DATA_ACKED: u32 = 0x04;
pub const FLAG_RETRANS_DATA_ACKED: u32 = 0x08;
pub const FLAG_SYN_ACKED: u32 = 0x10;
pub const FLAG_DATA_SACKED: u32 = 0x20;
pub const FLAG_ECE: u32 = 0x40;
pub const FLAG_LOST_RETRANS: u32 = 0x80;
pub const FLAG_SLOWPATH: u32 = 0x100;
pub const FLAG_ORIG_SACK_ACKED: u32 = 0x200;
pub const FLAG_SND_UNA_ADVANCED: u32 = 0x400;
pub const FLAG_DSACKING_ACK: u32 = 0x800;
pub const FLAG_SET_XMIT_TIMER: u32 = 0x1000;
pub const FLAG_SACK_RENEGING: u32 = 0x2000;
pub const FLAG_UPDATE_TS_RECENT: u32 = 0x4000;
pub const FLAG_NO_CHALLENGE_ACK: u32 = 0x8000;
pub const FLAG_ACK_MAYBE_DELAYED: u32 = 0x10000;
pub const FLAG_DSACK_TLP: u32 = 0x20000;
pub const FLAG_ACKED: u32 = FLAG_DATA_ACKED | FLAG_SYN_ACKED;
pub const FLAG_NOT_DUP: u32 = FLAG_DATA | FLAG_WIN_UPDATE | FLAG_ACKED;
pub const FLAG_CA_ALERT: u32 = FLAG_DATA_SACKED | FLAG_ECE | FLAG_DSACKING_ACK;
pub const FLAG_FORWARD_PROGRESS: u32 = FLAG_ACKED | FLAG_DATA_SACKED;

/// The SACK blocks the previous ACK carried and that were walked in full (Linux v6.12
/// net/ipv4/tcp_input.c: tcp_sacktag_write_queue() keeps them as `tp->recv_sack_cache` to
/// skip work already done). An skb lying entirely inside a walked block was SACK-tagged
/// then, and tcplab never clears `TCPCB_SACKED_ACKED` (no SACK reneging), so a later walk
/// may jump over such a run. Unlike Linux, the cache only saves work here: blocks are still
/// walked in the order received and every untagged skb is visited, so the result is the
/// same as walking every skb of each block.
#[derive(Clone, Copy, Debug, Default)]
pub struct SackCache {
    blocks: [SackBlock; MAX_SACK_BLOCKS],
    len: u8,
}

impl SackCache {
    #[inline]
    fn push(&mut self, b: SackBlock) {
        if (self.len as usize) < MAX_SACK_BLOCKS {
            self.blocks[self.len as usize] = b;
            self.len += 1;
        }
    }

    /// The cached block holding sequence number `seq`, if any.
    #[inline]
    fn holding(&self, seq: u64) -> Option<SackBlock> {
        self.blocks[..self.len as usize]
            .iter()
            .copied()
            .find(|c| c.start <= seq && seq < c.end)
    }

    /// The cached block holding all of `[seq, end_seq)`, if any.
    #[inline]
    fn covering(&self, seq: u64, end_seq: u64) -> Option<SackBlock> {
        self.blocks[..self.len as usize]
            .iter()
            .copied()
            .find(|c| c.start <= seq && end_seq <= c.end)
    }
}

/// `tcp_sacktag_state` (the parts tcplab uses).
#[derive(Default)]
struct SackState {
    reord: u64,
    orig_sack_acked: bool,
    /// us, xmit time of first/last newly SACKed never-retransmitted skb
    first_sackt: u64,
    last_sackt: u64,
    sack_delivered: u32,
}

impl TcpSocket {
    /// `tcp_ack()`. Returns the flags (for tests and tracing).
    pub fn tcp_ack(&mut self, ctx: &mut Ctx, pkt: &Packet) -> u32 {
        let ack = pkt.ack_seq;
        let prior_snd_una = self.tp.snd_una;
        let mut flag: u32 = 0;
        let mut rs = RateSample::default();
        let prior_fack = self.highest_sack_seq_or_una();
        let prior_packets = self.tp.packets_out;
        let delivered0 = self.tp.delivered;
        let lost0 = self.tp.lost;
        let mut rexmit = Rexmit::None;

        // If the ack is older than previous acks then we can probably ignore it.
        if ack < prior_snd_una {
            // old_ack: process SACK information for undo and more sending.
            if pkt.num_sacks > 0 {
                let mut st = SackState {
                    reord: self.tp.snd_nxt,
                    ..Default::default()
                };
                flag |= self.sacktag_write_queue(pkt, prior_snd_una, &mut rs, &mut st);
                self.fastretrans_alert(ctx, prior_snd_una, 0, &mut flag, &mut rexmit);
                self.xmit_recovery(ctx, rexmit);
            }
            return flag;
        }
        // If the ack includes data we haven't sent yet, discard this segment.
        if ack > self.tp.snd_nxt {
            return flag;
        }
        // An acceptable ACK: the peer is alive (icsk_probes_out = 0 in tcp_ack()).
        self.probes_out = 0;
        self.probes_tstamp_ns = 0;
        if ack > prior_snd_una {
            flag |= FLAG_SND_UNA_ADVANCED;
            self.icsk_retransmits = 0;
        }
        rs.prior_in_flight = self.tp.packets_in_flight();

        if pkt.is_data() {
            flag |= FLAG_DATA;
        }
        // tcp_ack_update_window(): window updates are always accepted here (no wraparound).
        if pkt.rwnd_bytes != self.tp.snd_wnd {
            flag |= FLAG_WIN_UPDATE;
            self.tp.snd_wnd = pkt.rwnd_bytes;
            // Linux v6.12 tcp_ack_update_window(): a new window with data queued checks
            // for an idle restart (after a zero window, nothing was sent for a while).
            if self.tp.write_seq > self.tp.snd_nxt {
                self.slow_start_after_idle_check();
            }
            // tcp_ack_update_window(): the largest window ever offered.
            self.tp.max_window = self.tp.max_window.max(self.tp.snd_wnd);
        }
        if ack > prior_snd_una {
            flag |= FLAG_WIN_UPDATE;
        }
        if self.ecn_rcv_ecn_echo(pkt) {
            flag |= FLAG_ECE;
        }
        let mut st = SackState {
            reord: self.tp.snd_nxt,
            ..Default::default()
        };
        if pkt.num_sacks > 0 {
            flag |= self.sacktag_write_queue(pkt, prior_snd_una, &mut rs, &mut st);
        }
        self.tp.snd_una = ack;
        // tcp_count_delivered() of what the SACK blocks delivered, then tcp_in_ack_event()
        // (Linux v6.12 order: before the cumulative ACK cleans the queue).
        // Only DCTCP has `in_ack_event`, and only with ECN (else it runs as dctcp-reno).
        let mut ce_counted = delivered0;
        if self.tp.ecn_flags & TCP_ECN_OK != 0 {
            if flag & FLAG_ECE != 0 {
                self.tp.delivered_ce += self.tp.delivered - ce_counted;
                ce_counted = self.tp.delivered;
            }
            self.cc.in_ack_event(&mut self.tp, flag);
        }

        if prior_packets == 0 {
            // no_queue: nothing was outstanding.
            if flag & FLAG_DSACKING_ACK != 0 {
                self.fastretrans_alert(ctx, prior_snd_una, 0, &mut flag, &mut rexmit);
            }
            // If this ack opens up a zero window, clear backoff (tcp_ack_probe).
            self.ack_probe(ctx.now_ns);
            if self.tlp_high_seq != 0 {
                self.process_tlp_ack(ack, flag);
            }
            return flag;
        }

        flag |= self.clean_rtx_queue(pkt, prior_fack, prior_snd_una, &mut rs, &mut st, flag);
        if self.rtx.is_empty() {
            // tcp_clean_rtx_queue(): everything sent is acknowledged.
            self.chrono_stop(crate::tcp::chrono::ChronoType::Busy);
        }

        self.rack_update_reo_wnd(&rs);
        if self.tlp_high_seq != 0 {
            self.process_tlp_ack(ack, flag);
        }
        if self.ack_is_dubious(flag) {
            let mut num_dupack = 0;
            if flag & (FLAG_SND_UNA_ADVANCED | FLAG_NOT_DUP | FLAG_DSACKING_ACK) == 0 {
                num_dupack = 1;
            }
            self.fastretrans_alert(ctx, prior_snd_una, num_dupack, &mut flag, &mut rexmit);
        }
        // If needed, reset TLP/RTO timer when RACK doesn't set.
        if flag & FLAG_SET_XMIT_TIMER != 0 {
            self.set_xmit_timer(ctx.now_ns);
        }
        let delivered = self.tp.delivered - delivered0;
        if flag & FLAG_ECE != 0 {
            // tcp_count_delivered(ece_ack) of the rest, and tcp_newly_delivered().
            self.tp.delivered_ce += self.tp.delivered - ce_counted;
            self.tp.mib.add(Mib::TCPDeliveredCE, delivered as u64);
        }
        let lost = self.tp.lost - lost0;
        rs.is_ack_delayed = flag & FLAG_ACK_MAYBE_DELAYED != 0;
        rate_gen(&mut self.tp, delivered, lost, false, &mut rs);
        self.cong_control(ack, delivered, flag, &rs);
        self.xmit_recovery(ctx, rexmit);
        // tcp_new_space(): more send buffer when not cwnd-limited.
        if flag & FLAG_SND_UNA_ADVANCED != 0 && self.tp.packets_in_flight() < self.tp.snd_cwnd {
            self.sndbuf_expand();
        }
        self.check_app_done(ctx.now_ns);
        if self.notify_acked && self.tp.snd_una > prior_snd_una {
            self.notify |= crate::tcp::socket::notify::ACKED;
        }
        flag
    }

    /// `tcp_ack_is_dubious()`.
    #[inline]
    fn ack_is_dubious(&self, flag: u32) -> bool {
        flag & FLAG_NOT_DUP == 0 || flag & FLAG_CA_ALERT != 0 || self.tp.ca_state != CaState::Open
    }

    /// `tcp_highest_sack_seq()`.
    #[inline]
    pub fn highest_sack_seq_or_una(&self) -> u64 {
        if self.tp.sacked_out == 0 {
            return self.tp.snd_una;
        }
        self.highest_sack_seq.unwrap_or(self.tp.snd_nxt)
    }

    /// `tcp_sacktag_write_queue()` with `tcp_check_dsack()`; SACK is processed per skb
    /// (each skb is one segment, so no shifting/splitting is needed).
    fn sacktag_write_queue(
        &mut self,
        pkt: &Packet,
        prior_snd_una: u64,
        rs: &mut RateSample,
        st: &mut SackState,
    ) -> u32 {
        let mut flag = 0;
        let prior_fack = self.highest_sack_seq_or_una();
        let n = pkt.num_sacks as usize;
        let mut first = 0;
        // tcp_check_dsack()
        if n > 0 {
            let b0 = pkt.sack[0];
            let mut dup_sack = b0.start < pkt.ack_seq;
            if !dup_sack && n > 1 {
                let b1 = pkt.sack[1];
                if b0.end <= b1.end && b0.start >= b1.start {
                    dup_sack = true;
                }
            }
            if dup_sack || pkt.has(flags::DSACK) {
                self.tp.inc(Mib::TCPDSACKRecv);
                flag |= FLAG_DSACKING_ACK;
                self.rack.dsack_seen = true;
                // D-SACK for a retransmitted segment below snd_una: one fewer retransmission
                // to explain, for undo.
                if self.undo_valid
                    && self.undo_retrans > 0
                    && b0.end <= prior_snd_una
                    && b0.end > self.undo_marker
                {
                    self.undo_retrans -= 1;
                }
                if self.tlp_high_seq != 0 && b0.end == self.tlp_high_seq && self.tlp_retrans {
                    flag |= FLAG_DSACK_TLP;
                }
                first = 1;
            }
        }
        // Blocks walked by the previous ACK (see `SackCache`): every skb entirely inside
        // one is SACKed already, so the walk jumps over such runs.
        let cache = std::mem::take(&mut self.sack_cache);
        for i in first..n {
            let b = pkt.sack[i];
            if b.end <= b.start
                || b.end > self.tp.snd_nxt
                || b.end <= self.tp.snd_una.max(pkt.ack_seq)
            {
                continue; // invalid or already acked
            }
            // Start past a cached block that holds this block's start: every skb ending
            // by its end is either inside it (tagged) or starts below `b.start` (outside
            // this block), so the walk would pass over them without effect.
            let mut from = b.start.max(self.tp.snd_una);
            if let Some(c) = cache.holding(b.start) {
                if b.end <= c.end {
                    // All of it was walked before (the usual case for all but the first
                    // block): nothing to tag, as Linux's "rest of the block already fully
                    // processed" skip.
                    self.sack_cache.push(b);
                    continue;
                }
                from = from.max(c.end);
            }
            if self.gso_skbs {
                self.sack_split_skbs(b.start.max(self.tp.snd_una), b.end);
            }
            let mut id = self.rtx.lower_bound_end(from);
            while id < self.rtx.end_id() {
                let (seq, end_seq, sacked) = {
                    let s = self.rtx.get(id);
                    (s.seq, s.end_seq, s.sacked)
                };
                if seq >= b.end {
                    break;
                }
                if sacked & TCPCB_SACKED_ACKED != 0 {
                    // Already tagged: nothing to do for it, nor for the rest of a cached
                    // block it lies in.
                    id = match cache.covering(seq, end_seq) {
                        Some(c) => self.rtx.lower_bound_end(c.end).max(id + 1),
                        None => id + 1,
                    };
                    continue;
                }
                if seq >= b.start && end_seq <= b.end {
                    flag |= self.sacktag_one(id, st, rs);
                }
                id += 1;
            }
            self.sack_cache.push(b);
        }
        // tcp_sacktag_write_queue(): a never-retransmitted skb SACKed below the prior
        // highest SACK means the network reordered.
        if st.reord < prior_fack {
            self.check_sack_reordering(st.reord, false);
        }
        flag
    }

    /// The skbs a SACK block `[start, end)` cuts (Linux v6.12 net/ipv4/tcp_input.c:
    /// tcp_match_skb_to_sack()): an skb of several segments that the block's start falls
    /// inside is cut after the segments below the start (rounded up to whole segments, at
    /// least one); the one its end falls inside is cut after the whole segments the block
    /// covers (none if it covers less than one). Only the skb boundaries move here (tcplab
    /// keeps one entry per segment: `tcp::rtx_queue`); they decide how later
    /// retransmissions are cut into skbs. Simplified: tcp_shift_skb_data() merging SACKed
    /// skbs is not modelled.
    #[inline(never)]
    fn sack_split_skbs(&mut self, start: u64, end: u64) {
        let mss = self.tp.mss_cache as u64;
        let first = self.rtx.lower_bound_end(start);
        if first < self.rtx.end_id() {
            let (a, b) = self.rtx.skb_of(first);
            let skb_seq = self.rtx.get(a).seq;
            let skb_end = self.rtx.get(b - 1).end_seq;
            if b - a > 1 && start > skb_seq && start < skb_end {
                let pkt_len = (start - skb_seq).max(mss).div_ceil(mss) * mss;
                if skb_seq + pkt_len < skb_end {
                    let cut = self.rtx.lower_bound_end(skb_seq + pkt_len);
                    self.rtx.split_before(cut);
                }
            }
        }
        let last = self.rtx.lower_bound_end(end.saturating_sub(1));
        if last < self.rtx.end_id() {
            let (a, b) = self.rtx.skb_of(last);
            let skb_seq = self.rtx.get(a).seq;
            let skb_end = self.rtx.get(b - 1).end_seq;
            if b - a > 1 && start <= skb_seq && end > skb_seq && end < skb_end {
                let pkt_len = (end - skb_seq) / mss * mss;
                if pkt_len >= mss {
                    let cut = self.rtx.lower_bound_end(skb_seq + pkt_len);
                    self.rtx.split_before(cut);
                }
            }
        }
    }

    /// `tcp_sacktag_one()` + the per-skb part of `tcp_sacktag_walk()`, for an skb not yet SACKed.
    fn sacktag_one(&mut self, id: u64, st: &mut SackState, rs: &mut RateSample) -> u32 {
        let (mut sacked, start_seq, end_seq, xmit_us) = {
            let s = self.rtx.get(id);
            (s.sacked, s.seq, s.end_seq, s.mstamp_us())
        };
        self.rack_advance(sacked, end_seq, xmit_us);
        if sacked & TCPCB_SACKED_RETRANS != 0 {
            // If the segment is not tagged as lost, we do not clear RETRANS, believing
            // that the retransmission is still in flight.
            if sacked & TCPCB_LOST != 0 {
                sacked &= !(TCPCB_LOST | TCPCB_SACKED_RETRANS);
                self.tp.lost_out -= 1;
                self.tp.retrans_out -= 1;
            }
        } else {
            if sacked & TCPCB_RETRANS == 0 {
                // New SACK for a not retransmitted frame, which was in a hole: reordering.
                if start_seq < self.highest_sack_seq_or_una() && start_seq < st.reord {
                    st.reord = start_seq;
                }
                if end_seq <= self.tp.high_seq {
                    st.orig_sack_acked = true;
                }
                if st.first_sackt == 0 {
                    st.first_sackt = xmit_us;
                }
                st.last_sackt = xmit_us;
            }
            if sacked & TCPCB_LOST != 0 {
                sacked &= !TCPCB_LOST;
                self.tp.lost_out -= 1;
            }
        }
        sacked |= TCPCB_SACKED_ACKED;
        self.rtx.get_mut(id).sacked = sacked;
        self.tp.sacked_out += 1;
        self.tp.delivered += 1; // tcp_count_delivered() for sack_delivered
        st.sack_delivered += 1;
        let mut skb = *self.rtx.get(id);
        rate_skb_delivered(&mut self.tp, &mut skb, rs);
        self.rtx.get_mut(id).tx = skb.tx;
        // SACKed skbs leave the time-sorted list RACK walks.
        self.rtx.ts_unlink(id);
        // tcp_sacktag_walk(): tcp_advance_highest_sack() points `tp->highest_sack` at the
        // skb after the highest SACKed one, whose sequence tcp_highest_sack_seq() gives:
        // the SACKed segment's end.
        if self.highest_sack_seq.is_none_or(|h| start_seq >= h) {
            self.highest_sack_seq = Some(end_seq);
        }
        let mut flag = FLAG_DATA_SACKED;
        if st.orig_sack_acked {
            flag |= FLAG_ORIG_SACK_ACKED;
        }
        flag
    }

    /// `tcp_check_sack_reordering()`; `ts` when the evidence came from timestamps.
    pub fn check_sack_reordering(&mut self, low_seq: u64, ts: bool) {
        let mss = self.tp.mss_cache as u64;
        let fack = self.highest_sack_seq_or_una();
        if low_seq >= fack {
            return;
        }
        let metric = fack - low_seq;
        if metric > self.reordering as u64 * mss {
            self.reordering = (metric.div_ceil(mss) as u32).min(self.cfg.tcp_max_reordering);
        }
        self.reord_seen += 1;
        self.tp.inc(if ts {
            Mib::TCPTSReorder
        } else {
            Mib::TCPSACKReorder
        });
    }

    /// `tcp_clean_rtx_queue()`: remove cumulatively ACKed skbs, sample RTT.
    fn clean_rtx_queue(
        &mut self,
        pkt: &Packet,
        prior_fack: u64,
        prior_snd_una: u64,
        rs: &mut RateSample,
        st: &mut SackState,
        flag_in: u32,
    ) -> u32 {
        let ack = pkt.ack_seq;
        let now_us = self.tp.tcp_mstamp;
        let mut flag = 0u32;
        let mut first_ackt = 0u64;
        let mut last_ackt = 0u64;
        let mut pkts_acked = 0u32;
        let mut reord = self.tp.snd_nxt;
        let prior_sacked = self.tp.sacked_out;
        let prior_delivered = self.tp.delivered;
        while let Some(front) = self.rtx.front() {
            if front.end_seq > ack {
                break;
            }
            let mut skb = self.rtx.pop_front().unwrap();
            let sacked = skb.sacked;
            let xmit_us = skb.mstamp_us();
            if sacked & TCPCB_RETRANS != 0 {
                if sacked & TCPCB_SACKED_RETRANS != 0 {
                    self.tp.retrans_out -= 1;
                }
                flag |= FLAG_RETRANS_DATA_ACKED;
            } else if sacked & TCPCB_SACKED_ACKED == 0 {
                last_ackt = xmit_us;
                if first_ackt == 0 {
                    first_ackt = last_ackt;
                }
                if skb.seq < reord {
                    reord = skb.seq;
                }
                if skb.end_seq <= self.tp.high_seq {
                    flag |= FLAG_ORIG_SACK_ACKED;
                }
            }
            if sacked & TCPCB_SACKED_ACKED != 0 {
                self.tp.sacked_out -= 1;
            } else {
                // tcp_count_delivered() and RACK for newly delivered data, with SACK only
                // (without, tcp_remove_reno_sacks() below counts it: `tcp::reno`).
                if self.sack_ok {
                    self.tp.delivered += 1;
                    self.rack_advance(sacked, skb.end_seq, xmit_us);
                }
                rate_skb_delivered(&mut self.tp, &mut skb, rs);
            }
            if sacked & TCPCB_LOST != 0 {
                self.tp.lost_out -= 1;
            }
            self.tp.packets_out -= 1;
            pkts_acked += 1;
            self.tp.bytes_acked += skb.len() as u64;
            flag |= FLAG_DATA_ACKED;
        }
        if self.retransmit_hint < self.rtx.front_id() {
            self.retransmit_hint = self.rtx.front_id();
        }
        if !self.sack_ok && flag & FLAG_ACKED != 0 {
            self.remove_reno_sacks(pkts_acked);
            // Without SACK bits, an ACK covering any retransmitted segment cannot show that
            // the originals got through.
            if flag & FLAG_RETRANS_DATA_ACKED != 0 {
                flag &= !FLAG_ORIG_SACK_ACKED;
            }
        }
        if self.highest_sack_seq.is_some_and(|h| h <= ack) {
            self.highest_sack_seq = None;
            if self.tp.sacked_out > 0 {
                // Recompute from the queue (rare: a SACKed skb above snd_una remains).
                let mut h = None;
                let mut id = self.rtx.front_id();
                while id < self.rtx.end_id() {
                    let s = self.rtx.get(id);
                    if s.sacked & TCPCB_SACKED_ACKED != 0 {
                        h = Some(s.end_seq);
                    }
                    id += 1;
                }
                self.highest_sack_seq = h;
            }
        }
        let mut seq_rtt_us: i64 = -1;
        let mut ca_rtt_us: i64 = -1;
        let mut sack_rtt_us: i64 = -1;
        if first_ackt != 0 && flag & FLAG_RETRANS_DATA_ACKED == 0 {
            seq_rtt_us = now_us.saturating_sub(first_ackt) as i64;
            ca_rtt_us = now_us.saturating_sub(last_ackt) as i64;
            if pkts_acked == 1
                && prior_sacked == 0
                && ack - prior_snd_una < self.tp.mss_cache as u64
                && rs.prior_delivered + 1 == self.tp.delivered
                && (flag | flag_in) & (FLAG_CA_ALERT | FLAG_SYN_ACKED) == 0
            {
                // Conservatively mark a delayed ACK: typically from a lone runt packet
                // over the round trip to a receiver without out-of-order or CE events.
                flag |= FLAG_ACK_MAYBE_DELAYED;
            }
        }
        if st.first_sackt != 0 {
            sack_rtt_us = now_us.saturating_sub(st.first_sackt) as i64;
            ca_rtt_us = now_us.saturating_sub(st.last_sackt) as i64;
        }
        let rtt_update =
            self.ack_update_rtt(flag | flag_in, seq_rtt_us, sack_rtt_us, ca_rtt_us, rs);
        if flag & FLAG_ACKED != 0 {
            flag |= FLAG_SET_XMIT_TIMER; // set TLP or RTO timer
                                         // Non-retransmitted hole got filled? That's reordering.
            if self.sack_ok && reord < prior_fack {
                self.check_sack_reordering(reord, false);
            }
        } else if let Some(head) = self.rtx.front() {
            if rtt_update
                && sack_rtt_us >= 0
                && sack_rtt_us > now_us.saturating_sub(head.mstamp_us()) as i64
            {
                // Do not re-arm RTO if the sack RTT is measured from data sent after
                // SND.UNA was sent (meaning the SND.UNA packet is still in flight).
                flag |= FLAG_SET_XMIT_TIMER;
            }
        }
        let sample = AckSample {
            pkts_acked,
            rtt_us: rs.rtt_us.clamp(-1, i32::MAX as i64) as i32,
            in_flight: self
                .tp
                .mss_cache
                .wrapping_mul(self.tp.delivered.wrapping_sub(prior_delivered)),
        };
        self.cc.pkts_acked(&mut self.tp, &sample);
        flag
    }

    /// `tcp_ack_update_rtt()`.
    fn ack_update_rtt(
        &mut self,
        flag: u32,
        mut seq_rtt_us: i64,
        sack_rtt_us: i64,
        mut ca_rtt_us: i64,
        rs: &mut RateSample,
    ) -> bool {
        // Prefer RTT measured from ACK's timing to TS-ECR (RFC 6298 / Karn: no samples
        // from retransmitted data).
        if seq_rtt_us < 0 {
            seq_rtt_us = sack_rtt_us;
        }
        // RTTM Rule: TSecr of an ACK acknowledging new data gives a sample when SACK/ACK
        // timing did not (e.g. all acked data was retransmitted). Linux's TS clock is 1 ms.
        let mut from_tsecr = false;
        if seq_rtt_us < 0 && self.rx_tsecr_ns != 0 && flag & FLAG_ACKED != 0 {
            let delta_ms =
                (self.tp.tcp_clock_cache / 1_000_000).saturating_sub(self.rx_tsecr_ns / 1_000_000);
            let d = (delta_ms * 1000) as i64;
            seq_rtt_us = d;
            ca_rtt_us = d;
            from_tsecr = true;
        }
        rs.rtt_us = ca_rtt_us;
        if seq_rtt_us < 0 {
            return false;
        }
        self.stats
            .note_rtt_sample(ca_rtt_us.max(0) as u64, from_tsecr);
        self.stats.rtt_hist.record(ca_rtt_us.max(0) as u64);
        update_rtt_min(
            &mut self.tp,
            ca_rtt_us.max(0) as u32,
            flag & FLAG_ACK_MAYBE_DELAYED != 0,
            self.cfg.tcp_min_rtt_wlen_s,
        );
        let rto_min = self.rto_min_us();
        rtt_estimator(&mut self.tp, seq_rtt_us, rto_min);
        set_rto(&mut self.tp);
        // RFC 6298: only reset backoff on valid RTT measurement.
        self.icsk_backoff = 0;
        true
    }

    /// `tcp_cong_control()`.
    fn cong_control(&mut self, ack: u64, acked_sacked: u32, flag: u32, rs: &RateSample) {
        if self.cc.has_cong_control() {
            self.cc.cong_control(&mut self.tp, rs);
            return;
        }
        if self.tp.in_cwnd_reduction() {
            // Reduce cwnd if state mandates.
            self.cwnd_reduction(acked_sacked, rs.losses.max(0) as u32, flag);
        } else if self.may_raise_cwnd(flag) {
            // Advance cwnd if state allows.
            self.cc.cong_avoid(&mut self.tp, ack, acked_sacked);
            self.tp.snd_cwnd_stamp = self.tp.jiffies32();
        }
        self.update_pacing_rate();
    }

    /// `tcp_may_raise_cwnd()`.
    fn may_raise_cwnd(&self, flag: u32) -> bool {
        // If reordering is high then always grow cwnd whenever data is delivered
        // regardless of its ordering. Otherwise stay conservative and only grow cwnd on
        // in-order delivery (RFC 5681).
        if self.reordering > self.cfg.tcp_reordering {
            return flag & FLAG_FORWARD_PROGRESS != 0;
        }
        flag & FLAG_DATA_ACKED != 0
    }

    /// `tcp_update_pacing_rate()`: 200% of cwnd/srtt in slow start, 120% after.
    pub fn update_pacing_rate(&mut self) {
        let tp = &mut self.tp;
        let mut rate: u64 = tp.mss_cache as u64 * ((1_000_000 / 100) << 3);
        if tp.snd_cwnd < tp.snd_ssthresh / 2 {
            rate *= self.cfg.tcp_pacing_ss_ratio as u64;
        } else {
            rate *= self.cfg.tcp_pacing_ca_ratio as u64;
        }
        rate *= tp.snd_cwnd.max(tp.packets_out) as u64;
        if tp.srtt_us != 0 {
            rate /= tp.srtt_us as u64;
        }
        tp.sk_pacing_rate = rate.min(tp.sk_max_pacing_rate);
    }

    /// Record when all of a finite application's data was acknowledged, and give back
    /// the memory a finished flow no longer needs (so memory follows active flows).
    fn check_app_done(&mut self, now_ns: u64) {
        if self.app.done_ns.is_none() {
            if let Some(total) = self.app.total_bytes {
                if total > 0 && self.tp.snd_una >= total {
                    self.app.done_ns = Some(now_ns);
                    self.rtx.release_memory();
                }
            }
        }
    }
}

/// What `tcp_fastretrans_alert` asks `tcp_xmit_recovery` to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rexmit {
    None,
    /// Retransmit lost skbs (REXMIT_LOST).
    Lost,
    /// F-RTO: send new data (REXMIT_NEW).
    New,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{CcKind, FlowConfig};
    use crate::packet::flags;
    use crate::rng::Rng;
    use crate::tcp::rtx_queue::TxState;
    use crate::tcp::socket::ConnState;

    const MSS: u64 = 1448;

    /// A sender with `n` segments outstanding, some of them marked lost or retransmitted.
    fn sender(n: u64, rng: &mut Rng) -> TcpSocket {
        let flow = FlowConfig::new("f", 0, 1, CcKind::Bbr);
        let (mut c, _) = TcpSocket::pair(&flow, 0, 1, 1_000_000_000, u64::MAX, 1000, 1000);
        c.state = ConnState::Established;
        for i in 0..n {
            let id = c.rtx.push_sent(
                i * MSS,
                (i + 1) * MSS,
                1_000_000_000 + i * 1000,
                TxState::default(),
            );
            if rng.chance(0.1) {
                c.rtx.get_mut(id).sacked |= TCPCB_LOST;
                c.tp.lost_out += 1;
                if rng.chance(0.5) {
                    c.rtx.get_mut(id).sacked |= TCPCB_RETRANS;
                    c.tp.retrans_out += 1;
                }
            }
        }
        c.tp.snd_nxt = n * MSS;
        c.tp.packets_out = n as u32;
        c.tp.set_now(2_000_000_000);
        c
    }

    /// An ACK for `una` carrying `blocks` (segment indices, end exclusive).
    fn ack(una: u64, blocks: &[(u64, u64)]) -> Packet {
        let mut sack = [SackBlock::default(); MAX_SACK_BLOCKS];
        for (k, &(s, e)) in blocks.iter().enumerate() {
            sack[k] = SackBlock {
                start: s * MSS,
                end: e * MSS,
            };
        }
        Packet {
            src_node: 1,
            ack_seq: una * MSS,
            rwnd_bytes: 1 << 20,
            sack,
            num_sacks: blocks.len() as u8,
            ..Default::default()
        }
    }

    #[test]
    fn sack_cache_only_saves_work() {
        // The same ACKs, SACK blocks growing, shrinking and reappearing as a receiver's do,
        // given to two senders: one keeps its SACK cache, the other forgets it before each
        // ACK (walking every skb of every block, the plain algorithm). Scoreboard, counters
        // and the rate sample must agree after every ACK.
        for seed in 0..40 {
            let mut rng = Rng::from_seed(seed);
            let n = 300;
            let mut a = sender(n, &mut Rng::from_seed(seed + 1000));
            let mut b = sender(n, &mut Rng::from_seed(seed + 1000));
            let mut blocks: Vec<(u64, u64)> = Vec::new();
            for step in 0..400 {
                // Grow a block by a segment or two, start a new one, or drop the oldest.
                match rng.below(6) {
                    0..=2 if !blocks.is_empty() => {
                        let k = rng.below(blocks.len() as u32) as usize;
                        blocks[k].1 = (blocks[k].1 + 1 + rng.below(2) as u64).min(n);
                        let bk = blocks.remove(k);
                        blocks.insert(0, bk);
                    }
                    3 if blocks.len() > 1 => {
                        blocks.pop();
                    }
                    _ => {
                        let s = rng.below(n as u32 - 1) as u64 + 1;
                        blocks.insert(0, (s, (s + 1 + rng.below(5) as u64).min(n)));
                    }
                }
                blocks.truncate(MAX_SACK_BLOCKS);
                let pkt = ack(0, &blocks);
                let mut dsack = pkt;
                if rng.chance(0.05) {
                    dsack.flags |= flags::DSACK; // the first block is a D-SACK: not walked
                }
                b.sack_cache = SackCache::default();
                let (mut rs_a, mut rs_b) = (RateSample::default(), RateSample::default());
                let mut st_a = SackState {
                    reord: a.tp.snd_nxt,
                    ..Default::default()
                };
                let mut st_b = SackState {
                    reord: b.tp.snd_nxt,
                    ..Default::default()
                };
                let fa = a.sacktag_write_queue(&dsack, 0, &mut rs_a, &mut st_a);
                let fb = b.sacktag_write_queue(&dsack, 0, &mut rs_b, &mut st_b);
                let ctx = format!("seed {seed} step {step} blocks {blocks:?}");
                assert_eq!(fa, fb, "{ctx}");
                assert_eq!(rs_a, rs_b, "{ctx}");
                assert_eq!(
                    (
                        st_a.reord,
                        st_a.first_sackt,
                        st_a.last_sackt,
                        st_a.sack_delivered
                    ),
                    (
                        st_b.reord,
                        st_b.first_sackt,
                        st_b.last_sackt,
                        st_b.sack_delivered
                    ),
                    "{ctx}"
                );
                assert_eq!(
                    (
                        a.tp.sacked_out,
                        a.tp.lost_out,
                        a.tp.retrans_out,
                        a.tp.delivered
                    ),
                    (
                        b.tp.sacked_out,
                        b.tp.lost_out,
                        b.tp.retrans_out,
                        b.tp.delivered
                    ),
                    "{ctx}"
                );
                assert_eq!(a.highest_sack_seq, b.highest_sack_seq, "{ctx}");
                for id in a.rtx.front_id()..a.rtx.end_id() {
                    assert_eq!(a.rtx.get(id).sacked, b.rtx.get(id).sacked, "{ctx} id {id}");
                }
            }
            assert!(
                a.tp.sacked_out > 50,
                "seed {seed}: the test SACKed only {}",
                a.tp.sacked_out
            );
        }
    }
}
