//! Unit tests for the BBR port.
//!
//! Expected values come from the kernel's rules and formulas (Linux v6.12
//! net/ipv4/tcp_bbr.c), re-derived here independently of the port (`reference` below
//! works in u128), never from the port's own output.
//!
//! The harness is a fake sender on a fixed path. Each round trip of `RTT_US` brings
//! `K` evenly spaced ACKs; the packet an ACK covers was sent one path RTT earlier, so its
//! rate sample spans that RTT (as `tcp_rate.c` would measure it), and a sample shorter
//! than min_rtt is invalid, as `tcp_rate_gen()` makes it. With these rules a
//! packet-timed round ends on the last ACK of each harness round.

use super::*;
use crate::config::CcParams;
use crate::rng::Rng;
use crate::tcp::rate_sample::RateSample;
use crate::tcp::sock::{CaEvent, CaState, PacingStatus, TcpSock};

const MSS: u32 = 1448;
/// Start at 1 s, so that jiffies are not 0.
const T0_US: u64 = 1_000_000;
const RTT_US: u64 = 10_000;
/// ACKs per round trip.
const K: u32 = 8;
/// Packets per ACK at the path's rate: 64 packets per 10 ms (74 Mbit/s at 1448 B).
const PER_ACK: u32 = 8;
/// Packets in flight in the steady state: about 2 BDP.
const STEADY_INFLIGHT: u32 = 128;

/// Kernel formulas, written out again in u128 from tcp_bbr.c.
mod reference {
    /// `bbr_rate_bytes_per_sec()`: ((bw * mss * gain) >> 8) * 990000 >> 24.
    pub fn rate(bw: u32, mss: u32, gain: u32) -> u64 {
        let r = (bw as u128 * mss as u128 * gain as u128) >> 8;
        ((r * 990_000) >> 24) as u64
    }

    /// `bbr_tso_segs_goal()` with `sk_pacing_shift` 10.
    pub fn tso_segs_goal(pacing_rate: u64, mss: u32) -> u32 {
        let bytes = (pacing_rate >> 10).min(65_536 - 1 - 320) as u32;
        let min = if pacing_rate < 1_200_000 / 8 { 1 } else { 2 };
        (bytes / mss).max(min).min(127)
    }

    /// `bbr_bdp()`: ceil of (bw * min_rtt * gain >> 8) / 2^24.
    pub fn bdp(bw: u32, min_rtt_us: u32, gain: u32) -> u32 {
        if min_rtt_us == u32::MAX {
            return 10;
        }
        let x = (bw as u128 * min_rtt_us as u128 * gain as u128) >> 8;
        x.div_ceil(1 << 24) as u32
    }

    /// `bbr_inflight()`: bdp plus the quantization budget.
    pub fn inflight(
        bw: u32,
        min_rtt_us: u32,
        gain: u32,
        pacing_rate: u64,
        mss: u32,
        probe_phase0: bool,
    ) -> u32 {
        let c = bdp(bw, min_rtt_us, gain) + 3 * tso_segs_goal(pacing_rate, mss);
        let c = c.div_ceil(2) * 2;
        c + if probe_phase0 { 2 } else { 0 }
    }
}

/// One ACK of the fake path.
#[derive(Clone, Copy, Debug)]
struct Ack {
    dt_us: u64,
    acked: u32,
    losses: u32,
    /// RTT sample; `None` = the path RTT.
    rtt_us: Option<i64>,
    /// Packets in flight after this ACK (before this ACK: `inflight + acked`).
    inflight: u32,
    app_limited: bool,
    ack_delayed: bool,
    /// How far the next skb's earliest departure time is ahead of now.
    edt_ahead_us: u64,
}

impl Ack {
    fn new(acked: u32, inflight: u32) -> Ack {
        Ack {
            dt_us: RTT_US / K as u64,
            acked,
            losses: 0,
            rtt_us: None,
            inflight,
            app_limited: false,
            ack_delayed: false,
            edt_ahead_us: 0,
        }
    }
}

#[derive(Clone)]
struct Flow {
    tp: TcpSock,
    bbr: Bbr,
    now_us: u64,
    path_rtt_us: u64,
    min_rtt_seen_us: i64,
    /// `(delivered_mstamp, delivered)` after each ACK: the `tx.delivered*` of the
    /// packets sent then.
    log: Vec<(u64, u32)>,
}

impl Flow {
    fn new(seed: u64) -> Flow {
        Flow::with_params(seed, &CcParams::default())
    }

    fn with_params(seed: u64, params: &CcParams) -> Flow {
        let mut tp = TcpSock::init_sock(MSS, 10);
        tp.set_now(T0_US * 1000);
        let mut bbr = Bbr::new(params, Rng::from_seed(seed));
        bbr.init(&mut tp);
        Flow {
            tp,
            bbr,
            now_us: T0_US,
            path_rtt_us: RTT_US,
            min_rtt_seen_us: i64::MAX,
            log: vec![(T0_US, 0)],
        }
    }

    fn ack(&mut self, acked: u32, inflight: u32) -> RateSample {
        self.ack_with(Ack::new(acked, inflight))
    }

    fn ack_with(&mut self, a: Ack) -> RateSample {
        self.now_us += a.dt_us;
        self.tp.set_now(self.now_us * 1000);
        self.tp.tcp_wstamp_ns = (self.now_us + a.edt_ahead_us) * 1000;
        self.tp.delivered += a.acked;
        self.tp.lost += a.losses;
        if a.acked > 0 {
            self.tp.delivered_mstamp = self.now_us;
        }
        // tcp_rate_gen(): the app-limited bubble ends once it is delivered.
        if self.tp.app_limited != 0
            && self.tp.delivered.wrapping_sub(self.tp.app_limited) as i32 > 0
        {
            self.tp.app_limited = 0;
        }
        let rtt_us = a.rtt_us.unwrap_or(self.path_rtt_us as i64);
        if rtt_us >= 0 {
            // tcp_rtt_estimator(), roughly: only "has an RTT sample" matters to BBR.
            let srtt = if self.tp.srtt_us == 0 {
                rtt_us as u32
            } else {
                (self.tp.srtt_us >> 3) * 7 / 8 + rtt_us as u32 / 8
            };
            self.tp.srtt_us = srtt.max(1) << 3;
            self.min_rtt_seen_us = self.min_rtt_seen_us.min(rtt_us);
        }
        // The ACKed packet left one path RTT ago.
        let sent_at = self.now_us.saturating_sub(self.path_rtt_us);
        let (prior_mstamp, prior_delivered) = *self
            .log
            .iter()
            .rev()
            .find(|(t, _)| *t <= sent_at)
            .unwrap_or(&self.log[0]);
        let mut interval_us = (self.now_us - prior_mstamp) as i64;
        if interval_us < self.min_rtt_seen_us {
            interval_us = -1;
        }
        let rs = RateSample {
            prior_mstamp,
            prior_delivered,
            delivered: (self.tp.delivered - prior_delivered) as i32,
            interval_us,
            rtt_us,
            losses: a.losses as i32,
            acked_sacked: a.acked,
            prior_in_flight: a.inflight + a.acked,
            is_app_limited: a.app_limited,
            is_ack_delayed: a.ack_delayed,
            ..RateSample::default()
        };
        self.tp.packets_out = a.inflight;
        self.tp.bytes_acked += a.acked as u64 * MSS as u64;
        self.tp.bytes_sent = self.tp.bytes_acked + a.inflight as u64 * MSS as u64;
        self.bbr.cong_control(&mut self.tp, &rs);
        self.log.push((self.now_us, self.tp.delivered));
        rs
    }

