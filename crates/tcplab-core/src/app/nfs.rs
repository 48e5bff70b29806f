//! nfs_stream: a media server playing one file it reads sequentially over NFS with
//! `nconnect` TCP connections (story 000: Plex on an NFS mount with nconnect=4).
//!
//! Model. The client host (the flows' client side) is the NFS client; the server side is
//! the NFS server (`data_side` server: the replies carry the data, and the per-flow time
//! series report the server's sender, so each connection's cwnd and ssthresh over time,
//! what `ss -ti` showed in the story, come from the engine's flow series).
//!
//! - **READs.** The file is read from offset 0 in READ calls of `read_bytes` =
//!   min(`rsize_bytes`, `readahead_bytes`) (the last one shorter if the file ends). Each
//!   call is `call_bytes` on the client's stream; the reply is `reply_header_bytes` plus
//!   the data on the server's stream ([`super::rpc::RpcConn`] finds them by offset).
//! - **Readahead window.** Like the page cache's readahead, READs are issued ahead of
//!   what the application has consumed from the file: at most `readahead_bytes` of file
//!   beyond the contiguous prefix that has arrived (in flight, or arrived past a hole)
//!   (Linux v6.12 mm/readahead.c: page_cache_sync_ra() / page_cache_async_ra() keep one
//!   window of `ra_pages` ahead of the reader). Simplified: the window is full size from
//!   the first read (the kernel ramps it up from 4x the first request,
//!   get_init_ra_size()), and one READ is always allowed when none is in flight.
//! - **Transport choice.** Each READ is one RPC task, given a transport by the SUNRPC
//!   client's round robin with the queue-length skip (Linux v6.12
//!   net/sunrpc/xprtmultipath.c: xprt_switch_find_next_entry_roundrobin(): take the
//!   transport after the cursor; skip it while its `queuelen` times the number of active
//!   transports exceeds the switch's total `xps_queuelen`, i.e. while it holds more than
//!   the average; the chosen one becomes the cursor). net/sunrpc/clnt.c:
//!   rpc_task_get_xprt() counts the task into both queue lengths once chosen;
//!   rpc_task_release_xprt() takes it out when the task ends (here: when the client has
//!   read the whole reply).
//! - **Server.** The server answers each READ once it has read the whole call, after
//!   `service_ns` (0: at once; each call independently, as nfsd threads serve in
//!   parallel; the disk is not modelled). Replies go out in call order per connection.
//! - **Player.** The application reads the file in order: a READ that arrived past a
//!   hole (an earlier READ still outstanding on another, slower connection) is not
//!   playable until the hole fills. Playable bytes feed a buffer played out at
//!   `bitrate_bps`; playback starts once `startup_buffer_ns` of it is buffered (or the
//!   whole file has arrived), stalls when the buffer is empty and resumes after the same
//!   startup amount again (a rebuffer). The reader stops issuing READs while the file
//!   read ahead of the play position (buffered, in flight or past a hole) reaches
//!   `max_buffer_ns` of playback.
//!
//! Reported: startup delay, stalls (count, seconds), READs and bytes read, each
//! connection's share of the bytes, READ latency percentiles (call written to the reply's
//! last byte read), one row per READ (`requests`) and, per sample time, the buffer in
//! seconds of playback, whether playing, and the bytes of READs in flight (`series`).

use std::collections::VecDeque;

use super::bounds::{
    Connections, FieldBound,
    Limit::{Field, Int},
};
use super::output::{Column, Table, Value};
use super::rpc::{Rpc, RpcConn};
use super::{App, AppCx, AppOutput, FlowMap, Side};
pub use crate::config::apps::{NfsConfig, NFS_MAX_FILE_IO_SIZE};
use crate::config::MAX_DELAY_NS;
use crate::rng::Rng;
use crate::tcp::socket::TcpSocket;
use crate::time::NEVER;

