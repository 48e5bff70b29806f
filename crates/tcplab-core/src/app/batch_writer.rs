//! vmagent-like remote write: periodic batches, a request timeout, retries with
//! exponential backoff and jitter, a bounded queue of pending batches.
//!
//! Model (VictoriaMetrics `app/vmagent/remotewrite/`: `client.go` `runWorker()` /
//! `sendBlockHTTP()`, `remotewrite.go` flags, `lib/timeutil` `AddJitterToDuration()`):
//!
//! - **Batches.** A batch ("block") of `body_bytes` is produced every `interval_ns`
//!   (`-remoteWrite.flushInterval`, 1 s; the first one interval after the start, as a Go
//!   ticker fires) into one queue shared by all the app's connections (vmagent's
//!   `FastQueue` per `-remoteWrite.url`). A batch arriving to a full queue (`max_pending`
//!   batches waiting; 0 = unbounded, vmagent's `-remoteWrite.maxDiskUsagePerURL=0`) is
//!   counted as dropped, and the queue drops either its oldest batch (`drop_oldest`, the
//!   default: "when buffer size reaches the configured maximum, then old data is dropped
//!   when adding new data", the flag's help) or the arriving one (`drop_newest`, as the
//!   in-memory queue does with `-remoteWrite.dropSamplesOnOverload`). `max_pending`
//!   counts batches where vmagent counts bytes.
//! - **Connections.** Each of the app's flows is one of vmagent's `-remoteWrite.queues`
//!   workers (its default is 2 x CPUs; the scenario's `queues` sets the number of flows):
//!   an idle, established worker takes the queue's oldest batch and sends it as one HTTP
//!   POST (`request_header_bytes` + `body_bytes`), then waits for the response
//!   (`response_bytes`: vmsingle's `204 No Content`); the server answers each request as
//!   soon as it has read it whole. One batch at a time per worker.
//! - **Timeout.** An attempt not answered within `timeout_ns` of its write
//!   (`-remoteWrite.sendTimeout`, 1 min: Go's `http.Client.Timeout`, which covers writing
//!   the request and reading the response) fails; so would any error. vmagent then sleeps
//!   and retries the same batch, forever (the batch is never dropped for failing).
//! - **Backoff** (`sendBlockHTTP`): when a batch is taken, `retry = jitter(retry_min_ns)`
//!   and `cap = jitter(retry_max_ns)` (`-remoteWrite.retryMinInterval` 1 s,
//!   `-remoteWrite.retryMaxInterval` 1 min); after each failure `retry = min(2 retry,
//!   cap)` and the worker sleeps `retry` before the next attempt. So the first sleep is
//!   twice `retry_min_ns` (2 s, 4 s, 8 s, ... up to the cap). `jitter(d)` adds a uniform
//!   random fraction of `min(jitter * d, jitter_max_ns)` (`AddJitterToDuration`: 10 %,
//!   at most 10 s), drawn from the app's own stream: the story's 65.92 s maximum backoff
//!   is a 60 s cap plus 5.92 s of jitter. A success ends the batch; the next batch starts
//!   from `retry_min_ns` again.
//!
//! A worker starts attempts only on an established connection: a connection that cannot
//! be established (its SYNs lost) shows as batches waiting, not as failed dials.
//!
//! Departure (Go/Linux): on a timeout Go's HTTP client cancels the request and closes the
//! connection, and the retry dials a new one (fresh handshake, slow start). tcplab keeps
//! the connection (the engine cannot reopen one yet): the abandoned request's bytes stay
//! in the stream, the server still reads and answers it, and the client reads that late
//! response and discards it by its offset (`late_responses`). The retry's request
//! therefore queues behind the abandoned one's bytes instead of starting on an empty
//! connection.
//!
//! Reported: batches produced, sent (2xx), timeouts, retries (attempts after a batch's
//! first), dropped, the largest queue (`max_pending`); three latencies of successful
//! batches, in ms: `latency_ms` per successful attempt (the request that got the 2xx,
//! from its write to the response's last byte, vmagent's
//! `vmagent_remotewrite_duration_seconds` of that attempt), `batch_latency_ms` from the
//! batch's first attempt (timeouts and backoffs included), `delivery_delay_ms` from the
//! batch's production (queueing too: the ingestion delay). Tables: `requests` (one row
//! per finished attempt: flow, batch, attempt from 1, start_ns, latency_ns, outcome `ok`
//! or `timeout`, backoff_ns slept after it) and `series` (t_ns, pending, in_flight).

