//! HLS adaptive video (hls.js player, one persistent connection) over the app interface
//! (issue 9).
use crate::common;

use common::*;
use tcplab_core::app::hls::{HlsConfig, Profile};
use tcplab_core::app::{AppInstanceConfig, AppOutput, AppSpec, Column, Side};
use tcplab_core::config::*;
use tcplab_core::sim::Simulator;

fn ladder(p: &[(&str, u64)]) -> Vec<Profile> {
    p.iter()
        .map(|&(n, b)| Profile {
            name: n.into(),
            bitrate_bps: b,
        })
        .collect()
}

/// Two hosts (client a = 0, server b = 1), one HLS connection, `cfg` for the player.
fn run_hls(
    rate_bps: u64,
    one_way_ns: u64,
    limit: u32,
    duration_ns: u64,
    cfg: HlsConfig,
    ssai: bool,
) -> AppOutput {
    run_hls_with(
        rate_bps,
        one_way_ns,
        limit,
        duration_ns,
        cfg,
        ssai,
        CcKind::Cubic,
        LossConfig::None,
    )
}

/// As [`run_hls`], with the server's congestion control and loss on the server -> client link.
#[allow(clippy::too_many_arguments)]
fn run_hls_with(
    rate_bps: u64,
    one_way_ns: u64,
    limit: u32,
    duration_ns: u64,
    cfg: HlsConfig,
    ssai: bool,
    cc: CcKind,
    loss: LossConfig,
) -> AppOutput {
    let mut sc = two_hosts(rate_bps, one_way_ns, limit, duration_ns);
    sc.links[1].loss = loss;
    let mut f = driven_flow("hls", 0, 1, cc, Side::Server);
    f.tcp.tcp_slow_start_after_idle = ssai;
    sc.flows.push(f);
    sc.apps.push(AppInstanceConfig {
        name: "video".into(),
        flows: vec![0],
        spec: AppSpec::Hls(cfg),
    });
    let out = Simulator::new(sc).unwrap().run();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    out.apps.into_iter().next().unwrap()
}

fn f64_of(out: &AppOutput, k: &str) -> f64 {
    out.get(k)
        .and_then(|v| v.as_f64())
        .unwrap_or_else(|| panic!("{k}: {:?}", out.get(k)))
}

fn u64_col<'a>(out: &'a AppOutput, t: &str, c: &str) -> &'a [u64] {
    match out.table(t).unwrap().column(c) {
        Some(Column::U64(v)) => v,
        other => panic!("{t}.{c}: {other:?}"),
    }
}

fn str_col<'a>(out: &'a AppOutput, t: &str, c: &str) -> &'a [String] {
    match out.table(t).unwrap().column(c) {
        Some(Column::Str(v)) => v,
        other => panic!("{t}.{c}: {other:?}"),
    }
}

fn u32_col<'a>(out: &'a AppOutput, t: &str, c: &str) -> &'a [u32] {
    match out.table(t).unwrap().column(c) {
        Some(Column::U32(v)) => v,
        other => panic!("{t}.{c}: {other:?}"),
    }
}

/// Bytes a response of `bytes` occupies on the wire: full-MSS segments (1448 B with
/// timestamps) each carry 66 B of TCP (32), IP (20) and Ethernet (14) headers.
fn wire_bytes(bytes: u64) -> u64 {
    bytes + bytes.div_ceil(MSS) * 66
}

