//! The NIC receive model (`host::nic`, `host::allowance`): a burst into a small ring loses
//! exactly the excess, and the allowance queues and drops beyond its bucket.
use crate::common;

use common::*;
use tcplab_core::config::*;
use tcplab_core::sim::{SimOutput, Simulator};

const MS: u64 = 1_000_000;
const FRAME_BYTES: u64 = 1514; // a full-sized segment as the links count it

/// A fan-in: `n` CUBIC senders start together, each sends its initial window at once
/// (IW10, no pacing), and the bursts meet at the 1 Gbit/s bottleneck, which hands them to
/// the receiver back to back, one frame every `frame_ns`. The RTT is 100 ms and the run
/// ends before any second window arrives.
fn fan_in(n: usize, nic: NicConfig) -> SimConfig {
    let mut cfg = dumbbell(
        n,
        CcKind::Cubic,
        1_000_000_000,
        49 * MS,
        QueueConfig::Pfifo {
            limit_packets: 10_000,
        },
        180 * MS,
    );
    cfg.nodes[n].nic = Some(nic);
    cfg
}

fn frame_ns() -> f64 {
    FRAME_BYTES as f64 * 8.0 // at 1 Gbit/s
}

fn ethtool(out: &SimOutput, host: usize, name: &str) -> u64 {
    let nic = out.hosts[host].nic.as_ref().expect("a nic");
    nic.ethtool
        .iter()
        .find(|(k, _)| k == name)
        .unwrap_or_else(|| panic!("no {name} in {:?}", nic.ethtool))
        .1
}

/// Frames of the burst as they reach the receiver's NIC, relative to the first: sender k
/// gets its SYN-ACK `k x cost_ns` after sender 0 (the receiver's NAPI processes the
/// SYNs, which arrive together, one every `cost_ns`), sends its `iw` frames at once, and
/// the bottleneck serializes them in order, one every `s_ns`.
fn burst_arrivals(n: u64, iw: u64, cost_ns: u64, s_ns: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut finish = 0;
    for k in 0..n {
        for _ in 0..iw {
            finish = finish.max(k * cost_ns) + s_ns;
            out.push(finish);
        }
    }
    out
}

/// Ring drops of `arrivals` (sorted, ns) at a ring of `ring` descriptors: a packet holds
/// its descriptor until its processing ends; processing starts `irq_ns` after a packet
/// finds the ring empty and takes `cost_ns` per packet, back to back while the ring has
/// packets (`host::nic`).
fn expected_ring_drops(arrivals: &[u64], ring: u64, cost_ns: u64, irq_ns: u64) -> u64 {
    let (mut len, mut drops, mut next_done) = (0u64, 0u64, None::<u64>);
    for &a in arrivals {
        while let Some(d) = next_done.filter(|&d| d <= a) {
            assert_ne!(
                d, a,
                "a tie between an arrival and a departure: pick other figures"
            );
            len -= 1;
            next_done = (len > 0).then_some(d + cost_ns);
        }
        if len >= ring {
            drops += 1;
            continue;
        }
        len += 1;
        if next_done.is_none() {
            next_done = Some(a + irq_ns + cost_ns);
        }
    }
    drops
}

#[test]
fn a_burst_beyond_the_free_descriptors_loses_exactly_the_excess() {
    let s = 12_112; // 1514 bytes at 1 Gbit/s
    let irq_ns = 3_000;
    // (senders, initial window, ring, cost): one burst that all arrives before the first
    // packet is processed (loss = burst - ring), then fan-ins whose drain frees
    // descriptors between and during the bursts.
    for (n, iw, ring, cost_ns) in [
        (1usize, 40u32, 16u32, 2_000_000u64),
        (8, 10, 16, 2_000_000),
        (8, 10, 16, 50_000),
        (8, 10, 32, 20_000),
    ] {
        let nic = NicConfig {
            rx_ring: ring,
            rx_cost_ns: cost_ns,
            irq_delay_ns: irq_ns,
            ..NicConfig::default()
        };
        let mut cfg = fan_in(n, nic);
        for f in cfg.flows.iter_mut() {
            f.tcp.initial_cwnd = iw;
        }
        let out = Simulator::new(cfg).unwrap().run();
        let burst = n as u64 * iw as u64;
        let arrivals = burst_arrivals(n as u64, iw as u64, cost_ns, s);
        let want = expected_ring_drops(&arrivals, ring as u64, cost_ns, irq_ns);
        if n == 1 {
            assert!(arrivals[arrivals.len() - 1] < arrivals[0] + irq_ns + cost_ns);
            assert_eq!(want, burst - ring as u64);
        }
        // Everything of the burst reached the receiver's NIC: n SYNs, then the burst.
        let last = out.links.len() - 2; // r2 -> dst
        assert_eq!(
            out.links[last].wire.delivered_packets,
            n as u64 + burst,
            "case {n} x {iw}"
        );
        assert_eq!(
            ethtool(&out, n, "rx_drops"),
            want,
            "{n} x {iw} into ring {ring}, cost {cost_ns}"
        );
        assert_eq!(out.invariant.data.dropped.nic, want);
        assert!(out.invariant.ok, "{}", out.invariant.message);
        // What was not dropped went to TCP, packet by packet (SYNs included), or waits.
        assert_eq!(
            ethtool(&out, n, "queue_0_rx_cnt") + out.invariant.in_flight,
            n as u64 + burst - want
        );
    }
}

