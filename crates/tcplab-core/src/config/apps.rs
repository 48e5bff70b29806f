//! The applications' part of the engine's input (`SimConfig.apps`): which workload drives
//! which flows, and each workload's parameters with their defaults.
//!
//! A schema only: the models that act on these live in `crate::app` (one file per
//! workload), and so do the checks of each workload's parameters (`AppSpec::validate` and
//! the bounds tables next to each model), because they need the model's knowledge.
//! Imports: serde only.

use serde::{Deserialize, Serialize};

/// An app instance in the scenario (`SimConfig.apps`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppInstanceConfig {
    /// The workload's name (summary.json's key).
    pub name: String,
    /// The flows (connections) it drives, as indices into `SimConfig.flows`; each of
    /// them has `app: {kind: driven}`, and no flow belongs to two apps.
    pub flows: Vec<u32>,
    pub spec: AppSpec,
}

/// The workload and its parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AppSpec {
    Rr(RrConfig),
    Hls(HlsConfig),
    NfsStream(NfsConfig),
    BatchWriter(BatchWriterConfig),
    Broadcast(BroadcastConfig),
}

impl AppSpec {
    pub fn kind(&self) -> &'static str {
        match self {
            AppSpec::Rr(_) => "rr",
            AppSpec::Hls(_) => "hls",
            AppSpec::NfsStream(_) => "nfs_stream",
            AppSpec::BatchWriter(_) => "batch_writer",
            AppSpec::Broadcast(_) => "broadcast",
        }
    }
}

// -- rr (`crate::app::rr`) -------------------------------------------------------------

/// netperf TCP_RR (one transaction outstanding per connection; each flow is one
/// netperf instance, so N flows are N in parallel).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct RrConfig {
    /// netperf `-r req,resp`: request and response sizes (default 1 byte each).
    pub request_bytes: u64,
    pub response_bytes: u64,
    /// Client think time between a response and the next request (0: back to back).
    pub think_ns: u64,
}

impl Default for RrConfig {
    fn default() -> Self {
        RrConfig {
            request_bytes: 1,
            response_bytes: 1,
            think_ns: 0,
        }
    }
}

// -- hls (`crate::app::hls`) ------------------------------------------------------------

/// One rendition of the ladder (a variant of the master playlist).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub name: String,
    /// The variant's `BANDWIDTH` (hls.js `level.maxBitrate`), and the segments' bitrate.
    pub bitrate_bps: u64,
}

/// An HLS server and one hls.js player over one persistent connection (`flows[0]`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct HlsConfig {
    /// The ladder in master-playlist order (the first is the start level).
    pub profiles: Vec<Profile>,
    /// Segment duration (`#EXT-X-TARGETDURATION`; FFmpeg's `hls_time`, 2 s by default,
    /// libavformat/hlsenc.c).
    pub segment_ns: u64,
    /// Segments in the video (None: as many as the run needs).
    pub segments: Option<u64>,
    /// Size of a playlist response (master, or a level's media playlist) and of each
    /// HTTP request.
    pub playlist_bytes: u64,
    pub request_bytes: u64,
    /// Per-response HTTP header bytes added to each segment.
    pub response_header_bytes: u64,
    /// The profile to load the first segment from (hls.js `startLevel`); None: the
    /// first listed.
    pub start_profile: Option<String>,
    /// hls.js `abrEwmaDefaultEstimate` (500 kbit/s).
    pub start_estimate_bps: u64,
    /// hls.js `abrEwmaFastVoD` / `abrEwmaSlowVoD` half-lives (3 s, 9 s).
    pub fast_half_life_ns: u64,
    pub slow_half_life_ns: u64,
    /// hls.js `abrBandWidthFactor` (0.95) and `abrBandWidthUpFactor` (0.7).
    pub bw_factor: f64,
    pub bw_up_factor: f64,
    /// hls.js `maxStarvationDelay` (4 s): stall the ABR accepts when no level avoids one.
    pub max_starvation_delay_ns: u64,
    /// Playback starts once this much is buffered (0: once the first segment is).
    pub startup_buffer_ns: u64,
    /// hls.js `maxBufferLength` (30 s), `maxBufferSize` (60 MB) and `maxMaxBufferLength`
    /// (600 s): no segment is loaded while the buffer holds
    /// `min(max(8 * max_buffer_size_bytes / bitrate, max_buffer_ns), max_max_buffer_ns)`.
    /// `max_buffer_size_bytes: 0` makes the target `max_buffer_ns` exactly.
    pub max_buffer_ns: u64,
    pub max_buffer_size_bytes: u64,
    pub max_max_buffer_ns: u64,
    /// hls.js stream-controller `TICK_INTERVAL` (100 ms): how often a full buffer is
    /// re-checked.
    pub tick_ns: u64,
}

