//! `tcplab._core`: the Python binding of the tcplab engine.
//!
//! Two functions: `run(config_json, progress=None) -> dict`, and `defaults() -> dict`, the
//! engine's defaults for what the scenario may leave out (Linux's sysctl and module
//! defaults; Python's copy of them is tested against this). The simulation runs with the
//! GIL released, in slices of a bounded amount of work (see `run`); between slices the
//! binding checks for Ctrl-C and SIGTERM and now and then calls
//! `progress(sim_now_ns, duration_ns)`. Time series come back as
//! NumPy arrays that take over the engine's buffers without copying. Errors: a bad
//! configuration raises `ValueError` (naming the JSON field), running out of memory raises
//! `MemoryError` (never an abort), an engine panic raises `RuntimeError` with context.
//! Settings that are valid but defeat the run come back in the `warnings` list.
//!
//! `estimate_memory(config_json) -> dict` gives the engine's memory estimate of a run
//! (`tcplab_core::memory`), so the Python front can check its own copy against it;
//! `validate(config_json) -> list[str]` runs the engine's checks alone (warnings returned).
//! With `capture` in the configuration, `run`'s dict has `capture`: one flow's packets as
//! columns (see `capture_to_python`); else `capture` is None.

mod delayline;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use numpy::IntoPyArray;
use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use tcplab_core::app::{Column, Value};
use tcplab_core::capture::CaptureOutput;
use tcplab_core::config::{self, CcParams, QueueConfig, SimConfig, TcpConfig};
use tcplab_core::metrics::histogram;
use tcplab_core::mib::{Mib, MibCounters};
use tcplab_core::sim::{SimOutput, Simulator};
use tcplab_core::tcp::sock::CaState;

/// Events the engine runs before it returns to the binding (`Simulator::run_until_at_most`),
/// which then reads the clock: a few microseconds of work at 50 ns per event (small
/// scenarios, BENCHMARKS.md), a few milliseconds at the 1-4 us of runs with 10^5
/// connections, whose endpoints no longer fit in the caches.
const EVENTS_PER_SLICE: u64 = 1024;
/// Wall time the GIL stays released before the binding checks for a pending signal. Python
/// runs its signal handlers only in the main thread with the GIL held (`PyErr_CheckSignals`),
/// so this bounds how long Ctrl-C or SIGTERM waits: well under a second, as a user expects.
const SIGNAL_CHECK_EVERY: Duration = Duration::from_millis(5);
/// The progress callback is called when the run advanced by another 1/PROGRESS_STEPS of its
/// simulated time, or this much wall time passed since the last call (a long run moving
/// slowly through simulated time still shows that it runs), and once at the end.
const PROGRESS_STEPS: u64 = 100;
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

fn panic_message(e: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = e.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = e.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

fn counters_dict<'py>(py: Python<'py>, c: &MibCounters) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for m in Mib::ALL {
        d.set_item(m.nstat_name(), c.get(m))?;
    }
    Ok(d)
}

