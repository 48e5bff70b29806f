//! Unit tests of CUBIC and HyStart against the kernel's formulas (the hooks called in the
//! kernel's order by a harness that places each ACK).

use super::hystart::hystart_delay_thresh;
use super::*;
use crate::mib::Mib;
use crate::tcp::sock::{PacingStatus, TCP_INFINITE_SSTHRESH};
use crate::time::NSEC_PER_MSEC;

const MSS: u64 = 1448;
/// Runs start well after time 0 so that no epoch begins at jiffy 0 (which means "none").
const T0_NS: u64 = 10_000 * NSEC_PER_MSEC;
/// `TcpSock::init_sock()` runs at HZ=1000: one jiffy per millisecond.
const HZ: u32 = 1000;

/// A sender whose ACKs are placed by the test, calling the hooks in the kernel's order:
/// `snd_una` advances (`tcp_ack`), then `pkts_acked` (`tcp_clean_rtx_queue`), then
/// `cong_avoid` (`tcp_cong_control`).
struct Harness {
    tp: TcpSock,
    cc: Cubic,
}

impl Harness {
    fn new(params: &CcParams, cwnd: u32) -> Self {
        let mut tp = TcpSock::init_sock(MSS as u32, cwnd);
        tp.is_cwnd_limited = true;
        tp.set_now(T0_NS);
        let mut cc = Cubic::new(params);
        cc.init(&mut tp);
        Harness { tp, cc }
    }

    fn ack(&mut self, at_ns: u64, rtt_us: i32) {
        self.tp.set_now(at_ns);
        self.tp.snd_una += MSS;
        let sample = AckSample {
            pkts_acked: 1,
            rtt_us,
            in_flight: 0,
        };
        self.cc.pkts_acked(&mut self.tp, &sample);
        let ack = self.tp.snd_una;
        self.cc.cong_avoid(&mut self.tp, ack, 1);
    }

    /// One round trip: a window of `cwnd` packets is in flight (`snd_nxt` moves to its
    /// end) and is ACKed one packet at a time, the i-th ACK at `start_ns + i·spacing_ns`
    /// carrying the RTT sample `rtt_us(i)`. Returns the number of ACKs.
    fn round(&mut self, start_ns: u64, spacing_ns: u64, rtt_us: impl Fn(u32) -> i32) -> u32 {
        let n = self.tp.snd_cwnd;
        self.tp.snd_nxt = self.tp.snd_una + n as u64 * MSS;
        for i in 0..n {
            self.ack(start_ns + i as u64 * spacing_ns, rtt_us(i));
        }
        n
    }

    fn mib(&self, m: Mib) -> u64 {
        self.tp.mib.get(m)
    }
}

fn params_with(f: impl FnOnce(&mut CcParams)) -> CcParams {
    let mut p = CcParams::default();
    f(&mut p);
    p
}

#[test]
fn scale_factors_follow_the_kernel_formulas() {
    let cc = Cubic::new(&CcParams::default());
    // 8·1741/3 = 4642 (integer), /307 = 15: one Reno-estimate packet per 15/8 cwnd ACKed.
    assert_eq!(cc.beta_scale, 15);
    assert_eq!(cc.cube_rtt_scale, 410);
    assert_eq!(cc.cube_factor, (1u64 << 40) / 410);
}

