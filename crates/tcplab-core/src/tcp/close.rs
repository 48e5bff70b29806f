//! Closing a connection: FIN, its acknowledgement and retransmission, the peer's FIN, and
//! the states after ESTABLISHED (Linux v6.12 net/ipv4/tcp.c: tcp_close(), tcp_shutdown(),
//! net/ipv4/tcp_output.c: tcp_send_fin(), net/ipv4/tcp_input.c: tcp_fin(),
//! tcp_rcv_state_process()).
//!
//! The model. The application closes its sending side (`close()` or `shutdown(SHUT_WR)`)
//! once it has written everything: the FIN sits at `write_seq`, after the last byte. If
//! data is still unsent, the FIN rides on the last data skb when that skb goes out
//! (tcp_send_fin() sets TCPHDR_FIN on the write queue's tail skb); if everything was sent,
//! a FIN of its own goes out as soon as the congestion window has room (since v6.10 a lone
//! FIN has no exception in tcp_cwnd_test()). The FIN takes one sequence number: the peer
//! acknowledges
//! `write_seq + 1`, and every segment after it carries `seq = write_seq + 1`.
//!
//! tcplab keeps sequence numbers as byte offsets of data (`crate::packet`), so the FIN is
//! not an entry of the retransmit queue: `fin_sent` / `fin_acked` stand for its skb. The
//! acknowledgement of the FIN is taken off before `tcp_ack()` sees the ACK (which then acks
//! data only), and the retransmit timer stays armed while the FIN is unacknowledged; when
//! it fires with no data outstanding, the FIN alone is sent again (tcp_retransmit_timer()
//! retransmitting the FIN skb at the head of the queue). A retransmission of the last data
//! segment carries the FIN too, as the skb that held it does in Linux.
//!
//! The peer's FIN is taken once the data before it is in order (`peer_fin_seq`): it moves
//! the state (ESTABLISHED -> CLOSE_WAIT, FIN_WAIT1 -> CLOSING, FIN_WAIT2 -> TIME_WAIT),
//! and every segment after acknowledges it (`rcv_nxt + 1`). Simplified: TIME_WAIT never
//! ends (a script never outlives it), and a closed socket still answers segments.
//!
//! `close()` with data received and not read resets the connection (tcp_close():
//! "data was unread": tcp_send_active_reset()), without a FIN.

use crate::mib::Mib;
use crate::packet::{flags, Packet};
use crate::tcp::sock::CaState;
use crate::tcp::socket::{Ctx, TcpSocket, XmitTimer};
use crate::time::NEVER;

/// The connection's state once it is synchronized (`sk->sk_state` from ESTABLISHED on).
/// `TcpSocket::state` stays `Established` through all of them: data still flows one way
/// or the other until both FINs are acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Teardown {
    /// ESTABLISHED: neither side has closed.
    #[default]
    Open,
    /// We sent (or queued) our FIN; it is not acknowledged.
    FinWait1,
    /// Our FIN is acknowledged; the peer's has not come.
    FinWait2,
    /// Both FINs sent, ours not acknowledged (simultaneous close).
    Closing,
    /// Both FINs sent and ours acknowledged.
    TimeWait,
    /// The peer closed; we have not.
    CloseWait,
    /// The peer closed, then we did; our FIN is not acknowledged.
    LastAck,
    /// Done (our FIN acknowledged in LAST_ACK, or a reset).
    Closed,
}

impl Teardown {
    /// `enum { TCP_ESTABLISHED = 1, ..., TCP_CLOSING = 11 }` (include/net/tcp_states.h).
    pub fn tcp_state(self) -> u64 {
        match self {
            Teardown::Open => 1,
            Teardown::FinWait1 => 4,
            Teardown::FinWait2 => 5,
            Teardown::TimeWait => 6,
            Teardown::Closed => 7,
            Teardown::CloseWait => 8,
            Teardown::LastAck => 9,
            Teardown::Closing => 11,
        }
    }
}

