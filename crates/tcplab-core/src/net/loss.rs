//! Loss models applied to packets as they leave a link's serializer.
//!
//! - `None`: lossless.
//! - `Bernoulli { p }`: each packet lost independently (netem `loss random p`).
//! - Gilbert-Elliott: a two-state Markov chain evaluated once per packet, with netem's
//!   `loss gemodel p r 1-h 1-k` meaning: from Good go Bad with probability `p`, from Bad
//!   go Good with `r`; a packet is lost with probability `1-k` in Good and `1-h` in Bad.
//!   The mean loss rate is `(r(1-k) + p(1-h)) / (p + r)`.
//! - `DropList`: drop exactly the listed data packets (0-based count of data packets that
//!   entered the link), for tests that need a loss at a known place.
//! - `Outage { start_ns, end_ns }`: every packet leaving the serializer in that window of
//!   scenario time is lost, none outside it (a path that is down for a while, as netem
//!   `loss 100%` added and later removed); judged by the packet's serialization end time.
//!
//! Each link owns its own random stream, so losses on one link never depend on traffic
//! elsewhere.
//!
//! A [`LossFilter`] restricts the random models to data segments and/or to packets of at
//! least a given IP length, as loss is commonly emulated with nftables (`tcp` payload
//! matches, `meta length`) to keep SYNs and pure ACKs safe. A packet outside the filter
//! passes without drawing a random number, so filtered-out traffic does not shift the
//! loss pattern of the packets it applies to.

use crate::config::{LossConfig, LossFilter};
use crate::packet::Packet;
use crate::rng::Rng;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossVerdict {
    Pass,
    Lost,
    /// Dropped because the drop list named it.
    Listed,
}

#[derive(Debug)]
pub struct Loss {
    filter: LossFilter,
    model: LossModel,
}

impl Loss {
    pub fn new(cfg: &LossConfig, filter: LossFilter, rng: Rng) -> Loss {
        Loss { filter, model: LossModel::new(cfg, rng) }
    }

    /// The fate of `pkt`, which leaves the serializer at engine time `now_ns`.
    #[inline]
    pub fn judge(&mut self, pkt: &Packet, now_ns: u64) -> LossVerdict {
        if (self.filter.data_only && !pkt.is_data()) || pkt.ip_bytes < self.filter.min_ip_bytes {
            return LossVerdict::Pass;
        }
        self.model.judge(pkt, now_ns)
    }
}

#[derive(Debug)]
pub enum LossModel {
    None,
    Bernoulli { p: f64, rng: Rng },
    GilbertElliott { p: f64, r: f64, h: f64, k: f64, bad: bool, rng: Rng },
    DropList { sorted: Vec<u64>, next: usize, data_seen: u64 },
    /// Engine-time window `[start, end)` in which every packet is lost.
    Outage { start: u64, end: u64 },
}

impl LossModel {
    pub fn new(cfg: &LossConfig, rng: Rng) -> LossModel {
        match cfg {
            LossConfig::None => LossModel::None,
            LossConfig::Bernoulli { p } if *p <= 0.0 => LossModel::None,
            LossConfig::Bernoulli { p } => LossModel::Bernoulli { p: *p, rng },
            LossConfig::GilbertElliott { p, r, h, k } => {
                LossModel::GilbertElliott { p: *p, r: *r, h: *h, k: *k, bad: false, rng }
            }
            LossConfig::DropList { data_packets } => {
                let mut sorted = data_packets.clone();
                sorted.sort_unstable();
                sorted.dedup();
                LossModel::DropList { sorted, next: 0, data_seen: 0 }
            }
            LossConfig::Outage { start_ns, end_ns } => {
                let boot = crate::sim::BOOT_NS;
                LossModel::Outage { start: crate::time::time_add(boot, *start_ns), end: crate::time::time_add(boot, *end_ns) }
            }
        }
    }

