//! Congestion control, shaped like Linux's `struct tcp_congestion_ops`.
//!
//! Each algorithm is a struct holding its private state (the kernel's `inet_csk_ca(sk)`)
//! and implementing [`CongestionOps`]; every hook receives the socket's shared state
//! [`TcpSock`] exactly where the kernel passes `struct sock *`. The core TCP code calls
//! the hooks at the same points as Linux v6.12 (net/ipv4/tcp_input.c, tcp_output.c,
//! tcp_cong.c):
//!
//! | hook          | called from (Linux)                                   |
//! |---------------|-------------------------------------------------------|
//! | `init`        | `tcp_init_congestion_control()` at connection start   |
//! | `ssthresh`    | `tcp_init_cwnd_reduction()`, `tcp_enter_loss()`       |
//! | `cong_avoid`  | `tcp_cong_avoid()` when `cong_control` is absent      |
//! | `cong_control`| `tcp_cong_control()`, replaces PRR and `cong_avoid`   |
//! | `set_state`   | `tcp_set_ca_state()`, *before* `ca_state` changes     |
//! | `cwnd_event`  | `tcp_ca_event()`                                      |
//! | `undo_cwnd`   | `tcp_undo_cwnd_reduction()`                           |
//! | `pkts_acked`  | `tcp_clean_rtx_queue()` with an RTT sample            |
//! | `in_ack_event`| `tcp_in_ack_event()` on every ACK (DCTCP's alpha)     |
//! | `needs_ecn`   | `tcp_ca_needs_ecn()`: the `TCP_CONG_NEEDS_ECN` flag   |
//!
//! Dispatch is static: [`Cc`] is an enum over the algorithms, so the per-ACK path has no
//! virtual call and no allocation.
//!
//! Imports: the leaves and `tcp` (the socket's state, `TcpSock`, and the ACK samples),
//! the loop Linux has; nothing else above the leaves.

pub mod bbr;
pub mod cubic;
pub mod dctcp;
pub mod reno;

use crate::config::{CcKind, CcParams};
use crate::rng::Rng;
use crate::tcp::rate_sample::{AckSample, RateSample};
use crate::tcp::sock::{CaEvent, CaState, TcpSock};

/// What a congestion control exposes for time series and `ss -i` (`get_info`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CcInfo {
    /// Algorithm-specific mode code (BBR: 1 STARTUP, 2 DRAIN, 3 PROBE_BW, 4 PROBE_RTT); 0 = none.
    pub mode: u8,
    /// BBR bandwidth estimate, bits per second (ss `bbr:(bw:...)`).
    pub bw_bps: u64,
    /// BBR windowed min RTT, us (ss `mrtt`).
    pub min_rtt_us: u32,
    /// Gains x256 (`BBR_UNIT`), as `tcp_bbr_info` reports them.
    pub pacing_gain: u32,
    pub cwnd_gain: u32,
    /// BBR: PROBE_BW cycle index; CUBIC: unused.
    pub cycle_idx: u8,
    /// BBR: long-term (policer) bandwidth in use (`bbr->lt_use_bw`).
    pub lt_use_bw: bool,
    /// BBR: the long-term (policer) bandwidth estimate `bbr->lt_bw`, bits per second; 0 when
    /// no lossy sampling interval has completed (Linux v6.12 net/ipv4/tcp_bbr.c:
    /// bbr_lt_bw_interval_done()).
    pub lt_bw_bps: u64,
    /// CUBIC: `last_max_cwnd` (W_max), packets.
    pub last_max_cwnd: u32,
    /// BBR: the ACK-aggregation estimate `bbr_extra_acked()`, packets (what
    /// `bbr_ack_aggregation_cwnd()` adds to the cwnd target, up to `bw x 100 ms`). Not in
    /// Linux's `tcp_bbr_info`; read by the tests that derive BBR's cwnd target.
    pub extra_acked: u32,
    /// DCTCP (`tcp_dctcp_info`): alpha in 1/1024, the last segment's CE state, and the
    /// bytes delivered CE-marked and in all since the window began (ss `dctcp:(...)`).
    pub dctcp_alpha: u32,
    pub dctcp_ce_state: u8,
    pub dctcp_ab_ecn: u64,
    pub dctcp_ab_tot: u64,
}

