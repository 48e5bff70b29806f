//! Transmission, following Linux v6.12 net/ipv4/tcp_output.c.
//!
//! `push_pending_frames` is `tcp_write_xmit`: while there is data, the pacing clock
//! allows (`tcp_pacing_check`: the next skb's earliest departure time `tcp_wstamp_ns` has
//! come), the cwnd has room (`tcp_cwnd_test`), the peer's window has room
//! (`tcp_snd_wnd_test`) and TSQ allows (`tcp_small_queue_check`: at most ~1 ms of data or
//! two skbs in the host's qdisc/NIC), send one TSO-sized burst (`tcp_tso_autosize`:
//! ~1 ms of data at the pacing rate, at least 2 segments). All segments of a burst share
//! one departure time; after the burst the pacing clock advances by its length at
//! `sk_pacing_rate` (`tcp_update_skb_after_send`). Internal pacing applies when the
//! congestion control asked for it (BBR: `SK_PACING_NEEDED`) and no fq paces instead.
//!
//! tcplab departs from Linux in one place here: bursts are sent as back-to-back MSS
//! segments instead of one TSO skb; the wire sees the same packets.

use crate::cc::CongestionOps;
use crate::mib::Mib;
use crate::tcp::chrono::ChronoType;
use crate::tcp::rate::rate_skb_sent;
use crate::tcp::rtx_queue::{
    TCPCB_EVER_RETRANS, TCPCB_LOST, TCPCB_RETRANS, TCPCB_SACKED_ACKED, TCPCB_SACKED_RETRANS,
};
use crate::tcp::sock::{CaEvent, CaState, PacingStatus};
use crate::tcp::socket::{ConnState, Ctx, TcpSocket, XmitTimer};
use crate::time::{NEVER, NSEC_PER_SEC};

use crate::packet::SKB_TRUESIZE_OVERHEAD;

/// `GSO_MAX_SEGS` (include/linux/netdevice.h): the default `sk_gso_max_segs` of a device
/// that sets no lower `gso_max_segs` (veth, virtio, most NICs).
pub const GSO_MAX_SEGS: u32 = 65535;

/// What `tcp_tso_autosize()` reads from the socket.
#[derive(Clone, Copy, Debug)]
pub struct TsoInputs {
    /// `sk->sk_pacing_rate`, bytes per second.
    pub pacing_rate: u64,
    /// `sk->sk_pacing_shift` (10 by default: ~1 ms of data).
    pub pacing_shift: u32,
    /// `tcp_min_rtt()`, us (`~0U` before the first sample).
    pub min_rtt_us: u32,
    /// `net.ipv4.tcp_tso_rtt_log` (9 by default: 512 us).
    pub tso_rtt_log: u32,
    /// `sk->sk_gso_max_size`, bytes.
    pub gso_max_size: u32,
    /// `mss_now`, bytes.
    pub mss: u32,
}

/// Linux v6.12 net/ipv4/tcp_output.c: tcp_tso_autosize(). Segments of one skb: the bytes
/// the pacing rate sends in `2^-sk_pacing_shift` s, plus (v5.19+, "tcp: autosize TSO with
/// min_rtt", `tcp_tso_rtt_log`) `gso_max_size >> (min_rtt_us >> tso_rtt_log)` so that a
/// flow on a short path sends large skbs whatever its rate; at most `gso_max_size`, at
/// least `min_tso_segs` segments.
pub fn tso_autosize(i: TsoInputs, min_tso_segs: u32) -> u32 {
    let mut bytes = i.pacing_rate >> i.pacing_shift;
    let r = i.min_rtt_us >> i.tso_rtt_log;
    // r < BITS_PER_TYPE(sk->sk_gso_max_size) (an unsigned int: 32).
    if r < 32 {
        bytes += (i.gso_max_size >> r) as u64;
    }
    bytes = bytes.min(i.gso_max_size as u64);
    ((bytes / i.mss as u64) as u32).max(min_tso_segs)
}

/// Linux v6.12 net/ipv4/tcp_output.c: tcp_tso_segs(): `tcp_tso_autosize()` with the
/// congestion control's `min_tso_segs()` (BBR: `bbr_min_tso_segs()`) or
/// `sysctl_tcp_min_tso_segs`, capped at `sk_gso_max_segs`.
pub fn tso_segs(i: TsoInputs, min_tso_segs: u32, gso_max_segs: u32) -> u32 {
    // tcplab: at least one segment (min_tso_segs is >= 1 by its sysctl range; BBR's is 1 or 2).
    tso_autosize(i, min_tso_segs).min(gso_max_segs).max(1)
}

/// `sysctl_tcp_tso_win_divisor` (Linux v6.12 net/ipv4/tcp_ipv4.c: tcp_sk_init(): 3): the
/// part of the window a TSO skb may take before `tcp_tso_should_defer()` stops waiting.
pub const TCP_TSO_WIN_DIVISOR: u32 = 3;

/// `TCP_MSS_DEFAULT` (include/net/tcp.h): 536.
const TCP_MSS_DEFAULT: u32 = 536;

/// `tp->tcp_header_len` with timestamps (20 + TCPOLEN_TSTAMP_ALIGNED), as tcplab's MSS
/// assumes; only `tcp_bound_to_half_wnd()`'s floor for tiny windows reads it.
const TCP_HEADER_LEN: u32 = 32;

/// Linux v6.12 net/ipv4/tcp.c: tcp_xmit_size_goal() with include/net/tcp.h:
/// tcp_bound_to_half_wnd(): the size tcp_sendmsg_locked() fills write-queue skbs to:
/// `sk_gso_max_size` bounded to half the largest window the peer offered, a whole number
/// of MSS (at most `sk_gso_max_segs` of them), at least one MSS. (The kernel caches
/// `tp->gso_segs` to avoid a divide; the value is the same.)
pub fn xmit_size_goal(mss: u32, max_window: u32, gso_max_size: u32, gso_max_segs: u32) -> u32 {
    // tcp_bound_to_half_wnd()
    let cutoff = if max_window > TCP_MSS_DEFAULT {
        max_window >> 1
    } else {
        max_window
    };
    let new_size_goal = if cutoff != 0 && gso_max_size > cutoff {
        cutoff.max(68 - TCP_HEADER_LEN)
    } else {
        gso_max_size
    };
    let segs = (new_size_goal / mss).min(gso_max_segs);
    (segs * mss).max(mss)
}

/// What `tcp_tso_should_defer()` reads: the socket, and the skb at the send head (after
/// `tcp_grow_skb()`).
#[derive(Clone, Copy, Debug)]
pub struct DeferInputs {
    pub ca_state: CaState,
    /// `tp->tcp_clock_cache`, ns.
    pub clock_ns: u64,
    /// `tp->tcp_wstamp_ns`: the departure time of the last skb sent, ns.
    pub wstamp_ns: u64,
    pub in_flight: u32,
    pub cwnd: u32,
    pub mss: u32,
    /// `tp->snd_wnd`, bytes.
    pub snd_wnd: u32,
    /// `tcp_wnd_end(tp) - TCP_SKB_CB(skb)->seq`, bytes.
    pub send_win: u64,
    /// `tcp_tso_segs()`.
    pub max_segs: u32,
    /// The skb's length and whether it is the write queue's tail.
    pub skb_len: u64,
    pub skb_is_tail: bool,
    /// FIN or EOR on the skb (tcplab sends neither with data).
    pub skb_fin_or_eor: bool,
    /// `tcp_rtx_queue_head(sk)->tstamp` (its departure time), ns; None when empty.
    pub rtx_head_tstamp_ns: Option<u64>,
    /// `tp->srtt_us` (<< 3).
    pub srtt_us: u32,
    /// `sysctl_tcp_tso_win_divisor`.
    pub win_divisor: u32,
}

/// What `tcp_tso_should_defer()` decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Defer {
    /// Send now (`goto send_now`).
    Send,
    /// Wait, cwnd-limited (`*is_cwnd_limited = true`).
    CwndLimited,
    /// Wait, receive-window-limited (`*is_rwnd_limited = true`).
    RwndLimited,
    /// Wait, application-limited (the tail skb may still grow).
    AppLimited,
}

