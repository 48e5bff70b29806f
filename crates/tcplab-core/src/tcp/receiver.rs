//! The receiving half of a TCP endpoint (Linux v6.12 net/ipv4/tcp_input.c).
//!
//! Model:
//! - **In-order delivery**: data at `rcv_nxt` advances it; the immediate reader of
//!   netperf/iperf3 reads it at once and never lets the receive queue fill, a slow reader
//!   (`tcp::reader`) leaves it queued until [`Receiver::app_read`], where it occupies the
//!   buffer (`tcp_space()`), and its reads send the window updates of `tcp_cleanup_rbuf()`;
//!   data beyond `rcv_nxt` waits in an out-of-order set of merged intervals
//!   (`tcp_data_queue_ofo`).
//! - **SACK blocks** (`tcp_sack_new_ofo_skb`, `tcp_sack_remove`): up to 4 blocks remembered,
//!   the most recently changed first; 3 fit in an ACK beside the timestamps option.
//!   Duplicate data produces a D-SACK block (`tcp_dsack_set`) sent once.
//! - **ACK policy** (`__tcp_ack_snd_check`): ACK at once when more than one full-sized
//!   segment is unacknowledged, in quick-ACK mode, when data is out of order (then SACK
//!   compression may hold the ACK up to min(5% RTT, 1 ms), after 3 immediate dupacks), or
//!   when a hole is filled; otherwise arm the delayed-ACK timer at `ato` (40 ms minimum,
//!   adapted to the inter-arrival time as in `tcp_event_data_recv`, bounded by the RTT).
//! - **Receive window**: `tcp_rmem` buffer and `scaling_ratio` (`tcp_win_from_space`):
//!   50% (`TCP_DEFAULT_SCALING_RATIO`) until the first full-sized in-order segment, then
//!   that skb's len/truesize as `tcp_measure_rcv_mss()` measures it (1448/2304 = 160/256
//!   for frames received into 2 KB buffers, `packet::linear_skb_truesize`), with the window
//!   clamp following (`tcp_set_window_clamp`). Queued data (out of order, or not yet read)
//!   is charged at that skb's truesize per byte (`sk_rmem_alloc`; simplified: Linux
//!   charges each queued skb its own truesize, and coalesces contiguous skbs whose data
//!   sits in page fragments, which buffers from a TUN or kmalloc'd heads do not).
//!   `rcv_ssthresh` grows by 2 MSS per in-order segment and,
//!   as SACK flows do, per queued out-of-order segment (`tcp_grow_window`, simplified:
//!   Linux grows by less when skbs have a poor len/truesize ratio), and dynamic
//!   right-sizing once per receiver RTT
//!   (`tcp_rcv_space_adjust`) up to `tcp_rmem[2]`. The window never shrinks.
//! - **Receiver RTT** (`tcp_rcv_rtt_measure_ts`) from the echoed timestamp, at the
//!   timestamp clock's 1 ms granularity, as Linux does without usec timestamps.
//! - **Pushed segments and ping-pong** (`tcp::push`): a full-sized PSH segment or a short
//!   one marks the owed ACK pushed (`tcp_measure_rcv_mss()`), and a reader that drains the
//!   queue sends it at once (`__tcp_cleanup_rbuf()`) unless the socket is in ping-pong
//!   mode: it sent data within `ato` of receiving (`tcp_event_data_sent()`), as
//!   request/response peers do, where the reply carries the ACK. Ping-pong mode also turns
//!   quick-ACK mode off (`tcp_in_quickack_mode()`); a missed delayed ACK or quick-ACK
//!   entry leaves it.

use std::collections::VecDeque;

use crate::config::TcpConfig;
use crate::mib::{Mib, MibCounters};
use crate::packet::{flags, SackBlock, MAX_SACK_BLOCKS, TCP_IP_HEADER_BYTES};
use crate::tcp::push::{ICSK_ACK_PUSHED, ICSK_ACK_PUSHED2, TCP_PINGPONG_THRESH};
use crate::time::{JiffyClock, NEVER, NSEC_PER_MSEC};

/// `TCP_ATO_MIN` = `TCP_DELACK_MIN` = HZ/25 (40 ms), in jiffies of a host at `hz`.
#[inline]
pub fn tcp_ato_min(hz: u32) -> u32 {
    hz / 25
}

/// `TCP_DELACK_MAX` = HZ/5 (200 ms), in jiffies of a host at `hz`.
#[inline]
pub fn tcp_delack_max(hz: u32) -> u32 {
    hz / 5
}
/// `TCP_MAX_QUICKACKS`.
pub const TCP_MAX_QUICKACKS: u32 = 16;
/// `TCP_NUM_SACKS`.
const TCP_NUM_SACKS: usize = 4;
/// `TCP_SACK_BLOCKS_EXPECTED`: SACK blocks an ACK is counted on to carry (see
/// [`Receiver::sack_compress_must_send_ack`]).
const TCP_SACK_BLOCKS_EXPECTED: usize = 2;
/// Linux v6.12 `TCP_DEFAULT_SCALING_RATIO` (x256): window = 50% of buffer space, the ratio
/// a socket starts with (and keeps until `tcp_measure_rcv_mss()` measures one).
const SCALING_RATIO: u64 = 128;
/// `TCP_MSS_DEFAULT`: the receiver's first `icsk_ack.rcv_mss` estimate
/// (`tcp_initialize_rcv_mss()`), which the first full-sized segment replaces.
const TCP_MSS_DEFAULT: u64 = 536;
/// `TCP_MIN_MSS`: the smallest MSS Linux takes from a segment's length.
const TCP_MIN_MSS: u64 = 88;
/// `sizeof(struct tcphdr)`, the TCP header without options.
const TCP_BARE_HEADER_BYTES: u64 = 20;
/// `tp->tcp_header_len`: the TCP header with the timestamps option every tcplab segment has.
const TCP_HEADER_LEN: u64 = (TCP_IP_HEADER_BYTES - IPV4_HEADER_BYTES) as u64;
/// The IPv4 header without options.
const IPV4_HEADER_BYTES: u32 = 20;
/// `SOCK_MIN_RCVBUF / 2`: the smallest window clamp `tcp_set_window_clamp()` sets
/// (`2 * TCP_SKB_MIN_TRUESIZE`, TCP_SKB_MIN_TRUESIZE = 2048 + SKB_DATA_ALIGN(sizeof(sk_buff))).
const MIN_WINDOW_CLAMP: u64 = 2048 + 256;
/// `TCP_FASTRETRANS_THRESH`.
const TCP_FASTRETRANS_THRESH: u32 = 3;

/// `tcp_win_from_space()` at the default ratio (before any segment was measured).
#[inline]
fn win_from_space(space: u64) -> u64 {
    (space * SCALING_RATIO) >> 8
}

/// `TCPOLEN_TSTAMP_ALIGNED`: the timestamp option's 12 bytes on every segment, which the
/// MSS option (`advmss`) includes and the payload MSS does not.
const TCPOLEN_TSTAMP_ALIGNED: u64 = 12;

/// The largest window a SYN can carry: its window field is never scaled (RFC 7323 2.2).
pub const MAX_SYN_WINDOW_BYTES: u64 = 65535;

/// Linux v6.12 net/ipv4/tcp_output.c: tcp_select_initial_window(): the window of the
/// default buffer (`tcp_full_space()`), rounded down to a multiple of `quantum_bytes`. No
/// 64 KB cap since v6.10 ("tcp: remove 64 KByte limit for initial tp->rcv_wnd value"); only
/// the SYN's own unscaled field is capped at 65535 ([`Receiver::syn_window`]).
fn initial_rcv_wnd(rcvbuf_bytes: u64, quantum_bytes: u64) -> u64 {
    let mut space = win_from_space(rcvbuf_bytes);
    if space > quantum_bytes {
        space -= space % quantum_bytes;
    }
    space
}

/// The largest window a receiver with `cfg` can ever advertise: the window of its largest
/// buffer (`tcp_rmem[2]`, or the default if larger), at the window-scale granularity that
/// `select_window_raw` rounds to. Used to warn about buffers too small to carry a segment.
pub fn max_window_bytes(cfg: &TcpConfig) -> u64 {
    win_from_space(cfg.tcp_rmem[2].max(cfg.tcp_rmem[1])) & !127
}

/// What the receiver wants done after a segment arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckAction {
    /// Nothing new to acknowledge.
    None,
    /// Send an ACK now.
    Now,
    /// The delayed-ACK (or SACK-compression) timer is armed.
    Scheduled,
}

/// `tcp_delack_max()` (Linux v6.12 net/ipv4/tcp_output.c): `min(TCP_DELACK_MAX,
/// max(1, tcp_rto_min() - 1))` in jiffies (v6.7 "tcp: derive delack_max from rto_min",
/// v6.11 "tcp: derive delack_max with tcp_rto_min helper"). With the default 200 ms
/// rto_min this is one jiffy below 200 ms: 199 ms at HZ=1000, 196 ms at HZ=250.
pub fn delack_max_j(rto_min_ms: u32, hz: u32) -> u32 {
    let rto_min_j = crate::time::msecs_to_jiffies(rto_min_ms, hz);
    tcp_delack_max(hz).min(rto_min_j.saturating_sub(1).max(1))
}

