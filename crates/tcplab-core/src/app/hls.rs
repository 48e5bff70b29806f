//! HLS adaptive video: a web server with a ladder of renditions, and an hls.js player.
//!
//! Model. One connection (the app's single flow; the server is the data side) carries
//! HTTP/1.1 requests from the player and the server's responses, one at a time, as
//! hls.js loads them (it never pipelines, and the browser keeps the connection alive:
//! the connection is never reopened, so the idle gaps between segments go through
//! TCP's slow start after idle, `net.ipv4.tcp_slow_start_after_idle`):
//!
//! 1. the master playlist (`playlist_bytes`), then the media playlist of a level the
//!    first time the player loads from it (a VOD playlist is kept once loaded);
//! 2. segments (fragments) in order: segment `k` of a level of `bitrate_bps` is
//!    `bitrate_bps * segment_ns / 8` body bytes plus `response_header_bytes`.
//!
//! The player follows hls.js 1.x before its 1.5 ABR rewrite (source read: repository
//! video-dev/hls.js, `src/controller/abr-controller.ts`, `src/controller/stream-controller.ts`,
//! `src/controller/base-stream-controller.ts`, `src/controller/level-controller.ts`,
//! `src/utils/ewma-bandwidth-estimator.ts`, `src/utils/ewma.ts`, `src/config.ts`):
//!
//! - **levels**: the ladder sorted by bitrate (level-controller.ts
//!   `filterAndSortMediaOptions()`); the first segment is loaded from the profile listed
//!   first (hls.js's `startLevel` when `config.startLevel` is unset: the first variant of
//!   the master playlist), or `start_profile`;
//! - **when to load**: the stream controller's tick (every 100 ms, `TICK_INTERVAL`, and
//!   at once after a segment is buffered) loads the next segment when the buffer ahead
//!   of the playhead is below `getMaxBufferLength(level bitrate)` =
//!   `min(max(8 * maxBufferSize / bitrate, maxBufferLength), maxMaxBufferLength)`
//!   (base-stream-controller.ts; 60 MB, 30 s and 600 s by default: a 3 Mbit/s level
//!   buffers up to 160 s);
//! - **bandwidth estimate**: after each segment, a sample of (body bytes, request to last
//!   byte) feeds two EWMAs with half-lives 3 s and 9 s weighted by the sample's duration
//!   in seconds (durations below 50 ms count as 50 ms); the estimate is the smaller of
//!   the two, or 500 kbit/s before any sample (ewma-bandwidth-estimator.ts `sample()`,
//!   `getEstimate()`; ewma.ts);
//! - **next level** (abr-controller.ts `getNextABRAutoLevel()` / `findBestLevel()`):
//!   the highest level whose bitrate is below 0.95 x the estimate (0.7 x for a level
//!   above the last loaded one) and whose segment would load (bitrate x duration /
//!   adjusted bandwidth) before the buffer runs dry; failing that, the same with the
//!   buffer plus `maxStarvationDelay` (4 s, at most one segment) of allowed stall;
//!   failing that the lowest level.
//!
//! Playback (the browser's media element, not hls.js): the playhead advances in real
//! time while playing; playback starts when `startup_buffer_ns` is buffered (0: as soon
//! as the first segment is appended, as a browser's autoplay does at
//! HAVE_ENOUGH_DATA), stalls when the buffer empties, and resumes as soon as a segment
//! is appended (HAVE_FUTURE_DATA; segments are appended whole, hls.js appends a
//! fragment once loaded). Decoding, appending and parsing take no time.
//!
//! Simplifications (and why):
//! - hls.js's emergency abandon rule (`_abandonRulesCheck()`: abort a fragment loading
//!   too slowly and switch down) is not modelled: aborting an XHR closes the HTTP/1.1
//!   connection, and this app keeps exactly one connection. It never fires at the
//!   lowest level, so a path below the lowest bitrate behaves the same.
//! - hls.js re-evaluates the level on every 100 ms tick while the buffer is full and
//!   caps it with the previous tick's choice (`nextLoadLevel` is forced until the next
//!   fragment loads); here it is evaluated right after a segment is buffered and again
//!   when the next one is requested (the smaller of the two), not at each tick in
//!   between: the estimate does not change in between, only the buffer length does,
//!   and with the buffer above `maxBufferLength` no level fails the buffer test.
//! - hls.js 1.5 raised the start estimate to the first variant's bitrate (capped at
//!   `abrEwmaDefaultEstimateMax`, 5 Mbit/s) and added TTFB to the ABR; not modelled
//!   (set `start_estimate_bps` to reproduce the former).
//! - Startup delay is counted from the master playlist request (when the connection is
//!   established: the app does not see when the SYN left); `connected_s` gives that
//!   time.

use super::bounds::{
    Connections, FieldBound,
    Limit::{Field, Float, Int, Unbounded},
};
use super::output::{Column, Table, Value};
use super::rpc::RpcConn;
use super::{App, AppCx, AppOutput, Side};
pub use crate::config::apps::{HlsConfig, Profile};
use crate::config::MAX_DELAY_NS;
use crate::rng::Rng;
use crate::tcp::socket::TcpSocket;
use crate::time::NEVER;