/// Linux v6.12 net/ipv4/tcp_output.c: tcp_tso_should_defer() ("a kind of TSO Nagle
/// test", John Heffner): hold back an skb of several segments that cannot go out whole,
/// hoping the next ACK opens room for a larger one. Called by tcp_write_xmit() for every
/// skb of more than one segment unless `push_one` (loss probes, tcp_push_one()); there is
/// no exemption for paced sockets or BBR (v6.12 has none: BBR's skb size comes in through
/// `max_segs`, `bbr_tso_segs_goal()`/`min_tso_segs`).
pub fn tso_should_defer(i: DeferInputs) -> Defer {
    // Never in Recovery or Loss (CWR and Disorder may defer: TCP_CA_CWR < TCP_CA_Recovery).
    if i.ca_state as u8 >= CaState::Recovery as u8 {
        return Defer::Send;
    }
    // Avoid bursty behavior by allowing defer only if the last write was recent (1 ms);
    // tcp_wstamp_ns may be in the future (EDT, paced).
    if i.clock_ns as i64 - i.wstamp_ns as i64 - 1_000_000 > 0 {
        return Defer::Send;
    }
    // The caller guarantees cwnd > in_flight (tcp_cwnd_test() gave a quota).
    let cong_win = (i.cwnd.saturating_sub(i.in_flight) as u64) * i.mss as u64;
    let limit = i.send_win.min(cong_win);
    // If a full-sized TSO skb can be sent, do it.
    if limit >= i.max_segs as u64 * i.mss as u64 {
        return Defer::Send;
    }
    // Middle in queue won't get any more data, full sendable already?
    if !i.skb_is_tail && limit >= i.skb_len {
        return Defer::Send;
    }
    if i.win_divisor != 0 {
        // If at least some fraction of a window is available, just use it.
        let chunk = (i.snd_wnd as u64).min(i.cwnd as u64 * i.mss as u64) / i.win_divisor as u64;
        if limit >= chunk {
            return Defer::Send;
        }
    } else if limit > 3 * i.mss as u64 {
        // tcp_max_tso_deferred_mss(): 3, "try not to defer past a single ACK".
        return Defer::Send;
    }
    let Some(head) = i.rtx_head_tstamp_ns else {
        return Defer::Send;
    };
    // If the next ACK is likely to come too late, i.e. in more than min(1 ms, srtt / 2),
    // do not defer: the stable fix 295ce1eb36ae ("tcp: fix tcp_tso_should_defer() vs large
    // RTT", v6.18, in the 6.12 and 6.1 stable series). v6.12.0 deferred unless the rtx
    // queue's head was sent less than srtt / 2 ago, which on long paths held flows "stuck
    // in a small cwnd mode, regardless of the congestion control" (its commit message):
    // the skb waits for an ACK up to an RTT away with cwnd not filled meanwhile (CUBIC at
    // 5 Mbit/s, 100 ms: in flight one below cwnd at a third of the samples where the
    // kernel's always equals it; docs/kernel-pin.md departure 4).
    let srtt_ns = 125 * i.srtt_us as u64; // (NSEC_PER_USEC >> 3) * srtt_us
    let how_far_is_the_ack = (head + srtt_ns) as i64 - i.clock_ns as i64;
    let threshold = (srtt_ns >> 1).min(1_000_000);
    if how_far_is_the_ack - threshold as i64 > 0 {
        return Defer::Send;
    }
    // Advisable to defer: cwnd-limited, rwnd-limited or application-limited.
    if cong_win < i.send_win {
        if cong_win <= i.skb_len {
            return Defer::CwndLimited;
        }
    } else if i.send_win <= i.skb_len {
        return Defer::RwndLimited;
    }
    // If this packet won't get more data, do not wait.
    if i.skb_fin_or_eor {
        return Defer::Send;
    }
    Defer::AppLimited
}

/// Linux v6.12 net/ipv4/tcp_output.c: tcp_mss_split_point(): where tcp_write_xmit() cuts
/// the skb at the send head (`tso_fragment()`): `max_segs` (the cwnd quota, already at most
/// `tcp_tso_segs()`) MSS when that fits the window and more data follows; else what the
/// window and the skb allow, a trailing part-MSS included unless Nagle holds it
/// (tcp_nagle_check(): corked, or, Nagle on, a part-MSS skb unacknowledged: the Minshall
/// check).
pub fn mss_split_point(
    skb_len: u64,
    skb_is_tail: bool,
    window: u64,
    mss: u32,
    max_segs: u32,
    nagle_holds_partial: bool,
) -> u64 {
    let max_len = mss as u64 * max_segs as u64;
    if max_len <= window && !skb_is_tail {
        return max_len;
    }
    let needed = skb_len.min(window);
    if max_len <= needed {
        return max_len;
    }
    let partial = needed % mss as u64;
    if partial != 0 && nagle_holds_partial {
        return needed - partial;
    }
    needed
}

/// One turn of tcp_write_xmit()'s loop with `tso`.
enum TsoStep {
    /// An skb of this many bytes went out.
    Sent(u64),
    /// Deferred by `tcp_tso_should_defer()`.
    Deferred(Defer),
    /// TSQ, or a local drop.
    Stop,
    /// Nagle's test holds the part-MSS tail skb (tcp_nagle_test()).
    NagleHeld,
}

impl TcpSocket {
    /// `tcp_xmit_size_goal()` for this socket (`tcp_send_mss()`).
    pub fn size_goal(&self) -> u64 {
        xmit_size_goal(
            self.tp.mss_cache,
            self.tp.max_window,
            self.tp.sk_gso_max_size,
            GSO_MAX_SEGS,
        ) as u64
    }

    /// With `tso`: the skb at the send head after tcp_grow_skb() (Linux v6.12
    /// net/ipv4/tcp_output.c) toward `want_end` (`cwnd_quota * mss_now` bytes from
    /// `snd_nxt`), as `(head_end, next_end)`, the nominal ends of the head skb and of the one
    /// after it (see `wq_head_end`).
    ///
    /// tcplab keeps the write queue as a byte range plus these two boundaries: the skbs
    /// after the next are taken as size_goal skbs (tcp_sendmsg_locked() fills the tail skb
    /// to size_goal before it starts another); a tail skb shorter than size_goal is filled
    /// by later writes (its nominal end is `start + size_goal`). Simplification: a change
    /// of size_goal (the peer's max_window growing) moves the boundaries of skbs already
    /// queued, which in Linux keep the size they were built with.
    fn grow_send_head(&self, want_end: u64, sg: u64) -> (u64, u64) {
        let nxt = self.tp.snd_nxt;
        let ws = self.tp.write_seq;
        let mut h = if self.wq_head_end > nxt {
            self.wq_head_end
        } else {
            nxt + sg
        };
        let mut n = if self.wq_next_end > h {
            self.wq_next_end
        } else {
            h + sg
        };
        // tcp_grow_skb(): not the last skb, bytes missing: move up to that many from the
        // next skb (one skb, never further).
        if h < ws && want_end > h {
            let next_real = n.min(ws);
            h += (want_end - h).min(next_real - h);
            if h == next_real {
                // The next skb is eaten whole (tcp_eat_one_skb()); if it was the tail, the
                // head is now the tail, filled by later writes while shorter than size_goal.
                if n >= ws {
                    h = ws.max(nxt + sg);
                }
                n = h + sg;
            }
        }
        // MSG_EOR (`eor_marks`): the skb holding a record's end stops there, takes nothing
        // from the next one and is filled by no later write (tcp_skb_can_collapse()).
        let eor = self.eor_marks.next_after(nxt);
        if eor != u64::MAX {
            if h > eor {
                (h, n) = (eor, eor + sg);
            } else if n > eor && h < eor {
                n = eor;
            }
        }
        (h, n)
    }

