//! # tcplab-core
//!
//! A deterministic discrete-event packet simulator whose TCP, CUBIC and BBR follow the
//! Linux kernel (pinned: **v6.12 LTS**; every ported block cites its file and function).
//!
//! ## Model
//! - **Time** is integer nanoseconds ([`time`]); the kernel's microsecond and jiffy clocks
//!   are derived from it exactly where the kernel uses them, jiffies at each host's `HZ`.
//! - **Events** ([`event`]) are ordered by `(time, insertion sequence)`, so a scenario and
//!   a seed always give the same run, byte for byte.
//! - **Randomness** ([`rng`]): one xoshiro256++ stream per component, seeded from the
//!   scenario seed and the component's name.
//! - **Network** ([`net`]): nodes (hosts and routers) joined by one-way links; each link
//!   has an egress qdisc, a serializer at `rate_bps`, a loss model, optional reordering
//!   and a propagation delay. Routes are static shortest paths.
//! - **TCP** ([`tcp`]): sender and receiver halves as in Linux: SACK scoreboard, RACK-TLP,
//!   PRR, RTO with backoff, delayed/quick ACK, receive-window autotuning, delivery-rate
//!   sampling, pacing (EDT), TSQ and slow start after idle.
//! - **Congestion control** ([`cc`]): a trait shaped like `tcp_congestion_ops` with Reno,
//!   CUBIC (tcp_cubic.c with HyStart) and BBRv1 (tcp_bbr.c).
//! - **Capture** ([`capture`]): optionally, one flow's packets as tcpdump on one of its
//!   hosts would see them (headers only; the Python front writes the pcap).
//! - **Applications** ([`app`]) drive sockets; **metrics** ([`metrics`]) record columnar
//!   time series and nstat-named counters without allocating per packet.
//!
//! ## Floor plan
//! `sim` (the top) drives [`app`], [`tcp`] and [`cc`], which sit on [`net`] and [`host`],
//! which sit on the leaves: [`config`] (the schema every room reads), [`event`], [`rng`],
//! [`time`], [`packet`], [`mib`], [`metrics`]. A leaf imports no room above it; `net` and
//! `host` import only leaves (and `net` -> `host` for the EDT shaper); no room imports
//! `sim`; no two rooms import each other but `tcp` <-> `cc`, as in Linux. Each room's
//! header says what it imports, and `tests/engine/layout.rs` checks it by reading the
//! sources.
//!
//! The crate has no Python and no I/O: `tcplab-py` binds it, the `tcplab` Python package
//! owns the user-facing API.

pub mod app;
pub mod capture;
pub mod cc;
pub mod config;
pub mod event;
pub mod host;
pub mod memory;
pub mod metrics;
pub mod mib;
pub mod net;
pub mod packet;
pub mod rng;
pub mod sim;
pub mod tcp;
pub mod time;