/// The integer cube root against `f64::cbrt`.
///
/// - a < 64 (table only, result rounded to an integer): the result is ⌊∛a⌋ or ⌈∛a⌉.
/// - a ≥ 64: |x − ∛a| ≤ 1.5 + 0.5%·∛a. Absolute part: the two truncating steps (the
///   quotient a/(x(x−1)) loses < 1, i.e. < 1/3 after the ×341/1024, and the final >>10
///   loses < 1), rounded up to 1.5. Relative part: the table guess keeps ≥ 3 bits of
///   mantissa (error ≤ 1/(3·8) + 1/128 ≈ 4.9%), one Newton step squares it (≈ 0.24%),
///   and 341/1024 is 0.1% below 1/3: ≈ 0.34%, rounded up to 0.5%.
/// - Over the inputs CUBIC actually uses (a = cube_factor·(W_max − cwnd) for
///   W_max − cwnd in 1..=10^6 packets, where ∛a ≥ 1389 and the absolute part is
///   < 0.11%), the mean relative error is within the kernel's stated ~0.195%.
#[test]
fn cubic_root_matches_f64_cbrt() {
    for a in 0u64..64 {
        let x = cubic_root(a) as f64;
        let c = (a as f64).cbrt();
        assert!(
            x == c.floor() || x == c.ceil(),
            "cubic_root({a}) = {x}, cbrt = {c}"
        );
    }

    let check = |a: u64| {
        let x = cubic_root(a) as f64;
        let c = (a as f64).cbrt();
        assert!(
            (x - c).abs() <= 1.5 + 0.005 * c,
            "cubic_root({a}) = {x}, cbrt = {c}"
        );
    };
    // Exhaustive over the small range, where truncation dominates.
    for a in 64u64..(1 << 20) {
        check(a);
    }
    // Both ends of every bit length (this also exercises every table index range).
    for b in 6..64 {
        check(1u64 << b);
        check(u64::MAX >> (63 - b));
        check((1u64 << b) + (1u64 << b) / 3);
    }
    check(u64::MAX);
    // A geometric sweep with a non-power-of-two ratio.
    let mut a: u64 = 1 << 20;
    while a < u64::MAX / 2 {
        check(a);
        a += a / 13 + 7;
    }

    let cube_factor = Cubic::new(&CcParams::default()).cube_factor;
    let (mut sum, mut max) = (0.0f64, 0.0f64);
    let n = 1_000_000u64;
    for d in 1..=n {
        let a = cube_factor * d;
        let c = (a as f64).cbrt();
        let rel = (cubic_root(a) as f64 - c).abs() / c;
        sum += rel;
        max = max.max(rel);
    }
    assert!(
        sum / n as f64 <= 0.00195,
        "mean relative error {}",
        sum / n as f64
    );
    assert!(max <= 0.005, "max relative error {max}");
}

/// The kernel's steps worked by hand, where the fixed-point details show.
#[test]
fn cubic_root_is_bit_exact_on_hand_worked_inputs() {
    // a = 90: fls64 = 7, b = ⌊7·84/256⌋ − 1 = 1, index 90 >> 3 = 11, v[11] = 138,
    // x = (148 << 1) >> 6 = 4; Newton: 2·4 + ⌊90/(4·3)⌋ = 15; 15·341 >> 10 = 4 (an exact
    // /3 would give 5).
    assert_eq!(cubic_root(90), 4);
    // a = 1000: fls64 = 10, b = 2, index 1000 >> 6 = 15, v[15] = 156,
    // x = (166 << 2) >> 6 = 10; Newton: 20 + ⌊1000/90⌋ = 31; 31·341 >> 10 = 10.
    assert_eq!(cubic_root(1000), 10);
    // a = 7 (table only): (v[7] + 35) >> 6 = 153 >> 6 = 2.
    assert_eq!(cubic_root(7), 2);
}

#[test]
fn ssthresh_is_beta_times_cwnd_and_sets_w_max() {
    for cwnd in 1u32..=5000 {
        let mut cc = Cubic::new(&CcParams::default());
        let mut tp = TcpSock::init_sock(1448, cwnd);
        cc.init(&mut tp);
        let ssthresh = cc.ssthresh(&mut tp);
        assert_eq!(ssthresh, (cwnd * 717 / 1024).max(2), "cwnd {cwnd}");
        // First loss: W_max is the window at the loss.
        assert_eq!(cc.last_max_cwnd, cwnd);
        assert_eq!(cc.get_info(&tp).last_max_cwnd, cwnd);
    }
}