/// The ranges [`NfsConfig::validate`] enforces (`super::bounds`).
pub const BOUNDS: &[FieldBound] = &[
    FieldBound::multiple(
        "rsize_bytes",
        Int(PAGE_BYTES),
        Int(NFS_MAX_FILE_IO_SIZE),
        PAGE_BYTES,
    ),
    FieldBound::multiple("readahead_bytes", Int(PAGE_BYTES), Int(1 << 30), PAGE_BYTES),
    FieldBound::new("bitrate_bps", Int(1), Int(1_000_000_000_000)),
    FieldBound::new("file_bytes", Int(1), Int(1 << 50)),
    FieldBound::new("max_buffer_ns", Int(1), Int(MAX_DELAY_NS)),
    FieldBound::new("startup_buffer_ns", Int(1), Field("max_buffer_ns")),
    FieldBound::new("call_bytes", Int(1), Int(1 << 20)),
    FieldBound::new("reply_header_bytes", Int(0), Int(1 << 20)),
    FieldBound::new("service_ns", Int(0), Int(MAX_DELAY_NS)),
];
/// `nconnect`: 1 to NFS_MAX_CONNECTIONS.
pub const CONNECTIONS: Connections = Connections {
    lo: 1,
    hi: Some(NFS_MAX_CONNECTIONS as u64),
};

/// Linux's `nconnect` limit: NFS_MAX_CONNECTIONS = 16 (Linux v6.12 fs/nfs/fs_context.c,
/// checked in nfs_fs_context_parse_param() for Opt_nconnect).
pub const NFS_MAX_CONNECTIONS: usize = 16;
/// The page size rsize and readahead are counted in (x86-64, arm64 4K kernels).
pub const PAGE_BYTES: u64 = 4096;
const NS_PER_SEC: u128 = 1_000_000_000;

impl NfsConfig {
    pub fn validate(&self, at: &str, nflows: usize) -> Result<(), String> {
        if !(1..=NFS_MAX_CONNECTIONS).contains(&nflows) {
            return Err(format!("{at}.nconnect: {nflows} connections is outside [1, {NFS_MAX_CONNECTIONS}] (Linux NFS_MAX_CONNECTIONS)"));
        }
        let r = self.rsize_bytes;
        if r == 0 || r % PAGE_BYTES != 0 || r > NFS_MAX_FILE_IO_SIZE {
            return Err(format!("{at}.rsize_bytes: {r} is not a multiple of {PAGE_BYTES} in [{PAGE_BYTES}, {NFS_MAX_FILE_IO_SIZE}] (NFS_MAX_FILE_IO_SIZE)"));
        }
        let ra = self.readahead_bytes;
        // At most 1 GiB: READs of the window are issued at once, and 2^40 B of 4 KiB READs
        // would be 2^28 calls in flight (Linux caps a transport's slots at
        // sunrpc.tcp_max_slot_table_entries, 65536; read_ahead_kb is far below this).
        if ra == 0 || ra % PAGE_BYTES != 0 || ra > 1 << 30 {
            return Err(format!("{at}.readahead_bytes: {ra} is not a multiple of {PAGE_BYTES} in [{PAGE_BYTES}, 2^30]"));
        }
        if self.bitrate_bps == 0 || self.bitrate_bps > 1_000_000_000_000 {
            return Err(format!(
                "{at}.bitrate_bps: {} is outside [1, 1e12] bit/s",
                self.bitrate_bps
            ));
        }
        if let Some(f) = self.file_bytes {
            if f == 0 || f > 1 << 50 {
                return Err(format!("{at}.file_bytes: {f} is outside [1, 2^50] bytes"));
            }
        }
        let max = crate::config::MAX_DELAY_NS;
        if self.max_buffer_ns == 0 || self.max_buffer_ns > max {
            return Err(format!(
                "{at}.max_buffer_ns: {} is outside [1, {max}] ns (one hour)",
                self.max_buffer_ns
            ));
        }
        if self.startup_buffer_ns == 0 || self.startup_buffer_ns > self.max_buffer_ns {
            return Err(format!(
                "{at}.startup_buffer_ns: {} is outside [1, max_buffer_ns = {}] ns",
                self.startup_buffer_ns, self.max_buffer_ns
            ));
        }
        if self.call_bytes == 0 || self.call_bytes > 1 << 20 {
            return Err(format!(
                "{at}.call_bytes: {} is outside [1, 2^20] bytes",
                self.call_bytes
            ));
        }
        if self.reply_header_bytes > 1 << 20 {
            return Err(format!(
                "{at}.reply_header_bytes: {} is outside [0, 2^20] bytes",
                self.reply_header_bytes
            ));
        }
        if self.service_ns > max {
            return Err(format!(
                "{at}.service_ns: {} is outside [0, {max}] ns (one hour)",
                self.service_ns
            ));
        }
        Ok(())
    }

