//! BBR in a closed loop: one bulk flow through one drop-tail bottleneck.
//!
//! A minimal packet-level model, enough to close the loop around the BBR port with the
//! kernel's delivery-rate sampling (net/ipv4/tcp_rate.c, v6.12: `tcp_rate_skb_sent`,
//! `tcp_rate_skb_delivered`, `tcp_rate_gen`) and EDT pacing (`tcp_update_skb_after_send`,
//! without the credit for late sends). One packet per ACK, no delayed ACKs, no losses
//! (the buffer holds 4 BDP and the test checks that nothing was dropped).
//!
//! What BBR must do here follows from its design, not from this run: the bw estimate is
//! the bottleneck rate, min_rtt is the base RTT, the flow leaves STARTUP within a few
//! round trips, keeps the queue well under one BDP in PROBE_BW, and visits PROBE_RTT once
//! per 10 s window (the base RTT only ties min_rtt, it never undercuts it).

use std::collections::VecDeque;
use tcplab_core::cc::bbr::{Bbr, Mode};
use tcplab_core::cc::CongestionOps;
use tcplab_core::config::CcParams;
use tcplab_core::rng::Rng;
use tcplab_core::tcp::rate_sample::RateSample;
use tcplab_core::tcp::sock::TcpSock;

const MSS: u64 = 1448;
/// Bytes on the wire per packet (IP + TCP headers with timestamps: 52 B).
const WIRE_BYTES: u64 = 1500;
const RATE_BPS: u64 = 50_000_000;
const PROP_ONE_WAY_NS: u64 = 20_000_000;
const RUN_NS: u64 = 25_000_000_000;

struct Packet {
    sent_us: u64,
    tx_first_tx_mstamp: u64,
    tx_delivered_mstamp: u64,
    tx_delivered: u32,
    tx_app_limited: bool,
    ack_at_ns: u64,
}

#[derive(Default)]
struct Trace {
    probe_rtt_entries_ns: Vec<u64>,
    full_bw_at_ns: Option<u64>,
    max_queue_steady: usize,
    drops: u32,
}

fn ser_ns() -> u64 {
    WIRE_BYTES * 8 * 1_000_000_000 / RATE_BPS
}

fn bdp_packets() -> f64 {
    (2 * PROP_ONE_WAY_NS + ser_ns()) as f64 / ser_ns() as f64
}

fn run() -> (Bbr, TcpSock, Trace) {
    let mut tp = TcpSock::init_sock(MSS as u32, 10);
    let mut bbr = Bbr::new(&CcParams::default(), Rng::from_seed(42));
    bbr.init(&mut tp);
    let buffer = (4.0 * bdp_packets()) as usize;

    let mut trace = Trace::default();
    let mut in_flight: VecDeque<Packet> = VecDeque::new(); // in ACK order (FIFO path)
    let mut bottleneck: VecDeque<u64> = VecDeque::new(); // departure times
    let mut next_send_ns = 0u64;
    let mut now = 0u64;
    let mut mode = bbr.mode();

    while now < RUN_NS {
        tp.set_now(now);
        // Send what cwnd and pacing allow.
        while tp.packets_out < tp.snd_cwnd && next_send_ns <= now {
            while bottleneck.front().is_some_and(|&d| d <= now) {
                bottleneck.pop_front();
            }
            if bottleneck.len() > buffer {
                trace.drops += 1;
            }
            if trace.full_bw_at_ns.is_some_and(|t| now > t + 2_000_000_000) && mode == Mode::ProbeBw
            {
                trace.max_queue_steady = trace.max_queue_steady.max(bottleneck.len());
            }
            // tcp_rate_skb_sent(): a new flight starts the sampling interval.
            if tp.packets_out == 0 {
                tp.first_tx_mstamp = tp.tcp_mstamp;
                tp.delivered_mstamp = tp.tcp_mstamp;
            }
            let depart = bottleneck.back().copied().unwrap_or(0).max(now) + ser_ns();
            bottleneck.push_back(depart);
            in_flight.push_back(Packet {
                sent_us: tp.tcp_mstamp,
                tx_first_tx_mstamp: tp.first_tx_mstamp,
                tx_delivered_mstamp: tp.delivered_mstamp,
                tx_delivered: tp.delivered,
                tx_app_limited: tp.app_limited != 0,
                ack_at_ns: depart + 2 * PROP_ONE_WAY_NS,
            });
            tp.packets_out += 1;
            tp.data_segs_out += 1;
            tp.bytes_sent += MSS;
            // tcp_update_skb_after_send(): the first 10 segments are not paced.
            if tp.data_segs_out >= 10 && tp.sk_pacing_rate != 0 {
                let len_ns = MSS * 1_000_000_000 / tp.sk_pacing_rate;
                next_send_ns = next_send_ns.max(now) + len_ns;
            }
            tp.tcp_wstamp_ns = next_send_ns.max(now);
        }

        // Next event: an ACK, or the pacing timer if cwnd has room.
        let t_ack = in_flight.front().map(|p| p.ack_at_ns).unwrap_or(u64::MAX);
        let t_send = if tp.packets_out < tp.snd_cwnd {
            next_send_ns.max(now + 1)
        } else {
            u64::MAX
        };
        now = t_ack.min(t_send);
        if now != t_ack {
            continue;
        }

        let p = in_flight.pop_front().unwrap();
        tp.set_now(now);
        let prior_in_flight = tp.packets_in_flight();
        tp.packets_out -= 1;
        tp.delivered += 1;
        tp.delivered_mstamp = tp.tcp_mstamp;
        tp.bytes_acked += MSS;
        // tcp_ack_update_rtt(): RTT sample, srtt and the windowed min (300 s).
        let rtt_us = (tp.tcp_mstamp - p.sent_us) as u32;
        let j = tp.jiffies32();
        tp.rtt_min.running_min(300_000, j, rtt_us);
        tp.srtt_us = if tp.srtt_us == 0 {
            rtt_us << 3
        } else {
            tp.srtt_us - (tp.srtt_us >> 3) + rtt_us
        };
        // tcp_rate_skb_delivered() and tcp_rate_gen().
        let snd_us = p.sent_us - p.tx_first_tx_mstamp;
        tp.first_tx_mstamp = p.sent_us;
        if tp.app_limited != 0 && (tp.delivered.wrapping_sub(tp.app_limited) as i32) > 0 {
            tp.app_limited = 0;
        }
        let ack_us = tp.tcp_mstamp - p.tx_delivered_mstamp;
        let mut interval_us = snd_us.max(ack_us) as i64;
        if interval_us < tp.min_rtt_us() as i64 {
            interval_us = -1;
        }
        let rs = RateSample {
            prior_mstamp: p.tx_delivered_mstamp,
            prior_delivered: p.tx_delivered,
            delivered: (tp.delivered - p.tx_delivered) as i32,
            interval_us,
            rtt_us: rtt_us as i64,
            acked_sacked: 1,
            prior_in_flight,
            is_app_limited: p.tx_app_limited,
            ..RateSample::default()
        };
        bbr.cong_control(&mut tp, &rs);

        let new_mode = bbr.mode();
        if new_mode == Mode::ProbeRtt && mode != Mode::ProbeRtt {
            trace.probe_rtt_entries_ns.push(now);
        }
        if trace.full_bw_at_ns.is_none() && matches!(new_mode, Mode::Drain | Mode::ProbeBw) {
            trace.full_bw_at_ns = Some(now);
        }
        mode = new_mode;
    }
    (bbr, tp, trace)
}