/// The ranges [`HlsConfig::validate`] enforces (`super::bounds`).
pub const BOUNDS: &[FieldBound] = &[
    FieldBound::new("segment_ns", Int(1_000_000), Int(MAX_DELAY_NS)),
    FieldBound::new("segments", Int(1), Unbounded),
    FieldBound::new("playlist_bytes", Int(1), Int(1 << 30)),
    FieldBound::new("request_bytes", Int(1), Int(1 << 20)),
    FieldBound::new("response_header_bytes", Int(0), Int(1 << 20)),
    FieldBound::new("start_estimate_bps", Int(1), Int(1_000_000_000_000)),
    FieldBound::new("fast_half_life_ns", Int(0), Int(MAX_DELAY_NS)),
    FieldBound::new("slow_half_life_ns", Int(0), Int(MAX_DELAY_NS)),
    FieldBound::above("bw_factor", Float(0.0), Float(100.0)),
    FieldBound::above("bw_up_factor", Float(0.0), Float(100.0)),
    FieldBound::new("max_starvation_delay_ns", Int(0), Int(MAX_DELAY_NS)),
    FieldBound::new("max_max_buffer_ns", Int(1_000_000), Int(24 * MAX_DELAY_NS)),
    FieldBound::new("max_buffer_ns", Int(1_000_000), Field("max_max_buffer_ns")),
    FieldBound::new("max_buffer_size_bytes", Int(0), Int(1 << 40)),
    FieldBound::new("startup_buffer_ns", Int(0), Field("max_buffer_ns")),
    FieldBound::new("tick_ns", Int(1_000_000), Int(10_000_000_000)),
];
/// The range of each profile's fields.
pub const PROFILE_BOUNDS: &[FieldBound] = &[FieldBound::new(
    "bitrate_bps",
    Int(1_000),
    Int(1_000_000_000_000),
)];
/// One persistent connection.
pub const CONNECTIONS: Connections = Connections { lo: 1, hi: Some(1) };

const NS_PER_S: f64 = 1e9;

fn check_range(field: String, v: u64, lo: u64, hi: u64, unit: &str) -> Result<(), String> {
    if v < lo || v > hi {
        return Err(format!("{field}: {v} is outside [{lo}, {hi}] {unit}"));
    }
    Ok(())
}

impl HlsConfig {
    pub fn validate(&self, at: &str, nflows: usize) -> Result<(), String> {
        const HOUR_NS: u64 = crate::config::MAX_DELAY_NS;
        if nflows != 1 {
            return Err(format!(
                "{at}: hls drives exactly one connection, got {nflows} flows"
            ));
        }
        if self.profiles.is_empty() {
            return Err(format!(
                "{at}.profiles: empty; expected at least one {{name, bitrate}}"
            ));
        }
        for (i, p) in self.profiles.iter().enumerate() {
            if p.name.is_empty() {
                return Err(format!("{at}.profiles.{i}.name: empty; expected a name"));
            }
            if let Some(j) = self.profiles[..i].iter().position(|q| q.name == p.name) {
                return Err(format!("{at}.profiles.{i}.name: {:?} is already the name of profiles.{j}; expected unique names", p.name));
            }
            check_range(
                format!("{at}.profiles.{i}.bitrate_bps"),
                p.bitrate_bps,
                1_000,
                1_000_000_000_000,
                "bit/s",
            )?;
        }
        check_range(
            format!("{at}.segment_ns"),
            self.segment_ns,
            1_000_000,
            HOUR_NS,
            "ns (1 ms to one hour)",
        )?;
        if self.segments == Some(0) {
            return Err(format!(
                "{at}.segments: 0; expected at least 1 (or null: as many as the run needs)"
            ));
        }
        check_range(
            format!("{at}.playlist_bytes"),
            self.playlist_bytes,
            1,
            1 << 30,
            "bytes",
        )?;
        check_range(
            format!("{at}.request_bytes"),
            self.request_bytes,
            1,
            1 << 20,
            "bytes",
        )?;
        check_range(
            format!("{at}.response_header_bytes"),
            self.response_header_bytes,
            0,
            1 << 20,
            "bytes",
        )?;
        if let Some(s) = &self.start_profile {
            if !self.profiles.iter().any(|p| &p.name == s) {
                let names: Vec<&str> = self.profiles.iter().map(|p| p.name.as_str()).collect();
                return Err(format!(
                    "{at}.start_profile: {s:?} is not a profile; expected one of {names:?}"
                ));
            }
        }
        check_range(
            format!("{at}.start_estimate_bps"),
            self.start_estimate_bps,
            1,
            1_000_000_000_000,
            "bit/s",
        )?;
        check_range(
            format!("{at}.fast_half_life_ns"),
            self.fast_half_life_ns,
            0,
            HOUR_NS,
            "ns (one hour)",
        )?;
        check_range(
            format!("{at}.slow_half_life_ns"),
            self.slow_half_life_ns,
            0,
            HOUR_NS,
            "ns (one hour)",
        )?;
        for (name, v) in [
            ("bw_factor", self.bw_factor),
            ("bw_up_factor", self.bw_up_factor),
        ] {
            if !(v > 0.0 && v <= 100.0) {
                return Err(format!("{at}.{name}: {v} is outside (0, 100]"));
            }
        }
        check_range(
            format!("{at}.max_starvation_delay_ns"),
            self.max_starvation_delay_ns,
            0,
            HOUR_NS,
            "ns (one hour)",
        )?;
        check_range(
            format!("{at}.max_max_buffer_ns"),
            self.max_max_buffer_ns,
            1_000_000,
            24 * HOUR_NS,
            "ns (1 ms to one day)",
        )?;
        check_range(
            format!("{at}.max_buffer_ns"),
            self.max_buffer_ns,
            1_000_000,
            self.max_max_buffer_ns,
            "ns (1 ms to max_max_buffer_ns)",
        )?;
        check_range(
            format!("{at}.max_buffer_size_bytes"),
            self.max_buffer_size_bytes,
            0,
            1 << 40,
            "bytes",
        )?;
        check_range(
            format!("{at}.startup_buffer_ns"),
            self.startup_buffer_ns,
            0,
            self.max_buffer_ns,
            "ns (0 to max_buffer_ns)",
        )?;
        check_range(
            format!("{at}.tick_ns"),
            self.tick_ns,
            1_000_000,
            10_000_000_000,
            "ns (1 ms to 10 s)",
        )?;
        Ok(())
    }
}