#[derive(Debug)]
pub struct Receiver {
    pub rcv_nxt: u64,
    /// `rcv_wup`: rcv_nxt at the last window update sent.
    rcv_wup: u64,
    /// Window last advertised, bytes.
    pub rcv_wnd: u64,
    rcv_ssthresh: u64,
    window_clamp: u64,
    pub rcvbuf: u64,
    rmem_max: u64,
    moderate_rcvbuf: bool,
    advmss: u64,
    rcv_mss: u64,
    /// `tp->scaling_ratio` (x256): the share of buffer space offered as window.
    scaling_ratio: u64,
    /// The kernel's `icsk_ack.rcv_mss` as `tcp_measure_rcv_mss()` keeps it (from 536 up to
    /// the largest segment seen), used only to decide when to measure `scaling_ratio`
    /// (tcplab's ACK decisions keep `rcv_mss` at the MSS).
    measured_mss: u64,
    /// What a queued byte costs the buffer, x65536: the measured skb's truesize / len (2 until
    /// one is measured), kept as a fixed-point factor so `tcp_space()` needs no division.
    charge_x65536: u64,
    /// The shape of the skb now being received (`set_skb`): its length, frames (1, or a GRO
    /// aggregate's segments; 0 = not given) and SACK blocks; truesize follows from them.
    skb_len: u64,
    skb_segs: u32,
    skb_num_sacks: u8,
    /// The packet flags of the skb now being received (PSH and FIN matter here).
    skb_flags: u16,
    /// `icsk_ack.last_seg_size`: the length of the last short segment measured, 0 if the
    /// last one measured was not short (`tcp_measure_rcv_mss()`).
    last_seg_size: u64,
    /// Out-of-order intervals, sorted, merged (never touching).
    ooo: VecDeque<(u64, u64)>,
    ooo_bytes: u64,
    sacks: [SackBlock; TCP_NUM_SACKS],
    num_sacks: usize,
    dsack: Option<SackBlock>,
    // delayed ACK (icsk_ack)
    /// The host's `CONFIG_HZ`; `ato`, `ato_min`, `delack_max` and `lrcvtime_j` are in its jiffies.
    clock: JiffyClock,
    /// `TCP_ATO_MIN`.
    ato_min: u32,
    /// `tcp_delack_max()`.
    delack_max: u32,
    quick: u32,
    ato: u32,
    lrcvtime_j: u32,
    /// ICSK_ACK_SCHED: an ACK is owed.
    ack_pending: bool,
    /// ICSK_ACK_NOW: the owed ACK must go out immediately.
    ack_now: bool,
    /// `ICSK_ACK_PUSHED` / `ICSK_ACK_PUSHED2` bits of `icsk_ack.pending` (`tcp::push`).
    ack_pushed: u8,
    /// `icsk_ack.pingpong`: replies sent within `ato` of receiving (`tcp::push`).
    pingpong: u8,
    /// Delayed-ACK timer deadline (ns) or NEVER.
    pub delack_deadline_ns: u64,
    /// SACK-compression timer deadline (ns) or NEVER.
    pub comp_sack_deadline_ns: u64,
    compressed_ack: u32,
    compressed_ack_rcv_nxt: u64,
    dup_ack_counter: u32,
    comp_sack_delay_ns: u64,
    comp_sack_nr: u32,
    // receiver RTT and DRS (rcv_rtt_est, rcvq_space)
    rcv_rtt_us_x8: u64,
    rcv_rtt_last_tsecr: u64,
    rcvq_space_bytes: u64,
    rcvq_space_seq: u64,
    rcvq_space_time_us: u64,
    /// Bytes delivered in order (to the receive queue).
    pub bytes_received: u64,
    /// `copied_seq`: bytes the application has read. With an immediate reader it follows
    /// `rcv_nxt` as data arrives; a slow reader leaves bytes unread, and they occupy the
    /// receive buffer (`tcp_space()`).
    pub copied_seq: u64,
    /// The application reads everything as soon as it arrives (`ReaderConfig::Immediate`).
    pub read_immediately: bool,
    /// Data segments received (including duplicates).
    pub data_segs_in: u64,
    /// The connection negotiated SACK (`TcpSocket::sack_ok`).
    pub sack_ok: bool,
    pub dup_segs_in: u64,
}

/// What `tcp_info` reports of the receiver ([`Receiver::info`]).
#[derive(Clone, Copy, Debug)]
pub struct RcvInfo {
    pub rcv_mss: u64,
    pub advmss: u64,
    pub rcv_ssthresh: u64,
    pub ato_j: u32,
    pub rcv_rtt_us: u64,
    pub rcv_space: u64,
    pub lrcvtime_j: u32,
    pub rcv_wnd: u64,
}

impl Receiver {
    /// `hz` is the receiving host's `CONFIG_HZ`.
    pub fn new(cfg: &TcpConfig, hz: u32) -> Receiver {
        let mss = cfg.mss_bytes as u64;
        let rcvbuf = cfg.tcp_rmem[1];
        // The listener's window (Linux v6.12 net/ipv4/tcp_minisocks.c:
        // tcp_openreq_init_rwin(): the MSS less the timestamp option); the connecting side
        // quantizes to its MSS option instead (`active_open`).
        let rcv_wnd = initial_rcv_wnd(rcvbuf, mss);
        Receiver {
            rcv_nxt: 0,
            rcv_wup: 0,
            rcv_wnd,
            rcv_ssthresh: rcv_wnd,
            window_clamp: win_from_space(cfg.tcp_rmem[2].max(rcvbuf)),
            rcvbuf,
            rmem_max: cfg.tcp_rmem[2],
            moderate_rcvbuf: cfg.tcp_moderate_rcvbuf,
            advmss: mss,
            rcv_mss: mss,
            scaling_ratio: SCALING_RATIO,
            measured_mss: TCP_MSS_DEFAULT.min(mss),
            charge_x65536: 2 << 16,
            skb_len: 0,
            skb_segs: 0,
            skb_num_sacks: 0,
            skb_flags: 0,
            last_seg_size: 0,
            ooo: VecDeque::new(),
            ooo_bytes: 0,
            sacks: [SackBlock::default(); TCP_NUM_SACKS],
            num_sacks: 0,
            dsack: None,
            clock: JiffyClock::new(hz),
            ato_min: tcp_ato_min(hz),
            delack_max: delack_max_j(cfg.rto_min_ms, hz),
            quick: 0,
            ato: 0,
            lrcvtime_j: 0,
            ack_pending: false,
            ack_now: false,
            ack_pushed: 0,
            pingpong: 0,
            delack_deadline_ns: NEVER,
            comp_sack_deadline_ns: NEVER,
            compressed_ack: 0,
            compressed_ack_rcv_nxt: 0,
            dup_ack_counter: 0,
            comp_sack_delay_ns: cfg.tcp_comp_sack_delay_ns,
            comp_sack_nr: cfg.tcp_comp_sack_nr,
            rcv_rtt_us_x8: 0,
            rcv_rtt_last_tsecr: 0,
            rcvq_space_bytes: 10 * mss.min(1460).max(mss),
            rcvq_space_seq: 0,
            rcvq_space_time_us: 0,
            bytes_received: 0,
            copied_seq: 0,
            read_immediately: true,
            data_segs_in: 0,
            sack_ok: true,
            dup_segs_in: 0,
        }
    }

    /// Connection established with the peer's ISN consumed: `rcv_nxt` is the next byte.
    pub fn established(&mut self, now_ns: u64, rcv_nxt: u64) {
        // tcp_create_openreq_child() / tcp_finish_connect(): `icsk_ack.lrcvtime` starts at
        // the handshake (tcp_info's last_data_recv counts from it).
        self.lrcvtime_j = self.clock.ns_to_jiffies32(now_ns);
        self.rcv_nxt = rcv_nxt;
        self.copied_seq = rcv_nxt;
        self.rcv_wup = rcv_nxt;
        self.rcvq_space_seq = rcv_nxt;
        self.rcvq_space_time_us = now_ns / 1000;
        // tcp_init_buffer_space(): rcvq_space.space = min(rcv_wnd, TCP_INIT_CWND * advmss)
        self.rcvq_space_bytes = self.rcv_wnd.min(10 * self.advmss);
    }

    /// `tp->advmss` once the handshake says whether timestamps are on (Linux v6.12
    /// tcp_rcv_synsent_state_process(): the connecting side takes the option bytes off
    /// its MSS when both sides use timestamps).
    pub fn set_advmss(&mut self, advmss_bytes: u64) {
        self.advmss = advmss_bytes;
    }

    /// `tcp_initialize_rcv_mss()` (Linux v6.12 net/ipv4/tcp_input.c), from
    /// tcp_init_transfer(): the first guess of the peer's segment size is our MSS option
    /// or the sending MSS, whichever is smaller, at most half the initial window. Equal to
    /// `advmss` unless the peer's MSS option was smaller (a scripted peer's `mss 1000`).
    pub fn init_rcv_mss(&mut self, mss_cache: u64) {
        let hint = self.advmss.min(mss_cache).min(self.rcv_wnd / 2);
        self.rcv_mss = hint.max(TCP_MIN_MSS);
    }

    /// The receiver's part of `tcp_info` (Linux v6.12 net/ipv4/tcp.c: tcp_get_info()):
    /// (rcv_mss, advmss, rcv_ssthresh, ato in jiffies, rcv_rtt in us, rcvq_space bytes,
    /// icsk_ack.lrcvtime in jiffies, rcv_wnd bytes).
    pub fn info(&self) -> RcvInfo {
        RcvInfo {
            rcv_mss: self.rcv_mss,
            advmss: self.advmss,
            rcv_ssthresh: self.rcv_ssthresh,
            ato_j: self.ato,
            rcv_rtt_us: self.rcv_rtt_us_x8 >> 3,
            rcv_space: self.rcvq_space_bytes,
            lrcvtime_j: self.lrcvtime_j,
            rcv_wnd: self.rcv_wnd,
        }
    }

