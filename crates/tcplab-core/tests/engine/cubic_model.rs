//! CUBIC's window growth against its model (RFC 9438 §4; Ha, Rhee, Xu 2008), driving the
//! port of Linux v6.12 net/ipv4/tcp_cubic.c through its public hooks only.
//!
//! The model, with the kernel's constants: after a loss at W_loss the window restarts at
//! W_0 = β·W_loss and follows
//!
//! ```text
//!     W(s) = C·(s − K)³ + W_max,   K = cbrt((W_max − W_0)/C)
//! ```
//!
//! s seconds after the epoch start (the first ACK after the reduction), with
//! β = 717/1024, C = bic_scale·10/1024 = 410/1024 packets/s³ (the kernel's
//! `cube_rtt_scale`/2^10), and W_max = W_loss on a first loss (so K = cbrt(W_max(1−β)/C)).
//! A Reno flow with the same β would grow 3(1−β)/(1+β) packets per RTT; CUBIC never grows
//! slower than that.
//!
//! The synthetic sender is cwnd-limited with a fixed RTT and no queue: each round trip the
//! window in flight is ACKed one packet at a time, the ACKs evenly spread over the RTT,
//! each with an RTT sample, calling the hooks in the kernel's order.

use tcplab_core::cc::cubic::Cubic;
use tcplab_core::cc::CongestionOps;
use tcplab_core::config::CcParams;
use tcplab_core::tcp::rate_sample::AckSample;
use tcplab_core::tcp::sock::TcpSock;
use tcplab_core::time::NSEC_PER_MSEC;

const MSS: u64 = 1448;
const BETA: f64 = 717.0 / 1024.0;
/// C in packets/s³: bic_scale·10 / 1024.
const C: f64 = 41.0 * 10.0 / 1024.0;
/// The kernel recomputes the cubic target at most every HZ/32 jiffies while cwnd is
/// unchanged (HZ = 1000): a delay of up to 32 ms.
const UPDATE_GATE_S: f64 = 0.032;

struct Sender {
    tp: TcpSock,
    cc: Cubic,
    now_ns: u64,
    rtt_ns: u64,
    /// Time of the first ACK of the current epoch (after the last reduction).
    epoch_ns: Option<u64>,
}

impl Sender {
    fn new(params: &CcParams, cwnd: u32, rtt_ms: u64) -> Self {
        let mut tp = TcpSock::init_sock(MSS as u32, cwnd);
        tp.is_cwnd_limited = true;
        // Start well after time 0: jiffy 0 would read as "no epoch".
        let now_ns = 10_000 * NSEC_PER_MSEC;
        tp.set_now(now_ns);
        let mut cc = Cubic::new(params);
        cc.init(&mut tp);
        Sender {
            tp,
            cc,
            now_ns,
            rtt_ns: rtt_ms * NSEC_PER_MSEC,
            epoch_ns: None,
        }
    }

    /// A loss detected now: cwnd drops to the new ssthresh (where recovery leaves it).
    fn loss(&mut self) {
        let ssthresh = self.cc.ssthresh(&mut self.tp);
        self.tp.snd_ssthresh = ssthresh;
        self.tp.set_cwnd(ssthresh);
        self.epoch_ns = None;
    }

    /// One round trip; returns s, the time of its last ACK since the epoch start, seconds.
    fn round(&mut self) -> f64 {
        let w = self.tp.snd_cwnd as u64;
        self.tp.snd_nxt = self.tp.snd_una + w * MSS;
        let rtt_us = (self.rtt_ns / 1000) as i32;
        for i in 1..=w {
            let t = self.now_ns + self.rtt_ns * i / w;
            self.tp.set_now(t);
            self.epoch_ns.get_or_insert(t);
            self.tp.snd_una += MSS;
            self.cc.pkts_acked(
                &mut self.tp,
                &AckSample {
                    pkts_acked: 1,
                    rtt_us,
                    in_flight: 0,
                },
            );
            let ack = self.tp.snd_una;
            self.cc.cong_avoid(&mut self.tp, ack, 1);
        }
        self.now_ns += self.rtt_ns;
        (self.now_ns - self.epoch_ns.unwrap()) as f64 * 1e-9
    }

    fn rtt_s(&self) -> f64 {
        self.rtt_ns as f64 * 1e-9
    }
}

/// The cubic curve from W_0 to the plateau W_max.
#[derive(Clone, Copy, Debug)]
struct Curve {
    w_max: f64,
    k_s: f64,
}

