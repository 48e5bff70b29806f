//! DCTCP (Data Center TCP, RFC 8257), as Linux v6.12 net/ipv4/tcp_dctcp.c and
//! net/ipv4/tcp_dctcp.h run it.
//!
//! The model:
//!
//! - DCTCP needs ECN (`TCP_CONG_NEEDS_ECN`): its socket asks for ECN on the SYN and
//!   accepts it on a SYN-ACK whatever `net.ipv4.tcp_ecn` says, and sends every packet
//!   ECT(0) (`tcp::ecn`). If the connection still did not negotiate ECN (the peer
//!   refused), `dctcp_init()` falls back to Reno under the name `dctcp-reno`, not-ECT.
//! - The receiver echoes CE exactly: a two-state machine (`ce_state`, the last segment
//!   was CE or not) sets or clears ECE for every segment, and a change of state forces an
//!   immediate ACK; if a delayed ACK was pending, a "special" ACK of the data before the
//!   change goes first with the old state (`dctcp_ece_ack_update()`).
//! - The sender keeps `alpha`, an EWMA (gain g = 1/16, `dctcp_shift_g` 4) of the fraction
//!   of delivered packets that were CE-marked, updated once per window of data (when
//!   `snd_una` passes `next_seq`, `dctcp_update_alpha()` from `in_ack_event`):
//!   `alpha <- alpha - alpha/16 + (delivered_ce << 6) / delivered`, in units of 1/1024
//!   (`DCTCP_MAX_ALPHA`), starting at 1024 (`dctcp_alpha_on_init`). A fully marked window
//!   moves alpha by 1024/16 = 64, so alpha converges to the marked fraction F x 1024.
//! - On ECE the core enters CWR (`tcp::ecn`) and asks for ssthresh:
//!   `cwnd - cwnd x alpha / 2048`, at least 2 (`dctcp_ssthresh()`): a reduction by
//!   alpha/2 instead of Reno's half, once per window. A loss (fast recovery, or an RTO)
//!   halves as Reno does (`dctcp_react_to_loss()`).
//! - Growth is Reno's (`tcp_reno_cong_avoid`); undo restores at least the cwnd before the
//!   last reduction (`loss_cwnd`).
//!
//! Left out: PLB (Protective Load Balancing, `tcp_plb_*`: off unless
//! `net.ipv4.tcp_plb_enabled`), which rehashes the flow's path, a thing the model's static
//! routes have no use for.

use super::{CcInfo, CongestionOps};
use crate::tcp::ecn::{TCP_ECN_DEMAND_CWR, TCP_ECN_OK};
use crate::tcp::sock::{CaEvent, CaState, TcpSock};

/// `DCTCP_MAX_ALPHA`: alpha in units of 1/1024.
pub const DCTCP_MAX_ALPHA: u32 = 1024;
/// `dctcp_shift_g` (module parameter): EWMA gain g = 1/2^4.
pub const DCTCP_SHIFT_G: u32 = 4;
/// `dctcp_alpha_on_init` (module parameter).
pub const DCTCP_ALPHA_ON_INIT: u32 = DCTCP_MAX_ALPHA;

/// `struct dctcp`.
#[derive(Clone, Debug, Default)]
pub struct Dctcp {
    /// `ca->old_delivered`, `ca->old_delivered_ce`: the counts at the window's start.
    old_delivered: u32,
    old_delivered_ce: u32,
    /// `ca->prior_rcv_nxt`: `rcv_nxt` after the last ECN-checked segment.
    pub prior_rcv_nxt: u64,
    /// `ca->dctcp_alpha`, in 1/1024.
    pub alpha: u32,
    /// `ca->next_seq`: the window ends when `snd_una` reaches it.
    next_seq: u64,
    /// `ca->ce_state`: the last segment received was CE (1) or not (0).
    pub ce_state: u32,
    /// `ca->loss_cwnd`.
    loss_cwnd: u32,
    /// ECN was not negotiated: the socket runs `dctcp_reno` (Reno, named "dctcp-reno").
    pub fallback: bool,
}

impl Dctcp {
    pub fn new() -> Dctcp {
        Dctcp {
            alpha: DCTCP_ALPHA_ON_INIT.min(DCTCP_MAX_ALPHA),
            ..Default::default()
        }
    }

    /// `dctcp_reset()`: a new observation window starts at `snd_nxt`.
    fn reset(&mut self, tp: &TcpSock) {
        self.next_seq = tp.snd_nxt;
        self.old_delivered = tp.delivered;
        self.old_delivered_ce = tp.delivered_ce;
    }

    /// `dctcp_react_to_loss()`.
    fn react_to_loss(&mut self, tp: &mut TcpSock) {
        self.loss_cwnd = tp.snd_cwnd;
        tp.snd_ssthresh = (tp.snd_cwnd >> 1).max(2);
    }

    /// `dctcp_ece_ack_update()` (tcp_dctcp.h) for a received ECT segment, `ce` if it is
    /// CE-marked. `rcv_nxt` is the receiver's, `delack_pending` whether a delayed ACK is
    /// owed (`ICSK_ACK_TIMER`). Returns the ACK number of a special ACK due first, and
    /// whether this segment's ACK must go at once. When a special ACK is due, `ecn_flags`
    /// is left with the *old* state's ECE for it (Linux sends it from inside this
    /// function); the caller sends it, then calls [`Dctcp::ece_ack_finish`].
    pub fn ece_ack_update(
        &mut self,
        ce: bool,
        rcv_nxt: u64,
        delack_pending: bool,
        ecn_flags: &mut u8,
    ) -> (Option<u64>, bool) {
        let new_ce_state = ce as u32;
        let mut special = None;
        let mut ack_now = false;
        if self.ce_state != new_ce_state {
            // The CE state changed: ACK at once to reflect it. If an ACK was delayed, send
            // that first, reflecting the prior state.
            if delack_pending {
                set_demand_cwr(ecn_flags, self.ce_state);
                special = Some(self.prior_rcv_nxt);
            }
            ack_now = true;
        }
        self.prior_rcv_nxt = rcv_nxt;
        self.ce_state = new_ce_state;
        if special.is_none() {
            set_demand_cwr(ecn_flags, new_ce_state);
        }
        (special, ack_now)
    }

