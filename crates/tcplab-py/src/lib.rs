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
//! columns; else `capture` is None. `bounds() -> dict` gives the ranges the engine enforces
//! on the applications' parameters.
//!
//! The output dict is the engine's output structs (`tcplab_core::sim::SimOutput`) through
//! serde (`pythonize`), so the binding lists no field; the column stores are handed over as
//! NumPy arrays (`to_python`). Python checks the dict against its one declared schema
//! (`tcplab.engine.OUTPUT_SCHEMA`).

mod delayline;
mod scripted;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use numpy::IntoPyArray;
use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyMapping};
use pythonize::pythonize;

use tcplab_core::config::{self, CcParams, QueueConfig, SimConfig, TcpConfig};
use tcplab_core::metrics::columns::Column;
use tcplab_core::sim::{SimOutput, Simulator};

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

/// The run's output as a dict: the engine's version, then the engine's output structs
/// through serde (`tcplab_core::sim::SimOutput` and what it holds derive `Serialize`, so a
/// field added there reaches Python as it is, with no list here to edit). Serde leaves a
/// None where a column store goes (`timeseries`, `queue_timeseries`, `host_series`, the
/// capture's `columns`; each app's `tables` comes last); the store is put there as NumPy
/// arrays that take over the engine's buffers.
fn to_python<'py>(py: Python<'py>, out: SimOutput) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("version", env!("TCPLAB_ENGINE_VERSION"))?;
    d.update(&pythonize(py, &out)?.cast_into::<PyMapping>()?)?;
    let SimOutput {
        series,
        queues,
        host_series,
        apps,
        capture,
        ..
    } = out;
    d.set_item("timeseries", columns_dict(py, series.into_columns())?)?;
    d.set_item("queue_timeseries", columns_dict(py, queues.into_columns())?)?;
    d.set_item("host_series", columns_dict(py, host_series.into_columns())?)?;
    let app_dicts = output_item(&d, "apps")?.cast_into::<PyList>()?;
    for (i, app) in apps.into_iter().enumerate() {
        let tables = PyDict::new(py);
        for t in app.tables {
            tables.set_item(t.name, columns_dict(py, t.columns)?)?;
        }
        app_dicts.get_item(i)?.set_item("tables", tables)?;
    }
    if let Some(c) = capture {
        output_item(&d, "capture")?.set_item("columns", columns_dict(py, c.into_columns())?)?;
    }
    Ok(d)
}

/// `d[key]`, which serde wrote (an internal error if not).
fn output_item<'py>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<Bound<'py, PyAny>> {
    d.get_item(key)?
        .ok_or_else(|| PyRuntimeError::new_err(format!("engine output without {key}")))
}

/// Named columns as a dict: NumPy arrays that take over the `Vec`s (no copy), a list of
/// `str` for a string column.
fn columns_dict<'py, N: AsRef<str>>(
    py: Python<'py>,
    columns: Vec<(N, Column)>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, column) in columns {
        let name = name.as_ref();
        match column {
            Column::U64(v) => d.set_item(name, v.into_pyarray(py))?,
            Column::F64(v) => d.set_item(name, v.into_pyarray(py))?,
            Column::U32(v) => d.set_item(name, v.into_pyarray(py))?,
            Column::U16(v) => d.set_item(name, v.into_pyarray(py))?,
            Column::U8(v) => d.set_item(name, v.into_pyarray(py))?,
            Column::Bool(v) => d.set_item(name, v.into_pyarray(py))?,
            Column::Str(v) => d.set_item(name, v)?,
        }
    }
    Ok(d)
}

/// `config_json` parsed and checked (`tcplab_core::sim::validate`); a refusal is a
/// `ValueError` naming the field.
fn checked_config(config_json: &str) -> PyResult<SimConfig> {
    let cfg = SimConfig::parse_json(config_json).map_err(PyValueError::new_err)?;
    tcplab_core::sim::validate(&cfg).map_err(PyValueError::new_err)?;
    Ok(cfg)
}

/// Run a simulation described by `config_json` (the resolved scenario).
#[pyfunction]
#[pyo3(signature = (config_json, progress=None))]
fn run<'py>(
    py: Python<'py>,
    config_json: &str,
    progress: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let cfg = checked_config(config_json)?;
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
            if reached
                || now_ns >= progress_ns.saturating_add(progress_step)
                || progress_at.elapsed() >= PROGRESS_EVERY
            {
                cb.call1((now_ns, duration))?;
                progress_ns = now_ns;
                progress_at = Instant::now();
            }
        }
        if reached {
            break;
        }
    }
    let out = catch_unwind(AssertUnwindSafe(|| sim.finish())).map_err(|e| {
        PyRuntimeError::new_err(format!(
            "engine panicked while collecting results: {}",
            panic_message(e)
        ))
    })?;
    to_python(py, out)
}

/// Check `config_json` as `run` would, without running: raises `ValueError` naming the
/// field, else returns the warnings a run would give. Lets the front catch before a run
/// anything the engine would refuse.
#[pyfunction]
fn validate(config_json: &str) -> PyResult<Vec<String>> {
    let cfg = checked_config(config_json)?;
    Ok(tcplab_core::sim::warnings(&cfg))
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
            "rr": config::apps::RrConfig::default(),
            "hls": config::apps::HlsConfig::default(),
            "nfs_stream": config::apps::NfsConfig::default(),
            "batch_writer": config::apps::BatchWriterConfig::default(),
            "broadcast": config::apps::BroadcastConfig::default(),
        },
    });
    Ok(pythonize(py, &value)?)
}

/// The ranges the engine's checks of the applications' parameters enforce, as data
/// (`tcplab_core::app::bounds`): `{"fields": {kind: {field: {"lo", "hi", "lo_exclusive",
/// "multiple_of"}}}, "connections": {kind: {"lo", "hi"}}, "choices": {kind: {field:
/// [names]}}}`; a limit is a number, another field's name, or None (unbounded). Python's
/// mirror (`tcplab.scenario.app_bounds`) is tested against it both ways.
#[pyfunction]
fn bounds(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    Ok(pythonize(
        py,
        &tcplab_core::app::bounds::bounds().to_json(),
    )?)
}

/// The engine's estimate of what a run of `config_json` would hold in memory (bytes, by
/// part), without the other checks of `run`.
#[pyfunction]
fn estimate_memory<'py>(py: Python<'py>, config_json: &str) -> PyResult<Bound<'py, PyDict>> {
    let cfg = SimConfig::parse_json(config_json).map_err(PyValueError::new_err)?;
    let e = tcplab_core::memory::estimate(&cfg);
    let d = pythonize(py, &e)?.cast_into::<PyDict>()?;
    d.set_item("max_memory_bytes", cfg.max_memory_bytes)?;
    Ok(d)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(defaults, m)?)?;
    m.add_function(wrap_pyfunction!(estimate_memory, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(bounds, m)?)?;
    m.add_function(wrap_pyfunction!(delayline::delayline_main, m)?)?;
    m.add_class::<scripted::ScriptedHost>()?;
    m.add("__version__", env!("TCPLAB_ENGINE_VERSION"))?;
    Ok(())
}