    /// Bytes of one READ: rsize, or the readahead window when that is smaller (the page
    /// cache asks for no more than its window; nfs_pageio coalesces up to rsize).
    pub fn read_bytes(&self) -> u64 {
        self.rsize_bytes.min(self.readahead_bytes)
    }
}

/// The SUNRPC transport switch of one mount: the round-robin cursor and each
/// transport's queue length (RPC tasks holding it).
#[derive(Clone, Debug)]
pub struct XprtSwitch {
    queuelen: Vec<u64>,
    xps_queuelen: u64,
    cursor: Option<usize>,
}

impl XprtSwitch {
    pub fn new(n: usize) -> XprtSwitch {
        XprtSwitch {
            queuelen: vec![0; n],
            xps_queuelen: 0,
            cursor: None,
        }
    }

    /// The transport for the next RPC task, counted into the queue lengths.
    /// Linux v6.12 net/sunrpc/xprtmultipath.c: xprt_switch_find_next_entry_roundrobin()
    /// (every transport active: `xps_nactive` = n), then net/sunrpc/clnt.c:
    /// rpc_task_get_xprt().
    pub fn pick(&mut self) -> usize {
        let n = self.queuelen.len();
        let mut cur = self.cursor;
        let x = loop {
            // __xprt_switch_find_next_entry_roundrobin(): the entry after `cur`, wrapping
            // to the first (the first entry when there is no cursor yet).
            let x = cur.map_or(0, |c| (c + 1) % n);
            // "Exit loop if xprt_queuelen <= average queue length". Terminates: some
            // transport is at or below the average.
            if self.queuelen[x] * n as u64 <= self.xps_queuelen {
                break x;
            }
            cur = Some(x);
        };
        self.cursor = Some(x);
        self.queuelen[x] += 1;
        self.xps_queuelen += 1;
        x
    }

    /// The task on transport `x` ended (rpc_task_release_xprt()).
    pub fn release(&mut self, x: usize) {
        self.queuelen[x] -= 1;
        self.xps_queuelen -= 1;
    }

    pub fn queuelen(&self, x: usize) -> u64 {
        self.queuelen[x]
    }
}

/// Playback state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Play {
    /// Waiting for the startup buffer (first start, or after a stall).
    Buffering,
    Playing,
    /// The whole file has been played.
    Done,
}

pub struct NfsStream {
    name: String,
    flows: FlowMap,
    cfg: NfsConfig,
    read_bytes: u64,
    startup_bytes: u64,
    max_buffer_bytes: u64,
    conns: Vec<RpcConn>,
    xps: XprtSwitch,
    /// Per connection: READs read by the server, waiting for `service_ns` (due time).
    serving: Vec<VecDeque<(u64, Rpc)>>,
    /// File offset of the next READ; end of the contiguous prefix that has arrived.
    next_offset: u64,
    ready_end: u64,
    /// The first READ not yet arrived (all before it have).
    next_ready_id: usize,
    inflight_bytes: u64,
    // player
    play: Play,
    /// Playing time accumulated before `play_since_ns`, and when playing last (re)started.
    play_acc_ns: u64,
    play_since_ns: u64,
    started_ns: u64,
    stalls: u64,
    stall_ns: u64,
    stall_since_ns: u64,
    // one row per READ issued (index = id); latency NEVER while outstanding
    r_conn: Vec<u32>,
    r_offset: Vec<u64>,
    r_bytes: Vec<u64>,
    r_start_ns: Vec<u64>,
    r_latency_ns: Vec<u64>,
    // series
    s_t_ns: Vec<u64>,
    s_buffer_ns: Vec<u64>,
    s_playing: Vec<bool>,
    s_inflight: Vec<u64>,
}