#[test]
fn ring_overflow_is_counted_under_each_drivers_name() {
    for (driver, name) in [
        ("ixgbe", "rx_missed_errors"),
        ("mlx5", "rx_out_of_buffer"),
        ("virtio", "rx_queue_0_drops"),
    ] {
        // One sender's initial window of 40 into 16 descriptors that drain slower than it.
        let nic = NicConfig {
            driver: driver.into(),
            rx_ring: 16,
            rx_cost_ns: 2_000_000,
            ..NicConfig::default()
        };
        let mut cfg = fan_in(1, nic);
        cfg.flows[0].tcp.initial_cwnd = 40;
        let out = Simulator::new(cfg).unwrap().run();
        assert_eq!(ethtool(&out, 1, name), 40 - 16, "{driver}");
        assert_eq!(out.hosts[1].nic.as_ref().unwrap().driver, driver);
    }
}

#[test]
fn the_allowance_passes_its_bucket_then_queues_then_drops() {
    let n = 8;
    let burst = n as u64 * TcpConfig::default().initial_cwnd as u64;
    let (rate_bps, bucket_frames, queue) = (10_000_000u64, 20u64, 10u32);
    let allowance = AllowanceConfig {
        rate_bps,
        burst_bytes: bucket_frames * FRAME_BYTES,
        pps: None,
        pps_burst: None,
        queue_packets: queue,
    };
    let nic = NicConfig {
        rx_ring: 1024,
        rx_cost_ns: 1_000,
        allowance: Some(allowance),
        ..NicConfig::default()
    };
    let out = Simulator::new(fan_in(n, nic)).unwrap().run();
    // The model: a full bucket (the SYNs' 8 small frames were refilled long before), one
    // frame's tokens take 1.2 ms at 10 Mbit/s, longer than the whole burst (1 ms), so the
    // first `bucket_frames` pass, the next `queue` wait, the rest are dropped; every
    // packet that did not pass counts in bw_in_allowance_exceeded.
    assert!(FRAME_BYTES as f64 * 8.0 / rate_bps as f64 * 1e9 > burst as f64 * frame_ns());
    let dropped = burst - bucket_frames - queue as u64;
    assert_eq!(
        ethtool(&out, n, "bw_in_allowance_exceeded"),
        burst - bucket_frames
    );
    assert_eq!(ethtool(&out, n, "pps_allowance_exceeded"), 0);
    assert_eq!(out.invariant.data.dropped.nic, dropped);
    assert_eq!(ethtool(&out, n, "rx_drops"), 0);
    // The queued ones were released at the allowance's rate and reached TCP by the end.
    assert_eq!(
        ethtool(&out, n, "queue_0_rx_cnt"),
        n as u64 + bucket_frames + queue as u64
    );
    assert!(out.invariant.ok, "{}", out.invariant.message);
}

/// The most descriptors `arrivals` (sorted, ns) hold at once in a ring large enough for
/// all of them, under the model of [`expected_ring_drops`].
fn expected_ring_peak(arrivals: &[u64], cost_ns: u64, irq_ns: u64) -> u64 {
    let (mut len, mut peak, mut next_done) = (0u64, 0u64, None::<u64>);
    for &a in arrivals {
        while let Some(d) = next_done.filter(|&d| d <= a) {
            assert_ne!(
                d, a,
                "a tie between an arrival and a departure: pick other figures"
            );
            len -= 1;
            next_done = (len > 0).then_some(d + cost_ns);
        }
        len += 1;
        peak = peak.max(len);
        if next_done.is_none() {
            next_done = Some(a + irq_ns + cost_ns);
        }
    }
    peak
}