    /// With `tso`, one turn of Linux v6.12 tcp_write_xmit() from tcp_grow_skb() on: the
    /// send-window test was passed by the caller (first MSS within the window), then
    /// tcp_tso_should_defer() for an skb of several segments (not for `push_one`),
    /// tcp_mss_split_point() + tso_fragment(), tcp_small_queue_check() on the cut skb, and
    /// the transmission as one skb.
    fn xmit_tso_skb(&mut self, ctx: &mut Ctx, quota: u32, max_segs: u32, push_one: u8) -> TsoStep {
        let mss = self.tp.mss_cache;
        let seq = self.tp.snd_nxt;
        let ws = self.tp.write_seq;
        let sg = self.size_goal();
        let (h, n) = self.grow_send_head(seq + quota as u64 * mss as u64, sg);
        self.wq_head_end = h;
        self.wq_next_end = n;
        let skb_is_tail = h >= ws;
        let skb_len = h.min(ws) - seq;
        let wnd_end = self.tp.snd_una + self.tp.snd_wnd as u64;
        let window = wnd_end.saturating_sub(seq);
        let segs = skb_len.div_ceil(mss as u64);
        // The tail skb carrying the FIN (`tcp::close`) is neither deferred nor held by
        // Nagle (tcp_tso_should_defer() and tcp_nagle_test() pass a FIN skb).
        let fin_tail = skb_is_tail && self.fin_rides_on(ws);
        if segs > 1 && push_one == 0 && !fin_tail {
            let d = tso_should_defer(DeferInputs {
                ca_state: self.tp.ca_state,
                clock_ns: self.tp.tcp_clock_cache,
                wstamp_ns: self.tp.tcp_wstamp_ns,
                in_flight: self.tp.packets_in_flight(),
                cwnd: self.tp.snd_cwnd,
                mss,
                snd_wnd: self.tp.snd_wnd,
                send_win: window,
                max_segs,
                skb_len,
                skb_is_tail,
                skb_fin_or_eor: false,
                rtx_head_tstamp_ns: self.rtx.front().map(|s| s.skb_mstamp_ns),
                srtt_us: self.tp.srtt_us,
                win_divisor: self.tso_win_divisor,
            });
            if d != Defer::Send {
                return TsoStep::Deferred(d);
            }
        }
        // tcp_nagle_check(partial, tp, nonagle) with tp->nonagle (0 unless TCP_NODELAY):
        // packets out and tcp_minshall_check() (a part-MSS skb sent, unacked). A loss probe
        // or tcp_push_one() pushes (TCP_NAGLE_OFF / TCP_NAGLE_PUSH): no Nagle.
        let minshall = self.tp.snd_sml > self.tp.snd_una && self.tp.snd_sml <= seq;
        // tcp_nagle_check(): corked (TCP_CORK, or send(MSG_MORE)'s push), or Nagle on with
        // a part-MSS skb unacknowledged; TCP_NAGLE_PUSH (`push_force`) passes both.
        let nagle = !fin_tail
            && push_one == 0
            && !self.push_force
            && (self.corked
                || self.push_cork
                || (!self.nodelay && self.tp.packets_out > 0 && minshall));
        // tcp_write_xmit(): an skb of one segment takes tcp_nagle_test() instead of the TSO
        // deferral; only the last skb is tested with the socket's nonagle (the others
        // with TCP_NAGLE_PUSH), and it is held if it is short of an MSS.
        if segs <= 1 && skb_is_tail && skb_len < mss as u64 && nagle {
            return TsoStep::NagleHeld;
        }
        let limit = if segs > 1 {
            mss_split_point(skb_len, skb_is_tail, window, mss, quota, nagle)
        } else {
            mss as u64
        };
        let len = skb_len.min(limit);
        if len == 0 || self.small_queue_check(len, 0) {
            return TsoStep::Stop;
        }
        // __tcp_transmit_skb: the skb departs at max(wstamp, now).
        self.tp.tcp_wstamp_ns = self.tp.tcp_wstamp_ns.max(self.tp.tcp_clock_cache);
        let edt = self.tp.tcp_wstamp_ns;
        if !self.send_new_skb(ctx, seq, seq + len, edt) {
            return TsoStep::Stop;
        }
        // tcp_minshall_update(): an skb shorter than its segments' MSS.
        if len % mss as u64 != 0 {
            self.tp.snd_sml = seq + len;
        }
        // The write queue after tso_fragment() and tcp_event_new_data_sent().
        if seq + len < h.min(ws) {
            // The rest of the head skb stays at the send head (a tail rest fills to size_goal).
            if skb_is_tail {
                self.wq_head_end = 0;
            }
        } else if skb_is_tail {
            self.wq_head_end = 0;
            self.wq_next_end = 0;
        } else {
            self.wq_head_end = n;
            self.wq_next_end = 0;
        }
        TsoStep::Sent(len)
    }

    /// `tcp_needs_internal_pacing()`.
    #[inline]
    fn needs_internal_pacing(&self) -> bool {
        self.tp.sk_pacing_status == PacingStatus::Needed
    }

    /// `tcp_pacing_check()`: true if the pacing timer holds transmission.
    fn pacing_check(&mut self) -> bool {
        if !self.needs_internal_pacing() {
            return false;
        }
        if self.tp.tcp_wstamp_ns <= self.tp.tcp_clock_cache {
            return false;
        }
        if self.pacing_deadline_ns == NEVER {
            self.pacing_deadline_ns = self.tp.tcp_wstamp_ns;
        }
        true
    }

    /// `tcp_tso_segs()`: segments per burst (per skb with `offload: {tso: on}`).
    pub(crate) fn tso_segs(&self) -> u32 {
        let min_tso = self
            .cc
            .min_tso_segs(&self.tp)
            .unwrap_or(self.cfg.tcp_min_tso_segs);
        tso_segs(
            TsoInputs {
                pacing_rate: self.tp.sk_pacing_rate,
                pacing_shift: self.tp.sk_pacing_shift,
                min_rtt_us: self.tp.min_rtt_us(),
                tso_rtt_log: self.cfg.tcp_tso_rtt_log,
                gso_max_size: self.tp.sk_gso_max_size,
                mss: self.tp.mss_cache,
            },
            min_tso,
            GSO_MAX_SEGS,
        )
    }

    /// `tcp_cwnd_test()`: how many segments the cwnd allows in one skb.
    #[inline]
    fn cwnd_test(&self) -> u32 {
        let in_flight = self.tp.packets_in_flight();
        let cwnd = self.tp.snd_cwnd;
        if in_flight >= cwnd {
            return 0;
        }
        // For better scheduling, ensure we have at least 2 GSO packets in flight.
        let halfcwnd = (cwnd >> 1).max(1);
        halfcwnd.min(cwnd - in_flight)
    }

    /// `tcp_small_queue_check()`: true if TSQ throttles this socket.
    fn small_queue_check(&mut self, burst_bytes: u64, factor: u32) -> bool {
        let truesize = burst_bytes + SKB_TRUESIZE_OVERHEAD as u64;
        let mut limit = (2 * truesize).max(self.tp.sk_pacing_rate >> self.tp.sk_pacing_shift);
        if self.tp.sk_pacing_status == PacingStatus::None {
            limit = limit.min(self.cfg.tcp_limit_output_bytes);
        }
        limit <<= factor;
        if self.wmem_alloc_bytes > limit {
            // Always send skb if rtx queue is empty or has one skb
            // (tcp_rtx_queue_empty_or_single_skb(); tso off: one burst's segments).
            let single = if self.gso_skbs {
                self.rtx.empty_or_single_skb()
            } else {
                self.rtx.len() as u32 <= self.tso_segs()
            };
            if single {
                return false;
            }
            self.tsq_throttled = true;
            return true;
        }
        false
    }

    /// `tcp_update_skb_after_send()`: advance the pacing clock by the burst just sent.
    fn update_after_send(&mut self, burst_bytes: u64, prior_wstamp: u64) {
        if self.tp.sk_pacing_status != PacingStatus::None {
            let rate = self.tp.sk_pacing_rate;
            // Original sch_fq does not pace first 10 MSS.
            if rate != u64::MAX && rate != 0 && self.tp.data_segs_out >= 10 {
                // u64 arithmetic whenever the product fits (any burst below 18 GB): a
                // 128-bit division is a library call, and this runs once per burst.
                let mut len_ns = match burst_bytes.checked_mul(NSEC_PER_SEC) {
                    Some(p) => p / rate,
                    None => (burst_bytes as u128 * NSEC_PER_SEC as u128 / rate as u128) as u64,
                };
                let credit = self.tp.tcp_wstamp_ns - prior_wstamp;
                // Take into account OS jitter.
                len_ns -= (len_ns / 2).min(credit);
                self.tp.tcp_wstamp_ns += len_ns;
            }
        }
    }

    /// `tcp_event_data_sent()`: also counts a reply toward ping-pong mode (`tcp::push`).
    fn event_data_sent(&mut self) {
        if self.tp.packets_in_flight() == 0 {
            self.cc.cwnd_event(&mut self.tp, CaEvent::TxStart);
        }
        let now_j = self.tp.jiffies32();
        self.tp.lsndtime = now_j;
        self.rcv.data_sent(now_j);
    }

    /// `tcp_slow_start_after_idle_check()` + `tcp_cwnd_restart()`: on a write after
    /// more than an RTO idle, restart from the initial window (not for `cong_control`).
    pub fn slow_start_after_idle_check(&mut self) {
        if !self.cfg.tcp_slow_start_after_idle
            || self.tp.packets_out > 0
            || self.cc.has_cong_control()
        {
            return;
        }
        let mut delta = self.tp.jiffies32().wrapping_sub(self.tp.lsndtime) as i32;
        let rto = self.tp.icsk_rto as i32;
        if delta <= rto {
            return;
        }
        // tcp_cwnd_restart()
        let restart_cwnd = self.cfg.initial_cwnd.min(self.tp.snd_cwnd);
        let mut cwnd = self.tp.snd_cwnd;
        self.cc.cwnd_event(&mut self.tp, CaEvent::CwndRestart);
        self.tp.snd_ssthresh = self.tp.current_ssthresh();
        loop {
            delta -= rto;
            if delta <= 0 || cwnd <= restart_cwnd {
                break;
            }
            cwnd >>= 1;
        }
        self.tp.set_cwnd(cwnd.max(restart_cwnd));
        self.tp.snd_cwnd_stamp = self.tp.jiffies32();
        self.tp.snd_cwnd_used = 0;
    }