#[test]
fn fast_convergence_lowers_w_max_below_the_loss_window() {
    let mut tp = TcpSock::init_sock(1448, 1000);
    let mut cc = Cubic::new(&CcParams::default());
    cc.init(&mut tp);
    cc.ssthresh(&mut tp);
    assert_eq!(cc.last_max_cwnd, 1000);

    // A second loss below W_max: W_max = cwnd·(1 + β)/2.
    tp.snd_cwnd = 800;
    let ssthresh = cc.ssthresh(&mut tp);
    assert_eq!(cc.last_max_cwnd, 800 * (1024 + 717) / 2048);
    assert_eq!(ssthresh, 800 * 717 / 1024);

    // A loss at or above W_max takes the window as is.
    tp.snd_cwnd = 900;
    cc.ssthresh(&mut tp);
    assert_eq!(cc.last_max_cwnd, 900);

    // Without fast convergence, W_max is always the loss window.
    let mut cc = Cubic::new(&params_with(|p| p.fast_convergence = false));
    tp.snd_cwnd = 1000;
    cc.ssthresh(&mut tp);
    tp.snd_cwnd = 800;
    cc.ssthresh(&mut tp);
    assert_eq!(cc.last_max_cwnd, 800);
}

#[test]
fn ssthresh_ends_the_epoch() {
    let mut h = Harness::new(&CcParams::default(), 100);
    h.tp.snd_ssthresh = 50;
    h.round(T0_NS, NSEC_PER_MSEC, |_| 100_000);
    assert_ne!(h.cc.epoch_start, 0);
    h.cc.ssthresh(&mut h.tp);
    assert_eq!(h.cc.epoch_start, 0);
}

#[test]
fn before_any_loss_growth_is_five_percent_per_rtt() {
    // Congestion avoidance with W_max = 0: the cubic curve starts flat at cwnd, so
    // `cnt` is clamped to 20 ACKs per packet, i.e. cwnd/20 per round trip.
    let cwnd = 100;
    let mut h = Harness::new(&CcParams::default(), cwnd);
    h.tp.snd_ssthresh = 50;
    h.round(T0_NS, NSEC_PER_MSEC, |_| 100_000);
    assert_eq!(h.tp.snd_cwnd, cwnd + cwnd / 20);
}

#[test]
fn growth_is_at_most_one_packet_per_two_acked() {
    // Far below a large W_max the cubic target is more than 1.5·cwnd: cnt clamps to 2.
    let mut h = Harness::new(&CcParams::default(), 1000);
    h.cc.ssthresh(&mut h.tp);
    let cwnd = 10;
    h.tp.snd_cwnd = cwnd;
    h.tp.snd_ssthresh = cwnd;
    h.round(T0_NS, NSEC_PER_MSEC, |_| 100_000);
    assert_eq!(h.cc.cnt, 2);
    assert_eq!(h.tp.snd_cwnd, cwnd + cwnd / 2);
}

#[test]
fn update_recomputes_at_most_once_per_hz_over_32_while_cwnd_is_unchanged() {
    let mut h = Harness::new(&CcParams::default(), 100);
    h.tp.snd_ssthresh = 50;
    h.ack(T0_NS, 100_000);
    let last_time = h.cc.last_time;
    // Corrupt cnt: only a recomputation can restore it.
    h.cc.cnt = 12345;
    let cwnd = h.tp.snd_cwnd;
    h.cc.bictcp_update(&h.tp, cwnd, 1);
    assert_eq!(h.cc.cnt, 12345);
    h.tp.set_now(T0_NS + (HZ / 32) as u64 * NSEC_PER_MSEC);
    h.cc.bictcp_update(&h.tp, cwnd, 1);
    assert_eq!(h.cc.cnt, 12345, "still within HZ/32 jiffies");
    h.tp.set_now(T0_NS + (HZ / 32 + 1) as u64 * NSEC_PER_MSEC);
    h.cc.bictcp_update(&h.tp, cwnd, 1);
    assert_eq!(h.cc.cnt, 20);
    assert_eq!(h.cc.last_time, last_time + HZ / 32 + 1);
}

