//! What runs on a host around TCP: its CPU time slices (`cpu`), its NIC's receive side
//! (`nic`, behind an optional cloud ingress allowance, `allowance`), the two put together
//! per host (`model`, driven by `sim.rs`), GRO on its receive path (`gro`), and the EDT rate limiter of Cilium's Bandwidth
//! Manager on a node's device (`shaper`).
//!
//! Imports: the leaves only (`config`, `event`, `packet`, `time`).
pub mod allowance;
pub mod cpu;
pub mod gro;
pub mod model;
pub mod nic;
pub mod shaper;