    /// `setsockopt(SO_RCVBUF)` (Linux v6.12 net/core/sock.c: sk_setsockopt() ->
    /// __sock_set_rcvbuf()): the buffer is `bytes` (the caller doubles and bounds the
    /// request as the kernel does) and locked, so autotuning leaves it
    /// (`SOCK_RCVBUF_LOCK`); the window can reach at most what it holds. Before the
    /// handshake the initial window is sized from it (tcp_select_initial_window()).
    pub fn set_rcvbuf_locked(&mut self, bytes: u64, before_handshake: bool) {
        self.rcvbuf = bytes;
        self.moderate_rcvbuf = false;
        self.window_clamp = self.win_from_space(bytes).max(MIN_WINDOW_CLAMP);
        if before_handshake {
            self.rcv_wnd = initial_rcv_wnd(bytes, self.advmss).min(self.window_clamp);
            self.rcv_ssthresh = self.rcv_wnd;
        }
    }

    /// The peer's FIN was taken in ESTABLISHED (Linux v6.12 net/ipv4/tcp_input.c:
    /// tcp_fin()): ping-pong mode (`inet_csk_enter_pingpong_mode()`) and an ACK scheduled
    /// (`inet_csk_schedule_ack()`), which `__tcp_ack_snd_check()` then delays as any other:
    /// with no data received yet (`ato` 0) the delayed-ACK timer fires at the next jiffy.
    /// Returns true if the ACK is due now.
    pub fn fin_received(&mut self, now_ns: u64, srtt_us_x8: u32) -> bool {
        self.pingpong = crate::tcp::push::TCP_PINGPONG_THRESH;
        self.ack_pending = true;
        self.ack_snd_check(now_ns, srtt_us_x8) == AckAction::Now
    }

    /// `tcp_win_from_space()` at this socket's `scaling_ratio`.
    #[inline]
    fn win_from_space(&self, space: u64) -> u64 {
        (space * self.scaling_ratio) >> 8
    }

    /// `tcp_space_from_win()`: the buffer space that offers `win` bytes of window.
    #[inline]
    fn space_from_win(&self, win: u64) -> u64 {
        (win << 8) / self.scaling_ratio
    }

    /// `tcp_space()`: window worth of free buffer (`sk_rcvbuf - sk_rmem_alloc`): queued
    /// data, out of order or not yet read, charged at its skbs' truesize (2x before a
    /// segment was measured).
    #[inline]
    fn tcp_space(&self) -> u64 {
        let queued = self.ooo_bytes + self.unread_bytes();
        let rmem_alloc = (queued * self.charge_x65536) >> 16;
        self.win_from_space(self.rcvbuf.saturating_sub(rmem_alloc))
    }

    /// The skb that the next `on_data` receives: `len` bytes in `segs` frames (a GRO
    /// aggregate's segments, else 1) with `num_sacks` SACK blocks and the packet flags
    /// `pkt_flags`. Its truesize is computed only if `tcp_measure_rcv_mss()` measures it.
    /// Without it `on_data` measures nothing (the receiver's unit tests).
    #[inline]
    pub fn set_skb(&mut self, len: u64, segs: u32, num_sacks: u8, pkt_flags: u16) {
        self.skb_len = len;
        self.skb_segs = segs;
        self.skb_num_sacks = num_sacks;
        self.skb_flags = pkt_flags;
    }

    /// `tcp_measure_rcv_mss()` (Linux v6.12 net/ipv4/tcp_input.c) for an in-order skb:
    /// - segments at least `rcv_mss` long: a length that changes `rcv_mss` sets the ratio
    ///   to the skb's `len << 8 / truesize`, and a new ratio moves the window clamp to the
    ///   buffer's window (`tcp_set_window_clamp(sk, tcp_win_from_space(sk, sk_rcvbuf))`)
    ///   and caps `rcvq_space.space` at it; `rcv_mss` becomes the length (at most
    ///   `advmss`); with PSH the owed ACK is pushed (since v6.6, "tcp: fix delayed ACKs for
    ///   MSS boundary condition": a write of a multiple of the MSS ends in a full segment);
    /// - a shorter segment pushes the owed ACK (a second one while pushed: `PUSHED2`),
    ///   unless it is the second of equal length in a row that looks like a smaller MSS
    ///   (at least 536 bytes with its header, or 88 and no PSH/FIN), which becomes
    ///   `rcv_mss`.
    fn measure_rcv_mss(&mut self) {
        let (skb_len, segs) = (self.skb_len, std::mem::take(&mut self.skb_segs));
        if segs == 0 {
            return;
        }
        let lss = std::mem::take(&mut self.last_seg_size);
        // `gso_size ?: skb->len`: one segment's payload.
        let seg_len = skb_len.div_ceil(segs as u64);
        if seg_len < self.measured_mss {
            // The TCP header as it arrived (timestamps and any SACK blocks),
            // `skb->data - skb_transport_header(skb)`.
            let th_len =
                (crate::packet::Packet::ip_len(0, self.skb_num_sacks) - IPV4_HEADER_BYTES) as u64;
            let len = seg_len + th_len;
            // TCP_REMNANT = FIN | URG | SYN | PSH (tcplab sends no URG).
            let remnant = self.skb_flags & (flags::PSH | flags::FIN | flags::SYN) != 0;
            if len >= TCP_MSS_DEFAULT + TCP_BARE_HEADER_BYTES
                || (len >= TCP_MIN_MSS + TCP_BARE_HEADER_BYTES && !remnant)
            {
                let len = len - TCP_HEADER_LEN;
                self.last_seg_size = len;
                if len == lss {
                    self.measured_mss = len;
                    return;
                }
            }
            if self.ack_pushed & ICSK_ACK_PUSHED != 0 {
                self.ack_pushed |= ICSK_ACK_PUSHED2;
            }
            self.ack_pushed |= ICSK_ACK_PUSHED;
            return;
        }
        if self.skb_flags & flags::PSH != 0 {
            self.ack_pushed |= ICSK_ACK_PUSHED;
        }
        if seg_len != self.measured_mss {
            let truesize = crate::packet::rx_truesize(skb_len as u32, segs, self.skb_num_sacks);
            let ratio = ((skb_len << 8) / truesize).clamp(1, 255);
            self.charge_x65536 = (truesize << 16) / skb_len;
            if ratio != self.scaling_ratio {
                self.scaling_ratio = ratio;
                self.set_window_clamp(self.win_from_space(self.rcvbuf));
                if self.window_clamp < self.rcvq_space_bytes {
                    self.rcvq_space_bytes = self.window_clamp;
                }
            }
        }
        self.measured_mss = seg_len.min(self.advmss);
    }

    /// `tcp_set_window_clamp()` (Linux v6.12 net/ipv4/tcp.c) for a non-zero clamp:
    /// `rcv_ssthresh` follows a lower clamp down (`__tcp_adjust_rcv_ssthresh`, no reserved
    /// memory in tcplab), and a higher one up to the window already offered.
    fn set_window_clamp(&mut self, val: u64) {
        let new_clamp = val.max(MIN_WINDOW_CLAMP);
        let old_clamp = self.window_clamp;
        if new_clamp == old_clamp {
            return;
        }
        self.window_clamp = new_clamp;
        if new_clamp < old_clamp {
            self.rcv_ssthresh = self.rcv_ssthresh.min(new_clamp);
        } else {
            self.rcv_ssthresh = self.rcv_ssthresh.max(self.rcv_wnd.min(new_clamp));
        }
    }

    /// Bytes received in order and not yet read by the application.
    #[inline]
    pub fn unread_bytes(&self) -> u64 {
        // An immediate reader has read everything by the time anything asks (its copy
        // of `copied_seq` catches up at the end of `on_data`).
        if self.read_immediately {
            0
        } else {
            self.rcv_nxt - self.copied_seq
        }
    }

    /// `__tcp_select_window()` simplified (see module docs): free space bounded by
    /// rcv_ssthresh, rounded down to the window-scale granularity (wscale 7 here since
    /// `tcp_rmem[2]` is 6 MB).
    ///
    /// A slow reader's receiver also follows the kernel's move to a zero window (Linux
    /// v6.12 net/ipv4/tcp_output.c: `__tcp_select_window()`): once less than half the
    /// buffer's window is free, a free space below 1/16 of it or below one MSS is
    /// advertised as 0 (receiver-side silly window avoidance), not as a sliver. The
    /// immediate reader keeps the earlier simplification (its only queue is out-of-order
    /// data, which this rule would rarely reach), so that its results stay as they were.
    /// Not modelled: that branch also clears quick-ACK mode (`icsk_ack.quick = 0`).
    fn select_window_raw(&self) -> u64 {
        let space = self.tcp_space();
        if !self.read_immediately {
            let allowed = self.win_from_space(self.rcvbuf); // tcp_full_space()
            let full = self.window_clamp.min(allowed);
            let mss = self.rcv_mss.min(full);
            if space < full >> 1 {
                let free = space & !127;
                if free < allowed >> 4 || free < mss {
                    return 0;
                }
            }
        }
        let free = space.min(self.rcv_ssthresh).min(self.window_clamp);
        free & !127
    }

    /// The connecting side's initial window (Linux v6.12 net/ipv4/tcp_output.c:
    /// tcp_connect_init()): `tcp_select_initial_window()` gets `tp->advmss`, the MSS option
    /// with the timestamp bytes still in it (they are taken off only once a peer's timestamp
    /// was seen, `ts_recent_stamp`, which is not before the SYN-ACK), so the window is a
    /// multiple of 1460 on a 1500-byte path (64240), where the listener's is a multiple of
    /// 1448 (65160). Call before sending the SYN.
    pub fn active_open(&mut self) {
        self.rcv_wnd = initial_rcv_wnd(self.rcvbuf, self.advmss + TCPOLEN_TSTAMP_ALIGNED);
        self.rcv_ssthresh = self.rcv_wnd;
    }

