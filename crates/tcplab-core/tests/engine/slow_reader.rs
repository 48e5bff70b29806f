//! Slow readers (issue 9): receive-window-limited flows, zero-window probing, and the
//! sender's chronographs (`ss -i`: busy, rwnd_limited, sndbuf_limited).
use crate::common;

use common::*;
use tcplab_core::config::*;
use tcplab_core::mib::Mib;
use tcplab_core::sim::Simulator;

/// Bytes of unread data a receive buffer of `rcvbuf` bytes holds before its window closes:
/// every queued skb is charged its truesize (`sk_rmem_alloc`), a full-sized segment of
/// 1448 B in a 1500-byte frame's 2304 B (`packet::linear_skb_truesize`).
fn held_bytes(rcvbuf: u64) -> u64 {
    rcvbuf * 1448 / tcplab_core::packet::linear_skb_truesize(1500)
}

/// 100 Mbit/s, 10 ms each way (RTT 20 ms), a 1000-packet queue: a path far faster than
/// the readers below.
fn path(duration_ns: u64, reader: ReaderConfig) -> SimConfig {
    let mut cfg = two_hosts(100_000_000, 10_000_000, 1000, duration_ns);
    cfg.flows.push(FlowConfig {
        reader,
        ..FlowConfig::new("f", 0, 1, CcKind::Cubic)
    });
    cfg
}

#[test]
fn rate_reader_sets_the_goodput_and_the_flow_is_rwnd_limited() {
    // A consumer at 2 Mbit/s behind a 100 Mbit/s path: it reads 64 KiB chunks (or what is
    // queued) and takes chunk * 8 / R to process each, so over T it reads R * T / 8 bytes,
    // give or take one chunk: the application's goodput is R. The receive buffer holds
    // what it has not read yet: the network delivered at most one receive window more.
    let t_ns = 20_000_000_000;
    let rate = 2_000_000;
    let mut sim = Simulator::new(path(t_ns, ReaderConfig::Rate { rate_bps: rate })).unwrap();
    sim.run_until(t_ns).unwrap();
    let copied = sim.socket(1).rcv.copied_seq;
    let window = held_bytes(sim.socket(1).rcv.rcvbuf);
    let out = sim.finish();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    let f = &out.flows[0];
    let expect = rate as f64 * 20.0 / 8.0;
    let chunk = 65536.0;
    assert!(
        (copied as f64) <= expect + chunk && (copied as f64) >= expect - 2.0 * chunk,
        "read {copied} B, expected ~{expect}"
    );
    assert!(
        f.bytes_received <= copied + window + 1448,
        "received {}, read {copied}, window {window}",
        f.bytes_received
    );
    // The sender has data all the time: busy for the whole run after the handshake.
    assert!(
        f.chrono.busy_us as f64 >= 0.95 * 20e6,
        "busy {} us",
        f.chrono.busy_us
    );
    // Each read (~62 KB, every ~250 ms) reopens the window; the sender refills it within
    // about one RTT plus 5 ms of serialization, and waits on the closed window the rest
    // of the cycle: rwnd-limited for at least ~(250 - 25) / 250 = 90 % of its busy time.
    assert!(
        f.chrono.rwnd_limited_us as f64 >= 0.8 * f.chrono.busy_us as f64,
        "rwnd_limited {} of busy {} us",
        f.chrono.rwnd_limited_us,
        f.chrono.busy_us
    );
    assert_eq!(f.chrono.sndbuf_limited_us, 0);
    // The window closes (receiver-side SWS avoidance) and reopens after reads, again and
    // again: ~76 reads of 64 KiB; once autotuning has grown the buffer (the 64 KiB reads
    // count as copied per RTT), one read frees less than 1/16 of the buffer's window and
    // the window reopens every second read or so.
    let to_zero = f.counters.get(Mib::TCPToZeroWindowAdv);
    let from_zero = f.counters.get(Mib::TCPFromZeroWindowAdv);
    assert!(
        to_zero >= 20 && from_zero + 1 >= to_zero,
        "to zero {to_zero}, from zero {from_zero}"
    );
}

