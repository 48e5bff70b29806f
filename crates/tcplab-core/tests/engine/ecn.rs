//! ECN (RFC 3168) in TCP, DCTCP and the marking qdiscs, as Linux v6.12 has them
//! (`tcp::ecn`, `cc::dctcp`, `net::qdisc::{codel, fq_codel, fq}`). Expected values are
//! derived in the comments from the kernel's rules, never copied from a run.

use crate::common;
use common::*;
use tcplab_core::capture::{CaptureAt, CaptureConfig, DIR_OUT};
use tcplab_core::cc::dctcp::{Dctcp, DCTCP_MAX_ALPHA};
use tcplab_core::cc::CongestionOps;
use tcplab_core::config::*;
use tcplab_core::net::qdisc::fq::Fq;
use tcplab_core::net::qdisc::{Dequeue, TimedQdisc};
use tcplab_core::packet::{ecn, flags, Packet};
use tcplab_core::sim::{SimOutput, Simulator};
use tcplab_core::tcp::ecn::{TCP_ECN_OK, TCP_ECN_SEEN};
use tcplab_core::tcp::sock::TcpSock;

const S: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;

fn run(cfg: SimConfig) -> SimOutput {
    Simulator::new(cfg).unwrap().run()
}

fn counter(out: &SimOutput, flow: usize, name: &str) -> u64 {
    let m = tcplab_core::mib::Mib::ALL
        .into_iter()
        .find(|m| m.nstat_name() == name)
        .unwrap();
    out.flows[flow].counters.get(m)
}

fn xstat(out: &SimOutput, link: usize, name: &str) -> u64 {
    out.links[link]
        .xstats
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, v)| v)
        .unwrap()
}

/// One flow through a 20 Mbit/s bottleneck with `queue`, 10 ms each way.
fn one_flow(cc: CcKind, tcp_ecn: [u8; 2], queue: QueueConfig, duration_ns: u64) -> SimConfig {
    let mut cfg = dumbbell(1, cc, 20_000_000, 10 * MS, queue, duration_ns);
    cfg.flows[0].tcp.tcp_ecn = tcp_ecn;
    cfg
}

fn fq_codel(ce_threshold_ns: Option<u64>) -> QueueConfig {
    QueueConfig::FqCodel(FqCodelConfig {
        ce_threshold_ns,
        ..FqCodelConfig::default()
    })
}

fn ecn_ok(flags: u8) -> bool {
    flags & TCP_ECN_OK != 0
}

#[test]
fn negotiation_follows_tcp_ecn_on_both_ends() {
    // tcp_ecn_send_syn(): the client asks only with tcp_ecn = 1; tcp_ecn_create_request():
    // the server accepts with tcp_ecn 1 or 2, refuses with 0.
    for client in 0..=2u8 {
        for server in 0..=2u8 {
            let out = run(one_flow(
                CcKind::Cubic,
                [client, server],
                fq_codel(None),
                S / 2,
            ));
            let f = &out.flows[0];
            let want = client == 1 && server != 0;
            assert_eq!(
                ecn_ok(f.ecn.sender_flags),
                want,
                "tcp_ecn {client}/{server}"
            );
            assert_eq!(
                ecn_ok(f.ecn.receiver_flags),
                want,
                "tcp_ecn {client}/{server}"
            );
            // ECT(0) on every new data segment, and only then (no loss here, so no
            // retransmission); the pure ACKs and the handshake are not-ECT.
            // (fq_codel may have marked some CE on the way.)
            let ect0 = counter(&out, 0, "IpExtInECT0Pkts") + counter(&out, 0, "IpExtInCEPkts");
            if want {
                // (The segments still in flight at the end were sent, not received.)
                let received = f.bytes_received / MSS;
                assert!(
                    (received..=f.data_segs_out).contains(&ect0),
                    "tcp_ecn {client}/{server}: {ect0} ECT of {received} received"
                );
                assert!(f.ecn.receiver_flags & TCP_ECN_SEEN != 0);
            } else {
                assert_eq!(ect0, 0, "tcp_ecn {client}/{server}");
            }
            assert_eq!(counter(&out, 0, "IpExtInECT1Pkts"), 0);
        }
    }
}