    /// One round trip of `K` ACKs at `per_ack` packets each.
    fn round(&mut self, per_ack: u32, inflight: u32) {
        for _ in 0..K {
            self.ack(per_ack, inflight);
        }
    }

    /// STARTUP at the path rate with little in flight: the pipe is full after the 4th
    /// round (one round sets full_bw, three show no growth) and DRAIN ends at once.
    fn reach_probe_bw(&mut self) {
        for _ in 0..4 {
            self.round(PER_ACK, 16);
        }
        assert_eq!(self.bbr.mode, Mode::ProbeBw);
    }

    /// The bw sample of the steady path: 64 packets per 10 ms.
    fn path_bw() -> u32 {
        ((K * PER_ACK) as u64 * BW_UNIT / RTT_US) as u32
    }

    fn info(&self) -> CcInfo {
        self.bbr.get_info(&self.tp)
    }
}

#[test]
fn constants_match_the_kernel() {
    assert_eq!(BBR_UNIT, 256);
    assert_eq!(BW_UNIT, 1 << 24);
    assert_eq!(BBR_HIGH_GAIN, 739); // 256 * 2885 / 1000 = 738 (truncated), + 1
    assert_eq!(BBR_DRAIN_GAIN, 88); // 256000 / 2885 = 88.7
    assert_eq!(BBR_CWND_GAIN, 512);
    assert_eq!(BBR_PACING_GAIN, [320, 192, 256, 256, 256, 256, 256, 256]);
    assert_eq!(BBR_FULL_BW_THRESH, 320);
    assert_eq!(BBR_LT_BW_RATIO, 32);
    assert_eq!(BBR_LT_BW_DIFF, 500);
    assert_eq!(BBR_BW_RTTS, 10);
}

#[test]
fn init_sets_pacing_and_leaves_gains_zero_until_the_first_ack() {
    let f = Flow::new(1);
    assert_eq!(f.tp.sk_pacing_status, PacingStatus::Needed);
    assert_eq!(f.tp.snd_ssthresh, crate::tcp::sock::TCP_INFINITE_SSTHRESH);
    assert_eq!(f.bbr.mode, Mode::Startup);
    // icsk_ca_priv is zeroed before bbr_init(), which does not set the gains.
    assert_eq!(f.info().pacing_gain, 0);
    assert_eq!(f.info().mode, 1);
    // No RTT yet: high_gain * 10 packets / 1 ms, 1% under.
    let bw = (10 * BW_UNIT / 1000) as u32;
    assert_eq!(f.tp.sk_pacing_rate, reference::rate(bw, MSS, 739));
    let approx = 2.887 * 10.0 * MSS as f64 / 1e-3 * 0.99;
    assert!((f.tp.sk_pacing_rate as f64 / approx - 1.0).abs() < 1e-3);

    // An fq qdisc already pacing is left in charge.
    let mut tp = TcpSock::init_sock(MSS, 10);
    tp.sk_pacing_status = PacingStatus::Fq;
    Bbr::new(&CcParams::default(), Rng::from_seed(1)).init(&mut tp);
    assert_eq!(tp.sk_pacing_status, PacingStatus::Fq);
}

#[test]
fn ops_table() {
    let mut f = Flow::new(1);
    assert_eq!(f.bbr.name(), "bbr");
    assert!(f.bbr.has_cong_control());
    assert_eq!(f.bbr.sndbuf_expand(&f.tp), Some(3));
    // bbr_min_tso_segs(): 1 below 1.2 Mbit/s = 150000 bytes/s.
    f.tp.sk_pacing_rate = 149_999;
    assert_eq!(f.bbr.min_tso_segs(&f.tp), Some(1));
    f.tp.sk_pacing_rate = 150_000;
    assert_eq!(f.bbr.min_tso_segs(&f.tp), Some(2));
}

#[test]
fn rounds_end_once_per_round_trip() {
    let mut f = Flow::new(1);
    for r in 1..=5u32 {
        for i in 1..=K {
            f.ack(PER_ACK, 16);
            assert_eq!(f.bbr.round_start, i == K, "round {r} ack {i}");
        }
        assert_eq!(f.bbr.rtt_cnt, r);
    }
}

#[test]
fn round_counting_starts_at_tp_delivered_after_2g_packets() {
    // Upstream 6de035fec045 (v5.14): bbr_init() called after 2^31 packets delivered
    // must still see the next ACK as a round start.
    let mut tp = TcpSock::init_sock(MSS, 10);
    tp.delivered = 3_000_000_000;
    tp.set_now(T0_US * 1000);
    let mut bbr = Bbr::new(&CcParams::default(), Rng::from_seed(1));
    bbr.init(&mut tp);
    tp.delivered += 10;
    tp.set_now((T0_US + RTT_US) * 1000);
    tp.delivered_mstamp = T0_US + RTT_US;
    let rs = RateSample {
        prior_delivered: 3_000_000_000,
        delivered: 10,
        interval_us: RTT_US as i64,
        rtt_us: RTT_US as i64,
        acked_sacked: 10,
        ..RateSample::default()
    };
    bbr.cong_control(&mut tp, &rs);
    assert!(bbr.round_start);
}

