//! PLACEHOLDER (hls): to be written. See app/mod.rs for the App interface.

use serde::{Deserialize, Serialize};

use super::{App, AppCx, AppOutput, Side};
use crate::rng::Rng;
use crate::tcp::socket::TcpSocket;

/// One rendition of the ladder.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub name: String,
    pub bitrate_bps: u64,
}

/// An HLS server and one hls.js-like client over one persistent connection (flows[0]).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct HlsConfig {
    /// The ladder, in any order.
    pub profiles: Vec<Profile>,
    /// Segment duration (`#EXT-X-TARGETDURATION`).
    pub segment_ns: u64,
    /// Segments in the video (None: as many as the run needs).
    pub segments: Option<u64>,
    /// Size of the playlist response, and of each HTTP request.
    pub playlist_bytes: u64,
    pub request_bytes: u64,
    /// Per-response HTTP header bytes added to each segment.
    pub response_header_bytes: u64,
    /// hls.js `abrEwmaDefaultEstimate` (500 kbit/s).
    pub start_estimate_bps: u64,
    /// hls.js `abrEwmaFastVoD` / `abrEwmaSlowVoD` half-lives (3 s, 9 s).
    pub fast_half_life_ns: u64,
    pub slow_half_life_ns: u64,
    /// hls.js `abrBandWidthFactor` (0.95) and `abrBandWidthUpFactor` (0.7).
    pub bw_factor: f64,
    pub bw_up_factor: f64,
    /// Playback starts once this much is buffered.
    pub startup_buffer_ns: u64,
    /// hls.js `maxBufferLength` (30 s): no new segment is fetched while the buffer holds this much.
    pub max_buffer_ns: u64,
}

impl Default for HlsConfig {
    fn default() -> Self {
        HlsConfig {
            profiles: Vec::new(),
            segment_ns: 4_000_000_000,
            segments: None,
            playlist_bytes: 1_000,
            request_bytes: 300,
            response_header_bytes: 300,
            start_estimate_bps: 500_000,
            fast_half_life_ns: 3_000_000_000,
            slow_half_life_ns: 9_000_000_000,
            bw_factor: 0.95,
            bw_up_factor: 0.7,
            startup_buffer_ns: 4_000_000_000,
            max_buffer_ns: 30_000_000_000,
        }
    }
}

impl HlsConfig {
    pub fn validate(&self, at: &str, nflows: usize) -> Result<(), String> {
        let _ = (at, nflows);
        Ok(())
    }
}

pub struct Hls {
    name: String,
    flows: Vec<u32>,
    cfg: HlsConfig,
    rng: Rng,
}

impl Hls {
    pub fn new(name: &str, flows: Vec<u32>, cfg: &HlsConfig, rng: Rng) -> Hls {
        Hls { name: name.to_string(), flows, cfg: cfg.clone(), rng }
    }
}

impl App for Hls {
    fn name(&self) -> &str {
        &self.name
    }
    fn kind(&self) -> &'static str {
        "hls"
    }
    fn on_established(&mut self, _cx: &mut AppCx, _flow: u32, _side: Side) {
        let _ = (&self.flows, &self.cfg, &mut self.rng);
    }
    fn finish(&mut self, _end_ns: u64, _socks: &[TcpSocket]) -> AppOutput {
        AppOutput::new(&self.name, "hls")
    }
}
