//! The engine's behaviour tests, one module per concern, in one test binary.
//!
//! Why one binary: cargo links every file directly under `tests/` as a test executable of
//! its own, each with the whole engine and thin LTO (`profile.release-checks`). With 22
//! files that was 22 links of the engine; `make test` spent most of its Rust build there
//! (measured on 2 cores: about 390 CPU-seconds to build the workspace's tests, against
//! about 85 with one binary; issue 21 item 14). The modules keep their files and names;
//! `cargo test --profile release-checks -p tcplab-core --test engine MODULE::` runs one.
//!
//! A new test file goes here and gets its `mod` line below (a file left directly under
//! `tests/` still builds and runs, as a binary of its own).

mod common;

mod app_batch_writer;
mod app_broadcast;
mod app_bulk;
mod app_compose;
mod app_hls;
mod app_nfs;
mod app_rr;
mod bbr_behaviour;
mod bbr_model;
mod capture;
mod cubic_model;
mod ecn;
mod edt_shaper;
mod host_cpu;
mod host_cpu_cost;
mod host_gro;
mod host_nic;
mod host_tso;
mod hz;
mod layout;
mod loss_response;
mod qdisc_fq;
mod qdisc_fq_codel;
mod qdisc_tbf;
mod slow_reader;
mod tcp_behaviour;
mod tcp_mechanisms;
