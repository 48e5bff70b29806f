//! TCP, following Linux v6.12 (net/ipv4/tcp_*.c), one concept per file.
pub mod chrono;
pub mod input;
pub mod minmax;
pub mod output;
pub mod rate;
pub mod rate_sample;
pub mod reader;
pub mod receiver;
pub mod recovery;
pub mod rtt;
pub mod rtx_queue;
pub mod sock;
pub mod socket;