    #[inline]
    pub fn judge(&mut self, pkt: &Packet, now_ns: u64) -> LossVerdict {
        match self {
            LossModel::None => LossVerdict::Pass,
            LossModel::Outage { start, end } => {
                if (*start..*end).contains(&now_ns) {
                    LossVerdict::Lost
                } else {
                    LossVerdict::Pass
                }
            }
            LossModel::Bernoulli { p, rng } => {
                if rng.chance(*p) {
                    LossVerdict::Lost
                } else {
                    LossVerdict::Pass
                }
            }
            LossModel::GilbertElliott { p, r, h, k, bad, rng } => {
                // netem's get_loss_event(CLG_GILB_ELL): transition first, then lose.
                if *bad {
                    if rng.chance(*r) {
                        *bad = false;
                    }
                } else if rng.chance(*p) {
                    *bad = true;
                }
                let loss_p = if *bad { 1.0 - *h } else { 1.0 - *k };
                if rng.chance(loss_p) {
                    LossVerdict::Lost
                } else {
                    LossVerdict::Pass
                }
            }
            LossModel::DropList { sorted, next, data_seen } => {
                if !pkt.is_data() {
                    return LossVerdict::Pass;
                }
                let idx = *data_seen;
                *data_seen += 1;
                if *next < sorted.len() && sorted[*next] == idx {
                    *next += 1;
                    LossVerdict::Listed
                } else {
                    LossVerdict::Pass
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> Packet {
        Packet { ip_bytes: 1500, end_seq: 1448, ..Default::default() }
    }

    #[test]
    fn gilbert_elliott_mean_loss_matches_stationary_formula() {
        let (p, r, h, k) = (0.01, 0.3, 0.2, 1.0);
        let mut m = LossModel::new(&LossConfig::GilbertElliott { p, r, h, k }, Rng::from_seed(9));
        let n = 400_000;
        let lost = (0..n).filter(|_| m.judge(&data(), 0) == LossVerdict::Lost).count() as f64 / n as f64;
        let expect = (r * (1.0 - k) + p * (1.0 - h)) / (p + r);
        // Bursty losses: allow 10% relative error at 400k packets (~1000 bursts).
        assert!((lost - expect).abs() < 0.1 * expect, "lost={lost} expect={expect}");
    }

    fn ack() -> Packet {
        Packet { ip_bytes: 52, end_seq: 0, ..data() }
    }

    #[test]
    fn data_filter_never_loses_syns_or_acks_and_loses_data_at_p() {
        let p = 0.3;
        let filter = LossFilter { data_only: true, min_ip_bytes: 0 };
        let mut m = Loss::new(&LossConfig::Bernoulli { p }, filter, Rng::from_seed(3));
        let syn = Packet { flags: crate::packet::flags::SYN, ..ack() };
        let n = 100_000;
        let mut lost = 0;
        for _ in 0..n {
            assert_eq!(m.judge(&syn, 0), LossVerdict::Pass);
            assert_eq!(m.judge(&ack(), 0), LossVerdict::Pass);
            lost += (m.judge(&data(), 0) == LossVerdict::Lost) as u32;
        }
        // Binomial(n, p): 5 standard deviations.
        let sd = (n as f64 * p * (1.0 - p)).sqrt();
        assert!((lost as f64 - n as f64 * p).abs() < 5.0 * sd, "lost {lost} of {n}");
    }

    #[test]
    fn filtered_packets_do_not_draw_from_the_random_stream() {
        // The data packets' fate is the same with or without ACKs interleaved.
        let filter = LossFilter { data_only: true, min_ip_bytes: 0 };
        let mut alone = Loss::new(&LossConfig::Bernoulli { p: 0.5 }, filter, Rng::from_seed(5));
        let mut mixed = Loss::new(&LossConfig::Bernoulli { p: 0.5 }, filter, Rng::from_seed(5));
        for _ in 0..1000 {
            mixed.judge(&ack(), 0);
            assert_eq!(alone.judge(&data(), 0), mixed.judge(&data(), 0));
        }
    }

    #[test]
    fn size_filter_applies_from_min_ip_bytes() {
        let filter = LossFilter { data_only: false, min_ip_bytes: 101 };
        let mut m = Loss::new(&LossConfig::Bernoulli { p: 1.0 }, filter, Rng::from_seed(1));
        assert_eq!(m.judge(&Packet { ip_bytes: 100, ..data() }, 0), LossVerdict::Pass);
        assert_eq!(m.judge(&Packet { ip_bytes: 101, ..ack() }, 0), LossVerdict::Lost);
        assert_eq!(m.judge(&data(), 0), LossVerdict::Lost);
        // Without a filter every packet is subject to the loss.
        let mut all = Loss::new(&LossConfig::Bernoulli { p: 1.0 }, LossFilter::default(), Rng::from_seed(1));
        assert_eq!(all.judge(&ack(), 0), LossVerdict::Lost);
    }

    #[test]
    fn drop_list_counts_only_data_packets() {
        let mut m = LossModel::new(&LossConfig::DropList { data_packets: vec![1, 3] }, Rng::from_seed(0));
        let mut ack = data();
        ack.end_seq = 0;
        let verdicts: Vec<_> = (0..5).map(|i| {
            if i == 2 { assert_eq!(m.judge(&ack, 0), LossVerdict::Pass); }
            m.judge(&data(), 0)
        }).collect();
        assert_eq!(verdicts, vec![LossVerdict::Pass, LossVerdict::Listed, LossVerdict::Pass, LossVerdict::Listed, LossVerdict::Pass]);
    }

    #[test]
    fn outage_loses_every_packet_inside_its_window_and_none_outside() {
        // Scenario time [2 s, 5 s) is engine time [BOOT + 2 s, BOOT + 5 s).
        let boot = crate::sim::BOOT_NS;
        let s = 1_000_000_000;
        let mut m = Loss::new(&LossConfig::Outage { start_ns: 2 * s, end_ns: 5 * s }, LossFilter::default(), Rng::from_seed(0));
        let syn = Packet { flags: crate::packet::flags::SYN, ..ack() };
        for (t, lost) in [(0, false), (2 * s - 1, false), (2 * s, true), (3 * s, true), (5 * s - 1, true), (5 * s, false), (9 * s, false)] {
            let expect = if lost { LossVerdict::Lost } else { LossVerdict::Pass };
            for p in [data(), ack(), syn] {
                assert_eq!(m.judge(&p, boot + t), expect, "t = {t} ns");
            }
        }
        // With the data filter, ACKs pass even inside the window.
        let filter = LossFilter { data_only: true, min_ip_bytes: 0 };
        let mut d = Loss::new(&LossConfig::Outage { start_ns: 0, end_ns: s }, filter, Rng::from_seed(0));
        assert_eq!(d.judge(&ack(), boot), LossVerdict::Pass);
        assert_eq!(d.judge(&data(), boot), LossVerdict::Lost);
    }
}
