//! `tcplab._core.ScriptedHost`: one engine socket driven by a test script
//! (`tcplab_core::sim::scripted`), for `tcplab packetdrill` (python/tcplab/packetdrill).
//!
//! The binding speaks the engine's numbers: sequence numbers are the engine's byte offsets
//! (the SYN takes none, data starts at 0), windows are bytes (unscaled), and timestamps are
//! Linux's millisecond TS clock on the way out. The script's 32-bit relative numbers, window
//! scaling and TCP options are the Python runner's (python/tcplab/packetdrill/host.py, wire.py).
//!
//! The script's own TSvals are opaque tokens to the socket (it stores and echoes them):
//! they go in as `val + 1` (0 means "no timestamp" inside the engine) and come back out as
//! `ecr - 1`; the peer's TSecr, an echo of one of the socket's millisecond TSvals, goes in
//! as that millisecond in ns, so RTTs from it have the kernel's 1 ms granularity.
//!
//! ECN crosses as the TCP flags `ece` and `cwr` and the IP header's ECN field `ecn` (0
//! not-ECT, 1 ECT(1), 2 ECT(0), 3 CE: `tcplab_core::packet::ecn`), both ways.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use tcplab_core::cc::CongestionOps;
use tcplab_core::config::{CcKind, CcParams, TcpConfig};
use tcplab_core::packet::{ecn, flags, Packet, SackBlock, MAX_SACK_BLOCKS};
use tcplab_core::sim::scripted::{ScriptedConfig, TUN_MTU_BYTES};
use tcplab_core::sim::Simulator;
use tcplab_core::tcp::close::Teardown;
use tcplab_core::tcp::socket::ConnState;

const NS_PER_MS: u64 = 1_000_000;
/// `sysctl_wmem_max` / `sysctl_rmem_max` (Linux default 212992): SO_SNDBUF / SO_RCVBUF cap.
const WMEM_MAX_BYTES: u64 = 212_992;
const RMEM_MAX_BYTES: u64 = 212_992;
/// `SOCK_MIN_SNDBUF` and `SOCK_MIN_RCVBUF` on x86-64 (2 * (2048 + 256), 2048 + 256).
const SOCK_MIN_SNDBUF_BYTES: u64 = 4608;
const SOCK_MIN_RCVBUF_BYTES: u64 = 2304;

fn cc_kind(name: &str) -> PyResult<CcKind> {
    match name {
        "cubic" => Ok(CcKind::Cubic),
        "reno" => Ok(CcKind::Reno),
        "bbr" => Ok(CcKind::Bbr),
        "dctcp" => Ok(CcKind::Dctcp),
        _ => Err(PyValueError::new_err(format!(
            "cc: {name:?} is not a congestion control tcplab has (expected cubic, reno, bbr or dctcp)"
        ))),
    }
}

fn field<T: serde::de::DeserializeOwned + Default>(
    v: &serde_json::Value,
    key: &str,
) -> PyResult<T> {
    match v.get(key) {
        None => Ok(T::default()),
        Some(x) => serde_json::from_value(x.clone())
            .map_err(|e| PyValueError::new_err(format!("{key}: {e}"))),
    }
}

/// Run `f` on the simulator, turning an engine panic into a Python exception.
fn guarded<R>(sim: &mut Simulator, what: &str, f: impl FnOnce(&mut Simulator) -> R) -> PyResult<R> {
    let t = sim.now_rel_ns();
    catch_unwind(AssertUnwindSafe(|| f(sim))).map_err(|e| {
        let msg = e
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown panic".into());
        PyRuntimeError::new_err(format!(
            "engine panicked in {what} at simulated time {:.6} s: {msg}",
            t as f64 / 1e9
        ))
    })
}

#[pyclass(unsendable, module = "tcplab._core")]
pub struct ScriptedHost {
    sim: Simulator,
    /// The socket connected (SYN without ACK) rather than listened.
    active: bool,
    /// `setsockopt(TCP_MAXSEG)`, 0 if not set.
    user_mss: u32,
}