fn to_python<'py>(py: Python<'py>, out: SimOutput) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("version", env!("TCPLAB_ENGINE_VERSION"))?;
    d.set_item("events", out.events)?;
    d.set_item("packets", out.packets)?;
    d.set_item("host_packets", out.host_packets)?;

    let flows = PyList::empty(py);
    for f in &out.flows {
        let fd = PyDict::new(py);
        fd.set_item("name", &f.name)?;
        fd.set_item("src", f.src)?;
        fd.set_item("dst", f.dst)?;
        fd.set_item("cc", &f.cc)?;
        fd.set_item("start_ns", f.start_ns)?;
        fd.set_item("end_ns", f.end_ns)?;
        fd.set_item("bytes_sent", f.bytes_sent)?;
        fd.set_item("bytes_retrans", f.bytes_retrans)?;
        fd.set_item("bytes_acked", f.bytes_acked)?;
        fd.set_item("bytes_received", f.bytes_received)?;
        fd.set_item("data_segs_out", f.data_segs_out)?;
        fd.set_item("retrans_segs", f.retrans_segs)?;
        fd.set_item("timeouts", f.timeouts)?;
        let r = PyDict::new(py);
        r.set_item("count", f.rtt.count)?;
        r.set_item("min", f.rtt.min_us)?;
        r.set_item("mean", f.rtt.mean_us)?;
        r.set_item("p50", f.rtt.p50_us)?;
        r.set_item("p90", f.rtt.p90_us)?;
        r.set_item("p99", f.rtt.p99_us)?;
        r.set_item("max", f.rtt.max_us)?;
        // Percentiles are low edges of log-linear histogram buckets (metrics/histogram.rs).
        r.set_item("relative_error", histogram::RELATIVE_ERROR)?;
        fd.set_item("rtt_us", r)?;
        // ss -i's busy / rwnd_limited / sndbuf_limited (tcp_info chronographs), us.
        let ch = PyDict::new(py);
        ch.set_item("busy_us", f.busy_time_us)?;
        ch.set_item("rwnd_limited_us", f.rwnd_limited_us)?;
        ch.set_item("sndbuf_limited_us", f.sndbuf_limited_us)?;
        fd.set_item("chrono", ch)?;
        fd.set_item("counters", counters_dict(py, &f.counters)?)?;
        flows.append(fd)?;
    }
    d.set_item("flows", flows)?;

    let hosts = PyList::empty(py);
    for h in &out.hosts {
        let hd = PyDict::new(py);
        hd.set_item("name", &h.name)?;
        hd.set_item("counters", counters_dict(py, &h.counters)?)?;
        match &h.nic {
            None => hd.set_item("nic", py.None())?,
            Some(n) => {
                let nd = PyDict::new(py);
                nd.set_item("driver", n.driver)?;
                nd.set_item("rx_ring", n.rx_ring)?;
                nd.set_item("rx_queues", n.rx_queues)?;
                // Names as the driver's `ethtool -S` prints them (tcplab_core::host::nic).
                let et = PyDict::new(py);
                for (k, v) in &n.ethtool {
                    et.set_item(k, *v)?;
                }
                nd.set_item("ethtool", et)?;
                hd.set_item("nic", nd)?;
            }
        }
        match &h.cpu {
            None => hd.set_item("cpu", py.None())?,
            Some(c) => {
                let cd = PyDict::new(py);
                cd.set_item("period_ns", c.period_ns)?;
                cd.set_item("share", c.share)?;
                cd.set_item("steal_ns", c.steal_ns)?;
                cd.set_item("on_ns", c.on_ns)?;
                hd.set_item("cpu", cd)?;
            }
        }
        hosts.append(hd)?;
    }
    d.set_item("hosts", hosts)?;

    let links = PyList::empty(py);
    for l in &out.links {
        let ld = PyDict::new(py);
        ld.set_item("name", &l.name)?;
        ld.set_item("from", l.from)?;
        ld.set_item("to", l.to)?;
        ld.set_item("qdisc", l.qdisc)?;
        ld.set_item("sent_bytes", l.stats.sent_bytes)?;
        ld.set_item("sent_packets", l.stats.sent_packets)?;
        ld.set_item("drops", l.stats.drops)?;
        ld.set_item("overlimits", l.stats.overlimits)?;
        ld.set_item("requeues", l.stats.requeues)?;
        ld.set_item("backlog_bytes", l.stats.backlog_bytes)?;
        ld.set_item("backlog_packets", l.stats.backlog_packets)?;
        ld.set_item("max_backlog_packets", l.stats.max_backlog_packets)?;
        ld.set_item("loss_drops", l.wire.loss_drops + l.wire.drop_list_drops)?;
        ld.set_item("reorder_events", l.wire.reorder_events)?;
        // The qdisc's own `tc -s qdisc` counters (fq's throttled, fq_codel's drop_overlimit...).
        let xs = PyDict::new(py);
        for (k, v) in &l.xstats {
            xs.set_item(*k, *v)?;
        }
        ld.set_item("xstats", xs)?;
        // A child qdisc (tbf's inner queue), with the same stat keys; None without one.
        match &l.child {
            Some((kind, cs, cx)) => {
                let cd = PyDict::new(py);
                cd.set_item("qdisc", *kind)?;
                cd.set_item("sent_bytes", cs.sent_bytes)?;
                cd.set_item("sent_packets", cs.sent_packets)?;
                cd.set_item("drops", cs.drops)?;
                cd.set_item("overlimits", cs.overlimits)?;
                cd.set_item("requeues", cs.requeues)?;
                cd.set_item("backlog_bytes", cs.backlog_bytes)?;
                cd.set_item("backlog_packets", cs.backlog_packets)?;
                cd.set_item("max_backlog_packets", cs.max_backlog_packets)?;
                let cxs = PyDict::new(py);
                for (k, v) in cx {
                    cxs.set_item(*k, *v)?;
                }
                cd.set_item("xstats", cxs)?;
                ld.set_item("child", cd)?;
            }
            None => ld.set_item("child", py.None())?,
        }
        // Cilium EDT aggregates shaped at this link (Bandwidth Manager), in config order.
        let edt = PyList::empty(py);
        for a in &l.edt {
            let ad = PyDict::new(py);
            ad.set_item("rate_bps", a.rate_bps)?;
            ad.set_item("drops", a.drops)?;
            ad.set_item("stamped", a.stamped)?;
            ad.set_item("passed", a.passed)?;
            edt.append(ad)?;
        }
        ld.set_item("edt", edt)?;
        links.append(ld)?;
    }
    d.set_item("links", links)?;

    let inv = PyDict::new(py);
    let i = &out.invariant;
    inv.set_item("ok", i.ok)?;
    inv.set_item("accounting_ok", i.data_ok)?;
    inv.set_item("data_packets_sent", i.data.sent)?;
    inv.set_item("data_packets_received", i.data.received)?;
    let dropped = PyDict::new(py);
    dropped.set_item("queue", i.data.dropped_queue)?;
    dropped.set_item("loss", i.data.dropped_loss)?;
    dropped.set_item("drop_list", i.data.dropped_drop_list)?;
    dropped.set_item("no_route", i.data.dropped_no_route)?;
    dropped.set_item("nic", i.data.dropped_nic)?;
    inv.set_item("dropped", dropped)?;
    inv.set_item("in_flight", i.in_flight)?;
    inv.set_item("message", &i.message)?;
    let rtt = PyDict::new(py);
    rtt.set_item("ok", i.rtt_ok)?;
    rtt.set_item("message", &i.rtt_message)?;
    inv.set_item("rtt_floor", rtt)?;
    d.set_item("invariant", inv)?;

    let s = out.series;
    let ts = PyDict::new(py);
    ts.set_item("t_ns", s.t_ns.into_pyarray(py))?;
    ts.set_item("flow", s.flow.into_pyarray(py))?;
    ts.set_item("cwnd", s.cwnd.into_pyarray(py))?;
    ts.set_item("ssthresh", s.ssthresh.into_pyarray(py))?;
    ts.set_item("srtt_us", s.srtt_us.into_pyarray(py))?;
    ts.set_item("rttvar_us", s.rttvar_us.into_pyarray(py))?;
    ts.set_item("min_rtt_us", s.min_rtt_us.into_pyarray(py))?;
    ts.set_item("pacing_rate_bps", s.pacing_rate_bps.into_pyarray(py))?;
    ts.set_item("delivery_rate_bps", s.delivery_rate_bps.into_pyarray(py))?;
    ts.set_item("inflight", s.inflight.into_pyarray(py))?;
    ts.set_item("bytes_acked", s.bytes_acked.into_pyarray(py))?;
    ts.set_item("bytes_received", s.bytes_received.into_pyarray(py))?;
    ts.set_item("retrans_segs", s.retrans_segs.into_pyarray(py))?;
    ts.set_item("lost", s.lost.into_pyarray(py))?;
    ts.set_item("ca_state", s.ca_state.into_pyarray(py))?;
    ts.set_item("cc_mode", s.cc_mode.into_pyarray(py))?;
    ts.set_item("bbr_bw_bps", s.bbr_bw_bps.into_pyarray(py))?;
    ts.set_item("bbr_lt_use_bw", s.bbr_lt_use_bw.into_pyarray(py))?;
    ts.set_item("bbr_lt_bw_bps", s.bbr_lt_bw_bps.into_pyarray(py))?;
    ts.set_item("pacing_gain", s.pacing_gain.into_pyarray(py))?;
    ts.set_item("cwnd_gain", s.cwnd_gain.into_pyarray(py))?;
    ts.set_item("snd_wnd_bytes", s.snd_wnd_bytes.into_pyarray(py))?;
    ts.set_item("rto_us", s.rto_us.into_pyarray(py))?;
    ts.set_item("backoff", s.backoff.into_pyarray(py))?;
    ts.set_item("bytes_sent", s.bytes_sent.into_pyarray(py))?;
    ts.set_item("bytes_retrans", s.bytes_retrans.into_pyarray(py))?;
    ts.set_item("data_segs_out", s.data_segs_out.into_pyarray(py))?;
    ts.set_item("busy_us", s.busy_us.into_pyarray(py))?;
    ts.set_item("rwnd_limited_us", s.rwnd_limited_us.into_pyarray(py))?;
    ts.set_item("sndbuf_limited_us", s.sndbuf_limited_us.into_pyarray(py))?;
    ts.set_item("send_q_bytes", s.send_q_bytes.into_pyarray(py))?;
    ts.set_item("recv_q_bytes", s.recv_q_bytes.into_pyarray(py))?;
    d.set_item("timeseries", ts)?;

    let q = out.queues;
    let qs = PyDict::new(py);
    qs.set_item("t_ns", q.t_ns.into_pyarray(py))?;
    qs.set_item("link", q.link.into_pyarray(py))?;
    qs.set_item("backlog_packets", q.backlog_packets.into_pyarray(py))?;
    qs.set_item("backlog_bytes", q.backlog_bytes.into_pyarray(py))?;
    qs.set_item("drops", q.drops.into_pyarray(py))?;
    d.set_item("queue_timeseries", qs)?;

    // Hosts with a CPU or NIC model only (empty otherwise).
    let h = out.host_series;
    let hs = PyDict::new(py);
    hs.set_item("t_ns", h.t_ns.into_pyarray(py))?;
    hs.set_item("host", h.host.into_pyarray(py))?;
    hs.set_item("cpu_on", h.cpu_on.into_pyarray(py))?;
    hs.set_item("rx_ring_used", h.rx_ring_used.into_pyarray(py))?;
    hs.set_item("rx_dropped", h.rx_dropped.into_pyarray(py))?;
    hs.set_item("allowance_queued", h.allowance_queued.into_pyarray(py))?;
    d.set_item("host_series", hs)?;

    let names = PyDict::new(py);
    let states = [CaState::Open, CaState::Disorder, CaState::Cwr, CaState::Recovery, CaState::Loss];
    names.set_item("ca_state", states.map(|s| s.name()).to_vec())?;
    let modes = PyDict::new(py);
    modes.set_item("bbr", vec!["", "STARTUP", "DRAIN", "PROBE_BW", "PROBE_RTT"])?;
    names.set_item("cc_mode", modes)?;
    d.set_item("names", names)?;
    d.set_item("warnings", out.warnings)?;
    let apps = PyList::empty(py);
    for a in out.apps {
        let ad = PyDict::new(py);
        ad.set_item("name", &a.name)?;
        ad.set_item("kind", a.kind)?;
        let sd = PyDict::new(py);
        for (k, v) in &a.summary {
            sd.set_item(k, value_to_py(py, v)?)?;
        }
        ad.set_item("summary", sd)?;
        let tables = PyDict::new(py);
        for t in a.tables {
            let td = PyDict::new(py);
            for (name, col) in t.columns {
                match col {
                    Column::U64(v) => td.set_item(name, v.into_pyarray(py))?,
                    Column::F64(v) => td.set_item(name, v.into_pyarray(py))?,
                    Column::U32(v) => td.set_item(name, v.into_pyarray(py))?,
                    Column::Bool(v) => td.set_item(name, v.into_pyarray(py))?,
                    Column::Str(v) => td.set_item(name, v)?,
                }
            }
            tables.set_item(t.name, td)?;
        }
        ad.set_item("tables", tables)?;
        apps.append(ad)?;
    }
    d.set_item("apps", apps)?;
    match out.capture {
        None => d.set_item("capture", py.None())?,
        Some(c) => d.set_item("capture", capture_to_python(py, c)?)?,
    }
    Ok(d)
}

