//! `TcpSock`: the sender-side TCP state that congestion control reads and writes.
//!
//! This is the subset of Linux's `struct tcp_sock` / `inet_connection_sock` / `struct sock`
//! that the congestion-control modules and the core sender share, with the kernel's field
//! names (Linux v6.12, include/linux/tcp.h) so that a port reads like the original. Units
//! follow the kernel: `snd_cwnd` and the `*_out` counters in packets, `srtt_us` scaled by
//! 8, `mdev_us` by 4, `sk_pacing_rate` in bytes per second, `tcp_mstamp` in microseconds,
//! `tcp_clock_cache` and `tcp_wstamp_ns` in nanoseconds, `*_stamp` fields in jiffies.
//!
//! Sequence numbers are 64-bit byte offsets (see `packet`), so `before()/after()` become
//! plain comparisons.

use crate::mib::{Mib, MibCounters};
use crate::tcp::minmax::MinMax;
use crate::time::{ns_to_us, JiffyClock};

/// `TCP_INFINITE_SSTHRESH`.
pub const TCP_INFINITE_SSTHRESH: u32 = 0x7fff_ffff;
/// `TCP_INIT_CWND`.
pub const TCP_INIT_CWND: u32 = 10;
/// `GSO_LEGACY_MAX_SIZE` (and the default `sk_gso_max_size`).
pub const GSO_MAX_SIZE: u32 = 65536;
/// `MAX_TCP_HEADER` on x86-64 (128 + MAX_HEADER); used by BBR's TSO goal.
pub const MAX_TCP_HEADER: u32 = 320;

/// `enum tcp_ca_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
#[repr(u8)]
pub enum CaState {
    #[default]
    Open = 0,
    Disorder = 1,
    Cwr = 2,
    Recovery = 3,
    Loss = 4,
}

impl CaState {
    /// Every state, by its value (the `ca_state` column of the time series indexes it).
    pub const ALL: [CaState; 5] = [
        CaState::Open,
        CaState::Disorder,
        CaState::Cwr,
        CaState::Recovery,
        CaState::Loss,
    ];

    /// The name `ss` prints.
    pub fn name(self) -> &'static str {
        match self {
            CaState::Open => "Open",
            CaState::Disorder => "Disorder",
            CaState::Cwr => "CWR",
            CaState::Recovery => "Recovery",
            CaState::Loss => "Loss",
        }
    }
}

/// `enum sk_pacing`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PacingStatus {
    /// No pacing (Linux `SK_PACING_NONE`).
    #[default]
    None,
    /// The congestion control asked for pacing and TCP paces internally (`SK_PACING_NEEDED`).
    Needed,
    /// The fq qdisc paces (`SK_PACING_FQ`).
    Fq,
}

/// `enum tcp_ca_event`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaEvent {
    /// First transmit when no packets in flight.
    TxStart,
    /// Congestion window restart after idle.
    CwndRestart,
    /// End of congestion recovery.
    CompleteCwr,
    /// Loss timeout (RTO).
    Loss,
    /// ECT set, but not CE marked.
    EcnNoCe,
    /// Received CE marked IP packet.
    EcnIsCe,
}

#[derive(Clone, Debug, Default)]
pub struct TcpSock {
    // --- clocks, refreshed by the engine before each call into TCP ---
    /// `tp->tcp_clock_cache`: now, in ns.
    pub tcp_clock_cache: u64,
    /// `tp->tcp_mstamp`: now, in us.
    pub tcp_mstamp: u64,

    // --- window and state ---
    pub mss_cache: u32,
    pub snd_cwnd: u32,
    pub snd_ssthresh: u32,
    pub snd_cwnd_cnt: u32,
    pub snd_cwnd_clamp: u32,
    /// jiffies
    pub snd_cwnd_stamp: u32,
    pub snd_cwnd_used: u32,
    pub prior_cwnd: u32,
    pub prior_ssthresh: u32,
    pub ca_state: CaState,
    pub snd_una: u64,
    pub snd_nxt: u64,
    pub write_seq: u64,
    pub high_seq: u64,
    pub snd_wnd: u32,
    /// `tp->max_window`: the largest window the peer has offered (tcp_ack_update_window()),
    /// bytes; `tcp_bound_to_half_wnd()` reads it.
    pub max_window: u32,
    /// `tp->snd_sml`: end of the last skb sent with a part-MSS segment
    /// (tcp_minshall_update(); kept with `offload: {tso: on}` only).
    pub snd_sml: u64,

