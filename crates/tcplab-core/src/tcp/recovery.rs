//! Loss detection and recovery, following Linux v6.12:
//!
//! - **RACK** (net/ipv4/tcp_recovery.c): an skb is lost when an skb sent after it has
//!   been delivered and more than `rack.rtt + reo_wnd` has passed since it was sent.
//!   `reo_wnd` is 0 before any reordering was seen once 3 segments are SACKed or during
//!   recovery, else `min_rtt/4` (scaled by D-SACK-driven steps), capped at srtt.
//! - **State machine** (`tcp_fastretrans_alert`): Open -> Disorder (SACKs seen) ->
//!   Recovery (losses marked) -> Open when `snd_una` passes `high_seq`; RTO -> Loss.
//! - **PRR** (`tcp_cwnd_reduction`, RFC 6937) sets cwnd during Recovery/CWR for CUBIC and
//!   Reno; BBR replaces it through `cong_control`.
//! - **Undo** (`tcp_try_undo_*`): a reduction is reverted when D-SACKs account for every
//!   retransmission or the timestamps show the original arrived (Eifel).
//! - **RTO** (`tcp_enter_loss`, `tcp_retransmit_timer`) with F-RTO (RFC 5682) and
//!   exponential backoff; **TLP** (`tcp_schedule_loss_probe`, `tcp_send_loss_probe`,
//!   `tcp_process_tlp_ack`).

use crate::cc::CongestionOps;
use crate::mib::Mib;
use crate::tcp::input::*;
use crate::tcp::rate::skb_sent_after;
use crate::tcp::rate_sample::RateSample;
use crate::tcp::rtx_queue::{NIL, TCPCB_LOST, TCPCB_SACKED_ACKED, TCPCB_SACKED_RETRANS};
use crate::tcp::sock::{CaEvent, CaState, TCP_INFINITE_SSTHRESH};
use crate::tcp::socket::{ConnState, Ctx, TcpSocket, XmitTimer};

/// `TCP_RACK_RECOVERY_THRESH`.
const TCP_RACK_RECOVERY_THRESH: u8 = 16;
/// `TCP_RACK_STATIC_REO_WND` bit of `tcp_recovery`.
const TCP_RACK_STATIC_REO_WND: u8 = 0x2;
/// `TCP_RACK_NO_DUPTHRESH` bit of `tcp_recovery`.
const TCP_RACK_NO_DUPTHRESH: u8 = 0x4;
/// `TCP_TIMEOUT_MIN_US` (2 ms) and `TCP_TIMEOUT_MIN` (2 jiffies: 8 ms at HZ=250, 2 ms at
/// HZ=1000).
const TCP_TIMEOUT_MIN_US: u64 = 2000;
const TCP_TIMEOUT_MIN: u32 = 2;

impl TcpSocket {
    /// `tcp_set_ca_state()`: the CC hook sees the old state.
    pub fn set_ca_state(&mut self, new_state: CaState) {
        self.cc.set_state(&mut self.tp, new_state);
        self.tp.ca_state = new_state;
    }

    // ------------------------------------------------------------------------ RACK

    /// `tcp_rack_advance()`.
    pub fn rack_advance(&mut self, sacked: u8, end_seq: u64, xmit_us: u64) {
        let rtt_us = self.tp.tcp_mstamp.saturating_sub(xmit_us) as u32;
        if rtt_us < self.tp.min_rtt_us() && sacked & crate::tcp::rtx_queue::TCPCB_RETRANS != 0 {
            // If the SACKed packet was retransmitted, it's ambiguous whether the
            // retransmission or the original was SACKed; an RTT below min_rtt says the
            // original was, so ignore it.
            return;
        }
        self.rack.advanced = true;
        self.rack.rtt_us = rtt_us;
        if skb_sent_after(xmit_us, self.rack.mstamp_us, end_seq, self.rack.end_seq) {
            self.rack.mstamp_us = xmit_us;
            self.rack.end_seq = end_seq;
        }
    }

    /// `tcp_rack_reo_wnd()`, us.
    fn rack_reo_wnd(&self) -> u64 {
        if self.reord_seen == 0 {
            // If reordering has not been observed, be aggressive during the recovery or
            // starting the recovery by DUPACK threshold.
            if self.tp.ca_state >= CaState::Recovery {
                return 0;
            }
            if self.tp.sacked_out >= self.reordering
                && self.cfg.tcp_recovery & TCP_RACK_NO_DUPTHRESH == 0
            {
                return 0;
            }
        }
        // To be more reordering resilient, allow min_rtt/4 settling delay.
        ((self.tp.min_rtt_us() as u64 >> 2) * self.rack.reo_wnd_steps as u64)
            .min((self.tp.srtt_us >> 3) as u64)
    }

