//! TCP, following Linux v6.6 (net/ipv4/tcp_*.c), one concept per file.
pub mod minmax;
pub mod rate_sample;
pub mod sock;