#[test]
fn far_above_the_top_profile_never_stalls_and_stays_on_top() {
    // 50 Mbit/s, 20 ms RTT; ladder 0.4 / 1.2 / 3 Mbit/s listed lowest first, so hls.js
    // starts on "low". The first 2 s segment (100 kB) loads in a few RTTs of slow start:
    // its sample is ~10 Mbit/s, and 0.7 x 10 > 3 Mbit/s with a fetch time (3 x 2 / 7 s)
    // below the 2 s buffered, so findBestLevel() picks HD from the next segment on; the
    // estimate only grows from there (each HD segment loads at tens of Mbit/s, 0.95 x
    // that > 3 Mbit/s), so no down-switch and no stall.
    let cfg = HlsConfig {
        profiles: ladder(&[("low", 400_000), ("mid", 1_200_000), ("HD", 3_000_000)]),
        ..HlsConfig::default()
    };
    let dur = 60_000_000_000;
    let out = run_hls(50_000_000, 10_000_000, 1000, dur, cfg, true);
    assert_eq!(out.get("stalls").unwrap().as_u64(), Some(0));
    assert_eq!(f64_of(&out, "stall_s"), 0.0);
    let prof = str_col(&out, "segments", "profile");
    assert!(prof.len() > 50, "{} segments", prof.len());
    assert_eq!(prof[0], "low");
    assert!(prof[2..].iter().all(|p| p == "HD"), "{prof:?}");
    let rate = u64_col(&out, "segments", "bitrate_bps");
    assert!(
        rate.windows(2).all(|w| w[1] >= w[0]),
        "a down-switch: {rate:?}"
    );
    // Without stalls, everything after startup is playback.
    let played = f64_of(&out, "played_s");
    let startup = f64_of(&out, "startup_delay_s") + f64_of(&out, "connected_s");
    assert!(
        (played + startup - dur as f64 / 1e9).abs() < 1e-6,
        "{played} + {startup}"
    );
    match out.get("time_on_profile_s") {
        Some(tcplab_core::app::Value::Map(m)) => {
            let hd = m
                .iter()
                .find(|(k, _)| k == "HD")
                .unwrap()
                .1
                .as_f64()
                .unwrap();
            assert!(hd >= played - 2.0 * 2.0, "HD {hd} s of {played}");
        }
        other => panic!("{other:?}"),
    }
    // The buffer fills to getMaxBufferLength(3 Mbit/s) = 8 x 60 MB / 3 Mbit/s = 160 s and
    // overshoots by less than one segment (a load starts while below the target).
    let buf = u64_col(&out, "series", "buffer_ns");
    let max = *buf.iter().max().unwrap();
    assert!(
        (159_000_000_000..162_000_000_000).contains(&max),
        "max buffer {max} ns"
    );
    // Once full, loads wait for the buffer to drain: idle gaps of about one segment.
    let idle = u64_col(&out, "segments", "idle_ns");
    assert!(idle.iter().filter(|&&i| i > 1_000_000_000).count() >= 5);
}

#[test]
fn below_the_lowest_profile_stalls_for_the_deficit() {
    // 800 kbit/s, 40 ms RTT, ladder 1 / 3 Mbit/s (low first). Every estimate is below
    // 1 Mbit/s, so findBestLevel() finds nothing and the ABR falls back to level 0: all
    // segments are "low". The buffer never builds: each 2 s segment arrives one cycle
    // after the previous one, a cycle being the request's RTT plus the response's wire
    // time at the link rate (the queue keeps the link busy: cwnd is far above the 3-packet
    // BDP). Playback stalls for cycle - 2 s after each segment, i.e. over a media time M
    // the stall is M x (cycle / D - 1) = M x (B_wire / rate - 1 + RTT / D), the
    // deficit formula M x (B / G - 1) with G the link's goodput and the RTT per request.
    let (rate, one_way, seg_s) = (800_000u64, 20_000_000u64, 2.0);
    let cfg = HlsConfig {
        profiles: ladder(&[("low", 1_000_000), ("HD", 3_000_000)]),
        segment_ns: 2_000_000_000,
        ..HlsConfig::default()
    };
    let header = cfg.response_header_bytes;
    let out = run_hls(rate, one_way, 1000, 60_000_000_000, cfg, true);
    let prof = str_col(&out, "segments", "profile");
    assert!(prof.iter().all(|p| p == "low"), "{prof:?}");
    assert_eq!(out.get("switches").unwrap().as_u64(), Some(0));
    let body = 1_000_000 * 2 / 8;
    let cycle_s = wire_bytes(body + header) as f64 * 8.0 / rate as f64 + 2.0 * one_way as f64 / 1e9;
    // TCP delivers each segment in one cycle (1 %: the request's own serialization, 3.7 ms,
    // and ACK frames sharing the reverse link are not counted).
    let lat = u64_col(&out, "segments", "latency_ns");
    for &l in &lat[1..] {
        let l_s = l as f64 / 1e9;
        assert!(
            (l_s - cycle_s).abs() < 0.01 * cycle_s,
            "latency {l_s} s, cycle {cycle_s} s"
        );
    }
    let n = lat.len() as f64;
    assert!(n >= 20.0, "{n} segments");
    let deficit_s = cycle_s - seg_s;
    // Segments after the first (which starts playback) each add one deficit; the run's
    // end cuts the last cycle anywhere, adding up to one more deficit.
    let expect = (n - 1.0) * deficit_s;
    let stall = f64_of(&out, "stall_s");
    assert!(
        stall >= expect * 0.98 && stall <= expect * 1.02 + deficit_s,
        "stall {stall} s, expected {expect} s (+ up to {deficit_s})"
    );
    // (`expect` is the brief's media time x (B / G - 1), with B the wire bitrate of a
    // segment and the request RTT added to each segment's load.)
    let stalls = out.get("stalls").unwrap().as_u64().unwrap() as f64;
    assert!(
        stalls >= n - 1.0 && stalls <= n,
        "{stalls} stalls for {n} segments"
    );
}

