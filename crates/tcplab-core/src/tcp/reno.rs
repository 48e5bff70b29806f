//! Loss recovery without SACK: NewReno's duplicate-ACK counting (Linux v6.12
//! net/ipv4/tcp_input.c: tcp_add_reno_sack(), tcp_remove_reno_sacks(),
//! tcp_check_reno_reordering(), tcp_limit_reno_sacked(), tcp_newreno_mark_lost()).
//!
//! The model. A connection whose peer did not offer SACK (`TcpSocket::sack_ok` false; every
//! scenario's connections negotiate it, a scripted peer may not) learns of delivered segments
//! only from duplicate ACKs. Linux then counts each duplicate ACK as one segment "SACKed"
//! (`sacked_out`, with no skb marked), which lowers `packets_in_flight()` so new data can go
//! out (limited transmit falls out of it), and once `sacked_out` reaches `reordering` (3)
//! the head of the retransmit queue is marked lost and fast recovery starts; in Recovery
//! every partial ACK marks the new head lost (NewReno). A cumulative ACK takes the counted
//! segments back: one for the hole it filled, the rest eat the duplicates. RACK, which needs
//! SACK to know what arrived, is not used (tcp_identify_packet_loss()).

use crate::tcp::rtx_queue::TCPCB_LOST;
use crate::tcp::sock::CaState;
use crate::tcp::socket::TcpSocket;

impl TcpSocket {
    /// `tcp_is_reno()`: the connection has no SACK.
    #[inline]
    pub fn is_reno(&self) -> bool {
        !self.sack_ok
    }

    /// `tcp_add_reno_sack()`: `num_dupack` duplicate ACKs, each a segment delivered.
    pub(crate) fn add_reno_sack(&mut self, num_dupack: u32) {
        if num_dupack == 0 {
            return;
        }
        let prior_sacked = self.tp.sacked_out;
        self.tp.sacked_out += num_dupack;
        self.check_reno_reordering(0);
        let delivered = self.tp.sacked_out.saturating_sub(prior_sacked);
        self.tp.delivered += delivered;
    }

    /// `tcp_remove_reno_sacks()`: a cumulative ACK of `acked` segments: one filled the hole,
    /// the others had been counted by duplicate ACKs.
    pub(crate) fn remove_reno_sacks(&mut self, acked: u32) {
        if acked > 0 {
            self.tp.delivered += acked.saturating_sub(self.tp.sacked_out).max(1);
            if acked - 1 >= self.tp.sacked_out {
                self.tp.sacked_out = 0;
            } else {
                self.tp.sacked_out -= acked - 1;
            }
        }
        self.check_reno_reordering(acked);
    }

    /// `tcp_reset_reno_sack()`.
    #[inline]
    pub(crate) fn reset_reno_sack(&mut self) {
        self.tp.sacked_out = 0;
    }

    /// `tcp_check_reno_reordering()` + `tcp_limit_reno_sacked()`: more duplicate ACKs than
    /// segments out (less the holes) means the network reordered.
    fn check_reno_reordering(&mut self, addend: u32) {
        let holes = self.tp.lost_out.max(1).min(self.tp.packets_out);
        if self.tp.sacked_out + holes <= self.tp.packets_out {
            return;
        }
        self.tp.sacked_out = self.tp.packets_out - holes;
        self.reordering = (self.tp.packets_out + addend).min(self.cfg.tcp_max_reordering);
        self.reord_seen += 1;
    }

    /// `tcp_newreno_mark_lost()`: the head is lost once `reordering` duplicate ACKs came
    /// (outside Recovery), or on a partial ACK in Recovery. Returns true if it marked it.
    pub(crate) fn newreno_mark_lost(&mut self, snd_una_advanced: bool) -> bool {
        let state = self.tp.ca_state;
        let due = (state < CaState::Recovery && self.tp.sacked_out >= self.reordering)
            || (state == CaState::Recovery && snd_una_advanced);
        if !due || self.rtx.is_empty() {
            return false;
        }
        let head = self.rtx.front_id();
        if self.rtx.get(head).sacked & TCPCB_LOST != 0 {
            return false;
        }
        self.mark_skb_lost(head);
        true
    }
}