/// Linux's `struct tcp_congestion_ops`, in Rust.
pub trait CongestionOps {
    fn name(&self) -> &'static str;
    /// `.init`
    fn init(&mut self, _tp: &mut TcpSock) {}
    /// `.ssthresh`: return the slow start threshold after a congestion event.
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32;
    /// `.cong_avoid`: grow cwnd on an ACK (only used when `has_cong_control` is false).
    fn cong_avoid(&mut self, _tp: &mut TcpSock, _ack: u64, _acked: u32) {}
    /// Whether `.cong_control` is set (BBR).
    fn has_cong_control(&self) -> bool {
        false
    }
    /// `.cong_control`: full control of cwnd and pacing rate on every ACK.
    fn cong_control(&mut self, _tp: &mut TcpSock, _rs: &RateSample) {}
    /// `.set_state`: called before `tp.ca_state` becomes `new_state`.
    fn set_state(&mut self, _tp: &mut TcpSock, _new_state: CaState) {}
    /// `.cwnd_event`
    fn cwnd_event(&mut self, _tp: &mut TcpSock, _ev: CaEvent) {}
    /// `.undo_cwnd`: the cwnd to restore after a spurious reduction.
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32;
    /// `.pkts_acked`
    fn pkts_acked(&mut self, _tp: &mut TcpSock, _sample: &AckSample) {}
    /// `.in_ack_event` (`flags`: the ACK's `FLAG_*`).
    fn in_ack_event(&mut self, _tp: &mut TcpSock, _flags: u32) {}
    /// `TCP_CONG_NEEDS_ECN` in `.flags`.
    fn needs_ecn(&self) -> bool {
        false
    }
    /// `.min_tso_segs` (None = `sysctl_tcp_min_tso_segs`).
    fn min_tso_segs(&self, _tp: &TcpSock) -> Option<u32> {
        None
    }
    /// `.sndbuf_expand` (None = 2).
    fn sndbuf_expand(&self, _tp: &TcpSock) -> Option<u32> {
        None
    }
    /// `.get_info`
    fn get_info(&self, _tp: &TcpSock) -> CcInfo {
        CcInfo::default()
    }
}

/// `tcp_slow_start()` (net/ipv4/tcp_cong.c, v6.12): grow cwnd by `acked` up to ssthresh;
/// returns the part of `acked` left for congestion avoidance.
pub fn tcp_slow_start(tp: &mut TcpSock, acked: u32) -> u32 {
    let cwnd = (tp.snd_cwnd.saturating_add(acked)).min(tp.snd_ssthresh);
    let acked = acked - (cwnd - tp.snd_cwnd);
    tp.set_cwnd(cwnd.min(tp.snd_cwnd_clamp));
    acked
}

/// `tcp_cong_avoid_ai()` (net/ipv4/tcp_cong.c, v6.12): in theory this is
/// `tp->snd_cwnd += 1 / tp->snd_cwnd` (or alternative w), for every packet that was ACKed.
pub fn tcp_cong_avoid_ai(tp: &mut TcpSock, w: u32, acked: u32) {
    // If credits accumulated at a higher w, apply them gently now.
    if tp.snd_cwnd_cnt >= w {
        tp.snd_cwnd_cnt = 0;
        tp.snd_cwnd += 1;
    }
    tp.snd_cwnd_cnt += acked;
    if tp.snd_cwnd_cnt >= w {
        let delta = tp.snd_cwnd_cnt / w;
        tp.snd_cwnd_cnt -= delta * w;
        tp.snd_cwnd += delta;
    }
    tp.snd_cwnd = tp.snd_cwnd.min(tp.snd_cwnd_clamp);
}

/// Static dispatch over the algorithms.
#[derive(Clone, Debug)]
pub enum Cc {
    Reno(reno::Reno),
    Cubic(cubic::Cubic),
    Bbr(bbr::Bbr),
    Dctcp(dctcp::Dctcp),
}

