//! `tcplab._core.delayline_main(argv)`: kernel mode's delay line (crates/tcplab-delayline)
//! inside the extension, so a `pip install` of tcplab carries it without a separate
//! executable. python/tcplab/kernel/delayline_main.py runs it as a process of its own
//! (`python -m tcplab.kernel.delayline_main --tun ...`): it pins, schedules and names the
//! calling thread and blocks SIGTERM/SIGINT for the process, which is only right in a
//! process that does nothing else.

use pyo3::prelude::*;

/// Runs the delay line with `argv` (its options, without a program name) until SIGTERM or
/// SIGINT and returns its exit status (0, or 1 with the reason on stderr). The GIL is
/// released for the whole run.
#[pyfunction]
pub fn delayline_main(py: Python<'_>, argv: Vec<String>) -> i32 {
    py.detach(|| tcplab_delayline::main_with_args(argv))
}