#[test]
fn bursts_reader_reads_its_bytes_each_interval() {
    // 16 KiB every 100 ms: the queue always holds more than 16 KiB at a wake-up (the
    // window, reopened by each read, is refilled within one RTT), so each wake-up reads
    // exactly 16 KiB: one per interval from the establishment (one RTT after start).
    let t_ns = 10_000_000_000;
    let bytes = 16_384;
    let mut sim = Simulator::new(path(
        t_ns,
        ReaderConfig::Bursts {
            interval_ns: 100_000_000,
            bytes,
        },
    ))
    .unwrap();
    sim.run_until(t_ns).unwrap();
    let copied = sim.socket(1).rcv.copied_seq;
    let window = held_bytes(sim.socket(1).rcv.rcvbuf);
    let out = sim.finish();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    // Established at ~20 ms (plus serialization): wake-ups at 0.12 s, 0.22 s, ... 9.92 s.
    assert_eq!(copied, 99 * bytes, "read {copied} B");
    let f = &out.flows[0];
    // And the sender delivered at most the reads plus one receive window more.
    assert!(
        f.bytes_received <= copied + window + 1448,
        "received {}, window {window}",
        f.bytes_received
    );
    assert!(f.chrono.rwnd_limited_us as f64 >= 0.8 * f.chrono.busy_us as f64);
}

#[test]
fn stopped_reader_closes_the_window_and_the_flow_resumes() {
    // A reader that wakes every 3 s and reads all that is queued: the window fills and
    // closes within the first RTTs; the sender, with nothing in flight and data to send,
    // probes the zero window (tcp_probe_timer -> tcp_send_probe0), backing off
    // exponentially; each wake-up drains the queue and tcp_cleanup_rbuf() reopens the
    // window at once (the new window is more than twice the closed one), so the flow
    // resumes and refills the buffer.
    let t_ns = 10_000_000_000;
    let mut sim = Simulator::new(path(
        t_ns,
        ReaderConfig::Bursts {
            interval_ns: 3_000_000_000,
            bytes: 1 << 30,
        },
    ))
    .unwrap();
    sim.run_until(2_900_000_000).unwrap();
    let before_first_read = sim.socket(1).rcv.bytes_received;
    assert_eq!(sim.socket(1).rcv.copied_seq, 0);
    // The window is closed and nothing is in flight: the probe timer is armed.
    assert_eq!(sim.socket(0).tp.snd_wnd, 0);
    assert_eq!(sim.socket(0).tp.packets_out, 0);
    let probes_2_9 = sim.socket(0).tp.mib.get(Mib::TCPWinProbe);
    sim.run_until(t_ns).unwrap();
    let rx = sim.socket(1).rcv.bytes_received;
    let copied = sim.socket(1).rcv.copied_seq;
    let out = sim.finish();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    let f = &out.flows[0];
    // One buffer's worth before the first read: what the 128 KiB buffer holds at the
    // skbs' truesize (`held_bytes`, ~82 KB), plus what the never-shrink rounding of the
    // window (to the 128-byte window-scale unit, `tcp_select_window()`) lets through, less
    // than a segment; at least 90 % of it (the window closes when less than an MSS is free).
    let held = held_bytes(131_072);
    assert!(
        (held * 9 / 10..=held + 1448).contains(&before_first_read),
        "received {before_first_read} before the first read"
    );
    // Three reads (3.02, 6.02, 9.02 s), each followed by a refill of the buffer.
    assert!(copied >= 3 * held * 9 / 10, "read {copied}");
    assert!(rx >= copied + held * 9 / 10, "received {rx}, read {copied}");
    // Probes: the first after max(RTO, 200 ms) of zero window, then at doubling intervals
    // (each reset from the probe's answer): in 2.8 s of zero window, at most
    // log2(2800 / 200) + 1 ~ 4.8 of them, and at least 2 (at ~0.2 s and ~0.6 s).
    assert!(
        (2..=5).contains(&probes_2_9),
        "{probes_2_9} probes by 2.9 s"
    );
    let probes = f.counters.get(Mib::TCPWinProbe);
    assert!(probes >= 3 * 2, "{probes} probes");
    assert!(f.counters.get(Mib::TCPToZeroWindowAdv) >= 3);
    assert!(f.counters.get(Mib::TCPFromZeroWindowAdv) >= 3);
    // Waiting on the closed window most of the time: each read reopens it, and the large
    // read makes receive-buffer autotuning grow the buffer (tcp_rcv_space_adjust() on
    // the copied bytes: 64 KB, then ~1 MB in one measurement), so after each read the
    // sender ramps up and fills a window of up to 3 MB (the 6 MB tcp_rmem[2] / 2) at
    // 100 Mbit/s: at most ~0.35 s per read not rwnd-limited, ~1.2 s of the 10 s.
    assert!(
        f.chrono.rwnd_limited_us as f64 >= 0.8 * f.chrono.busy_us as f64,
        "rwnd_limited {} of busy {} us, sndbuf {}",
        f.chrono.rwnd_limited_us,
        f.chrono.busy_us,
        f.chrono.sndbuf_limited_us
    );
}