// 1. STARTUP gains and cwnd growth.
#[test]
fn startup_uses_high_gain_and_grows_cwnd_by_acked() {
    let mut f = Flow::new(1);
    let check_gains = |f: &Flow| {
        let info = f.info();
        assert_eq!(info.mode, 1);
        assert_eq!(info.pacing_gain, BBR_HIGH_GAIN);
        assert_eq!(info.cwnd_gain, BBR_HIGH_GAIN);
    };
    // Fewer than TCP_INIT_CWND packets delivered: cwnd grows regardless of the target.
    f.ack(5, 16);
    check_gains(&f);
    assert_eq!(f.tp.snd_cwnd, 10 + 5);
    // No valid bw sample until a sample spans min_rtt (the round's last ACK): the target
    // is just the quantization budget, and STARTUP never cuts cwnd down to it.
    for _ in 2..K {
        f.ack(5, 16);
        check_gains(&f);
        assert_eq!(f.bbr.max_bw(), 0);
        assert_eq!(f.tp.snd_cwnd, 15);
    }
    // Below the 2.89 x BDP target, every ACKed packet adds one to cwnd.
    let mut cwnd = f.tp.snd_cwnd;
    for _ in 0..2 * K {
        f.ack(5, 16);
        check_gains(&f);
        assert!(f.bbr.max_bw() > 0);
        assert_eq!(f.tp.snd_cwnd, cwnd + 5);
        cwnd = f.tp.snd_cwnd;
    }
}

// 2. Full-bandwidth detection.
#[test]
fn startup_exits_after_three_rounds_without_25_percent_growth() {
    let mut f = Flow::new(1);
    // Doubling rounds: 8, 16, 32, 64 packets.
    for per_ack in [1, 2, 4, 8] {
        f.round(per_ack, 200);
        assert_eq!(f.bbr.mode, Mode::Startup);
    }
    // Flat rounds: the 1st and 2nd do not end STARTUP...
    for _ in 0..2 {
        f.round(PER_ACK, 200);
        assert_eq!(f.bbr.mode, Mode::Startup);
        assert!(!f.bbr.full_bw_reached);
    }
    // ...the 3rd does, on its round-start ACK (the last one).
    for _ in 0..K - 1 {
        f.ack(PER_ACK, 200);
    }
    assert_eq!(f.bbr.mode, Mode::Startup);
    let pacing_before = f.tp.sk_pacing_rate;
    f.ack(PER_ACK, 200);
    assert!(f.bbr.full_bw_reached);
    // 200 packets in flight is more than one BDP: DRAIN, not yet PROBE_BW.
    assert_eq!(f.bbr.mode, Mode::Drain);
    assert_eq!(f.info().pacing_gain, BBR_DRAIN_GAIN);
    assert_eq!(f.info().cwnd_gain, BBR_HIGH_GAIN);
    // ssthresh = bbr_inflight(max_bw, 1.0), with the TSO goal of the pacing rate then.
    let bw = Flow::path_bw();
    assert_eq!(f.bbr.max_bw(), bw);
    let expected = reference::inflight(bw, RTT_US as u32, 256, pacing_before, MSS, false);
    assert_eq!(f.tp.snd_ssthresh, expected);
    // About one BDP (64 packets) plus 3 TSO bursts.
    assert_eq!(reference::bdp(bw, RTT_US as u32, 256), 64);
}

#[test]
fn app_limited_round_starts_do_not_count_toward_full_bw() {
    let mut f = Flow::new(1);
    f.round(PER_ACK, 200);
    for _ in 0..10 {
        for i in 1..=K {
            let mut a = Ack::new(PER_ACK, 200);
            a.app_limited = i == K; // the round-start ACK
            f.ack_with(a);
        }
    }
    assert_eq!(f.bbr.mode, Mode::Startup);
    assert_eq!(f.bbr.full_bw_cnt, 0);
}

#[test]
fn startup_continues_while_bw_grows_by_25_percent() {
    let mut f = Flow::new(1);
    // +50% per round for 12 rounds.
    let mut per_ack = 4.0f64;
    for _ in 0..12 {
        f.round(per_ack.round() as u32, 200);
        per_ack *= 1.5;
        assert_eq!(f.bbr.mode, Mode::Startup);
        assert_eq!(f.bbr.full_bw_cnt, 0);
    }
}

// 3. DRAIN exit, random PROBE_BW start, gain cycling.
fn flow_in_drain(seed: u64) -> Flow {
    let mut f = Flow::new(seed);
    for _ in 0..4 {
        f.round(PER_ACK, 200);
    }
    assert_eq!(f.bbr.mode, Mode::Drain);
    f
}

#[test]
fn drain_exits_when_inflight_fits_one_bdp() {
    let mut f = flow_in_drain(1);
    let bw = f.bbr.max_bw();
    // Above the target: stay.
    let target = reference::inflight(bw, RTT_US as u32, 256, f.tp.sk_pacing_rate, MSS, false);
    f.ack(PER_ACK, target + 1);
    assert_eq!(f.bbr.mode, Mode::Drain);
    // At the target (the DRAIN gain is < 1, so no TSO burst is added): PROBE_BW.
    let target = reference::inflight(bw, RTT_US as u32, 256, f.tp.sk_pacing_rate, MSS, false);
    f.ack(PER_ACK, target);
    assert_eq!(f.bbr.mode, Mode::ProbeBw);
}

#[test]
fn drain_counts_what_departs_before_the_next_edt() {
    let mut f = flow_in_drain(1);
    let bw = f.bbr.max_bw();
    let target = reference::inflight(bw, RTT_US as u32, 256, f.tp.sk_pacing_rate, MSS, false);
    // The next skb leaves in 1 ms; meanwhile bw x 1 ms packets drain from the network.
    let drained = ((bw as u64 * 1000) >> 24) as u32;
    assert_eq!(drained, 6); // 64 packets per 10 ms
    let mut a = Ack::new(PER_ACK, target + drained + 1);
    a.edt_ahead_us = 1000;
    f.ack_with(a);
    assert_eq!(f.bbr.mode, Mode::Drain);
    let target = reference::inflight(bw, RTT_US as u32, 256, f.tp.sk_pacing_rate, MSS, false);
    let mut a = Ack::new(PER_ACK, target + drained);
    a.edt_ahead_us = 1000;
    f.ack_with(a);
    assert_eq!(f.bbr.mode, Mode::ProbeBw);
}

