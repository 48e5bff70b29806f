//! Websocket broadcasts: M application servers fan an event out to C long-lived
//! connections each, all ending at one receiver host (story 004: Mattermost's app nodes
//! pushing websocket events through nginx).
//!
//! Model. The app's connections are `senders x connections_per_sender` flows, sender 0's
//! C connections first, then sender 1's, ...; the client of each connection is the sender
//! (an app node, which connected to nginx), its server is the receiver (nginx), which reads
//! at once unless the flow's reader says otherwise. Burst `b` starts at
//! `first_burst_ns + b x interval_ns`; in it every (sender, connection) pair writes one
//! message of `message_bytes`, at a moment drawn uniformly within the burst window
//! (`window_ns`) from the app's own random stream: a Mattermost node hands an event to
//! every websocket connection's writer goroutine at once, and their writes land spread over
//! a few milliseconds (the story: "broadcast to tens of thousands of clients at once in a
//! fraction of a second (more likely a couple tens of milliseconds)"). A server broadcasts
//! only to connected clients: a connection whose client side is not ESTABLISHED when its
//! message is due is skipped for that burst (`messages_skipped`); scenarios start the
//! bursts after the connections are up.
//!
//! The moments of a burst are drawn and sorted when the burst starts and walked with the
//! app's single timer, so a burst costs one sort and one timer event per distinct moment,
//! never an event per connection beyond that.
//!
//! Per burst (`bursts` table): messages and bytes written, messages and bytes read whole
//! at the receiver, and the completion time: from the burst's start until the receiver
//! read the last byte of the burst's last message (`complete` false if that never
//! happened before the run ended; `completion_ns` is then the time until the end). Also
//! the senders' retransmitted segments and RTOs counted from this burst's start to the
//! next's. Over the run (summary): the retransmission rate (`TcpRetransSegs` /
//! `data_segs_out`, the story's Grafana panel) and `TcpExtTCPTimeouts` / `TcpCurrEstab`,
//! the ratio the story's team alerted on at 3 %. Both are taken at the senders, as the
//! story's team read nstat on its application nodes: the counters of the client sides of
//! the app's connections (nginx's side, which sends no data, is reported apart as
//! `receiver_tcp_timeouts`: its SYN-ACK timeouts).
//!
//! Scale: tens of thousands of connections. Per connection the app keeps two `u32`
//! (the burst of its first message, messages read whole so far) and one schedule entry;
//! every callback is O(1) per message (the app's flows are contiguous, so a flow's
//! connection number is an offset: [`FlowMap`]).

use super::bounds::{
    Connections, FieldBound,
    Limit::{Field, Int, Unbounded},
};
use super::output::{Column, Table, Value};
use super::{App, AppCx, AppOutput, FlowMap, Side};
pub use crate::config::apps::BroadcastConfig;
use crate::config::{MAX_DELAY_NS, MAX_DURATION_NS};
use crate::mib::Mib;
use crate::rng::Rng;
use crate::tcp::socket::{ConnState, TcpSocket};
use crate::time::NEVER;

/// The ranges [`BroadcastConfig::validate`] enforces (`super::bounds`); besides them,
/// `senders x connections_per_sender` must be the number of flows.
pub const BOUNDS: &[FieldBound] = &[
    FieldBound::new("senders", Int(1), Unbounded),
    FieldBound::new("connections_per_sender", Int(1), Unbounded),
    FieldBound::new("message_bytes", Int(1), Int(1 << 40)),
    FieldBound::new("interval_ns", Int(MIN_INTERVAL_NS), Int(MAX_DELAY_NS)),
    FieldBound::new("window_ns", Int(0), Field("interval_ns")),
    FieldBound::new("first_burst_ns", Int(0), Int(MAX_DURATION_NS)),
    FieldBound::new("bursts", Int(1), Unbounded),
];
/// `senders x connections_per_sender` flows.
pub const CONNECTIONS: Connections = Connections { lo: 1, hi: None };

/// The shortest interval between bursts: every burst sorts the moments of all the app's
/// connections and adds a table row, so bursts far closer than the window of a real
/// broadcast would only cost time.
pub const MIN_INTERVAL_NS: u64 = 1_000_000;