/// What the socket knows of both FINs.
#[derive(Clone, Copy, Debug)]
pub struct FinState {
    /// Anything below happened (a close, a FIN seen): the one flag the per-packet paths
    /// test before looking at the rest.
    pub active: bool,
    pub teardown: Teardown,
    /// The application closed its sending side: a FIN follows the data.
    pub fin_queued: bool,
    pub fin_sent: bool,
    pub fin_acked: bool,
    /// The peer's FIN: the data offset it follows, once seen (NEVER before).
    pub peer_fin_seq: u64,
    /// The peer's FIN was taken (the data before it is all in order).
    pub peer_fin_rcvd: bool,
    /// The connection was reset by `close()` (RST sent).
    pub reset: bool,
    /// `close()` shut the receiving side too (RCV_SHUTDOWN): new data then resets.
    pub rd_closed: bool,
}

impl Default for FinState {
    fn default() -> Self {
        FinState {
            active: false,
            teardown: Teardown::Open,
            fin_queued: false,
            fin_sent: false,
            fin_acked: false,
            peer_fin_seq: NEVER,
            peer_fin_rcvd: false,
            reset: false,
            rd_closed: false,
        }
    }
}

impl TcpSocket {
    /// `close()` (`how_rd`: also the receiving side, as close() does) or
    /// `shutdown(SHUT_WR)` by the application.
    pub fn app_close(&mut self, ctx: &mut Ctx, how_rd: bool) {
        self.refresh_clock(ctx.now_ns);
        self.fin.active = true;
        if self.state != crate::tcp::socket::ConnState::Established {
            // tcp_close() before the handshake ended (SYN_SENT): the socket is gone, no
            // packet goes out; what arrives later is answered as for no socket.
            if how_rd {
                self.fin.teardown = Teardown::Closed;
                self.clear_xmit_timer();
            }
            return;
        }
        if how_rd && self.rcv.unread_bytes() > 0 {
            // tcp_close(): data was unread: a reset instead of a FIN.
            self.send_active_reset(ctx);
            return;
        }
        self.fin.rd_closed |= how_rd;
        if self.fin.fin_queued {
            return;
        }
        self.fin.teardown = match self.fin.teardown {
            Teardown::Open => Teardown::FinWait1,
            Teardown::CloseWait => Teardown::LastAck,
            t => t,
        };
        self.fin.fin_queued = true;
        // tcp_send_fin(): on the unsent tail skb, or alone when everything was sent;
        // then __tcp_push_pending_frames(TCP_NAGLE_OFF) (the FIN skb passes Nagle anyway).
        self.push_pending_frames(ctx);
        self.fin_alone_if_due(ctx);
    }

    /// A queued FIN with all data sent goes out alone once the congestion window has room
    /// (tcp_write_xmit() on the FIN's own skb).
    pub(crate) fn fin_alone_if_due(&mut self, ctx: &mut Ctx) {
        if self.fin.fin_queued
            && !self.fin.fin_sent
            && !self.fin.reset
            && self.tp.snd_nxt == self.tp.write_seq
            && self.app.pending_bytes == 0
            && self.tp.packets_in_flight() < self.tp.snd_cwnd
        {
            self.send_fin_alone(ctx);
        }
    }

    /// The FIN in a segment of its own (no data), and the retransmit timer armed for it.
    pub(crate) fn send_fin_alone(&mut self, ctx: &mut Ctx) {
        let seq = self.tp.write_seq;
        let retrans = self.fin.fin_sent;
        let f = if retrans {
            flags::FIN | flags::RETRANS
        } else {
            flags::FIN
        };
        self.fin.fin_sent = false; // the FIN's own segment carries seq = write_seq
        self.transmit(ctx, seq, seq, f);
        self.fin.fin_sent = true;
        self.tp.inc(Mib::TcpOutSegs);
        if retrans {
            self.tp.inc(Mib::TcpRetransSegs);
        }
        self.tp.lsndtime = self.tp.jiffies32();
        if !retrans && self.tp.packets_out == 0 && self.fin_loss_probe_due() {
            // tcp_write_xmit() -> tcp_schedule_loss_probe() for the FIN's skb, the only
            // one out: 2 srtt + TCP_RTO_MIN (one packet out), at most the RTO.
            let mut timeout_us = (self.tp.srtt_us >> 2) as u64 + self.rto_min_us() as u64;
            timeout_us = timeout_us.min(self.tp.jiffies_to_usecs(self.tp.icsk_rto));
            let timeout = self.tp.usecs_to_jiffies(timeout_us);
            self.reset_xmit_timer(XmitTimer::LossProbe, ctx.now_ns, timeout);
        } else if self.xmit_timer == XmitTimer::None {
            let rto = self.tp.icsk_rto;
            self.reset_xmit_timer(XmitTimer::Retrans, ctx.now_ns, rto);
        }
    }

