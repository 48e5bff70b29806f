//! Explicit Congestion Notification in TCP (RFC 3168), as Linux v6.12 does it
//! (net/ipv4/tcp_input.c, tcp_output.c: the `tcp_ecn_*` functions; include/net/tcp.h).
//!
//! The model, in the order a connection meets it:
//!
//! - **Negotiation.** The client asks for ECN with ECE|CWR on its SYN when its host's
//!   `net.ipv4.tcp_ecn` is 1 or its congestion control needs ECN (DCTCP,
//!   `TCP_CONG_NEEDS_ECN`), and provisionally sets `TCP_ECN_OK` (`tcp_ecn_send_syn()`).
//!   The server accepts (ECE alone on its SYN-ACK, `tcp_ecn_make_synack()`) when the SYN
//!   asked and was not itself ECN-marked, and its `tcp_ecn` is not 0, or whenever its own
//!   congestion control needs ECN (`tcp_ecn_create_request()`). The client keeps
//!   `TCP_ECN_OK` only if the SYN-ACK has ECE without CWR (`tcp_ecn_rcv_synack()`). With
//!   `tcp_ecn_fallback` (the default) a retransmitted SYN no longer asks
//!   (`tcp_ecn_clear_syn()`), in case a middlebox drops ECN-setup SYNs. The default
//!   `tcp_ecn = 2` accepts but never asks, so two default hosts do not use ECN.
//! - **Sending** (`tcp_ecn_send()`): with `TCP_ECN_OK`, a new data segment is ECT(0) and
//!   carries CWR if a window reduction is queued (`TCP_ECN_QUEUE_CWR`); a pure ACK or a
//!   retransmission is not-ECT, except under DCTCP, whose every packet is ECT(0). Every
//!   segment carries ECE while `TCP_ECN_DEMAND_CWR` is set.
//! - **Receiving data** (`tcp_ecn_accept_cwr()`, `__tcp_ecn_check_ce()`): CWR clears
//!   `TCP_ECN_DEMAND_CWR` and asks for an immediate ACK; a CE-marked segment sets it (and
//!   quick-ACKs twice: the sender may have a tiny window); ECT marks the connection
//!   `TCP_ECN_SEEN` (ss: `ecnseen`); a not-ECT segment after ECT was seen (a
//!   retransmission) quick-ACKs. DCTCP replaces the echo with its own per-segment state
//!   machine (`cc::dctcp`, `dctcp_ece_ack_update()`).
//! - **The sender's reaction**: an ACK with ECE (`FLAG_ECE`) counts its newly delivered
//!   packets as CE-delivered (`tp->delivered_ce`, `TcpExtTCPDeliveredCE`) and, in the Open
//!   or Disorder state, enters CWR (`tcp_try_to_open()` -> `tcp_enter_cwr()`): ssthresh
//!   from the congestion control, cwnd reduced by PRR (`tcp_cwnd_reduction()`), at most
//!   once per window (CWR holds until `high_seq`, the `snd_nxt` of its start, is ACKed).
//!   Every cwnd reduction, by ECN or loss, queues a CWR for the next new segment
//!   (`tcp_ecn_queue_cwr()`), and an undone one withdraws it (`tcp_ecn_withdraw_cwr()`).
//!   BBR (v1) reduces nothing in CWR: it owns cwnd (`cong_control`) and reacts only to the
//!   Recovery state, so it ignores ECN, as Linux's does.
//!
//! Simplified: routes have no `ecn` feature (`RTAX_FEATURE_ECN`) and there is no Accurate
//! ECN (v6.18). The IP counters `IpExtIn*Pkts` are counted by the receiving
//! socket (Linux counts them in `ip_rcv_core()` for every packet the host receives,
//! forwarded ones included; tcplab keeps no IP counters for routers).

use crate::cc::CongestionOps;
use crate::config::Side;
use crate::mib::Mib;
use crate::packet::{ecn, flags, Packet};
use crate::tcp::socket::{Ctx, TcpSocket};

/// `TCP_ECN_OK`: ECN was negotiated on this connection.
pub const TCP_ECN_OK: u8 = 1;
/// `TCP_ECN_QUEUE_CWR`: set CWR on the next new data segment.
pub const TCP_ECN_QUEUE_CWR: u8 = 2;
/// `TCP_ECN_DEMAND_CWR`: set ECE on every segment until the peer's CWR.
pub const TCP_ECN_DEMAND_CWR: u8 = 4;
/// `TCP_ECN_SEEN`: an ECN-capable data segment arrived.
pub const TCP_ECN_SEEN: u8 = 8;

const _: () = assert!(
    Mib::InECT1Pkts as usize == Mib::InNoECTPkts as usize + ecn::ECT_1 as usize
        && Mib::InECT0Pkts as usize == Mib::InNoECTPkts as usize + ecn::ECT_0 as usize
        && Mib::InCEPkts as usize == Mib::InNoECTPkts as usize + ecn::CE as usize
);

/// `TCPHDR_SYN_ECN`'s ECN part: ECE|CWR on a SYN.
const SYN_ECN: u16 = flags::ECE | flags::CWR;