impl Curve {
    fn new(w_max: f64, w0: f64) -> Self {
        Curve {
            w_max,
            k_s: ((w_max - w0) / C).cbrt(),
        }
    }
    fn w(&self, s: f64) -> f64 {
        C * (s - self.k_s).powi(3) + self.w_max
    }
    /// How far cwnd may be from W(s), packets:
    /// - 3 packets of integer quantization: the kernel's target is an integer (the cube
    ///   term is truncated), the increase is applied in whole packets after `cnt` ACKs
    ///   (`cnt` itself truncated), and W_0 is ⌊β·W_loss⌋ rather than β·W_loss;
    /// - a time shift times the slope W'(s): K has up to 0.5% error (`cubic_root`), t is
    ///   quantized to 1 ms jiffies and 1/1024 s, and the HZ/32 update gate. The gate only
    ///   holds while cwnd is unchanged, i.e. after the target W(s + RTT) was found at or
    ///   below cwnd; W(s) cannot pass that value within the gate's 32 ms unless the RTT is
    ///   shorter, so it adds max(0, 32 ms − RTT);
    /// - the ACK-clock lag: the kernel aims at W(s + RTT) and closes the gap over one RTT,
    ///   so cwnd ≈ W(s) + RTT²·W''(s)/2.
    fn tolerance(&self, s: f64, rtt_s: f64) -> f64 {
        let d = s - self.k_s;
        let slope = 3.0 * C * d * d;
        let curvature = 6.0 * C * d.abs();
        let shift_s = 0.005 * self.k_s + 1.0 / 1024.0 + 0.001 + (UPDATE_GATE_S - rtt_s).max(0.0);
        3.0 + slope * shift_s + rtt_s * rtt_s * curvature / 2.0
    }
}

/// Runs rounds until `s >= until_s`, checking every round end against the curve;
/// returns the (s, cwnd) trace.
fn track(snd: &mut Sender, curve: Curve, until_s: f64) -> Vec<(f64, u32)> {
    let mut trace = Vec::new();
    let mut prev = snd.tp.snd_cwnd;
    loop {
        let s = snd.round();
        let cwnd = snd.tp.snd_cwnd;
        let (model, tol) = (curve.w(s), curve.tolerance(s, snd.rtt_s()));
        assert!(
            (cwnd as f64 - model).abs() <= tol,
            "s = {s:.3} s: cwnd {cwnd}, W(s) = {model:.1} ± {tol:.1} ({curve:?})"
        );
        assert!(cwnd >= prev, "cwnd never shrinks without a loss");
        prev = cwnd;
        trace.push((s, cwnd));
        if s >= until_s {
            return trace;
        }
    }
}

#[test]
fn cwnd_follows_the_cubic_curve_after_a_loss() {
    let w_loss = 1000;
    let mut snd = Sender::new(&CcParams::default(), w_loss, 100);
    snd.tp.snd_ssthresh = w_loss / 2; // in congestion avoidance
    snd.loss();
    assert_eq!(snd.tp.snd_cwnd, w_loss * 717 / 1024);
    assert_eq!(snd.cc.get_info(&snd.tp).last_max_cwnd, w_loss);

    let w_max = w_loss as f64;
    let curve = Curve::new(w_max, BETA * w_max);
    // K = cbrt(W_max(1 − β)/C) ≈ 9.1 s: about 90 round trips to the plateau.
    let k = curve.k_s;
    assert!((k - (w_max * (1.0 - BETA) / C).cbrt()).abs() < 1e-9);
    let trace = track(&mut snd, curve, 2.0 * k);

    // The plateau: within ±0.1K of K the curve stays within C(0.1K)³ = 0.1% of
    // W_max(1 − β) ≈ 0.3 packet of W_max; cwnd moves in whole packets: 1.3 packets.
    let plateau: Vec<_> = trace
        .iter()
        .filter(|(s, _)| (s - k).abs() <= 0.1 * k)
        .collect();
    assert!(plateau.len() >= 10);
    for (s, cwnd) in plateau {
        assert!(
            (*cwnd as f64 - w_max).abs() <= 1.3,
            "s = {s:.2}: cwnd {cwnd} off the plateau"
        );
    }
    // Concave then convex: the first 10% of K gains C·K³·(1 − 0.9³) ≈ 27% of the
    // reduction, the plateau's ±10% about 0.2%.
    let cwnd_at = |t: f64| trace.iter().find(|(s, _)| *s >= t).unwrap().1 as f64;
    let early = cwnd_at(0.1 * k) - trace[0].1 as f64;
    let flat = cwnd_at(1.1 * k) - cwnd_at(0.9 * k);
    assert!(
        early > 10.0 * flat.max(1.0),
        "early {early}, plateau {flat}"
    );
    // Past K the curve probes upward again: W(2K) = W_max + W_max(1 − β).
    assert!(trace.last().unwrap().1 as f64 > w_max + 0.9 * w_max * (1.0 - BETA));
}

