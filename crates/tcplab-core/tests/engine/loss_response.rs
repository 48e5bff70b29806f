//! How TCP and BBR respond to loss, end to end (issue 7 items 1.1, 1.4a, 1.5).
//!
//! The path is the paper's (Cardwell et al., "BBR: Congestion-Based Congestion Control",
//! ACM Queue 2016): 100 Mbit/s, 100 ms RTT, a 1-BDP pfifo at the bottleneck, random loss
//! on the router -> receiver link after the queue (as an emulator box does; loss on the
//! sender's own link would interact with TSQ).

use crate::common;
use common::*;
use tcplab_core::config::*;
use tcplab_core::mib::Mib;
use tcplab_core::sim::{SimOutput, Simulator};

const MS: u64 = 1_000_000;
const RATE_BPS: u64 = 100_000_000;
const STARTUP: u8 = 1;

/// Payload rate of the bottleneck: 1448 of every 1514 bytes on the wire are payload.
fn payload_rate_bps() -> f64 {
    RATE_BPS as f64 * MSS as f64 / 1514.0
}

fn lossy_path(p: f64, duration_ms: u64) -> SimConfig {
    let q = QueueConfig::Pfifo {
        limit_packets: bdp_packets(RATE_BPS, 100 * MS),
    };
    let mut cfg = dumbbell(1, CcKind::Bbr, RATE_BPS, 50 * MS, q, duration_ms * MS);
    if p > 0.0 {
        cfg.links[bottleneck(1) + 2].loss = LossConfig::Bernoulli { p };
    }
    cfg
}

fn run(cfg: SimConfig) -> SimOutput {
    let out = Simulator::new(cfg).unwrap().run();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    out
}

/// Item 1.1. With 1% random loss there is almost always a hole at the receiver, so the
/// receive window grows only if out-of-order data grows it (Linux v6.12
/// tcp_data_queue_ofo() -> tcp_grow_window()). Then STARTUP is not receive-window
/// limited and leaves with a bandwidth estimate near what the path delivers:
/// payload rate x (1 - p). (Before the fix it left with about half of it.)
#[test]
fn bbr_startup_is_not_receive_window_limited_under_random_loss() {
    let p = 0.01;
    let mut cfg = lossy_path(p, 3_000);
    cfg.sample_interval_ns = 10 * MS;
    let out = run(cfg);
    let s = &out.series;
    let i = (0..s.len())
        .find(|&i| s.cc_mode[i] > STARTUP)
        .expect("BBR left STARTUP");
    let delivered_bps = payload_rate_bps() * (1.0 - p);
    let bw = s.bbr_bw_bps[i] as f64;
    // The max filter holds the best delivery-rate sample of the last 10 rounds; with the
    // pipe full that is the delivered rate. 15% below it allows for sampling noise.
    assert!(
        bw >= 0.85 * delivered_bps,
        "bw at STARTUP exit {:.1} Mbit/s, path delivers {:.1}",
        bw / 1e6,
        delivered_bps / 1e6
    );
}

/// Item 1.4(a). BBR's STARTUP overshoots a 1-BDP queue by hundreds of packets. With no
/// random loss and no reordering, the kernel retransmits exactly what the queue dropped:
/// RACK marks a segment lost only when a later-sent one is SACKed, and with a FIFO
/// path that happens only if it was dropped, as long as every SACKed range is reported.
/// With SACK compression and the 4-entry SACK array that needs
/// tcp_sack_compress_send_ack() (Linux v6.12 tcp_sack_new_ofo_skb()): the compressed ACK
/// is sent before the oldest block is forgotten. Without it, ranges that were received
/// but never SACKed were retransmitted and came back as D-SACKs. The run is long enough
/// for the recovery of the whole overshoot to end (8 s: with the receiver's window at
/// the measured scaling_ratio of 160/256 the overshoot's recovery lasts past 4 s).
#[test]
fn startup_overshoot_retransmits_exactly_the_queue_drops() {
    let out = run(lossy_path(0.0, 8_000));
    let drops = out.links[bottleneck(1)].stats.drops;
    let f = &out.flows[0];
    assert!(
        drops > 100,
        "STARTUP should overshoot the 1-BDP queue (drops {drops})"
    );
    assert_eq!(
        f.counters.get(Mib::TCPDSACKRecv),
        0,
        "spurious retransmissions came back as D-SACKs"
    );
    assert_eq!(f.retrans_segs, drops, "retransmissions vs queue drops");
}

/// Goodput of a 60 s BBR flow on the paper's path with random loss `p`, and the paper's
/// limit: payload rate x (1 - p). Both ends get 64 MB buffer maxima (tcp_rmem[2],
/// tcp_wmem[2]): with Linux's defaults (6 MB, 4 MB) a 100 Mbit/s x 100 ms path with a
/// few percent loss is limited by the buffers, in the kernel too (the receiver charges
/// out-of-order data against its buffer; the sender keeps SACKed data until it is
/// cumulatively acknowledged), and the paper's figure is about the congestion control.
fn goodput_under_loss(p: f64, seed: u64) -> (f64, f64) {
    let dur_ms = 60_000;
    let mut cfg = lossy_path(p, dur_ms);
    cfg.seed = seed;
    cfg.flows[0].tcp.tcp_rmem[2] = 64 << 20;
    cfg.flows[0].tcp.tcp_wmem[2] = 64 << 20;
    let out = run(cfg);
    let goodput = out.flows[0].bytes_received as f64 * 8.0 / (dur_ms as f64 / 1e3);
    (goodput, payload_rate_bps() * (1.0 - p))
}

