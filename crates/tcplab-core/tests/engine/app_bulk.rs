//! Bulk in either direction (issue 9): netperf TCP_MAERTS (the server writes) and
//! iperf3 --bidir (one connection each way at once).
use crate::common;

use common::*;
use tcplab_core::app::Side;
use tcplab_core::config::*;
use tcplab_core::sim::Simulator;

#[test]
fn maerts_carries_data_from_the_server_and_reports_the_servers_sender() {
    // 10 Mbit/s, 10 ms each way, BDP-sized queue. The client (a) connects, the server (b)
    // sends: only the b->a link carries data, and the flow's summary and time series
    // are the server's sender.
    let mut cfg = two_hosts(10_000_000, 10_000_000, 100, 5_000_000_000);
    cfg.flows.push(FlowConfig {
        data_side: Side::Server,
        ..FlowConfig::new("maerts", 0, 1, CcKind::Cubic)
    });
    let out = Simulator::new(cfg).unwrap().run();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    let f = &out.flows[0];
    let payload_rate = 10e6 * 1448.0 / (1448.0 + 52.0 + 14.0);
    let goodput = f.bytes_received as f64 * 8.0 / 5.0;
    assert!(
        goodput > 0.85 * payload_rate && goodput <= payload_rate,
        "goodput {goodput}"
    );
    assert!(f.bytes_acked > 0 && f.bytes_sent >= f.bytes_acked);
    // Data went b -> a; a -> b carried only the SYN and ACKs.
    let (ab, ba) = (&out.links[0].stats, &out.links[1].stats);
    assert!(
        ba.sent_bytes > 10 * ab.sent_bytes,
        "a->b {} B, b->a {} B",
        ab.sent_bytes,
        ba.sent_bytes
    );
    // The time series follow the server's cwnd (the client never sends data: its cwnd
    // would stay at the initial 10).
    let max_cwnd = out.series.cwnd.iter().copied().max().unwrap();
    assert!(max_cwnd > 10, "sampled cwnd never grew: {max_cwnd}");
}

#[test]
fn bidir_runs_one_connection_each_way_at_full_rate() {
    // iperf3 --bidir: two connections from the client, one sending each way; on a
    // full-duplex path each gets the link (ACKs of the other share the wire).
    let mut cfg = two_hosts(10_000_000, 10_000_000, 100, 5_000_000_000);
    cfg.flows
        .push(FlowConfig::new("bidir.fwd", 0, 1, CcKind::Cubic));
    cfg.flows.push(FlowConfig {
        data_side: Side::Server,
        ..FlowConfig::new("bidir.rev", 0, 1, CcKind::Cubic)
    });
    let out = Simulator::new(cfg).unwrap().run();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    let payload_rate = 10e6 * 1448.0 / (1448.0 + 52.0 + 14.0);
    for f in &out.flows {
        let goodput = f.bytes_received as f64 * 8.0 / 5.0;
        // Each direction also carries the other's ACKs (~1 per 2 segments, 66 B each:
        // ~2 % of the wire), so a little below the payload rate.
        assert!(
            goodput > 0.8 * payload_rate,
            "{}: goodput {goodput}",
            f.name
        );
    }
}