/// hls.js `src/utils/ewma.ts` `EWMA`: an exponentially weighted moving average whose
/// samples carry a weight (here the sample's duration in seconds); `alpha` is the decay
/// per unit of weight, so that half the estimate comes from the last `half_life` of
/// weight.
#[derive(Clone, Debug)]
struct Ewma {
    alpha: f64,
    estimate: f64,
    total_weight: f64,
}

impl Ewma {
    /// `constructor(halfLife)`: alpha = exp(ln 0.5 / halfLife) (0 for a half-life of 0).
    fn new(half_life_s: f64) -> Ewma {
        let alpha = if half_life_s > 0.0 {
            (0.5f64.ln() / half_life_s).exp()
        } else {
            0.0
        };
        Ewma {
            alpha,
            estimate: 0.0,
            total_weight: 0.0,
        }
    }

    /// `sample(weight, value)`: decay by alpha^weight, then add the value.
    fn sample(&mut self, weight: f64, value: f64) {
        let adj = self.alpha.powf(weight);
        self.estimate = value * (1.0 - adj) + adj * self.estimate;
        self.total_weight += weight;
    }

    /// `getEstimate()`: the average corrected for its start at zero.
    fn estimate(&self) -> f64 {
        if self.alpha > 0.0 {
            let zero_factor = 1.0 - self.alpha.powf(self.total_weight);
            if zero_factor > 0.0 {
                return self.estimate / zero_factor;
            }
        }
        self.estimate
    }
}

/// hls.js `src/utils/ewma-bandwidth-estimator.ts` `EwmaBandWidthEstimator`.
#[derive(Clone, Debug)]
struct BandwidthEstimator {
    fast: Ewma,
    slow: Ewma,
    default_bps: f64,
}

impl BandwidthEstimator {
    /// `minWeight_`: the estimate is used once the fast EWMA holds this much weight (s).
    const MIN_WEIGHT_S: f64 = 0.001;
    /// `minDelayMs_`: shorter loads count as 50 ms.
    const MIN_DELAY_S: f64 = 0.050;

    fn new(cfg: &HlsConfig) -> BandwidthEstimator {
        BandwidthEstimator {
            fast: Ewma::new(cfg.fast_half_life_ns as f64 / NS_PER_S),
            slow: Ewma::new(cfg.slow_half_life_ns as f64 / NS_PER_S),
            default_bps: cfg.start_estimate_bps as f64,
        }
    }

    /// `sample(durationMs, numBytes)`: weight = duration in seconds, value = bit/s.
    fn sample(&mut self, duration_ns: u64, bytes: u64) {
        let dur_s = (duration_ns as f64 / NS_PER_S).max(Self::MIN_DELAY_S);
        let bps = 8.0 * bytes as f64 / dur_s;
        self.fast.sample(dur_s, bps);
        self.slow.sample(dur_s, bps);
    }

    /// `canEstimate()`.
    fn can_estimate(&self) -> bool {
        self.fast.total_weight >= Self::MIN_WEIGHT_S
    }

    /// `getEstimate()`: min(fast, slow), or the default before any sample.
    fn estimate_bps(&self) -> f64 {
        if self.can_estimate() {
            self.fast.estimate().min(self.slow.estimate())
        } else {
            self.default_bps
        }
    }
}

/// A level (rendition) as the player sees it: the ladder sorted by bitrate.
#[derive(Clone, Debug)]
struct Level {
    /// Index into `HlsConfig.profiles`.
    profile: usize,
    bitrate_bps: u64,
    /// Segment body bytes (bitrate x duration / 8).
    body_bytes: u64,
}

/// What the one outstanding request is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Load {
    Master,
    /// A level's media playlist.
    Playlist(usize),
    /// Segment `index` from a level.
    Segment {
        index: u64,
        level: usize,
    },
}

/// The outstanding request.
#[derive(Clone, Copy, Debug)]
struct Pending {
    load: Load,
    sent_ns: u64,
    estimate_bps: f64,
    buffer_ns: u64,
    idle_ns: u64,
    /// Server's cwnd right after it wrote the response (0 until then).
    cwnd_pkts: u32,
}

/// Playback state of the media element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Play {
    /// Waiting for the startup buffer.
    Startup,
    Playing,
    Stalled,
    /// Played to the end of the video.
    Ended,
}