impl Default for HlsConfig {
    fn default() -> Self {
        HlsConfig {
            profiles: Vec::new(),
            segment_ns: 2_000_000_000,
            segments: None,
            playlist_bytes: 1_000,
            request_bytes: 300,
            response_header_bytes: 300,
            start_profile: None,
            start_estimate_bps: 500_000,
            fast_half_life_ns: 3_000_000_000,
            slow_half_life_ns: 9_000_000_000,
            bw_factor: 0.95,
            bw_up_factor: 0.7,
            max_starvation_delay_ns: 4_000_000_000,
            startup_buffer_ns: 0,
            max_buffer_ns: 30_000_000_000,
            max_buffer_size_bytes: 60_000_000,
            max_max_buffer_ns: 600_000_000_000,
            tick_ns: 100_000_000,
        }
    }
}

// -- nfs_stream (`crate::app::nfs`) -----------------------------------------------------

/// The client's largest READ: NFS_MAX_FILE_IO_SIZE = 1 MiB (Linux v6.12
/// include/linux/nfs_xdr.h).
pub const NFS_MAX_FILE_IO_SIZE: u64 = 1 << 20;

/// A media server reading one file sequentially from an NFS server over `nconnect`
/// connections (the app's flows; 1 to 16) and playing it at `bitrate_bps`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct NfsConfig {
    /// `rsize`: largest READ. Default 1 MiB: without `rsize=` the client takes the
    /// server's preferred size capped at NFS_MAX_FILE_IO_SIZE (Linux v6.12
    /// fs/nfs/client.c: nfs_server_set_fsinfo()), and knfsd offers 1 MiB on servers of
    /// 4 GiB of memory or more (fs/nfsd/nfssvc.c: nfsd_get_default_max_blksize()).
    pub rsize_bytes: u64,
    /// Readahead window (`/sys/class/bdi/<dev>/read_ahead_kb`). Default 128 KiB: since
    /// Linux 5.4 NFS no longer sets `ra_pages` (the old 15 x rsize, NFS_MAX_READAHEAD, is
    /// gone); v6.12 fs/nfs/super.c: nfs_get_tree_common() sets only `io_pages =
    /// server->rpages`, so `ra_pages` keeps the bdi default VM_READAHEAD_PAGES = 128 KiB
    /// (mm/backing-dev.c: bdi_init(); include/linux/mm.h).
    pub readahead_bytes: u64,
    /// Play-out rate of the stream (about 80 Mbit/s for story 000's 4K remux).
    pub bitrate_bps: u64,
    /// Size of the file (None: longer than the run).
    pub file_bytes: Option<u64>,
    /// Playback starts (and resumes after a stall) once this much is buffered.
    pub startup_buffer_ns: u64,
    /// The reader keeps at most this much playback read ahead of the play position.
    pub max_buffer_ns: u64,
    /// Bytes of a READ call on the wire (RPC record mark, call header, credentials, file
    /// handle, offset, count; an NFSv4.1 COMPOUND with SEQUENCE/PUTFH/READ is ~200).
    pub call_bytes: u64,
    /// RPC/NFS header bytes of each reply, before the data.
    pub reply_header_bytes: u64,
    /// Server time to answer a READ once its call is read (0: at once).
    pub service_ns: u64,
}

impl Default for NfsConfig {
    fn default() -> Self {
        NfsConfig {
            rsize_bytes: NFS_MAX_FILE_IO_SIZE,
            readahead_bytes: 128 << 10,
            bitrate_bps: 80_000_000,
            file_bytes: None,
            startup_buffer_ns: 2_000_000_000,
            max_buffer_ns: 30_000_000_000,
            call_bytes: 200,
            reply_header_bytes: 120,
            service_ns: 0,
        }
    }
}