#[pymethods]
impl ScriptedHost {
    /// `config_json`: {"tcp": {engine TcpConfig keys}, "cc": name, "cc_params": {...},
    /// "hz": N, "seed": N, "tso_win_divisor": N}.
    #[new]
    fn new(config_json: &str) -> PyResult<Self> {
        let v: serde_json::Value = serde_json::from_str(config_json)
            .map_err(|e| PyValueError::new_err(format!("scripted config: {e}")))?;
        let tcp: TcpConfig = field(&v, "tcp")?;
        let cc_params: CcParams = field(&v, "cc_params")?;
        let cc = cc_kind(v.get("cc").and_then(|c| c.as_str()).unwrap_or("cubic"))?;
        let num = |key: &str, default: u64| v.get(key).and_then(|x| x.as_u64()).unwrap_or(default);
        let sc = ScriptedConfig {
            tcp,
            cc,
            cc_params,
            hz: num("hz", 1000) as u32,
            seed: num("seed", 1),
            tso_win_divisor: num("tso_win_divisor", 3) as u32,
        };
        let sim = Simulator::scripted(&sc).map_err(PyValueError::new_err)?;
        Ok(ScriptedHost {
            sim,
            active: false,
            user_mss: 0,
        })
    }

    /// Simulated ns since the script's time 0.
    #[getter]
    fn now_ns(&self) -> u64 {
        self.sim.now_rel_ns()
    }

    /// Process every event due at or before `t_ns`.
    fn run_until(&mut self, t_ns: u64) -> PyResult<()> {
        let r = guarded(&mut self.sim, "run_until", |s| s.run_until(t_ns))?;
        r.map_err(|e| PyRuntimeError::new_err(format!("engine: {e}")))
    }

