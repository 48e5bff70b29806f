//! The engine's input: a fully resolved scenario.
//!
//! Python parses and validates the user's scenario file (human units, names, defaults
//! from the host's sysctls) and hands the engine this plain structure as JSON: every
//! time in nanoseconds, every rate in bits per second, every size in bytes or packets,
//! every reference an index. The engine re-checks what it relies on ([`SimConfig::validate`])
//! so that a bad structure becomes a clear error, never a panic.

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    pub seed: u64,
    pub duration_ns: u64,
    /// Interval of the per-flow and per-queue time series; 0 disables sampling.
    #[serde(default = "default_sample_interval_ns")]
    pub sample_interval_ns: u64,
    pub nodes: Vec<NodeConfig>,
    pub links: Vec<LinkConfig>,
    pub flows: Vec<FlowConfig>,
}

fn default_sample_interval_ns() -> u64 {
    100_000_000
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    pub name: String,
    /// "host" terminates flows; "router" only forwards.
    #[serde(default = "default_node_kind")]
    pub kind: NodeKind,
    /// The host kernel's `CONFIG_HZ` (100, 250 or 1000): the tick of its jiffy clocks and
    /// timers (RTO, TLP, delayed ACK, CUBIC's clock, BBR's min_rtt window).
    #[serde(default = "default_hz")]
    pub hz: u32,
}

fn default_node_kind() -> NodeKind {
    NodeKind::Host
}

fn default_hz() -> u32 {
    crate::time::DEFAULT_HZ
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    Host,
    Router,
}

/// One direction of a link: `from` transmits into `to`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    pub name: String,
    pub from: u32,
    pub to: u32,
    pub rate_bps: u64,
    pub delay_ns: u64,
    /// Per-packet framing bytes counted by the serializer on top of the IP length
    /// (14 = Ethernet header, as qdiscs and netem count `skb->len`).
    #[serde(default = "default_overhead")]
    pub overhead_bytes: u32,
    #[serde(default)]
    pub loss: LossConfig,
    #[serde(default)]
    pub reorder: Option<ReorderConfig>,
    #[serde(default)]
    pub queue: QueueConfig,
}