    /// `tcp_rack_detect_loss()`: mark lost skbs; returns the time (us) until the earliest
    /// not-yet-expired skb would be lost (0 if none).
    fn rack_detect_loss(&mut self) -> u64 {
        let reo_wnd = self.rack_reo_wnd();
        let mut reo_timeout = 0u64;
        let mut id = self.rtx.ts_head();
        while id != NIL {
            let next = self.rtx.ts_next(id);
            let (sacked, end_seq, xmit_us) = {
                let s = self.rtx.get(id);
                (s.sacked, s.end_seq, s.mstamp_us())
            };
            // Skip ones marked lost but not yet retransmitted.
            if sacked & TCPCB_LOST != 0 && sacked & TCPCB_SACKED_RETRANS == 0 {
                id = next;
                continue;
            }
            if !skb_sent_after(self.rack.mstamp_us, xmit_us, self.rack.end_seq, end_seq) {
                break;
            }
            // A packet is lost if it has not been s/acked beyond the recent RTT plus the
            // reordering window.
            let elapsed = self.tp.tcp_mstamp.saturating_sub(xmit_us) as i64;
            let remaining = self.rack.rtt_us as i64 + reo_wnd as i64 - elapsed;
            if remaining <= 0 {
                self.mark_skb_lost(id);
                self.rtx.ts_unlink(id);
            } else {
                // Record maximum wait time.
                reo_timeout = reo_timeout.max(remaining as u64);
            }
            id = next;
        }
        reo_timeout
    }

    /// `tcp_rack_mark_lost()`: returns true if it armed the reordering timer (an skb will
    /// be lost when it fires unless S/ACKed first), so that the ACK does not re-arm the
    /// RTO or TLP timer over it (`tcp_identify_packet_loss()`).
    fn rack_mark_lost(&mut self, now_ns: u64) -> bool {
        if !self.rack.advanced {
            return false;
        }
        // Reset the advanced flag to avoid unnecessary queue scanning.
        self.rack.advanced = false;
        let timeout_us = self.rack_detect_loss();
        if timeout_us != 0 {
            let when = self.tp.usecs_to_jiffies(timeout_us) + TCP_TIMEOUT_MIN;
            let rto = self.tp.icsk_rto;
            self.reset_xmit_timer(XmitTimer::ReoTimeout, now_ns, when.min(rto));
        }
        timeout_us != 0
    }

    /// `tcp_rack_update_reo_wnd()`: widen the reordering window after D-SACKs.
    pub fn rack_update_reo_wnd(&mut self, rs: &RateSample) {
        if self.cfg.tcp_recovery & TCP_RACK_STATIC_REO_WND != 0 || rs.prior_delivered == 0 {
            return;
        }
        // Disregard DSACK if a rtt has not passed since we adjusted reo_wnd.
        if rs.prior_delivered < self.rack.last_delivered {
            self.rack.dsack_seen = false;
        }
        if self.rack.dsack_seen {
            self.rack.reo_wnd_steps = self.rack.reo_wnd_steps.saturating_add(1);
            self.rack.dsack_seen = false;
            self.rack.last_delivered = self.tp.delivered;
            self.rack.reo_wnd_persist = TCP_RACK_RECOVERY_THRESH;
        } else if self.rack.reo_wnd_persist == 0 {
            self.rack.reo_wnd_steps = 1;
        }
    }

    /// `tcp_rack_reo_timeout()`: the reordering timer fired.
    pub fn rack_reo_timeout(&mut self, ctx: &mut Ctx) {
        let lost0 = self.tp.lost;
        let prior_inflight = self.tp.packets_in_flight();
        // The remaining reordering timeout is not used here: the RTO is re-armed below.
        self.rack_detect_loss();
        if prior_inflight != self.tp.packets_in_flight() {
            if self.tp.ca_state != CaState::Recovery {
                self.enter_recovery();
                if !self.cc.has_cong_control() {
                    let lost = self.tp.lost - lost0;
                    self.cwnd_reduction(1, lost, 0);
                }
            }
            self.xmit_retransmit_queue(ctx);
        }
        if self.xmit_timer != XmitTimer::Retrans {
            self.rearm_rto(ctx.now_ns);
        }
    }

    /// `tcp_mark_skb_lost()`.
    pub fn mark_skb_lost(&mut self, id: u64) {
        let sacked = self.rtx.get(id).sacked;
        if sacked & TCPCB_SACKED_ACKED != 0 {
            return;
        }
        // tcp_verify_retransmit_hint()
        if id < self.retransmit_hint {
            self.retransmit_hint = id;
        }
        if sacked & TCPCB_LOST != 0 {
            if sacked & TCPCB_SACKED_RETRANS != 0 {
                // Account for retransmits that are lost again.
                self.rtx.get_mut(id).sacked &= !TCPCB_SACKED_RETRANS;
                self.tp.retrans_out -= 1;
                self.tp.inc(Mib::TCPLostRetransmit);
                self.tp.lost += 1; // tcp_notify_skb_loss_event()
            }
        } else {
            self.tp.lost_out += 1;
            self.rtx.get_mut(id).sacked |= TCPCB_LOST;
            self.tp.lost += 1;
        }
    }

    // --------------------------------------------------------- cwnd reduction (PRR)

    /// `tcp_init_undo()`.
    fn init_undo(&mut self) {
        self.undo_marker = self.tp.snd_una;
        self.undo_valid = true;
        // Retransmissions still in flight may cause DSACKs later.
        self.undo_retrans = if self.tp.retrans_out > 0 {
            self.tp.retrans_out as i32
        } else {
            -1
        };
    }

