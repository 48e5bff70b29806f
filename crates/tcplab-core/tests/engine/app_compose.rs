//! Apps compose (issue 9): rr beside bulk beside hls on one topology, each reporting its
//! own metrics, and a driven flow's app never hears about another app's flows.
use crate::common;

use common::*;
use tcplab_core::app::hls::{HlsConfig, Profile};
use tcplab_core::app::rr::RrConfig;
use tcplab_core::app::{AppInstanceConfig, AppSpec, Side, Value};
use tcplab_core::config::*;
use tcplab_core::sim::Simulator;

fn ms(v: Option<&Value>, q: &str) -> f64 {
    match v {
        Some(Value::Map(m)) => m
            .iter()
            .find(|(k, _)| k == q)
            .and_then(|(_, v)| v.as_f64())
            .unwrap(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn rr_beside_bulk_beside_hls_on_one_dumbbell() {
    // Three clients behind a 50 Mbit/s, 10 ms (one way) bottleneck with a 100-packet
    // pfifo at r1 -> r2; the servers are one host (dst). rr (client s0) and bulk
    // (s1 -> dst) share r1 -> r2; the video (viewer s2, data from dst) comes back over
    // r2 -> r1, which carries only ACKs and rr's responses besides.
    let mut cfg = dumbbell(
        3,
        CcKind::Cubic,
        50_000_000,
        10_000_000,
        QueueConfig::Pfifo { limit_packets: 100 },
        30_000_000_000,
    );
    let dst = 3;
    cfg.flows.clear();
    cfg.flows
        .push(driven_flow("rr", 0, dst, CcKind::Cubic, Side::Client));
    cfg.flows
        .push(FlowConfig::new("bulk", 1, dst, CcKind::Cubic));
    cfg.flows
        .push(driven_flow("video", 2, dst, CcKind::Bbr, Side::Server));
    cfg.apps.push(AppInstanceConfig {
        name: "rr".into(),
        flows: vec![0],
        spec: AppSpec::Rr(RrConfig::default()),
    });
    let hls = HlsConfig {
        profiles: vec![
            Profile {
                name: "HD".into(),
                bitrate_bps: 3_000_000,
            },
            Profile {
                name: "low".into(),
                bitrate_bps: 800_000,
            },
        ],
        ..HlsConfig::default()
    };
    cfg.apps.push(AppInstanceConfig {
        name: "video".into(),
        flows: vec![2],
        spec: AppSpec::Hls(hls),
    });
    let out = Simulator::new(cfg).unwrap().run();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    assert_eq!(out.apps.len(), 2);
    let (rr, video) = (&out.apps[0], &out.apps[1]);
    assert_eq!((rr.kind, video.kind), ("rr", "hls"));

    // rr's requests queue behind the bulk flow at r1: its latency is the 20 ms RTT plus
    // some of the 100-packet queue (24 ms full at 50 Mbit/s), never less than the RTT.
    let p50 = ms(rr.get("latency_ms"), "p50");
    assert!(p50 > 20.0 && p50 < 20.0 + 30.0, "rr p50 {p50} ms");
    assert!(rr.get("transactions").unwrap().as_u64().unwrap() > 500);
    // The bulk flow keeps most of the bottleneck.
    let bulk = &out.flows[1];
    let goodput = bulk.bytes_received as f64 * 8.0 / 30.0;
    assert!(goodput > 0.7 * 50e6, "bulk goodput {goodput}");
    // The video's direction is lightly loaded: it plays without a stall.
    assert_eq!(
        video.get("stalls").and_then(|v| v.as_u64()),
        Some(0),
        "{:?}",
        video.summary
    );
    // Each app's tables hold only its own flows; the video fetched segments all along.
    match rr.table("requests").and_then(|t| t.column("flow")) {
        Some(tcplab_core::app::Column::U32(v)) => {
            assert!(!v.is_empty() && v.iter().all(|&f| f == 0))
        }
        other => panic!("rr requests.flow: {other:?}"),
    }
    assert!(
        video.get("segments").and_then(|v| v.as_u64()).unwrap() >= 10,
        "{:?}",
        video.summary
    );
    // The bulk flow is not driven: its summary is the plain bulk one, and its bytes are
    // not counted by either app.
    assert!(bulk.bytes_received > 100 * 1_000_000);
}