impl TcpSocket {
    /// This endpoint's `net.ipv4.tcp_ecn`.
    #[inline]
    fn sysctl_tcp_ecn(&self) -> u8 {
        self.cfg.tcp_ecn[Side::of_ep(self.ep) as usize]
    }

    /// `tcp_ecn_send_syn()` for the first SYN: the TCP flags it carries; sets the
    /// provisional `TCP_ECN_OK`.
    pub(crate) fn ecn_send_syn(&mut self) -> u16 {
        self.tp.ecn_flags = 0;
        if self.sysctl_tcp_ecn() == 1 || self.cc.needs_ecn() {
            self.tp.ecn_flags = TCP_ECN_OK;
            return SYN_ECN;
        }
        0
    }

    /// The flags of a retransmitted SYN: `tcp_ecn_clear_syn()` takes ECE|CWR off with
    /// `tcp_ecn_fallback`; `ecn_flags` are left for the SYN-ACK to clear.
    pub(crate) fn ecn_resend_syn(&self) -> u16 {
        if self.tp.ecn_flags & TCP_ECN_OK == 0 || self.cfg.tcp_ecn_fallback {
            0
        } else {
            SYN_ECN
        }
    }

    /// `tcp_ecn_rcv_synack()`: keep ECN only if the SYN-ACK has ECE and not CWR.
    pub(crate) fn ecn_rcv_synack(&mut self, pkt: &Packet) {
        if self.tp.ecn_flags & TCP_ECN_OK != 0 && (!pkt.has(flags::ECE) || pkt.has(flags::CWR)) {
            self.tp.ecn_flags &= !TCP_ECN_OK;
        }
    }

    /// `tcp_ecn_create_request()` + `tcp_ecn_openreq_child()`: the server decides on the
    /// SYN whether the connection uses ECN.
    pub(crate) fn ecn_create_request(&mut self, syn: &Packet) {
        self.tp.ecn_flags = 0;
        if syn.flags & SYN_ECN != SYN_ECN {
            return;
        }
        let ect = syn.ecn != ecn::NOT_ECT;
        let ecn_ok = self.sysctl_tcp_ecn() != 0;
        if (!ect && ecn_ok) || self.cc.needs_ecn() {
            self.tp.ecn_flags = TCP_ECN_OK;
        }
    }

    /// `tcp_ecn_make_synack()`: ECE on the SYN-ACK of an accepted request.
    pub(crate) fn ecn_synack_flags(&self) -> u16 {
        if self.tp.ecn_flags & TCP_ECN_OK != 0 {
            flags::ECE
        } else {
            0
        }
    }

    /// `tcp_ecn_send()` (and `INET_ECN_xmit()` on a DCTCP SYN): the IP ECN field and the
    /// extra TCP flags of the segment `[seq, seq + payload)` about to leave.
    #[inline]
    pub(crate) fn ecn_send(&mut self, seq: u64, payload: u32, syn: bool) -> (u8, u16) {
        if syn {
            // tcp_assign_congestion_control(): a congestion control that needs ECN sets the
            // socket's ECT (INET_ECN_xmit()) from the start, so a DCTCP SYN, and the SYN-ACK
            // its listener sends with the listener's TOS (tcp_v4_send_synack()), are ECT(0).
            let ect = self.cc.needs_ecn();
            return (if ect { ecn::ECT_0 } else { ecn::NOT_ECT }, 0);
        }
        if self.tp.ecn_flags & TCP_ECN_OK == 0 {
            return (ecn::NOT_ECT, 0);
        }
        let mut f = 0;
        let field = if payload > 0 && seq >= self.tp.snd_nxt {
            // Not-retransmitted data segment: ECT, and the queued CWR.
            if self.tp.ecn_flags & TCP_ECN_QUEUE_CWR != 0 {
                self.tp.ecn_flags &= !TCP_ECN_QUEUE_CWR;
                f |= flags::CWR;
            }
            ecn::ECT_0
        } else if self.cc.needs_ecn() {
            // DCTCP keeps the socket's ECT for ACKs and retransmissions.
            ecn::ECT_0
        } else {
            ecn::NOT_ECT
        };
        if self.tp.ecn_flags & TCP_ECN_DEMAND_CWR != 0 {
            f |= flags::ECE;
        }
        (field, f)
    }

    /// `tcp_ecn_rcv_ecn_echo()`: the ACK echoes a CE mark.
    #[inline]
    pub(crate) fn ecn_rcv_ecn_echo(&self, pkt: &Packet) -> bool {
        self.tp.ecn_flags & TCP_ECN_OK != 0 && pkt.flags & (flags::ECE | flags::SYN) == flags::ECE
    }

    /// `ip_rcv_core()`'s ECN counters, for every packet this socket receives (a GRO
    /// aggregate by its segments).
    #[inline]
    pub(crate) fn ecn_count_ip(&mut self, pkt: &Packet) {
        // IPSTATS_MIB_NOECTPKTS + (iph->tos & INET_ECN_MASK): the four counters are
        // consecutive in the codepoints' order (checked below).
        let at = Mib::InNoECTPkts as usize + (pkt.ecn & ecn::MASK) as usize;
        self.tp.mib.v[at] += pkt.segs() as u64;
    }