fn default_overhead() -> u32 {
    14
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LossConfig {
    #[default]
    None,
    /// Each packet lost independently with probability `p`.
    Bernoulli { p: f64 },
    /// Gilbert-Elliott two-state burst loss, as netem's `loss gemodel p r 1-h 1-k`:
    /// `p` good->bad, `r` bad->good, loss probability `1-k` in good, `1-h` in bad.
    /// netem's defaults: h = 0 (every packet in the bad state is lost), k = 1.
    GilbertElliott { p: f64, r: f64, #[serde(default)] h: f64, #[serde(default = "one")] k: f64 },
    /// Drop exactly these packets, counted from 0 among the data packets entering the link.
    DropList { data_packets: Vec<u64> },
}

fn one() -> f64 {
    1.0
}

/// netem-style reordering: with probability `p` a packet is held back `delay_ns` longer.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReorderConfig {
    pub p: f64,
    pub delay_ns: u64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum QueueConfig {
    /// Drop-tail FIFO limited in packets (`tc qdisc add ... pfifo limit N`).
    Pfifo { limit_packets: u32 },
    /// Drop-tail FIFO limited in bytes (`bfifo limit N`), counting IP bytes as tc does.
    Bfifo { limit_bytes: u64 },
}

impl Default for QueueConfig {
    /// `pfifo_fast`'s default: the device's txqueuelen of 1000 packets.
    fn default() -> Self {
        QueueConfig::Pfifo { limit_packets: 1000 }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CcKind {
    Reno,
    Cubic,
    Bbr,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    pub name: String,
    /// The node that sends the data (the "client" of `netperf TCP_STREAM`).
    pub src: u32,
    pub dst: u32,
    pub cc: CcKind,
    #[serde(default)]
    pub start_ns: u64,
    /// When the application stops writing; `None` = end of the run.
    #[serde(default)]
    pub stop_ns: Option<u64>,
    #[serde(default)]
    pub app: AppConfig,
    #[serde(default)]
    pub tcp: TcpConfig,
    #[serde(default)]
    pub cc_params: CcParams,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AppConfig {
    /// netperf TCP_STREAM: the sender always has data (or `bytes` in all, then FIN).
    #[default]
    Bulk,
    BulkBytes { bytes: u64 },
}

/// Per-socket TCP settings, named after the sysctls they come from (v6.12 defaults).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TcpConfig {
    pub mss_bytes: u32,
    /// `tcp_rmem` min, default, max.
    pub tcp_rmem: [u64; 3],
    /// `tcp_wmem` min, default, max.
    pub tcp_wmem: [u64; 3],
    pub tcp_slow_start_after_idle: bool,
    /// `tcp_early_retrans` (3 = TLP enabled).
    pub tcp_early_retrans: u8,
    /// `tcp_recovery` bits (1 = RACK loss detection; 4 = no DUPACK-threshold heuristic).
    pub tcp_recovery: u8,
    pub tcp_frto: u8,
    pub tcp_reordering: u32,
    pub tcp_max_reordering: u32,
    pub tcp_min_rtt_wlen_s: u32,
    pub tcp_limit_output_bytes: u64,
    pub tcp_pacing_ss_ratio: u32,
    pub tcp_pacing_ca_ratio: u32,
    pub tcp_moderate_rcvbuf: bool,
    pub tcp_comp_sack_delay_ns: u64,
    pub tcp_comp_sack_nr: u32,
    pub tcp_min_tso_segs: u32,
    pub tcp_tso_rtt_log: u32,
    pub initial_cwnd: u32,
    /// `TCP_RTO_MIN` in ms (200); a per-route `rto_min` may lower it.
    pub rto_min_ms: u32,
    /// Set when the sender's egress qdisc is fq (pacing done by the qdisc, not TCP).
    pub fq_pacing: bool,
    /// `sk_max_pacing_rate` (SO_MAX_PACING_RATE) in bytes per second; u64::MAX = unlimited.
    pub max_pacing_rate_bytes_per_sec: u64,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss_bytes: 1448,
            tcp_rmem: [4096, 131072, 6291456],
            tcp_wmem: [4096, 16384, 4194304],
            tcp_slow_start_after_idle: true,
            tcp_early_retrans: 3,
            tcp_recovery: 1,
            tcp_frto: 2,
            tcp_reordering: 3,
            tcp_max_reordering: 300,
            tcp_min_rtt_wlen_s: 300,
            tcp_limit_output_bytes: 1048576,
            tcp_pacing_ss_ratio: 200,
            tcp_pacing_ca_ratio: 120,
            tcp_moderate_rcvbuf: true,
            tcp_comp_sack_delay_ns: 1_000_000,
            tcp_comp_sack_nr: 44,
            tcp_min_tso_segs: 2,
            tcp_tso_rtt_log: 9,
            initial_cwnd: 10,
            rto_min_ms: 200,
            fq_pacing: false,
            max_pacing_rate_bytes_per_sec: u64::MAX,
        }
    }
}

/// Congestion-control module parameters (`/sys/module/tcp_cubic/parameters/*`, ...).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CcParams {
    /// tcp_cubic `hystart` (1 = on).
    pub hystart: bool,
    /// tcp_cubic `hystart_detect` bits: 1 = ACK train, 2 = delay.
    pub hystart_detect: u8,
    pub hystart_low_window: u32,
    pub hystart_ack_delta_us: u32,
    pub fast_convergence: bool,
    pub tcp_friendliness: bool,
    /// tcp_cubic `beta` (x1024).
    pub beta: u32,
    pub bic_scale: u32,
    /// tcp_cubic `initial_ssthresh` (0 = unset).
    pub initial_ssthresh: u32,
    /// Apply the BBR inflight-deficit patch for CPU-starved VMs (seed 003).
    pub bbr_vm_patch: bool,
}

impl Default for CcParams {
    fn default() -> Self {
        CcParams {
            hystart: true,
            hystart_detect: 3,
            hystart_low_window: 16,
            hystart_ack_delta_us: 2000,
            fast_convergence: true,
            tcp_friendliness: true,
            beta: 717,
            bic_scale: 41,
            initial_ssthresh: 0,
            bbr_vm_patch: false,
        }
    }
}

impl SimConfig {
    pub fn from_json(s: &str) -> Result<Self, String> {
        let cfg: SimConfig = serde_json::from_str(s).map_err(|e| format!("engine config: {e}"))?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks everything the engine relies on; the message names the field.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.nodes.len() as u32;
        if self.nodes.is_empty() {
            return Err("nodes: expected at least one node".into());
        }
        if self.duration_ns == 0 {
            return Err("duration_ns: expected a positive duration".into());
        }
        for (i, node) in self.nodes.iter().enumerate() {
            if !crate::time::SUPPORTED_HZ.contains(&node.hz) {
                return Err(format!("nodes.{i}.hz: {} is not a supported CONFIG_HZ (expected 100, 250 or 1000)", node.hz));
            }
        }
        for (i, l) in self.links.iter().enumerate() {
            if l.from >= n || l.to >= n {
                return Err(format!("links.{i}: endpoint index out of range ({} nodes)", n));
            }
            if l.from == l.to {
                return Err(format!("links.{i}: a link must join two different nodes"));
            }
            if l.rate_bps == 0 {
                return Err(format!("links.{i}.rate_bps: expected a positive rate"));
            }
            match &l.loss {
                LossConfig::Bernoulli { p } if !(0.0..=1.0).contains(p) => {
                    return Err(format!("links.{i}.loss.p: {p} is not a probability in [0, 1]"))
                }
                LossConfig::GilbertElliott { p, r, h, k } => {
                    for (name, v) in [("p", p), ("r", r), ("h", h), ("k", k)] {
                        if !(0.0..=1.0).contains(v) {
                            return Err(format!("links.{i}.loss.{name}: {v} is not a probability in [0, 1]"));
                        }
                    }
                }
                _ => {}
            }
            if let Some(r) = &l.reorder {
                if !(0.0..=1.0).contains(&r.p) {
                    return Err(format!("links.{i}.reorder.p: {} is not a probability in [0, 1]", r.p));
                }
            }
            match l.queue {
                QueueConfig::Pfifo { limit_packets: 0 } => {
                    return Err(format!("links.{i}.queue.limit_packets: expected at least 1"))
                }
                QueueConfig::Bfifo { limit_bytes: 0 } => {
                    return Err(format!("links.{i}.queue.limit_bytes: expected at least 1"))
                }
                _ => {}
            }
        }
        for (i, f) in self.flows.iter().enumerate() {
            if f.src >= n || f.dst >= n {
                return Err(format!("flows.{i}: node index out of range ({} nodes)", n));
            }
            if f.src == f.dst {
                return Err(format!("flows.{i}: src and dst must differ"));
            }
            for (idx, which) in [(f.src, "src"), (f.dst, "dst")] {
                if self.nodes[idx as usize].kind != NodeKind::Host {
                    return Err(format!("flows.{i}.{which}: node {} is a router, not a host", self.nodes[idx as usize].name));
                }
            }
            let t = &f.tcp;
            if t.mss_bytes < 88 || t.mss_bytes > 65_000 {
                return Err(format!("flows.{i}.tcp.mss_bytes: {} outside [88, 65000]", t.mss_bytes));
            }
            if t.initial_cwnd == 0 {
                return Err(format!("flows.{i}.tcp.initial_cwnd: expected at least 1"));
            }
            if t.tcp_rmem[2] < t.tcp_rmem[1] || t.tcp_wmem[2] < t.tcp_wmem[1] {
                return Err(format!("flows.{i}.tcp: tcp_rmem/tcp_wmem max below default"));
            }
            if f.cc_params.beta == 0 || f.cc_params.beta >= 1024 {
                return Err(format!("flows.{i}.cc_params.beta: {} outside [1, 1023]", f.cc_params.beta));
            }
            if f.cc_params.bic_scale == 0 {
                return Err(format!("flows.{i}.cc_params.bic_scale: expected at least 1"));
            }
        }
        Ok(())
    }
}
