//! netperf TCP_RR over the app interface (issue 9).
use crate::common;

use common::*;
use tcplab_core::app::rr::RrConfig;
use tcplab_core::app::{AppInstanceConfig, AppSpec, Side, Value};
use tcplab_core::config::*;
use tcplab_core::sim::Simulator;

fn rr_app(flows: Vec<u32>, cfg: RrConfig) -> AppInstanceConfig {
    AppInstanceConfig {
        name: "rr".into(),
        flows,
        spec: AppSpec::Rr(cfg),
    }
}

fn latency_ms(out: &tcplab_core::app::AppOutput, q: &str) -> f64 {
    match out.get("latency_ms") {
        Some(Value::Map(m)) => m
            .iter()
            .find(|(k, _)| k == q)
            .and_then(|(_, v)| v.as_f64())
            .unwrap(),
        other => panic!("latency_ms: {other:?}"),
    }
}

#[test]
fn rr_on_an_idle_path_takes_one_rtt_plus_serialization() {
    // 100 Mbit/s, 5 ms each way: a 1-byte request and response take one RTT (10 ms) plus
    // two 67-byte frames' serialization (~5.4 us each): every transaction ~10.01 ms.
    let mut cfg = two_hosts(100_000_000, 5_000_000, 1000, 2_000_000_000);
    cfg.flows
        .push(driven_flow("rr", 0, 1, CcKind::Cubic, Side::Client));
    cfg.apps.push(rr_app(vec![0], RrConfig::default()));
    let out = Simulator::new(cfg).unwrap().run();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    let app = &out.apps[0];
    let n = app.get("transactions").unwrap().as_u64().unwrap();
    // ~2 s minus the handshake, one transaction per 10 ms.
    assert!((190..=200).contains(&n), "{n} transactions");
    let frame_ns = (1 + 52 + 20 + 14) as f64 * 8.0 / 100e6 * 1e9;
    let expect_ms = (10e6 + 2.0 * frame_ns) / 1e6;
    for q in ["p50", "p99", "max"] {
        let v = latency_ms(app, q);
        assert!(
            (v - expect_ms).abs() < 0.01,
            "{q} {v} ms, expected {expect_ms}"
        );
    }
    let tps = app.get("transactions_per_sec").unwrap().as_f64().unwrap();
    assert!((tps - 1000.0 / expect_ms).abs() < 2.0, "{tps} tps");
}

#[test]
fn a_bulk_flow_through_a_deep_droptail_queue_adds_its_delay_to_rr_latency() {
    // 10 Mbit/s, 5 ms each way, a pfifo of 200 packets at the bottleneck: full, it holds
    // 200 x 1514 B = 242 ms. A CUBIC bulk flow keeps it between ~70 % (beta 0.7 after a
    // loss) and full; the rr client queues its requests behind it, so the typical
    // transaction takes about the queue's delay longer. The queue is a router's (r1 -> r2
    // of a dumbbell): a sender's own qdisc would not fill (TSQ keeps a flow's bytes there
    // to about a millisecond's worth).
    let queue_full_ms = 200.0 * 1514.0 * 8.0 / 10e6 * 1e3;
    let run = |with_bulk: bool| {
        let mut cfg = dumbbell(
            1,
            CcKind::Cubic,
            10_000_000,
            5_000_000,
            QueueConfig::Pfifo { limit_packets: 200 },
            30_000_000_000,
        );
        let dst = 1;
        cfg.flows.clear();
        cfg.flows
            .push(driven_flow("rr", 0, dst, CcKind::Cubic, Side::Client));
        cfg.apps.push(rr_app(vec![0], RrConfig::default()));
        if with_bulk {
            cfg.flows
                .push(FlowConfig::new("bulk", 0, dst, CcKind::Cubic));
        }
        let out = Simulator::new(cfg).unwrap().run();
        assert!(out.invariant.ok, "{}", out.invariant.message);
        let a = &out.apps[0];
        let q = |k| latency_ms(a, k);
        ([q("p50"), q("p90"), q("p99")], out.flows[0].retrans_segs)
    };
    let (idle, idle_rtx) = run(false);
    let (busy, busy_rtx) = run(true);
    // Idle: 10 ms plus 4 us of access links and two small frames at 10 Mbit/s.
    assert!(
        idle[2] < 10.3 && idle_rtx == 0,
        "idle p99 {} ms, {idle_rtx} retransmissions",
        idle[2]
    );
    for (k, name) in [(0, "p50"), (1, "p90")] {
        let added = busy[k] - idle[k];
        assert!(
            added > 0.6 * queue_full_ms && added <= 1.02 * queue_full_ms,
            "{name} rose by {added} ms; the full queue is {queue_full_ms} ms"
        );
    }
    // p99 rises by at least the queue's delay at its fullest; a request or response
    // dropped at the full queue (the rr flow shares the drop-tail queue) adds one RTO on
    // top, never more than one (>= 200 ms, <= 200 ms + srtt + 4 x rttvar ~ 1 s here).
    let added = busy[2] - idle[2];
    assert!(
        added > 0.8 * queue_full_ms,
        "p99 rose by {added} ms only; the full queue is {queue_full_ms} ms"
    );
    if added > 1.02 * queue_full_ms {
        assert!(busy_rtx > 0, "p99 rose by {added} ms, beyond the queue's {queue_full_ms} ms, without a retransmission");
        assert!(
            added - queue_full_ms >= 200.0 && added - queue_full_ms < 1000.0,
            "p99 rose by {added} ms"
        );
    }
}

#[test]
fn a_stopped_rr_flow_counts_its_rate_up_to_its_stop() {
    // Open from ~10 ms to 1 s of a 3 s run: ~99 transactions at one per 10 ms; the rate is
    // over the time the flow ran, not the whole run.
    let mut cfg = two_hosts(100_000_000, 5_000_000, 1000, 3_000_000_000);
    let mut f = driven_flow("rr", 0, 1, CcKind::Cubic, Side::Client);
    f.stop_ns = Some(1_000_000_000);
    cfg.flows.push(f);
    cfg.apps.push(rr_app(vec![0], RrConfig::default()));
    let out = Simulator::new(cfg).unwrap().run();
    let app = &out.apps[0];
    let n = app.get("transactions").unwrap().as_u64().unwrap();
    assert!((95..=100).contains(&n), "{n} transactions");
    let tps = app.get("transactions_per_sec").unwrap().as_f64().unwrap();
    assert!((tps - 100.0).abs() < 3.0, "{tps} tps");
}

#[test]
fn two_apps_may_not_share_a_name() {
    let mut cfg = two_hosts(100_000_000, 5_000_000, 1000, 1_000_000_000);
    cfg.flows
        .push(driven_flow("a", 0, 1, CcKind::Cubic, Side::Client));
    cfg.flows
        .push(driven_flow("b", 0, 1, CcKind::Cubic, Side::Client));
    cfg.apps.push(rr_app(vec![0], RrConfig::default()));
    cfg.apps.push(rr_app(vec![1], RrConfig::default()));
    let err = tcplab_core::sim::validate(&cfg).unwrap_err();
    assert!(
        err.starts_with("apps.1.name: \"rr\" is already the name of apps.0"),
        "{err}"
    );
}
