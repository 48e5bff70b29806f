//! fq (Linux v6.12 net/sched/sch_fq.c) in whole runs: maxrate, per-socket pacing rates
//! honoured through EDT timestamps, and SK_PACING_FQ (TCP leaves pacing to fq).

use crate::common;

use common::link;

use tcplab_core::config::*;
use tcplab_core::net::qdisc::Qdisc;
use tcplab_core::sim::Simulator;
use tcplab_core::tcp::sock::PacingStatus;

const SEC: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;
/// Payload per full-size frame as the link counts it (1448 of 1500 IP + 14 Ethernet).
const PAYLOAD_SHARE: f64 = 1448.0 / 1514.0;

/// Host a -> host b over one link with `queue` at a's egress (`rate_bps`, 5 ms each way).
fn two_hosts(
    rate_bps: u64,
    queue: QueueConfig,
    flows: Vec<FlowConfig>,
    duration_ns: u64,
) -> SimConfig {
    SimConfig {
        seed: 1,
        duration_ns,
        sample_interval_ns: 100 * MS,
        nodes: vec![
            NodeConfig::new("a", NodeKind::Host),
            NodeConfig::new("b", NodeKind::Host),
        ],
        links: vec![
            link("ab", 0, 1, rate_bps, 5 * MS, queue),
            link(
                "ba",
                1,
                0,
                rate_bps,
                5 * MS,
                QueueConfig::Pfifo {
                    limit_packets: 1000,
                },
            ),
        ],
        flows,
        apps: Vec::new(),
        max_memory_bytes: DEFAULT_MAX_MEMORY_BYTES,
        capture: None,
    }
}

fn fq() -> FqConfig {
    FqConfig::default()
}

fn goodput_bps(bytes: u64, duration_ns: u64) -> f64 {
    bytes as f64 * 8.0 / (duration_ns as f64 / 1e9)
}

#[test]
fn fq_maxrate_holds_a_bulk_flow_to_the_rate() {
    // 100 Mbit/s link, fq maxrate 10 Mbit/s: a CUBIC bulk flow gets 10 Mbit/s of frames,
    // 10 x 1448/1514 Mbit/s of payload, within 2 % over 30 s.
    let maxrate = 10_000_000;
    let d = 30 * SEC;
    let q = QueueConfig::Fq(FqConfig {
        maxrate_bps: Some(maxrate),
        ..fq()
    });
    let out = Simulator::new(two_hosts(
        100_000_000,
        q,
        vec![FlowConfig::new("f", 0, 1, CcKind::Cubic)],
        d,
    ))
    .unwrap()
    .run();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    let got = goodput_bps(out.flows[0].bytes_received, d);
    let want = maxrate as f64 * PAYLOAD_SHARE;
    assert!(
        (got / want - 1.0).abs() < 0.02,
        "goodput {got:.0} bit/s, expected {want:.0}"
    );
    let xs: std::collections::HashMap<_, _> = out.links[0].xstats.iter().cloned().collect();
    assert!(
        xs["throttled"] > 1000,
        "fq never throttled the flow: {xs:?}"
    );
    assert_eq!(xs["fastpath"], 0, "no fast path with maxrate");
}

#[test]
fn fq_maxrate_on_a_router_holds_forwarded_traffic_to_the_rate() {
    // At a router the packets carry no timestamp (it is cleared off the wire), so fq
    // paces them by quantum at maxrate (fq_dequeue()'s `!skb->tstamp` branch).
    let maxrate = 10_000_000;
    let d = 30 * SEC;
    let q = QueueConfig::Fq(FqConfig {
        maxrate_bps: Some(maxrate),
        ..fq()
    });
    let cfg = common::dumbbell(1, CcKind::Cubic, 100_000_000, 5 * MS, q, d);
    let out = Simulator::new(cfg).unwrap().run();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    let got = goodput_bps(out.flows[0].bytes_received, d);
    let want = maxrate as f64 * PAYLOAD_SHARE;
    assert!(
        (got / want - 1.0).abs() < 0.02,
        "goodput {got:.0} bit/s, expected {want:.0}"
    );
    let xs: std::collections::HashMap<_, _> = out.links[common::bottleneck(1)]
        .xstats
        .iter()
        .cloned()
        .collect();
    assert!(xs["throttled"] > 1000, "{xs:?}");
}