    /// The window field of this side's SYN or SYN-ACK, in bytes: the initial `rcv_wnd`
    /// unscaled, at most 65535 (Linux v6.12 net/ipv4/tcp_output.c: __tcp_transmit_skb() for
    /// a SYN, tcp_make_synack() for a SYN-ACK); not the scaled, rounded-up value of
    /// `tcp_select_window()`, which only later segments carry.
    pub fn syn_window(&self) -> u32 {
        self.rcv_wnd.min(MAX_SYN_WINDOW_BYTES) as u32
    }

    /// `rcv_wup`: `rcv_nxt` when the last window was advertised.
    #[inline]
    pub fn rcv_wup(&self) -> u64 {
        self.rcv_wup
    }

    /// The application reads `bytes` of the in-order queue (`tcp_recvmsg()`):
    /// `copied_seq` advances, and the receive-buffer autotuning measures what was copied
    /// (Linux v6.12 net/ipv4/tcp.c: `tcp_recvmsg_locked()` -> `tcp_rcv_space_adjust()`).
    /// Returns the bytes read.
    pub fn app_read(&mut self, now_ns: u64, bytes: u64) -> u64 {
        let n = bytes.min(self.rcv_nxt - self.copied_seq);
        self.copied_seq += n;
        self.rcv_space_adjust(now_ns, self.copied_seq);
        n
    }

    /// `tcp_cleanup_rbuf(sk, copied)` (Linux v6.12 net/ipv4/tcp.c) after the application
    /// read `copied` bytes: true if an ACK must go out now, because
    /// - an ACK is owed and more than one full segment arrived since the last window
    ///   update (the once-per-two-segments ACK that `tcp_input.c` held back), or
    /// - the read freed enough buffer that the window it can now offer is at least twice
    ///   the window still open (and the open window is at most half the clamp): a window
    ///   update, which reopens a zero window.
    ///
    /// - an ACK is owed, the read drained the queue (nothing in order left unread,
    ///   nothing out of order: `sk_rmem_alloc` is 0), and a short or pushed segment came
    ///   in (`ICSK_ACK_PUSHED2`, or `ICSK_ACK_PUSHED` outside ping-pong mode; `tcp::push`).
    pub fn cleanup_rbuf(&self, copied: u64) -> bool {
        if self.ack_pending {
            if self.rcv_nxt - self.rcv_wup > self.rcv_mss {
                return true;
            }
            if copied > 0
                && (self.ack_pushed & ICSK_ACK_PUSHED2 != 0
                    || (self.ack_pushed & ICSK_ACK_PUSHED != 0 && !self.in_pingpong_mode()))
                && self.ooo.is_empty()
                && self.unread_bytes() == 0
            {
                return true;
            }
        }
        if copied > 0 {
            // tcp_receive_window()
            let rcv_window_now = (self.rcv_wup + self.rcv_wnd).saturating_sub(self.rcv_nxt);
            if 2 * rcv_window_now <= self.window_clamp {
                let new_window = self.select_window_raw();
                if new_window != 0 && new_window >= 2 * rcv_window_now {
                    return true;
                }
            }
        }
        false
    }

    /// `tcp_select_window()`: never shrink the offered window.
    fn select_window(&mut self) -> u64 {
        let cur = (self.rcv_wup + self.rcv_wnd).saturating_sub(self.rcv_nxt);
        let mut new = self.select_window_raw();
        if new < cur {
            new = (cur + 127) & !127;
        }
        new
    }

    /// ACK fields for an outgoing segment; call [`Receiver::ack_sent`] once it is sent.
    pub fn fill_ack(
        &mut self,
        sack_out: &mut [SackBlock; MAX_SACK_BLOCKS],
    ) -> (u64, u32, u8, bool) {
        let wnd = self.select_window();
        let mut n = 0usize;
        let mut dsack = false;
        if let Some(d) = self.dsack {
            sack_out[0] = d;
            n = 1;
            dsack = true;
        }
        for i in 0..self.num_sacks {
            if n >= MAX_SACK_BLOCKS {
                break;
            }
            sack_out[n] = self.sacks[i];
            n += 1;
        }
        (
            self.rcv_nxt,
            wnd.min(u32::MAX as u64) as u32,
            n as u8,
            dsack,
        )
    }

    /// `tcp_event_ack_sent()` + the window bookkeeping of `tcp_select_window()`.
    pub fn ack_sent(&mut self, wnd: u32) {
        self.rcv_wnd = wnd as u64;
        self.rcv_wup = self.rcv_nxt;
        self.dsack = None;
        // tcp_dec_quickack_mode(): one ACK sent.
        if self.quick > 0 {
            self.quick -= 1;
            if self.quick == 0 {
                self.ato = self.ato_min;
            }
        }
        self.ack_pending = false;
        self.ack_now = false;
        self.ack_pushed = 0;
        self.delack_deadline_ns = NEVER;
        // tcp_event_ack_sent -> tcp_sack_compress... : sending an ACK cancels compression.
        if self.comp_sack_deadline_ns != NEVER {
            self.comp_sack_deadline_ns = NEVER;
        }
        self.compressed_ack = 0;
    }

    /// `tcp_incr_quickack()`.
    fn incr_quickack(&mut self, max_quickacks: u32) {
        let mut quickacks = (self.rcv_wnd / (2 * self.rcv_mss)) as u32;
        if quickacks == 0 {
            quickacks = 2;
        }
        quickacks = quickacks.min(max_quickacks);
        if quickacks > self.quick {
            self.quick = quickacks;
        }
    }

    /// `icsk_ack.pending |= ICSK_ACK_NOW`: the owed ACK goes out at once.
    #[inline]
    pub fn request_ack_now(&mut self) {
        self.ack_now = true;
    }

    /// `icsk_ack.pending & ICSK_ACK_TIMER`: a delayed ACK is scheduled.
    #[inline]
    pub fn delack_timer_pending(&self) -> bool {
        self.delack_deadline_ns != NEVER
    }

    /// `tcp_enter_quickack_mode()`: also leaves ping-pong mode.
    pub fn enter_quickack_mode(&mut self, max_quickacks: u32) {
        self.incr_quickack(max_quickacks);
        self.pingpong = 0;
        self.ato = self.ato_min;
    }

    /// `tcp_in_quickack_mode()`: quick ACKs are off in ping-pong mode.
    #[inline]
    fn in_quickack_mode(&self) -> bool {
        self.quick > 0 && !self.in_pingpong_mode()
    }

    /// `inet_csk_in_pingpong_mode()`.
    #[inline]
    pub fn in_pingpong_mode(&self) -> bool {
        self.pingpong >= TCP_PINGPONG_THRESH
    }

    /// This endpoint sent data at jiffy `now_j` (`tcp_event_data_sent()`): a reply within
    /// `ato` of the last data received counts toward ping-pong mode
    /// (`inet_csk_inc_pingpong_cnt()`).
    #[inline]
    pub fn data_sent(&mut self, now_j: u32) {
        if now_j.wrapping_sub(self.lrcvtime_j) < self.ato {
            self.pingpong = self.pingpong.saturating_add(1);
        }
    }

    /// `tcp_event_data_recv()`: ato estimation and window growth for in-order data.
    fn event_data_recv(&mut self, now_ns: u64, len: u64, rto_j: u32) {
        self.measure_rcv_mss();
        let now = self.clock.ns_to_jiffies32(now_ns);
        let ato_min = self.ato_min;
        if self.ato == 0 {
            // The first data packet received: initialize delayed ACK engine.
            self.incr_quickack(TCP_MAX_QUICKACKS);
            self.ato = ato_min;
        } else {
            let m = now.wrapping_sub(self.lrcvtime_j);
            if m <= ato_min / 2 {
                // The fastest case is the first.
                self.ato = (self.ato >> 1) + ato_min / 2;
            } else if m < self.ato {
                self.ato = (self.ato >> 1) + m;
                if self.ato > rto_j {
                    self.ato = rto_j;
                }
            } else if m > rto_j {
                // Too long gap. Apparently sender failed to restart window, so that we
                // send ACKs quickly.
                self.incr_quickack(TCP_MAX_QUICKACKS);
            }
        }
        self.lrcvtime_j = now;
        if len >= 128 {
            self.grow_window(len);
        }
    }

    /// `tcp_grow_window()` (Linux v6.12 net/ipv4/tcp_input.c), called for in-order data
    /// from `tcp_event_data_recv()` and, in SACK flows, for every out-of-order segment
    /// queued by `tcp_data_queue_ofo()`.
    ///
    /// Simplified: Linux's "check #2" compares `tcp_win_from_space(truesize)` with the skb
    /// length and falls back to `__tcp_grow_window()` for skbs with a poor len/truesize
    /// ratio. tcplab has no skb memory model: every segment is charged 2x its length, the
    /// same 50% the fixed `scaling_ratio` assumes, so check #2 always passes and the
    /// increment is `max(2 * advmss, 2 * len)`. Growing sets `icsk_ack.quick |= 1`: the
    /// next ACK goes out at once, carrying the larger window.
    fn grow_window(&mut self, len: u64) {
        let room = self.window_clamp.min(self.tcp_space()) as i64 - self.rcv_ssthresh as i64;
        if room <= 0 {
            return;
        }
        let incr = (2 * self.advmss).max(2 * len);
        self.rcv_ssthresh += (room as u64).min(incr);
        self.quick |= 1;
    }

    /// `tcp_rcv_rtt_measure_ts()` with the 1 ms timestamp clock.
    fn rcv_rtt_measure_ts(&mut self, now_ns: u64, tsecr_ns: u64, len: u64) {
        if tsecr_ns == 0 || tsecr_ns == self.rcv_rtt_last_tsecr {
            return;
        }
        self.rcv_rtt_last_tsecr = tsecr_ns;
        if len < self.rcv_mss {
            return;
        }
        let delta_ms = (now_ns / NSEC_PER_MSEC)
            .saturating_sub(tsecr_ns / NSEC_PER_MSEC)
            .max(1);
        let sample_us = delta_ms * 1000;
        // tcp_rcv_rtt_update(tp, sample, win_dep=0)
        if self.rcv_rtt_us_x8 != 0 {
            let m = sample_us as i64 - (self.rcv_rtt_us_x8 >> 3) as i64;
            self.rcv_rtt_us_x8 = (self.rcv_rtt_us_x8 as i64 + m).max(1) as u64;
        } else {
            self.rcv_rtt_us_x8 = sample_us << 3;
        }
    }

