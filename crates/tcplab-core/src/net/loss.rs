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
//!
//! A [`LossWindow`] limits the random models (Bernoulli, Gilbert-Elliott) to a window of
//! scenario time `[start, end)`, judged by the time a packet leaves the serializer, as a
//! netem `loss` qdisc added at `start` (`tc qdisc add ... netem loss ...`) and removed at
//! `end`. Outside the window a packet passes without drawing a random number, so the
//! window changes nothing but this link's losses (every link has its own stream), and the
//! Gilbert-Elliott chain is in its Good state when the window opens, as a fresh netem
//! qdisc's is (Linux v6.12 net/sched/sch_netem.c: netem_init() zeroes `clg.state`,
//! TX_IN_GAP_PERIOD / GOOD_STATE).

use crate::config::{LossConfig, LossFilter, LossWindow};
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
    /// Engine-time window `[start, end)` in which the random models apply (the whole run
    /// by default; `end` = `u64::MAX` when the qdisc is never removed).
    window_start_ns: u64,
    window_end_ns: u64,
}

impl Loss {
    pub fn new(cfg: &LossConfig, filter: LossFilter, rng: Rng) -> Loss {
        let loss = Loss {
            filter,
            model: LossModel::new(cfg, rng),
            window_start_ns: 0,
            window_end_ns: u64::MAX,
        };
        match *cfg {
            // An outage is the loss of every packet, in a window of time: the window
            // mechanism of the random models, with a model that loses everything.
            LossConfig::Outage { start_ns, end_ns } => loss.with_window(LossWindow {
                start_ns,
                end_ns: Some(end_ns),
            }),
            _ => loss,
        }
    }

    /// Restrict the model to `window` of scenario time (validated to be used with the
    /// random models only).
    pub fn with_window(mut self, window: LossWindow) -> Loss {
        if !window.is_always() {
            let boot = crate::time::BOOT_NS;
            self.window_start_ns = crate::time::time_add(boot, window.start_ns);
            self.window_end_ns = window
                .end_ns
                .map_or(u64::MAX, |e| crate::time::time_add(boot, e));
        }
        self
    }

    /// The fate of `pkt`, which leaves the serializer at engine time `now_ns`.
    #[inline]
    pub fn judge(&mut self, pkt: &Packet, now_ns: u64) -> LossVerdict {
        if (self.filter.data_only && !pkt.is_data()) || pkt.ip_bytes < self.filter.min_ip_bytes {
            return LossVerdict::Pass;
        }
        if now_ns < self.window_start_ns || now_ns >= self.window_end_ns {
            return LossVerdict::Pass;
        }
        self.model.judge(pkt)
    }
}

#[derive(Debug)]
pub enum LossModel {
    None,
    Bernoulli {
        p: f64,
        rng: Rng,
    },
    GilbertElliott {
        p: f64,
        r: f64,
        h: f64,
        k: f64,
        bad: bool,
        rng: Rng,
    },
    DropList {
        sorted: Vec<u64>,
        next: usize,
        data_seen: u64,
    },
    /// Every packet lost (an outage: [`Loss`] applies it only within its window).
    All,
}

impl LossModel {
    pub fn new(cfg: &LossConfig, rng: Rng) -> LossModel {
        match cfg {
            LossConfig::None => LossModel::None,
            LossConfig::Bernoulli { p } if *p <= 0.0 => LossModel::None,
            LossConfig::Bernoulli { p } => LossModel::Bernoulli { p: *p, rng },
            LossConfig::GilbertElliott { p, r, h, k } => LossModel::GilbertElliott {
                p: *p,
                r: *r,
                h: *h,
                k: *k,
                bad: false,
                rng,
            },
            LossConfig::DropList { data_packets } => {
                let mut sorted = data_packets.clone();
                sorted.sort_unstable();
                sorted.dedup();
                LossModel::DropList {
                    sorted,
                    next: 0,
                    data_seen: 0,
                }
            }
            LossConfig::Outage { .. } => LossModel::All,
        }
    }