#[test]
fn dctcp_negotiates_whatever_tcp_ecn_says_and_falls_back_to_reno_without_it() {
    // TCP_CONG_NEEDS_ECN: a DCTCP client asks, a DCTCP server accepts, tcp_ecn 0 or not.
    let out = run(one_flow(CcKind::Dctcp, [0, 0], fq_codel(None), S / 2));
    assert!(ecn_ok(out.flows[0].ecn.sender_flags));
    assert_eq!(out.flows[0].cc, "dctcp");
    // Every DCTCP packet is ECT(0), the SYN, the SYN-ACK and the ACKs too
    // (tcp_assign_congestion_control(): INET_ECN_xmit() for TCP_CONG_NEEDS_ECN).
    assert_eq!(counter(&out, 0, "IpExtInNoECTPkts"), 0);
    // A receiver running CUBIC with tcp_ecn 0 refuses: dctcp_init() falls back to
    // dctcp-reno, which sends not-ECT.
    let mut cfg = one_flow(CcKind::Dctcp, [0, 0], fq_codel(None), S / 2);
    cfg.flows[0].receiver_cc = Some(CcKind::Cubic);
    let out = run(cfg);
    assert!(!ecn_ok(out.flows[0].ecn.sender_flags));
    assert_eq!(out.flows[0].cc, "dctcp-reno");
    assert_eq!(counter(&out, 0, "IpExtInECT0Pkts"), 1, "only the DCTCP SYN");
    assert!(out.flows[0].ecn.dctcp.is_none());
}

#[test]
fn fq_codel_marks_ect_packets_where_it_drops_not_ect_ones() {
    // The same CUBIC flow through fq_codel (ecn on, its default): without ECN CoDel drops,
    // with ECN it marks the packets it would have dropped and nothing is lost.
    let b = bottleneck(1);
    let off = run(one_flow(CcKind::Cubic, [2, 2], fq_codel(None), 10 * S));
    assert!(off.links[b].stats.drops > 0);
    assert_eq!(xstat(&off, b, "ecn_mark"), 0);
    let on = run(one_flow(CcKind::Cubic, [1, 2], fq_codel(None), 10 * S));
    let marks = xstat(&on, b, "ecn_mark");
    assert!(marks > 0);
    assert_eq!(on.links[b].stats.drops, 0);
    assert_eq!(on.flows[0].retrans_segs, 0);
    // Every mark reaches the receiver (nothing is lost after the bottleneck).
    assert_eq!(counter(&on, 0, "IpExtInCEPkts"), marks);
    // The sender learnt of them: delivered_ce counts the packets an ECE-ACK delivered,
    // TcpExtTCPDeliveredCE the same.
    let f = &on.flows[0];
    assert!(f.ecn.delivered_ce > 0);
    assert_eq!(counter(&on, 0, "TcpExtTCPDeliveredCE"), f.ecn.delivered_ce);
}

#[test]
fn one_window_reduction_per_round_trip_however_many_marks() {
    // An EDT aggregate at 10 Mbit/s on the sender's uplink (fq holds the stamps) that
    // marks every packet it delays (threshold 0): nearly every data packet arrives CE.
    // tcp_enter_cwr() starts a reduction only from Open/Disorder, and CWR lasts until
    // snd_una passes high_seq (the snd_nxt of its start): at least one round trip. Each
    // reduction queues one CWR flag for the next new segment, so consecutive CWR segments
    // are at least a round trip (20 ms of propagation) apart, however many marks came.
    let mut cfg = one_flow(CcKind::Cubic, [1, 2], fq_codel(None), 5 * S);
    cfg.links[0].queue = QueueConfig::Fq(FqConfig::default());
    cfg.links[0].edt = vec![EdtConfig {
        nodes: vec![0],
        rate_bps: 10_000_000,
        drop_horizon_ns: 2 * S,
        ce_threshold_ns: Some(0),
    }];
    cfg.capture = Some(CaptureConfig {
        flow: 0,
        at: CaptureAt::Sender,
        max_packets: 2_000_000,
    });
    let out = run(cfg);
    let c = out.capture.as_ref().unwrap();
    let cwr_times: Vec<u64> = (0..c.len())
        .filter(|&i| c.dir[i] == DIR_OUT && c.flags[i] as u16 & flags::CWR != 0)
        .map(|i| c.t_ns[i])
        .collect();
    let ce = counter(&out, 0, "IpExtInCEPkts");
    assert!(cwr_times.len() >= 10, "{} reductions", cwr_times.len());
    // More marks than reductions: some windows carried several marks and still gave one.
    assert!(
        ce > cwr_times.len() as u64,
        "{ce} marks, {} reductions",
        cwr_times.len()
    );
    for w in cwr_times.windows(2) {
        assert!(w[1] - w[0] >= 20 * MS, "CWR at {} and {}", w[0], w[1]);
    }
    // The receiver echoes ECE until the CWR: the sender sees ECE on ACKs.
    let ece_in = (0..c.len())
        .filter(|&i| c.dir[i] != DIR_OUT && c.flags[i] as u16 & flags::ECE != 0)
        .count();
    assert!(ece_in >= cwr_times.len());
}