#[test]
fn starts_on_the_first_listed_profile_then_switches_down() {
    // The story's ladder (HD listed first): hls.js loads the first segment from the
    // first variant, then its sample (~2 Mbit/s, 0.95 x 2 < 3) sends it down to "low",
    // where 0.95 x 2 > 0.8 keeps it; going back up needs 0.7 x 2 > 3. The switch loads
    // low's media playlist first (master + HD + low = 3 playlists). On "low" a 2 s
    // segment (200 kB) loads in ~0.85 s: the buffer grows and nothing stalls.
    let cfg = HlsConfig {
        profiles: ladder(&[("HD", 3_000_000), ("low", 800_000)]),
        ..HlsConfig::default()
    };
    let out = run_hls(2_000_000, 10_000_000, 1000, 40_000_000_000, cfg, true);
    let prof = str_col(&out, "segments", "profile");
    assert_eq!(prof[0], "HD");
    assert!(prof[1..].iter().all(|p| p == "low"), "{prof:?}");
    assert_eq!(out.get("switches").unwrap().as_u64(), Some(1));
    assert_eq!(out.get("playlist_loads").unwrap().as_u64(), Some(3));
    assert_eq!(out.get("stalls").unwrap().as_u64(), Some(0));
    // The first segment (750 kB at 2 Mbit/s, > 3 s) delays the start by that much.
    assert!(f64_of(&out, "startup_delay_s") > 3.0);
    // Until the first segment's sample the estimate is abrEwmaDefaultEstimate.
    assert_eq!(u64_col(&out, "segments", "estimate_bps")[0], 500_000);
}

/// Segments loaded after an idle gap of more than `min_idle_ns`: (cwnd, latency).
fn after_idle(out: &AppOutput, min_idle_ns: u64) -> Vec<(u32, u64)> {
    let idle = u64_col(out, "segments", "idle_ns");
    let cwnd = u32_col(out, "segments", "cwnd_pkts");
    let lat = u64_col(out, "segments", "latency_ns");
    (0..idle.len())
        .filter(|&i| idle[i] > min_idle_ns)
        .map(|i| (cwnd[i], lat[i]))
        .collect()
}

#[test]
fn idle_gaps_restart_slow_start_when_tcp_slow_start_after_idle_is_set() {
    // 20 Mbit/s, 50 ms RTT, queue of one BDP (cwnd stays below ~2 BDP = 170 packets);
    // one 3 Mbit/s profile, 4 s segments, buffer target 30 s (max_buffer_size 0). Once the
    // buffer is full a segment (1.5 MB, under a second) is loaded every 4 s: the
    // connection idles ~3 s, over ten RTOs (RTO ~ 250 ms). tcp_cwnd_restart() halves cwnd
    // once per RTO idle, floored at the initial window: cwnd 10 when the response is
    // written (Linux v6.12 net/ipv4/tcp_output.c: tcp_cwnd_restart(), reached from
    // tcp_skb_entail()). With the sysctl off cwnd is kept. Slow start from 10 costs about
    // two RTTs per segment against a full window: 10+20+40+80 packets in four RTTs where
    // a full pipe (86 packets per RTT) sends 344.
    let rtt_ns = 50_000_000;
    let cfg = HlsConfig {
        profiles: ladder(&[("HD", 3_000_000)]),
        segment_ns: 4_000_000_000,
        max_buffer_size_bytes: 0,
        ..HlsConfig::default()
    };
    let limit = bdp_packets(20_000_000, rtt_ns);
    let on = run_hls(
        20_000_000,
        rtt_ns / 2,
        limit,
        60_000_000_000,
        cfg.clone(),
        true,
    );
    let off = run_hls(20_000_000, rtt_ns / 2, limit, 60_000_000_000, cfg, false);
    let (a_on, a_off) = (
        after_idle(&on, 2_000_000_000),
        after_idle(&off, 2_000_000_000),
    );
    assert!(
        a_on.len() >= 5 && a_off.len() >= 5,
        "{} / {} idle gaps",
        a_on.len(),
        a_off.len()
    );
    assert!(
        a_on.iter().all(|&(c, _)| c == 10),
        "ssai=1 cwnd after idle: {a_on:?}"
    );
    assert!(
        a_off.iter().all(|&(c, _)| c > 20),
        "ssai=0 cwnd after idle: {a_off:?}"
    );
    let mean = |v: &[(u32, u64)]| v.iter().map(|&(_, l)| l as f64).sum::<f64>() / v.len() as f64;
    let extra = mean(&a_on) - mean(&a_off);
    assert!(
        extra > 1.5 * rtt_ns as f64,
        "slow start after idle costs {extra} ns per segment"
    );
    // Neither stalls: 20 Mbit/s is far above 3 Mbit/s.
    assert_eq!(on.get("stalls").unwrap().as_u64(), Some(0));
}

