//! The packet capture's part of the engine's input (`SimConfig.capture`): which flow, at
//! which of its hosts, how many packets. A schema only: the capture itself is
//! `crate::capture` (and its tap `crate::net::tap`), which also checks these fields
//! against the run's memory budget (`capture::validate`). Imports: serde only.

use serde::{Deserialize, Serialize};

/// Default of [`CaptureConfig::max_packets`].
pub const DEFAULT_MAX_PACKETS: u64 = 1_000_000;
/// Largest [`CaptureConfig::max_packets`].
pub const MAX_MAX_PACKETS: u64 = 100_000_000;
/// Which of the flow's two hosts runs "tcpdump": the data's sender or its receiver
/// (`FlowConfig::data_side` says which endpoint sends the data).
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum CaptureAt {
    #[default]
    Sender,
    Receiver,
}

impl CaptureAt {
    pub fn name(self) -> &'static str {
        match self {
            CaptureAt::Sender => "sender",
            CaptureAt::Receiver => "receiver",
        }
    }
}

/// `SimConfig.capture`: capture flow `flow`'s packets at one of its hosts.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaptureConfig {
    /// Index of the flow in `SimConfig.flows`.
    pub flow: u32,
    #[serde(default)]
    pub at: CaptureAt,
    /// Packets kept (the first ones, in time order); the rest are counted as truncated.
    #[serde(default = "default_max_packets")]
    pub max_packets: u64,
}

fn default_max_packets() -> u64 {
    DEFAULT_MAX_PACKETS
}