    /// `tcp_cwnd_validate()`.
    fn cwnd_validate(&mut self, is_cwnd_limited: bool) {
        let tp = &mut self.tp;
        // Track the strongest available signal of the degree to which the cwnd is fully
        // utilized.
        if tp.snd_una >= tp.cwnd_usage_seq
            || is_cwnd_limited
            || (!tp.is_cwnd_limited && tp.packets_out > tp.max_packets_out)
        {
            tp.is_cwnd_limited = is_cwnd_limited;
            tp.max_packets_out = tp.packets_out;
            tp.cwnd_usage_seq = tp.snd_nxt;
        }
        if tp.is_cwnd_limited() {
            // Network is fed fully.
            tp.snd_cwnd_used = 0;
            tp.snd_cwnd_stamp = tp.jiffies32();
        } else {
            // Network starves.
            if tp.packets_out > tp.snd_cwnd_used {
                tp.snd_cwnd_used = tp.packets_out;
            }
            if self.cfg.tcp_slow_start_after_idle
                && tp.jiffies32().wrapping_sub(tp.snd_cwnd_stamp) as i32 >= tp.icsk_rto as i32
                && !tp.ca_has_cong_control
            {
                // tcp_cwnd_application_limited(): RFC 2861, decay cwnd to what was used.
                if tp.ca_state == CaState::Open {
                    let win_used = tp.snd_cwnd_used.max(crate::tcp::sock::TCP_INIT_CWND);
                    if win_used < tp.snd_cwnd {
                        tp.snd_ssthresh = tp.current_ssthresh();
                        tp.snd_cwnd = (tp.snd_cwnd + win_used) >> 1;
                    }
                    tp.snd_cwnd_used = 0;
                }
                tp.snd_cwnd_stamp = tp.jiffies32();
            }
            // The following conditions together indicate the starvation is caused by
            // insufficient sender buffer: not cwnd-limited (this branch), everything
            // written was sent, and the application is blocked on the buffer
            // (SOCK_NOSPACE).
            if tp.snd_nxt >= tp.write_seq && self.sndbuf_nospace {
                self.chrono_start(ChronoType::SndbufLimited);
            }
        }
    }

    /// Send one new-data segment `[seq, end_seq)` as part of a burst departing at
    /// `edt_ns`; returns false on a local drop.
    /// `gso_tail`: not the first segment of its burst (see `flags::GSO_TAIL`).
    fn send_new_segment(
        &mut self,
        ctx: &mut Ctx,
        seq: u64,
        end_seq: u64,
        edt_ns: u64,
        gso_tail: bool,
    ) -> bool {
        let mut f = if gso_tail {
            crate::packet::flags::GSO_TAIL
        } else {
            0
        };
        let psh = self.push_marks.covers(seq, end_seq) || self.push_force_psh;
        if psh {
            f |= crate::packet::flags::PSH;
        }
        if !self.transmit(ctx, seq, end_seq, f) {
            self.enter_cwr();
            return false;
        }
        let id = self.rtx.end_id();
        self.new_segment_sent(ctx, seq, end_seq, edt_ns);
        self.pushed_skb_sent(end_seq, psh);
        if self.gso_skbs {
            self.rtx.mark_skb_head(id);
        }
        true
    }

    /// Send new data `[seq, end_seq)` as one TSO/GSO skb of `segs` segments of `mss`
    /// (`offload: {tso: on}`); returns false on a local drop (the whole skb: the qdisc
    /// takes or refuses it as one unit). Each segment then joins the retransmit queue as
    /// an entry of its own: every
    /// segment of an skb is sent at the same instant, so the per-segment delivery-rate
    /// state equals the skb's (`tcp_rate_skb_sent()` resets only when nothing is out).
    fn send_new_skb(&mut self, ctx: &mut Ctx, seq: u64, end_seq: u64, edt_ns: u64) -> bool {
        let mss = self.tp.mss_cache as u64;
        let segs = (end_seq - seq).div_ceil(mss) as u32;
        // tcp_mark_push() left PSH on the skb holding a write's end (`tcp::push`).
        let psh = self.push_marks.covers(seq, end_seq);
        let mut f = if psh { crate::packet::flags::PSH } else { 0 };
        // tcp_send_fin() put the FIN on the write queue's tail skb (`tcp::close`).
        let fin = self.fin_rides_on(end_seq);
        if fin {
            f |= crate::packet::flags::FIN;
        }
        if !self.transmit_skb(ctx, seq, end_seq, f, mss as u32, segs) {
            self.enter_cwr();
            return false;
        }
        self.fin.fin_sent |= fin;
        let head_id = self.rtx.end_id();
        let mut s = seq;
        while s < end_seq {
            let e = (s + mss).min(end_seq);
            self.new_segment_sent(ctx, s, e, edt_ns);
            s = e;
        }
        self.pushed_skb_sent(end_seq, psh);
        self.rtx.mark_skb_head(head_id);
        true
    }

    /// New data up to `end_seq` went out as an skb, marked PSH by a write's end (`psh`,
    /// `tcp::push`) or not, its entries already queued: the write marks it covered are spent,
    /// and its last entry keeps the mark, as `tcp_fragment()` gives PSH to an skb's end.
    fn pushed_skb_sent(&mut self, end_seq: u64, psh: bool) {
        self.push_marks.sent_through(end_seq);
        self.eor_marks.sent_through(end_seq);
        if psh {
            let last = self.rtx.end_id() - 1;
            self.rtx.get_mut(last).psh = true;
        }
    }

    /// What follows a successful transmission of new data `[seq, end_seq)` (one segment).
    fn new_segment_sent(&mut self, ctx: &mut Ctx, seq: u64, end_seq: u64, edt_ns: u64) {
        // __tcp_transmit_skb: delivery-rate state is recorded after a successful send,
        // before packets_out counts the skb (so the first skb of a flight resets it).
        let tx = rate_skb_sent(&mut self.tp, edt_ns / 1000);
        self.event_data_sent();
        self.tp.data_segs_out += 1;
        self.tp.bytes_sent += end_seq - seq;
        self.tp.inc(Mib::TcpOutSegs);
        // tcp_event_new_data_sent()
        let prior_packets = self.tp.packets_out;
        self.tp.snd_nxt = end_seq;
        self.rtx.push_sent(seq, end_seq, edt_ns, tx);
        self.tp.packets_out += 1;
        if prior_packets == 0 || self.xmit_timer == XmitTimer::LossProbe {
            self.rearm_rto(ctx.now_ns);
        }
    }

    /// `tcp_push_pending_frames()` -> `tcp_write_xmit(sk, mss, nonagle, push_one = 0)`.
    pub fn push_pending_frames(&mut self, ctx: &mut Ctx) {
        self.write_xmit(ctx, 0);
    }

    /// `tcp_write_xmit()`; `push_one == 2` is a loss probe (may exceed cwnd by one).
    pub fn write_xmit(&mut self, ctx: &mut Ctx, push_one: u8) -> u32 {
        if self.state != ConnState::Established {
            return 0;
        }
        self.app_fill(ctx.now_ns);
        let mss = self.tp.mss_cache as u64;
        let mut sent_pkts = 0u32;
        let mut is_cwnd_limited = false;
        let mut is_rwnd_limited = false;
        while self.tp.snd_nxt < self.tp.write_seq {
            if self.pacing_check() {
                break;
            }
            let mut cwnd_quota = self.cwnd_test();
            if cwnd_quota == 0 {
                if push_one == 2 {
                    // Force out a loss probe pkt.
                    cwnd_quota = 1;
                } else {
                    is_cwnd_limited = true;
                    break;
                }
            }
            let seg_end = (self.tp.snd_nxt + mss).min(self.tp.write_seq);
            if seg_end > self.tp.snd_una + self.tp.snd_wnd as u64 {
                // tcp_snd_wnd_test() failed: receiver-window limited.
                is_rwnd_limited = true;
                break;
            }
            let max_segs = self.tso_segs();
            let burst_segs = cwnd_quota.min(max_segs);
            // The CPU cost of packets (`host::cpu`): Linux's loop builds the next skb only
            // once the CPU has done the last one's transmit path; tcplab's loop runs at one
            // instant, so it waits here for the host's CPU (woken by `sim`). No-op without
            // a `tx_skb` cost. (Checked before TSQ and TSO deferral: with a cost, the
            // socket first waits for its CPU, then takes those tests as it resumes.)
            if ctx.net.cpu_throttle(self.node, self.ep, self.cpu_throttled) {
                self.cpu_throttled = true;
                break;
            }
            let prior_wstamp = self.tp.tcp_wstamp_ns;
            let mut sent_bytes = 0u64;
            if self.gso_skbs {
                match self.xmit_tso_skb(ctx, burst_segs, max_segs, push_one) {
                    TsoStep::Sent(n) => {
                        sent_bytes = n;
                        sent_pkts += n.div_ceil(mss) as u32;
                    }
                    TsoStep::Stop | TsoStep::NagleHeld => break,
                    TsoStep::Deferred(Defer::CwndLimited) => {
                        is_cwnd_limited = true;
                        break;
                    }
                    TsoStep::Deferred(Defer::RwndLimited) => {
                        is_rwnd_limited = true;
                        break;
                    }
                    TsoStep::Deferred(_) => break,
                }
            } else {
                let burst_bytes =
                    ((burst_segs as u64) * mss).min(self.tp.write_seq - self.tp.snd_nxt);
                if self.small_queue_check(burst_bytes, 0) {
                    break;
                }
                // __tcp_transmit_skb: the burst departs at max(wstamp, now).
                self.tp.tcp_wstamp_ns = self.tp.tcp_wstamp_ns.max(self.tp.tcp_clock_cache);
                let edt = self.tp.tcp_wstamp_ns;
                for k in 0..burst_segs {
                    let seq = self.tp.snd_nxt;
                    let end = (seq + mss).min(self.tp.write_seq);
                    if end <= seq || end > self.tp.snd_una + self.tp.snd_wnd as u64 {
                        break;
                    }
                    if !self.send_new_segment(ctx, seq, end, edt, k > 0) {
                        break;
                    }
                    sent_bytes += end - seq;
                    sent_pkts += 1;
                }
            }
            if sent_bytes == 0 {
                break;
            }
            self.update_after_send(sent_bytes, prior_wstamp);
            if push_one != 0 {
                break;
            }
        }
        if self.fin.fin_queued && !self.fin.fin_sent {
            self.fin_alone_if_due(ctx);
        }
        if is_rwnd_limited {
            self.chrono_start(ChronoType::RwndLimited);
        } else {
            self.chrono_stop(ChronoType::RwndLimited);
        }
        is_cwnd_limited |= self.tp.packets_in_flight() >= self.tp.snd_cwnd;
        if sent_pkts > 0 || is_cwnd_limited {
            self.cwnd_validate(is_cwnd_limited);
        }
        if sent_pkts > 0 {
            if self.tp.in_cwnd_reduction() {
                self.prr_out += sent_pkts;
            }
            // Send one loss probe per tail loss episode.
            if push_one != 2 {
                self.schedule_loss_probe(ctx.now_ns, false);
            }
        } else if self.tp.packets_out == 0
            && self.tp.snd_nxt < self.tp.write_seq
            && self.xmit_timer == XmitTimer::None
            && self.pacing_deadline_ns == NEVER
            && !self.tsq_throttled
            && !self.cpu_throttled
        {
            // tcp_check_probe_timer(): nothing in flight and nothing sent (zero window or
            // a local drop): probe later.
            let when = self.probe0_base();
            self.reset_xmit_timer(XmitTimer::Probe0, ctx.now_ns, when);
        }
        sent_pkts
    }

