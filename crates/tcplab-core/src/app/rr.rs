//! netperf TCP_RR: request/response transactions.
//!
//! Model (netperf 2.7 `src/nettest_bsd.c`: `send_tcp_rr()` / `recv_tcp_rr()`): each
//! flow is one netperf instance with one connection; the client writes a request of
//! `request_bytes` (netperf `-r req,resp`, default 1,1), the server reads it whole and
//! writes a response of `response_bytes`, and when the client has read the whole
//! response the transaction is complete and the next request goes out (after
//! `think_ns`, which netperf does not have: 0 by default, the back-to-back loop). Several
//! instances in parallel are several flows. A transaction's latency is from the
//! request's write to the read of its response's last byte, as netperf's
//! `-j` / omni output measures it (`RT_LATENCY` = 1 / TPS per instance).
//!
//! Reported: transactions, transactions per second over the time the connections were
//! open (netperf's "Trans. Rate per sec"), latency percentiles (p50, p90, p99, p99.9)
//! and one row per transaction (`requests` table).

use super::bounds::{Connections, FieldBound, Limit::Int};
use super::output::{Column, Table, Value};
use super::rpc::RpcConn;
use super::{App, AppCx, AppOutput, FlowMap, Side};
pub use crate::config::apps::RrConfig;
use crate::config::MAX_DELAY_NS;
use crate::rng::Rng;
use crate::tcp::socket::TcpSocket;
use crate::time::NEVER;

/// The ranges [`RrConfig::validate`] enforces (`super::bounds`).
pub const BOUNDS: &[FieldBound] = &[
    FieldBound::new("request_bytes", Int(1), Int(1 << 40)),
    FieldBound::new("response_bytes", Int(1), Int(1 << 40)),
    FieldBound::new("think_ns", Int(0), Int(MAX_DELAY_NS)),
];
/// Any number of connections: each is one netperf TCP_RR instance.
pub const CONNECTIONS: Connections = Connections { lo: 1, hi: None };

impl RrConfig {
    pub fn validate(&self, at: &str, nflows: usize) -> Result<(), String> {
        let _ = nflows;
        for (name, v) in [
            ("request_bytes", self.request_bytes),
            ("response_bytes", self.response_bytes),
        ] {
            if v == 0 || v > 1 << 40 {
                return Err(format!("{at}.{name}: {v} is outside [1, 2^40] bytes"));
            }
        }
        if self.think_ns > crate::config::MAX_DELAY_NS {
            return Err(format!(
                "{at}.think_ns: {} is outside [0, {}] ns (one hour)",
                self.think_ns,
                crate::config::MAX_DELAY_NS
            ));
        }
        Ok(())
    }
}

pub struct Rr {
    name: String,
    flows: FlowMap,
    cfg: RrConfig,
    conns: Vec<RpcConn>,
    /// Per connection: when its outstanding request was written (NEVER: none), and when
    /// the next one is due after think time (NEVER: not waiting).
    sent_at_ns: Vec<u64>,
    next_at_ns: Vec<u64>,
    /// Per connection: when it was established (scenario ns; NEVER: not yet).
    open_at_ns: Vec<u64>,
    next_id: u64,
    /// Per connection: transactions completed.
    done: Vec<u64>,
    // one row per completed transaction
    t_flow: Vec<u32>,
    t_start_ns: Vec<u64>,
    t_latency_ns: Vec<u64>,
}

impl Rr {
    pub fn new(name: &str, flows: Vec<u32>, cfg: &RrConfig, _rng: Rng) -> Rr {
        let n = flows.len();
        Rr {
            name: name.to_string(),
            flows: FlowMap::new(flows),
            cfg: cfg.clone(),
            conns: vec![RpcConn::default(); n],
            sent_at_ns: vec![NEVER; n],
            next_at_ns: vec![NEVER; n],
            open_at_ns: vec![NEVER; n],
            next_id: 0,
            done: vec![0; n],
            t_flow: Vec::new(),
            t_start_ns: Vec::new(),
            t_latency_ns: Vec::new(),
        }
    }