#[test]
fn immediate_reader_on_a_cwnd_limited_path_is_not_rwnd_limited() {
    // Immediate reader, receive-buffer autotuning on: the window stays ahead of a CUBIC
    // sender, whose cwnd (and the 1-BDP queue's losses) limit it; the bottleneck is 10
    // Mbit/s with a 40 ms RTT (BDP 50 KB, 33 packets).
    let t_ns = 10_000_000_000;
    let mut cfg = two_hosts(
        10_000_000,
        20_000_000,
        bdp_packets(10_000_000, 40_000_000),
        t_ns,
    );
    cfg.flows.push(FlowConfig::new("f", 0, 1, CcKind::Cubic));
    let out = Simulator::new(cfg).unwrap().run();
    let f = &out.flows[0];
    assert!(
        f.chrono.busy_us as f64 >= 0.99 * 10e6,
        "busy {} us",
        f.chrono.busy_us
    );
    assert!(
        f.chrono.rwnd_limited_us as f64 <= 0.01 * f.chrono.busy_us as f64,
        "rwnd_limited {} us",
        f.chrono.rwnd_limited_us
    );
    assert_eq!(f.chrono.sndbuf_limited_us, 0);
    assert_eq!(f.counters.get(Mib::TCPWinProbe), 0);
}

#[test]
fn small_send_buffer_makes_the_flow_sndbuf_limited() {
    // tcp_wmem[2] = 64 KB caps the send buffer well below the path's BDP (100 Mbit/s x
    // 40 ms = 500 KB): the writer is blocked on the buffer and the sender, not cwnd-
    // limited, has sent all it holds nearly all the time (tcp_cwnd_validate's
    // SNDBUF_LIMITED condition), waiting for ACKs to free room.
    let t_ns = 5_000_000_000;
    let mut cfg = two_hosts(100_000_000, 20_000_000, 1000, t_ns);
    let mut f = FlowConfig::new("f", 0, 1, CcKind::Cubic);
    f.tcp.tcp_wmem = [4096, 16384, 65536];
    cfg.flows.push(f);
    let out = Simulator::new(cfg).unwrap().run();
    let f = &out.flows[0];
    assert!(
        f.chrono.sndbuf_limited_us as f64 >= 0.8 * f.chrono.busy_us as f64,
        "sndbuf_limited {} of busy {} us",
        f.chrono.sndbuf_limited_us,
        f.chrono.busy_us
    );
    assert!(f.chrono.rwnd_limited_us as f64 <= 0.01 * f.chrono.busy_us as f64);
}

#[test]
fn slow_reader_runs_are_deterministic() {
    let run = || {
        let out = Simulator::new(path(
            3_000_000_000,
            ReaderConfig::Rate {
                rate_bps: 5_000_000,
            },
        ))
        .unwrap()
        .run();
        let f = &out.flows[0];
        (
            f.bytes_received,
            f.chrono.busy_us,
            f.chrono.rwnd_limited_us,
            out.events,
        )
    };
    assert_eq!(run(), run());
}