#[test]
fn fast_convergence_moves_the_plateau_below_the_loss_window() {
    let mut snd = Sender::new(&CcParams::default(), 1000, 100);
    snd.tp.snd_ssthresh = 500;
    snd.loss();
    let first = Curve::new(1000.0, BETA * 1000.0);
    track(&mut snd, first, 0.5 * first.k_s);

    // A second loss below W_max = 1000: the new W_max is cwnd·(1 + β)/2.
    let w_loss = snd.tp.snd_cwnd;
    assert!(w_loss < 1000);
    snd.loss();
    let w_max = w_loss * (1024 + 717) / 2048;
    assert_eq!(snd.cc.get_info(&snd.tp).last_max_cwnd, w_max);
    let curve = Curve::new(w_max as f64, BETA * w_loss as f64);
    let trace = track(&mut snd, curve, 1.5 * curve.k_s);
    // W(K) = W_max exactly; cwnd moves in whole packets.
    let (_, at_k) = trace.iter().find(|(s, _)| *s >= curve.k_s).unwrap();
    assert!(
        (*at_k as f64 - w_max as f64).abs() <= 1.0,
        "plateau {at_k}, W_max {w_max}"
    );
}

/// Small window after a loss: the cubic curve needs K ≈ 2.5 s to climb back 6 packets, so
/// the Reno-friendly estimate (≈ 0.53 packet per RTT) sets the pace.
fn small_window_growth(
    tcp_friendliness: bool,
    rtt_ms: u64,
    rounds: usize,
) -> (Sender, Curve, u32, f64) {
    let params = CcParams {
        tcp_friendliness,
        ..CcParams::default()
    };
    let w_loss = 20;
    let mut snd = Sender::new(&params, w_loss, rtt_ms);
    snd.tp.snd_ssthresh = 10;
    snd.loss();
    let w0 = snd.tp.snd_cwnd;
    let curve = Curve::new(w_loss as f64, BETA * w_loss as f64);
    let mut s = 0.0;
    for _ in 0..rounds {
        s = snd.round();
    }
    (snd, curve, w0, s)
}

#[test]
fn reno_friendly_region_dominates_small_windows() {
    let rounds = 40;
    let reno_rate = 3.0 * (1.0 - BETA) / (1.0 + BETA);
    for rtt_ms in [10u64, 40] {
        let rtt_s = rtt_ms as f64 * 1e-3;

        let (snd, curve, w0, s) = small_window_growth(true, rtt_ms, rounds);
        let growth = (snd.tp.snd_cwnd - w0) as f64;
        // Lower bound: Reno's rate, less 2 packets (cwnd trails the integer estimate by
        // < 1 packet; the estimate loses < 1 packet to integer ACK counting) and what the
        // HZ/32 update gate can hold back.
        let lower = rounds as f64 * reno_rate - 2.0 - UPDATE_GATE_S / rtt_s * reno_rate;
        // Upper bound: the kernel's estimate adds one packet per ⌊15·cwnd/8⌋ ACKed, at most
        // 8w/(15w − 7) per RTT at the smallest window w = W_0.
        let w = w0 as f64;
        let upper = rounds as f64 * 8.0 * w / (15.0 * w - 7.0) + 1.0;
        assert!(
            growth >= lower && growth <= upper,
            "rtt {rtt_ms} ms: grew {growth} in {rounds} RTTs, expected [{lower:.1}, {upper:.1}]"
        );
        // ... which is well above what the cubic curve alone would give.
        let cubic_growth = curve.w(s) - w0 as f64 + curve.tolerance(s, rtt_s);
        assert!(
            growth > cubic_growth,
            "rtt {rtt_ms} ms: {growth} vs cubic {cubic_growth:.1}"
        );

        // Without tcp_friendliness the same flow follows the cubic curve.
        let params = CcParams {
            tcp_friendliness: false,
            ..CcParams::default()
        };
        let mut snd = Sender::new(&params, 20, rtt_ms);
        snd.tp.snd_ssthresh = 10;
        snd.loss();
        track(&mut snd, curve, s);
    }
}