pub struct Hls {
    name: String,
    flow: u32,
    cfg: HlsConfig,
    /// Levels sorted by bitrate (ascending); `start_level` indexes them.
    levels: Vec<Level>,
    start_level: usize,
    total_segments: u64,
    est: BandwidthEstimator,
    conn: RpcConn,
    pending: Option<Pending>,
    next_id: u64,
    /// Media playlists loaded, per level.
    playlist_loaded: Vec<bool>,
    /// hls.js `lastLoadedFragLevel` (None before the first segment).
    last_level: Option<usize>,
    /// hls.js `abrController._nextAutoLevel` (the forced level until the next fragment
    /// loads; the start level at first).
    forced_level: Option<usize>,
    next_segment: u64,
    /// When the last response was read in full (the connection's last activity).
    last_done_ns: u64,
    connected_ns: u64,
    /// Time of the stream controller's first tick (its 100 ms grid).
    tick_origin_ns: u64,
    /// Pending re-check of a full buffer (NEVER: none).
    check_at_ns: u64,
    // playback
    play: Play,
    /// Media time buffered (end of the buffered range) and the playhead, ns.
    buffered_end_ns: u64,
    playhead_ns: u64,
    /// Scenario time up to which the playhead has been advanced.
    clock_ns: u64,
    started_ns: u64,
    stall_start_ns: u64,
    stalls: u64,
    stall_total_ns: u64,
    // one row per segment loaded
    s_index: Vec<u64>,
    s_level: Vec<u32>,
    s_bytes: Vec<u64>,
    s_request_ns: Vec<u64>,
    s_latency_ns: Vec<u64>,
    s_estimate_bps: Vec<u64>,
    s_buffer_ns: Vec<u64>,
    s_idle_ns: Vec<u64>,
    s_cwnd_pkts: Vec<u32>,
    playlist_loads: u64,
    // one row per sample
    t_ns: Vec<u64>,
    t_buffer_ns: Vec<u64>,
    t_playing: Vec<bool>,
    t_level: Vec<u32>,
    t_estimate_bps: Vec<u64>,
}

impl Hls {
    pub fn new(name: &str, flows: Vec<u32>, cfg: &HlsConfig, _rng: Rng) -> Hls {
        let mut levels: Vec<Level> = cfg
            .profiles
            .iter()
            .enumerate()
            .map(|(i, p)| Level {
                profile: i,
                bitrate_bps: p.bitrate_bps,
                body_bytes: ((p.bitrate_bps as u128 * cfg.segment_ns as u128 + 4_000_000_000)
                    / 8_000_000_000)
                    .max(1) as u64,
            })
            .collect();
        // level-controller.ts filterAndSortMediaOptions(): sorted by bitrate (stable).
        levels.sort_by_key(|l| l.bitrate_bps);
        let start_profile = cfg
            .start_profile
            .as_ref()
            .and_then(|s| cfg.profiles.iter().position(|p| &p.name == s))
            .unwrap_or(0);
        let start_level = levels
            .iter()
            .position(|l| l.profile == start_profile)
            .unwrap_or(0);
        let n = levels.len();
        Hls {
            name: name.to_string(),
            flow: flows.first().copied().unwrap_or(0),
            est: BandwidthEstimator::new(cfg),
            total_segments: cfg.segments.unwrap_or(u64::MAX),
            cfg: cfg.clone(),
            levels,
            start_level,
            conn: RpcConn::default(),
            pending: None,
            next_id: 0,
            playlist_loaded: vec![false; n],
            last_level: None,
            forced_level: Some(start_level),
            next_segment: 0,
            last_done_ns: NEVER,
            connected_ns: NEVER,
            tick_origin_ns: 0,
            check_at_ns: NEVER,
            play: Play::Startup,
            buffered_end_ns: 0,
            playhead_ns: 0,
            clock_ns: 0,
            started_ns: NEVER,
            stall_start_ns: NEVER,
            stalls: 0,
            stall_total_ns: 0,
            s_index: Vec::new(),
            s_level: Vec::new(),
            s_bytes: Vec::new(),
            s_request_ns: Vec::new(),
            s_latency_ns: Vec::new(),
            s_estimate_bps: Vec::new(),
            s_buffer_ns: Vec::new(),
            s_idle_ns: Vec::new(),
            s_cwnd_pkts: Vec::new(),
            playlist_loads: 0,
            t_ns: Vec::new(),
            t_buffer_ns: Vec::new(),
            t_playing: Vec::new(),
            t_level: Vec::new(),
            t_estimate_bps: Vec::new(),
        }
    }

    fn buffer_ns(&self) -> u64 {
        self.buffered_end_ns - self.playhead_ns
    }

    fn all_loaded(&self) -> bool {
        self.next_segment >= self.total_segments
    }

    /// Advance the playhead to `now`: play what is buffered; stall (or end) when it runs out.
    fn advance(&mut self, now: u64) {
        if self.play == Play::Playing {
            let dt = now.saturating_sub(self.clock_ns);
            let left = self.buffer_ns();
            if dt >= left {
                self.playhead_ns = self.buffered_end_ns;
                let out_ns = self.clock_ns + left;
                if self.all_loaded() && self.pending.is_none() {
                    self.play = Play::Ended;
                } else {
                    self.play = Play::Stalled;
                    self.stall_start_ns = out_ns;
                    self.stalls += 1;
                }
            } else {
                self.playhead_ns += dt;
            }
        }
        self.clock_ns = self.clock_ns.max(now);
    }

    /// hls.js base-stream-controller.ts `getMaxBufferLength(levelBitrate)`.
    fn max_buffer_len_ns(&self, level: usize) -> u64 {
        let by_size_ns = (8.0 * self.cfg.max_buffer_size_bytes as f64
            / self.levels[level].bitrate_bps as f64
            * NS_PER_S) as u64;
        by_size_ns
            .max(self.cfg.max_buffer_ns)
            .min(self.cfg.max_max_buffer_ns)
    }