impl BroadcastConfig {
    pub fn validate(&self, at: &str, nflows: usize) -> Result<(), String> {
        if self.senders == 0 {
            return Err(format!("{at}.senders: 0, expected at least 1 sender"));
        }
        if self.connections_per_sender == 0 {
            return Err(format!(
                "{at}.connections_per_sender: 0, expected at least 1 connection per sender"
            ));
        }
        let want = self.senders as u64 * self.connections_per_sender as u64;
        if want != nflows as u64 {
            return Err(format!(
                "{at}.connections_per_sender: {} x senders {} = {want} connections, but the app drives {nflows} flows; \
                 expected senders x connections_per_sender = the number of flows",
                self.connections_per_sender, self.senders
            ));
        }
        if self.message_bytes == 0 || self.message_bytes > 1 << 40 {
            return Err(format!(
                "{at}.message_bytes: {} is outside [1, 2^40] bytes",
                self.message_bytes
            ));
        }
        if !(MIN_INTERVAL_NS..=crate::config::MAX_DELAY_NS).contains(&self.interval_ns) {
            return Err(format!(
                "{at}.interval_ns: {} is outside [{MIN_INTERVAL_NS}, {}] ns (1 ms to one hour)",
                self.interval_ns,
                crate::config::MAX_DELAY_NS
            ));
        }
        if self.window_ns > self.interval_ns {
            return Err(format!(
                "{at}.window_ns: {} is longer than interval_ns {}; expected a window no longer than the interval",
                self.window_ns, self.interval_ns
            ));
        }
        if self.first_burst_ns > crate::config::MAX_DURATION_NS {
            return Err(format!(
                "{at}.first_burst_ns: {} is outside [0, {}] ns",
                self.first_burst_ns,
                crate::config::MAX_DURATION_NS
            ));
        }
        if self.bursts == Some(0) {
            return Err(format!(
                "{at}.bursts: 0, expected at least 1 burst (or none: until the run ends)"
            ));
        }
        Ok(())
    }
}

/// No message written on the connection yet.
const NO_BURST: u32 = u32::MAX;

pub struct Broadcast {
    name: String,
    flows: FlowMap,
    cfg: BroadcastConfig,
    rng: Rng,
    // --- per connection (the app's connection number k) ---
    /// The burst of the connection's first message (NO_BURST: none yet). A connection,
    /// once established, stays so and gets a message in every later burst, so its `j`-th
    /// message belongs to burst `first_burst[k] + j`.
    first_burst: Vec<u32>,
    /// Messages the receiver has read whole on the connection.
    read_msgs: Vec<u32>,
    // --- the burst being sent ---
    /// The moments of the current burst, (offset from its start, connection), sorted.
    schedule: Vec<(u64, u32)>,
    /// Next entry of `schedule` to write; `schedule.len()` when the burst is all written.
    next_msg: usize,
    /// Start (scenario ns) of the current burst, and of the next (NEVER: no more).
    burst_start_ns: u64,
    next_burst_ns: u64,
    /// Senders' TcpRetransSegs and TCPTimeouts summed at the current burst's start.
    mark_retrans: u64,
    mark_timeouts: u64,
    messages_skipped: u64,
    // --- one row per burst started ---
    b_start_ns: Vec<u64>,
    b_messages: Vec<u32>,
    b_delivered: Vec<u32>,
    /// Scenario ns when the burst's last message was read (NEVER: not yet).
    b_done_ns: Vec<u64>,
    b_retrans: Vec<u64>,
    b_timeouts: Vec<u64>,
}

impl Broadcast {
    pub fn new(name: &str, flows: Vec<u32>, cfg: &BroadcastConfig, rng: Rng) -> Broadcast {
        let n = flows.len();
        Broadcast {
            name: name.to_string(),
            flows: FlowMap::new(flows),
            cfg: cfg.clone(),
            rng,
            first_burst: vec![NO_BURST; n],
            read_msgs: vec![0; n],
            schedule: Vec::with_capacity(n),
            next_msg: 0,
            burst_start_ns: NEVER,
            next_burst_ns: cfg.first_burst_ns,
            mark_retrans: 0,
            mark_timeouts: 0,
            messages_skipped: 0,
            b_start_ns: Vec::new(),
            b_messages: Vec::new(),
            b_delivered: Vec::new(),
            b_done_ns: Vec::new(),
            b_retrans: Vec::new(),
            b_timeouts: Vec::new(),
        }
    }