impl Cc {
    /// Build the algorithm for a flow; `rng` is the flow's own congestion-control stream.
    pub fn new(kind: CcKind, params: &CcParams, rng: Rng) -> Cc {
        match kind {
            CcKind::Reno => Cc::Reno(reno::Reno),
            CcKind::Cubic => Cc::Cubic(cubic::Cubic::new(params)),
            CcKind::Bbr => Cc::Bbr(bbr::Bbr::new(params, rng)),
            CcKind::Dctcp => Cc::Dctcp(dctcp::Dctcp::new()),
        }
    }
}

macro_rules! dispatch {
    ($self:ident, $cc:ident => $e:expr) => {
        match $self {
            Cc::Reno($cc) => $e,
            Cc::Cubic($cc) => $e,
            Cc::Bbr($cc) => $e,
            Cc::Dctcp($cc) => $e,
        }
    };
}

impl CongestionOps for Cc {
    fn name(&self) -> &'static str {
        dispatch!(self, c => c.name())
    }
    #[inline]
    fn init(&mut self, tp: &mut TcpSock) {
        dispatch!(self, c => c.init(tp))
    }
    #[inline]
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        dispatch!(self, c => c.ssthresh(tp))
    }
    #[inline]
    fn cong_avoid(&mut self, tp: &mut TcpSock, ack: u64, acked: u32) {
        dispatch!(self, c => c.cong_avoid(tp, ack, acked))
    }
    #[inline]
    fn has_cong_control(&self) -> bool {
        dispatch!(self, c => c.has_cong_control())
    }
    #[inline]
    fn cong_control(&mut self, tp: &mut TcpSock, rs: &RateSample) {
        dispatch!(self, c => c.cong_control(tp, rs))
    }
    #[inline]
    fn set_state(&mut self, tp: &mut TcpSock, new_state: CaState) {
        dispatch!(self, c => c.set_state(tp, new_state))
    }
    #[inline]
    fn cwnd_event(&mut self, tp: &mut TcpSock, ev: CaEvent) {
        dispatch!(self, c => c.cwnd_event(tp, ev))
    }
    #[inline]
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        dispatch!(self, c => c.undo_cwnd(tp))
    }
    #[inline]
    fn pkts_acked(&mut self, tp: &mut TcpSock, sample: &AckSample) {
        dispatch!(self, c => c.pkts_acked(tp, sample))
    }
    #[inline]
    fn in_ack_event(&mut self, tp: &mut TcpSock, flags: u32) {
        dispatch!(self, c => c.in_ack_event(tp, flags))
    }
    #[inline]
    fn needs_ecn(&self) -> bool {
        dispatch!(self, c => c.needs_ecn())
    }
    #[inline]
    fn min_tso_segs(&self, tp: &TcpSock) -> Option<u32> {
        dispatch!(self, c => c.min_tso_segs(tp))
    }
    #[inline]
    fn sndbuf_expand(&self, tp: &TcpSock) -> Option<u32> {
        dispatch!(self, c => c.sndbuf_expand(tp))
    }
    #[inline]
    fn get_info(&self, tp: &TcpSock) -> CcInfo {
        dispatch!(self, c => c.get_info(tp))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_stops_at_ssthresh_and_returns_the_rest() {
        let mut tp = TcpSock::init_sock(1448, 10);
        tp.snd_ssthresh = 14;
        let left = tcp_slow_start(&mut tp, 6);
        assert_eq!(tp.snd_cwnd, 14);
        assert_eq!(left, 2);
    }

    #[test]
    fn cong_avoid_ai_adds_one_packet_per_window() {
        let mut tp = TcpSock::init_sock(1448, 20);
        tp.snd_ssthresh = 10;
        for _ in 0..19 {
            tcp_cong_avoid_ai(&mut tp, 20, 1);
        }
        assert_eq!(tp.snd_cwnd, 20);
        tcp_cong_avoid_ai(&mut tp, 20, 1);
        assert_eq!(tp.snd_cwnd, 21);
    }
}