#[test]
fn probe_bw_never_starts_in_the_drain_phase() {
    let mut starts = std::collections::BTreeSet::new();
    for seed in 0..200 {
        let mut f = Flow::new(seed);
        f.reach_probe_bw();
        let idx = f.bbr.cycle_idx;
        assert_ne!(idx, 1, "seed {seed} started in the 3/4 phase");
        assert_eq!(f.info().pacing_gain, BBR_PACING_GAIN[idx as usize]);
        starts.insert(idx);
    }
    // CYCLE_LEN - 1 - rand(7) is in 1..=7; one advance gives {2, ..., 7, 0}.
    assert_eq!(
        starts.into_iter().collect::<Vec<_>>(),
        vec![0, 2, 3, 4, 5, 6, 7]
    );
}

#[test]
fn gain_cycle_advances_once_per_min_rtt() {
    let mut f = Flow::new(7);
    f.reach_probe_bw();
    let mut idx = f.bbr.cycle_idx;
    let mut phase_start = f.now_us;
    // Enough inflight to reach the 5/4 target and to keep the 3/4 phase full length.
    for _ in 0..16 {
        loop {
            f.ack(PER_ACK, STEADY_INFLIGHT);
            if f.bbr.cycle_idx != idx {
                break;
            }
        }
        // A phase ends on the first ACK more than min_rtt after it began: with ACKs every
        // RTT/8, the 9th.
        assert_eq!(f.now_us - phase_start, RTT_US + RTT_US / K as u64);
        assert_eq!(f.bbr.cycle_idx, (idx + 1) % 8);
        idx = f.bbr.cycle_idx;
        phase_start = f.now_us;
        assert_eq!(f.info().pacing_gain, BBR_PACING_GAIN[idx as usize]);
        assert_eq!(f.info().cwnd_gain, BBR_CWND_GAIN);
    }
}

fn flow_in_phase(seed: u64, phase: u32) -> Flow {
    let mut f = Flow::new(seed);
    f.reach_probe_bw();
    while f.bbr.cycle_idx != phase {
        f.ack(PER_ACK, STEADY_INFLIGHT);
    }
    f
}

#[test]
fn drain_phase_ends_early_once_inflight_is_down_to_bdp() {
    let mut f = flow_in_phase(3, 1);
    f.ack(PER_ACK, STEADY_INFLIGHT);
    assert_eq!(f.bbr.cycle_idx, 1);
    // prior_in_flight = inflight + acked <= bbr_inflight(bw, 1.0): move on at once.
    let bw = f.bbr.max_bw();
    let target = reference::inflight(bw, RTT_US as u32, 256, f.tp.sk_pacing_rate, MSS, false);
    f.ack(PER_ACK, target - PER_ACK);
    assert_eq!(f.bbr.cycle_idx, 2);
}

#[test]
fn probe_phase_needs_its_inflight_or_a_loss() {
    let mut f = flow_in_phase(3, 0);
    let start = f.now_us;
    // Low inflight and no loss: the 5/4 phase outlasts min_rtt.
    while f.now_us - start < 3 * RTT_US {
        f.ack(PER_ACK, 40);
        assert_eq!(f.bbr.cycle_idx, 0);
    }
    // A loss ends it (min_rtt has passed).
    let mut a = Ack::new(PER_ACK, 40);
    a.losses = 1;
    f.ack_with(a);
    assert_eq!(f.bbr.cycle_idx, 1);
}

// 4. PROBE_RTT.
#[test]
fn probe_rtt_after_10_s_without_a_lower_rtt() {
    let mut f = Flow::new(5);
    // The first RTT sample sets min_rtt and its stamp.
    f.ack(PER_ACK, 16);
    let stamp = f.tp.jiffies32();
    assert_eq!(f.bbr.min_rtt_us, RTT_US as u32);
    f.reach_probe_bw();
    // Samples equal to min_rtt do not refresh it (strictly lower only, since v5.10).
    loop {
        let cwnd_before = f.tp.snd_cwnd;
        f.ack(PER_ACK, STEADY_INFLIGHT);
        let expired = f.tp.jiffies32().wrapping_sub(stamp.wrapping_add(10_000)) as i32 > 0;
        assert_eq!(
            f.bbr.mode == Mode::ProbeRtt,
            expired,
            "at jiffies {}",
            f.tp.jiffies32()
        );
        if expired {
            assert_eq!(f.bbr.prior_cwnd, cwnd_before);
            break;
        }
    }
    assert_eq!(f.info().mode, 4);
    assert_eq!(f.tp.snd_cwnd, BBR_CWND_MIN_TARGET);
    assert_eq!(f.info().pacing_gain, BBR_UNIT);
    assert_eq!(f.info().cwnd_gain, BBR_UNIT);
    assert_ne!(f.tp.app_limited, 0, "PROBE_RTT marks the flow app-limited");
}

#[test]
fn a_lower_rtt_within_the_window_postpones_probe_rtt() {
    let mut f = Flow::new(5);
    f.reach_probe_bw();
    while f.now_us < T0_US + 9_000_000 {
        f.ack(PER_ACK, STEADY_INFLIGHT);
    }
    let mut a = Ack::new(PER_ACK, STEADY_INFLIGHT);
    a.rtt_us = Some(RTT_US as i64 - 1);
    f.ack_with(a);
    let stamp = f.tp.jiffies32();
    assert_eq!(f.bbr.min_rtt_us, RTT_US as u32 - 1);
    // No PROBE_RTT until 10 s after the new minimum.
    while f.tp.jiffies32().wrapping_sub(stamp) <= 10_000 {
        assert_ne!(f.bbr.mode, Mode::ProbeRtt);
        f.ack(PER_ACK, STEADY_INFLIGHT);
    }
    assert_eq!(f.bbr.mode, Mode::ProbeRtt);
}

#[test]
fn an_equal_rtt_sample_does_not_postpone_probe_rtt() {
    let mut f = Flow::new(5);
    f.ack(PER_ACK, 16);
    let stamp = f.tp.jiffies32();
    f.reach_probe_bw();
    while f.now_us < T0_US + 9_000_000 {
        f.ack(PER_ACK, STEADY_INFLIGHT);
    }
    f.ack(PER_ACK, STEADY_INFLIGHT); // rtt == min_rtt
    while f.tp.jiffies32().wrapping_sub(stamp) <= 10_000 {
        f.ack(PER_ACK, STEADY_INFLIGHT);
    }
    assert_eq!(f.bbr.mode, Mode::ProbeRtt);
}