    /// The senders' (client sides') retransmitted segments and RTOs so far.
    fn sender_counters<'s>(&self, sock: impl Fn(u32) -> &'s TcpSocket) -> (u64, u64) {
        let (mut retrans, mut timeouts) = (0, 0);
        for &f in self.flows.flows() {
            let s = sock(f);
            retrans += s.tp.mib.get(Mib::TcpRetransSegs);
            timeouts += s.tp.mib.get(Mib::TCPTimeouts);
        }
        (retrans, timeouts)
    }

    /// Close the previous burst's counter columns and start burst `b_start_ns.len()`:
    /// draw and sort its moments.
    fn start_burst(&mut self, cx: &mut AppCx) {
        let start = self.next_burst_ns;
        let (retrans, timeouts) = self.sender_counters(|f| cx.sock(f, Side::Client));
        if let (Some(r), Some(t)) = (self.b_retrans.last_mut(), self.b_timeouts.last_mut()) {
            *r = retrans - self.mark_retrans;
            *t = timeouts - self.mark_timeouts;
        }
        self.mark_retrans = retrans;
        self.mark_timeouts = timeouts;
        self.burst_start_ns = start;
        self.b_start_ns.push(start);
        self.b_messages.push(0);
        self.b_delivered.push(0);
        self.b_done_ns.push(NEVER);
        self.b_retrans.push(0);
        self.b_timeouts.push(0);
        let w = self.cfg.window_ns as u128;
        self.schedule.clear();
        for k in 0..self.flows.len() as u32 {
            // Uniform in [0, window): the high half of a 64 x 64-bit product (Lemire).
            let off = ((self.rng.next_u64() as u128 * w) >> 64) as u64;
            self.schedule.push((off, k));
        }
        // Ties (equal moments) go in connection order: deterministic.
        self.schedule.sort_unstable();
        self.next_msg = 0;
        let started = self.b_start_ns.len() as u64;
        self.next_burst_ns = if self.cfg.bursts.is_some_and(|n| started >= n) {
            NEVER
        } else {
            start + self.cfg.interval_ns
        };
    }

    /// Write every message of the current burst that is due by now.
    fn send_due(&mut self, cx: &mut AppCx) {
        let now = cx.now_ns();
        let b = self.b_start_ns.len() - 1;
        while let Some(&(off, k)) = self.schedule.get(self.next_msg) {
            if self.burst_start_ns + off > now {
                break;
            }
            self.next_msg += 1;
            let flow = self.flows.flow(k as usize);
            if !cx.established(flow, Side::Client) {
                self.messages_skipped += 1;
                continue;
            }
            if self.first_burst[k as usize] == NO_BURST {
                self.first_burst[k as usize] = b as u32;
            }
            self.b_messages[b] += 1;
            cx.write(flow, Side::Client, self.cfg.message_bytes);
        }
        if self.next_msg == self.schedule.len()
            && self.b_delivered[b] == self.b_messages[b]
            && self.b_done_ns[b] == NEVER
        {
            // Nothing written (no connection up), or (not in practice) all read already.
            self.b_done_ns[b] = now;
        }
    }

    fn arm_timer(&self, cx: &mut AppCx) {
        let next = match self.schedule.get(self.next_msg) {
            Some(&(off, _)) => self.burst_start_ns + off,
            None => self.next_burst_ns,
        };
        cx.set_timer((next != NEVER).then_some(next));
    }

    /// Burst `b` is all written (its schedule walked).
    fn all_written(&self, b: usize) -> bool {
        b + 1 < self.b_start_ns.len() || self.next_msg == self.schedule.len()
    }
}