    /// `tcp_rcv_space_adjust()`: dynamic right-sizing of the receive buffer, from the
    /// bytes the application copied in the last receiver RTT. `copied_seq` is where the
    /// reader is: an immediate reader's follows `rcv_nxt` (called as data arrives); a slow
    /// reader's is its own, passed on each read, as `tcp_recvmsg()` calls it.
    #[inline]
    fn rcv_space_adjust(&mut self, now_ns: u64, copied_seq: u64) {
        let now_us = now_ns / 1000;
        let time = now_us.saturating_sub(self.rcvq_space_time_us);
        if self.rcv_rtt_us_x8 == 0 || time < (self.rcv_rtt_us_x8 >> 3) {
            return;
        }
        self.rcv_space_measure(now_us, copied_seq);
    }

    /// The part of `tcp_rcv_space_adjust()` that runs once per receiver RTT (kept out of
    /// line: every in-order segment of an immediate reader asks, few measure).
    #[inline(never)]
    fn rcv_space_measure(&mut self, now_us: u64, copied_seq: u64) {
        let copied = copied_seq - self.rcvq_space_seq;
        if copied > self.rcvq_space_bytes {
            if self.moderate_rcvbuf {
                // Minimal window to cope with packet losses, assuming steady state, plus
                // a cushion; then room for the sender's growth (slow start).
                let mut rcvwin = (copied << 1) + 16 * self.advmss;
                let grow = rcvwin * (copied - self.rcvq_space_bytes) / self.rcvq_space_bytes;
                rcvwin += grow << 1;
                let rcvbuf = self.space_from_win(rcvwin).min(self.rmem_max);
                if rcvbuf > self.rcvbuf {
                    self.rcvbuf = rcvbuf;
                    self.window_clamp = self.win_from_space(rcvbuf);
                }
            }
            self.rcvq_space_bytes = copied;
        }
        self.rcvq_space_seq = copied_seq;
        self.rcvq_space_time_us = now_us;
    }

    /// `tcp_dsack_set()`.
    fn dsack_set(&mut self, seq: u64, end_seq: u64, mib: &mut MibCounters) {
        if seq < self.rcv_nxt {
            mib.inc(Mib::TCPDSACKOldSent);
        }
        self.dsack = Some(SackBlock {
            start: seq,
            end: end_seq,
        });
    }

    /// `tcp_sack_new_ofo_skb()`.
    fn sack_new_ofo(&mut self, seq: u64, end_seq: u64) {
        for i in 0..self.num_sacks {
            let sp = self.sacks[i];
            // tcp_sack_extend()
            if seq <= sp.end && end_seq >= sp.start {
                self.sacks[i].start = sp.start.min(seq);
                self.sacks[i].end = sp.end.max(end_seq);
                // Rotate this block to the first position.
                let b = self.sacks[i];
                for j in (1..=i).rev() {
                    self.sacks[j] = self.sacks[j - 1];
                }
                self.sacks[0] = b;
                self.sack_maybe_coalesce();
                return;
            }
        }
        if self.num_sacks >= TCP_NUM_SACKS {
            self.num_sacks -= 1; // forget the oldest block
        }
        for j in (1..=self.num_sacks).rev() {
            self.sacks[j] = self.sacks[j - 1];
        }
        self.sacks[0] = SackBlock {
            start: seq,
            end: end_seq,
        };
        self.num_sacks += 1;
    }

    /// Linux v6.12 net/ipv4/tcp_input.c: tcp_sack_new_ofo_skb() -> tcp_sack_compress_send_ack().
    /// True when ACKs are being compressed and the out-of-order segment `[seq, end_seq)`
    /// extends the block in position `TCP_SACK_BLOCKS_EXPECTED` (2) or later, or needs a new
    /// block while 2 or more exist: the kernel then sends the compressed ACK at once, so that
    /// every range is reported in the first two positions of at least one ACK before it moves
    /// further back (only 3 blocks fit beside timestamps, and ACKs may be lost; Eric
    /// Dumazet's "tcp_sack_new_ofo_skb() should be more conservative", v5.8). The caller
    /// sends that ACK (with the state before this segment) and then passes the segment to
    /// [`Receiver::on_data`].
    pub fn sack_compress_must_send_ack(&self, seq: u64, end_seq: u64) -> bool {
        if seq <= self.rcv_nxt || self.compressed_ack == 0 || self.num_sacks == 0 {
            return false;
        }
        // tcp_sack_extend() on each block in order; a new block would go at num_sacks.
        let this_sack = self.sacks[..self.num_sacks]
            .iter()
            .position(|sp| seq <= sp.end && end_seq >= sp.start)
            .unwrap_or(self.num_sacks);
        this_sack >= TCP_SACK_BLOCKS_EXPECTED
    }

    /// `tcp_sack_maybe_coalesce()`: merge blocks that now touch the first one.
    fn sack_maybe_coalesce(&mut self) {
        let mut i = 1;
        while i < self.num_sacks {
            let (a, b) = (self.sacks[0], self.sacks[i]);
            if a.start <= b.end && a.end >= b.start {
                self.sacks[0].start = a.start.min(b.start);
                self.sacks[0].end = a.end.max(b.end);
                for j in i..self.num_sacks - 1 {
                    self.sacks[j] = self.sacks[j + 1];
                }
                self.num_sacks -= 1;
            } else {
                i += 1;
            }
        }
    }

    /// `tcp_sack_remove()`: drop blocks now covered by rcv_nxt.
    fn sack_remove(&mut self) {
        let mut i = 0;
        while i < self.num_sacks {
            if self.sacks[i].start <= self.rcv_nxt {
                for j in i..self.num_sacks - 1 {
                    self.sacks[j] = self.sacks[j + 1];
                }
                self.num_sacks -= 1;
            } else {
                i += 1;
            }
        }
    }

    /// Insert `[seq, end)` into the out-of-order set; returns false if it was all there.
    fn ooo_insert(&mut self, seq: u64, end: u64) -> bool {
        // Fast path: data past a hole usually arrives in order, extending the last
        // interval or starting a new one after it (the intervals are disjoint and never
        // touch, so no earlier one can be involved).
        if let Some(last) = self.ooo.back_mut() {
            if seq > last.1 {
                self.ooo.push_back((seq, end));
                self.ooo_bytes += end - seq;
                return true;
            }
            if seq >= last.0 {
                if end <= last.1 {
                    return false;
                }
                self.ooo_bytes += end - last.1;
                last.1 = end;
                return true;
            }
        }
        let i = self.ooo.partition_point(|&(_, e)| e < seq);
        if i < self.ooo.len() && self.ooo[i].0 <= seq && self.ooo[i].1 >= end {
            return false;
        }
        let mut s = seq;
        let mut e = end;
        let mut j = i;
        let mut removed = 0u64;
        while j < self.ooo.len() && self.ooo[j].0 <= e {
            s = s.min(self.ooo[j].0);
            e = e.max(self.ooo[j].1);
            removed += self.ooo[j].1 - self.ooo[j].0;
            j += 1;
        }
        self.ooo.drain(i..j);
        self.ooo.insert(i, (s, e));
        self.ooo_bytes = self.ooo_bytes - removed + (e - s);
        true
    }

    /// Move in-order data from the ooo set (`tcp_ofo_queue`).
    fn ofo_queue(&mut self) {
        while let Some(&(s, e)) = self.ooo.front() {
            if s > self.rcv_nxt {
                break;
            }
            self.ooo.pop_front();
            self.ooo_bytes -= e - s;
            if e > self.rcv_nxt {
                self.bytes_received += e - self.rcv_nxt;
                self.rcv_nxt = e;
            }
        }
    }

    /// A data segment `[seq, end_seq)` arrived (`tcp_data_queue` + `tcp_ack_snd_check`).
    #[allow(clippy::too_many_arguments)]
    /// `srtt_us_x8` and `rto_j` are the endpoint's own RTT estimate and RTO (jiffies).
    pub fn on_data(
        &mut self,
        now_ns: u64,
        seq: u64,
        end_seq: u64,
        tsecr_ns: u64,
        srtt_us_x8: u32,
        rto_j: u32,
        mib: &mut MibCounters,
    ) -> AckAction {
        let len = end_seq - seq;
        self.data_segs_in += 1;
        self.rcv_rtt_measure_ts(now_ns, tsecr_ns, len);
        if seq == self.rcv_nxt {
            // In sequence, in window.
            self.rcv_nxt = end_seq;
            self.bytes_received += len;
            self.event_data_recv(now_ns, len, rto_j);
            if !self.ooo.is_empty() {
                self.ofo_queue();
                // RFC 5681 4.2: SHOULD send immediate ACK when a gap in the queue is filled.
                if self.ooo.is_empty() {
                    self.ack_now = true;
                }
            }
            if self.num_sacks > 0 {
                self.sack_remove();
            }
            if self.read_immediately {
                self.rcv_space_adjust(now_ns, self.rcv_nxt);
            }
        } else if end_seq <= self.rcv_nxt {
            // A retransmit of data we have: force an immediate ACK with a D-SACK.
            self.dup_segs_in += 1;
            self.dsack_set(seq, end_seq, mib);
            self.enter_quickack_mode(TCP_MAX_QUICKACKS);
            self.ack_now = true;
        } else if seq < self.rcv_nxt {
            // Partial overlap: D-SACK the duplicate part, take the rest.
            self.dsack_set(seq, self.rcv_nxt, mib);
            let new = end_seq - self.rcv_nxt;
            self.rcv_nxt = end_seq;
            self.bytes_received += new;
            self.event_data_recv(now_ns, new, rto_j);
            self.ofo_queue();
            self.sack_remove();
            self.ack_now = true;
        } else {
            // Out of order (tcp_data_queue_ofo).
            mib.inc(Mib::TCPOFOQueue);
            let queued = self.ooo_insert(seq, end_seq);
            if !queued {
                self.dup_segs_in += 1;
                self.dsack_set(seq, end_seq, mib);
            }
            self.sack_new_ofo(seq, end_seq);
            // Linux v6.12 net/ipv4/tcp_input.c: tcp_data_queue_ofo(): a SACK flow grows
            // the window for every segment it queues (not for one it drops as a
            // duplicate), so that a persistent hole does not freeze rcv_ssthresh.
            if queued {
                self.grow_window(len);
            }
        }
        if self.read_immediately {
            self.copied_seq = self.rcv_nxt;
        }
        self.ack_pending = true;
        self.ack_snd_check(now_ns, srtt_us_x8)
    }