    fn send_request(&mut self, cx: &mut AppCx, k: usize) {
        let id = self.next_id;
        self.next_id += 1;
        let bytes = self.conns[k].request(id, self.cfg.request_bytes, self.cfg.response_bytes);
        self.sent_at_ns[k] = cx.now_ns();
        cx.write(self.flows.flow(k), Side::Client, bytes);
    }

    fn arm_timer(&self, cx: &mut AppCx) {
        let next = self.next_at_ns.iter().copied().min().unwrap_or(NEVER);
        cx.set_timer((next != NEVER).then_some(next));
    }
}

impl App for Rr {
    fn name(&self) -> &str {
        &self.name
    }
    fn kind(&self) -> &'static str {
        "rr"
    }

    fn on_established(&mut self, cx: &mut AppCx, flow: u32, side: Side) {
        if side == Side::Client {
            let k = self.flows.local(flow);
            self.open_at_ns[k] = cx.now_ns();
            self.send_request(cx, k);
        }
    }

    fn on_read(&mut self, cx: &mut AppCx, flow: u32, side: Side, read_total: u64) {
        let k = self.flows.local(flow);
        match side {
            Side::Server => {
                while let Some(rpc) = self.conns[k].server_next_request(read_total) {
                    let bytes = self.conns[k].respond(rpc);
                    cx.write(flow, Side::Server, bytes);
                }
            }
            Side::Client => {
                while self.conns[k].client_next_response(read_total).is_some() {
                    let now = cx.now_ns();
                    let start = self.sent_at_ns[k];
                    self.t_flow.push(flow);
                    self.t_start_ns.push(start);
                    self.t_latency_ns.push(now - start);
                    self.sent_at_ns[k] = NEVER;
                    self.done[k] += 1;
                    if self.cfg.think_ns == 0 {
                        self.send_request(cx, k);
                    } else {
                        self.next_at_ns[k] = now + self.cfg.think_ns;
                        self.arm_timer(cx);
                    }
                }
            }
        }
    }

    fn on_timer(&mut self, cx: &mut AppCx) {
        let now = cx.now_ns();
        for k in 0..self.next_at_ns.len() {
            if self.next_at_ns[k] <= now {
                self.next_at_ns[k] = NEVER;
                self.send_request(cx, k);
            }
        }
        self.arm_timer(cx);
    }

    fn finish(&mut self, end_ns: u64, socks: &[TcpSocket]) -> AppOutput {
        let mut out = AppOutput::new(&self.name, "rr");
        let n = self.t_latency_ns.len() as u64;
        // Transactions per second: per connection over the time it was open, summed
        // (netperf's aggregate of parallel instances).
        let mut tps = 0.0;
        for k in 0..self.flows.len() {
            let open = self.open_at_ns[k];
            // A flow with `stop` writes nothing after it: count its rate up to there.
            let stop_abs = socks[Side::Client.ep(self.flows.flow(k)) as usize]
                .app
                .stop_ns;
            let end_ns = end_ns.min(stop_abs.saturating_sub(crate::time::BOOT_NS));
            if open == NEVER || end_ns <= open {
                continue;
            }
            tps += self.done[k] as f64 / ((end_ns - open) as f64 / 1e9);
        }
        out.put("transactions", Value::U64(n));
        out.put("transactions_per_sec", Value::F64(tps));
        out.put("connections", Value::U64(self.flows.len() as u64));
        out.put("request_bytes", Value::U64(self.cfg.request_bytes));
        out.put("response_bytes", Value::U64(self.cfg.response_bytes));
        out.put(
            "latency_ms",
            super::stats::latency_summary_ms(&self.t_latency_ns),
        );
        out.tables.push(
            Table::new("requests")
                .col("flow", Column::U32(self.t_flow.clone()))
                .col("start_ns", Column::U64(self.t_start_ns.clone()))
                .col("latency_ns", Column::U64(self.t_latency_ns.clone())),
        );
        out
    }
}