/// `SimConfig.capture`'s packets (`tcplab_core::capture`): `{"flow", "at", "node", "ep",
/// "truncated", "columns": {name: ndarray}}`, one row per packet in time order.
fn capture_to_python(py: Python<'_>, c: CaptureOutput) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("flow", c.flow)?;
    d.set_item("at", c.at.map(|a| a.name()))?;
    d.set_item("node", c.node)?;
    d.set_item("ep", c.ep)?;
    d.set_item("truncated", c.truncated)?;
    let cols = PyDict::new(py);
    cols.set_item("t_ns", c.t_ns.into_pyarray(py))?;
    cols.set_item("dir", c.dir.into_pyarray(py))?;
    cols.set_item("seq", c.seq.into_pyarray(py))?;
    cols.set_item("end_seq", c.end_seq.into_pyarray(py))?;
    cols.set_item("ack_seq", c.ack_seq.into_pyarray(py))?;
    cols.set_item("rwnd_bytes", c.rwnd_bytes.into_pyarray(py))?;
    cols.set_item("tsval_ns", c.tsval_ns.into_pyarray(py))?;
    cols.set_item("tsecr_ns", c.tsecr_ns.into_pyarray(py))?;
    cols.set_item("flags", c.flags.into_pyarray(py))?;
    cols.set_item("num_sacks", c.num_sacks.into_pyarray(py))?;
    for (b, (start, end)) in c.sack_start.into_iter().zip(c.sack_end).enumerate() {
        cols.set_item(format!("sack{b}_start"), start.into_pyarray(py))?;
        cols.set_item(format!("sack{b}_end"), end.into_pyarray(py))?;
    }
    cols.set_item("ip_bytes", c.ip_bytes.into_pyarray(py))?;
    cols.set_item("ip_id", c.ip_id.into_pyarray(py))?;
    d.set_item("columns", cols)?;
    let fl = PyDict::new(py);
    fl.set_item("syn", tcplab_core::packet::flags::SYN)?;
    fl.set_item("dsack", tcplab_core::packet::flags::DSACK)?;
    fl.set_item("retrans", tcplab_core::packet::flags::RETRANS)?;
    fl.set_item("fin", tcplab_core::packet::flags::FIN)?;
    d.set_item("flag_bits", fl)?;
    Ok(d)
}