#[test]
fn bbr_tracks_a_single_bottleneck() {
    let (bbr, tp, trace) = run();
    let info = bbr.get_info(&tp);
    let base_rtt_us = (2 * PROP_ONE_WAY_NS + ser_ns()) / 1000;
    let pkts_per_sec = RATE_BPS as f64 / (WIRE_BYTES * 8) as f64;
    let goodput_bps = pkts_per_sec * (MSS * 8) as f64;

    assert_eq!(trace.drops, 0, "the buffer was meant to absorb STARTUP");
    // STARTUP: about 4 rounds of doubling from 10 packets to the 168-packet BDP, then 3
    // rounds without growth, the later ones stretched by the queue STARTUP builds.
    let full_at = trace.full_bw_at_ns.expect("never left STARTUP");
    assert!(
        full_at < 20 * base_rtt_us * 1000,
        "left STARTUP at {full_at} ns"
    );
    // The model: bw is the bottleneck rate, min_rtt the base RTT.
    let bw_ratio = info.bw_bps as f64 / goodput_bps;
    assert!(
        (0.97..=1.03).contains(&bw_ratio),
        "bw {} bit/s vs {goodput_bps}",
        info.bw_bps
    );
    assert!(
        (base_rtt_us as u32..=base_rtt_us as u32 + 100).contains(&info.min_rtt_us),
        "min_rtt {} vs base {base_rtt_us}",
        info.min_rtt_us
    );
    // Delivered nearly the full capacity after STARTUP: PROBE_RTT costs its 200 ms plus about
    // a round to drain to 4 packets and one to refill (~0.25 s) every 10 s, 2.5 %: >= 96 %.
    let capacity = pkts_per_sec * (RUN_NS - full_at) as f64 / 1e9;
    let delivered_after =
        tp.delivered as f64 - (full_at as f64 / 1e9 * pkts_per_sec).min(tp.delivered as f64);
    assert!(
        delivered_after / capacity > 0.96,
        "{delivered_after} of {capacity}"
    );
    // PROBE_BW keeps the queue small: the 5/4 probe adds BDP/4, and the inflight target's
    // quantization budget (bbr_quantization_budget) at most 3 x tso_segs_goal + 2 + 1 for
    // rounding up to even; tso_segs_goal at 1.25 x 50 Mbit/s is (7.8 MB/s >> 10) / 1448 B,
    // under 6 segments: BDP/4 + 21 packets.
    assert!(
        (trace.max_queue_steady as f64) <= 0.25 * bdp_packets() + 21.0,
        "queue {} with BDP {:.1}",
        trace.max_queue_steady,
        bdp_packets()
    );
    // PROBE_RTT once per window: 10 s after the previous exit (200 ms + about a round).
    let e = &trace.probe_rtt_entries_ns;
    assert_eq!(e.len(), 2, "PROBE_RTT entries at {e:?}");
    let gap_ms = (e[1] - e[0]) / 1_000_000;
    assert!(
        (10_200..=10_400).contains(&gap_ms),
        "PROBE_RTT every {gap_ms} ms"
    );
    assert!(
        matches!(bbr.mode(), Mode::ProbeBw),
        "ended in {:?}",
        bbr.mode()
    );
}