    #[inline]
    pub fn judge(&mut self, pkt: &Packet) -> LossVerdict {
        match self {
            LossModel::None => LossVerdict::Pass,
            LossModel::All => LossVerdict::Lost,
            LossModel::Bernoulli { p, rng } => {
                if rng.chance(*p) {
                    LossVerdict::Lost
                } else {
                    LossVerdict::Pass
                }
            }
            LossModel::GilbertElliott {
                p,
                r,
                h,
                k,
                bad,
                rng,
            } => {
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
            LossModel::DropList {
                sorted,
                next,
                data_seen,
            } => {
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
        Packet {
            ip_bytes: 1500,
            end_seq: 1448,
            ..Default::default()
        }
    }

    #[test]
    fn gilbert_elliott_mean_loss_matches_stationary_formula() {
        let (p, r, h, k) = (0.01, 0.3, 0.2, 1.0);
        let mut m = LossModel::new(
            &LossConfig::GilbertElliott { p, r, h, k },
            Rng::from_seed(9),
        );
        let n = 400_000;
        let lost = (0..n)
            .filter(|_| m.judge(&data()) == LossVerdict::Lost)
            .count() as f64
            / n as f64;
        let expect = (r * (1.0 - k) + p * (1.0 - h)) / (p + r);
        // Bursty losses: allow 10% relative error at 400k packets (~1000 bursts).
        assert!(
            (lost - expect).abs() < 0.1 * expect,
            "lost={lost} expect={expect}"
        );
    }

    fn ack() -> Packet {
        Packet {
            ip_bytes: 52,
            end_seq: 0,
            ..data()
        }
    }

    #[test]
    fn data_filter_never_loses_syns_or_acks_and_loses_data_at_p() {
        let p = 0.3;
        let filter = LossFilter {
            data_only: true,
            min_ip_bytes: 0,
        };
        let mut m = Loss::new(&LossConfig::Bernoulli { p }, filter, Rng::from_seed(3));
        let syn = Packet {
            flags: crate::packet::flags::SYN,
            ..ack()
        };
        let n = 100_000;
        let mut lost = 0;
        for _ in 0..n {
            assert_eq!(m.judge(&syn, 0), LossVerdict::Pass);
            assert_eq!(m.judge(&ack(), 0), LossVerdict::Pass);
            lost += (m.judge(&data(), 0) == LossVerdict::Lost) as u32;
        }
        // Binomial(n, p): 5 standard deviations.
        let sd = (n as f64 * p * (1.0 - p)).sqrt();
        assert!(
            (lost as f64 - n as f64 * p).abs() < 5.0 * sd,
            "lost {lost} of {n}"
        );
    }

    #[test]
    fn filtered_packets_do_not_draw_from_the_random_stream() {
        // The data packets' fate is the same with or without ACKs interleaved.
        let filter = LossFilter {
            data_only: true,
            min_ip_bytes: 0,
        };
        let mut alone = Loss::new(&LossConfig::Bernoulli { p: 0.5 }, filter, Rng::from_seed(5));
        let mut mixed = Loss::new(&LossConfig::Bernoulli { p: 0.5 }, filter, Rng::from_seed(5));
        for _ in 0..1000 {
            mixed.judge(&ack(), 0);
            assert_eq!(alone.judge(&data(), 0), mixed.judge(&data(), 0));
        }
    }

    #[test]
    fn size_filter_applies_from_min_ip_bytes() {
        let filter = LossFilter {
            data_only: false,
            min_ip_bytes: 101,
        };
        let mut m = Loss::new(&LossConfig::Bernoulli { p: 1.0 }, filter, Rng::from_seed(1));
        assert_eq!(
            m.judge(
                &Packet {
                    ip_bytes: 100,
                    ..data()
                },
                0
            ),
            LossVerdict::Pass
        );
        assert_eq!(
            m.judge(
                &Packet {
                    ip_bytes: 101,
                    ..ack()
                },
                0
            ),
            LossVerdict::Lost
        );
        assert_eq!(m.judge(&data(), 0), LossVerdict::Lost);
        // Without a filter every packet is subject to the loss.
        let mut all = Loss::new(
            &LossConfig::Bernoulli { p: 1.0 },
            LossFilter::default(),
            Rng::from_seed(1),
        );
        assert_eq!(all.judge(&ack(), 0), LossVerdict::Lost);
    }

    #[test]
    fn drop_list_counts_only_data_packets() {
        let mut m = LossModel::new(
            &LossConfig::DropList {
                data_packets: vec![1, 3],
            },
            Rng::from_seed(0),
        );
        let mut ack = data();
        ack.end_seq = 0;
        let verdicts: Vec<_> = (0..5)
            .map(|i| {
                if i == 2 {
                    assert_eq!(m.judge(&ack), LossVerdict::Pass);
                }
                m.judge(&data())
            })
            .collect();
        assert_eq!(
            verdicts,
            vec![
                LossVerdict::Pass,
                LossVerdict::Listed,
                LossVerdict::Pass,
                LossVerdict::Listed,
                LossVerdict::Pass
            ]
        );
    }

    #[test]
    fn outage_loses_every_packet_inside_its_window_and_none_outside() {
        // Scenario time [2 s, 5 s) is engine time [BOOT + 2 s, BOOT + 5 s).
        let boot = crate::time::BOOT_NS;
        let s = 1_000_000_000;
        let mut m = Loss::new(
            &LossConfig::Outage {
                start_ns: 2 * s,
                end_ns: 5 * s,
            },
            LossFilter::default(),
            Rng::from_seed(0),
        );
        let syn = Packet {
            flags: crate::packet::flags::SYN,
            ..ack()
        };
        for (t, lost) in [
            (0, false),
            (2 * s - 1, false),
            (2 * s, true),
            (3 * s, true),
            (5 * s - 1, true),
            (5 * s, false),
            (9 * s, false),
        ] {
            let expect = if lost {
                LossVerdict::Lost
            } else {
                LossVerdict::Pass
            };
            for p in [data(), ack(), syn] {
                assert_eq!(m.judge(&p, boot + t), expect, "t = {t} ns");
            }
        }
        // With the data filter, ACKs pass even inside the window.
        let filter = LossFilter {
            data_only: true,
            min_ip_bytes: 0,
        };
        let mut d = Loss::new(
            &LossConfig::Outage {
                start_ns: 0,
                end_ns: s,
            },
            filter,
            Rng::from_seed(0),
        );
        assert_eq!(d.judge(&ack(), boot), LossVerdict::Pass);
        assert_eq!(d.judge(&data(), boot), LossVerdict::Lost);
    }

    #[test]
    fn window_applies_random_loss_only_inside_and_draws_nothing_outside() {
        let boot = crate::time::BOOT_NS;
        let s = 1_000_000_000;
        let window = LossWindow {
            start_ns: 2 * s,
            end_ns: Some(5 * s),
        };
        for cfg in [
            LossConfig::Bernoulli { p: 1.0 },
            LossConfig::GilbertElliott {
                p: 1.0,
                r: 0.0,
                h: 0.0,
                k: 1.0,
            },
        ] {
            let mut m =
                Loss::new(&cfg, LossFilter::default(), Rng::from_seed(0)).with_window(window);
            for (t, lost) in [
                (0, false),
                (2 * s - 1, false),
                (2 * s, true),
                (5 * s - 1, true),
                (5 * s, false),
                (60 * s, false),
            ] {
                let expect = if lost {
                    LossVerdict::Lost
                } else {
                    LossVerdict::Pass
                };
                assert_eq!(m.judge(&data(), boot + t), expect, "{cfg:?} t = {t} ns");
            }
        }
        // No draws outside the window: the losses inside are those of a model that saw
        // only the in-window packets, however much traffic came before or after.
        let cfg = LossConfig::GilbertElliott {
            p: 0.05,
            r: 0.3,
            h: 0.0,
            k: 1.0,
        };
        let mut windowed =
            Loss::new(&cfg, LossFilter::default(), Rng::from_seed(7)).with_window(window);
        let mut fresh = Loss::new(&cfg, LossFilter::default(), Rng::from_seed(7));
        for i in 0..10_000u64 {
            assert_eq!(windowed.judge(&data(), boot + i * 100), LossVerdict::Pass);
        }
        let mut lost = 0;
        for i in 0..10_000u64 {
            let v = windowed.judge(&data(), boot + 2 * s + i * 100);
            assert_eq!(
                v,
                fresh.judge(&data(), boot + 2 * s + i * 100),
                "packet {i}"
            );
            lost += (v == LossVerdict::Lost) as u32;
        }
        assert!(lost > 0);
        // An open-ended window (qdisc never removed) keeps losing to the end.
        let mut open = Loss::new(
            &LossConfig::Bernoulli { p: 1.0 },
            LossFilter::default(),
            Rng::from_seed(0),
        )
        .with_window(LossWindow {
            start_ns: s,
            end_ns: None,
        });
        assert_eq!(open.judge(&data(), boot), LossVerdict::Pass);
        assert_eq!(open.judge(&data(), boot + 300 * s), LossVerdict::Lost);
    }
}