    /// hls.js abr-controller.ts `findBestLevel()`: the highest level whose bitrate fits
    /// the adjusted bandwidth and whose segment loads within `max_fetch_s`.
    fn find_best_level(&self, bw_bps: f64, max_fetch_s: f64) -> Option<usize> {
        let current = self.last_level.unwrap_or(0);
        // levelDetails.averagetargetduration || the current fragment's duration: the
        // segment duration once a fragment was loaded, 0 before (no fetch-time test).
        let avg_duration_s = if self.last_level.is_some() {
            self.cfg.segment_ns as f64 / NS_PER_S
        } else {
            0.0
        };
        (0..self.levels.len()).rev().find(|&i| {
            // Pick the highest bitrate below the adjusted bandwidth; be more
            // conservative (0.7 instead of 0.95) when switching up.
            let adjusted = if i <= current {
                self.cfg.bw_factor
            } else {
                self.cfg.bw_up_factor
            } * bw_bps;
            let bitrate = self.levels[i].bitrate_bps as f64;
            let fetch_s = bitrate * avg_duration_s / adjusted;
            adjusted > bitrate && (fetch_s == 0.0 || fetch_s < max_fetch_s)
        })
    }

    /// hls.js abr-controller.ts `getNextABRAutoLevel()` (VOD, no bitrate test).
    fn abr_level(&self) -> usize {
        let bw = self.est.estimate_bps();
        // bufferStarvationDelay: the time until the buffer runs dry at playback rate 1.
        let starvation_s = self.buffer_ns() as f64 / NS_PER_S;
        if let Some(l) = self.find_best_level(bw, starvation_s) {
            return l;
        }
        // No level avoids a stall: accept up to maxStarvationDelay of one (capped at the
        // current fragment's duration).
        let frag_s = if self.last_level.is_some() {
            self.cfg.segment_ns as f64 / NS_PER_S
        } else {
            0.0
        };
        let max_starvation_s = self.cfg.max_starvation_delay_ns as f64 / NS_PER_S;
        let allowed_s = if frag_s > 0.0 {
            frag_s.min(max_starvation_s)
        } else {
            max_starvation_s
        };
        self.find_best_level(bw, starvation_s + allowed_s)
            .unwrap_or(0)
    }

    /// hls.js abr-controller.ts `get nextAutoLevel()`: the forced level while there is
    /// no estimate, else the ABR's choice capped by the forced level.
    fn next_level(&self) -> usize {
        match self.forced_level {
            Some(f) if !self.est.can_estimate() => f,
            Some(f) => f.min(self.abr_level()),
            None => self.abr_level(),
        }
    }

    fn send(&mut self, cx: &mut AppCx, load: Load, resp_bytes: u64) {
        let now = cx.now_ns();
        let id = self.next_id;
        self.next_id += 1;
        let req = self.conn.request(id, self.cfg.request_bytes, resp_bytes);
        let idle_ns = if self.last_done_ns == NEVER {
            0
        } else {
            now - self.last_done_ns
        };
        self.pending = Some(Pending {
            load,
            sent_ns: now,
            estimate_bps: self.est.estimate_bps(),
            buffer_ns: self.buffer_ns(),
            idle_ns,
            cwnd_pkts: 0,
        });
        cx.write(self.flow, Side::Client, req);
    }

    /// hls.js stream-controller.ts `doTickIdle()`: load what is next, if anything.
    fn tick(&mut self, cx: &mut AppCx) {
        if self.pending.is_some() || self.all_loaded() || self.connected_ns == NEVER {
            return;
        }
        let level = self.next_level();
        // `this.level = hls.nextLoadLevel = level`: the choice is forced until a
        // fragment loads.
        self.forced_level = Some(level);
        if !self.playlist_loaded[level] {
            // WAITING_LEVEL: the level's media playlist first.
            self.send(cx, Load::Playlist(level), self.cfg.playlist_bytes);
            return;
        }
        let now = cx.now_ns();
        let buffer = self.buffer_ns();
        let target = self.max_buffer_len_ns(level);
        if buffer >= target {
            // Stay idle: re-check on the 100 ms tick grid once the buffer is below target.
            if self.play == Play::Playing {
                let below_at = now + (buffer - target);
                let k = (below_at - self.tick_origin_ns) / self.cfg.tick_ns + 1;
                self.check_at_ns = self.tick_origin_ns + k * self.cfg.tick_ns;
            }
            return;
        }
        let index = self.next_segment;
        self.next_segment += 1;
        let bytes = self.levels[level].body_bytes + self.cfg.response_header_bytes;
        self.send(cx, Load::Segment { index, level }, bytes);
    }

    /// The one timer: the buffer running dry while playing, or a full-buffer re-check.
    fn arm_timer(&self, cx: &mut AppCx) {
        let dry = if self.play == Play::Playing {
            self.clock_ns + self.buffer_ns()
        } else {
            NEVER
        };
        let at = dry.min(self.check_at_ns);
        cx.set_timer((at != NEVER).then_some(at));
    }

