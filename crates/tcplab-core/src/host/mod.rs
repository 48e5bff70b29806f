//! What runs on a host around TCP: its CPU time slices (`cpu`), its NIC's receive side
//! (`nic`, behind an optional cloud ingress allowance, `allowance`), and the two put
//! together per host (`model`, driven by `sim.rs`).
pub mod allowance;
pub mod cpu;
pub mod model;
pub mod nic;