    /// `tcp_probe0_base()`: `max(icsk_rto, TCP_RTO_MIN)`, jiffies.
    fn probe0_base(&self) -> u32 {
        self.tp.icsk_rto.max(self.tp.hz() / 5)
    }

    /// `tcp_probe0_when(sk, tcp_rto_max(sk))`: the base doubled per backoff (at most
    /// `ilog2(TCP_RTO_MAX / TCP_RTO_MIN) + 1` = 10 times), capped at TCP_RTO_MAX.
    fn probe0_when(&self) -> u32 {
        let backoff = self.icsk_backoff.min(10);
        let when = (self.probe0_base() as u64) << backoff;
        when.min(self.tp.tcp_rto_max() as u64) as u32
    }

    /// `tcp_ack_probe()` (Linux v6.12 net/ipv4/tcp_input.c), for an ACK that found
    /// nothing in flight: if the window now takes the next segment, the zero-window probe
    /// timer and its backoff are cleared (the send that follows arms the RTO); otherwise
    /// the probe timer restarts from now.
    pub fn ack_probe(&mut self, now_ns: u64) {
        if self.tp.snd_nxt >= self.tp.write_seq {
            return; // no send head
        }
        let head_end = (self.tp.snd_nxt + self.tp.mss_cache as u64).min(self.tp.write_seq);
        if head_end <= self.tp.snd_una + self.tp.snd_wnd as u64 {
            self.icsk_backoff = 0;
            if self.xmit_timer == XmitTimer::Probe0 {
                self.clear_xmit_timer();
            }
        } else {
            let when = self.probe0_when();
            self.reset_xmit_timer(XmitTimer::Probe0, now_ns, when);
        }
    }

    /// The zero-window probe timer fired (`tcp_probe_timer()`, Linux v6.12
    /// net/ipv4/tcp_timer.c). Nothing is done if data is in flight (its ACKs or RTO will
    /// move things) or nothing waits to be sent; else a probe goes out
    /// (`tcp_send_probe0`).
    ///
    /// With TCP_USER_TIMEOUT, probing stops (the connection is dropped, `sk_err`
    /// ETIMEDOUT) once that time has passed since the first probe timer (`icsk_probes_tstamp`).
    /// Not modelled: aborting the connection once `icsk_probes_out` reaches `tcp_retries2`
    /// (15) unanswered probes (any ACK resets the count, so only a dead path gets there),
    /// and `TCPACKSkippedSeq` for a probe's answer that the receiver rate-limits.
    pub fn probe_timer(&mut self, ctx: &mut Ctx) {
        self.app_fill(ctx.now_ns);
        if self.tp.packets_out > 0 || self.tp.snd_nxt >= self.tp.write_seq {
            self.probes_out = 0;
            self.probes_tstamp_ns = 0;
            return;
        }
        if self.probes_tstamp_ns == 0 {
            self.probes_tstamp_ns = ctx.now_ns;
        } else if self.user_timeout_ms != 0
            && ctx.now_ns - self.probes_tstamp_ns >= self.user_timeout_ms as u64 * 1_000_000
        {
            self.write_err_timeout();
            return;
        }
        self.send_probe0(ctx);
    }

    /// `tcp_send_probe0()`: probe with `tcp_write_wakeup()`, then re-arm the probe timer
    /// with exponential backoff (`tcp_probe0_when`), or after TCP_RESOURCE_PROBE_INTERVAL
    /// (HZ/2) if the probe was dropped locally.
    fn send_probe0(&mut self, ctx: &mut Ctx) {
        let sent = self.write_wakeup(ctx);
        if self.tp.packets_out > 0 || self.tp.snd_nxt >= self.tp.write_seq {
            // Cancel probe timer, if it is not required.
            self.icsk_backoff = 0;
            self.probes_out = 0;
            self.probes_tstamp_ns = 0;
            return;
        }
        self.probes_out += 1;
        let when = if sent {
            // tcp_retries2 = 15 bounds the backoff count.
            if self.icsk_backoff < 15 {
                self.icsk_backoff += 1;
            }
            self.probe0_when()
        } else {
            self.tp.hz() / 2
        };
        self.reset_xmit_timer(XmitTimer::Probe0, ctx.now_ns, when);
    }

    /// `tcp_write_wakeup(sk, LINUX_MIB_TCPWINPROBE)` (Linux v6.12 net/ipv4/tcp_output.c):
    /// if the peer's window opens before the next unsent byte, send what fits of one
    /// segment there (a window narrower than a segment: sender-side silly window
    /// avoidance held it back); else send a zero-window probe, `tcp_xmit_probe_skb()`: a
    /// bare ACK with the old sequence number `snd_una - 1`, which the receiver must answer
    /// with an ACK carrying its window. Returns false on a local drop.
    fn write_wakeup(&mut self, ctx: &mut Ctx) -> bool {
        let wnd_end = self.tp.snd_una + self.tp.snd_wnd as u64;
        let seq = self.tp.snd_nxt;
        if seq < self.tp.write_seq && seq < wnd_end {
            let end = (seq + self.tp.mss_cache as u64)
                .min(wnd_end)
                .min(self.tp.write_seq);
            let prior_wstamp = self.tp.tcp_wstamp_ns;
            self.tp.tcp_wstamp_ns = self.tp.tcp_wstamp_ns.max(self.tp.tcp_clock_cache);
            let edt = self.tp.tcp_wstamp_ns;
            // tcp_write_wakeup() sets PSH on what it sends.
            self.push_force_psh = true;
            let sent = self.send_new_segment(ctx, seq, end, edt, false);
            self.push_force_psh = false;
            if !sent {
                return false;
            }
            self.update_after_send(end - seq, prior_wstamp);
            return true;
        }
        // snd_una - 1 (tcplab's sequence space starts at 0, so a probe before any data
        // was acknowledged carries 0; a window cannot close before data arrived).
        let probe_seq = self.tp.snd_una.saturating_sub(1);
        let ok = self.transmit(ctx, probe_seq, probe_seq, 0);
        self.tp.inc(Mib::TcpOutSegs);
        self.tp.inc(Mib::TCPWinProbe);
        ok
    }

    /// `tcp_retransmit_skb()` / `__tcp_retransmit_skb()`; false if not sent.
    pub fn retransmit_skb(&mut self, ctx: &mut Ctx, id: u64) -> bool {
        self.retransmit_skb_inner(ctx, id, true)
    }

    fn retransmit_skb_inner(&mut self, ctx: &mut Ctx, id: u64, mark_retrans: bool) -> bool {
        self.retransmit_range(ctx, id, 1, mark_retrans)
    }