    /// `__tcp_ack_snd_check(sk, ofo_possible = 1)`.
    fn ack_snd_check(&mut self, now_ns: u64, srtt_us_x8: u32) -> AckAction {
        if !self.ack_pending {
            return AckAction::None;
        }
        // More than one full frame received, and the window would not shrink ...
        if (self.rcv_nxt - self.rcv_wup > self.rcv_mss && self.select_window_raw() >= self.rcv_wnd)
            // ... or we are in quickack mode, or an immediate ACK was requested.
            || self.in_quickack_mode()
            || self.ack_now
        {
            return AckAction::Now;
        }
        if self.ooo.is_empty() {
            self.send_delayed_ack(now_ns, srtt_us_x8);
            return if self.delack_deadline_ns == now_ns {
                AckAction::Now
            } else {
                AckAction::Scheduled
            };
        }
        // Out-of-order data: SACK compression (Linux 4.18+), only with SACK
        // (`!tcp_is_sack(tp)`: every out-of-order segment is ACKed at once).
        if !self.sack_ok || self.compressed_ack >= self.comp_sack_nr {
            return AckAction::Now;
        }
        if self.compressed_ack_rcv_nxt != self.rcv_nxt {
            self.compressed_ack_rcv_nxt = self.rcv_nxt;
            self.dup_ack_counter = 0;
        }
        if self.dup_ack_counter < TCP_FASTRETRANS_THRESH {
            self.dup_ack_counter += 1;
            return AckAction::Now;
        }
        self.compressed_ack += 1;
        if self.comp_sack_deadline_ns != NEVER {
            return AckAction::Scheduled;
        }
        // Compress ACK timer: 5% of RTT, but no more than tcp_comp_sack_delay_ns.
        let mut rtt_us_x8 = self.rcv_rtt_us_x8;
        if srtt_us_x8 != 0 && (srtt_us_x8 as u64) < rtt_us_x8 {
            rtt_us_x8 = srtt_us_x8 as u64;
        }
        let delay_ns = self.comp_sack_delay_ns.min(rtt_us_x8 * (1000 >> 3) / 20);
        self.comp_sack_deadline_ns = now_ns + delay_ns;
        AckAction::Scheduled
    }

    /// `tcp_send_delayed_ack()`.
    fn send_delayed_ack(&mut self, now_ns: u64, srtt_us_x8: u32) {
        // ato is 0 until data arrived (event_data_recv): the timer is set to the current
        // jiffy, which the timer wheel runs at the next tick.
        let mut ato = self.ato;
        let clock = self.clock;
        let hz = clock.hz();
        if ato > self.ato_min {
            let mut max_ato = hz / 2;
            if srtt_us_x8 != 0 {
                let rtt = clock
                    .usecs_to_jiffies((srtt_us_x8 >> 3) as u64)
                    .max(self.ato_min);
                if rtt < max_ato {
                    max_ato = rtt;
                }
            }
            ato = ato.min(max_ato);
        }
        // Linux v6.12 net/ipv4/tcp_output.c: tcp_send_delayed_ack() caps ato with
        // tcp_delack_max() (since v6.7), not the constant TCP_DELACK_MAX.
        ato = ato.min(self.delack_max);
        // Timers run on jiffies: the deadline is the start of tick `jiffies + ato`.
        let mut timeout_ns = clock.timer_deadline_ns(now_ns, ato);
        if self.delack_deadline_ns != NEVER {
            // If delack timer is about to expire, send ACK now.
            if self.delack_deadline_ns <= now_ns + clock.jiffies_to_ns(ato >> 2) {
                self.delack_deadline_ns = now_ns;
                return;
            }
            if timeout_ns >= self.delack_deadline_ns {
                timeout_ns = self.delack_deadline_ns;
            }
        }
        self.delack_deadline_ns = timeout_ns;
    }

    /// The delayed-ACK timer fired (`tcp_delack_timer_handler`): true if an ACK must be sent.
    pub fn on_delack_timer(&mut self, rto_j: u32, mib: &mut MibCounters) -> bool {
        self.delack_deadline_ns = NEVER;
        if !self.ack_pending {
            return false;
        }
        if !self.in_pingpong_mode() {
            // Delayed ACK missed: inflate ATO.
            self.ato = (self.ato << 1).min(rto_j);
        } else {
            // Delayed ACK missed: leave pingpong mode and deflate ATO.
            self.pingpong = 0;
            self.ato = self.ato_min;
        }
        mib.inc(Mib::DelayedACKs);
        true
    }