    /// A response was read in full.
    fn on_response(&mut self, cx: &mut AppCx, p: Pending) {
        let now = cx.now_ns();
        self.last_done_ns = now;
        match p.load {
            Load::Master => {
                self.playlist_loads += 1;
            }
            Load::Playlist(level) => {
                self.playlist_loads += 1;
                self.playlist_loaded[level] = true;
            }
            Load::Segment { index, level } => {
                let latency = now - p.sent_ns;
                let body = self.levels[level].body_bytes;
                self.s_index.push(index);
                self.s_level.push(level as u32);
                self.s_bytes.push(body + self.cfg.response_header_bytes);
                self.s_request_ns.push(p.sent_ns);
                self.s_latency_ns.push(latency);
                self.s_estimate_bps.push(p.estimate_bps.round() as u64);
                self.s_buffer_ns.push(p.buffer_ns);
                self.s_idle_ns.push(p.idle_ns);
                self.s_cwnd_pkts.push(p.cwnd_pkts);
                // onFragLoaded(): lastLoadedFragLevel, and the forced level is released.
                self.last_level = Some(level);
                self.forced_level = None;
                // onFragBuffered(): the sample is loading.start to parsing.end (parsing
                // takes no time here) over the bytes loaded (the body).
                self.est.sample(latency, body);
                // The fragment is appended: the buffer grows by its duration.
                self.buffered_end_ns += self.cfg.segment_ns;
                match self.play {
                    Play::Startup => {
                        if self.buffer_ns() >= self.cfg.startup_buffer_ns || self.all_loaded() {
                            self.play = Play::Playing;
                            self.started_ns = now;
                        }
                    }
                    Play::Stalled => {
                        self.play = Play::Playing;
                        self.stall_total_ns += now - self.stall_start_ns;
                        self.stall_start_ns = NEVER;
                    }
                    Play::Playing | Play::Ended => {}
                }
            }
        }
    }

    fn level_name(&self, level: u32) -> String {
        self.cfg.profiles[self.levels[level as usize].profile]
            .name
            .clone()
    }

    /// Level playing at the playhead (the last loaded one while stalled at its end).
    fn level_at_playhead(&self) -> Option<u32> {
        if self.s_level.is_empty() {
            return None;
        }
        let k = (self.playhead_ns / self.cfg.segment_ns) as usize;
        Some(self.s_level[k.min(self.s_level.len() - 1)])
    }
}