/// Bytes played in `play_ns` of playback at `bps`.
fn bytes_in(play_ns: u64, bps: u64) -> u64 {
    (play_ns as u128 * bps as u128 / (8 * NS_PER_SEC)) as u64
}

/// Playback time of `bytes` at `bps`, rounded up (the instant the last byte is played).
fn ns_for(bytes: u64, bps: u64) -> u64 {
    (bytes as u128 * 8 * NS_PER_SEC)
        .div_ceil(bps as u128)
        .min(u64::MAX as u128) as u64
}

impl NfsStream {
    pub fn new(name: &str, flows: Vec<u32>, cfg: &NfsConfig, _rng: Rng) -> NfsStream {
        let n = flows.len();
        let bps = cfg.bitrate_bps;
        NfsStream {
            name: name.to_string(),
            flows: FlowMap::new(flows),
            cfg: cfg.clone(),
            read_bytes: cfg.read_bytes(),
            startup_bytes: bytes_in(cfg.startup_buffer_ns, bps).max(1),
            max_buffer_bytes: bytes_in(cfg.max_buffer_ns, bps).max(1),
            conns: vec![RpcConn::default(); n],
            xps: XprtSwitch::new(n),
            serving: vec![VecDeque::new(); n],
            next_offset: 0,
            ready_end: 0,
            next_ready_id: 0,
            inflight_bytes: 0,
            play: Play::Buffering,
            play_acc_ns: 0,
            play_since_ns: 0,
            started_ns: NEVER,
            stalls: 0,
            stall_ns: 0,
            stall_since_ns: NEVER,
            r_conn: Vec::new(),
            r_offset: Vec::new(),
            r_bytes: Vec::new(),
            r_start_ns: Vec::new(),
            r_latency_ns: Vec::new(),
            s_t_ns: Vec::new(),
            s_buffer_ns: Vec::new(),
            s_playing: Vec::new(),
            s_inflight: Vec::new(),
        }
    }

    fn file_end(&self) -> u64 {
        self.cfg.file_bytes.unwrap_or(u64::MAX)
    }

    /// Playing time up to `now` (not past the instant the buffer empties).
    fn play_ns_at(&self, now: u64) -> u64 {
        match self.play {
            Play::Playing => (self.play_acc_ns + (now - self.play_since_ns))
                .min(ns_for(self.ready_end, self.cfg.bitrate_bps)),
            _ => self.play_acc_ns,
        }
    }

    fn played_at(&self, now: u64) -> u64 {
        bytes_in(self.play_ns_at(now), self.cfg.bitrate_bps).min(self.ready_end)
    }

    /// When playing, the instant the buffer runs dry (scenario ns).
    fn empty_at(&self) -> u64 {
        if self.play != Play::Playing {
            return NEVER;
        }
        let need = ns_for(self.ready_end, self.cfg.bitrate_bps);
        self.play_since_ns + need.saturating_sub(self.play_acc_ns)
    }

    /// Bring the player to `now`: a buffer that ran dry stalls (or ends the file).
    fn advance(&mut self, now: u64) {
        let empty = self.empty_at();
        if empty <= now {
            self.play_acc_ns = ns_for(self.ready_end, self.cfg.bitrate_bps);
            if self.ready_end >= self.file_end() {
                self.play = Play::Done;
            } else {
                self.play = Play::Buffering;
                self.stalls += 1;
                self.stall_since_ns = empty;
            }
        }
    }

    /// Start (or resume) playback if enough is buffered.
    fn maybe_play(&mut self, now: u64) {
        if self.play != Play::Buffering {
            return;
        }
        let buffered = self.ready_end - self.played_at(now);
        if buffered >= self.startup_bytes || (self.ready_end >= self.file_end() && buffered > 0) {
            self.play = Play::Playing;
            self.play_since_ns = now;
            if self.started_ns == NEVER {
                self.started_ns = now;
            }
            if self.stall_since_ns != NEVER {
                self.stall_ns += now - self.stall_since_ns;
                self.stall_since_ns = NEVER;
            }
        }
    }