/// RTT samples 20% above the path's 10 ms (say, the route changed): when the min_rtt
/// window expires, the filter takes them.
const INFLATED_RTT_US: i64 = 12_000;

fn inflated_ack(acked: u32, inflight: u32, app_limited: bool) -> Ack {
    let mut a = Ack::new(acked, inflight);
    a.rtt_us = Some(INFLATED_RTT_US);
    a.app_limited = app_limited;
    a
}

fn flow_entering_probe_rtt(seed: u64) -> Flow {
    let mut f = Flow::new(seed);
    f.reach_probe_bw();
    while f.bbr.mode != Mode::ProbeRtt {
        f.ack_with(inflated_ack(PER_ACK, STEADY_INFLIGHT, false));
    }
    assert_eq!(f.bbr.min_rtt_us, INFLATED_RTT_US as u32);
    f
}

#[test]
fn probe_rtt_lasts_200_ms_at_low_inflight_then_restores_cwnd() {
    let mut f = flow_entering_probe_rtt(5);
    let prior_cwnd = f.bbr.prior_cwnd;
    assert!(prior_cwnd > 4);
    // Inflight still above 4: the 200 ms have not started.
    for _ in 0..K {
        f.ack_with(inflated_ack(2, 8, true));
        assert_eq!(f.bbr.probe_rtt_done_stamp, 0);
    }
    // Inflight down to 4: start the 200 ms and a round.
    f.ack_with(inflated_ack(2, 4, true));
    let done = f.tp.jiffies32() + 200;
    assert_eq!(f.bbr.probe_rtt_done_stamp, done);
    let cwnd_before = loop {
        let cwnd_before = f.tp.snd_cwnd;
        f.ack_with(inflated_ack(2, 4, true));
        // Round long done (RTT 10 ms): exit on the first ACK after the 200 ms.
        if (f.tp.jiffies32().wrapping_sub(done) as i32) <= 0 {
            assert_eq!(f.bbr.mode, Mode::ProbeRtt);
            assert!(f.tp.snd_cwnd <= BBR_CWND_MIN_TARGET);
        } else {
            break cwnd_before;
        }
    };
    assert_eq!(
        f.bbr.mode,
        Mode::ProbeBw,
        "the pipe was full: back to PROBE_BW"
    );
    // bbr_check_probe_rtt_done() raised cwnd to prior_cwnd; bbr_set_cwnd() then applied
    // min(cwnd + acked, target) for 2 x BDP at the new 12 ms min_rtt.
    let target = {
        let c = reference::bdp(f.bbr.max_bw(), INFLATED_RTT_US as u32, BBR_CWND_GAIN)
            + f.bbr.ack_aggregation_cwnd()
            + 3 * reference::tso_segs_goal(f.tp.sk_pacing_rate, MSS);
        c.div_ceil(2) * 2 + if f.bbr.cycle_idx == 0 { 2 } else { 0 }
    };
    assert_eq!(f.tp.snd_cwnd, (cwnd_before.max(prior_cwnd) + 2).min(target));
    assert!(
        f.tp.snd_cwnd >= prior_cwnd,
        "{} < {prior_cwnd}",
        f.tp.snd_cwnd
    );
    // The next PROBE_RTT is a full window away.
    assert_eq!(f.bbr.min_rtt_stamp, f.tp.jiffies32());
}

#[test]
fn probe_rtt_also_waits_for_a_round() {
    let mut f = flow_entering_probe_rtt(5);
    // A long path: a round takes 300 ms.
    f.path_rtt_us = 300_000;
    f.ack_with(inflated_ack(1, 4, true));
    let t_low = f.now_us;
    assert_ne!(f.bbr.probe_rtt_done_stamp, 0);
    loop {
        f.ack_with(inflated_ack(1, 4, true));
        if f.bbr.mode != Mode::ProbeRtt {
            break;
        }
    }
    // Exit on the ACK of the first packet sent after inflight fell to 4.
    assert_eq!(f.now_us - t_low, 300_000);
}

#[test]
fn probe_rtt_exit_on_idle_restart_restores_prior_cwnd_exactly() {
    let mut f = flow_entering_probe_rtt(5);
    let prior_cwnd = f.bbr.prior_cwnd;
    f.ack_with(inflated_ack(2, 4, true));
    // 201 ms later the application writes again after an idle period.
    f.now_us += 201_000;
    f.tp.set_now(f.now_us * 1000);
    f.tp.packets_out = 0;
    assert_ne!(f.tp.app_limited, 0);
    f.bbr.cwnd_event(&mut f.tp, CaEvent::TxStart);
    assert_eq!(f.bbr.mode, Mode::ProbeBw);
    assert_eq!(f.tp.snd_cwnd, prior_cwnd);
}

#[test]
fn idle_restart_refreshes_min_rtt_instead_of_probing() {
    let mut f = Flow::new(5);
    f.reach_probe_bw();
    f.ack(PER_ACK, STEADY_INFLIGHT);
    // Idle for 11 s, then the application writes: TX_START while app-limited.
    f.now_us += 11_000_000;
    f.tp.set_now(f.now_us * 1000);
    f.tp.app_limited = f.tp.delivered.max(1);
    f.bbr.cwnd_event(&mut f.tp, CaEvent::TxStart);
    assert!(f.bbr.idle_restart);
    // PROBE_BW restarts pacing at 1.0 x bw.
    assert_eq!(
        f.tp.sk_pacing_rate,
        reference::rate(f.bbr.max_bw(), MSS, 256)
    );
    // The first ACK refreshes the expired min_rtt rather than entering PROBE_RTT.
    let mut a = Ack::new(PER_ACK, 16);
    a.dt_us = RTT_US;
    a.rtt_us = Some(RTT_US as i64 + 500);
    a.app_limited = true;
    f.ack_with(a);
    assert_ne!(f.bbr.mode, Mode::ProbeRtt);
    assert_eq!(f.bbr.min_rtt_us, RTT_US as u32 + 500);
    assert!(!f.bbr.idle_restart);
}