/// Item 1.5: the BBR paper's goodput-vs-random-loss figure (Cardwell et al. 2016): BBR
/// reaches the limit link rate x (1 - loss) up to 5% loss and stays close to it up to
/// 15%. Bounds, derived: with the loss after the bottleneck, BBR's bandwidth estimate is
/// the delivered rate, payload x (1 - p), and BBR paces at it on average, so the
/// expected goodput is limit x (1 - p) less STARTUP's first ~2 s of 60: at least
/// 0.95 x 0.96 = 0.91 of the limit up to 5% (asserted: 0.88), and 0.90 x 0.96 = 0.86 at
/// 10% (asserted "close": 0.75), on several seeds.
///
/// 15% is not asserted: there the result depends on the seed (10 to 66 Mbit/s over seeds
/// 1-5, of a limit of 81). The long-term (policer) model engages when an interval of at
/// least 4 rounds loses at least 50/256 = 19.5% of what it delivers (`bbr_lt_bw_sampling`); random
/// loss of 15% gives 17.6% on average, and a 4-round interval at this rate (~3000
/// packets) fluctuates by ~0.7% (one standard deviation), so whether and how often an
/// interval crosses the threshold is chance. Engaged, the model pins the rate to the
/// interval's delivery rate, which with the loss after the bottleneck is (1 - p) of the
/// sending rate. At 20% it engages most of the time (docs/kernel-pin.md).
#[test]
fn bbr_goodput_follows_the_paper_under_random_loss() {
    let mut failures = Vec::new();
    let cases = [
        (0.001, 0.88, 1),
        (0.01, 0.88, 1),
        (0.02, 0.88, 1),
        (0.05, 0.88, 1),
        (0.05, 0.88, 2),
        (0.10, 0.75, 1),
        (0.10, 0.75, 2),
        (0.10, 0.75, 3),
    ];
    for (p, min_ratio, seed) in cases {
        let (g, limit) = goodput_under_loss(p, seed);
        let ratio = g / limit;
        eprintln!(
            "loss {:5.1}% seed {seed}  goodput {:6.2} Mbit/s  limit {:6.2}  ratio {:.3}",
            p * 100.0,
            g / 1e6,
            limit / 1e6,
            ratio
        );
        if ratio < min_ratio {
            failures.push(format!(
                "loss {}% seed {seed}: {:.3} of the limit < {min_ratio}",
                p * 100.0,
                ratio
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
}

/// STARTUP exit time (ns) of the paper path's BBR flow with the sender's `tcp_wmem[2]`.
fn startup_exit_ns(wmem_max_bytes: u64) -> u64 {
    let mut cfg = lossy_path(0.0, 5_000);
    cfg.sample_interval_ns = 10 * MS;
    cfg.flows[0].tcp.tcp_wmem[2] = wmem_max_bytes;
    let out = run(cfg);
    let s = &out.series;
    let i = (0..s.len())
        .find(|&i| s.cc_mode[i] > STARTUP)
        .expect("BBR left STARTUP");
    s.t_ns[i]
}

/// Issue 11 (validate, BBR 100 Mbit/s 100 ms): a bulk writer blocked on the send buffer
/// is woken only once the free space reaches half the queued bytes (Linux v6.12
/// net/core/stream.c: sk_stream_write_space()). With Linux's default tcp_wmem[2] of 4 MB,
/// STARTUP's window (2.89 BDP, ~2400 packets, 3.5 MB) nearly fills the buffer: TCP sends
/// all it holds before the writer wakes, the next write finds the write queue empty and
/// marks the flow application-limited (tcp_rate_check_app_limited()), and BBR's full-
/// bandwidth check ignores app-limited rounds (bbr_check_full_bw_reached()). The kernel
/// shows it (ss: app_limited with notsent < 1 MSS; STARTUP until ~3.4 s where a 64 MB
/// buffer leaves at ~1.7 s). So STARTUP must last longer with the 4 MB buffer than with a
/// buffer that never limits; by at least 3 rounds (300 ms: the full-bw check needs 3
/// non-app-limited rounds without growth, and app-limited rounds do not count).
#[test]
fn bbr_startup_is_prolonged_by_a_send_buffer_the_window_nearly_fills() {
    let small = startup_exit_ns(4 << 20);
    let large = startup_exit_ns(64 << 20);
    eprintln!(
        "STARTUP exit: 4 MB wmem {:.2} s, 64 MB {:.2} s",
        small as f64 / 1e9,
        large as f64 / 1e9
    );
    assert!(
        small >= large + 300 * MS,
        "STARTUP exit with 4 MB wmem {small} ns, with 64 MB {large} ns"
    );
}