    /// Issue READs while the readahead window and the buffer cap allow.
    fn pump(&mut self, cx: &mut AppCx) {
        let now = cx.now_ns();
        let end = self.file_end();
        let played = self.played_at(now);
        while self.next_offset < end {
            let len = self.read_bytes.min(end - self.next_offset);
            let outstanding = self.next_offset > self.ready_end;
            if outstanding && self.next_offset + len - self.ready_end > self.cfg.readahead_bytes {
                break;
            }
            if self.next_offset - played >= self.max_buffer_bytes {
                break;
            }
            let id = self.r_offset.len() as u64;
            let k = self.xps.pick();
            let bytes =
                self.conns[k].request(id, self.cfg.call_bytes, self.cfg.reply_header_bytes + len);
            self.r_conn.push(k as u32);
            self.r_offset.push(self.next_offset);
            self.r_bytes.push(len);
            self.r_start_ns.push(now);
            self.r_latency_ns.push(NEVER);
            self.next_offset += len;
            self.inflight_bytes += len;
            cx.write(self.flows.flow(k), Side::Client, bytes);
        }
    }

    /// The next deadline: the buffer running dry, room under the buffer cap, a reply due.
    fn arm_timer(&self, cx: &mut AppCx) {
        let mut next = self.empty_at();
        if self.play == Play::Playing && self.next_offset < self.file_end() {
            // Room for the next READ once the play position passes next_offset - max.
            let outstanding = self.next_offset > self.ready_end;
            let len = self.read_bytes.min(self.file_end() - self.next_offset);
            let window_ok =
                !outstanding || self.next_offset + len - self.ready_end <= self.cfg.readahead_bytes;
            if window_ok {
                let target = self.next_offset + 1 - self.max_buffer_bytes.min(self.next_offset + 1);
                let need = ns_for(target, self.cfg.bitrate_bps);
                next = next.min(self.play_since_ns + need.saturating_sub(self.play_acc_ns));
            }
        }
        for q in &self.serving {
            if let Some(&(due, _)) = q.front() {
                next = next.min(due);
            }
        }
        cx.set_timer((next != NEVER).then_some(next));
    }

    fn serve_due(&mut self, cx: &mut AppCx) {
        let now = cx.now_ns();
        for k in 0..self.serving.len() {
            while self.serving[k].front().is_some_and(|&(due, _)| due <= now) {
                let (_, rpc) = self.serving[k].pop_front().unwrap();
                let bytes = self.conns[k].respond(rpc);
                cx.write(self.flows.flow(k), Side::Server, bytes);
            }
        }
    }

    fn buffer_ns_at(&self, now: u64) -> u64 {
        let buffered = self.ready_end - self.played_at(now);
        (buffered as u128 * 8 * NS_PER_SEC / self.cfg.bitrate_bps as u128) as u64
    }
}