    /// Retransmit the `n` consecutive entries from `id` as one skb (`n > 1` only with
    /// `offload: {tso: on}`: a lost TSO skb, or the part of it the cwnd allows, which
    /// `__tcp_retransmit_skb()` cuts off with `tcp_fragment()` at `cur_mss * segs`).
    fn retransmit_range(&mut self, ctx: &mut Ctx, id: u64, n: u64, mark_retrans: bool) -> bool {
        let (seq, in_host) = {
            let s = self.rtx.get(id);
            (s.seq, s.in_host_queue)
        };
        let end_seq = self.rtx.get(id + n - 1).end_seq;
        if in_host > 0 {
            // skb_still_in_host_queue(): the original has not even left the host.
            self.tp.inc(Mib::TCPSpuriousRtxHostQueues);
            return false;
        }
        let prior_wstamp = self.tp.tcp_wstamp_ns;
        self.tp.tcp_wstamp_ns = self.tp.tcp_wstamp_ns.max(self.tp.tcp_clock_cache);
        let edt = self.tp.tcp_wstamp_ns;
        let mss = self.tp.mss_cache;
        // A marked skb's end keeps PSH (`tcp::push`); a run of more than one segment gets
        // it in transmit_skb().
        let mut f = crate::packet::flags::RETRANS;
        if self.rtx.get(id + n - 1).psh {
            f |= crate::packet::flags::PSH;
        }
        // The skb that carried the FIN carries it again (`tcp::close`).
        if self.fin.fin_sent && end_seq == self.tp.write_seq {
            f |= crate::packet::flags::FIN;
        }
        let ok = self.transmit_skb(ctx, seq, end_seq, f, mss, n as u32);
        if !ok {
            self.tp.tcp_wstamp_ns = prior_wstamp;
            self.enter_cwr();
        } else {
            for k in 0..n {
                let (s_seq, s_end) = {
                    let s = self.rtx.get(id + k);
                    (s.seq, s.end_seq)
                };
                self.tp.inc(Mib::TcpRetransSegs);
                self.tp.total_retrans += 1;
                self.tp.bytes_retrans += s_end - s_seq;
                self.tp.bytes_sent += s_end - s_seq;
                if k == 0 {
                    // tcp_event_data_sent(): once per skb.
                    self.event_data_sent();
                }
                self.tp.data_segs_out += 1;
                let tx = rate_skb_sent(&mut self.tp, edt / 1000);
                let s = self.rtx.get_mut(id + k);
                s.skb_mstamp_ns = edt;
                s.tx = tx;
                s.in_host_queue += 1;
                s.sacked |= TCPCB_EVER_RETRANS;
                self.rtx.ts_move_tail(id + k);
            }
            self.update_after_send(end_seq - seq, prior_wstamp);
            if self.gso_skbs {
                // __tcp_retransmit_skb() / tcp_send_loss_probe() cut what they send off the
                // rest of its skb (tcp_fragment()): the pieces are skbs of their own from
                // now on.
                self.rtx.split_before(id);
                self.rtx.split_before(id + n);
            }
            if mark_retrans {
                for k in 0..n {
                    self.rtx.get_mut(id + k).sacked |= TCPCB_RETRANS;
                    self.tp.retrans_out += 1;
                }
            }
        }
        if mark_retrans {
            // Save stamp of the first (attempted) retransmit.
            if self.retrans_stamp_ns == 0 {
                self.retrans_stamp_ns = edt.max(1);
            }
            if self.undo_retrans < 0 {
                self.undo_retrans = 0;
            }
            self.undo_retrans += n as i32;
        }
        ok
    }

    /// With `offload: {tso: on}`: how many entries from `id` (lost, neither SACKed nor
    /// retransmitted, none still in the host) one retransmitted skb takes: the rest of the
    /// skb `id` belongs to, at most `quota` segments (`__tcp_retransmit_skb()`: `segs =
    /// cwnd - packets_in_flight`, `tcp_fragment()` beyond `cur_mss * segs`). SACK and loss
    /// marking split skbs at these state changes in Linux (`tcp_match_skb_to_sack()`,
    /// `tcp_fragment()`), so a run of entries in one state within one sent skb is one skb.
    fn retransmit_run(&self, id: u64, quota: u64) -> u64 {
        let mut n = 1;
        while n < quota && id + n < self.rtx.end_id() {
            let s = self.rtx.get(id + n);
            if s.skb_head
                || s.in_host_queue > 0
                || s.sacked & (TCPCB_LOST | TCPCB_SACKED_ACKED | TCPCB_SACKED_RETRANS) != TCPCB_LOST
            {
                break;
            }
            n += 1;
        }
        n
    }

    /// `tcp_xmit_retransmit_queue()`: retransmit skbs marked lost, cwnd permitting.
    pub fn xmit_retransmit_queue(&mut self, ctx: &mut Ctx) {
        if self.tp.packets_out == 0 {
            return;
        }
        let rtx_head = self.rtx.front_id();
        let mut id = self.retransmit_hint.max(rtx_head);
        let mut hole_found = false;
        let mut rearm_timer = false;
        // Linux v6.12 tcp_xmit_retransmit_queue(): a retransmitted skb takes at most
        // tcp_tso_segs() segments, as a new one does.
        let max_segs = self.tso_segs() as i64;
        while id < self.rtx.end_id() {
            if self.pacing_check() {
                break;
            }
            if !hole_found {
                self.retransmit_hint = id;
            }
            let segs = self.tp.snd_cwnd as i64 - self.tp.packets_in_flight() as i64;
            if segs <= 0 {
                break;
            }
            let segs = segs.min(max_segs);
            let sacked = self.rtx.get(id).sacked;
            if self.tp.retrans_out >= self.tp.lost_out {
                break;
            } else if sacked & TCPCB_LOST == 0 {
                if !hole_found && sacked & (TCPCB_SACKED_RETRANS | TCPCB_SACKED_ACKED) == 0 {
                    hole_found = true;
                }
                id += 1;
                continue;
            }
            if sacked & (TCPCB_SACKED_ACKED | TCPCB_SACKED_RETRANS) != 0 {
                id += 1;
                continue;
            }
            let n = if self.gso_skbs {
                self.retransmit_run(id, segs as u64)
            } else {
                1
            };
            let len = self.rtx.get(id + n - 1).end_seq - self.rtx.get(id).seq;
            if self.small_queue_check(len, 1) {
                break;
            }
            if !self.retransmit_range(ctx, id, n, true) {
                break;
            }
            let m = if self.tp.ca_state != CaState::Loss {
                Mib::TCPFastRetrans
            } else {
                Mib::TCPSlowStartRetrans
            };
            for _ in 0..n {
                self.tp.inc(m);
            }
            if self.tp.in_cwnd_reduction() {
                self.prr_out += n as u32;
            }
            if id == rtx_head && self.xmit_timer != XmitTimer::ReoTimeout {
                rearm_timer = true;
            }
            id += n;
        }
        if rearm_timer {
            let rto = self.tp.icsk_rto;
            self.reset_xmit_timer(XmitTimer::Retrans, ctx.now_ns, rto);
        }
    }

    /// `tcp_send_loss_probe()`.
    pub fn send_loss_probe(&mut self, ctx: &mut Ctx) {
        if self.tp.packets_out == 0 && self.fin_outstanding() {
            return self.fin_loss_probe(ctx);
        }
        let sent = 'probe: {
            // At most one outstanding TLP.
            if self.tlp_high_seq != 0 {
                break 'probe false;
            }
            self.tlp_retrans = false;
            self.app_fill(ctx.now_ns);
            let mss = self.tp.mss_cache as u64;
            if self.tp.snd_nxt < self.tp.write_seq
                && (self.tp.snd_nxt + mss).min(self.tp.write_seq)
                    <= self.tp.snd_una + self.tp.snd_wnd as u64
            {
                let pcount = self.tp.packets_out;
                self.write_xmit(ctx, 2);
                break 'probe self.tp.packets_out > pcount;
            }
            // Retransmit the last segment.
            if self.rtx.is_empty() {
                self.clear_xmit_timer();
                return;
            }
            let last = self.rtx.end_id() - 1;
            if self.rtx.get(last).in_host_queue > 0 {
                break 'probe false;
            }
            if !self.retransmit_skb_inner(ctx, last, false) {
                break 'probe false;
            }
            self.tlp_retrans = true;
            true
        };
        if sent {
            // Record snd_nxt for loss detection.
            self.tlp_high_seq = self.tp.snd_nxt;
            self.tp.inc(Mib::TCPLossProbes);
            // Reset s.t. tcp_rearm_rto will restart timer from now.
            self.xmit_timer = XmitTimer::None;
        }
        self.rearm_rto(ctx.now_ns);
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{CcKind, FlowConfig, TcpConfig};
    use crate::tcp::socket::TcpSocket;

    fn socket(cc: CcKind, ssai: bool) -> TcpSocket {
        let flow = FlowConfig {
            tcp: TcpConfig {
                tcp_slow_start_after_idle: ssai,
                ..TcpConfig::default()
            },
            ..FlowConfig::new("f", 0, 1, cc)
        };
        let (mut c, _) = TcpSocket::pair(&flow, 0, 1, 1_000_000_000, u64::MAX, 1000, 1000);
        c.tp.snd_cwnd = 100;
        c.tp.snd_ssthresh = 80;
        c.tp.icsk_rto = 200;
        c.tp.lsndtime = 1000;
        c
    }