#[test]
fn same_scenario_same_output() {
    let cfg = HlsConfig {
        profiles: ladder(&[("HD", 3_000_000), ("low", 800_000)]),
        ..HlsConfig::default()
    };
    let a = run_hls(1_500_000, 20_000_000, 50, 30_000_000_000, cfg.clone(), true);
    let b = run_hls(1_500_000, 20_000_000, 50, 30_000_000_000, cfg, true);
    assert_eq!(a, b);
    assert!(a.table("segments").unwrap().rows() > 5);
}

#[test]
fn story_001_cubic_falls_to_low_bbr_holds_hd_on_a_lossy_5_mbit_path() {
    // The Cilium demo (seeds/001): HD 3 Mbit/s and low 0.8 Mbit/s, 100 ms RTT, 5 Mbit/s,
    // 1 % random loss. CUBIC's loss response caps it near MSS / RTT x 1.22 / sqrt(p)
    // (Mathis et al.: ~1.4 Mbit/s here, CUBIC's TCP-friendly region at this small BDP),
    // below 3 / 0.95 Mbit/s: hls.js leaves HD after the first segment. BBR does not
    // take random loss as congestion and keeps ~5 Mbit/s: 0.95 x 5 > 3, HD throughout.
    let cfg = HlsConfig {
        profiles: ladder(&[("HD", 3_000_000), ("low", 800_000)]),
        ..HlsConfig::default()
    };
    let loss = LossConfig::Bernoulli { p: 0.01 };
    let dur = 60_000_000_000;
    let cubic = run_hls_with(
        5_000_000,
        50_000_000,
        1000,
        dur,
        cfg.clone(),
        true,
        CcKind::Cubic,
        loss.clone(),
    );
    let bbr = run_hls_with(
        5_000_000,
        50_000_000,
        1000,
        dur,
        cfg,
        true,
        CcKind::Bbr,
        loss,
    );
    let time_on = |out: &AppOutput, p: &str| match out.get("time_on_profile_s") {
        Some(tcplab_core::app::Value::Map(m)) => {
            m.iter().find(|(k, _)| k == p).unwrap().1.as_f64().unwrap()
        }
        other => panic!("{other:?}"),
    };
    let played = |out: &AppOutput| f64_of(out, "played_s");
    assert!(
        time_on(&cubic, "low") > 0.8 * played(&cubic),
        "CUBIC low {} of {}",
        time_on(&cubic, "low"),
        played(&cubic)
    );
    assert!(
        time_on(&bbr, "HD") > 0.95 * played(&bbr),
        "BBR HD {} of {}",
        time_on(&bbr, "HD"),
        played(&bbr)
    );
    assert_eq!(bbr.get("switches").unwrap().as_u64(), Some(0));
}

#[test]
fn a_finite_video_plays_to_its_end_without_a_final_stall() {
    // 10 segments of 2 s on a fast path: all loaded within seconds, playback runs its 20 s
    // and ends; running out of media at the end is not a stall.
    let cfg = HlsConfig {
        profiles: ladder(&[("HD", 3_000_000)]),
        segments: Some(10),
        ..HlsConfig::default()
    };
    let out = run_hls(50_000_000, 5_000_000, 1000, 30_000_000_000, cfg, true);
    assert_eq!(out.get("segments").unwrap().as_u64(), Some(10));
    assert_eq!(out.get("ended"), Some(&tcplab_core::app::Value::Bool(true)));
    assert_eq!(out.get("stalls").unwrap().as_u64(), Some(0));
    assert!((f64_of(&out, "played_s") - 20.0).abs() < 1e-9);
    assert_eq!(f64_of(&out, "buffer_s"), 0.0);
    // The series shows playback stopped after the end (t > start + 20 s).
    let t = u64_col(&out, "series", "t_ns");
    let playing = match out.table("series").unwrap().column("playing") {
        Some(Column::Bool(v)) => v.clone(),
        other => panic!("{other:?}"),
    };
    let start_ns = ((f64_of(&out, "connected_s") + f64_of(&out, "startup_delay_s")) * 1e9) as u64;
    let end_ns = start_ns + 20_000_000_000;
    let margin = 1_000_000;
    for (&t, &p) in t.iter().zip(&playing) {
        if t > start_ns + margin && t + margin < end_ns {
            assert!(p, "not playing at {t} ns");
        } else if t > end_ns + margin || t + margin < start_ns {
            assert!(!p, "playing at {t} ns");
        }
    }
}
