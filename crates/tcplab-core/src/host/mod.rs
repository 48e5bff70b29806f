//! What runs on a host around TCP.
pub mod shaper;