#[test]
fn held_packets_count_as_in_flight_and_the_series_shows_the_ring() {
    // A slow drain stopped mid-way: packets still in the ring are in flight. (The 3 us
    // interrupt delay keeps every departure off an arrival's nanosecond.)
    let (cost_ns, irq_ns) = (1_000_000, 3_000);
    let nic = NicConfig {
        rx_ring: 64,
        rx_cost_ns: cost_ns,
        irq_delay_ns: irq_ns,
        ..NicConfig::default()
    };
    let mut cfg = fan_in(4, nic);
    cfg.duration_ns = 150 * MS + 20 * MS; // the burst arrives at ~150 ms, drains 1/ms
    cfg.sample_interval_ns = MS;
    let out = Simulator::new(cfg).unwrap().run();
    assert!(out.invariant.in_flight > 0);
    assert!(out.invariant.ok, "{}", out.invariant.message);
    let hs = &out.host_series;
    assert!(hs.host.iter().all(|&h| h == 4));
    // The ring peaks when sender 3's initial window has arrived: 4 x 10 frames, less the
    // ones drained meanwhile (one per ms from the first frame on). The occupancy only rises
    // at arrivals, and drains at most one packet per ms after the peak; the samples are
    // 1 ms apart, so one of them falls within 1 ms after the peak and sees it or one less.
    let peak = expected_ring_peak(&burst_arrivals(4, 10, cost_ns, 12_112), cost_ns, irq_ns);
    let sampled = *hs.rx_ring_used.iter().max().unwrap() as u64;
    assert!(
        sampled == peak || sampled + 1 == peak,
        "peak ring use {sampled} in the series, {peak} by the model"
    );
    assert!(hs.cpu_on.iter().all(|&c| c == 1));
}

#[test]
fn bad_nic_and_cpu_settings_are_refused_by_field() {
    let base = fan_in(2, NicConfig::default());
    tcplab_core::sim::validate(&base).unwrap();
    type Edit = Box<dyn Fn(&mut SimConfig)>;
    let cases: Vec<(&str, Edit)> = vec![
        (
            "nodes.2.nic.rx_ring: 0 is outside [1, 65536], expected at least 1 descriptor",
            Box::new(|c| c.nodes[2].nic.as_mut().unwrap().rx_ring = 0),
        ),
        (
            "nodes.2.nic.rx_queues: 0",
            Box::new(|c| c.nodes[2].nic.as_mut().unwrap().rx_queues = 0),
        ),
        (
            "nodes.2.nic.napi_weight: 0",
            Box::new(|c| c.nodes[2].nic.as_mut().unwrap().napi_weight = 0),
        ),
        (
            "nodes.2.nic.allowance.rate_bps: 0 is outside",
            Box::new(|c| {
                c.nodes[2].nic.as_mut().unwrap().allowance = Some(AllowanceConfig {
                    rate_bps: 0,
                    burst_bytes: 10_000,
                    pps: None,
                    pps_burst: None,
                    queue_packets: 1,
                })
            }),
        ),
        (
            "nodes.2.nic.allowance.burst_bytes: 100 is outside [1514,",
            Box::new(|c| {
                c.nodes[2].nic.as_mut().unwrap().allowance = Some(AllowanceConfig {
                    rate_bps: 1,
                    burst_bytes: 100,
                    pps: None,
                    pps_burst: None,
                    queue_packets: 1,
                })
            }),
        ),
        (
            "nodes.0.cpu.share: 0 is outside (0, 1]",
            Box::new(|c| {
                c.nodes[0].cpu = Some(CpuConfig {
                    period_ns: 10,
                    share: 0.0,
                    phase_ns: 0,
                })
            }),
        ),
        (
            "nodes.1.cpu.share: 1.2 is outside (0, 1]",
            Box::new(|c| {
                c.nodes[1].cpu = Some(CpuConfig {
                    period_ns: 10,
                    share: 1.2,
                    phase_ns: 0,
                })
            }),
        ),
        (
            "nodes.0.cpu.period_ns: 0 is outside",
            Box::new(|c| {
                c.nodes[0].cpu = Some(CpuConfig {
                    period_ns: 0,
                    share: 0.5,
                    phase_ns: 0,
                })
            }),
        ),
        (
            "nodes.0.cpu.phase_ns: 10 is not below period_ns (10)",
            Box::new(|c| {
                c.nodes[0].cpu = Some(CpuConfig {
                    period_ns: 10,
                    share: 0.5,
                    phase_ns: 10,
                })
            }),
        ),
        (
            "nodes.3.cpu: node r1 is a router",
            Box::new(|c| {
                c.nodes[3].cpu = Some(CpuConfig {
                    period_ns: 10,
                    share: 0.5,
                    phase_ns: 0,
                })
            }),
        ),
        (
            "nodes.4.nic: node r2 is a router",
            Box::new(|c| c.nodes[4].nic = Some(NicConfig::default())),
        ),
    ];
    for (want, edit) in cases {
        let mut c = base.clone();
        edit(&mut c);
        let err = Simulator::new(c).err().unwrap();
        assert!(err.starts_with(want), "want {want:?}, got {err:?}");
        assert!(!err.contains('\n'));
    }
}