    /// tcp_schedule_loss_probe()'s conditions for a FIN alone: early retransmit with TLP,
    /// SACK, not in loss recovery, an RTT sample.
    fn fin_loss_probe_due(&self) -> bool {
        matches!(self.cfg.tcp_early_retrans, 3 | 4)
            && self.sack_ok
            && matches!(self.tp.ca_state, CaState::Open | CaState::Cwr)
            && self.tp.srtt_us != 0
    }

    /// tcp_send_loss_probe() when only the FIN is out: it is sent again (the last skb),
    /// and the RTO restarts from now.
    pub(crate) fn fin_loss_probe(&mut self, ctx: &mut Ctx) {
        if self.tlp_high_seq == 0 {
            self.send_fin_alone(ctx);
            self.tlp_high_seq = self.tp.snd_nxt;
            self.tlp_retrans = true;
            self.tp.inc(Mib::TCPLossProbes);
        }
        let rto = self.tp.icsk_rto;
        self.reset_xmit_timer(XmitTimer::Retrans, ctx.now_ns, rto);
    }

    /// TCP_USER_TIMEOUT (Linux v6.12 net/ipv4/tcp_timer.c: tcp_write_timeout() ->
    /// retransmits_timed_out()): the retransmissions have gone on for the user's time since
    /// the first one; the connection is dropped (tcp_write_err(): no packet goes out).
    /// Returns true if it was.
    pub(crate) fn user_timeout_expired(&mut self, now_ns: u64) -> bool {
        if self.user_timeout_ms == 0 || self.retrans_stamp_ns == 0 {
            return false;
        }
        let elapsed_ms = now_ns.saturating_sub(self.retrans_stamp_ns) / 1_000_000;
        if elapsed_ms < self.user_timeout_ms as u64 {
            return false;
        }
        self.write_err_timeout();
        true
    }

    /// `tcp_write_err()`: `sk_err` = ETIMEDOUT, the connection closed without a packet.
    pub(crate) fn write_err_timeout(&mut self) {
        self.timed_out = true;
        self.fin.active = true;
        self.fin.teardown = Teardown::Closed;
        self.clear_xmit_timer();
        self.rcv.delack_deadline_ns = NEVER;
    }

    /// New data for a socket whose application closed its receiving side, in FIN_WAIT1 or
    /// FIN_WAIT2 (Linux v6.12 tcp_rcv_state_process(): RFC 1122's reset, TCPAbortOnData):
    /// a bare RST answers it and the connection is gone. Returns true if so.
    pub(crate) fn abort_on_data(&mut self, ctx: &mut Ctx, pkt: &Packet) -> bool {
        let after_close = matches!(self.fin.teardown, Teardown::FinWait1 | Teardown::FinWait2);
        if !(self.fin.rd_closed && after_close && pkt.is_data()) {
            return false;
        }
        self.fin.teardown = Teardown::Closed;
        self.clear_xmit_timer();
        self.closed_answers(ctx, pkt)
    }

    /// The skb `[seq, end_seq)` about to be sent holds the end of the data and the
    /// application has closed: it carries the FIN.
    #[inline]
    pub(crate) fn fin_rides_on(&self, end_seq: u64) -> bool {
        self.fin.fin_queued && end_seq == self.tp.write_seq && self.app.pending_bytes == 0
    }