#[test]
fn update_gate_and_cubic_clock_follow_the_hosts_hz() {
    // At HZ=250 a jiffy is 4 ms: the unchanged-cwnd gate is HZ/32 = 7 jiffies (28 ms,
    // recomputation from the 8th jiffy on), and the cubic clock (tcp_jiffies32) only
    // moves in 4 ms steps, so two updates within one jiffy see the same time.
    let tick_ns = 4 * NSEC_PER_MSEC;
    let mut h = Harness::new(&CcParams::default(), 100);
    h.tp.set_hz(250);
    h.tp.set_now(T0_NS);
    h.tp.snd_ssthresh = 50;
    h.ack(T0_NS, 100_000);
    let last_time = h.cc.last_time;
    assert_eq!(
        last_time,
        (T0_NS / tick_ns) as u32,
        "last_time is in 250 Hz jiffies"
    );
    let cwnd = h.tp.snd_cwnd;
    h.cc.cnt = 12345;
    h.tp.set_now(T0_NS + 7 * tick_ns + tick_ns - 1);
    h.cc.bictcp_update(&h.tp, cwnd, 1);
    assert_eq!(
        h.cc.cnt, 12345,
        "7 jiffies (31.99 ms) is still within HZ/32 at HZ=250"
    );
    h.tp.set_now(T0_NS + 8 * tick_ns);
    h.cc.bictcp_update(&h.tp, cwnd, 1);
    assert_ne!(h.cc.cnt, 12345, "8 jiffies is past HZ/32 at HZ=250");
    assert_eq!(h.cc.last_time, last_time + 8);
}

#[test]
fn no_growth_when_not_cwnd_limited() {
    let mut h = Harness::new(&CcParams::default(), 40);
    h.tp.snd_ssthresh = 20;
    h.tp.is_cwnd_limited = false;
    h.tp.max_packets_out = 5;
    h.round(T0_NS, NSEC_PER_MSEC, |_| 50_000);
    assert_eq!(h.tp.snd_cwnd, 40);
    assert_eq!(
        h.cc.epoch_start, 0,
        "no epoch starts without cwnd-limited ACKs"
    );
    assert_eq!(h.tp.snd_cwnd_cnt, 0);
}

#[test]
fn rto_resets_epoch_w_max_and_hystart() {
    let mut h = Harness::new(&CcParams::default(), 100);
    h.cc.ssthresh(&mut h.tp);
    h.tp.snd_cwnd = 70;
    h.tp.snd_ssthresh = 70;
    h.round(T0_NS, NSEC_PER_MSEC, |_| 80_000);
    assert!(h.cc.epoch_start != 0 && h.cc.last_max_cwnd == 100 && h.cc.delay_min == 80_000);

    // Recovery does not touch the state.
    h.cc.set_state(&mut h.tp, CaState::Recovery);
    assert_eq!(h.cc.last_max_cwnd, 100);

    h.tp.set_now(T0_NS + 5_000 * NSEC_PER_MSEC);
    h.tp.snd_nxt = h.tp.snd_una + 7 * MSS;
    h.cc.set_state(&mut h.tp, CaState::Loss);
    assert_eq!(h.cc.epoch_start, 0);
    assert_eq!(h.cc.last_max_cwnd, 0);
    assert_eq!(h.cc.get_info(&h.tp).last_max_cwnd, 0);
    assert_eq!(h.cc.delay_min, 0);
    assert_eq!(
        (h.cc.cnt, h.cc.ack_cnt, h.cc.tcp_cwnd, h.cc.bic_k),
        (0, 0, 0, 0)
    );
    assert!(!h.cc.found);
    assert_eq!(h.cc.round_start, h.tp.tcp_mstamp as u32);
    assert_eq!(h.cc.last_ack, h.tp.tcp_mstamp as u32);
    assert_eq!(h.cc.end_seq, h.tp.snd_nxt);
    assert_eq!(h.cc.curr_rtt, u32::MAX);
    assert_eq!(h.cc.sample_cnt, 0);
}