    /// `tcp_init_cwnd_reduction()`.
    pub fn init_cwnd_reduction(&mut self) {
        self.tp.high_seq = self.tp.snd_nxt;
        self.tlp_high_seq = 0;
        self.tp.snd_cwnd_cnt = 0;
        self.tp.prior_cwnd = self.tp.snd_cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.tp.snd_ssthresh = self.cc.ssthresh(&mut self.tp);
        self.ecn_queue_cwr();
    }

    /// `tcp_cwnd_reduction()`: Proportional Rate Reduction (RFC 6937).
    pub fn cwnd_reduction(&mut self, newly_acked_sacked: u32, newly_lost: u32, flag: u32) {
        let tp = &mut self.tp;
        if newly_acked_sacked == 0 || tp.prior_cwnd == 0 {
            return;
        }
        let delta = tp.snd_ssthresh as i64 - tp.packets_in_flight() as i64;
        self.prr_delivered += newly_acked_sacked;
        let mut sndcnt: i64;
        if delta < 0 {
            let dividend =
                tp.snd_ssthresh as u64 * self.prr_delivered as u64 + tp.prior_cwnd as u64 - 1;
            sndcnt = (dividend / tp.prior_cwnd as u64) as i64 - self.prr_out as i64;
        } else {
            sndcnt =
                (self.prr_delivered as i64 - self.prr_out as i64).max(newly_acked_sacked as i64);
            if flag & FLAG_SND_UNA_ADVANCED != 0 && newly_lost == 0 {
                sndcnt += 1;
            }
            sndcnt = sndcnt.min(delta);
        }
        // Force a fast retransmit upon entering fast recovery.
        sndcnt = sndcnt.max(if self.prr_out > 0 { 0 } else { 1 });
        let cwnd = (tp.packets_in_flight() as i64 + sndcnt).max(1) as u32;
        tp.set_cwnd(cwnd);
    }

    /// `tcp_end_cwnd_reduction()`.
    fn end_cwnd_reduction(&mut self) {
        if self.cc.has_cong_control() {
            return;
        }
        // Reset cwnd to ssthresh in CWR or Recovery (unless it's undone).
        if self.tp.snd_ssthresh < TCP_INFINITE_SSTHRESH
            && (self.tp.ca_state == CaState::Cwr || self.undo_valid)
        {
            self.tp.set_cwnd(self.tp.snd_ssthresh);
            self.tp.snd_cwnd_stamp = self.tp.jiffies32();
        }
        self.cc.cwnd_event(&mut self.tp, CaEvent::CompleteCwr);
    }

    /// `tcp_enter_cwr()`: local congestion (qdisc drop) or ECN.
    pub fn enter_cwr(&mut self) {
        self.tp.prior_ssthresh = 0;
        if self.tp.ca_state < CaState::Cwr {
            self.undo_valid = false;
            self.init_cwnd_reduction();
            self.set_ca_state(CaState::Cwr);
        }
    }

    /// `tcp_enter_recovery()`.
    fn enter_recovery(&mut self) {
        // Start the clock with our fast retransmit, for undo (Linux v6.12 tcp_input.c:
        // tcp_enter_recovery(), since v6.12-rc "tcp: fix tcp_enter_recovery() to zero
        // retrans_stamp when it's safe").
        self.retrans_stamp_cleanup();
        self.tp.inc(Mib::TCPSackRecovery);
        self.tp.prior_ssthresh = 0;
        self.init_undo();
        if !self.tp.in_cwnd_reduction() {
            self.tp.prior_ssthresh = self.tp.current_ssthresh();
            self.init_cwnd_reduction();
        }
        self.set_ca_state(CaState::Recovery);
    }

    // ------------------------------------------------------------------------ undo

    /// `tcp_packet_delayed()`: the ACK echoes a timestamp from before the first
    /// retransmission, so the original arrived (1 ms timestamp clock); or nothing was
    /// retransmitted at all (Linux v6.12 net/ipv4/tcp_input.c, since v6.12-rc "tcp: fix to
    /// allow timestamp undo if no retransmits were sent"; not for SYN_SENT, where the
    /// SYN-ACK clears retrans_stamp).
    fn packet_delayed(&self) -> bool {
        if self.retrans_stamp_ns != 0
            && self.rx_tsecr_ns != 0
            && self.rx_tsecr_ns / 1_000_000 < self.retrans_stamp_ns / 1_000_000
        {
            return true;
        }
        self.retrans_stamp_ns == 0 && self.state != ConnState::SynSent
    }

    /// `tcp_retrans_stamp_cleanup()`: forget the first-retransmission time once no
    /// retransmission is outstanding or remembered on the head.
    fn retrans_stamp_cleanup(&mut self) {
        if !self.any_retrans_done() {
            self.retrans_stamp_ns = 0;
        }
    }

    /// `tcp_may_undo()`.
    fn may_undo(&self) -> bool {
        self.undo_valid && (self.undo_retrans == 0 || self.packet_delayed())
    }