#[test]
fn two_sockets_with_different_pacing_rates_each_get_their_own() {
    // One host, fq on its 100 Mbit/s egress, two CUBIC flows capped by SO_MAX_PACING_RATE
    // at 4 and 10 Mbit/s. Under fq (SK_PACING_FQ) TCP stamps each burst sk_pacing_rate
    // apart (tcp_update_skb_after_send()) and fq holds it to its stamp, so each flow's
    // payload rate is its own pacing rate.
    let d = 20 * SEC;
    let rates = [500_000u64, 1_250_000];
    let flows = rates
        .iter()
        .enumerate()
        .map(|(i, &r)| {
            let mut f = FlowConfig::new(format!("f{i}"), 0, 1, CcKind::Cubic);
            f.tcp.max_pacing_rate_bytes_per_sec = r;
            f
        })
        .collect();
    let sim = Simulator::new(two_hosts(100_000_000, QueueConfig::Fq(fq()), flows, d)).unwrap();
    for ep in [0, 2] {
        assert_eq!(sim.socket(ep).tp.sk_pacing_status, PacingStatus::Fq);
    }
    let out = sim.run();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    for (i, &r) in rates.iter().enumerate() {
        let got = out.flows[i].bytes_received as f64 / (d as f64 / 1e9);
        assert!(
            (got / r as f64 - 1.0).abs() < 0.02,
            "flow {i}: {got:.0} B/s, expected {r}"
        );
    }
}

/// Bytes the sender's egress qdisc released in each `window_ns` from `from_ns` to `to_ns`.
fn bytes_per_window(sim: &mut Simulator, from_ns: u64, to_ns: u64, window_ns: u64) -> Vec<u64> {
    let sent = |sim: &Simulator| match &sim.link(0).qdisc {
        Qdisc::Fifo(f) => f.stats.sent_bytes,
        Qdisc::Timed(q) => q.stats().sent_bytes,
    };
    sim.run_until(from_ns).unwrap();
    let mut last = sent(sim);
    let mut out = Vec::new();
    let mut t = from_ns;
    while t < to_ns {
        t += window_ns;
        sim.run_until(t).unwrap();
        let now = sent(sim);
        out.push(now - last);
        last = now;
    }
    out
}

fn paced_bbr(queue: QueueConfig) -> Simulator {
    // BBR capped at 10 MB/s (80 Mbit/s) on a 1 Gbit/s path: only pacing spaces its
    // packets (a cwnd of 2 BDP would otherwise leave back to back at line rate).
    let mut f = FlowConfig::new("f", 0, 1, CcKind::Bbr);
    f.tcp.max_pacing_rate_bytes_per_sec = 10_000_000;
    Simulator::new(two_hosts(1_000_000_000, queue, vec![f], 6 * SEC)).unwrap()
}

/// Every 5 ms window carries at most the pacing rate's worth of frames plus two TSO
/// bursts, and the whole stretch averages the pacing rate within 2 %.
fn assert_spaced_at_pacing_rate(sim: &mut Simulator) {
    let rate = 10_000_000.0 / PAYLOAD_SHARE; // frame bytes/s
    let window = 5 * MS;
    let w = bytes_per_window(sim, 2 * SEC, 5 * SEC, window);
    // tcp_tso_autosize(): ~1 ms of payload at the pacing rate, whole segments.
    let burst = (10_000_000u64 >> 10) / 1448 * 1514;
    let cap = rate * window as f64 / 1e9 + 2.0 * burst as f64;
    let worst = *w.iter().max().unwrap();
    assert!(
        (worst as f64) <= cap,
        "a 5 ms window carried {worst} bytes, pacing allows {cap:.0}"
    );
    let avg = w.iter().sum::<u64>() as f64 / 3.0;
    assert!(
        (avg / rate - 1.0).abs() < 0.02,
        "{avg:.0} B/s of frames, pacing rate {rate:.0}"
    );
}

#[test]
fn under_fq_a_bbr_sender_stops_its_pacing_timer_and_fq_spaces_its_packets() {
    let mut sim = paced_bbr(QueueConfig::Fq(fq()));
    assert_eq!(sim.socket(0).tp.sk_pacing_status, PacingStatus::Fq);
    assert_spaced_at_pacing_rate(&mut sim);
    assert_eq!(
        sim.socket(0).stats.pacing_timer_events,
        0,
        "TCP paced internally under fq"
    );
    let out = sim.run();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    let xs: std::collections::HashMap<_, _> = out.links[0].xstats.iter().cloned().collect();
    assert!(xs["throttled"] > 0, "{xs:?}");
}