#[test]
fn tx_start_after_idle_shifts_the_epoch() {
    let mut h = Harness::new(&CcParams::default(), 100);
    h.cc.cwnd_event(&mut h.tp, CaEvent::TxStart);
    assert_eq!(h.cc.epoch_start, 0, "no epoch, nothing to shift");

    h.tp.snd_ssthresh = 50;
    h.ack(T0_NS, 100_000);
    let epoch = h.cc.epoch_start;
    assert_eq!(epoch, h.tp.jiffies32());

    // Last transmission 20 ms into the epoch, idle for 500 ms.
    let last_send_ns = T0_NS + 20 * NSEC_PER_MSEC;
    h.tp.set_now(last_send_ns);
    h.tp.lsndtime = h.tp.jiffies32();
    h.tp.set_now(last_send_ns + 500 * NSEC_PER_MSEC);
    h.cc.cwnd_event(&mut h.tp, CaEvent::CwndRestart);
    assert_eq!(h.cc.epoch_start, epoch, "only TX_START shifts the epoch");
    h.cc.cwnd_event(&mut h.tp, CaEvent::TxStart);
    assert_eq!(h.cc.epoch_start, epoch + 500);

    // The shift never puts the epoch in the future.
    h.tp.lsndtime = epoch.wrapping_sub(1000);
    let now = h.tp.jiffies32();
    h.cc.cwnd_event(&mut h.tp, CaEvent::TxStart);
    assert_eq!(h.cc.epoch_start, now);
}

#[test]
fn undo_restores_the_prior_cwnd() {
    let mut h = Harness::new(&CcParams::default(), 30);
    h.tp.prior_cwnd = 50;
    assert_eq!(h.cc.undo_cwnd(&mut h.tp), 50);
    h.tp.prior_cwnd = 20;
    assert_eq!(h.cc.undo_cwnd(&mut h.tp), 30);
}

#[test]
fn initial_ssthresh_applies_only_without_hystart() {
    let mut tp = TcpSock::init_sock(1448, 10);
    let mut cc = Cubic::new(&params_with(|p| p.initial_ssthresh = 100));
    cc.init(&mut tp);
    assert_eq!(tp.snd_ssthresh, TCP_INFINITE_SSTHRESH);

    let mut cc = Cubic::new(&params_with(|p| {
        p.initial_ssthresh = 100;
        p.hystart = false;
    }));
    cc.init(&mut tp);
    assert_eq!(tp.snd_ssthresh, 100);
}

#[test]
fn samples_are_ignored_for_one_second_after_an_epoch_start() {
    let mut h = Harness::new(&CcParams::default(), 100);
    h.tp.snd_ssthresh = 50;
    h.ack(T0_NS, 100_000);
    assert_eq!(h.cc.delay_min, 100_000, "no epoch yet when the sample came");
    h.ack(T0_NS + (HZ as u64 - 1) * NSEC_PER_MSEC, 50_000);
    assert_eq!(h.cc.delay_min, 100_000);
    h.ack(T0_NS + HZ as u64 * NSEC_PER_MSEC, 50_000);
    assert_eq!(h.cc.delay_min, 50_000);
    // No sample, nothing learnt; a zero sample counts as 1 us.
    h.ack(T0_NS + 2 * HZ as u64 * NSEC_PER_MSEC, -1);
    assert_eq!(h.cc.delay_min, 50_000);
    h.ack(T0_NS + 2 * HZ as u64 * NSEC_PER_MSEC, 0);
    assert_eq!(h.cc.delay_min, 1);
}

#[test]
fn hystart_ack_delay_is_four_gso_packets_at_the_pacing_rate_capped_at_1ms() {
    let mut tp = TcpSock::init_sock(1448, 10);
    tp.sk_pacing_rate = 0;
    assert_eq!(hystart_ack_delay(&tp), 0);
    tp.sk_pacing_rate = 1_000_000_000;
    assert_eq!(
        hystart_ack_delay(&tp),
        (65536u64 * 4 * 1_000_000 / 1_000_000_000) as u32
    );
    tp.sk_pacing_rate = 1_000_000;
    assert_eq!(hystart_ack_delay(&tp), 1000);
}

// --- HyStart delay detection ---

/// Round 1 at the base RTT sets delay_min; round 2 adds `bump_us` to every sample (or to
/// the samples from `bump_from` on). Returns the harness and the cwnd at round 2's start.
fn delay_rounds(base_us: u32, bump_us: u32, bump_from: u32) -> (Harness, u32) {
    let p = params_with(|p| p.hystart_detect = HYSTART_DELAY);
    let mut h = Harness::new(&p, 16);
    let spacing = 3 * NSEC_PER_MSEC;
    h.round(T0_NS, spacing, |_| base_us as i32);
    assert_eq!(h.cc.delay_min, base_us);
    assert_eq!(h.tp.snd_ssthresh, TCP_INFINITE_SSTHRESH);
    let cwnd2 = h.tp.snd_cwnd;
    let start2 = T0_NS + base_us as u64 * 1000;
    h.round(start2, spacing, |i| {
        (base_us + if i >= bump_from { bump_us } else { 0 }) as i32
    });
    (h, cwnd2)
}

