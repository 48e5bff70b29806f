//! Measurements: RTT histograms and columnar time series.
pub mod histogram;
pub mod timeseries;