impl App for Broadcast {
    fn name(&self) -> &str {
        &self.name
    }
    fn kind(&self) -> &'static str {
        "broadcast"
    }

    fn start(&mut self, cx: &mut AppCx) {
        self.arm_timer(cx);
    }

    fn on_read(&mut self, cx: &mut AppCx, flow: u32, side: Side, read_total: u64) {
        if side != Side::Server {
            return; // the receiver writes nothing back
        }
        let k = self.flows.local(flow);
        let whole = (read_total / self.cfg.message_bytes) as u32;
        let first = self.first_burst[k];
        if first == NO_BURST {
            return;
        }
        let now = cx.now_ns();
        while self.read_msgs[k] < whole {
            let b = (first + self.read_msgs[k]) as usize;
            self.read_msgs[k] += 1;
            self.b_delivered[b] += 1;
            if self.b_delivered[b] == self.b_messages[b] && self.all_written(b) {
                self.b_done_ns[b] = now;
            }
        }
    }

    fn on_timer(&mut self, cx: &mut AppCx) {
        let now = cx.now_ns();
        if self.next_msg == self.schedule.len() && self.next_burst_ns <= now {
            self.start_burst(cx);
        }
        if !self.b_start_ns.is_empty() {
            self.send_due(cx);
        }
        self.arm_timer(cx);
    }

    fn finish(&mut self, end_ns: u64, socks: &[TcpSocket]) -> AppOutput {
        let mut out = AppOutput::new(&self.name, "broadcast");
        let client = |f: u32| &socks[Side::Client.ep(f) as usize];
        let server = |f: u32| &socks[Side::Server.ep(f) as usize];
        let (retrans, timeouts) = self.sender_counters(client);
        if let (Some(r), Some(t)) = (self.b_retrans.last_mut(), self.b_timeouts.last_mut()) {
            *r = retrans - self.mark_retrans;
            *t = timeouts - self.mark_timeouts;
        }
        let (mut data_segs_out, mut curr_estab, mut rx_timeouts, mut bytes_read) =
            (0u64, 0u64, 0u64, 0u64);
        for &f in self.flows.flows() {
            let c = client(f);
            data_segs_out += c.tp.data_segs_out as u64;
            curr_estab += (c.state == ConnState::Established) as u64;
            rx_timeouts += server(f).tp.mib.get(Mib::TCPTimeouts);
            bytes_read += server(f).rcv.copied_seq;
        }
        // A burst due exactly at the run's end (a duration that is a multiple of the
        // interval) had no time to be read: it is not reported.
        let nb = self.b_start_ns.iter().take_while(|&&t| t < end_ns).count();
        for v in [&mut self.b_messages, &mut self.b_delivered] {
            v.truncate(nb);
        }
        for v in [
            &mut self.b_start_ns,
            &mut self.b_done_ns,
            &mut self.b_retrans,
            &mut self.b_timeouts,
        ] {
            v.truncate(nb);
        }
        let s = self.cfg.message_bytes;
        let complete: Vec<bool> = self.b_done_ns.iter().map(|&d| d != NEVER).collect();
        let completion_ns: Vec<u64> =
            (0..nb).map(|b| if complete[b] { self.b_done_ns[b] } else { end_ns.max(self.b_start_ns[b]) } - self.b_start_ns[b]).collect();
        // Completion percentiles over the bursts that wrote something and were read whole.
        let done: Vec<u64> = (0..nb)
            .filter(|&b| complete[b] && self.b_messages[b] > 0)
            .map(|b| completion_ns[b])
            .collect();
        let messages: u64 = self.b_messages.iter().map(|&m| m as u64).sum();
        let delivered: u64 = self.b_delivered.iter().map(|&m| m as u64).sum();
        out.put("bursts", Value::U64(nb as u64));
        out.put(
            "incomplete_bursts",
            Value::U64(complete.iter().filter(|&&c| !c).count() as u64),
        );
        out.put("senders", Value::U64(self.cfg.senders as u64));
        out.put("connections", Value::U64(self.flows.len() as u64));
        out.put("message_bytes", Value::U64(s));
        out.put("messages", Value::U64(messages));
        out.put("messages_delivered", Value::U64(delivered));
        out.put("messages_skipped", Value::U64(self.messages_skipped));
        out.put("bytes_delivered", Value::U64(bytes_read));
        out.put("completion_ms", super::stats::latency_summary_ms(&done));
        out.put("retrans_segs", Value::U64(retrans));
        out.put("data_segs_out", Value::U64(data_segs_out));
        out.put(
            "retrans_rate",
            if data_segs_out > 0 {
                Value::F64(retrans as f64 / data_segs_out as f64)
            } else {
                Value::None
            },
        );
        out.put("tcp_timeouts", Value::U64(timeouts));
        out.put("curr_estab", Value::U64(curr_estab));
        out.put(
            "timeouts_per_estab",
            if curr_estab > 0 {
                Value::F64(timeouts as f64 / curr_estab as f64)
            } else {
                Value::None
            },
        );
        out.put("receiver_tcp_timeouts", Value::U64(rx_timeouts));
        out.tables.push(
            Table::new("bursts")
                .col("burst", Column::U32((0..nb as u32).collect()))
                .col("start_ns", Column::U64(self.b_start_ns.clone()))
                .col("completion_ns", Column::U64(completion_ns))
                .col("complete", Column::Bool(complete))
                .col("messages", Column::U32(self.b_messages.clone()))
                .col(
                    "bytes",
                    Column::U64(self.b_messages.iter().map(|&m| m as u64 * s).collect()),
                )
                .col("delivered_messages", Column::U32(self.b_delivered.clone()))
                .col(
                    "delivered_bytes",
                    Column::U64(self.b_delivered.iter().map(|&m| m as u64 * s).collect()),
                )
                .col("retrans_segs", Column::U64(self.b_retrans.clone()))
                .col("tcp_timeouts", Column::U64(self.b_timeouts.clone())),
        );
        out
    }
}