    /// `tcp_any_retrans_done()`.
    fn any_retrans_done(&self) -> bool {
        if self.tp.retrans_out > 0 {
            return true;
        }
        self.rtx
            .front()
            .is_some_and(|s| s.sacked & crate::tcp::rtx_queue::TCPCB_EVER_RETRANS != 0)
    }

    /// `tcp_undo_cwnd_reduction()`.
    fn undo_cwnd_reduction(&mut self, unmark_loss: bool) {
        if unmark_loss {
            let mut id = self.rtx.front_id();
            while id < self.rtx.end_id() {
                let s = self.rtx.get_mut(id);
                s.sacked &= !TCPCB_LOST;
                id += 1;
            }
            self.tp.lost_out = 0;
        }
        if self.tp.prior_ssthresh != 0 {
            let cwnd = self.cc.undo_cwnd(&mut self.tp);
            self.tp.set_cwnd(cwnd);
            if self.tp.prior_ssthresh > self.tp.snd_ssthresh {
                self.tp.snd_ssthresh = self.tp.prior_ssthresh;
                self.ecn_withdraw_cwr();
            }
        }
        self.tp.snd_cwnd_stamp = self.tp.jiffies32();
        self.undo_valid = false;
        self.rack.advanced = true; // Force RACK to re-exam losses.
    }

    /// `tcp_try_undo_recovery()`: true if the state is held (Reno only), else moves to Open.
    fn try_undo_recovery(&mut self) -> bool {
        if self.may_undo() {
            // Happy end! We did not retransmit anything or our original transmission succeeded.
            self.undo_cwnd_reduction(false);
            let m = if self.tp.ca_state == CaState::Loss {
                Mib::TCPLossUndo
            } else {
                Mib::TCPFullUndo
            };
            self.tp.inc(m);
        }
        if self.tp.snd_una == self.tp.high_seq && self.is_reno() {
            // Hold the state until something *above* high_seq is ACKed: without SACK it is
            // a MUST to prevent false fast retransmits (RFC 2582).
            return true;
        }
        self.set_ca_state(CaState::Open);
        false
    }

    /// `tcp_try_undo_dsack()`: all retransmissions were D-SACKed.
    fn try_undo_dsack(&mut self) -> bool {
        if self.undo_valid && self.undo_retrans == 0 {
            self.rack.reo_wnd_persist = self
                .rack
                .reo_wnd_persist
                .saturating_add(1)
                .min(TCP_RACK_RECOVERY_THRESH);
            self.undo_cwnd_reduction(false);
            self.tp.inc(Mib::TCPDSACKUndo);
            return true;
        }
        false
    }

    /// `tcp_try_undo_loss()`.
    fn try_undo_loss(&mut self, frto_undo: bool) -> bool {
        if frto_undo || self.may_undo() {
            self.undo_cwnd_reduction(true);
            self.tp.inc(Mib::TCPLossUndo);
            if frto_undo {
                self.tp.inc(Mib::TCPSpuriousRTOs);
            }
            self.icsk_retransmits = 0;
            self.set_ca_state(CaState::Open);
            return true;
        }
        false
    }

    /// `tcp_try_undo_partial()`: a partial ACK in Recovery. Returns true to hold the
    /// state (retransmissions still out).
    fn try_undo_partial(&mut self, prior_snd_una: u64) -> bool {
        if self.undo_valid && self.packet_delayed() {
            // Plain luck! The hole was filled with a delayed packet rather than with a
            // retransmit: the reordering degree is higher than we realized.
            self.check_sack_reordering(prior_snd_una, true);
            // If there are retransmits out, clock out new packets but do not mark more
            // packets lost or retransmit more; otherwise undo.
            if self.tp.retrans_out > 0 {
                return true;
            }
            if !self.any_retrans_done() {
                self.retrans_stamp_ns = 0;
            }
            self.undo_cwnd_reduction(true);
            self.tp.inc(Mib::TCPPartialUndo);
            self.try_keep_open();
        }
        false
    }

    /// `tcp_try_keep_open()`.
    fn try_keep_open(&mut self) {
        let state = if self.tp.left_out() > 0 || self.any_retrans_done() {
            CaState::Disorder
        } else {
            CaState::Open
        };
        if self.tp.ca_state != state {
            self.set_ca_state(state);
            self.tp.high_seq = self.tp.snd_nxt;
        }
    }

    /// `tcp_try_to_open()`.
    fn try_to_open(&mut self, flag: u32) {
        self.retrans_stamp_cleanup();
        // An ECN echo in Open or Disorder: one window reduction (`tcp::ecn`).
        if flag & FLAG_ECE != 0 {
            self.enter_cwr();
        }
        if self.tp.ca_state != CaState::Cwr {
            self.try_keep_open();
        }
    }

    // --------------------------------------------------------------- state machine

