//! PLACEHOLDER (broadcast): to be written. See app/mod.rs for the App interface.

use serde::{Deserialize, Serialize};

use super::{App, AppCx, AppOutput, Side};
use crate::rng::Rng;
use crate::tcp::socket::TcpSocket;

/// M senders each push a message to each of their C connections within a burst window,
/// every `interval_ns`. The app's flows are sender 0's C connections, then sender 1's, ...
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct BroadcastConfig {
    pub senders: u32,
    pub connections_per_sender: u32,
    pub message_bytes: u64,
    /// Each (sender, connection) message is sent at a random moment within the window.
    pub window_ns: u64,
    pub interval_ns: u64,
    /// The first burst (after the connections are up).
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

impl BroadcastConfig {
    pub fn validate(&self, at: &str, nflows: usize) -> Result<(), String> {
        let _ = (at, nflows);
        Ok(())
    }
}

pub struct Broadcast {
    name: String,
    flows: Vec<u32>,
    cfg: BroadcastConfig,
    rng: Rng,
}

impl Broadcast {
    pub fn new(name: &str, flows: Vec<u32>, cfg: &BroadcastConfig, rng: Rng) -> Broadcast {
        Broadcast { name: name.to_string(), flows, cfg: cfg.clone(), rng }
    }
}

impl App for Broadcast {
    fn name(&self) -> &str {
        &self.name
    }
    fn kind(&self) -> &'static str {
        "broadcast"
    }
    fn on_established(&mut self, _cx: &mut AppCx, _flow: u32, _side: Side) {
        let _ = (&self.flows, &self.cfg, &mut self.rng);
    }
    fn finish(&mut self, _end_ns: u64, _socks: &[TcpSocket]) -> AppOutput {
        AppOutput::new(&self.name, "broadcast")
    }
}