use std::collections::VecDeque;

use super::bounds::{
    Connections, FieldBound,
    Limit::{Field, Float, Int},
};
use super::output::{Column, Table, Value};
use super::rpc::RpcConn;
use super::{App, AppCx, AppOutput, FlowMap, Side};
pub use crate::config::apps::{BatchWriterConfig, Overflow};
use crate::config::MAX_DELAY_NS;
use crate::rng::Rng;
use crate::tcp::socket::TcpSocket;
use crate::time::NEVER;

/// The ranges [`BatchWriterConfig::validate`] enforces (`super::bounds`).
pub const BOUNDS: &[FieldBound] = &[
    FieldBound::new("body_bytes", Int(1), Int(1 << 40)),
    FieldBound::new("request_header_bytes", Int(0), Int(1 << 40)),
    FieldBound::new("response_bytes", Int(1), Int(1 << 40)),
    FieldBound::new("interval_ns", Int(1_000_000), Int(MAX_DELAY_NS)),
    FieldBound::new("timeout_ns", Int(1), Int(MAX_DELAY_NS)),
    FieldBound::new("retry_min_ns", Int(1), Int(MAX_DELAY_NS)),
    FieldBound::new("retry_max_ns", Field("retry_min_ns"), Int(MAX_DELAY_NS)),
    FieldBound::new("jitter_max_ns", Int(0), Int(MAX_DELAY_NS)),
    FieldBound::new("jitter", Float(0.0), Float(1.0)),
];
/// One or more workers (connections).
pub const CONNECTIONS: Connections = Connections { lo: 1, hi: None };

impl BatchWriterConfig {
    pub fn validate(&self, at: &str, nflows: usize) -> Result<(), String> {
        if nflows == 0 {
            return Err(format!(
                "{at}: a batch writer needs at least one connection (flow); got 0"
            ));
        }
        for (name, v, lo) in [
            ("body_bytes", self.body_bytes, 1),
            ("request_header_bytes", self.request_header_bytes, 0),
            ("response_bytes", self.response_bytes, 1),
        ] {
            if v < lo || v > 1 << 40 {
                return Err(format!("{at}.{name}: {v} is outside [{lo}, 2^40] bytes"));
            }
        }
        for (name, v, lo) in [
            // At least 1 ms: each batch is a timer event and a queue entry, and an unbounded
            // queue (`max_pending: 0`) of nanosecond batches would exhaust memory.
            ("interval_ns", self.interval_ns, 1_000_000),
            ("timeout_ns", self.timeout_ns, 1),
            ("retry_min_ns", self.retry_min_ns, 1),
            ("retry_max_ns", self.retry_max_ns, self.retry_min_ns.max(1)),
            ("jitter_max_ns", self.jitter_max_ns, 0),
        ] {
            if v < lo || v > MAX_DELAY_NS {
                let what = if name == "retry_max_ns" {
                    " (at least retry_min_ns)"
                } else {
                    ""
                };
                return Err(format!(
                    "{at}.{name}: {v} is outside [{lo}, {MAX_DELAY_NS}] ns{what}"
                ));
            }
        }
        if !(0.0..=1.0).contains(&self.jitter) {
            return Err(format!(
                "{at}.jitter: {} is outside [0, 1] (a fraction of the backoff)",
                self.jitter
            ));
        }
        Ok(())
    }

    /// `d` plus a random fraction `u` in [0, 1) of `min(jitter * d, jitter_max_ns)`
    /// (vmagent `lib/timeutil`: `AddJitterToDuration()`).
    fn jittered(&self, d: u64, u: f64) -> u64 {
        let span = ((d as f64 * self.jitter) as u64).min(self.jitter_max_ns);
        d + (u * span as f64) as u64
    }
}