    /// `tcp_identify_packet_loss()` with RACK.
    fn identify_packet_loss(&mut self, now_ns: u64, flag: &mut u32) {
        if self.rtx.is_empty() {
            return;
        }
        if self.is_reno() {
            // Without SACK, NewReno's head marking instead of RACK (`tcp::reno`).
            self.newreno_mark_lost(*flag & FLAG_SND_UNA_ADVANCED != 0);
            return;
        }
        // A RACK reordering timer armed by this ACK stays: the ACK's own timer (tcp_ack():
        // tcp_set_xmit_timer() under FLAG_SET_XMIT_TIMER) would replace it with the RTO or
        // TLP. FLAG_LOST_RETRANS says a retransmission was lost (retrans_out fell), not
        // that anything was newly marked (CA_Loss leaves only on the former).
        let prior_retrans = self.tp.retrans_out;
        if self.rack_mark_lost(now_ns) {
            *flag &= !FLAG_SET_XMIT_TIMER;
        }
        if prior_retrans > self.tp.retrans_out {
            *flag |= FLAG_LOST_RETRANS;
        }
    }

    /// `tcp_time_to_recover()` with RACK: lost packets are marked.
    fn time_to_recover(&self) -> bool {
        self.tp.lost_out > 0
    }

    /// `tcp_fastretrans_alert()` (RACK-only loss detection, SACK always on).
    pub fn fastretrans_alert(
        &mut self,
        ctx: &mut Ctx,
        prior_snd_una: u64,
        num_dupack: u32,
        flag: &mut u32,
        rexmit: &mut Rexmit,
    ) {
        if self.tp.packets_out == 0 && self.tp.sacked_out > 0 {
            self.tp.sacked_out = 0;
        }
        // D. Check state exit conditions. State can be terminated when high_seq is ACKed.
        if self.tp.ca_state != CaState::Open && self.tp.snd_una >= self.tp.high_seq {
            match self.tp.ca_state {
                // CWR is to be held until something *above* high_seq is ACKed.
                CaState::Cwr if self.tp.snd_una != self.tp.high_seq => {
                    self.end_cwnd_reduction();
                    self.set_ca_state(CaState::Open);
                }
                CaState::Recovery => {
                    if self.is_reno() {
                        self.reset_reno_sack();
                    }
                    if self.try_undo_recovery() {
                        return;
                    }
                    self.end_cwnd_reduction();
                    if self.rack.reo_wnd_persist > 0 {
                        self.rack.reo_wnd_persist -= 1;
                    }
                }
                _ => {}
            }
        }
        // E. Process state.
        match self.tp.ca_state {
            CaState::Recovery => {
                if *flag & FLAG_SND_UNA_ADVANCED == 0 {
                    if self.is_reno() {
                        self.add_reno_sack(num_dupack);
                    }
                } else if self.try_undo_partial(prior_snd_una) {
                    return;
                }
                if self.try_undo_dsack() {
                    self.try_to_open(*flag);
                }
                self.identify_packet_loss(ctx.now_ns, flag);
                if self.tp.ca_state != CaState::Recovery {
                    if !self.time_to_recover() {
                        return;
                    }
                    // Undo reverted the recovery state; loss is evident: start a new one
                    // (e.g. reordering, then loss).
                    self.enter_recovery();
                }
            }
            CaState::Loss => {
                self.process_loss(*flag, num_dupack, rexmit);
                self.identify_packet_loss(ctx.now_ns, flag);
                if !(self.tp.ca_state == CaState::Open || *flag & FLAG_LOST_RETRANS != 0) {
                    return;
                }
                // Change state if cwnd is undone or retransmission is lost.
                if !self.open_or_enter_recovery(ctx, flag) {
                    return;
                }
            }
            _ => {
                if self.is_reno() {
                    if *flag & FLAG_SND_UNA_ADVANCED != 0 {
                        self.reset_reno_sack();
                    }
                    self.add_reno_sack(num_dupack);
                }
                if !self.open_or_enter_recovery(ctx, flag) {
                    return;
                }
            }
        }
        *rexmit = Rexmit::Lost;
    }

    /// The `default:` branch of `tcp_fastretrans_alert()`: stay open, or enter Recovery
    /// (returns true) when RACK has marked losses.
    fn open_or_enter_recovery(&mut self, ctx: &mut Ctx, flag: &mut u32) -> bool {
        if self.tp.ca_state <= CaState::Disorder {
            self.try_undo_dsack();
        }
        self.identify_packet_loss(ctx.now_ns, flag);
        if !self.time_to_recover() {
            self.try_to_open(*flag);
            return false;
        }
        // Otherwise enter Recovery state.
        self.enter_recovery();
        true
    }

