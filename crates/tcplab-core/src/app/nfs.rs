//! PLACEHOLDER (nfs_stream): to be written. See app/mod.rs for the App interface.

use serde::{Deserialize, Serialize};

use super::{App, AppCx, AppOutput, Side};
use crate::rng::Rng;
use crate::tcp::socket::TcpSocket;

/// A media server reading one file sequentially from an NFS server over `nconnect`
/// connections (the app's flows; 1 to 16) and playing it at `bitrate_bps`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct NfsConfig {
    /// `rsize`: bytes per READ.
    pub rsize_bytes: u64,
    /// Readahead window: bytes of READs in flight at most.
    pub readahead_bytes: u64,
    /// Play-out rate of the stream.
    pub bitrate_bps: u64,
    /// Size of the file (None: longer than the run).
    pub file_bytes: Option<u64>,
    /// Playback starts once this much is buffered; the reader keeps at most `max_buffer_ns`.
    pub startup_buffer_ns: u64,
    pub max_buffer_ns: u64,
    /// Bytes of a READ call, and RPC/NFS header bytes of each reply.
    pub call_bytes: u64,
    pub reply_header_bytes: u64,
}

impl Default for NfsConfig {
    fn default() -> Self {
        NfsConfig {
            rsize_bytes: 1 << 20,
            readahead_bytes: 16 << 20,
            bitrate_bps: 80_000_000,
            file_bytes: None,
            startup_buffer_ns: 2_000_000_000,
            max_buffer_ns: 30_000_000_000,
            call_bytes: 200,
            reply_header_bytes: 120,
        }
    }
}

impl NfsConfig {
    pub fn validate(&self, at: &str, nflows: usize) -> Result<(), String> {
        let _ = (at, nflows);
        Ok(())
    }
}

pub struct NfsStream {
    name: String,
    flows: Vec<u32>,
    cfg: NfsConfig,
    rng: Rng,
}

impl NfsStream {
    pub fn new(name: &str, flows: Vec<u32>, cfg: &NfsConfig, rng: Rng) -> NfsStream {
        NfsStream { name: name.to_string(), flows, cfg: cfg.clone(), rng }
    }
}

impl App for NfsStream {
    fn name(&self) -> &str {
        &self.name
    }
    fn kind(&self) -> &'static str {
        "nfs_stream"
    }
    fn on_established(&mut self, _cx: &mut AppCx, _flow: u32, _side: Side) {
        let _ = (&self.flows, &self.cfg, &mut self.rng);
    }
    fn finish(&mut self, _end_ns: u64, _socks: &[TcpSocket]) -> AppOutput {
        AppOutput::new(&self.name, "nfs_stream")
    }
}