impl App for NfsStream {
    fn name(&self) -> &str {
        &self.name
    }
    fn kind(&self) -> &'static str {
        "nfs_stream"
    }

    fn start(&mut self, cx: &mut AppCx) {
        // The file is opened at t = 0; calls written before a connection is up wait in
        // its socket (the transport connects on first use).
        self.pump(cx);
        self.arm_timer(cx);
    }

    fn on_read(&mut self, cx: &mut AppCx, flow: u32, side: Side, read_total: u64) {
        let k = self.flows.local(flow);
        let now = cx.now_ns();
        match side {
            Side::Server => {
                while let Some(rpc) = self.conns[k].server_next_request(read_total) {
                    if self.cfg.service_ns == 0 {
                        let bytes = self.conns[k].respond(rpc);
                        cx.write(flow, Side::Server, bytes);
                    } else {
                        self.serving[k].push_back((now + self.cfg.service_ns, rpc));
                    }
                }
                if self.cfg.service_ns != 0 {
                    self.arm_timer(cx);
                }
                return;
            }
            Side::Client => {
                self.advance(now);
                let mut any = false;
                while let Some(rpc) = self.conns[k].client_next_response(read_total) {
                    let id = rpc.id as usize;
                    self.r_latency_ns[id] = now - self.r_start_ns[id];
                    self.inflight_bytes -= self.r_bytes[id];
                    self.xps.release(k);
                    any = true;
                }
                if !any {
                    return;
                }
                // The contiguous prefix grows past every READ that has now arrived.
                while self.next_ready_id < self.r_latency_ns.len()
                    && self.r_latency_ns[self.next_ready_id] != NEVER
                {
                    self.ready_end =
                        self.r_offset[self.next_ready_id] + self.r_bytes[self.next_ready_id];
                    self.next_ready_id += 1;
                }
                self.maybe_play(now);
            }
        }
        self.pump(cx);
        self.arm_timer(cx);
    }

    fn on_timer(&mut self, cx: &mut AppCx) {
        let now = cx.now_ns();
        self.advance(now);
        self.serve_due(cx);
        self.pump(cx);
        self.arm_timer(cx);
    }

    fn sample(&mut self, t_ns: u64, _socks: &[TcpSocket]) {
        let playing = self.play == Play::Playing && self.empty_at() > t_ns;
        self.s_t_ns.push(t_ns);
        self.s_buffer_ns.push(self.buffer_ns_at(t_ns));
        self.s_playing.push(playing);
        self.s_inflight.push(self.inflight_bytes);
    }

    fn finish(&mut self, end_ns: u64, _socks: &[TcpSocket]) -> AppOutput {
        self.advance(end_ns);
        let mut out = AppOutput::new(&self.name, "nfs_stream");
        let n = self.flows.len();
        let done: Vec<usize> = (0..self.r_latency_ns.len())
            .filter(|&i| self.r_latency_ns[i] != NEVER)
            .collect();
        let mut per_conn = vec![0u64; n];
        for &i in &done {
            per_conn[self.r_conn[i] as usize] += self.r_bytes[i];
        }
        let bytes_read: u64 = per_conn.iter().sum();
        let stall_ns = self.stall_ns
            + if self.stall_since_ns != NEVER {
                end_ns - self.stall_since_ns
            } else {
                0
            };
        let startup = if self.started_ns == NEVER {
            Value::None
        } else {
            Value::F64(self.started_ns as f64 / 1e9)
        };
        out.put("startup_delay_s", startup);
        out.put("stalls", Value::U64(self.stalls));
        out.put("stall_s", Value::F64(stall_ns as f64 / 1e9));
        out.put("reads", Value::U64(done.len() as u64));
        out.put("reads_issued", Value::U64(self.r_offset.len() as u64));
        out.put("bytes_read", Value::U64(bytes_read));
        let share = per_conn
            .iter()
            .map(|&b| {
                Value::F64(if bytes_read == 0 {
                    0.0
                } else {
                    b as f64 / bytes_read as f64
                })
            })
            .collect();
        out.put("share_of_bytes", Value::List(share));
        out.put(
            "bytes_per_connection",
            Value::List(per_conn.iter().map(|&b| Value::U64(b)).collect()),
        );
        let lat: Vec<u64> = done.iter().map(|&i| self.r_latency_ns[i]).collect();
        out.put("latency_ms", super::stats::latency_summary_ms(&lat));
        out.put("played_s", Value::F64(self.play_ns_at(end_ns) as f64 / 1e9));
        out.put(
            "buffer_s",
            Value::F64(self.buffer_ns_at(end_ns) as f64 / 1e9),
        );
        let min_buf = self
            .s_t_ns
            .iter()
            .zip(&self.s_buffer_ns)
            .filter(|&(&t, _)| self.started_ns != NEVER && t >= self.started_ns)
            .map(|(_, &b)| b)
            .min();
        out.put(
            "min_buffer_s",
            min_buf.map_or(Value::None, |b| Value::F64(b as f64 / 1e9)),
        );
        out.put("nconnect", Value::U64(n as u64));
        out.put("rsize_bytes", Value::U64(self.cfg.rsize_bytes));
        out.put("read_bytes", Value::U64(self.read_bytes));
        out.put("readahead_bytes", Value::U64(self.cfg.readahead_bytes));
        out.put("bitrate_bps", Value::U64(self.cfg.bitrate_bps));
        out.tables.push(
            Table::new("requests")
                .col(
                    "flow",
                    Column::U32(
                        done.iter()
                            .map(|&i| self.flows.flow(self.r_conn[i] as usize))
                            .collect(),
                    ),
                )
                .col(
                    "offset_bytes",
                    Column::U64(done.iter().map(|&i| self.r_offset[i]).collect()),
                )
                .col(
                    "bytes",
                    Column::U64(done.iter().map(|&i| self.r_bytes[i]).collect()),
                )
                .col(
                    "start_ns",
                    Column::U64(done.iter().map(|&i| self.r_start_ns[i]).collect()),
                )
                .col("latency_ns", Column::U64(lat)),
        );
        out.tables.push(
            Table::new("series")
                .col("t_ns", Column::U64(self.s_t_ns.clone()))
                .col("buffer_ns", Column::U64(self.s_buffer_ns.clone()))
                .col("playing", Column::Bool(self.s_playing.clone()))
                .col("inflight_bytes", Column::U64(self.s_inflight.clone())),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_takes_turns_when_queues_are_even() {
        // With every transport at the average the cursor just moves on: READ i goes to
        // transport i mod n.
        let mut x = XprtSwitch::new(4);
        let picks: Vec<usize> = (0..8).map(|_| x.pick()).collect();
        assert_eq!(picks, vec![0, 1, 2, 3, 0, 1, 2, 3]);
    }

    #[test]
    fn round_robin_skips_a_transport_above_the_average() {
        // Transport 0 holds 3 tasks, the others none: average 3/4; the cursor after 3
        // reaches 0, whose 3 * 4 > 3, so 0 is skipped and 1 is taken.
        let mut x = XprtSwitch::new(4);
        for _ in 0..4 {
            x.pick();
        }
        // Release 1, 2, 3 (their replies came back); 0 keeps one, add two more on it.
        x.release(1);
        x.release(2);
        x.release(3);
        x.queuelen[0] += 2;
        x.xps_queuelen += 2;
        assert_eq!(x.pick(), 1);
        // Now queues [3, 1, 0, 0], total 4: 2 (0 <= 4) is next in turn.
        assert_eq!(x.pick(), 2);
        assert_eq!(x.pick(), 3);
        // [3, 1, 1, 1], total 6: 0 skipped (12 > 6), 1 taken (4 <= 6).
        assert_eq!(x.pick(), 1);
        assert_eq!(x.queuelen(0), 3);
    }

    #[test]
    fn playback_arithmetic_round_trips() {
        let bps = 80_000_000;
        assert_eq!(bytes_in(1_000_000_000, bps), 10_000_000);
        assert_eq!(ns_for(10_000_000, bps), 1_000_000_000);
        // One byte more takes the next (partial) ns.
        assert_eq!(ns_for(10_000_001, bps), 1_000_000_100);
        assert!(bytes_in(ns_for(12_345, bps), bps) >= 12_345);
    }

    #[test]
    fn validate_names_the_field() {
        let c = NfsConfig::default();
        assert!(c.validate("a", 4).is_ok());
        assert!(c.validate("a", 0).unwrap_err().starts_with("a.nconnect: 0"));
        assert!(c
            .validate("a", 17)
            .unwrap_err()
            .starts_with("a.nconnect: 17"));
        let e = NfsConfig {
            rsize_bytes: 1000,
            ..c.clone()
        }
        .validate("a", 1)
        .unwrap_err();
        assert!(e.starts_with("a.rsize_bytes: 1000"), "{e}");
        let e = NfsConfig {
            rsize_bytes: 2 << 20,
            ..c.clone()
        }
        .validate("a", 1)
        .unwrap_err();
        assert!(e.starts_with("a.rsize_bytes: 2097152"), "{e}");
        let e = NfsConfig {
            bitrate_bps: 0,
            ..c.clone()
        }
        .validate("a", 1)
        .unwrap_err();
        assert!(e.starts_with("a.bitrate_bps: 0"), "{e}");
        let e = NfsConfig {
            startup_buffer_ns: 40_000_000_000,
            ..c.clone()
        }
        .validate("a", 1)
        .unwrap_err();
        assert!(e.starts_with("a.startup_buffer_ns"), "{e}");
        let e = NfsConfig {
            readahead_bytes: 5000,
            ..c
        }
        .validate("a", 1)
        .unwrap_err();
        assert!(e.starts_with("a.readahead_bytes: 5000"), "{e}");
    }
}