    /// Linux v6.12 tcp_ack_probe() / tcp_probe0_when(): an ACK that leaves the window
    /// closed restarts the probe timer at max(RTO, 200 ms) << backoff (backoff counted at
    /// most 10 times, the timer capped at TCP_RTO_MAX); one that opens room for the next
    /// segment clears the timer and the backoff.
    #[test]
    fn ack_probe_rearms_with_backoff_or_clears_when_the_window_opens() {
        use crate::tcp::socket::XmitTimer;
        let mut c = socket(CcKind::Cubic, false);
        let now = 5_000_000_000;
        c.tp.set_now(now);
        c.tp.snd_una = 100_000;
        c.tp.snd_nxt = 100_000;
        c.tp.write_seq = 200_000;
        c.tp.packets_out = 0;
        c.tp.snd_wnd = 0;
        c.icsk_backoff = 3;
        c.ack_probe(now);
        assert_eq!(c.xmit_timer, XmitTimer::Probe0);
        assert_eq!(
            c.xmit_deadline_ns,
            c.tp.clock().timer_deadline_ns(now, 200 << 3)
        );
        // A larger RTO is the base; the shift stops at 10 and the timer at 120 s.
        c.tp.icsk_rto = 300;
        c.icsk_backoff = 15;
        c.ack_probe(now);
        assert_eq!(
            c.xmit_deadline_ns,
            c.tp.clock().timer_deadline_ns(now, 120_000)
        );
        // A window narrower than the next segment: still probing.
        c.icsk_backoff = 1;
        c.tp.snd_wnd = 1000;
        c.ack_probe(now);
        assert_eq!(c.xmit_deadline_ns, c.tp.clock().timer_deadline_ns(now, 600));
        // Room for the next segment: timer and backoff cleared.
        c.tp.snd_wnd = 1448;
        c.ack_probe(now);
        assert_eq!(c.xmit_timer, XmitTimer::None);
        assert_eq!(c.icsk_backoff, 0);
    }

    #[test]
    fn idle_for_three_rtos_halves_cwnd_twice_then_stops_at_init_cwnd() {
        // tcp_cwnd_restart(): `while ((delta -= rto) > 0 && cwnd > restart) cwnd >>= 1`,
        // floored at the initial window; ssthresh = tcp_current_ssthresh() = max(ssthresh,
        // 3/4 cwnd).
        let mut c = socket(CcKind::Cubic, true);
        c.tp.set_now((1000 + 3 * 200 + 50) * 1_000_000); // idle 650 ms = 3.25 RTOs
        c.slow_start_after_idle_check();
        // delta 650 -> 450, 250, 50 (all > 0): three halvings, 100 -> 50 -> 25 -> 12.
        assert_eq!(c.tp.snd_cwnd, 12);
        assert_eq!(c.tp.snd_ssthresh, 80);
        let mut c = socket(CcKind::Cubic, true);
        c.tp.set_now((1000 + 20 * 200) * 1_000_000);
        c.slow_start_after_idle_check();
        assert_eq!(c.tp.snd_cwnd, 10);
    }

    #[test]
    fn no_restart_when_disabled_short_idle_or_bbr() {
        let mut c = socket(CcKind::Cubic, false);
        c.tp.set_now(10_000 * 1_000_000);
        c.slow_start_after_idle_check();
        assert_eq!(c.tp.snd_cwnd, 100);
        let mut c = socket(CcKind::Cubic, true);
        c.tp.set_now((1000 + 150) * 1_000_000); // idle shorter than one RTO
        c.slow_start_after_idle_check();
        assert_eq!(c.tp.snd_cwnd, 100);
        // BBR has cong_control: Linux skips the restart and lets BBR's idle_restart act.
        let mut c = socket(CcKind::Bbr, true);
        c.tp.set_now(10_000 * 1_000_000);
        c.slow_start_after_idle_check();
        assert_eq!(c.tp.snd_cwnd, 100);
    }

    /// Linux v6.12 tcp_tso_autosize(): `bytes = (rate >> 10) + (gso_max >> (min_rtt_us >> 9))`
    /// (the second term only while the shift is below 32), capped at `gso_max`, divided by
    /// the MSS, at least `min_tso_segs`. The table's values are worked from that formula.
    #[test]
    fn tso_autosize_follows_the_formula_over_rates_and_min_rtt() {
        use super::{tso_autosize, tso_segs, TsoInputs};
        let at = |rate_bps: u64, min_rtt_us: u32, gso_max: u32| TsoInputs {
            pacing_rate: rate_bps / 8,
            pacing_shift: 10,
            min_rtt_us,
            tso_rtt_log: 9,
            gso_max_size: gso_max,
            mss: 1448,
        };
        // (rate bit/s, min_rtt us, expected segments) with gso_max 65536.
        let table: &[(u64, u32, u32)] = &[
            // 10 Gbit/s: 1 ms is 1.22 MB, capped at 65536 -> 65536/1448 = 45.
            (10_000_000_000, 100_000, 45),
            // 100 Mbit/s, 100 ms: r = 195, no rtt term; 12207 B -> 8 segments.
            (100_000_000, 100_000, 8),
            // 100 Mbit/s, 2 ms: r = 3, 12207 + 8192 = 20399 -> 14.
            (100_000_000, 2_000, 14),
            // 100 Mbit/s, 600 us: r = 1, 12207 + 32768 = 44975 -> 31.
            (100_000_000, 600, 31),
            // 100 Mbit/s, 100 us: r = 0, 12207 + 65536 capped -> 45.
            (100_000_000, 100, 45),
            // 10 Mbit/s, 100 ms: 1220 B < 1 MSS -> min_tso_segs 2.
            (10_000_000, 100_000, 2),
            // 10 Mbit/s, 5 ms: r = 9, 1220 + 128 = 1348 -> 0 -> 2.
            (10_000_000, 5_000, 2),
            // 10 Mbit/s, 1 ms: r = 1, 1220 + 32768 = 33988 -> 23.
            (10_000_000, 1_000, 23),
            // No RTT sample yet (~0U): r = 2^23 - 1, no rtt term; 1 Gbit/s: 122070 -> 45.
            (1_000_000_000, u32::MAX, 45),
            // r = 31 is the last shift that adds (65536 >> 31 = 0 anyway); 1 Gbit/s 16 s.
            (1_000_000_000, 31 << 9, 45),
        ];
        for &(rate, rtt, want) in table {
            assert_eq!(
                tso_autosize(at(rate, rtt, 65536), 2),
                want,
                "rate {rate} min_rtt {rtt}"
            );
        }
        // sk_dst_gso_max_size(): GSO_LEGACY_MAX_SIZE - (MAX_TCP_HEADER + 1) = 65215:
        // 65215 / 1448 = 45 still; with a 1000-byte MSS, 65 against 65536's 65.
        assert_eq!(tso_autosize(at(10_000_000_000, 100, 65215), 2), 45);
        let small_mss = TsoInputs {
            mss: 1000,
            ..at(10_000_000_000, 100, 65215)
        };
        assert_eq!(tso_autosize(small_mss, 2), 65);
        // sk_pacing_shift 8 (a driver asking for 4 ms, e.g. wifi): 100 Mbit/s 100 ms ->
        // 48828 B -> 33.
        let shift8 = TsoInputs {
            pacing_shift: 8,
            ..at(100_000_000, 100_000, 65536)
        };
        assert_eq!(tso_autosize(shift8, 2), 33);
        // tcp_tso_rtt_log 0 switches the rtt term off past 32 us: 100 Mbit/s 100 us -> 8.
        let log0 = TsoInputs {
            tso_rtt_log: 0,
            ..at(100_000_000, 100, 65536)
        };
        assert_eq!(tso_autosize(log0, 2), 8);
        // BBR's min_tso_segs of 1 below 1.2 Mbit/s; gso_max_segs caps.
        assert_eq!(tso_autosize(at(1_000_000, 100_000, 65536), 1), 1);
        assert_eq!(tso_segs(at(10_000_000_000, 100, 65536), 2, 16), 16);
    }

    /// A socket state from which Linux v6.12 tcp_tso_should_defer() defers: Open, last
    /// write 0.5 ms ago, cwnd 30 with 26 in flight (4 MSS of room, under a third of the
    /// window and under max_segs 10), the peer's window wide open, a 45-segment skb in
    /// the middle of the write queue, the rtx head sent 30 ms ago with srtt 20 ms.
    fn deferring() -> super::DeferInputs {
        use crate::tcp::sock::CaState;
        const MS: u64 = 1_000_000;
        super::DeferInputs {
            ca_state: CaState::Open,
            clock_ns: 100 * MS,
            wstamp_ns: 100 * MS - MS / 2,
            in_flight: 26,
            cwnd: 30,
            mss: 1448,
            snd_wnd: 1_000_000,
            send_win: 1_000_000 - 26 * 1448,
            max_segs: 10,
            skb_len: 45 * 1448,
            skb_is_tail: false,
            skb_fin_or_eor: false,
            rtx_head_tstamp_ns: Some(70 * MS),
            srtt_us: 20_000 << 3,
            win_divisor: super::TCP_TSO_WIN_DIVISOR,
        }
    }