    /// `tcp_process_loss()`: ACK processing in the Loss state, with F-RTO.
    fn process_loss(&mut self, flag: u32, num_dupack: u32, rexmit: &mut Rexmit) {
        let recovered = self.tp.snd_una >= self.tp.high_seq;
        if flag & FLAG_SND_UNA_ADVANCED != 0 && self.try_undo_loss(false) {
            return;
        }
        if self.frto {
            // F-RTO RFC 5682 sec 3.1 (sack enhanced version).
            // Step 3.b. A timeout is spurious if not all data are retransmitted, i.e.,
            // never-retransmitted data are (s)acked.
            if flag & FLAG_ORIG_SACK_ACKED != 0 && self.try_undo_loss(true) {
                return;
            }
            if self.tp.snd_nxt > self.tp.high_seq {
                if flag & FLAG_DATA_SACKED != 0 || num_dupack > 0 {
                    self.frto = false; // Step 3.a. loss was real
                }
            } else if flag & FLAG_SND_UNA_ADVANCED != 0 && !recovered {
                self.tp.high_seq = self.tp.snd_nxt;
                // Step 2.b. Try send new data (but deferred until cwnd is updated in
                // tcp_ack()). Otherwise fall back to the conventional recovery.
                if self.tp.write_seq > self.tp.snd_nxt
                    && self.tp.snd_una + self.tp.snd_wnd as u64 > self.tp.snd_nxt
                {
                    *rexmit = Rexmit::New;
                    return;
                }
                self.frto = false;
            }
        }
        if recovered {
            // F-RTO RFC 5682 sec 3.1 step 2.a and 1st part of step 3.b.
            self.try_undo_recovery();
            return;
        }
        if self.is_reno() {
            // A Reno duplicate ACK means new data of F-RTO step 2.b were delivered.
            if self.tp.snd_nxt > self.tp.high_seq && num_dupack > 0 {
                self.add_reno_sack(num_dupack);
            } else if flag & FLAG_SND_UNA_ADVANCED != 0 {
                self.reset_reno_sack();
            }
        }
        *rexmit = Rexmit::Lost;
    }

    /// `tcp_xmit_recovery()`.
    pub fn xmit_recovery(&mut self, ctx: &mut Ctx, rexmit: Rexmit) {
        match rexmit {
            Rexmit::None => {}
            Rexmit::New => {
                self.push_pending_frames(ctx);
                if self.tp.snd_nxt > self.tp.high_seq {
                    return;
                }
                self.frto = false;
                self.xmit_retransmit_queue(ctx);
            }
            Rexmit::Lost => self.xmit_retransmit_queue(ctx),
        }
    }

    // ------------------------------------------------------------------------- RTO

    /// `tcp_timeout_mark_lost()`: mark the head and every skb RACK considers timed out
    /// as lost (recently sent ones are spared).
    fn timeout_mark_lost(&mut self) {
        let head = self.rtx.front_id();
        let mut id = head;
        while id < self.rtx.end_id() {
            let (sacked, xmit_us) = {
                let s = self.rtx.get(id);
                (s.sacked, s.mstamp_us())
            };
            if sacked & TCPCB_SACKED_ACKED == 0 {
                // tcp_rack_skb_timeout(tp, skb, 0) > 0: don't mark recently sent ones lost yet.
                let remaining =
                    self.rack.rtt_us as i64 - self.tp.tcp_mstamp.saturating_sub(xmit_us) as i64;
                if id == head || remaining <= 0 {
                    self.mark_skb_lost(id);
                }
            }
            id += 1;
        }
        self.retransmit_hint = self.rtx.front_id();
    }

    /// `tcp_enter_loss()`.
    fn enter_loss(&mut self) {
        let new_recovery = self.tp.ca_state < CaState::Recovery;
        self.timeout_mark_lost();
        // Reduce ssthresh if it has not yet been made inside this window.
        if self.tp.ca_state <= CaState::Disorder
            || self.tp.high_seq <= self.tp.snd_una
            || (self.tp.ca_state == CaState::Loss && self.icsk_retransmits == 0)
        {
            self.tp.prior_ssthresh = self.tp.current_ssthresh();
            self.tp.prior_cwnd = self.tp.snd_cwnd;
            self.tp.snd_ssthresh = self.cc.ssthresh(&mut self.tp);
            self.cc.cwnd_event(&mut self.tp, CaEvent::Loss);
            self.init_undo();
        }
        self.tp.set_cwnd(self.tp.packets_in_flight() + 1);
        self.tp.snd_cwnd_cnt = 0;
        self.tp.snd_cwnd_stamp = self.tp.jiffies32();
        if self.tp.ca_state <= CaState::Disorder && self.tp.sacked_out >= self.cfg.tcp_reordering {
            self.reordering = self.reordering.min(self.cfg.tcp_reordering);
        }
        self.set_ca_state(CaState::Loss);
        self.tp.high_seq = self.tp.snd_nxt;
        // Linux v6.12 tcp_enter_loss(): a loss probe before the RTO no longer counts (its
        // ACK must not reduce the cwnd again, tcp_process_tlp_ack()).
        self.tlp_high_seq = 0;
        self.ecn_queue_cwr();
        // F-RTO RFC 5682 sec 3.1 step 1: retransmit SND.UNA if no previous loss recovery
        // is underway except recurring timeouts on the same SND.UNA (sec 3.2).
        self.frto = self.cfg.tcp_frto != 0 && (new_recovery || self.icsk_retransmits > 0);
    }