    /// The packets the socket sent since the last call, in order (see the module docs).
    fn take_outbound<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let ts_ok = self.sim.script_socket().ts_ok;
        let out = PyList::empty(py);
        for (t_ns, p) in self.sim.script_take_out() {
            let d = PyDict::new(py);
            let syn = p.has(flags::SYN);
            d.set_item("t_ns", t_ns)?;
            d.set_item("syn", syn)?;
            d.set_item("ack", !(syn && self.active) && !p.has(flags::NO_ACK))?;
            d.set_item("fin", p.has(flags::FIN))?;
            d.set_item("rst", p.has(flags::RST))?;
            d.set_item("psh", p.has(flags::PSH))?;
            d.set_item("ece", p.has(flags::ECE))?;
            d.set_item("cwr", p.has(flags::CWR))?;
            d.set_item("ecn", p.ecn & ecn::MASK)?;
            d.set_item("seq", p.seq)?;
            d.set_item("end_seq", p.end_seq)?;
            d.set_item("ack_seq", p.ack_seq)?;
            d.set_item("win_bytes", p.rwnd_bytes)?;
            if ts_ok && p.tsval_ns != 0 {
                d.set_item("tsval", (p.tsval_ns / NS_PER_MS) as u32)?;
                d.set_item("tsecr", p.tsecr_ns.saturating_sub(1) as u32)?;
            } else {
                d.set_item("tsval", py.None())?;
                d.set_item("tsecr", py.None())?;
            }
            let sack: Vec<(u64, u64)> = p.sack[..p.num_sacks as usize]
                .iter()
                .map(|b| (b.start, b.end))
                .collect();
            d.set_item("sack", sack)?;
            d.set_item("dsack", p.has(flags::DSACK))?;
            d.set_item("segs", p.segs())?;
            out.append(d)?;
        }
        Ok(out)
    }

    /// The options of the peer's SYN or SYN-ACK, before it is injected. `peer_wscale` is
    /// the runner's to apply (windows cross this binding in bytes). Without SACK the
    /// socket sends no SACK blocks and recovers by counting duplicate ACKs (`tcp::reno`).
    #[pyo3(signature = (peer_mss, peer_wscale, ts_ok, sack_ok))]
    fn negotiate(
        &mut self,
        peer_mss: u32,
        peer_wscale: Option<u32>,
        ts_ok: bool,
        sack_ok: bool,
    ) -> PyResult<()> {
        let _ = peer_wscale;
        self.sim
            .script_negotiate(peer_mss, ts_ok, sack_ok, self.user_mss);
        Ok(())
    }

    /// `setsockopt(TCP_MAXSEG, n)` before the handshake: our MSS option and the sending
    /// MSS are at most `n` (Linux v6.12 do_tcp_setsockopt(): 88..65535, else EINVAL).
    fn set_user_mss(&mut self, n: u32) -> PyResult<()> {
        if !(88..=65535).contains(&n) {
            return Err(PyValueError::new_err(format!(
                "TCP_MAXSEG: {n} is outside 88..65535"
            )));
        }
        self.user_mss = n;
        Ok(())
    }

    /// Hand the script's packet to the socket now.
    fn inject(&mut self, pkt: &Bound<'_, PyDict>) -> PyResult<()> {
        let get_u64 = |k: &str| -> PyResult<u64> {
            match pkt.get_item(k)? {
                Some(v) if !v.is_none() => v.extract::<u64>(),
                _ => Ok(0),
            }
        };
        let get_bool = |k: &str| -> PyResult<bool> {
            match pkt.get_item(k)? {
                Some(v) if !v.is_none() => v.extract::<bool>(),
                _ => Ok(false),
            }
        };
        let seq = get_u64("seq")?;
        let end_seq = get_u64("end_seq")?.max(seq);
        let mut f = 0u16;
        if get_bool("syn")? {
            f |= flags::SYN;
        }
        if get_bool("fin")? {
            f |= flags::FIN;
        }
        if get_bool("psh")? {
            f |= flags::PSH;
        }
        if get_bool("ece")? {
            f |= flags::ECE;
        }
        if get_bool("cwr")? {
            f |= flags::CWR;
        }
        let ecn_field = get_u64("ecn")?;
        if ecn_field > ecn::MASK as u64 {
            return Err(PyValueError::new_err(format!(
                "ecn: {ecn_field} is not an IP ECN field (0 not-ECT, 1 ECT(1), 2 ECT(0), 3 CE)"
            )));
        }
        if get_bool("rst")? {
            return Err(PyValueError::new_err("rst: an inbound RST is not modelled"));
        }
        if f & flags::SYN == 0 && !get_bool("ack")? {
            // Linux v6.12 tcp_rcv_established() / tcp_rcv_state_process(): a segment with
            // neither ACK, RST nor SYN is dropped (SKB_DROP_REASON_TCP_FLAGS). tcplab's
            // packets always carry ACK fields, so the binding drops it here.
            return Ok(());
        }
        let mut sack = [SackBlock::default(); MAX_SACK_BLOCKS];
        let mut num_sacks = 0u8;
        if let Some(blocks) = pkt.get_item("sack")? {
            if !blocks.is_none() {
                let blocks: Vec<(u64, u64)> = blocks.extract()?;
                if blocks.len() > MAX_SACK_BLOCKS {
                    return Err(PyValueError::new_err(format!(
                        "sack: {} blocks; at most {MAX_SACK_BLOCKS} fit beside timestamps",
                        blocks.len()
                    )));
                }
                for (i, (s, e)) in blocks.into_iter().enumerate() {
                    sack[i] = SackBlock { start: s, end: e };
                    num_sacks += 1;
                }
            }
        }
        let ts = self.sim.script_socket().ts_ok;
        let tsval = match pkt.get_item("tsval")? {
            Some(v) if ts && !v.is_none() => v.extract::<u64>()? + 1,
            _ => 0,
        };
        let tsecr = match pkt.get_item("tsecr")? {
            Some(v) if ts && !v.is_none() => v.extract::<u64>()? * NS_PER_MS,
            _ => 0,
        };
        let payload = (end_seq - seq) as u32;
        let p = Packet {
            ip_bytes: Packet::ip_len(payload, num_sacks),
            seq,
            end_seq,
            ack_seq: get_u64("ack_seq")?,
            rwnd_bytes: get_u64("win_bytes")?.min(u32::MAX as u64) as u32,
            tsval_ns: tsval,
            tsecr_ns: tsecr,
            sack,
            num_sacks,
            flags: f,
            ecn: ecn_field as u8,
            ..Packet::default()
        };
        guarded(&mut self.sim, "inject", |s| s.script_inject(p))
    }

    /// `listen()`: a closed socket already answers a SYN (passive open).
    fn listen(&mut self) {}

    /// `connect()`: the SYN goes out now.
    fn connect(&mut self) -> PyResult<()> {
        self.active = true;
        guarded(&mut self.sim, "connect", |s| s.script_connect())
    }

    /// The connection's state, as `ss` names it.
    #[getter]
    fn state(&self) -> &'static str {
        let s = self.sim.script_socket();
        match s.state {
            ConnState::Closed => "CLOSED",
            ConnState::SynSent => "SYN_SENT",
            ConnState::SynRecv => "SYN_RECV",
            ConnState::Established => match s.fin.teardown {
                Teardown::Open => "ESTABLISHED",
                Teardown::FinWait1 => "FIN_WAIT1",
                Teardown::FinWait2 => "FIN_WAIT2",
                Teardown::Closing => "CLOSING",
                Teardown::TimeWait => "TIME_WAIT",
                Teardown::CloseWait => "CLOSE_WAIT",
                Teardown::LastAck => "LAST_ACK",
                Teardown::Closed => "CLOSED",
            },
        }
    }

    /// `close()`: a FIN after the data (a reset if received data is unread).
    fn close(&mut self) -> PyResult<()> {
        guarded(&mut self.sim, "close", |s| s.script_close(true))
    }

    /// `shutdown(SHUT_WR)`: a FIN after the data.
    fn shutdown_wr(&mut self) -> PyResult<()> {
        guarded(&mut self.sim, "shutdown", |s| s.script_close(false))
    }

    /// The peer's FIN was taken (a `read()` at the end of the data returns 0).
    fn peer_closed(&self) -> bool {
        self.sim.script_socket().fin.peer_fin_rcvd
    }

    /// `write()` of `n` bytes (`send()` with `MSG_EOR`: `eor`, `MSG_MORE`: `more`):
    /// queued now; returns `n`.
    #[pyo3(signature = (n, eor=false, more=false))]
    fn write(&mut self, n: u64, eor: bool, more: bool) -> PyResult<u64> {
        guarded(&mut self.sim, "write", |s| s.script_send(n, eor, more))?;
        Ok(n)
    }

    /// A non-blocking `write()` of up to `n` bytes: what the send buffer takes now.
    fn write_nonblocking(&mut self, n: u64) -> PyResult<u64> {
        let take = n.min(self.sim.script_sndbuf_room());
        if take > 0 {
            guarded(&mut self.sim, "write", |s| s.script_write(take))?;
        }
        Ok(take)
    }

    /// When the engine's next event is due (ns since the script's start), or None.
    fn next_event_ns(&self) -> Option<u64> {
        self.sim.script_next_event_ns()
    }

    /// Bytes of earlier writes the send buffer has not taken yet (a blocked `write()`).
    fn pending_write_bytes(&self) -> u64 {
        self.sim.script_socket().app.pending_bytes
    }

    /// `read()` of up to `n` bytes: the bytes read now.
    fn read(&mut self, n: u64) -> PyResult<u64> {
        guarded(&mut self.sim, "read", |s| s.script_read(n))
    }

    /// `ioctl(SIOCINQ)`: bytes received in order and not read.
    fn unread_bytes(&self) -> u64 {
        self.sim.script_socket().rcv.unread_bytes()
    }

    /// `ioctl(SIOCOUTQ)`: bytes written and not yet acknowledged (`write_seq - snd_una`).
    fn outq_bytes(&self) -> u64 {
        let tp = &self.sim.script_socket().tp;
        tp.write_seq - tp.snd_una
    }

    /// `setsockopt(SO_SNDBUF, val)`: twice the value, bounded by `wmem_max`, and locked.
    fn set_sndbuf(&mut self, val: u64) {
        let s = self.sim.script_socket_mut();
        s.sk_sndbuf = (val.min(WMEM_MAX_BYTES) * 2).max(SOCK_MIN_SNDBUF_BYTES);
        s.sndbuf_locked = true;
    }

    /// `setsockopt(SO_RCVBUF, val)`: twice the value, bounded by `rmem_max`, and locked.
    fn set_rcvbuf(&mut self, val: u64) {
        let s = self.sim.script_socket_mut();
        let before = s.state == ConnState::Closed;
        s.rcv.set_rcvbuf_locked(
            (val.min(RMEM_MAX_BYTES) * 2).max(SOCK_MIN_RCVBUF_BYTES),
            before,
        );
    }

    /// `setsockopt(TCP_NODELAY, on)`: switching Nagle off pushes what is queued.
    fn set_nodelay(&mut self, on: bool) -> PyResult<()> {
        guarded(&mut self.sim, "setsockopt", |s| s.script_set_nodelay(on))
    }

    /// `tc qdisc replace dev tun0 root pfifo limit N` (None: the default FIFO).
    #[pyo3(signature = (limit_packets=None))]
    fn set_tun_pfifo_limit(&mut self, limit_packets: Option<u32>) {
        self.sim.script_set_tun_pfifo_limit(limit_packets);
    }

    /// The error that ended the connection (`sk_err`), as errno's name, or None.
    #[getter]
    fn error(&self) -> Option<&'static str> {
        self.sim.script_socket().timed_out.then_some("ETIMEDOUT")
    }

    /// `setsockopt(TCP_USER_TIMEOUT, ms)`: how long retransmissions may go on.
    fn set_user_timeout(&mut self, ms: u32) {
        self.sim.script_socket_mut().user_timeout_ms = ms;
    }

    /// `setsockopt(TCP_CORK, on)`: uncorking pushes what is queued.
    fn set_cork(&mut self, on: bool) -> PyResult<()> {
        guarded(&mut self.sim, "setsockopt", |s| s.script_set_cork(on))
    }

    /// `setsockopt(TCP_CONGESTION, name)` before the handshake.
    fn set_cc(&mut self, name: &str) -> PyResult<()> {
        if self.sim.script_socket().state == ConnState::Established {
            return Err(PyValueError::new_err(
                "TCP_CONGESTION: switching the congestion control of an established connection is not modelled",
            ));
        }
        let kind = cc_kind(name)?;
        self.sim.script_set_cc(kind);
        Ok(())
    }

    /// `getsockopt(TCP_CONGESTION)`: the congestion control's name (`icsk_ca_ops->name`;
    /// DCTCP whose connection did not negotiate ECN is `dctcp-reno`).
    #[getter]
    fn cc_name(&self) -> &'static str {
        self.sim.script_socket().cc.name()
    }

    /// `sysctl net.ipv4.tcp_ecn` (0, 1 or 2) and `tcp_ecn_fallback` changed after the
    /// socket was made (Linux reads them when it uses them).
    fn set_ecn(&mut self, tcp_ecn: u8, fallback: bool) -> PyResult<()> {
        if tcp_ecn > 2 {
            return Err(PyValueError::new_err(format!(
                "tcp_ecn: {tcp_ecn} is not 0, 1 or 2 (AccECN's modes are not modelled)"
            )));
        }
        self.sim.script_set_ecn(tcp_ecn, fallback);
        Ok(())
    }

    /// `getsockopt(TCP_INFO)`: the `tcpi_*` fields with Linux's units.
    fn tcp_info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        let now = self.sim.now_rel_ns() + tcplab_core::time::BOOT_NS;
        for (k, v) in self.sim.script_socket().tcp_info(now, TUN_MTU_BYTES) {
            d.set_item(k, v)?;
        }
        Ok(d)
    }
}
