//! Applications: the programs of the stories, driving TCP sockets.
//!
//! Model. An application instance ([`App`]) owns one or more of the scenario's
//! connections (flows; each flow is one TCP connection whose client endpoint connects to
//! its server endpoint). It acts only through its sockets, as a program does through the
//! socket API:
//!
//! - **write** ([`AppCx::write`]): bytes handed to a socket; they enter the send queue as
//!   the send buffer (`sk_sndbuf`) makes room, like a blocking `write()`, and TCP sends them
//!   as cwnd, pacing and the peer's window allow;
//! - **read**: each receiving endpoint has a reader policy (`FlowConfig.reader`): it reads
//!   at once (the default), at a limited rate, or in bursts (a slow reader); bytes not yet
//!   read occupy the receive buffer and shrink the advertised window, as in Linux;
//! - **events** it reacts to: a connection established ([`App::on_established`]), bytes
//!   read by the application ([`App::on_read`], with the running total the endpoint has
//!   read), bytes acknowledged by the peer ([`App::on_acked`], only for apps that ask),
//!   and its own timer ([`App::on_timer`], one deadline per app; the app multiplexes).
//!
//! A byte stream has no message boundaries: apps find their messages by offsets in the
//! running totals (request `k` of a connection ends at the sum of the sizes written
//! before it plus its own). [`rpc::RpcConn`] does that bookkeeping for request/response
//! protocols (HTTP/1.1 without pipelining reordering, ONC RPC over one TCP connection).
//!
//! Apps are deterministic: any randomness comes from their own [`crate::rng::Rng`]
//! stream, seeded from the scenario seed and the app's name. They never allocate per
//! packet: their callbacks run per message (request, segment, burst), and their records
//! are columns grown per message.
//!
//! At the end an app reports an [`AppOutput`]: a summary (scalars, named as its users
//! name them) and tables (one row per request, segment, burst or sample time).
//!
//! One file per workload: [`rr`] (netperf TCP_RR), [`hls`] (HLS server + hls.js-like
//! client), [`nfs`] (sequential NFS reads over `nconnect` connections feeding a
//! player), [`batch_writer`] (vmagent-like remote write), [`broadcast`] (websocket fan-out
//! bursts). Bulk transfer (netperf TCP_STREAM / TCP_MAERTS, iperf3 and its `--bidir`)
//! needs no app object: the socket's own bulk writer keeps its send buffer full
//! (`FlowConfig.app`, on the side `FlowConfig.data_side`).
//!
//! Imports: the leaves (its parameters are the schema `config::apps`, `config::Side` which
//! endpoint), `tcp` (the sockets it writes to and reads from) and `net` (the network a
//! write may send into); never `sim`, which drives it.

pub mod batch_writer;
pub mod bounds;
pub mod broadcast;
pub mod hls;
pub mod nfs;
pub mod output;
pub mod rpc;
pub mod rr;
pub mod stats;

use crate::event::{EventKind, EventQueue};
use crate::net::Network;
use crate::rng::Rng;
use crate::tcp::socket::TcpSocket;
use crate::time::NEVER;

pub use crate::config::apps::{AppInstanceConfig, AppSpec};
pub use crate::config::Side;
pub use output::{AppOutput, Column, Table, Value};

/// The workloads' parameters are a schema in `crate::config::apps`; each model checks
/// its own (`validate` next to it, from its bounds table).
impl AppSpec {
    /// Check the parameters; errors name the field under `at` (e.g. `apps.0.spec`).
    pub fn validate(&self, at: &str, nflows: usize) -> Result<(), String> {
        match self {
            AppSpec::Rr(c) => c.validate(at, nflows),
            AppSpec::Hls(c) => c.validate(at, nflows),
            AppSpec::NfsStream(c) => c.validate(at, nflows),
            AppSpec::BatchWriter(c) => c.validate(at, nflows),
            AppSpec::Broadcast(c) => c.validate(at, nflows),
        }
    }
}

/// Build the app object of `cfg`. `seed` is the scenario seed (for the app's stream).
pub fn build(cfg: &AppInstanceConfig, seed: u64) -> Box<dyn App> {
    let rng = Rng::for_component(seed, &format!("app:{}", cfg.name));
    let flows = cfg.flows.clone();
    match &cfg.spec {
        AppSpec::Rr(c) => Box::new(rr::Rr::new(&cfg.name, flows, c, rng)),
        AppSpec::Hls(c) => Box::new(hls::Hls::new(&cfg.name, flows, c, rng)),
        AppSpec::NfsStream(c) => Box::new(nfs::NfsStream::new(&cfg.name, flows, c, rng)),
        AppSpec::BatchWriter(c) => {
            Box::new(batch_writer::BatchWriter::new(&cfg.name, flows, c, rng))
        }
        AppSpec::Broadcast(c) => Box::new(broadcast::Broadcast::new(&cfg.name, flows, c, rng)),
    }
}

/// What an application sees and does while one of its callbacks runs.
pub struct AppCx<'a> {
    /// Engine time (ns since boot).
    pub(crate) now_ns: u64,
    /// Engine time of the scenario's t = 0.
    pub(crate) boot_ns: u64,
    pub(crate) socks: &'a mut [TcpSocket],
    pub(crate) net: &'a mut Network,
    pub(crate) ev: &'a mut EventQueue,
    /// This app's index (its timer events carry it).
    pub(crate) app: u32,
    /// This app's timer: the deadline it asked for, and the event queued for it.
    pub(crate) timer_ns: &'a mut u64,
    pub(crate) timer_sched_ns: &'a mut u64,
    /// Endpoints written to during the callback (the engine re-syncs their timers).
    pub(crate) touched: &'a mut Vec<u32>,
}