// 5. The BDP and the cwnd target.
#[test]
fn inflight_is_the_rounded_up_bdp_plus_quantization_budget() {
    let cases = [
        // (bw, min_rtt_us, gain, pacing_rate, mss)
        (144_000u32, 20_000u32, 256u32, 12_500_000u64, 1448u32),
        (144_000, 20_000, BBR_HIGH_GAIN, 12_500_000, 1448),
        (144_000, 20_000, BBR_CWND_GAIN, 12_500_000, 1448),
        (1_000, 50_000, 320, 100_000, 1448), // < 1.2 Mbit/s: 1-segment TSO goal
        (5_000_000, 1_000, 256, 5_000_000_000, 500), // TSO goal capped at 127
        (144_000, u32::MAX, 256, 12_500_000, 1448), // no RTT sample: TCP_INIT_CWND
    ];
    for (bw, min_rtt_us, gain, pacing_rate, mss) in cases {
        let mut f = Flow::new(1);
        f.tp.mss_cache = mss;
        f.tp.sk_pacing_rate = pacing_rate;
        f.bbr.min_rtt_us = min_rtt_us;
        // bbr_bdp() rounds up: within one packet above the real-valued product.
        let real = bw as f64 / BW_UNIT as f64 * min_rtt_us as f64 * gain as f64 / 256.0;
        let bdp = f.bbr.bdp(bw, gain);
        assert_eq!(bdp, reference::bdp(bw, min_rtt_us, gain));
        if min_rtt_us != u32::MAX {
            assert!(
                bdp as f64 >= real - 1e-6 && (bdp as f64) < real + 1.0,
                "{bdp} vs {real}"
            );
        } else {
            assert_eq!(bdp, 10);
        }
        for (mode, idx) in [(Mode::Startup, 0), (Mode::ProbeBw, 2), (Mode::ProbeBw, 0)] {
            f.bbr.mode = mode;
            f.bbr.cycle_idx = idx;
            let phase0 = mode == Mode::ProbeBw && idx == 0;
            let expected = reference::inflight(bw, min_rtt_us, gain, pacing_rate, mss, phase0);
            assert_eq!(
                f.bbr.inflight(&f.tp, bw, gain),
                expected,
                "{bw} {min_rtt_us} {gain} {mode:?}/{idx}"
            );
            assert_eq!(expected % 2, 0); // rounded up to even, +2 in phase 0
        }
    }
    assert_eq!(reference::tso_segs_goal(100_000, 1448), 1);
    assert_eq!(reference::tso_segs_goal(5_000_000_000, 500), 127);
}

#[test]
fn steady_cwnd_is_the_target_for_two_bdp() {
    let mut f = flow_in_phase(9, 3);
    for _ in 0..K {
        f.ack(PER_ACK, STEADY_INFLIGHT);
    }
    assert_eq!(f.bbr.cycle_idx, 3);
    // cwnd = min(cwnd + acked, target): settled at bdp(bw, 2) + aggregation + budget.
    let bw = f.bbr.max_bw();
    let aggr = f.bbr.ack_aggregation_cwnd();
    let expected = {
        let c = reference::bdp(bw, RTT_US as u32, 512)
            + aggr
            + 3 * reference::tso_segs_goal(f.tp.sk_pacing_rate, MSS);
        c.div_ceil(2) * 2
    };
    assert_eq!(f.tp.snd_cwnd, expected);
}

// 6. Pacing rate.
#[test]
fn pacing_rate_is_gain_times_bw_one_percent_under_and_capped() {
    let mut f = flow_in_phase(11, 2);
    f.ack(PER_ACK, STEADY_INFLIGHT);
    let bw = f.bbr.max_bw();
    assert_eq!(bw, Flow::path_bw());
    let gain = f.bbr.pacing_gain;
    assert_eq!(gain, 256);
    assert_eq!(f.tp.sk_pacing_rate, reference::rate(bw, MSS, gain));
    // 64 packets per 10 ms of 1448 B, less 1%: 9.17 MB/s.
    let approx = bw as f64 / BW_UNIT as f64 * 1e6 * MSS as f64 * 0.99;
    assert!(
        (f.tp.sk_pacing_rate as f64 - approx).abs() <= 1.0,
        "{} vs {approx}",
        f.tp.sk_pacing_rate
    );
    // get_info: bw * mss * 10^6 >> 24 bytes/s, in bits/s.
    let bytes = (bw as u64 * MSS as u64 * 1_000_000) >> 24;
    assert_eq!(f.info().bw_bps, bytes * 8);
    assert_eq!(f.info().min_rtt_us, RTT_US as u32);
    // SO_MAX_PACING_RATE caps it.
    f.tp.sk_max_pacing_rate = 1_000_000;
    f.ack(PER_ACK, STEADY_INFLIGHT);
    assert_eq!(f.tp.sk_pacing_rate, 1_000_000);
}

#[test]
fn pacing_rate_only_ratchets_up_before_the_pipe_is_full() {
    let mut f = Flow::new(1);
    f.round(PER_ACK, 16);
    f.tp.sk_pacing_rate = 1 << 40;
    f.ack(PER_ACK, 16);
    assert_eq!(f.tp.sk_pacing_rate, 1 << 40);
    // After full bw the rate follows the model down.
    let mut f = Flow::new(1);
    f.reach_probe_bw();
    f.tp.sk_pacing_rate = 1 << 40;
    f.ack(PER_ACK, STEADY_INFLIGHT);
    assert_eq!(
        f.tp.sk_pacing_rate,
        reference::rate(f.bbr.max_bw(), MSS, f.bbr.pacing_gain)
    );
}

// 7. Long-term bandwidth: policer detection.
/// Runs lossy rounds (`acked` delivered and `lost` lost per ACK) until `rounds` round
/// starts have passed; returns `(delivered, delivered_mstamp)` at the last one.
fn lossy_rounds(f: &mut Flow, rounds: u32, acked: u32, lost: u32) -> (u32, u64) {
    for _ in 0..rounds {
        for _ in 0..K {
            let mut a = Ack::new(acked, STEADY_INFLIGHT);
            a.losses = lost;
            f.ack_with(a);
        }
        assert!(f.bbr.round_start);
    }
    (f.tp.delivered, f.tp.delivered_mstamp)
}

/// An interval's rate as `bbr_lt_bw_sampling()` computes it: ms resolution.
fn lt_rate(d0: u32, t0_us: u64, d1: u32, t1_us: u64) -> u32 {
    let ms = t1_us / 1000 - t0_us / 1000;
    ((d1 - d0) as u64 * BW_UNIT / (ms * 1000)) as u32
}