#[test]
fn without_fq_the_same_sender_paces_itself() {
    // The other path: a FIFO egress leaves pacing to TCP's timer (SK_PACING_NEEDED).
    let mut sim = paced_bbr(QueueConfig::Pfifo {
        limit_packets: 1000,
    });
    assert_eq!(sim.socket(0).tp.sk_pacing_status, PacingStatus::Needed);
    assert_spaced_at_pacing_rate(&mut sim);
    assert!(sim.socket(0).stats.pacing_timer_events > 1000);
}

#[test]
fn fq_with_nopacing_leaves_pacing_to_tcp() {
    // `nopacing` (rate_enable 0): fq_classify() does not set SK_PACING_FQ.
    let sim = paced_bbr(QueueConfig::Fq(FqConfig {
        pacing: false,
        ..fq()
    }));
    assert_eq!(sim.socket(0).tp.sk_pacing_status, PacingStatus::Needed);
}

#[test]
fn fq_pacing_set_by_hand_needs_fq_on_the_senders_egress() {
    let mut f = FlowConfig::new("f", 0, 1, CcKind::Cubic);
    f.tcp.fq_pacing = true;
    let cfg = two_hosts(
        100_000_000,
        QueueConfig::Pfifo { limit_packets: 100 },
        vec![f.clone()],
        SEC,
    );
    let err = Simulator::new(cfg).err().unwrap();
    assert!(
        err.starts_with(
            "flows.0.tcp.fq_pacing: true, but the sender's egress qdisc (link ab) is pfifo"
        ),
        "{err}"
    );
    Simulator::new(two_hosts(100_000_000, QueueConfig::Fq(fq()), vec![f], SEC)).unwrap();
}

#[test]
fn tsq_keeps_a_fast_senders_own_fq_far_below_flow_limit() {
    // fq's flow_limit (100) and limit count skbs, and a TSO burst is one skb: TSQ keeps
    // about 1 ms of data (a few skbs) in the sender's own fq, so a single BBR flow at
    // 1 Gbit/s never reaches flow_limit on Linux (flows_plimit stays 0). Counting each
    // MSS segment as a packet made fq drop a third of this flow's packets locally.
    let cfg = two_hosts(
        1_000_000_000,
        QueueConfig::Fq(fq()),
        vec![FlowConfig::new("f", 0, 1, CcKind::Bbr)],
        5 * SEC,
    );
    let out = Simulator::new(cfg).unwrap().run();
    let x: std::collections::HashMap<_, _> = out.links[0].xstats.iter().cloned().collect();
    assert_eq!(x["flows_plimit"], 0, "{:?}", out.links[0].xstats);
    assert_eq!(out.links[0].stats.drops, 0);
    let g = goodput_bps(out.flows[0].bytes_received, 5 * SEC);
    assert!(g > 0.8 * 1e9 * PAYLOAD_SHARE, "goodput {g}");
    assert!(out.invariant.ok, "{}", out.invariant.message);
}

#[test]
fn fq_under_tbf_still_sets_sk_pacing_fq() {
    // tbf's child fq classifies the socket's skbs (tbf_enqueue() -> fq_enqueue() ->
    // fq_classify(), Linux v6.12 net/sched/sch_tbf.c, sch_fq.c): SK_PACING_FQ as at top level.
    let tbf = |child: QueueConfig| {
        QueueConfig::Tbf(TbfConfig {
            rate_bps: 50_000_000,
            burst_bytes: 64_000,
            limit_bytes: 1_000_000,
            peakrate_bps: None,
            mtu_bytes: None,
            child: Some(Box::new(child)),
        })
    };
    let sim = paced_bbr(tbf(QueueConfig::Fq(fq())));
    assert_eq!(sim.socket(0).tp.sk_pacing_status, PacingStatus::Fq);
    let sim = paced_bbr(tbf(QueueConfig::Fq(FqConfig {
        pacing: false,
        ..fq()
    })));
    assert_eq!(sim.socket(0).tp.sk_pacing_status, PacingStatus::Needed);
}