impl AppCx<'_> {
    /// Scenario time (ns since the scenario's t = 0).
    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.now_ns - self.boot_ns
    }

    /// Write `bytes` into the socket of `side` of `flow` (a blocking `write()`: the bytes
    /// wait in the application until the send buffer takes them).
    pub fn write(&mut self, flow: u32, side: Side, bytes: u64) {
        let ep = side.ep(flow);
        let mut ctx = crate::tcp::socket::Ctx {
            now_ns: self.now_ns,
            net: self.net,
            ev: self.ev,
        };
        self.socks[ep as usize].app_write(&mut ctx, bytes);
        self.touched.push(ep);
    }

    /// Bytes the application of `side` of `flow` has written so far (accepted or waiting).
    pub fn written(&self, flow: u32, side: Side) -> u64 {
        let s = &self.socks[side.ep(flow) as usize];
        s.tp.write_seq + s.app.pending_bytes
    }

    /// The socket of `side` of `flow`, to read its state (cwnd, ssthresh, queues).
    pub fn sock(&self, flow: u32, side: Side) -> &TcpSocket {
        &self.socks[side.ep(flow) as usize]
    }

    /// Whether `side` of `flow` is established.
    pub fn established(&self, flow: u32, side: Side) -> bool {
        self.socks[side.ep(flow) as usize].state == crate::tcp::socket::ConnState::Established
    }

    /// Ask for [`App::on_timer`] at scenario time `at_ns` (replaces the app's previous
    /// deadline; `None` cancels it). A deadline in the past fires at once (next event).
    pub fn set_timer(&mut self, at_ns: Option<u64>) {
        let at = match at_ns {
            Some(t) => crate::time::time_add(self.boot_ns, t).max(self.now_ns),
            None => NEVER,
        };
        *self.timer_ns = at;
        if at != NEVER && at < *self.timer_sched_ns {
            *self.timer_sched_ns = at;
            self.ev.push(at, EventKind::AppTimer, self.app);
        }
    }

    /// The app's current timer deadline (scenario time), if any.
    pub fn timer(&self) -> Option<u64> {
        (*self.timer_ns != NEVER).then(|| *self.timer_ns - self.boot_ns)
    }
}

/// A workload. Callbacks get the global flow index and the side of the endpoint the
/// event happened at; an app only ever hears about its own flows.
pub trait App: Send {
    /// The workload's name (its key in summary.json).
    fn name(&self) -> &str;
    /// The workload type (`rr`, `hls`, ...).
    fn kind(&self) -> &'static str;
    /// Called once when the run starts (scenario t = 0), before any event. Writes made
    /// here wait in the socket until the connection is established.
    fn start(&mut self, _cx: &mut AppCx) {}
    /// `side` of `flow` reached ESTABLISHED.
    fn on_established(&mut self, _cx: &mut AppCx, _flow: u32, _side: Side) {}
    /// The application at `side` of `flow` has now read `read_total` bytes in all.
    fn on_read(&mut self, _cx: &mut AppCx, _flow: u32, _side: Side, _read_total: u64) {}
    /// Whether the app wants [`App::on_acked`] (costs a call per ACK that advances).
    fn wants_acked(&self) -> bool {
        false
    }
    /// The peer has acknowledged `acked_total` bytes written at `side` of `flow`.
    fn on_acked(&mut self, _cx: &mut AppCx, _flow: u32, _side: Side, _acked_total: u64) {}
    /// The app's timer fired.
    fn on_timer(&mut self, _cx: &mut AppCx) {}
    /// A time-series sample at scenario time `t_ns` (buffer levels and the like); the
    /// app appends to its own columns. `socks` gives read access to every endpoint.
    fn sample(&mut self, _t_ns: u64, _socks: &[TcpSocket]) {}
    /// The run ended at scenario time `end_ns`: the summary and tables.
    fn finish(&mut self, end_ns: u64, socks: &[TcpSocket]) -> AppOutput;
}

/// An app's flows: global flow index <-> the app's own connection number (0..n).
/// Python expands an app's connections as consecutive flows, so the lookup is usually an
/// offset; otherwise a binary search.
#[derive(Clone, Debug)]
pub struct FlowMap {
    flows: Vec<u32>,
    /// `flows` is `first..first + len` in order.
    contiguous: bool,
    sorted: Vec<(u32, u32)>,
}

impl FlowMap {
    pub fn new(flows: Vec<u32>) -> FlowMap {
        let contiguous = flows.windows(2).all(|w| w[1] == w[0] + 1);
        let mut sorted: Vec<(u32, u32)> = if contiguous {
            Vec::new()
        } else {
            flows
                .iter()
                .enumerate()
                .map(|(k, &f)| (f, k as u32))
                .collect()
        };
        sorted.sort_unstable();
        FlowMap {
            flows,
            contiguous,
            sorted,
        }
    }
    /// Connections in all.
    pub fn len(&self) -> usize {
        self.flows.len()
    }
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }
    /// The global flow index of connection `k`.
    #[inline]
    pub fn flow(&self, k: usize) -> u32 {
        self.flows[k]
    }
    /// The connection number of global flow `flow` (which must be the app's).
    #[inline]
    pub fn local(&self, flow: u32) -> usize {
        if self.contiguous {
            (flow - self.flows[0]) as usize
        } else {
            let i = self
                .sorted
                .binary_search_by_key(&flow, |&(f, _)| f)
                .expect("flow not in app");
            self.sorted[i].1 as usize
        }
    }
    pub fn flows(&self) -> &[u32] {
        &self.flows
    }
}