/// What a worker (connection) is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Not yet established, or waiting for a batch.
    Idle,
    /// An attempt is out; it times out at `until_ns`.
    InFlight,
    /// Sleeping after a failure until `until_ns`, then the next attempt.
    Backoff,
}

/// One worker's state.
#[derive(Clone, Debug)]
struct Worker {
    rpc: RpcConn,
    established: bool,
    phase: Phase,
    /// The deadline of the current phase (timeout or end of backoff; NEVER when idle).
    until_ns: u64,
    /// The batch being sent, when it was produced, when its first attempt started.
    batch: u64,
    produced_ns: u64,
    first_start_ns: u64,
    /// Current attempt (1-based), its request id and start.
    attempt: u32,
    attempt_id: u64,
    attempt_start_ns: u64,
    /// vmagent's `retryDuration` and `maxRetryDuration` for this batch.
    retry_ns: u64,
    retry_cap_ns: u64,
}

impl Worker {
    fn new() -> Worker {
        Worker {
            rpc: RpcConn::default(),
            established: false,
            phase: Phase::Idle,
            until_ns: NEVER,
            batch: 0,
            produced_ns: 0,
            first_start_ns: 0,
            attempt: 0,
            attempt_id: u64::MAX,
            attempt_start_ns: 0,
            retry_ns: 0,
            retry_cap_ns: 0,
        }
    }
}

pub struct BatchWriter {
    name: String,
    flows: FlowMap,
    cfg: BatchWriterConfig,
    rng: Rng,
    workers: Vec<Worker>,
    /// Batches waiting: (batch number, production time).
    queue: VecDeque<(u64, u64)>,
    /// Batches produced so far; the next one is due at `(produced + 1) * interval_ns`.
    produced: u64,
    next_rpc_id: u64,
    sent: u64,
    timeouts: u64,
    retries: u64,
    dropped: u64,
    max_pending: u64,
    late_responses: u64,
    max_backoff_ns: u64,
    // successful batches
    ok_attempt_ns: Vec<u64>,
    ok_batch_ns: Vec<u64>,
    ok_delivery_ns: Vec<u64>,
    // one row per finished attempt
    r_flow: Vec<u32>,
    r_batch: Vec<u64>,
    r_attempt: Vec<u32>,
    r_start_ns: Vec<u64>,
    r_latency_ns: Vec<u64>,
    r_outcome: Vec<String>,
    r_backoff_ns: Vec<u64>,
    // series
    s_t_ns: Vec<u64>,
    s_pending: Vec<u64>,
    s_in_flight: Vec<u64>,
}

impl BatchWriter {
    pub fn new(name: &str, flows: Vec<u32>, cfg: &BatchWriterConfig, rng: Rng) -> BatchWriter {
        let n = flows.len();
        BatchWriter {
            name: name.to_string(),
            flows: FlowMap::new(flows),
            cfg: cfg.clone(),
            rng,
            workers: vec![Worker::new(); n],
            queue: VecDeque::new(),
            produced: 0,
            next_rpc_id: 0,
            sent: 0,
            timeouts: 0,
            retries: 0,
            dropped: 0,
            max_pending: 0,
            late_responses: 0,
            max_backoff_ns: 0,
            ok_attempt_ns: Vec::new(),
            ok_batch_ns: Vec::new(),
            ok_delivery_ns: Vec::new(),
            r_flow: Vec::new(),
            r_batch: Vec::new(),
            r_attempt: Vec::new(),
            r_start_ns: Vec::new(),
            r_latency_ns: Vec::new(),
            r_outcome: Vec::new(),
            r_backoff_ns: Vec::new(),
            s_t_ns: Vec::new(),
            s_pending: Vec::new(),
            s_in_flight: Vec::new(),
        }
    }

    fn next_batch_ns(&self) -> u64 {
        (self.produced + 1).saturating_mul(self.cfg.interval_ns)
    }

