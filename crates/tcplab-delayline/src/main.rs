//! The standalone `tcplab-delayline` binary: the library's [`tcplab_delayline::main_with_args`]
//! with the process's arguments (see lib.rs and `--help`).

fn main() -> std::process::ExitCode {
    let status = tcplab_delayline::main_with_args(std::env::args().skip(1));
    std::process::ExitCode::from(u8::try_from(status).unwrap_or(1))
}