    /// The end of `dctcp_ece_ack_update()` after a special ACK went out: ECE now follows
    /// the new state.
    pub fn ece_ack_finish(&self, ecn_flags: &mut u8) {
        set_demand_cwr(ecn_flags, self.ce_state);
    }
}

/// `dctcp_ece_ack_cwr()`: ECE on every ACK while the last segment was CE.
#[inline]
fn set_demand_cwr(ecn_flags: &mut u8, ce_state: u32) {
    if ce_state == 1 {
        *ecn_flags |= TCP_ECN_DEMAND_CWR;
    } else {
        *ecn_flags &= !TCP_ECN_DEMAND_CWR;
    }
}

impl CongestionOps for Dctcp {
    fn name(&self) -> &'static str {
        if self.fallback {
            "dctcp-reno"
        } else {
            "dctcp"
        }
    }

    /// `dctcp_init()`: at the connection's establishment; without ECN, Reno.
    fn init(&mut self, tp: &mut TcpSock) {
        if tp.ecn_flags & TCP_ECN_OK != 0 {
            self.prior_rcv_nxt = 0;
            self.alpha = DCTCP_ALPHA_ON_INIT.min(DCTCP_MAX_ALPHA);
            self.loss_cwnd = 0;
            self.ce_state = 0;
            self.reset(tp);
            return;
        }
        // No ECN support? Fall back to Reno (and clear ECT from the socket: `tcp::ecn`
        // reads `needs_ecn()`, false from here on).
        self.fallback = true;
    }

    fn needs_ecn(&self) -> bool {
        !self.fallback
    }

    /// `dctcp_ssthresh()`; `tcp_reno_ssthresh()` in fallback.
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        if self.fallback {
            return (tp.snd_cwnd >> 1).max(2);
        }
        self.loss_cwnd = tp.snd_cwnd;
        let cwnd = tp.snd_cwnd as u64;
        (cwnd - ((cwnd * self.alpha as u64) >> 11)).max(2) as u32
    }

    /// `tcp_reno_cong_avoid()`.
    fn cong_avoid(&mut self, tp: &mut TcpSock, _ack: u64, acked: u32) {
        super::reno::tcp_reno_cong_avoid(tp, acked);
    }

    /// `dctcp_update_alpha()` (`.in_ack_event`).
    fn in_ack_event(&mut self, tp: &mut TcpSock, _flags: u32) {
        if self.fallback || tp.snd_una < self.next_seq {
            return;
        }
        let delivered = tp.delivered.wrapping_sub(self.old_delivered);
        let mut delivered_ce = tp.delivered_ce.wrapping_sub(self.old_delivered_ce);
        let mut alpha = self.alpha;
        // alpha = (1 - g) * alpha + g * F
        let decay = alpha >> DCTCP_SHIFT_G;
        alpha -= if decay == 0 { alpha } else { decay }; // min_not_zero(alpha, alpha >> g)
        if delivered_ce > 0 {
            // If dctcp_shift_g == 1, a 32-bit value would overflow after 8 M packets.
            delivered_ce <<= 10 - DCTCP_SHIFT_G;
            delivered_ce /= delivered.max(1);
            alpha = (alpha + delivered_ce).min(DCTCP_MAX_ALPHA);
        }
        self.alpha = alpha;
        self.reset(tp);
    }

    /// `dctcp_state()`: entering fast recovery halves (RTOs are in `cwnd_event`).
    fn set_state(&mut self, tp: &mut TcpSock, new_state: CaState) {
        if self.fallback {
            return;
        }
        if new_state == CaState::Recovery && new_state != tp.ca_state {
            self.react_to_loss(tp);
        }
    }

    /// `dctcp_cwnd_event()`: the ECN events are handled by the socket
    /// (`tcp::ecn`, which calls [`Dctcp::ece_ack_update`]); an RTO halves.
    fn cwnd_event(&mut self, tp: &mut TcpSock, ev: CaEvent) {
        if !self.fallback && ev == CaEvent::Loss {
            self.react_to_loss(tp);
        }
    }

    /// `dctcp_cwnd_undo()`; `tcp_reno_undo_cwnd()` in fallback.
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        if self.fallback {
            return tp.snd_cwnd.max(tp.prior_cwnd);
        }
        tp.snd_cwnd.max(self.loss_cwnd)
    }

    /// `dctcp_get_info()`: ss's `dctcp:(ce_state,alpha,ab_ecn,ab_tot)` (bytes this window).
    fn get_info(&self, tp: &TcpSock) -> CcInfo {
        if self.fallback {
            return CcInfo::default();
        }
        let mss = tp.mss_cache as u64;
        CcInfo {
            dctcp_alpha: self.alpha,
            dctcp_ce_state: self.ce_state as u8,
            dctcp_ab_ecn: mss * tp.delivered_ce.wrapping_sub(self.old_delivered_ce) as u64,
            dctcp_ab_tot: mss * tp.delivered.wrapping_sub(self.old_delivered) as u64,
            ..CcInfo::default()
        }
    }
}