/// An app summary value as a Python object (None, int, float, bool, str, dict, list).
fn value_to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::U64(x) => x.into_pyobject(py)?.into_any(),
        Value::F64(x) => x.into_pyobject(py)?.into_any(),
        Value::Bool(x) => pyo3::types::PyBool::new(py, *x).to_owned().into_any(),
        Value::Str(x) => x.into_pyobject(py)?.into_any(),
        Value::None => py.None().into_bound(py),
        Value::Map(items) => {
            let d = PyDict::new(py);
            for (k, x) in items {
                d.set_item(k, value_to_py(py, x)?)?;
            }
            d.into_any()
        }
        Value::List(items) => {
            let l = PyList::empty(py);
            for x in items {
                l.append(value_to_py(py, x)?)?;
            }
            l.into_any()
        }
    })
}

/// Run a simulation described by `config_json` (the resolved scenario).
#[pyfunction]
#[pyo3(signature = (config_json, progress=None))]
fn run<'py>(py: Python<'py>, config_json: &str, progress: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyDict>> {
    let cfg = SimConfig::from_json(config_json).map_err(PyValueError::new_err)?;
    let mut sim = Simulator::new(cfg).map_err(|e| {
        if e.starts_with("out of memory") {
            PyMemoryError::new_err(format!("engine: {e}"))
        } else {
            PyValueError::new_err(e)
        }
    })?;
    // The engine returns every EVENTS_PER_SLICE events; with the GIL released the binding
    // goes on until SIGNAL_CHECK_EVERY of wall time has passed (reading the clock costs
    // ~25 ns per slice, not per event), then takes the GIL and checks for signals: a pending
    // Ctrl-C or SIGTERM raises here (KeyboardInterrupt, or the handler's exception) within
    // milliseconds however long the run. The split does not change the run (the events run
    // in the same order; `sim::tests::an_event_budget_splits_a_run_without_changing_it`).
    let duration = sim.duration_ns();
    let progress_step = (duration / PROGRESS_STEPS).max(1);
    let mut progress_at = Instant::now();
    let mut progress_ns = 0u64;
    loop {
        let r = py.detach(|| {
            catch_unwind(AssertUnwindSafe(|| {
                let slice_start = Instant::now();
                loop {
                    let reached = sim.run_until_at_most(duration, EVENTS_PER_SLICE)?;
                    if reached || slice_start.elapsed() >= SIGNAL_CHECK_EVERY {
                        return Ok::<bool, tcplab_core::sim::SimError>(reached);
                    }
                }
            }))
        });
        let reached = match r {
            Err(e) => {
                return Err(PyRuntimeError::new_err(format!(
                    "engine panicked at simulated time {:.6} s: {}",
                    sim.now_rel_ns() as f64 / 1e9,
                    panic_message(e)
                )))
            }
            Ok(Err(e)) => return Err(PyMemoryError::new_err(format!("engine: {e}"))),
            Ok(Ok(reached)) => reached,
        };
        py.check_signals()?;
        if let Some(cb) = &progress {
            let now_ns = sim.now_rel_ns();
            if reached || now_ns >= progress_ns.saturating_add(progress_step) || progress_at.elapsed() >= PROGRESS_EVERY {
                cb.call1((now_ns, duration))?;
                progress_ns = now_ns;
                progress_at = Instant::now();
            }
        }
        if reached {
            break;
        }
    }
    let out = catch_unwind(AssertUnwindSafe(|| sim.finish()))
        .map_err(|e| PyRuntimeError::new_err(format!("engine panicked while collecting results: {}", panic_message(e))))?;
    to_python(py, out)
}