#[test]
fn hystart_delay_exits_slow_start_when_the_round_min_rtt_rises() {
    // delay_min/8 below, inside and above the [4 ms, 16 ms] clamp.
    for base_us in [10_000u32, 50_000, 200_000] {
        let thresh_us = hystart_delay_thresh(base_us >> 3);

        let (h, cwnd2) = delay_rounds(base_us, thresh_us + 1, 0);
        assert_eq!(h.mib(Mib::TCPHystartDelayDetect), 1, "base {base_us}");
        // The check starts once HYSTART_MIN_SAMPLES samples are in: on the 9th ACK of the
        // round, after slow start grew cwnd by one per ACK for the first 8.
        let exit_cwnd = cwnd2 + HYSTART_MIN_SAMPLES as u32;
        assert_eq!(h.tp.snd_ssthresh, exit_cwnd);
        assert_eq!(h.mib(Mib::TCPHystartDelayCwnd), exit_cwnd as u64);
        assert!(h.cc.found);
        assert_eq!(h.mib(Mib::TCPHystartTrainDetect), 0);

        // Exactly at the threshold: no exit.
        let (h, _) = delay_rounds(base_us, thresh_us, 0);
        assert_eq!(h.mib(Mib::TCPHystartDelayDetect), 0, "base {base_us}");
        assert_eq!(h.tp.snd_ssthresh, TCP_INFINITE_SSTHRESH);
    }
}

#[test]
fn hystart_delay_uses_the_minimum_of_the_round() {
    // The first 8 samples stay at the base RTT: the round's minimum never rises.
    let (h, _) = delay_rounds(50_000, 30_000, HYSTART_MIN_SAMPLES as u32);
    assert_eq!(h.mib(Mib::TCPHystartDelayDetect), 0);
    assert_eq!(h.tp.snd_ssthresh, TCP_INFINITE_SSTHRESH);
}

#[test]
fn hystart_waits_for_the_low_window() {
    // Below hystart_low_window the RTT rise is ignored.
    let p = params_with(|p| p.hystart_detect = HYSTART_DELAY);
    let mut h = Harness::new(&p, 4);
    h.round(T0_NS, 3 * NSEC_PER_MSEC, |_| 50_000);
    h.round(T0_NS + 50 * NSEC_PER_MSEC, 3 * NSEC_PER_MSEC, |_| 80_000);
    // 4 → 8 → 16: every sample was taken at a cwnd below 16.
    assert_eq!(h.tp.snd_cwnd, p.hystart_low_window);
    assert_eq!(h.mib(Mib::TCPHystartDelayDetect), 0);
    assert_eq!(h.tp.snd_ssthresh, TCP_INFINITE_SSTHRESH);
}

/// Slow start from an initial window of 10 as a sender that always has data sees it: each
/// ACK releases new packets up to cwnd (`snd_nxt = snd_una + cwnd`), and the packets sent
/// on one flight's ACKs form the next flight. The bottleneck queue builds during a flight
/// and drains in the gap before the next, so the i-th ACK of every flight carries
/// `base_us + i·step_us` (the kernel trace of validate-path at 5 Mbit/s, 100 ms: each
/// flight's ACKs rise 2.4 ms apiece from the base RTT while cwnd < BDP). Returns the
/// harness once cwnd reached `until_cwnd` or HyStart fired.
fn flights(base_us: u32, step_us: u32, until_cwnd: u32) -> Harness {
    let p = params_with(|p| p.hystart_detect = HYSTART_DELAY);
    let mut h = Harness::new(&p, 10); // init at establishment: snd_nxt == snd_una
    h.tp.snd_nxt = h.tp.snd_una + 10 * MSS; // the initial window goes out
    let mut flight_end = h.tp.snd_nxt;
    let (mut i, mut now_ns) = (0u32, T0_NS);
    while !h.cc.found && h.tp.snd_cwnd < until_cwnd {
        if h.tp.snd_una >= flight_end {
            // The first ACK of the next flight: everything sent so far is its flight.
            flight_end = h.tp.snd_nxt;
            i = 0;
        }
        now_ns += step_us as u64 * 1000;
        h.ack(now_ns, (base_us + i * step_us) as i32);
        h.tp.snd_nxt = h.tp.snd_una + h.tp.snd_cwnd as u64 * MSS;
        i += 1;
    }
    h
}

