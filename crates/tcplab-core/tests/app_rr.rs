//! netperf TCP_RR over the app interface (issue 9).
mod common;

use common::*;
use tcplab_core::app::{AppInstanceConfig, AppSpec, Side, Value};
use tcplab_core::app::rr::RrConfig;
use tcplab_core::config::*;
use tcplab_core::sim::Simulator;

fn rr_app(flows: Vec<u32>, cfg: RrConfig) -> AppInstanceConfig {
    AppInstanceConfig { name: "rr".into(), flows, spec: AppSpec::Rr(cfg) }
}

fn latency_ms(out: &tcplab_core::app::AppOutput, q: &str) -> f64 {
    match out.get("latency_ms") {
        Some(Value::Map(m)) => m.iter().find(|(k, _)| k == q).and_then(|(_, v)| v.as_f64()).unwrap(),
        other => panic!("latency_ms: {other:?}"),
    }
}

#[test]
fn rr_on_an_idle_path_takes_one_rtt_plus_serialization() {
    // 100 Mbit/s, 5 ms each way: a 1-byte request and response take one RTT (10 ms) plus
    // two 67-byte frames' serialization (~5.4 us each): every transaction ~10.01 ms.
    let mut cfg = two_hosts(100_000_000, 5_000_000, 1000, 2_000_000_000);
    cfg.flows.push(driven_flow("rr", 0, 1, CcKind::Cubic, Side::Client));
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
        assert!((v - expect_ms).abs() < 0.01, "{q} {v} ms, expected {expect_ms}");
    }
    let tps = app.get("transactions_per_sec").unwrap().as_f64().unwrap();
    assert!((tps - 1000.0 / expect_ms).abs() < 2.0, "{tps} tps");
}