    /// `tcp_retransmit_timer()`.
    fn retransmit_timer(&mut self, ctx: &mut Ctx) {
        if self.user_timeout_expired(ctx.now_ns) {
            return;
        }
        if (self.tp.packets_out == 0 || self.rtx.is_empty()) && self.fin_outstanding() {
            // Only the FIN is outstanding: it is sent again, with the usual backoff.
            self.tp.inc(Mib::TCPTimeouts);
            self.icsk_retransmits += 1;
            self.send_fin_alone(ctx);
            // tcp_retransmit_skb(): the first retransmission's time (not a loss probe's).
            if self.retrans_stamp_ns == 0 {
                self.retrans_stamp_ns = ctx.now_ns.max(1);
            }
            self.icsk_backoff += 1;
            self.tp.icsk_rto = (self.tp.icsk_rto << 1).min(self.tp.tcp_rto_max());
            let rto = self.tp.icsk_rto;
            self.reset_xmit_timer(XmitTimer::Retrans, ctx.now_ns, rto);
            return;
        }
        if self.tp.packets_out == 0 || self.rtx.is_empty() {
            return;
        }
        self.tp.inc(Mib::TCPTimeouts);
        if self.icsk_retransmits == 0 {
            let m = match self.tp.ca_state {
                CaState::Recovery => Some(Mib::TCPSackRecoveryFail),
                CaState::Loss => Some(Mib::TCPLossFailures),
                _ if self.tp.ca_state == CaState::Disorder || self.tp.sacked_out > 0 => {
                    Some(Mib::TCPSackFailures)
                }
                _ => None,
            };
            if let Some(m) = m {
                self.tp.inc(m);
            }
        }
        self.enter_loss();
        self.icsk_retransmits += 1;
        let head = self.rtx.front_id();
        if !self.retransmit_skb(ctx, head) {
            // Retransmission failed because of local congestion: retry soon.
            self.reset_xmit_timer(
                XmitTimer::Retrans,
                ctx.now_ns,
                500, /* TCP_RESOURCE_PROBE_INTERVAL */
            );
            return;
        }
        self.tp.inc(Mib::TCPSlowStartRetrans);
        // Increase the timeout each time we retransmit (exponential backoff).
        self.icsk_backoff += 1;
        self.tp.icsk_rto = (self.tp.icsk_rto << 1).min(self.tp.tcp_rto_max());
        let rto = self.tp.icsk_rto;
        self.reset_xmit_timer(XmitTimer::Retrans, ctx.now_ns, rto);
    }

    /// The shared retransmit timer fired (`tcp_write_timer_handler`).
    pub fn on_xmit_timer(&mut self, ctx: &mut Ctx) {
        self.refresh_clock(ctx.now_ns);
        if self.xmit_deadline_ns > ctx.now_ns {
            return;
        }
        let what = self.xmit_timer;
        self.xmit_deadline_ns = crate::time::NEVER;
        self.xmit_timer = XmitTimer::None;
        match self.state {
            ConnState::SynSent | ConnState::SynRecv => {
                self.syn_timer(ctx);
                return;
            }
            ConnState::Closed => return,
            ConnState::Established => {}
        }
        if self.fin.teardown == crate::tcp::close::Teardown::Closed {
            return;
        }
        // tcp_write_timer_handler() clears icsk_pending before the RTO and the zero-window
        // probe run, but leaves it set while the reordering timer and the loss probe run:
        // their tcp_rearm_rto() then starts the RTO from the head's send time
        // (tcp_rto_delta_us()), not from now, unless they sent the head or a probe.
        if matches!(what, XmitTimer::ReoTimeout | XmitTimer::LossProbe) {
            self.xmit_timer = what;
        }
        match what {
            XmitTimer::ReoTimeout => self.rack_reo_timeout(ctx),
            XmitTimer::LossProbe => self.send_loss_probe(ctx),
            XmitTimer::Retrans => self.retransmit_timer(ctx),
            XmitTimer::Probe0 => self.probe_timer(ctx),
            XmitTimer::None => {}
        }
    }

    /// `tcp_rto_delta_us()`: time until the RTO would fire, measured from the head's send time.
    pub fn rto_delta_us(&self) -> i64 {
        let Some(head) = self.rtx.front() else {
            return self.tp.jiffies_to_usecs(self.tp.icsk_rto) as i64;
        };
        let rto_time_stamp_us = head.mstamp_us() + self.tp.jiffies_to_usecs(self.tp.icsk_rto);
        rto_time_stamp_us as i64 - self.tp.tcp_mstamp as i64
    }

    /// `tcp_rearm_rto()`.
    pub fn rearm_rto(&mut self, now_ns: u64) {
        if self.tp.packets_out == 0 {
            if self.fin_outstanding() {
                // The FIN's skb is still in the retransmit queue (`tcp::close`).
                let rto = self.tp.icsk_rto;
                self.reset_xmit_timer(XmitTimer::Retrans, now_ns, rto);
            } else {
                self.clear_xmit_timer();
            }
            return;
        }
        let mut rto = self.tp.icsk_rto;
        // Offset the time elapsed after installing regular RTO.
        if matches!(
            self.xmit_timer,
            XmitTimer::ReoTimeout | XmitTimer::LossProbe
        ) {
            let delta_us = self.rto_delta_us().max(1);
            rto = self.tp.usecs_to_jiffies(delta_us as u64);
        }
        self.reset_xmit_timer(XmitTimer::Retrans, now_ns, rto);
    }