    /// A batch is produced at `now`: into the queue, dropping one if it is full (the queue
    /// holds only batches no worker could take).
    fn produce(&mut self, now: u64) {
        let batch = self.produced;
        self.produced += 1;
        let limit = self.cfg.max_pending;
        if limit > 0 && self.queue.len() as u64 >= limit {
            self.dropped += 1;
            match self.cfg.overflow {
                Overflow::DropNewest => return,
                Overflow::DropOldest => {
                    self.queue.pop_front();
                }
            }
        }
        self.queue.push_back((batch, now));
    }

    /// Every idle, established worker takes the oldest waiting batch (`MustReadBlock`).
    fn dispatch(&mut self, cx: &mut AppCx) {
        for k in 0..self.workers.len() {
            if self.queue.is_empty() {
                return;
            }
            let w = &self.workers[k];
            if !w.established || w.phase != Phase::Idle {
                continue;
            }
            let (batch, produced_ns) = self.queue.pop_front().unwrap();
            // sendBlockHTTP: maxRetryDuration, then retryDuration, each jittered once per batch.
            let cap = self
                .cfg
                .jittered(self.cfg.retry_max_ns, self.rng.next_f64());
            let retry = self
                .cfg
                .jittered(self.cfg.retry_min_ns, self.rng.next_f64());
            let now = cx.now_ns();
            let w = &mut self.workers[k];
            w.batch = batch;
            w.produced_ns = produced_ns;
            w.first_start_ns = now;
            w.attempt = 0;
            w.retry_ns = retry;
            w.retry_cap_ns = cap;
            self.send_attempt(cx, k);
        }
    }

    /// Worker `k` writes the next attempt of its batch.
    fn send_attempt(&mut self, cx: &mut AppCx, k: usize) {
        let now = cx.now_ns();
        let id = self.next_rpc_id;
        self.next_rpc_id += 1;
        let w = &mut self.workers[k];
        w.attempt += 1;
        if w.attempt > 1 {
            self.retries += 1;
        }
        w.attempt_id = id;
        w.attempt_start_ns = now;
        w.phase = Phase::InFlight;
        w.until_ns = now.saturating_add(self.cfg.timeout_ns);
        let bytes = w.rpc.request(
            id,
            self.cfg.request_header_bytes + self.cfg.body_bytes,
            self.cfg.response_bytes,
        );
        cx.write(self.flows.flow(k), Side::Client, bytes);
    }

    fn push_row(&mut self, k: usize, latency_ns: u64, outcome: &str, backoff_ns: u64) {
        let w = &self.workers[k];
        self.r_flow.push(self.flows.flow(k));
        self.r_batch.push(w.batch);
        self.r_attempt.push(w.attempt);
        self.r_start_ns.push(w.attempt_start_ns);
        self.r_latency_ns.push(latency_ns);
        self.r_outcome.push(outcome.to_string());
        self.r_backoff_ns.push(backoff_ns);
    }

    /// Worker `k`'s attempt timed out at `now`: abandon it and sleep (`sendBlockHTTP`'s
    /// error path: `retryDuration *= 2`, capped).
    fn time_out(&mut self, k: usize, now: u64) {
        self.timeouts += 1;
        let w = &mut self.workers[k];
        w.retry_ns = w.retry_ns.saturating_mul(2).min(w.retry_cap_ns);
        let backoff = w.retry_ns;
        w.phase = Phase::Backoff;
        w.until_ns = now.saturating_add(backoff);
        // Go closes the connection here; tcplab keeps it (module docs): the abandoned
        // request's response, when it comes, is read and discarded by its offset.
        w.attempt_id = u64::MAX;
        self.max_backoff_ns = self.max_backoff_ns.max(backoff);
        let latency = now - self.workers[k].attempt_start_ns;
        self.push_row(k, latency, "timeout", backoff);
    }

    fn arm_timer(&self, cx: &mut AppCx) {
        let mut next = self.next_batch_ns();
        for w in &self.workers {
            next = next.min(w.until_ns);
        }
        cx.set_timer((next != NEVER).then_some(next));
    }

    fn in_flight(&self) -> u64 {
        self.workers
            .iter()
            .filter(|w| w.phase != Phase::Idle)
            .count() as u64
    }
}