    /// Linux v6.12 net/ipv4/tcp_output.c: tcp_tso_should_defer(), condition by condition:
    /// each row changes one input of a deferring state and names the outcome the kernel's
    /// code gives.
    #[test]
    fn tso_should_defer_follows_the_kernel_condition_by_condition() {
        use super::{tso_should_defer, Defer, DeferInputs};
        use crate::tcp::sock::CaState;
        const MS: u64 = 1_000_000;
        let mss = 1448u64;
        let base = deferring();
        // The base state: cwnd room (4 MSS) below the skb: cwnd-limited, wait.
        assert_eq!(tso_should_defer(base), Defer::CwndLimited);
        let rows: Vec<(&str, DeferInputs, Defer)> = vec![
            // icsk_ca_state >= TCP_CA_Recovery: never defer in Recovery or Loss.
            (
                "recovery",
                DeferInputs {
                    ca_state: CaState::Recovery,
                    ..base
                },
                Defer::Send,
            ),
            (
                "loss",
                DeferInputs {
                    ca_state: CaState::Loss,
                    ..base
                },
                Defer::Send,
            ),
            // CWR (2) and Disorder (1) are below Recovery (3): they defer.
            (
                "cwr",
                DeferInputs {
                    ca_state: CaState::Cwr,
                    ..base
                },
                Defer::CwndLimited,
            ),
            (
                "disorder",
                DeferInputs {
                    ca_state: CaState::Disorder,
                    ..base
                },
                Defer::CwndLimited,
            ),
            // The last write more than 1 ms ago (tcp_clock_cache - tcp_wstamp_ns - 1 ms > 0).
            (
                "1ms+1ns",
                DeferInputs {
                    wstamp_ns: base.clock_ns - MS - 1,
                    ..base
                },
                Defer::Send,
            ),
            (
                "1ms",
                DeferInputs {
                    wstamp_ns: base.clock_ns - MS,
                    ..base
                },
                Defer::CwndLimited,
            ),
            // A wstamp in the future (EDT: a paced skb waits in a qdisc) still defers.
            (
                "edt",
                DeferInputs {
                    wstamp_ns: base.clock_ns + 5 * MS,
                    ..base
                },
                Defer::CwndLimited,
            ),
            // A full-sized skb (max_segs MSS) fits the cwnd room: send.
            (
                "full",
                DeferInputs {
                    in_flight: 20,
                    ..base
                },
                Defer::Send,
            ),
            (
                "full-1",
                DeferInputs {
                    in_flight: 21,
                    ..base
                },
                Defer::CwndLimited,
            ),
            // ... or the peer's window is the limit and holds max_segs MSS: send.
            (
                "max_segs<=room",
                DeferInputs {
                    max_segs: 4,
                    ..base
                },
                Defer::Send,
            ),
            // Middle of the queue: the skb fits whole, it will get no more data: send.
            (
                "middle",
                DeferInputs {
                    skb_len: 4 * mss,
                    ..base
                },
                Defer::Send,
            ),
            // The tail skb that fits whole may still grow: the rest of the test decides
            // (room 4 MSS < 30/3 = 10 MSS, head old enough, not FIN: application-limited).
            (
                "tail",
                DeferInputs {
                    skb_len: 3 * mss,
                    skb_is_tail: true,
                    ..base
                },
                Defer::AppLimited,
            ),
            (
                "tail-fin",
                DeferInputs {
                    skb_len: 3 * mss,
                    skb_is_tail: true,
                    skb_fin_or_eor: true,
                    ..base
                },
                Defer::Send,
            ),
            // tcp_tso_win_divisor: room >= min(snd_wnd, cwnd * mss) / 3 sends. cwnd 12: 4 MSS
            // is a third of it; cwnd 13 (in flight 9): 4 < 13/3 MSS, defer.
            (
                "third",
                DeferInputs {
                    cwnd: 12,
                    in_flight: 8,
                    ..base
                },
                Defer::Send,
            ),
            (
                "third-",
                DeferInputs {
                    cwnd: 13,
                    in_flight: 9,
                    ..base
                },
                Defer::CwndLimited,
            ),
            // ... of the peer's window when it is the smaller: snd_wnd 12 MSS.
            (
                "third-wnd",
                DeferInputs {
                    snd_wnd: 12 * mss as u32,
                    ..base
                },
                Defer::Send,
            ),
            // win_divisor 0: tcp_max_tso_deferred_mss() (3): room of more than 3 MSS sends.
            (
                "div0",
                DeferInputs {
                    win_divisor: 0,
                    ..base
                },
                Defer::Send,
            ),
            (
                "div0-3",
                DeferInputs {
                    win_divisor: 0,
                    in_flight: 27,
                    ..base
                },
                Defer::CwndLimited,
            ),
            // The next ACK likely too late: expected (rtx head's departure + srtt) more than
            // min(1 ms, srtt / 2) from now (the stable fix 295ce1eb36ae). srtt 20 ms: 1 ms;
            // the head sent 19 ms ago (less 1 ns) has its ACK due in just over 1 ms: send.
            (
                "ack-due-later",
                DeferInputs {
                    rtx_head_tstamp_ns: Some(base.clock_ns - 19 * MS + 1),
                    ..base
                },
                Defer::Send,
            ),
            (
                "ack-due-in-1ms",
                DeferInputs {
                    rtx_head_tstamp_ns: Some(base.clock_ns - 19 * MS),
                    ..base
                },
                Defer::CwndLimited,
            ),
            // A long path (srtt 100 ms), the head sent 60 ms ago: v6.12.0 deferred (older
            // than srtt / 2), the fix sends, the ACK being 40 ms away.
            (
                "long-rtt",
                DeferInputs {
                    srtt_us: 100_000 << 3,
                    rtx_head_tstamp_ns: Some(base.clock_ns - 60 * MS),
                    ..base
                },
                Defer::Send,
            ),
            // A short one (srtt 600 us): the threshold is srtt / 2 = 300 us.
            (
                "short-rtt",
                DeferInputs {
                    srtt_us: 600 << 3,
                    rtx_head_tstamp_ns: Some(base.clock_ns - 300_000 + 1),
                    ..base
                },
                Defer::Send,
            ),
            (
                "short-rtt-due",
                DeferInputs {
                    srtt_us: 600 << 3,
                    rtx_head_tstamp_ns: Some(base.clock_ns - 300_000),
                    ..base
                },
                Defer::CwndLimited,
            ),
            // An empty rtx queue: send.
            (
                "no-head",
                DeferInputs {
                    rtx_head_tstamp_ns: None,
                    ..base
                },
                Defer::Send,
            ),
            // The receiver's window the limit (below the cwnd room and the skb): rwnd-limited.
            (
                "rwnd",
                DeferInputs {
                    send_win: 3 * mss,
                    ..base
                },
                Defer::RwndLimited,
            ),
        ];
        for (name, i, want) in rows {
            assert_eq!(tso_should_defer(i), want, "{name}: {i:?}");
        }
    }

    /// Linux v6.12 tcp_xmit_size_goal() + tcp_bound_to_half_wnd(): sk_gso_max_size cut to
    /// half the peer's largest window (when above TCP_MSS_DEFAULT), whole MSS, at least one.
    #[test]
    fn size_goal_is_gso_max_size_bounded_to_half_the_peer_window() {
        use super::xmit_size_goal;
        // A wide window: 65215 / 1448 = 45 segments.
        assert_eq!(xmit_size_goal(1448, 4_000_000, 65215, 65535), 45 * 1448);
        // 64 KB window: half is 32767 -> 22 segments.
        assert_eq!(xmit_size_goal(1448, 65535, 65215, 65535), 22 * 1448);
        // A window below two MSS: at least one MSS.
        assert_eq!(xmit_size_goal(1448, 2000, 65215, 65535), 1448);
        // At most TCP_MSS_DEFAULT: the whole window is the cutoff.
        assert_eq!(xmit_size_goal(100, 500, 65215, 65535), 500);
        // gso_max_segs caps.
        assert_eq!(xmit_size_goal(1448, 4_000_000, 65215, 8), 8 * 1448);
    }

    /// Linux v6.12 tcp_mss_split_point(): max_segs MSS in the middle of the queue when the
    /// window allows; at the tail or the window's edge, what is there, a part-MSS included
    /// unless Nagle holds it.
    #[test]
    fn mss_split_point_cuts_at_quota_window_or_tail() {
        use super::mss_split_point;
        let m = 1448u64;
        // Middle, wide window: the quota.
        assert_eq!(
            mss_split_point(45 * m, false, 1 << 30, 1448, 10, false),
            10 * m
        );
        // Tail skb shorter than the quota: all of it (a part-MSS end included).
        assert_eq!(
            mss_split_point(3 * m + 100, true, 1 << 30, 1448, 10, false),
            3 * m + 100
        );
        // ... Nagle holding the part-MSS: cut at the last MSS boundary.
        assert_eq!(
            mss_split_point(3 * m + 100, true, 1 << 30, 1448, 10, true),
            3 * m
        );
        // Window edge 4.5 MSS: the part-MSS up to the edge goes (tcp_snd_wnd_test() only
        // wants the first MSS inside).
        assert_eq!(
            mss_split_point(45 * m, false, 4 * m + 724, 1448, 10, false),
            4 * m + 724
        );
        assert_eq!(
            mss_split_point(45 * m, false, 4 * m + 724, 1448, 10, true),
            4 * m
        );
        // Tail longer than the quota: the quota.
        assert_eq!(
            mss_split_point(45 * m, true, 1 << 30, 1448, 10, false),
            10 * m
        );
    }
}