// -- batch_writer (`crate::app::batch_writer`) ------------------------------------------

/// What a full queue gives up for an arriving batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Overflow {
    /// The oldest waiting batch (vmagent's persistent queue at `-remoteWrite.maxDiskUsagePerURL`).
    #[default]
    DropOldest,
    /// The arriving batch (vmagent's in-memory queue with `-remoteWrite.dropSamplesOnOverload`).
    DropNewest,
}

/// vmagent-like remote write: a batch every `interval_ns` into a bounded queue, sent
/// one at a time per connection (the app's flows) with a timeout and retries.
/// Defaults are vmagent's (see the module docs), with the story's 54766-byte batches.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct BatchWriterConfig {
    /// Body of each batch (the story: 54766 bytes).
    pub body_bytes: u64,
    /// HTTP request line and headers (POST, Host, User-Agent, Content-Type,
    /// Content-Encoding, X-Prometheus-Remote-Write-Version, Content-Length).
    pub request_header_bytes: u64,
    /// The whole response (vmsingle's `204 No Content` with its headers).
    pub response_bytes: u64,
    /// A new batch every `interval_ns` (`-remoteWrite.flushInterval`, 1 s).
    pub interval_ns: u64,
    /// Request timeout (`-remoteWrite.sendTimeout`, 1 min).
    pub timeout_ns: u64,
    /// Backoff after a failure: from twice `retry_min_ns`, doubling, up to `retry_max_ns`
    /// (`-remoteWrite.retryMinInterval` 1 s, `-remoteWrite.retryMaxInterval` 1 min).
    pub retry_min_ns: u64,
    pub retry_max_ns: u64,
    /// Both backoff bounds get up to `jitter` of themselves, at most `jitter_max_ns`,
    /// at random (`AddJitterToDuration`: 10 %, at most 10 s).
    pub jitter: f64,
    pub jitter_max_ns: u64,
    /// Batches that may wait in the queue (0: unbounded, vmagent's default).
    pub max_pending: u64,
    /// Which batch a full queue drops.
    pub overflow: Overflow,
}

impl Overflow {
    /// The names the configuration takes (serde's snake_case of the variants).
    pub const NAMES: &'static [&'static str] = &["drop_oldest", "drop_newest"];
}

impl Default for BatchWriterConfig {
    fn default() -> Self {
        BatchWriterConfig {
            body_bytes: 54_766,
            request_header_bytes: 250,
            response_bytes: 150,
            interval_ns: 1_000_000_000,
            timeout_ns: 60_000_000_000,
            retry_min_ns: 1_000_000_000,
            retry_max_ns: 60_000_000_000,
            jitter: 0.1,
            jitter_max_ns: 10_000_000_000,
            max_pending: 0,
            overflow: Overflow::DropOldest,
        }
    }
}

// -- broadcast (`crate::app::broadcast`) ------------------------------------------------

/// M senders each push a message to each of their C connections within a burst window,
/// every `interval_ns`. The app's flows are sender 0's C connections, then sender 1's, ...
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct BroadcastConfig {
    /// Sender hosts (M: the story's four application nodes).
    pub senders: u32,
    /// Connections per sender (C); the app drives `senders x connections_per_sender` flows.
    pub connections_per_sender: u32,
    /// Bytes of one message on one connection (a websocket frame with its event).
    pub message_bytes: u64,
    /// Each (sender, connection) message is written at a moment drawn uniformly within
    /// `[burst start, burst start + window_ns)`; 0: all at the burst's start.
    pub window_ns: u64,
    /// From one burst's start to the next's (at least the window).
    pub interval_ns: u64,
    /// The first burst's start (scenario time; after the connections are up).
    pub first_burst_ns: u64,
    /// Bursts in all (None: until the run ends).
    pub bursts: Option<u64>,
}

impl Default for BroadcastConfig {
    fn default() -> Self {
        BroadcastConfig {
            senders: 1,
            connections_per_sender: 1,
            message_bytes: 1_000,
            window_ns: 10_000_000,
            interval_ns: 1_000_000_000,
            first_burst_ns: 2_000_000_000,
            bursts: None,
        }
    }
}
