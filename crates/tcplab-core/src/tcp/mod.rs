//! TCP, following Linux v6.12 (net/ipv4/tcp_*.c), one concept per file.
//!
//! Imports: the leaves, `net` (a socket sends into the network), and `cc`: the
//! congestion-control hooks are called from TCP and read the socket's state, as in Linux
//! (tcp_input.c <-> tcp_cong.c), the one loop between rooms the engine allows. Never
//! `app` (which endpoint is which is `config::Side`), `sim` or `capture`.
pub mod chrono;
pub mod close;
pub mod ecn;
pub mod info;
pub mod input;
pub mod minmax;
pub mod output;
pub mod push;
pub mod rate;
pub mod rate_sample;
pub mod reader;
pub mod receiver;
pub mod recovery;
pub mod reno;
pub mod rtt;
pub mod rtx_queue;
pub mod sock;
pub mod socket;