#[test]
fn bleaching_link_hides_the_marks() {
    // The reverse path bleaches nothing that matters (ACKs are not-ECT); a bleaching
    // link after the bottleneck clears the CE marks, so the flow falls back on drops.
    let b = bottleneck(1);
    let mut cfg = one_flow(CcKind::Cubic, [1, 2], fq_codel(None), 10 * S);
    cfg.links[b + 2].bleach_ecn = true; // r2 -> dst
    let out = run(cfg);
    assert!(
        xstat(&out, b, "ecn_mark") > 0,
        "before the bleach the packets are ECT"
    );
    assert_eq!(counter(&out, 0, "IpExtInCEPkts"), 0);
    assert_eq!(counter(&out, 0, "IpExtInECT0Pkts"), 0);
    // With the bleach before the bottleneck, fq_codel sees not-ECT and drops.
    let mut cfg = one_flow(CcKind::Cubic, [1, 2], fq_codel(None), 10 * S);
    cfg.links[0].bleach_ecn = true; // s0 -> r1
    let out = run(cfg);
    assert_eq!(xstat(&out, b, "ecn_mark"), 0);
    assert!(out.links[b].stats.drops > 0);
}

/// Drive `Dctcp::in_ack_event` through `windows` observation windows of `per_window`
/// packets, `marked` of them CE.
fn dctcp_windows(d: &mut Dctcp, tp: &mut TcpSock, windows: u32, per_window: u32, marked: u32) {
    for _ in 0..windows {
        tp.snd_nxt += per_window as u64 * 1448;
        tp.delivered += per_window;
        tp.delivered_ce += marked;
        tp.snd_una = tp.snd_nxt;
        d.in_ack_event(tp, 0);
    }
}

#[test]
fn dctcp_alpha_converges_to_the_marked_fraction() {
    // dctcp_update_alpha(): alpha <- alpha - (alpha >> 4) + (ce << 6) / delivered once per
    // window. Its fixed point: (alpha >> 4) == (ce << 6) / delivered, so alpha settles in
    // [16 q, 16 q + 15] with q = floor(64 F): F x 1024 up to the truncations.
    for (per_window, marked) in [(100, 25), (100, 50), (64, 8), (100, 100)] {
        let mut tp = TcpSock::init_sock(1448, 10);
        tp.ecn_flags = TCP_ECN_OK;
        let mut d = Dctcp::new();
        d.init(&mut tp);
        assert_eq!(d.alpha, DCTCP_MAX_ALPHA, "dctcp_alpha_on_init");
        dctcp_windows(&mut d, &mut tp, 300, per_window, marked);
        let q = (marked << 6) / per_window;
        assert!(
            (16 * q..=16 * q + 15).contains(&d.alpha) || (q == 64 && d.alpha == DCTCP_MAX_ALPHA),
            "F = {marked}/{per_window}: alpha {} vs [{}, {}]",
            d.alpha,
            16 * q,
            16 * q + 15
        );
    }
    // No marks: alpha decays by 1/16 per window, and to 0 once below 16 (min_not_zero).
    let mut tp = TcpSock::init_sock(1448, 10);
    tp.ecn_flags = TCP_ECN_OK;
    let mut d = Dctcp::new();
    d.init(&mut tp);
    dctcp_windows(&mut d, &mut tp, 1, 100, 0);
    assert_eq!(d.alpha, 1024 - 64);
    dctcp_windows(&mut d, &mut tp, 200, 100, 0);
    assert_eq!(d.alpha, 0);
}

#[test]
fn dctcp_reduces_cwnd_by_alpha_over_two() {
    // dctcp_ssthresh(): cwnd - cwnd * alpha / 2048, at least 2.
    let mut tp = TcpSock::init_sock(1448, 100);
    tp.ecn_flags = TCP_ECN_OK;
    let mut d = Dctcp::new();
    d.init(&mut tp);
    assert_eq!(d.ssthresh(&mut tp), 50, "alpha 1024: half, as Reno");
    dctcp_windows(&mut d, &mut tp, 300, 100, 25);
    let alpha = d.alpha as u64;
    assert_eq!(d.ssthresh(&mut tp) as u64, 100 - 100 * alpha / 2048);
    tp.snd_cwnd = 2;
    assert_eq!(d.ssthresh(&mut tp), 2);
}