impl App for Hls {
    fn name(&self) -> &str {
        &self.name
    }
    fn kind(&self) -> &'static str {
        "hls"
    }

    fn on_established(&mut self, cx: &mut AppCx, _flow: u32, side: Side) {
        if side != Side::Client {
            return;
        }
        let now = cx.now_ns();
        self.connected_ns = now;
        self.tick_origin_ns = now;
        self.clock_ns = now;
        self.send(cx, Load::Master, self.cfg.playlist_bytes);
    }

    fn on_read(&mut self, cx: &mut AppCx, flow: u32, side: Side, read_total: u64) {
        match side {
            Side::Server => {
                // nginx answers each request once read (static files).
                while let Some(rpc) = self.conn.server_next_request(read_total) {
                    let bytes = self.conn.respond(rpc);
                    cx.write(flow, Side::Server, bytes);
                    // cwnd after tcp_slow_start_after_idle_check() ran on the write.
                    if let Some(p) = self.pending.as_mut() {
                        p.cwnd_pkts = cx.sock(flow, Side::Server).tp.snd_cwnd;
                    }
                }
            }
            Side::Client => {
                let mut done = false;
                while self.conn.client_next_response(read_total).is_some() {
                    let now = cx.now_ns();
                    self.advance(now);
                    if let Some(p) = self.pending.take() {
                        self.on_response(cx, p);
                    }
                    done = true;
                }
                if done {
                    self.check_at_ns = NEVER;
                    self.tick(cx);
                    self.arm_timer(cx);
                }
            }
        }
    }

    fn on_timer(&mut self, cx: &mut AppCx) {
        let now = cx.now_ns();
        self.advance(now);
        if self.check_at_ns <= now {
            self.check_at_ns = NEVER;
            self.tick(cx);
        }
        self.arm_timer(cx);
    }

    fn sample(&mut self, t_ns: u64, _socks: &[TcpSocket]) {
        // The playhead as of t (no state change: the timer handles stalls).
        let buffer = if self.play == Play::Playing && t_ns > self.clock_ns {
            self.buffer_ns().saturating_sub(t_ns - self.clock_ns)
        } else {
            self.buffer_ns()
        };
        self.t_ns.push(t_ns);
        self.t_buffer_ns.push(buffer);
        self.t_playing
            .push(self.play == Play::Playing && buffer > 0);
        self.t_level
            .push(self.level_at_playhead().unwrap_or(u32::MAX));
        self.t_estimate_bps
            .push(self.est.estimate_bps().round() as u64);
    }

    fn finish(&mut self, end_ns: u64, _socks: &[TcpSocket]) -> AppOutput {
        self.advance(end_ns.max(self.clock_ns));
        let mut out = AppOutput::new(&self.name, "hls");
        let seg_ns = self.cfg.segment_ns;
        // Seconds played on each profile (in ladder order), and the mean bitrate played.
        let mut played_ns = vec![0u64; self.cfg.profiles.len()];
        let mut bits = 0.0;
        for (k, &lv) in self.s_level.iter().enumerate() {
            let start = k as u64 * seg_ns;
            if self.playhead_ns <= start {
                break;
            }
            let d = (self.playhead_ns - start).min(seg_ns);
            let level = &self.levels[lv as usize];
            played_ns[level.profile] += d;
            bits += d as f64 / NS_PER_S * level.bitrate_bps as f64;
        }
        let played_s = self.playhead_ns as f64 / NS_PER_S;
        let ongoing_stall = if self.play == Play::Stalled {
            end_ns - self.stall_start_ns
        } else {
            0
        };
        let switches = self.s_level.windows(2).filter(|w| w[0] != w[1]).count() as u64;
        let secs = |ns: u64| Value::F64(ns as f64 / NS_PER_S);
        out.put(
            "startup_delay_s",
            if self.started_ns == NEVER {
                Value::None
            } else {
                secs(self.started_ns - self.connected_ns)
            },
        );
        out.put("stalls", Value::U64(self.stalls));
        out.put("stall_s", secs(self.stall_total_ns + ongoing_stall));
        out.put("switches", Value::U64(switches));
        out.put(
            "time_on_profile_s",
            Value::Map(
                self.cfg
                    .profiles
                    .iter()
                    .zip(&played_ns)
                    .map(|(p, &ns)| (p.name.clone(), secs(ns)))
                    .collect(),
            ),
        );
        out.put("segments", Value::U64(self.s_level.len() as u64));
        out.put(
            "profile_names",
            Value::List(
                self.cfg
                    .profiles
                    .iter()
                    .map(|p| Value::Str(p.name.clone()))
                    .collect(),
            ),
        );
        out.put(
            "start_profile",
            Value::Str(
                self.cfg.profiles[self.levels[self.start_level].profile]
                    .name
                    .clone(),
            ),
        );
        out.put(
            "profile_bitrates_bps",
            Value::List(
                self.cfg
                    .profiles
                    .iter()
                    .map(|p| Value::U64(p.bitrate_bps))
                    .collect(),
            ),
        );
        out.put("played_s", Value::F64(played_s));
        out.put(
            "mean_bitrate_bps",
            if self.playhead_ns > 0 {
                Value::F64(bits / played_s)
            } else {
                Value::None
            },
        );
        out.put("buffer_s", secs(self.buffer_ns()));
        out.put("estimate_bps", Value::F64(self.est.estimate_bps()));
        out.put("playlist_loads", Value::U64(self.playlist_loads));
        out.put("bytes", Value::U64(self.s_bytes.iter().sum()));
        out.put(
            "connected_s",
            if self.connected_ns == NEVER {
                Value::None
            } else {
                secs(self.connected_ns)
            },
        );
        out.put("ended", Value::Bool(self.play == Play::Ended));
        out.put(
            "latency_ms",
            super::stats::latency_summary_ms(&self.s_latency_ns),
        );
        let names = |v: &[u32]| -> Vec<String> {
            v.iter()
                .map(|&l| {
                    if l == u32::MAX {
                        String::new()
                    } else {
                        self.level_name(l)
                    }
                })
                .collect()
        };
        out.tables.push(
            Table::new("segments")
                .col("index", Column::U64(self.s_index.clone()))
                .col("profile", Column::Str(names(&self.s_level)))
                .col(
                    "bitrate_bps",
                    Column::U64(
                        self.s_level
                            .iter()
                            .map(|&l| self.levels[l as usize].bitrate_bps)
                            .collect(),
                    ),
                )
                .col("bytes", Column::U64(self.s_bytes.clone()))
                .col("request_ns", Column::U64(self.s_request_ns.clone()))
                .col("latency_ns", Column::U64(self.s_latency_ns.clone()))
                .col("estimate_bps", Column::U64(self.s_estimate_bps.clone()))
                .col("buffer_ns", Column::U64(self.s_buffer_ns.clone()))
                .col("idle_ns", Column::U64(self.s_idle_ns.clone()))
                .col("cwnd_pkts", Column::U32(self.s_cwnd_pkts.clone())),
        );
        out.tables.push(
            Table::new("series")
                .col("t_ns", Column::U64(self.t_ns.clone()))
                .col("buffer_ns", Column::U64(self.t_buffer_ns.clone()))
                .col("playing", Column::Bool(self.t_playing.clone()))
                .col("profile", Column::Str(names(&self.t_level)))
                .col("estimate_bps", Column::U64(self.t_estimate_bps.clone())),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(profiles: &[(&str, u64)]) -> HlsConfig {
        HlsConfig {
            profiles: profiles
                .iter()
                .map(|&(n, b)| Profile {
                    name: n.into(),
                    bitrate_bps: b,
                })
                .collect(),
            ..HlsConfig::default()
        }
    }

    #[test]
    fn ewma_half_life_is_in_units_of_weight() {
        // ewma.ts: after a step from 0-weight history to value v, the zero-corrected
        // estimate is v; after `half_life` of weight at v2, half the weight is v2's.
        let mut e = Ewma::new(3.0);
        e.sample(10.0, 1000.0);
        assert!((e.estimate() - 1000.0).abs() < 1e-9);
        let mut e = Ewma::new(3.0);
        e.sample(1000.0, 1000.0); // the zero factor is ~1: plain EWMA from here
        e.sample(3.0, 0.0);
        assert!((e.estimate() - 500.0).abs() < 1e-6, "{}", e.estimate());
        // Weight splits: three 1 s samples decay as one 3 s sample.
        let mut a = Ewma::new(9.0);
        let mut b = Ewma::new(9.0);
        a.sample(3.0, 2000.0);
        for _ in 0..3 {
            b.sample(1.0, 2000.0);
        }
        assert!((a.estimate() - b.estimate()).abs() < 1e-9);
    }

    #[test]
    fn estimator_default_min_delay_and_minimum_of_two() {
        let c = HlsConfig::default();
        let mut est = BandwidthEstimator::new(&c);
        assert_eq!(est.estimate_bps(), 500_000.0);
        // A 1 ms load of 1000 bytes counts as 50 ms: 160 kbit/s.
        est.sample(1_000_000, 1000);
        assert!((est.estimate_bps() - 160_000.0).abs() < 1e-6);
        // A drop shows in the fast EWMA first: the estimate is the smaller (fast).
        let mut est = BandwidthEstimator::new(&c);
        est.sample(10_000_000_000, 10_000_000 / 8 * 10); // 10 Mbit/s for 10 s
        est.sample(1_000_000_000, 1_000_000 / 8); // 1 Mbit/s for 1 s
        let (f, s) = (est.fast.estimate(), est.slow.estimate());
        assert!(f < s);
        assert_eq!(est.estimate_bps(), f);
    }

    #[test]
    fn find_best_level_follows_hls_js() {
        // Ladder 1, 2, 4 Mbit/s, 2 s segments, last loaded level 1 (2 Mbit/s).
        let mut h = Hls::new(
            "h",
            vec![0],
            &cfg(&[("a", 1_000_000), ("b", 2_000_000), ("c", 4_000_000)]),
            Rng::from_seed(1),
        );
        h.last_level = Some(1);
        // 5 Mbit/s: up needs 0.7 x 5 = 3.5 > 4: no; stay: 0.95 x 5 = 4.75 > 2 -> level 1.
        assert_eq!(h.find_best_level(5e6, 100.0), Some(1));
        // 6 Mbit/s: 0.7 x 6 = 4.2 > 4, fetch 4 x 2 / 4.2 = 1.9 s: up if the buffer > 1.9 s.
        assert_eq!(h.find_best_level(6e6, 2.0), Some(2));
        assert_eq!(h.find_best_level(6e6, 1.8), Some(1));
        // 2 Mbit/s: 0.95 x 2 = 1.9 < 2 -> level 0 (fetch 1 x 2 / 1.9 = 1.05 s).
        assert_eq!(h.find_best_level(2e6, 2.0), Some(0));
        // Empty buffer: nothing fits (fetch > 0); the ABR then allows min(2 s, 4 s).
        assert_eq!(h.find_best_level(2e6, 0.0), None);
        h.est.sample(2_000_000_000, 2_000_000 / 8 * 2); // estimate 2 Mbit/s
        assert_eq!(h.abr_level(), 0);
        // Below the lowest level: nothing fits even with the allowed stall -> level 0.
        let mut h2 = Hls::new(
            "h",
            vec![0],
            &cfg(&[("a", 1_000_000), ("b", 2_000_000)]),
            Rng::from_seed(1),
        );
        h2.last_level = Some(0);
        h2.est.sample(2_000_000_000, 500_000 / 8 * 2);
        assert_eq!(h2.find_best_level(h2.est.estimate_bps(), 10.0), None);
        assert_eq!(h2.abr_level(), 0);
    }

    #[test]
    fn max_buffer_length_follows_max_buffer_size() {
        // getMaxBufferLength(): 8 x 60 MB / 3 Mbit/s = 160 s; / 100 Mbit/s = 4.8 s -> 30 s;
        // / 100 kbit/s = 4800 s -> 600 s.
        let h = Hls::new(
            "h",
            vec![0],
            &cfg(&[("lo", 100_000), ("hd", 3_000_000), ("x", 100_000_000)]),
            Rng::from_seed(1),
        );
        assert_eq!(h.max_buffer_len_ns(1), 160_000_000_000);
        assert_eq!(h.max_buffer_len_ns(2), 30_000_000_000);
        assert_eq!(h.max_buffer_len_ns(0), 600_000_000_000);
    }

    #[test]
    fn validation_errors_name_the_field() {
        let ok = cfg(&[("HD", 3_000_000), ("low", 800_000)]);
        assert!(ok.validate("apps.0.spec", 1).is_ok());
        let cases: Vec<(HlsConfig, usize, &str)> = vec![
            (HlsConfig::default(), 1, "apps.0.spec.profiles: empty"),
            (
                ok.clone(),
                2,
                "apps.0.spec: hls drives exactly one connection, got 2",
            ),
            (
                cfg(&[("HD", 3_000_000), ("HD", 800_000)]),
                1,
                "apps.0.spec.profiles.1.name: \"HD\" is already the name of profiles.0",
            ),
            (
                cfg(&[("HD", 0)]),
                1,
                "apps.0.spec.profiles.0.bitrate_bps: 0 is outside",
            ),
            (
                HlsConfig {
                    segment_ns: 0,
                    ..ok.clone()
                },
                1,
                "apps.0.spec.segment_ns: 0 is outside",
            ),
            (
                HlsConfig {
                    segments: Some(0),
                    ..ok.clone()
                },
                1,
                "apps.0.spec.segments: 0",
            ),
            (
                HlsConfig {
                    start_profile: Some("4K".into()),
                    ..ok.clone()
                },
                1,
                "apps.0.spec.start_profile: \"4K\" is not a profile",
            ),
            (
                HlsConfig {
                    bw_factor: 0.0,
                    ..ok.clone()
                },
                1,
                "apps.0.spec.bw_factor: 0 is outside",
            ),
            (
                HlsConfig {
                    startup_buffer_ns: 40_000_000_000,
                    ..ok.clone()
                },
                1,
                "apps.0.spec.startup_buffer_ns: 40000000000 is outside",
            ),
        ];
        for (c, n, want) in cases {
            let e = c.validate("apps.0.spec", n).unwrap_err();
            assert!(e.starts_with(want), "{e}");
            assert!(!e.contains('\n'));
        }
    }
}