/// Linux (since upstream 25c1a9ca53db, v6.13 and the stable trees) resets the HyStart
/// round on every ACK that passes `end_seq`, whatever cwnd; only the checks wait for
/// `hystart_low_window`. So rounds coincide with flights, each round's minimum is its
/// flight's first sample, the base RTT, and a within-flight rise however large never
/// ends slow start. With the old gate (no round reset below cwnd 16) the first round
/// began at the ACK where cwnd reached 16, mid-flight, and so did every later one: with
/// a 2 ms rise per ACK a round starting 7 ACKs into a flight holds only samples
/// >= base + 14 ms > base + 12.5 ms, and HyStart left slow start at a small cwnd.
#[test]
fn hystart_rounds_follow_flights_from_the_first_ack() {
    let h = flights(100_000, 2_000, 400);
    assert_eq!(
        h.mib(Mib::TCPHystartDelayDetect),
        0,
        "exit at cwnd {}",
        h.tp.snd_cwnd
    );
    assert_eq!(h.tp.snd_ssthresh, TCP_INFINITE_SSTHRESH);
    assert!(h.tp.snd_cwnd >= 400);
    // The round is the current flight: it began at the flight's first ACK.
    assert!(h.cc.end_seq > h.tp.snd_una);
}

/// The same flights, but from some flight on every sample is past the threshold (the
/// queue no longer drains between flights): HyStart exits on the 9th ACK of the first
/// such flight, i.e. at that flight's starting cwnd + 8 (one packet per ACK).
#[test]
fn hystart_delay_exits_on_the_ninth_ack_of_the_first_high_flight() {
    // Flights start at cwnd 10, 20, 40, 80, 160: make the 80-flight the first high one.
    let p = params_with(|p| p.hystart_detect = HYSTART_DELAY);
    let mut h = Harness::new(&p, 10);
    h.tp.snd_nxt = h.tp.snd_una + 10 * MSS;
    let mut flight_end = h.tp.snd_nxt;
    let (mut i, mut now_ns, mut flight_cwnd) = (0u32, T0_NS, 10u32);
    let thresh_us = 100_000 + hystart_delay_thresh(100_000 >> 3);
    while !h.cc.found && h.tp.snd_cwnd < 400 {
        if h.tp.snd_una >= flight_end {
            flight_end = h.tp.snd_nxt;
            flight_cwnd = h.tp.snd_cwnd;
            i = 0;
        }
        now_ns += 2 * NSEC_PER_MSEC;
        let rtt_us = if flight_cwnd >= 80 {
            thresh_us + 1
        } else {
            100_000 + i * 1000
        };
        h.ack(now_ns, rtt_us as i32);
        h.tp.snd_nxt = h.tp.snd_una + h.tp.snd_cwnd as u64 * MSS;
        i += 1;
    }
    assert_eq!(flight_cwnd, 80);
    assert_eq!(h.mib(Mib::TCPHystartDelayDetect), 1);
    assert_eq!(h.tp.snd_ssthresh, 80 + HYSTART_MIN_SAMPLES as u32);
}

// --- HyStart ACK train ---

/// Up to `rounds` slow-start rounds from `*start_ns` with ACKs `spacing_us` apart and a
/// constant RTT, stopping after the round where HyStart fired; `*start_ns` moves to the
/// next round's start (one RTT later, or when the previous ACK train ends).
fn train_rounds(h: &mut Harness, start_ns: &mut u64, rtt_us: u32, spacing_us: u64, rounds: u32) {
    for _ in 0..rounds {
        let n = h.round(*start_ns, spacing_us * 1000, |_| rtt_us as i32);
        *start_ns += (n as u64 * spacing_us).max(rtt_us as u64) * 1000;
        if h.cc.found {
            break;
        }
    }
}