    /// `tcp_set_xmit_timer()`.
    pub fn set_xmit_timer(&mut self, now_ns: u64) {
        if !self.schedule_loss_probe(now_ns, true) {
            self.rearm_rto(now_ns);
        }
    }

    /// `tcp_schedule_loss_probe()`.
    pub fn schedule_loss_probe(&mut self, now_ns: u64, advancing_rto: bool) -> bool {
        let early_retrans = self.cfg.tcp_early_retrans;
        // Schedule a loss probe in 2*RTT for SACK capable connections not in loss
        // recovery, that are either limited by cwnd or application.
        if (early_retrans != 3 && early_retrans != 4)
            || self.tp.packets_out == 0
            || !self.sack_ok
            || !(self.tp.ca_state == CaState::Open || self.tp.ca_state == CaState::Cwr)
        {
            return false;
        }
        // Probe timeout is 2*rtt. Add minimum RTO to account for delayed ack when there's
        // one outstanding packet. If no RTT sample is available then probe after
        // TCP_TIMEOUT_INIT.
        let mut timeout: u32;
        if self.tp.srtt_us != 0 {
            let mut timeout_us = (self.tp.srtt_us >> 2) as u64;
            if self.tp.packets_out == 1 {
                timeout_us += self.rto_min_us() as u64;
            } else {
                timeout_us += TCP_TIMEOUT_MIN_US;
            }
            timeout = self.tp.usecs_to_jiffies(timeout_us);
        } else {
            timeout = self.tp.tcp_timeout_init();
        }
        // If the RTO formula yields an earlier time, then use that time.
        let rto_delta_us = if advancing_rto {
            self.tp.jiffies_to_usecs(self.tp.icsk_rto) as i64
        } else {
            self.rto_delta_us()
        };
        if rto_delta_us > 0 {
            timeout = timeout.min(self.tp.usecs_to_jiffies(rto_delta_us as u64));
        }
        self.reset_xmit_timer(XmitTimer::LossProbe, now_ns, timeout);
        true
    }

    /// `tcp_process_tlp_ack()`.
    pub fn process_tlp_ack(&mut self, ack: u64, flag: u32) {
        if ack < self.tlp_high_seq {
            return;
        }
        if !self.tlp_retrans {
            // TLP of new data has been acknowledged.
            self.tlp_high_seq = 0;
        } else if flag & FLAG_DSACK_TLP != 0 {
            // This DSACK means original and TLP probe arrived; no loss.
            self.tlp_high_seq = 0;
        } else if ack > self.tlp_high_seq {
            // ACK advances: there was a loss, so reduce cwnd. Reset tlp_high_seq in
            // tcp_init_cwnd_reduction().
            self.init_cwnd_reduction();
            self.set_ca_state(CaState::Cwr);
            self.end_cwnd_reduction();
            self.try_keep_open();
            self.tp.inc(Mib::TCPLossProbeRecovery);
        } else if flag & (FLAG_SND_UNA_ADVANCED | FLAG_NOT_DUP | FLAG_DATA_SACKED) == 0 {
            // Pure dupack: original and TLP probe arrived; no loss.
            self.tlp_high_seq = 0;
        }
    }
}

pub use crate::tcp::input::Rexmit;

#[cfg(test)]
mod tests_v612_undo {
    use crate::config::{CcKind, FlowConfig};
    use crate::tcp::socket::{ConnState, TcpSocket};

    fn sender() -> TcpSocket {
        let flow = FlowConfig::new("f", 0, 1, CcKind::Cubic);
        let (mut c, _) = TcpSocket::pair(&flow, 0, 1, 1_000_000_000, u64::MAX, 1000, 1000);
        c.state = ConnState::Established;
        c
    }

    #[test]
    fn nothing_retransmitted_counts_as_delayed_except_in_syn_sent() {
        // tcp_packet_delayed() (v6.12): !retrans_stamp && state != SYN_SENT -> true.
        let mut c = sender();
        c.retrans_stamp_ns = 0;
        assert!(c.packet_delayed());
        c.state = ConnState::SynSent;
        assert!(!c.packet_delayed());
        // A retransmission sent at 2 s, echo of a 1 s timestamp: delayed.
        c.state = ConnState::Established;
        c.retrans_stamp_ns = 2_000_000_000;
        c.rx_tsecr_ns = 1_000_000_000;
        assert!(c.packet_delayed());
        // Echo of a timestamp after the retransmission: not delayed.
        c.rx_tsecr_ns = 3_000_000_000;
        assert!(!c.packet_delayed());
    }

    #[test]
    fn entering_recovery_forgets_a_stale_retrans_stamp() {
        // tcp_enter_recovery() calls tcp_retrans_stamp_cleanup(): with nothing retransmitted
        // outstanding, the old first-retransmission time is cleared.
        let mut c = sender();
        c.retrans_stamp_ns = 5_000_000_000;
        c.enter_recovery();
        assert_eq!(c.retrans_stamp_ns, 0);
    }
}