    // --- scoreboard counts (packets) ---
    pub packets_out: u32,
    pub sacked_out: u32,
    pub lost_out: u32,
    pub retrans_out: u32,

    // --- delivery accounting (tcp_rate.c) ---
    pub delivered: u32,
    pub delivered_ce: u32,
    /// Total packets ever marked lost (`tp->lost`).
    pub lost: u32,
    /// Non-zero while the flow is application-limited: the `delivered` mark of the bubble.
    pub app_limited: u32,
    /// us
    pub delivered_mstamp: u64,
    /// us
    pub first_tx_mstamp: u64,
    pub rate_delivered: u32,
    pub rate_interval_us: u32,
    pub rate_app_limited: bool,

    // --- RTT (tcp_rtt_estimator) ---
    /// Smoothed RTT << 3, in us.
    pub srtt_us: u32,
    /// Medium deviation << 2, in us.
    pub mdev_us: u32,
    pub mdev_max_us: u32,
    pub rttvar_us: u32,
    pub rtt_seq: u64,
    /// Windowed min of RTT samples (`tp->rtt_min`), us.
    pub rtt_min: MinMax,
    /// `icsk_rto` in jiffies.
    pub icsk_rto: u32,
    /// The host kernel's jiffy clock (`CONFIG_HZ`: ticks per second of every jiffy clock
    /// and timer); set with [`TcpSock::set_hz`].
    clock: JiffyClock,

    // --- cwnd validation ---
    pub is_cwnd_limited: bool,
    pub max_packets_out: u32,
    pub cwnd_usage_seq: u64,
    /// jiffies of the last data transmission (`tp->lsndtime`).
    pub lsndtime: u32,

    // --- pacing (struct sock) ---
    /// `sk->sk_pacing_rate`, bytes per second.
    pub sk_pacing_rate: u64,
    /// `sk->sk_max_pacing_rate`, bytes per second.
    pub sk_max_pacing_rate: u64,
    pub sk_pacing_status: PacingStatus,
    /// `sk->sk_pacing_shift` (10: TSQ/TSO budget of ~1 ms of data).
    pub sk_pacing_shift: u32,
    /// Earliest departure time of the next skb, ns (`tp->tcp_wstamp_ns`).
    pub tcp_wstamp_ns: u64,
    pub sk_gso_max_size: u32,

    // --- byte counters (tcp_info) ---
    pub bytes_sent: u64,
    pub bytes_acked: u64,
    pub bytes_retrans: u64,
    pub data_segs_out: u32,
    pub total_retrans: u32,

    /// The `icsk_ca_ops->cong_control` flag (BBR): skips cwnd restart and PRR paths.
    pub ca_has_cong_control: bool,

    /// `tp->ecn_flags`: `TCP_ECN_OK`, `_QUEUE_CWR`, `_DEMAND_CWR`, `_SEEN` (`tcp::ecn`).
    pub ecn_flags: u8,

    /// Per-socket SNMP counters.
    pub mib: MibCounters,
}

impl TcpSock {
    /// `tcp_packets_in_flight()`: packets_out - left_out + retrans_out.
    #[inline]
    pub fn packets_in_flight(&self) -> u32 {
        self.packets_out - (self.sacked_out + self.lost_out) + self.retrans_out
    }

    /// `tcp_left_out()`.
    #[inline]
    pub fn left_out(&self) -> u32 {
        self.sacked_out + self.lost_out
    }

    /// `tcp_in_slow_start()`.
    #[inline]
    pub fn in_slow_start(&self) -> bool {
        self.snd_cwnd < self.snd_ssthresh
    }

    /// `tcp_is_cwnd_limited()` (v6.12 include/net/tcp.h).
    #[inline]
    pub fn is_cwnd_limited(&self) -> bool {
        if self.is_cwnd_limited {
            return true;
        }
        // If in slow start, ensure cwnd grows to twice what was ACKed.
        if self.in_slow_start() {
            return self.snd_cwnd < 2 * self.max_packets_out;
        }
        false
    }

    /// `tcp_min_rtt()`: windowed minimum RTT in us (~0 if no sample yet).
    #[inline]
    pub fn min_rtt_us(&self) -> u32 {
        self.rtt_min.get()
    }

    /// The host's `CONFIG_HZ`.
    #[inline]
    pub fn hz(&self) -> u32 {
        self.clock.hz()
    }