#[test]
fn dctcp_keeps_the_queue_at_the_marking_threshold_without_loss() {
    // Step marking at K = 2 ms (fq_codel's ce_threshold) on a 20 Mbit/s, 20 ms path: K is
    // 3.3 packets... too few for DCTCP's full utilisation (K > C x RTT / 7 = 4.7 packets),
    // so take 5 ms (8.3 packets). DCTCP keeps the queue near K: no CoDel drops (target 5
    // ms is rarely exceeded for an interval), and the link stays busy.
    let b = bottleneck(1);
    let out = run(one_flow(
        CcKind::Dctcp,
        [2, 2],
        fq_codel(Some(5 * MS)),
        10 * S,
    ));
    assert_eq!(out.links[b].stats.drops, 0);
    assert!(xstat(&out, b, "ce_mark") > 0);
    let f = &out.flows[0];
    assert_eq!(f.retrans_segs, 0);
    let goodput = f.bytes_acked as f64 * 8.0 / 10.0;
    let capacity = 20e6 * 1448.0 / 1514.0;
    assert!(goodput > 0.9 * capacity, "{goodput} of {capacity}");
    let info = f.ecn.dctcp.as_ref().unwrap();
    assert!(info.alpha < DCTCP_MAX_ALPHA, "alpha {}", info.alpha);
}

/// A packet of sender endpoint 0 (ECN-capable if `ect`).
fn fq_pkt(seq: u64, ect: bool) -> Packet {
    Packet {
        dst_ep: 1,
        ip_bytes: 1500,
        seq,
        end_seq: seq + 1448,
        ecn: if ect { ecn::ECT_0 } else { ecn::NOT_ECT },
        ..Default::default()
    }
}

#[test]
fn fq_marks_packets_that_leave_later_than_the_threshold_after_they_were_due() {
    // fq_dequeue(): mark when now - max(time_to_send, f->time_next_packet) > ce_threshold.
    // Without EDT stamps or pacing, time_to_send is the enqueue time: the sojourn.
    // A maxrate keeps the packets off fq's fast path (fq_fastpath_check()), whose queue
    // is never marked; without pacing it limits nothing.
    let mut q = Fq::new(&FqConfig {
        ce_threshold_ns: Some(MS),
        pacing: false,
        maxrate_bps: Some(10_000_000_000),
        ..FqConfig::default()
    });
    let mut dropped = Vec::new();
    let t0 = S;
    // Ten packets queued at t0.
    for k in 0..10 {
        assert!(q.enqueue(fq_pkt(k * 1448, k % 2 == 0), 1514, t0, &mut dropped));
    }
    let mut marked = Vec::new();
    for k in 0..10u64 {
        // One packet every 0.2 ms from t0: the sixth leaves 1.0 ms after t0 (not over),
        // the seventh 1.2 ms after (over the threshold).
        let now = t0 + k * 200_000;
        match q.dequeue(now, &mut dropped) {
            Dequeue::Packet(p, _) => marked.push(p.ecn == ecn::CE),
            other => panic!("{other:?}"),
        }
    }
    let x: std::collections::HashMap<_, _> = q.xstats().into_iter().collect();
    // Packets 6..9 are over; only the ECT ones (even k) can carry the mark ...
    assert_eq!(
        marked,
        (0..10).map(|k| k > 5 && k % 2 == 0).collect::<Vec<_>>()
    );
    // ... but v6.12 counts ce_mark for every packet over the threshold.
    assert_eq!(x["ce_mark"], 4);
}

