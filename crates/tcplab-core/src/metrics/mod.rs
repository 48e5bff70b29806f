//! Measurements: RTT histograms and columnar time series.
//!
//! A leaf. Imports: other leaves only; nothing above it (the simulator fills these
//! stores, they know nothing of it).
pub mod histogram;
pub mod timeseries;