    /// The SACK-compression timer fired (`tcp_compressed_ack_kick`).
    pub fn on_comp_sack_timer(&mut self) -> bool {
        self.comp_sack_deadline_ns = NEVER;
        self.compressed_ack > 0 && self.ack_pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1448;

    fn rx() -> (Receiver, MibCounters) {
        let mut r = Receiver::new(&TcpConfig::default(), 1000);
        r.established(0, 0);
        (r, MibCounters::default())
    }

    fn seg(i: u64) -> (u64, u64) {
        (i * MSS, (i + 1) * MSS)
    }

    #[test]
    fn out_of_order_set_matches_a_per_segment_reference() {
        // The ooo intervals (with their fast path for data arriving after the last one)
        // must always be the merged runs of the segments received above rcv_nxt.
        use crate::rng::Rng;
        use std::collections::BTreeSet;
        for seed in 0..30 {
            let mut rng = Rng::from_seed(seed);
            let (mut r, mut mib) = rx();
            let mut have = BTreeSet::new();
            let mut next = 0u64;
            for _ in 0..3000 {
                // Mostly the next new segment, sometimes a skip (a loss) or a retransmission.
                let i = match rng.below(10) {
                    0 => next.saturating_sub(1 + rng.below(40) as u64),
                    1 => next + 1 + rng.below(3) as u64,
                    _ => next,
                };
                next = next.max(i + 1);
                let (s, e) = seg(i);
                r.on_data(0, s, e, 0, 0, 200, &mut mib);
                have.insert(i);
                let nxt = r.rcv_nxt / MSS;
                let mut runs: Vec<(u64, u64)> = Vec::new();
                for &k in have.range(nxt + 1..) {
                    match runs.last_mut() {
                        Some(run) if run.1 == k * MSS => run.1 = (k + 1) * MSS,
                        _ => runs.push((k * MSS, (k + 1) * MSS)),
                    }
                }
                assert_eq!(
                    r.ooo.iter().copied().collect::<Vec<_>>(),
                    runs,
                    "seed {seed}"
                );
                assert_eq!(r.ooo_bytes, runs.iter().map(|(s, e)| e - s).sum::<u64>());
            }
        }
    }

    #[test]
    fn initial_window_is_rmem_default_halved_rounded_to_mss() {
        let (r, _) = rx();
        // tcp_rmem[1] = 131072 -> 65536 of window -> 45 * 1448 = 65160
        assert_eq!(r.rcv_wnd, 65160);
    }

    /// Leave no room for rcv_ssthresh to grow (tcp_grow_window would otherwise force one
    /// quick ACK), to look at the delayed-ACK policy alone.
    fn no_growth_room(r: &mut Receiver) {
        r.rcv_ssthresh = r.window_clamp.min(r.tcp_space());
    }

    #[test]
    fn the_connecting_side_quantizes_its_window_to_the_mss_option() {
        // tcp_connect_init(): 65536 of window rounded down to the MSS option (1448 + 12 bytes
        // of timestamps = 1460): 44 * 1460 = 64240, what Linux clients' SYNs carry.
        let mut r = Receiver::new(&TcpConfig::default(), 1000);
        r.active_open();
        let mss_option = MSS + TCPOLEN_TSTAMP_ALIGNED;
        assert_eq!(r.rcv_wnd, (65536 / mss_option) * mss_option);
        assert_eq!(r.rcv_ssthresh, r.rcv_wnd);
        assert_eq!(r.syn_window() as u64, r.rcv_wnd);
    }

    #[test]
    fn a_syn_window_is_unscaled_and_capped_at_65535() {
        let cfg = TcpConfig {
            tcp_rmem: [4096, 1 << 20, 6 << 20],
            ..TcpConfig::default()
        };
        let r = Receiver::new(&cfg, 1000);
        assert!(r.rcv_wnd > MAX_SYN_WINDOW_BYTES);
        assert_eq!(r.syn_window() as u64, MAX_SYN_WINDOW_BYTES);
        let (d, _) = rx();
        assert_eq!(
            d.syn_window() as u64,
            d.rcv_wnd,
            "65160 fits: sent as is, not rounded up to 128"
        );
    }

    #[test]
    fn initial_window_is_not_capped_at_64k() {
        // tcp_rmem[1] = 1 MB -> 512 kB of window (scaling_ratio 50 %), rounded down to whole
        // MSS; v6.6 capped it at 65535, v6.10+ does not.
        let cfg = TcpConfig {
            tcp_rmem: [4096, 1 << 20, 6 << 20],
            ..TcpConfig::default()
        };
        let r = Receiver::new(&cfg, 1000);
        assert_eq!(r.rcv_wnd, (524_288 / MSS) * MSS);
    }

    #[test]
    fn quickack_at_start_then_every_second_segment() {
        let (mut r, mut mib) = rx();
        no_growth_room(&mut r);
        // Quick-ACK mode covers the first rcv_wnd / (2 * mss) = 22 -> capped at 16 ACKs.
        let mut now = 1_000_000_000;
        for i in 0..16 {
            let (s, e) = seg(i);
            assert_eq!(
                r.on_data(now, s, e, 0, 0, 200, &mut mib),
                AckAction::Now,
                "segment {i}"
            );
            let mut b = Default::default();
            let (_, w, _, _) = r.fill_ack(&mut b);
            r.ack_sent(w);
            now += 1_000_000;
        }
        // Out of quick-ACK mode: first segment is delayed, the second triggers an ACK.
        let (s, e) = seg(16);
        assert_eq!(
            r.on_data(now, s, e, 0, 0, 200, &mut mib),
            AckAction::Scheduled
        );
        let (s, e) = seg(17);
        assert_eq!(
            r.on_data(now + 1000, s, e, 0, 0, 200, &mut mib),
            AckAction::Now
        );
    }

    #[test]
    fn the_first_full_sized_segment_sets_scaling_ratio_from_its_truesize() {
        // tcp_measure_rcv_mss(): rcv_mss starts at TCP_MSS_DEFAULT (536); the first
        // in-order 1448-byte skb changes it, so scaling_ratio = 1448 << 8 / truesize
        // (2304 for a 1500-byte frame: 160), and tcp_set_window_clamp() moves the clamp to
        // the buffer's window at that ratio. Later skbs of the same size measure nothing.
        let (mut r, mut mib) = rx();
        let rcvbuf = r.rcvbuf;
        assert_eq!(
            r.win_from_space(rcvbuf),
            rcvbuf / 2,
            "TCP_DEFAULT_SCALING_RATIO"
        );
        let truesize = crate::packet::linear_skb_truesize(1500);
        r.set_skb(MSS, 1, 0, 0);
        let (s, e) = seg(0);
        r.on_data(0, s, e, 0, 0, 200, &mut mib);
        assert_eq!(r.scaling_ratio, (MSS << 8) / truesize);
        assert_eq!(r.scaling_ratio, 160);
        assert_eq!(r.window_clamp, (rcvbuf * 160) >> 8);
        // Out-of-order data is charged at truesize per byte, not 2 x its length.
        // 10 skbs of 2 x MSS out of order: longer than rcv_mss, so measured if they were in
        // order (a 2948-byte frame in a 4 KB buffer: ratio 170); out of order, they are not.
        let free_before = r.tcp_space();
        for k in 0..10 {
            let s = (2 + 2 * k) * MSS;
            r.set_skb(2 * MSS, 1, 0, 0);
            r.on_data(1, s, s + 2 * MSS, 0, 0, 200, &mut mib);
        }
        assert_eq!(r.scaling_ratio, 160, "only in-order skbs are measured");
        // 20 x 2304 x 160 / 256 = 28800 B less window (charged per byte at the measured
        // skb's 2304/1448), give or take the byte that the fixed-point charge and two
        // roundings down may lose.
        let less = free_before - r.tcp_space();
        let expect = (20 * truesize * 160) >> 8;
        assert!(
            less.abs_diff(expect) <= 1,
            "{less} B less window, expected {expect}"
        );
    }

    /// A receiver past quick-ACK mode whose last full-sized segment set `rcv_mss`.
    fn rx_delaying() -> (Receiver, MibCounters) {
        let (mut r, mib) = rx();
        no_growth_room(&mut r);
        r.quick = 0;
        r.ato = tcp_ato_min(1000);
        r.measured_mss = MSS;
        // Data came 1 ms before the tests' first instant (1 s): no long gap to quick-ACK.
        r.lrcvtime_j = 999;
        (r, mib)
    }

    /// One in-order segment `[s, e)` with `pkt_flags`, read at once; whether the reader's
    /// tcp_cleanup_rbuf() sends the ACK the data left owed.
    fn arrive_and_read(
        r: &mut Receiver,
        mib: &mut MibCounters,
        now: u64,
        s: u64,
        e: u64,
        f: u16,
    ) -> (AckAction, bool) {
        r.set_skb(e - s, 1, 0, f);
        let a = r.on_data(now, s, e, 0, 0, 200, mib);
        (a, a == AckAction::Scheduled && r.cleanup_rbuf(e - s))
    }

    #[test]
    fn a_drained_full_sized_psh_segment_is_acked_when_read() {
        // Linux v6.12 tcp_measure_rcv_mss(): a segment of rcv_mss with PSH sets
        // ICSK_ACK_PUSHED (v6.6, "tcp: fix delayed ACKs for MSS boundary condition"), and
        // __tcp_cleanup_rbuf() ACKs once the read drained the queue. Without PSH the ACK
        // waits for the timer (or the next segment).
        let (mut r, mut mib) = rx_delaying();
        let (s, e) = seg(0);
        let (a, read_acks) = arrive_and_read(&mut r, &mut mib, 1_000_000_000, s, e, 0);
        assert_eq!(a, AckAction::Scheduled);
        assert!(!read_acks, "no PSH: delayed");
        let mut b = Default::default();
        let (_, w, _, _) = r.fill_ack(&mut b);
        r.ack_sent(w);
        let (s, e) = seg(1);
        let (a, read_acks) = arrive_and_read(&mut r, &mut mib, 1_001_000_000, s, e, flags::PSH);
        assert_eq!(a, AckAction::Scheduled, "the softirq still delays it");
        assert!(read_acks, "PSH: the drained read ACKs");
        // Sending the ACK clears the pushed state.
        let (_, w, _, _) = r.fill_ack(&mut b);
        r.ack_sent(w);
        assert_eq!(r.ack_pushed, 0);
    }

    #[test]
    fn a_pushed_segment_waits_while_data_is_queued_out_of_order() {
        // `!atomic_read(&sk->sk_rmem_alloc)`: the out-of-order queue holds memory, so a
        // read does not drain the socket.
        let (mut r, mut mib) = rx_delaying();
        let (s, e) = seg(5);
        r.on_data(1_000_000_000, s, e, 0, 0, 200, &mut mib);
        let mut b = Default::default();
        let (_, w, _, _) = r.fill_ack(&mut b);
        r.ack_sent(w);
        let (s, e) = seg(0);
        r.set_skb(MSS, 1, 0, flags::PSH);
        r.on_data(1_001_000_000, s, e, 0, 0, 200, &mut mib);
        assert!(!r.ooo.is_empty());
        assert!(r.ack_pushed & ICSK_ACK_PUSHED != 0);
        assert!(!r.cleanup_rbuf(MSS));
    }

    #[test]
    fn short_segments_push_and_ping_pong_needs_two() {
        // tcp_measure_rcv_mss(): a segment shorter than rcv_mss pushes (PUSHED, then
        // PUSHED2). In ping-pong mode (a reply sent within ato of receiving,
        // tcp_event_data_sent()) only PUSHED2 lets the read ACK: the reply carries it.
        let (mut r, mut mib) = rx_delaying();
        let now = 1_000_000_000;
        let (a, read_acks) = arrive_and_read(&mut r, &mut mib, now, 0, 100, flags::PSH);
        assert_eq!(a, AckAction::Scheduled);
        assert!(
            read_acks,
            "a short segment, not ping-pong: ACK on the drained read"
        );
        let mut b = Default::default();
        let (_, w, _, _) = r.fill_ack(&mut b);
        r.ack_sent(w);
        // This endpoint replies 1 ms after the request arrived: ping-pong mode.
        r.data_sent(r.clock.ns_to_jiffies32(now + 1_000_000));
        assert!(r.in_pingpong_mode());
        let (_, read_acks) =
            arrive_and_read(&mut r, &mut mib, now + 2_000_000, 100, 200, flags::PSH);
        assert!(!read_acks, "ping-pong: one short segment does not");
        let (_, read_acks) =
            arrive_and_read(&mut r, &mut mib, now + 2_100_000, 200, 300, flags::PSH);
        assert!(read_acks, "ping-pong: a second short one (PUSHED2) does");
        // A reply long after the data came (> ato) is no reply: no ping-pong count.
        let (mut q, _) = rx_delaying();
        q.lrcvtime_j = q.clock.ns_to_jiffies32(now);
        q.data_sent(q.clock.ns_to_jiffies32(now + 500_000_000));
        assert!(!q.in_pingpong_mode());
    }

    #[test]
    fn ping_pong_turns_quick_acks_off_and_a_missed_delayed_ack_leaves_it() {
        // tcp_in_quickack_mode(): quick && !pingpong; tcp_delack_timer_handler(): in
        // ping-pong mode a timer that had to send leaves it and deflates ato.
        let (mut r, mut mib) = rx_delaying();
        r.quick = 5;
        r.pingpong = 1;
        let (s, e) = seg(0);
        r.set_skb(MSS, 1, 0, 0);
        assert_eq!(
            r.on_data(1_000_000_000, s, e, 0, 0, 200, &mut mib),
            AckAction::Scheduled
        );
        r.ato = 4 * r.ato_min;
        assert!(r.on_delack_timer(200, &mut mib));
        assert!(!r.in_pingpong_mode());
        assert_eq!(r.ato, r.ato_min);
    }

    #[test]
    fn two_equal_short_segments_set_rcv_mss_instead_of_pushing() {
        // tcp_measure_rcv_mss(): a short segment without PSH that looks like a smaller
        // MSS (>= 536 bytes with its header) is remembered; a second of the same length
        // becomes rcv_mss and does not push.
        let (mut r, mut mib) = rx_delaying();
        r.set_skb(1000, 1, 0, 0);
        r.on_data(1_000_000_000, 0, 1000, 0, 0, 200, &mut mib);
        assert_eq!(r.ack_pushed, ICSK_ACK_PUSHED);
        r.ack_pushed = 0;
        r.set_skb(1000, 1, 0, 0);
        r.on_data(1_000_100_000, 1000, 2000, 0, 0, 200, &mut mib);
        assert_eq!(r.ack_pushed, 0);
        assert_eq!(r.measured_mss, 1000);
    }

    #[test]
    fn delayed_ack_timer_is_at_least_40ms() {
        let (mut r, mut mib) = rx();
        no_growth_room(&mut r);
        r.quick = 0;
        r.ato = tcp_ato_min(1000);
        let now = 10_000_000_000u64;
        // Previous segment 100 ms ago: a gap longer than ato but shorter than the RTO.
        r.lrcvtime_j = crate::time::ns_to_jiffies32(now, 1000) - 100;
        let (s, e) = seg(0);
        assert_eq!(
            r.on_data(now, s, e, 0, 0, 200, &mut mib),
            AckAction::Scheduled
        );
        let d = r.delack_deadline_ns - now;
        assert!((39_000_000..=41_000_000).contains(&d), "delay {d}");
    }

    #[test]
    fn out_of_order_data_is_sacked_and_hole_fill_acks_now() {
        let (mut r, mut mib) = rx();
        r.quick = 0;
        let (s, e) = seg(0);
        r.on_data(0, s, e, 0, 0, 200, &mut mib);
        let (s, e) = seg(2);
        assert_eq!(r.on_data(1, s, e, 0, 0, 200, &mut mib), AckAction::Now);
        let (s3, e3) = seg(3);
        r.on_data(2, s3, e3, 0, 0, 200, &mut mib);
        let mut b = Default::default();
        let (ack, _, n, dsack) = r.fill_ack(&mut b);
        assert_eq!(ack, MSS);
        assert_eq!(n, 1);
        assert!(!dsack);
        assert_eq!(
            b[0],
            SackBlock {
                start: 2 * MSS,
                end: 4 * MSS
            }
        );
        // Fill the hole: everything is delivered and an ACK goes out at once.
        let (s, e) = seg(1);
        assert_eq!(r.on_data(3, s, e, 0, 0, 200, &mut mib), AckAction::Now);
        assert_eq!(r.rcv_nxt, 4 * MSS);
        assert_eq!(r.bytes_received, 4 * MSS);
        let (_, _, n, _) = r.fill_ack(&mut b);
        assert_eq!(n, 0);
    }

    #[test]
    fn duplicate_data_produces_one_dsack() {
        let (mut r, mut mib) = rx();
        let (s, e) = seg(0);
        r.on_data(0, s, e, 0, 0, 200, &mut mib);
        assert_eq!(r.on_data(1, s, e, 0, 0, 200, &mut mib), AckAction::Now);
        let mut b = Default::default();
        let (_, w, n, dsack) = r.fill_ack(&mut b);
        assert!(dsack);
        assert_eq!(n, 1);
        assert_eq!(b[0], SackBlock { start: 0, end: MSS });
        assert_eq!(mib.get(Mib::TCPDSACKOldSent), 1);
        r.ack_sent(w);
        let (_, _, n, dsack) = r.fill_ack(&mut b);
        assert!(!dsack);
        assert_eq!(n, 0);
    }

    /// Linux v6.12 tcp_data_queue_ofo() -> tcp_grow_window(): behind a hole that is never
    /// repaired, each queued out-of-order segment still raises rcv_ssthresh by
    /// max(2 * advmss, 2 * len), bounded by min(window_clamp, tcp_space()), and the
    /// growth forces the next ACK out at once (icsk_ack.quick |= 1), so SACK compression
    /// does not hold the window update back.
    #[test]
    fn window_grows_on_out_of_order_data_behind_a_permanent_hole() {
        // The default 128 KB buffer gives a 64 KB initial window (tcp_select_initial_window);
        // the buffer is then 4 MB, as receive-buffer autotuning (tcp_rcv_space_adjust) grows
        // sk_rcvbuf ahead of the window, so that the room is not the limit at first.
        let cfg = TcpConfig {
            tcp_rmem: [4096, 131072, 6 << 20],
            ..TcpConfig::default()
        };
        let mut r = Receiver::new(&cfg, 1000);
        r.rcvbuf = 4 << 20;
        r.established(0, 0);
        let mut mib = MibCounters::default();
        let ssthresh0 = r.rcv_ssthresh;
        // Out of the initial quick-ACK mode, so that only growth can make ACKs quick.
        r.quick = 0;
        r.ato = tcp_ato_min(1000);
        let (s, e) = seg(0);
        r.on_data(1, s, e, 0, 0, 200, &mut mib);
        r.quick = 0;
        let mut b = Default::default();
        let (_, w, _, _) = r.fill_ack(&mut b);
        r.ack_sent(w);
        // Segment 1 is lost for good; 2..=n arrive.
        let mut expect = r.rcv_ssthresh;
        for i in 2..=400u64 {
            let (s, e) = seg(i);
            let action = r.on_data(1 + i, s, e, 0, 0, 200, &mut mib);
            let ooo = (i - 1) * MSS;
            let space = ((4u64 << 20) - 2 * ooo) / 2; // tcp_space(): truesize = 2 x len
            let room = space.min(r.window_clamp).saturating_sub(expect);
            expect += room.min(2 * MSS);
            assert_eq!(r.rcv_ssthresh, expect, "segment {i}");
            if room > 0 {
                assert_eq!(
                    action,
                    AckAction::Now,
                    "segment {i}: growth makes the ACK quick"
                );
            }
            let (ack, w, _, _) = r.fill_ack(&mut b);
            assert_eq!(ack, MSS);
            assert_eq!(
                w as u64,
                expect.min(space) & !127,
                "segment {i}: advertised window"
            );
            r.ack_sent(w);
        }
        // The window grew by 2 MSS per segment: well beyond the initial 64 KB.
        assert!(r.rcv_wnd > ssthresh0 + 600 * MSS, "rcv_wnd {}", r.rcv_wnd);
    }

    /// Linux v6.12 tcp_sack_new_ofo_skb(): while ACKs are compressed, a segment that extends
    /// the third or fourth SACK block, or opens a new block when two or more exist, flushes
    /// the compressed ACK first (tcp_sack_compress_send_ack); extending one of the first two
    /// does not.
    #[test]
    fn sack_blocks_past_the_second_flush_the_compressed_ack() {
        let (mut r, mut mib) = rx();
        no_growth_room(&mut r);
        let (s, e) = seg(0);
        r.on_data(1, s, e, 0, 0, 200, &mut mib);
        let mut b = Default::default();
        let (_, w, _, _) = r.fill_ack(&mut b);
        r.ack_sent(w);
        r.quick = 0; // out of the initial quick-ACK mode
                     // Segments 2, 5, 8, 11 arrive (holes 1, 3-4, 6-7, 9-10): four SACK blocks; the first 3
                     // dupacks go out at once (nothing is compressed then, so nothing to flush), the 4th
                     // is compressed.
        for (now, i) in [2u64, 5, 8, 11].into_iter().enumerate() {
            let (s, e) = seg(i);
            assert!(!r.sack_compress_must_send_ack(s, e), "segment {i}");
            let a = r.on_data(2 + now as u64, s, e, 0, 8 * 100_000, 200, &mut mib);
            if a == AckAction::Now {
                let mut b = Default::default();
                let (_, w, _, _) = r.fill_ack(&mut b);
                r.ack_sent(w);
            }
        }
        assert_eq!(r.num_sacks, TCP_NUM_SACKS);
        assert!(r.compressed_ack > 0);
        // Blocks, newest first: [11], [8], [5], [2]. Extending the first (10, 12) or the
        // second (9): no flush.
        for i in [10u64, 12, 9] {
            let (s, e) = seg(i);
            assert!(!r.sack_compress_must_send_ack(s, e), "segment {i}");
        }
        // Extending the third (4, 6) or the fourth (3), or a new (fifth) block (14): flush.
        for i in [4u64, 6, 3, 14] {
            let (s, e) = seg(i);
            assert!(r.sack_compress_must_send_ack(s, e), "segment {i}");
        }
        // Once the ACK is sent, nothing is held back and no flush is needed.
        let mut b = Default::default();
        let (_, w, _, _) = r.fill_ack(&mut b);
        r.ack_sent(w);
        let (s, e) = seg(14);
        assert!(!r.sack_compress_must_send_ack(s, e));
    }

    #[test]
    fn window_grows_with_drs() {
        let (mut r, mut mib) = rx();
        let w0 = r.rcv_wnd;
        let mut now = 0u64;
        // 2000 segments at one per 10 us with a 1 ms receiver RTT.
        for i in 0..2000 {
            let (s, e) = seg(i);
            r.on_data(
                now,
                s,
                e,
                now.saturating_sub(1_000_000).max(1),
                0,
                200,
                &mut mib,
            );
            let mut b = Default::default();
            let (_, w, _, _) = r.fill_ack(&mut b);
            r.ack_sent(w);
            now += 10_000;
        }
        assert!(r.rcvbuf > TcpConfig::default().tcp_rmem[1]);
        assert!(r.rcv_wnd > w0);
        assert!(r.rcvbuf <= TcpConfig::default().tcp_rmem[2]);
    }
}