#[test]
fn hystart_ack_train_unpaced_fires_past_half_the_min_rtt() {
    let p = params_with(|p| p.hystart_detect = HYSTART_ACK_TRAIN);
    let mut h = Harness::new(&p, 16);
    let (rtt_us, spacing_us) = (20_000u32, 1_000u64);
    assert_eq!(h.tp.sk_pacing_status, PacingStatus::None);
    let mut start_ns = T0_NS;
    train_rounds(&mut h, &mut start_ns, rtt_us, spacing_us, 1);
    // Unpaced, no pacing rate: threshold = (delay_min + 0)/2. The first ACK of the round
    // opens it; the train fires on the first ACK more than the threshold after it.
    let threshold_us = rtt_us / 2;
    let first_k = threshold_us as u64 / spacing_us + 1;
    assert_eq!(h.mib(Mib::TCPHystartTrainDetect), 1);
    assert_eq!(h.tp.snd_ssthresh, 16 + first_k as u32);
    assert_eq!(h.mib(Mib::TCPHystartTrainCwnd), 16 + first_k);
    assert_eq!(h.mib(Mib::TCPHystartDelayDetect), 0);
}

#[test]
fn hystart_ack_train_paced_needs_the_full_min_rtt_plus_ack_delay() {
    let p = params_with(|p| p.hystart_detect = HYSTART_ACK_TRAIN);
    let mut h = Harness::new(&p, 16);
    h.tp.sk_pacing_status = PacingStatus::Fq;
    h.tp.sk_pacing_rate = 1_000_000_000;
    let (rtt_us, spacing_us) = (20_000u32, 1_000u64);
    // Round 1 spans 15 ms: shorter than the paced threshold, no exit yet.
    let mut start_ns = T0_NS;
    train_rounds(&mut h, &mut start_ns, rtt_us, spacing_us, 1);
    assert_eq!(h.mib(Mib::TCPHystartTrainDetect), 0);
    let cwnd2 = h.tp.snd_cwnd;
    train_rounds(&mut h, &mut start_ns, rtt_us, spacing_us, 1);
    let threshold_us = rtt_us + hystart_ack_delay(&h.tp);
    let first_k = threshold_us as u64 / spacing_us + 1;
    assert!(first_k < cwnd2 as u64);
    assert_eq!(h.mib(Mib::TCPHystartTrainDetect), 1);
    assert_eq!(h.tp.snd_ssthresh as u64, cwnd2 as u64 + first_k);
    assert_eq!(h.mib(Mib::TCPHystartTrainCwnd), cwnd2 as u64 + first_k);
}

#[test]
fn hystart_ack_train_needs_closely_spaced_acks() {
    // ACKs more than hystart_ack_delta_us (2 ms) apart never form a train, however long
    // the round lasts.
    let p = params_with(|p| p.hystart_detect = HYSTART_ACK_TRAIN);
    let mut h = Harness::new(&p, 16);
    let mut start_ns = T0_NS;
    train_rounds(
        &mut h,
        &mut start_ns,
        20_000,
        p.hystart_ack_delta_us as u64 + 1_000,
        3,
    );
    assert_eq!(h.tp.snd_cwnd, 16 * 8);
    assert_eq!(h.mib(Mib::TCPHystartTrainDetect), 0);
    assert_eq!(h.tp.snd_ssthresh, TCP_INFINITE_SSTHRESH);
}

#[test]
fn hystart_off_never_exits_slow_start() {
    let p = params_with(|p| p.hystart = false);
    let mut h = Harness::new(&p, 16);
    let mut start_ns = T0_NS;
    train_rounds(&mut h, &mut start_ns, 20_000, 100, 3);
    assert_eq!(h.tp.snd_ssthresh, TCP_INFINITE_SSTHRESH);
    assert_eq!(h.tp.snd_cwnd, 16 * 8);
}