    /// An ACK or segment arrived: take off the acknowledgement of our FIN (`write_seq + 1`)
    /// before `tcp_ack()` sees it, and move the state if it acknowledges the FIN.
    #[cold]
    #[inline(never)]
    pub(crate) fn fin_ack_in(&mut self, pkt: &mut Packet) {
        if self.fin.fin_sent && pkt.ack_seq == self.tp.write_seq + 1 {
            pkt.ack_seq -= 1;
            if !self.fin.fin_acked {
                self.fin.fin_acked = true;
                self.fin.teardown = match self.fin.teardown {
                    Teardown::FinWait1 => Teardown::FinWait2,
                    Teardown::Closing => Teardown::TimeWait,
                    Teardown::LastAck => Teardown::Closed,
                    t => t,
                };
            }
        }
        // A segment after the peer's FIN starts one past it.
        if self.fin.peer_fin_rcvd && pkt.seq > self.fin.peer_fin_seq {
            pkt.seq -= 1;
            pkt.end_seq -= 1;
        }
    }

    /// The FIN is still unacknowledged with no data outstanding: the retransmit timer
    /// stays armed for it.
    #[inline]
    pub(crate) fn fin_outstanding(&self) -> bool {
        self.fin.fin_sent && !self.fin.fin_acked
    }

    /// After a segment's data was taken: the peer's FIN, once the data before it is in
    /// order (tcp_fin()). Returns true if an ACK must go out now.
    #[cold]
    #[inline(never)]
    pub(crate) fn peer_fin_in(&mut self, pkt: &Packet) -> bool {
        if pkt.has(flags::FIN) && self.fin.peer_fin_seq == NEVER {
            self.fin.peer_fin_seq = pkt.end_seq;
            self.fin.active = true;
        }
        if self.fin.peer_fin_rcvd
            || self.fin.peer_fin_seq == NEVER
            || self.rcv.rcv_nxt < self.fin.peer_fin_seq
        {
            return false;
        }
        self.fin.peer_fin_rcvd = true;
        match self.fin.teardown {
            Teardown::Open => {
                // ESTABLISHED -> CLOSE_WAIT; inet_csk_enter_pingpong_mode(): the FIN's ACK
                // is delayed like any other (inet_csk_schedule_ack()).
                self.fin.teardown = Teardown::CloseWait;
                let now_ns = self.tp.tcp_clock_cache;
                self.rcv.fin_received(now_ns, self.tp.srtt_us)
            }
            Teardown::FinWait1 => {
                // Simultaneous close: ACK now, CLOSING (TIME_WAIT if ours was acked).
                self.fin.teardown = if self.fin.fin_acked {
                    Teardown::TimeWait
                } else {
                    Teardown::Closing
                };
                true
            }
            Teardown::FinWait2 => {
                self.fin.teardown = Teardown::TimeWait;
                true
            }
            _ => true,
        }
    }

    /// A segment for a socket that no longer exists (closed, or its last FIN acknowledged):
    /// Linux v6.12 tcp_v4_send_reset() answers one carrying an ACK with a bare RST at the
    /// sequence number it acknowledged (no ACK bit, no options). Returns true if the
    /// segment was taken that way.
    #[cold]
    #[inline(never)]
    pub(crate) fn closed_answers(&mut self, ctx: &mut Ctx, pkt: &Packet) -> bool {
        if self.fin.teardown != Teardown::Closed || pkt.has(flags::RST) {
            return self.fin.teardown == Teardown::Closed;
        }
        let rst = Packet {
            dst_ep: self.peer_ep,
            dst_node: self.peer_node,
            src_node: self.node,
            ip_bytes: Packet::ip_len(0, 0) - 12,
            seq: pkt.ack_seq,
            end_seq: pkt.ack_seq,
            flags: flags::RST | flags::NO_ACK,
            ..Packet::default()
        };
        ctx.net.send_from_host(self.node, rst, ctx.now_ns, ctx.ev);
        true
    }

    /// `tcp_send_active_reset()`: an RST with the current ACK fields; the connection is
    /// closed and its timers stopped.
    pub fn send_active_reset(&mut self, ctx: &mut Ctx) {
        self.fin.active = true;
        let seq = self.tp.snd_nxt;
        self.transmit(ctx, seq, seq, flags::RST);
        self.fin.reset = true;
        self.fin.teardown = Teardown::Closed;
        self.clear_xmit_timer();
        self.rcv.delack_deadline_ns = NEVER;
    }
}