impl App for BatchWriter {
    fn name(&self) -> &str {
        &self.name
    }
    fn kind(&self) -> &'static str {
        "batch_writer"
    }

    fn start(&mut self, cx: &mut AppCx) {
        self.arm_timer(cx);
    }

    fn on_established(&mut self, cx: &mut AppCx, flow: u32, side: Side) {
        if side == Side::Client {
            let k = self.flows.local(flow);
            self.workers[k].established = true;
            self.dispatch(cx);
            self.arm_timer(cx);
        }
    }

    fn on_read(&mut self, cx: &mut AppCx, flow: u32, side: Side, read_total: u64) {
        let k = self.flows.local(flow);
        match side {
            Side::Server => {
                // The server answers every request it has read whole, abandoned or not.
                while let Some(rpc) = self.workers[k].rpc.server_next_request(read_total) {
                    let bytes = self.workers[k].rpc.respond(rpc);
                    cx.write(flow, Side::Server, bytes);
                }
            }
            Side::Client => {
                let mut done = false;
                while let Some(rpc) = self.workers[k].rpc.client_next_response(read_total) {
                    let w = &self.workers[k];
                    if w.phase != Phase::InFlight || rpc.id != w.attempt_id {
                        // The response to an abandoned attempt: discarded.
                        self.late_responses += 1;
                        continue;
                    }
                    let now = cx.now_ns();
                    let latency = now - w.attempt_start_ns;
                    self.ok_attempt_ns.push(latency);
                    self.ok_batch_ns.push(now - w.first_start_ns);
                    self.ok_delivery_ns.push(now - w.produced_ns);
                    self.sent += 1;
                    self.push_row(k, latency, "ok", 0);
                    let w = &mut self.workers[k];
                    w.phase = Phase::Idle;
                    w.until_ns = NEVER;
                    w.attempt_id = u64::MAX;
                    done = true;
                }
                if done {
                    self.dispatch(cx);
                    self.arm_timer(cx);
                }
            }
        }
    }

    fn on_timer(&mut self, cx: &mut AppCx) {
        let now = cx.now_ns();
        while self.next_batch_ns() <= now {
            let at = self.next_batch_ns();
            self.produce(at);
            // An idle worker takes it at once; what is left waits (`max_pending`).
            self.dispatch(cx);
            self.max_pending = self.max_pending.max(self.queue.len() as u64);
        }
        for k in 0..self.workers.len() {
            if self.workers[k].until_ns > now {
                continue;
            }
            match self.workers[k].phase {
                Phase::InFlight => self.time_out(k, now),
                Phase::Backoff => self.send_attempt(cx, k),
                Phase::Idle => {}
            }
        }
        self.dispatch(cx);
        self.arm_timer(cx);
    }

    fn sample(&mut self, t_ns: u64, _socks: &[TcpSocket]) {
        self.s_t_ns.push(t_ns);
        self.s_pending.push(self.queue.len() as u64);
        self.s_in_flight.push(self.in_flight());
    }

    fn finish(&mut self, _end_ns: u64, _socks: &[TcpSocket]) -> AppOutput {
        let mut out = AppOutput::new(&self.name, "batch_writer");
        out.put("batches", Value::U64(self.produced));
        out.put("sent", Value::U64(self.sent));
        out.put("timeouts", Value::U64(self.timeouts));
        out.put("retries", Value::U64(self.retries));
        out.put("dropped", Value::U64(self.dropped));
        out.put("max_pending", Value::U64(self.max_pending));
        out.put("queue_limit", Value::U64(self.cfg.max_pending));
        out.put("pending", Value::U64(self.queue.len() as u64));
        out.put("in_flight", Value::U64(self.in_flight()));
        out.put("late_responses", Value::U64(self.late_responses));
        out.put(
            "max_backoff_s",
            Value::F64(self.max_backoff_ns as f64 / 1e9),
        );
        out.put("connections", Value::U64(self.flows.len() as u64));
        out.put("body_bytes", Value::U64(self.cfg.body_bytes));
        out.put("timeout_s", Value::F64(self.cfg.timeout_ns as f64 / 1e9));
        out.put(
            "latency_ms",
            super::stats::latency_summary_ms(&self.ok_attempt_ns),
        );
        out.put(
            "batch_latency_ms",
            super::stats::latency_summary_ms(&self.ok_batch_ns),
        );
        out.put(
            "delivery_delay_ms",
            super::stats::latency_summary_ms(&self.ok_delivery_ns),
        );
        out.tables.push(
            Table::new("requests")
                .col("flow", Column::U32(std::mem::take(&mut self.r_flow)))
                .col("batch", Column::U64(std::mem::take(&mut self.r_batch)))
                .col("attempt", Column::U32(std::mem::take(&mut self.r_attempt)))
                .col(
                    "start_ns",
                    Column::U64(std::mem::take(&mut self.r_start_ns)),
                )
                .col(
                    "latency_ns",
                    Column::U64(std::mem::take(&mut self.r_latency_ns)),
                )
                .col("outcome", Column::Str(std::mem::take(&mut self.r_outcome)))
                .col(
                    "backoff_ns",
                    Column::U64(std::mem::take(&mut self.r_backoff_ns)),
                ),
        );
        out.tables.push(
            Table::new("series")
                .col("t_ns", Column::U64(std::mem::take(&mut self.s_t_ns)))
                .col("pending", Column::U64(std::mem::take(&mut self.s_pending)))
                .col(
                    "in_flight",
                    Column::U64(std::mem::take(&mut self.s_in_flight)),
                ),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_adds_a_fraction_capped_at_jitter_max() {
        let c = BatchWriterConfig::default();
        let s = 1_000_000_000;
        assert_eq!(c.jittered(s, 0.0), s);
        assert_eq!(c.jittered(s, 0.5), s + s / 20);
        // 10 % of 60 s is 6 s (below the 10 s cap): at most 66 s, the story's 65.92 s.
        assert!(c.jittered(60 * s, 0.9999) < 66 * s);
        assert!(c.jittered(60 * s, 0.9867) > 65 * s);
        // 10 % of 200 s would be 20 s: capped at 10 s.
        assert_eq!(c.jittered(200 * s, 0.5), 205 * s);
    }

    #[test]
    fn validate_names_the_field_value_and_range() {
        let ok = BatchWriterConfig::default();
        assert!(ok.validate("apps.0.spec", 1).is_ok());
        let e = BatchWriterConfig {
            retry_max_ns: 5,
            retry_min_ns: 10,
            ..ok.clone()
        }
        .validate("apps.0.spec", 1)
        .unwrap_err();
        assert!(
            e.starts_with("apps.0.spec.retry_max_ns: 5 is outside [10, "),
            "{e}"
        );
        let e = BatchWriterConfig {
            jitter: 1.5,
            ..ok.clone()
        }
        .validate("a", 1)
        .unwrap_err();
        assert!(e.starts_with("a.jitter: 1.5 is outside [0, 1]"), "{e}");
        let e = BatchWriterConfig {
            body_bytes: 0,
            ..ok.clone()
        }
        .validate("a", 1)
        .unwrap_err();
        assert!(e.starts_with("a.body_bytes: 0 is outside [1, 2^40]"), "{e}");
        let e = BatchWriterConfig {
            timeout_ns: 0,
            ..ok.clone()
        }
        .validate("a", 1)
        .unwrap_err();
        assert!(e.starts_with("a.timeout_ns: 0 is outside [1, "), "{e}");
        assert!(ok
            .validate("a", 0)
            .unwrap_err()
            .contains("at least one connection"));
        assert!(BatchWriterConfig {
            jitter: f64::NAN,
            ..ok
        }
        .validate("a", 1)
        .is_err());
    }

    #[test]
    fn config_rejects_unknown_fields_and_fills_defaults() {
        let c: BatchWriterConfig =
            serde_json::from_str(r#"{"body_bytes": 1000, "overflow": "drop_newest"}"#).unwrap();
        assert_eq!(c.body_bytes, 1000);
        assert_eq!(c.overflow, Overflow::DropNewest);
        assert_eq!(c.timeout_ns, BatchWriterConfig::default().timeout_ns);
        assert!(serde_json::from_str::<BatchWriterConfig>(r#"{"bodybytes": 1}"#).is_err());
    }
}