#[test]
fn policer_detected_after_two_consistent_lossy_intervals() {
    let mut f = Flow::new(13);
    f.reach_probe_bw();
    for _ in 0..3 {
        f.round(PER_ACK, STEADY_INFLIGHT);
    }
    // First loss: sampling starts, after that ACK's accounting.
    let mut a = Ack::new(6, STEADY_INFLIGHT);
    a.losses = 2;
    f.ack_with(a);
    assert!(f.bbr.lt_is_sampling);
    let (d0, t0) = (f.tp.delivered, f.tp.delivered_mstamp);
    for _ in 1..K {
        let mut a = Ack::new(6, STEADY_INFLIGHT);
        a.losses = 2;
        f.ack_with(a);
    }
    // lost/delivered = 2/6 >= 50/256. Interval 1 ends on the 4th round start.
    let (d1, t1) = lossy_rounds(&mut f, 3, 6, 2);
    let bw1 = lt_rate(d0, t0, d1, t1);
    assert_eq!(f.bbr.lt_bw, bw1);
    assert!(!f.bbr.lt_use_bw);
    // Interval 2, same rate: policed.
    let (d2, t2) = lossy_rounds(&mut f, 4, 6, 2);
    let bw2 = lt_rate(d1, t1, d2, t2);
    assert!(f.bbr.lt_use_bw);
    assert_eq!(f.bbr.lt_bw, (bw1 + bw2) / 2);
    let info = f.info();
    assert!(info.lt_use_bw);
    // The time series' bbr_lt_bw_bps: lt_bw converted as bbr_get_info() converts bw.
    assert_eq!(
        info.lt_bw_bps,
        ((f.bbr.lt_bw as u64 * MSS as u64 * 1_000_000) >> 24) * 8
    );
    assert_eq!(info.pacing_gain, BBR_UNIT);
    assert_eq!(
        info.bw_bps,
        ((f.bbr.lt_bw as u64 * MSS as u64 * 1_000_000) >> 24) * 8
    );
    assert_eq!(
        f.tp.sk_pacing_rate,
        reference::rate(f.bbr.lt_bw, MSS, BBR_UNIT)
    );

    // Gain stays 1.0 through every phase for 48 rounds of PROBE_BW, then resets.
    for r in 1..=BBR_LT_BW_MAX_RTTS {
        f.round(PER_ACK, STEADY_INFLIGHT);
        assert_eq!(f.bbr.lt_use_bw, r < BBR_LT_BW_MAX_RTTS, "round {r}");
        if r < BBR_LT_BW_MAX_RTTS {
            assert_eq!(f.info().pacing_gain, BBR_UNIT);
        }
    }
    assert_eq!(f.bbr.lt_bw, 0);
    assert_eq!(f.bbr.mode, Mode::ProbeBw);
}

#[test]
fn low_loss_intervals_do_not_look_policed() {
    let mut f = Flow::new(13);
    f.reach_probe_bw();
    // 1 lost per 7 delivered: 14.3% < 50/256 = 19.5%.
    lossy_rounds(&mut f, 40, 7, 1);
    assert!(!f.bbr.lt_use_bw);
    assert_eq!(f.bbr.lt_bw, 0);
}

#[test]
fn inconsistent_lossy_intervals_are_not_policing() {
    let mut f = Flow::new(13);
    f.reach_probe_bw();
    // Sampling starts on the first ACK; interval 1 ends on the 4th round start.
    let (d1, t1) = lossy_rounds(&mut f, 4, 6, 2);
    assert_ne!(f.bbr.lt_bw, 0);
    assert!(!f.bbr.lt_use_bw);
    // Interval 2 at 1.5x the rate: not within 1/8, so it only replaces lt_bw.
    let (d2, t2) = lossy_rounds(&mut f, 4, 9, 3);
    assert!(!f.bbr.lt_use_bw);
    assert_eq!(f.bbr.lt_bw, lt_rate(d1, t1, d2, t2));
    // Interval 3 matches interval 2.
    lossy_rounds(&mut f, 4, 9, 3);
    assert!(f.bbr.lt_use_bw);
}

#[test]
fn rto_feeds_a_loss_into_lt_sampling_and_undo_resets_it() {
    let mut f = Flow::new(13);
    f.reach_probe_bw();
    f.bbr.set_state(&mut f.tp, CaState::Loss);
    assert_eq!(f.bbr.prev_ca_state, CaState::Loss);
    assert!(f.bbr.round_start);
    assert!(f.bbr.lt_is_sampling);
    assert_eq!(f.bbr.full_bw, 0);
    f.bbr.full_bw_cnt = 2;
    let cwnd = f.tp.snd_cwnd;
    assert_eq!(f.bbr.undo_cwnd(&mut f.tp), cwnd);
    assert!(!f.bbr.lt_is_sampling);
    assert_eq!((f.bbr.full_bw, f.bbr.full_bw_cnt), (0, 0));
    // Other state changes leave BBR alone.
    f.bbr.set_state(&mut f.tp, CaState::Recovery);
    assert_eq!(f.bbr.prev_ca_state, CaState::Loss);
}

// 8. Loss recovery.
#[test]
fn recovery_conserves_packets_for_one_round_then_restores_cwnd() {
    let mut f = Flow::new(17);
    for _ in 0..2 {
        f.round(PER_ACK, 40);
    }
    assert_eq!(f.bbr.mode, Mode::Startup);
    // tcp_enter_recovery(): ssthresh() saves cwnd and keeps ssthresh.
    let ssthresh = f.tp.snd_ssthresh;
    assert_eq!(f.bbr.ssthresh(&mut f.tp), ssthresh);
    let prior_cwnd = f.tp.snd_cwnd;
    assert_eq!(f.bbr.prior_cwnd, prior_cwnd);
    f.bbr.set_state(&mut f.tp, CaState::Recovery);
    f.tp.ca_state = CaState::Recovery;

    // First ACK in Recovery: cwnd = inflight + acked.
    let mut a = Ack::new(4, 30);
    a.losses = 3;
    f.ack_with(a);
    assert!(f.bbr.packet_conservation);
    assert_eq!(f.tp.snd_cwnd, 30 + 4);
    // During that round: cwnd = max(cwnd - losses, inflight + acked).
    let mut a = Ack::new(4, 20);
    a.losses = 1;
    f.ack_with(a);
    assert_eq!(f.tp.snd_cwnd, 34 - 1);
    f.ack(4, 40);
    assert_eq!(f.tp.snd_cwnd, 40 + 4);
    // The round started on the first Recovery ACK ends one RTT later.
    while !f.bbr.round_start {
        let cwnd = f.tp.snd_cwnd;
        f.ack(4, 10);
        if f.bbr.packet_conservation {
            assert_eq!(f.tp.snd_cwnd, cwnd.max(10 + 4));
        }
    }
    assert!(!f.bbr.packet_conservation);
    // Then slow start toward the target: cwnd + acked.
    let cwnd = f.tp.snd_cwnd;
    f.ack(4, 10);
    assert_eq!(f.tp.snd_cwnd, cwnd + 4);

    // Leaving Recovery restores the cwnd saved on entry (then STARTUP adds acked).
    f.bbr.set_state(&mut f.tp, CaState::Open);
    f.tp.ca_state = CaState::Open;
    assert!(f.tp.snd_cwnd < prior_cwnd);
    f.ack(4, 10);
    assert_eq!(f.tp.snd_cwnd, prior_cwnd + 4);
    assert_eq!(f.bbr.prev_ca_state, CaState::Open);
}