#[test]
fn the_memory_estimate_counts_the_rings_and_refuses_huge_ones_by_field() {
    use tcplab_core::packet::Packet;
    let mut cfg = fan_in(1, NicConfig::default());
    let e = tcplab_core::memory::estimate(&cfg);
    assert!(
        e.hosts_bytes >= 1024 * std::mem::size_of::<Packet>() as u64,
        "{e:?}"
    );
    assert_eq!(
        e.total_bytes,
        e.series_bytes + e.endpoints_bytes + e.packets_bytes + e.hosts_bytes
    );
    cfg.nodes[1].nic = Some(NicConfig {
        rx_ring: 65536,
        rx_queues: 1024,
        ..NicConfig::default()
    });
    let err = tcplab_core::sim::validate(&cfg).unwrap_err();
    assert!(
        err.starts_with("nodes.1.nic: 65536 descriptors x 1024 queues"),
        "{err}"
    );
}

#[test]
fn traffic_a_node_forwards_to_its_pod_takes_its_nic_and_cpu_too() {
    // s0 -> worker (a node carrying a pod: `forwarding`) -> veth -> pod. The worker's NIC
    // has a 16-descriptor ring at 50 us of CPU per packet, and the worker has 30 % of its
    // CPU: whatever the packets' destination (the worker or its pod), they all cross its
    // ring and NAPI (the forwarding runs in the same softirq, Linux v6.12 net/core/dev.c:
    // __netif_receive_skb() -> ip_rcv() -> ip_forward()), so both flows together get at
    // most 0.3 / 50 us = 6000 frames/s.
    let d = 2_000_000_000;
    let mut cfg = dumbbell(
        1,
        CcKind::Cubic,
        1_000_000_000,
        MS,
        QueueConfig::Pfifo {
            limit_packets: 1000,
        },
        d,
    );
    let (worker, pod) = (1u32, 4u32);
    cfg.nodes[worker as usize].forwarding = true;
    cfg.nodes[worker as usize].cpu = Some(CpuConfig {
        period_ns: 10 * MS,
        share: 0.3,
        phase_ns: 0,
    });
    cfg.nodes[worker as usize].nic = Some(NicConfig {
        rx_ring: 16,
        rx_cost_ns: 50_000,
        ..NicConfig::default()
    });
    cfg.nodes.push(NodeConfig::new("pod", NodeKind::Host));
    for (from, to) in [(worker, pod), (pod, worker)] {
        let mut l = cfg.links[0].clone();
        (l.name, l.from, l.to, l.rate_bps, l.delay_ns, l.orphan) =
            (format!("veth{from}{to}"), from, to, 10_000_000_000, 0, true);
        cfg.links.push(l);
    }
    let mut to_worker = cfg.flows[0].clone();
    cfg.flows[0].dst = pod;
    to_worker.name = "to-worker".into();
    cfg.flows.push(to_worker);
    let out = Simulator::new(cfg).unwrap().run();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    let mbps = |i: usize| out.flows[i].bytes_received as f64 * 8.0 / (d as f64 / 1e9) / 1e6;
    let cap_mbps = 0.3 / 50e-6 * 1448.0 * 8.0 / 1e6;
    assert!(
        mbps(0) + mbps(1) <= cap_mbps * 1.01,
        "to the pod {:.1} + to the worker {:.1} Mbit/s, the ring carries {cap_mbps:.1}",
        mbps(0),
        mbps(1)
    );
    assert!(
        mbps(0) > 1.0 && mbps(1) > 1.0,
        "{:.1} {:.1}",
        mbps(0),
        mbps(1)
    );
}
