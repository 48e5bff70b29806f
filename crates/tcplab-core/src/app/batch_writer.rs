//! PLACEHOLDER (batch_writer): to be written. See app/mod.rs for the App interface.

use serde::{Deserialize, Serialize};

use super::{App, AppCx, AppOutput, Side};
use crate::rng::Rng;
use crate::tcp::socket::TcpSocket;

/// vmagent-like remote write: a batch every `interval_ns` into a bounded queue, sent
/// one at a time per connection (the app's flows) with a timeout and retries.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct BatchWriterConfig {
    /// Body of each batch (the story: 54766 bytes), plus HTTP request header bytes.
    pub body_bytes: u64,
    pub request_header_bytes: u64,
    /// Response size (a 204 with headers).
    pub response_bytes: u64,
    /// A new batch every `interval_ns` (vmagent `-remoteWrite.flushInterval`, 1 s).
    pub interval_ns: u64,
    /// Request timeout (vmagent `-remoteWrite.sendTimeout`, 1 min).
    pub timeout_ns: u64,
    /// Retry backoff: from `retry_min_ns` doubling up to `retry_max_ns`, plus up to
    /// `jitter` of it at random (vmagent: 1 s, 1 min, 10 %).
    pub retry_min_ns: u64,
    pub retry_max_ns: u64,
    pub jitter: f64,
    /// Batches that may wait; a batch arriving to a full queue is dropped (counted).
    pub max_pending: u64,
}

impl Default for BatchWriterConfig {
    fn default() -> Self {
        BatchWriterConfig {
            body_bytes: 54_766,
            request_header_bytes: 300,
            response_bytes: 150,
            interval_ns: 1_000_000_000,
            timeout_ns: 60_000_000_000,
            retry_min_ns: 1_000_000_000,
            retry_max_ns: 60_000_000_000,
            jitter: 0.1,
            max_pending: 10_000,
        }
    }
}

impl BatchWriterConfig {
    pub fn validate(&self, at: &str, nflows: usize) -> Result<(), String> {
        let _ = (at, nflows);
        Ok(())
    }
}

pub struct BatchWriter {
    name: String,
    flows: Vec<u32>,
    cfg: BatchWriterConfig,
    rng: Rng,
}

impl BatchWriter {
    pub fn new(name: &str, flows: Vec<u32>, cfg: &BatchWriterConfig, rng: Rng) -> BatchWriter {
        BatchWriter { name: name.to_string(), flows, cfg: cfg.clone(), rng }
    }
}

impl App for BatchWriter {
    fn name(&self) -> &str {
        &self.name
    }
    fn kind(&self) -> &'static str {
        "batch_writer"
    }
    fn on_established(&mut self, _cx: &mut AppCx, _flow: u32, _side: Side) {
        let _ = (&self.flows, &self.cfg, &mut self.rng);
    }
    fn finish(&mut self, _end_ns: u64, _socks: &[TcpSocket]) -> AppOutput {
        AppOutput::new(&self.name, "batch_writer")
    }
}