    /// What the receiving side does with the ECN of a data segment before it is queued:
    /// `tcp_ecn_accept_cwr()`, and `tcp_ecn_check_ce()` for a segment that brings new data
    /// (in order or out of order; a duplicate is not checked). Under DCTCP this may send a
    /// "special" ACK of the data before this segment first (`dctcp_ece_ack_update()`).
    pub(crate) fn ecn_rcv_data(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        if self.tp.ecn_flags & TCP_ECN_OK == 0 {
            return;
        }
        // tcp_ecn_accept_cwr()
        if pkt.has(flags::CWR) {
            self.tp.ecn_flags &= !TCP_ECN_DEMAND_CWR;
            self.rcv.request_ack_now();
        }
        if pkt.end_seq <= self.rcv.rcv_nxt {
            return;
        }
        // __tcp_ecn_check_ce()
        match pkt.ecn & ecn::MASK {
            ecn::NOT_ECT => {
                // "Funny extension": not-ECT after ECT is probably a retransmission.
                if self.tp.ecn_flags & TCP_ECN_SEEN != 0 {
                    self.rcv.enter_quickack_mode(2);
                }
            }
            ecn::CE => {
                if self.cc.needs_ecn() {
                    self.dctcp_ece_ack_update(ctx, true);
                }
                if self.tp.ecn_flags & TCP_ECN_DEMAND_CWR == 0 {
                    // Better not delay ACKs: the sender may have a very low cwnd.
                    self.rcv.enter_quickack_mode(2);
                    self.tp.ecn_flags |= TCP_ECN_DEMAND_CWR;
                }
                self.tp.ecn_flags |= TCP_ECN_SEEN;
            }
            _ => {
                if self.cc.needs_ecn() {
                    self.dctcp_ece_ack_update(ctx, false);
                }
                self.tp.ecn_flags |= TCP_ECN_SEEN;
            }
        }
    }

    /// `CA_EVENT_ECN_IS_CE` / `CA_EVENT_ECN_NO_CE` to DCTCP (`dctcp_ece_ack_update()`).
    /// `rcv_nxt` is still the one before this segment: the engine runs the check before
    /// queueing the data, Linux just after (`tcp_event_data_recv()`); `ecn_data_queued()`
    /// then stores the new one as DCTCP's `prior_rcv_nxt`.
    fn dctcp_ece_ack_update(&mut self, ctx: &mut Ctx, ce: bool) {
        let delack_pending = self.rcv.delack_timer_pending();
        let crate::cc::Cc::Dctcp(d) = &mut self.cc else {
            return;
        };
        let (special, ack_now) =
            d.ece_ack_update(ce, self.rcv.rcv_nxt, delack_pending, &mut self.tp.ecn_flags);
        if let Some(ack_seq) = special {
            self.send_special_ack(ctx, ack_seq);
            if let crate::cc::Cc::Dctcp(d) = &self.cc {
                d.ece_ack_finish(&mut self.tp.ecn_flags);
            }
        }
        if ack_now {
            self.rcv.request_ack_now();
        }
    }

    /// After the segment was queued: DCTCP remembers `rcv_nxt` for its next special ACK.
    #[inline]
    pub(crate) fn ecn_data_queued(&mut self) {
        if self.tp.ecn_flags & TCP_ECN_OK == 0 {
            return;
        }
        if let crate::cc::Cc::Dctcp(d) = &mut self.cc {
            d.prior_rcv_nxt = self.rcv.rcv_nxt;
        }
    }

    /// `__tcp_send_ack(sk, prior_rcv_nxt)` from DCTCP: an ACK of `ack_seq` (below
    /// `rcv_nxt`) that reflects the CE state before this segment, sent without counting as
    /// the owed ACK (`tcp_event_ack_sent()` returns early for it). Simplified: Linux's
    /// `tcp_select_window()` still runs for it and moves `rcv_wup`/`rcv_wnd`; here the
    /// receiver's window bookkeeping is left to the next ACK, which follows at once (the
    /// CE change asked for it), so only the window this one ACK advertises can differ.
    pub(crate) fn send_special_ack(&mut self, ctx: &mut Ctx, ack_seq: u64) {
        self.special_ack_seq = Some(ack_seq);
        self.send_ack(ctx);
        self.special_ack_seq = None;
    }

    /// `tcp_ecn_queue_cwr()`: every cwnd reduction tells the peer with CWR.
    #[inline]
    pub(crate) fn ecn_queue_cwr(&mut self) {
        if self.tp.ecn_flags & TCP_ECN_OK != 0 {
            self.tp.ecn_flags |= TCP_ECN_QUEUE_CWR;
        }
    }

    /// `tcp_ecn_withdraw_cwr()`: an undone reduction is not announced.
    #[inline]
    pub(crate) fn ecn_withdraw_cwr(&mut self) {
        self.tp.ecn_flags &= !TCP_ECN_QUEUE_CWR;
    }
}