    /// Set the host's `CONFIG_HZ` (the engine does, from the host config).
    pub fn set_hz(&mut self, hz: u32) {
        self.clock = JiffyClock::new(hz);
    }

    /// The host's jiffy clock.
    #[inline]
    pub fn clock(&self) -> &JiffyClock {
        &self.clock
    }

    /// `tcp_jiffies32`.
    #[inline]
    pub fn jiffies32(&self) -> u32 {
        self.clock.ns_to_jiffies32(self.tcp_clock_cache)
    }

    /// `usecs_to_jiffies()` at this host's HZ.
    #[inline]
    pub fn usecs_to_jiffies(&self, us: u64) -> u32 {
        self.clock.usecs_to_jiffies(us)
    }

    /// `msecs_to_jiffies()` at this host's HZ.
    #[inline]
    pub fn msecs_to_jiffies(&self, ms: u32) -> u32 {
        self.clock.msecs_to_jiffies(ms)
    }

    /// `jiffies_to_usecs()` at this host's HZ.
    #[inline]
    pub fn jiffies_to_usecs(&self, j: u32) -> u64 {
        self.clock.jiffies_to_usecs(j)
    }

    /// `TCP_RTO_MAX` (120 s) in this host's jiffies.
    #[inline]
    pub fn tcp_rto_max(&self) -> u32 {
        crate::tcp::rtt::TCP_RTO_MAX_S * self.hz()
    }

    /// `TCP_TIMEOUT_INIT` (1 s) in this host's jiffies.
    #[inline]
    pub fn tcp_timeout_init(&self) -> u32 {
        self.hz()
    }

    /// `tcp_snd_cwnd_set()`.
    #[inline]
    pub fn set_cwnd(&mut self, cwnd: u32) {
        debug_assert!(cwnd > 0, "cwnd must stay positive");
        self.snd_cwnd = cwnd;
    }

    /// `tcp_current_ssthresh()`.
    pub fn current_ssthresh(&self) -> u32 {
        if self.in_cwnd_reduction() {
            self.snd_ssthresh
        } else {
            self.snd_ssthresh
                .max((self.snd_cwnd >> 1) + (self.snd_cwnd >> 2))
        }
    }

    /// `tcp_in_cwnd_reduction()`: in CWR or Recovery.
    #[inline]
    pub fn in_cwnd_reduction(&self) -> bool {
        matches!(self.ca_state, CaState::Cwr | CaState::Recovery)
    }

    #[inline]
    pub fn inc(&mut self, m: Mib) {
        self.mib.inc(m);
    }

    /// Refresh the clocks to `now_ns` (`tcp_mstamp_refresh`).
    #[inline]
    pub fn set_now(&mut self, now_ns: u64) {
        self.tcp_clock_cache = now_ns;
        self.tcp_mstamp = ns_to_us(now_ns);
    }

    /// A socket in the state Linux's `tcp_init_sock()` leaves it in (Linux v6.12
    /// net/ipv4/tcp.c: `snd_cwnd = TCP_INIT_CWND`, `snd_ssthresh = TCP_INFINITE_SSTHRESH`,
    /// `snd_cwnd_clamp = ~0`, `icsk_rto = TCP_TIMEOUT_INIT`, the `rtt_min` filter reset, the
    /// pacing shift and GSO size of a fresh socket), with the MSS and initial window of
    /// the flow. Every endpoint of a run starts here (`TcpSocket::pair`, which then sets
    /// the host's HZ), and so do the unit tests of the congestion controls.
    pub fn init_sock(mss: u32, init_cwnd: u32) -> Self {
        TcpSock {
            mss_cache: mss,
            snd_cwnd: init_cwnd,
            snd_ssthresh: TCP_INFINITE_SSTHRESH,
            snd_cwnd_clamp: u32::MAX, // tcp_init_sock: ~0
            sk_max_pacing_rate: u64::MAX,
            sk_pacing_shift: 10,
            sk_gso_max_size: GSO_MAX_SIZE,
            // Unit tests run at HZ=1000 (one jiffy per ms); the engine sets the host's HZ.
            clock: JiffyClock::new(1000),
            icsk_rto: 1000, // TCP_TIMEOUT_INIT, jiffies
            rtt_min: {
                let mut m = MinMax::default();
                m.reset(0, u32::MAX);
                m
            },
            ..Default::default()
        }
    }
}