#[test]
fn dctcp_receiver_echoes_each_segments_ce_state_and_flushes_a_delayed_ack_on_a_change() {
    use tcplab_core::tcp::ecn::TCP_ECN_DEMAND_CWR;
    // dctcp_ece_ack_update(): ECE follows the last segment's CE state exactly; a change
    // forces an immediate ACK, and a delayed ACK owed for the data before the change goes
    // first, acknowledging the prior rcv_nxt with the prior state's ECE.
    let mut d = Dctcp::new();
    let mut ecn_flags = TCP_ECN_OK;
    // First CE segment, no delayed ACK owed: ACK now, ECE from now on.
    let (special, now) = d.ece_ack_update(true, 1000, false, &mut ecn_flags);
    assert_eq!((special, now), (None, true));
    assert!(ecn_flags & TCP_ECN_DEMAND_CWR != 0);
    // Another CE segment: no change, no forced ACK.
    let (special, now) = d.ece_ack_update(true, 2000, false, &mut ecn_flags);
    assert_eq!((special, now), (None, false));
    // A not-CE segment while a delayed ACK is owed: the special ACK of rcv_nxt 2000 goes
    // out still with ECE (the old state), then ECE clears.
    let (special, now) = d.ece_ack_update(false, 3000, true, &mut ecn_flags);
    assert_eq!((special, now), (Some(2000), true));
    assert!(
        ecn_flags & TCP_ECN_DEMAND_CWR != 0,
        "the special ACK carries the old state"
    );
    d.ece_ack_finish(&mut ecn_flags);
    assert!(ecn_flags & TCP_ECN_DEMAND_CWR == 0);
}

#[test]
fn dctcp_ece_tracks_the_marked_fraction_end_to_end() {
    // With DCTCP's exact echo (a change of CE state forces an ACK, so every ACK covers
    // segments of one state) the sender's delivered_ce is the CE-marked data it learnt of:
    // every mark reaches it (no loss), so delivered_ce equals the marks the receiver saw,
    // less the marked segments still unacknowledged at the end: at most a window, which
    // here is about the path's 33-packet BDP plus the 8-packet marking threshold.
    let out = run(one_flow(
        CcKind::Dctcp,
        [2, 2],
        fq_codel(Some(5 * MS)),
        10 * S,
    ));
    let ce = counter(&out, 0, "IpExtInCEPkts");
    let f = &out.flows[0];
    assert!(ce > 0);
    assert!(
        f.ecn.delivered_ce <= ce && f.ecn.delivered_ce + 100 >= ce,
        "{} vs {ce}",
        f.ecn.delivered_ce
    );
}

#[test]
fn bbr_ignores_ecn_where_cubic_backs_off() {
    // fq on the bottleneck with ce_threshold 1 ms marks ECT packets and drops nothing for
    // it. CUBIC reacts through the core's CWR (ssthresh = 0.7 cwnd, PRR). BBR v1 owns cwnd
    // and pacing (cong_control): the CWR state changes neither (tcp_cong_control() returns
    // after bbr_main(), bbr_ssthresh() returns ssthresh unchanged), so its sending follows
    // its model as without ECN (its PROBE_BW probes push the queue over the threshold every
    // cycle), while CUBIC's marked run keeps a shorter queue.
    let fq = || {
        QueueConfig::Fq(FqConfig {
            ce_threshold_ns: Some(MS),
            ..FqConfig::default()
        })
    };
    let srtt_ms = |out: &SimOutput| out.flows[0].rtt.p50_us as f64 / 1000.0;
    let b = bottleneck(1);
    let bbr_on = run(one_flow(CcKind::Bbr, [1, 2], fq(), 10 * S));
    let bbr_off = run(one_flow(CcKind::Bbr, [2, 2], fq(), 10 * S));
    let cubic_on = run(one_flow(CcKind::Cubic, [1, 2], fq(), 10 * S));
    assert!(ecn_ok(bbr_on.flows[0].ecn.sender_flags));
    assert!(
        bbr_on.flows[0].ecn.delivered_ce > 0,
        "BBR's packets were marked"
    );
    assert!(xstat(&bbr_on, b, "ce_mark") > 0);
    // BBR: the same goodput and RTT with and without ECN (only ACK timing differs: the
    // receiver quick-ACKs CE marks).
    let (g_on, g_off) = (
        bbr_on.flows[0].bytes_acked as f64,
        bbr_off.flows[0].bytes_acked as f64,
    );
    assert!((g_on - g_off).abs() / g_off < 0.02, "{g_on} vs {g_off}");
    assert!((srtt_ms(&bbr_on) - srtt_ms(&bbr_off)).abs() < 0.1 * srtt_ms(&bbr_off));
    // CUBIC with ECN keeps the queue near the threshold: a lower RTT than BBR's.
    assert!(
        srtt_ms(&cubic_on) < srtt_ms(&bbr_on),
        "{} vs {}",
        srtt_ms(&cubic_on),
        srtt_ms(&bbr_on)
    );
}