#[test]
fn loss_state_exit_restores_prior_cwnd_without_conservation() {
    let mut f = Flow::new(17);
    f.round(PER_ACK, 40);
    f.bbr.ssthresh(&mut f.tp);
    let prior_cwnd = f.tp.snd_cwnd;
    f.bbr.set_state(&mut f.tp, CaState::Loss);
    f.tp.ca_state = CaState::Loss;
    f.tp.set_cwnd(1); // tcp_enter_loss()
    f.ack(2, 1);
    assert!(!f.bbr.packet_conservation);
    assert_eq!(f.tp.snd_cwnd, BBR_CWND_MIN_TARGET); // 1 + 2, at least 4
    f.bbr.set_state(&mut f.tp, CaState::Open);
    f.tp.ca_state = CaState::Open;
    f.ack(2, 1);
    assert_eq!(f.tp.snd_cwnd, prior_cwnd + 2);
}

#[test]
fn losses_come_off_cwnd_before_growth() {
    let mut f = Flow::new(17);
    f.round(PER_ACK, 40);
    let cwnd = f.tp.snd_cwnd;
    let mut a = Ack::new(4, 40);
    a.losses = 3;
    f.ack_with(a);
    assert_eq!(f.tp.snd_cwnd, cwnd - 3 + 4);
}

// Ack aggregation.
#[test]
fn ack_aggregation_measures_extra_acked_beyond_bw() {
    let mut f = Flow::new(1);
    // bw = 1/128 packet per us (exact in BW_SCALE); cwnd 100.
    let bw = (BW_UNIT / 128) as u32;
    f.bbr.bw.reset(0, bw);
    f.tp.set_cwnd(100);
    f.bbr.ack_epoch_mstamp = 0;
    let rs = |acked: u32| RateSample {
        delivered: acked as i32,
        interval_us: 1,
        acked_sacked: acked,
        ..RateSample::default()
    };
    // 1280 us after the epoch start 10 packets were expected, none counted: new epoch.
    f.tp.delivered_mstamp = 1_280;
    f.bbr.update_ack_aggregation(&f.tp, &rs(30));
    assert_eq!(f.bbr.ack_epoch_mstamp, 1_280);
    assert_eq!(f.bbr.extra_acked(), 30);
    // 640 us later: 5 expected, 50 ACKed in the epoch: 45 extra.
    f.tp.delivered_mstamp = 1_920;
    f.bbr.update_ack_aggregation(&f.tp, &rs(20));
    assert_eq!(f.bbr.extra_acked(), 45);
    // Counted in the cwnd target only once the pipe has been full, capped at bw x 100 ms.
    assert_eq!(f.bbr.ack_aggregation_cwnd(), 0);
    f.bbr.full_bw_reached = true;
    assert_eq!(f.bbr.ack_aggregation_cwnd(), 45);
    // bw 1677 (0.0001 packets/us): floor(1677 * 100000 / 2^24) = 9 packets in 100 ms.
    f.bbr.bw.reset(0, (BW_UNIT / 10_000) as u32);
    assert_eq!(f.bbr.ack_aggregation_cwnd(), 9);
    // Extra ACKed never exceeds cwnd.
    f.tp.set_cwnd(20);
    f.tp.delivered_mstamp = 2_000;
    f.bbr.update_ack_aggregation(&f.tp, &rs(100));
    assert_eq!(f.bbr.extra_acked[f.bbr.extra_acked_win_idx], 45);
}

// 9. The VM inflight-deficit patch.
#[test]
fn vm_patch_paces_at_high_gain_while_inflight_is_short() {
    let mut off = flow_in_phase(19, 3);
    let mut on = off.clone();
    on.bbr.vm_patch = true;
    // 20 packets in flight: below bbr_inflight(bw, 1.0).
    let target = reference::inflight(
        off.bbr.max_bw(),
        RTT_US as u32,
        256,
        off.tp.sk_pacing_rate,
        MSS,
        false,
    );
    assert!(20 < target);
    off.ack(PER_ACK, 20);
    on.ack(PER_ACK, 20);
    assert_eq!(off.bbr.cycle_idx, on.bbr.cycle_idx);
    assert_eq!(
        off.info().pacing_gain,
        BBR_PACING_GAIN[off.bbr.cycle_idx as usize]
    );
    assert_eq!(on.info().pacing_gain, BBR_HIGH_GAIN);
    assert_eq!(on.info().cwnd_gain, BBR_CWND_GAIN);
    assert_eq!(
        on.tp.sk_pacing_rate,
        reference::rate(on.bbr.max_bw(), MSS, BBR_HIGH_GAIN)
    );
    // With the target in flight the cycle's gain is back.
    on.ack(PER_ACK, STEADY_INFLIGHT);
    assert_eq!(
        on.info().pacing_gain,
        BBR_PACING_GAIN[on.bbr.cycle_idx as usize]
    );
    // The patch is opt-in through CcParams.
    let params = CcParams {
        bbr_vm_patch: true,
        ..CcParams::default()
    };
    assert!(Bbr::new(&params, Rng::from_seed(0)).vm_patch);
    assert!(!Bbr::new(&CcParams::default(), Rng::from_seed(0)).vm_patch);
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "illegal mode transition")]
fn illegal_transitions_are_caught() {
    let mut f = Flow::new(1);
    f.bbr.transition_to(Mode::ProbeBw); // STARTUP -> PROBE_BW skips DRAIN
}