/// Check `config_json` as `run` would, without running: raises `ValueError` naming the
/// field, else returns the warnings a run would give. Lets the front catch before a run
/// anything the engine would refuse.
#[pyfunction]
fn validate(config_json: &str) -> PyResult<Vec<String>> {
    let cfg = SimConfig::from_json(config_json).map_err(PyValueError::new_err)?;
    Ok(cfg.warnings())
}

/// The engine's defaults: `{"tcp": {...}, "cc_params": {...}, "queue": {...},
/// "overhead_bytes": N, "sample_interval_ns": N}`, keyed as the engine config is.
#[pyfunction]
fn defaults(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let value = serde_json::json!({
        "tcp": TcpConfig::default(),
        "cc_params": CcParams::default(),
        "queue": QueueConfig::default(),
        "overhead_bytes": config::default_overhead(),
        "sample_interval_ns": config::default_sample_interval_ns(),
        "apps": {
            "rr": tcplab_core::app::rr::RrConfig::default(),
            "hls": tcplab_core::app::hls::HlsConfig::default(),
            "nfs_stream": tcplab_core::app::nfs::NfsConfig::default(),
            "batch_writer": tcplab_core::app::batch_writer::BatchWriterConfig::default(),
            "broadcast": tcplab_core::app::broadcast::BroadcastConfig::default(),
        },
    });
    py.import("json")?.call_method1("loads", (value.to_string(),))
}

/// The engine's estimate of what a run of `config_json` would hold in memory (bytes, by
/// part), without the other checks of `run`.
#[pyfunction]
fn estimate_memory<'py>(py: Python<'py>, config_json: &str) -> PyResult<Bound<'py, PyDict>> {
    let cfg = SimConfig::parse_json(config_json).map_err(PyValueError::new_err)?;
    let e = tcplab_core::memory::estimate(&cfg);
    let d = PyDict::new(py);
    d.set_item("sample_rows", e.sample_rows)?;
    d.set_item("series_bytes", e.series_bytes)?;
    d.set_item("endpoints_bytes", e.endpoints_bytes)?;
    d.set_item("packets_held", e.packets_held)?;
    d.set_item("packets_bytes", e.packets_bytes)?;
    d.set_item("hosts_bytes", e.hosts_bytes)?;
    d.set_item("total_bytes", e.total_bytes)?;
    d.set_item("max_memory_bytes", cfg.max_memory_bytes)?;
    Ok(d)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(defaults, m)?)?;
    m.add_function(wrap_pyfunction!(estimate_memory, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(delayline::delayline_main, m)?)?;
    m.add("__version__", env!("TCPLAB_ENGINE_VERSION"))?;
    Ok(())
}
