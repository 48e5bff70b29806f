//! A host that does not always have its CPU: periodic time slices, as a VM's vCPU gets
//! under contention (CPU steal).
//!
//! The host runs for `on_ns = share x period_ns` of every period, in one slice starting
//! `phase_ns` into the period (scenario time 0 is the start of period 0), and is off the
//! rest of the period. While it is off nothing of the host runs (see `sim.rs` dispatch):
//! TCP's timers (retransmit, delayed ACK, pacing), the application, TSQ completions (they
//! run in softirq context: `tcp_wfree()` -> `tcp_tasklet_func()`), the dequeues of a timed
//! qdisc on its egress, and the NIC's interrupt and NAPI polls (`host::nic`). Each of them
//! is moved to the start of the next slice. Packets the host already handed to a link
//! keep going: on the FIFO fast path a packet is on the device's transmit ring or on the
//! wire as soon as TCP sends it (the NIC's DMA does not need the vCPU), and packets on
//! the wire towards the host keep arriving (into its NIC ring, which fills).
//!
//! The off time is what `/proc/stat` shows as `steal` in the guest; it is accounted
//! analytically over the run (`on_ns_between`), no event per slice.
//!
//! A share of 100 % is normalised to "no CPU model": [`CpuModel::new`] returns `None`,
//! so such a host costs nothing and its results are byte-identical to a host without
//! `cpu`. `validate` refuses a share below 1 whose off time rounds to 0 ns (it would
//! silently be 100 %).
//!
//! Simplifications: one vCPU per host, and the slices are strictly periodic (a real
//! hypervisor's scheduler jitters).
//!
//! # The CPU cost of packets
//!
//! A host's network stack takes CPU time, accounted in one [`CpuAccount`] per host (its
//! one vCPU): the work is serialized, each piece starting when the CPU is free of the
//! previous ones and on (a slice), taking its cost, paused while the host is off; what it
//! produces happens when it ends. Three costs (`hosts.NAME.cpu.cost`, engine
//! [`CpuCostConfig`]):
//! - `tx_skb_ns` per skb sent (TCP's `tcp_transmit_skb()`, the qdisc and the driver's
//!   `ndo_start_xmit()`: Linux v6.12 net/ipv4/tcp_output.c -> net/core/dev.c:
//!   `__dev_queue_xmit()`), data or pure ACK: the skb reaches its host's egress link when
//!   the work ends. Linux's `tcp_write_xmit()` builds the next skb only once the
//!   CPU is done with the last one (the path is synchronous); tcplab's loop runs at one
//!   instant, so a socket whose host's CPU still has an skb to transmit stops there
//!   (`Network::cpu_throttle`, the socket's `cpu_throttled`) and goes on when that work is
//!   done (`sim.rs`), each waiting socket in turn, and only once the NIC's NAPI round is
//!   over (the receive softirq runs before the sender's process context; the ACKs it
//!   processes send from softirq themselves). So the skb's timestamps are those of its
//!   transmit work, as in Linux, and a CPU-bound sender's queue is its unsent data and
//!   the ACKs waiting in its receive ring, not skbs waiting for the CPU. A TSO skb of 40 segments is one skb: the NIC cuts the frames, which is
//!   the offload's whole point. (With GSO in software the stack cuts them, a per-frame cost
//!   tcplab does not model yet: it has no `gso` switch apart from `tso`.)
//! - `rx_packet_ns` per packet received (the driver's NAPI poll, `netif_receive_skb()`, IP,
//!   GRO): the NIC's per-packet poll cost (`host::nic`); `nic.rx_cost_ns` is the same
//!   parameter under its older name, used when the host has no `cost`.
//! - `rx_skb_ns` per skb TCP receives (`tcp_v4_rcv()` .. `tcp_rcv_established()`): one per
//!   packet with GRO off, added to that packet's poll so TCP gets it when both are done;
//!   one per GRO aggregate with GRO on, charged when the flush hands the aggregate to TCP
//!   (simplified: TCP sees the aggregate at the flush and the CPU's next work waits for its
//!   cost, rather than TCP seeing it `rx_skb_ns` later: the CPU time is the same).
//!
//! A host whose stack needs more than its share is capped at `share / cost` skbs (or
//! packets) per second of run; a receiver's ring fills behind its CPU and drops
//! (`host::nic`). Costs apply only to a host with a `cost` (a `nic` alone keeps its
//! `rx_cost_ns` and nothing else, as before), so scenarios without one are unchanged.
//!
//! Defaults (the Python scenario model's, `cpu.cost: {}`): `tx_skb` 1 us, `rx_packet`
//! 0.5 us, `rx_skb` 0.5 us: about 1 us per MTU packet each way on one core with the
//! offloads off, the order of the per-packet cost of Linux's stack that Cai et al.,
//! "Understanding Host Network Stack Overheads" (SIGCOMM 2021) measure (a single core no
//! longer keeps up with a fast link once TSO/GRO are off, and the per-packet part shrinks
//! to a per-skb part with them on), and the NIC model's 1 us per packet with GRO off. They
//! are round figures of that order, not a measurement of one machine: set them from
//! `perf` on the host being modelled.
//!
//! Not modelled: the cost of forwarding beyond the receive poll (a forwarded packet costs
//! `rx_packet_ns` only), of the application's `recvmsg()` copy, of timers, and of a
//! second core (RPS/RFS).

use crate::config::{CpuConfig, CpuCostConfig};

/// The one CPU-time account of a host's stack (module docs, "The CPU cost of packets").
#[derive(Clone, Debug, Default)]
pub struct CpuAccount {
    /// When the work queued so far is done (the CPU is free from then).
    pub free_at_ns: u64,
    /// CPU time the stack used over the run, ns (every cost charged).
    pub busy_ns: u64,
    pub tx_skb_ns: u64,
    /// Per frame beyond an skb's first, when software GSO cuts it (`tso` off); 0 with TSO.
    pub tx_gso_frame_ns: u64,
    pub rx_packet_ns: u64,
    pub rx_skb_ns: u64,
}

impl CpuAccount {
    /// The account of a host with costs `cost` (or only the NIC's `rx_cost_ns`); `tso`:
    /// the NIC cuts skbs into frames, so they cost no `tx_gso_frame_ns`.
    pub fn new(cost: Option<&CpuCostConfig>, nic_rx_cost_ns: u64, tso: bool) -> CpuAccount {
        match cost {
            Some(c) => CpuAccount {
                tx_skb_ns: c.tx_skb_ns,
                tx_gso_frame_ns: if tso { 0 } else { c.tx_gso_frame_ns },
                rx_packet_ns: c.rx_packet_ns,
                rx_skb_ns: c.rx_skb_ns,
                ..Default::default()
            },
            None => CpuAccount {
                rx_packet_ns: nic_rx_cost_ns,
                ..Default::default()
            },
        }
    }

    /// `work_ns` of stack work asked for at `t_ns`: it starts once the CPU is free and on,
    /// and this is when it ends (its result is used then).
    #[inline]
    pub fn run(&mut self, cpu: Option<&CpuModel>, t_ns: u64, work_ns: u64) -> u64 {
        let start = t_ns.max(self.free_at_ns);
        let done = match cpu {
            Some(c) => c.after_on(start, work_ns),
            None => start.saturating_add(work_ns),
        };
        self.free_at_ns = done;
        self.busy_ns += work_ns;
        done
    }
}

#[derive(Clone, Debug)]
pub struct CpuModel {
    pub period_ns: u64,
    /// CPU time per period, ns (0 < on_ns < period_ns).
    pub on_ns: u64,
    pub phase_ns: u64,
    /// Engine time of scenario t = 0 (the start of period 0).
    origin_ns: u64,
}

impl CpuModel {
    /// The model of `cfg`, or `None` when the host is always on (share 100 %).
    pub fn new(cfg: &CpuConfig, origin_ns: u64) -> Option<CpuModel> {
        let on_ns = (cfg.share * cfg.period_ns as f64).round() as u64;
        if on_ns >= cfg.period_ns {
            return None;
        }
        Some(CpuModel {
            period_ns: cfg.period_ns,
            on_ns: on_ns.max(1),
            phase_ns: cfg.phase_ns,
            origin_ns,
        })
    }

    /// Time since the start of the slice that precedes `t` (its period index and offset).
    #[inline]
    fn pos(&self, t_ns: u64) -> (u64, u64) {
        // Shift so that slices start at multiples of the period; t >= origin always.
        let y = t_ns.saturating_sub(self.origin_ns) + (self.period_ns - self.phase_ns);
        (y / self.period_ns, y % self.period_ns)
    }

    /// Is the host on its CPU at `t_ns`? (A slice is `[start, start + on_ns)`.)
    #[inline]
    pub fn is_on(&self, t_ns: u64) -> bool {
        self.pos(t_ns).1 < self.on_ns
    }

    /// `t_ns` if the host is on then, else the start of its next slice.
    #[inline]
    pub fn next_on(&self, t_ns: u64) -> u64 {
        let (_, x) = self.pos(t_ns);
        if x < self.on_ns {
            t_ns
        } else {
            t_ns + (self.period_ns - x)
        }
    }

    /// CPU time the host had from the origin (shifted) up to `t_ns`.
    fn on_time_until(&self, t_ns: u64) -> u128 {
        let (k, x) = self.pos(t_ns);
        k as u128 * self.on_ns as u128 + x.min(self.on_ns) as u128
    }

    /// CPU time the host has in `[a_ns, b_ns)`.
    pub fn on_ns_between(&self, a_ns: u64, b_ns: u64) -> u64 {
        if b_ns <= a_ns {
            return 0;
        }
        (self.on_time_until(b_ns) - self.on_time_until(a_ns)) as u64
    }

    /// When `work_ns` of CPU time, starting at `t_ns`, is done and its result can be used:
    /// the work pauses while the host is off. Work that ends exactly at a slice's end
    /// (slices are `[start, start + on_ns)`) is used at the start of the next slice, so
    /// whatever runs then (TCP) never runs at an instant the host is off. With no work,
    /// the next moment the host is on.
    pub fn after_on(&self, t_ns: u64, work_ns: u64) -> u64 {
        if work_ns == 0 {
            return self.next_on(t_ns);
        }
        let target = self.on_time_until(t_ns) + work_ns as u128;
        let (p, on) = (self.period_ns as u128, self.on_ns as u128);
        let (k, r) = (target / on, target % on);
        // Shifted time at which the cumulative CPU time reaches `target`; with r == 0 it
        // is reached at the end of slice k - 1, and k x p is the start of slice k.
        let y = k * p + r;
        let shift = (self.period_ns - self.phase_ns) as u128;
        (y - shift + self.origin_ns as u128).min(u64::MAX as u128) as u64
    }
}

/// Checks of a `cpu` block, `at` being its path (`nodes.3.cpu`).
pub fn validate(cfg: &CpuConfig, at: &str) -> Result<(), String> {
    if !(cfg.share > 0.0 && cfg.share <= 1.0) {
        return Err(format!(
            "{at}.share: {} is outside (0, 1] (a fraction of the CPU: 0.35 for 35 %)",
            cfg.share
        ));
    }
    if cfg.period_ns == 0 || cfg.period_ns > crate::config::MAX_DELAY_NS {
        return Err(format!(
            "{at}.period_ns: {} is outside [1, {}] ns (one hour)",
            cfg.period_ns,
            crate::config::MAX_DELAY_NS
        ));
    }
    if cfg.phase_ns >= cfg.period_ns {
        return Err(format!(
            "{at}.phase_ns: {} is not below period_ns ({})",
            cfg.phase_ns, cfg.period_ns
        ));
    }
    if cfg.share < 1.0 && (cfg.share * cfg.period_ns as f64).round() < 1.0 {
        return Err(format!(
            "{at}.share: {} of a {} ns period is below 1 ns of CPU per period; expected a larger share or period",
            cfg.share, cfg.period_ns
        ));
    }
    if cfg.share < 1.0 && (cfg.share * cfg.period_ns as f64).round() >= cfg.period_ns as f64 {
        return Err(format!(
            "{at}.share: {} of a {} ns period rounds to the whole period (no off time); expected 1.0 or a longer period",
            cfg.share, cfg.period_ns
        ));
    }
    Ok(())
}

/// Checks of a `cpu_cost` block, `at` being its path (`nodes.3.cpu_cost`): each cost
/// within [0, 1 s] (a second of CPU per packet is far beyond any stack).
pub fn validate_cost(cfg: &CpuCostConfig, at: &str) -> Result<(), String> {
    for (name, v) in [
        ("tx_skb_ns", cfg.tx_skb_ns),
        ("rx_packet_ns", cfg.rx_packet_ns),
        ("rx_skb_ns", cfg.rx_skb_ns),
        ("tx_gso_frame_ns", cfg.tx_gso_frame_ns),
    ] {
        if v > 1_000_000_000 {
            return Err(format!("{at}.{name}: {v} is outside [0, 1000000000] ns"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const O: u64 = 1_000_000_000;

    fn model(period_ns: u64, share: f64, phase_ns: u64) -> CpuModel {
        CpuModel::new(
            &CpuConfig {
                period_ns,
                share,
                phase_ns,
            },
            O,
        )
        .unwrap()
    }

    #[test]
    fn full_share_is_no_model() {
        assert!(CpuModel::new(
            &CpuConfig {
                period_ns: 10_000_000,
                share: 1.0,
                phase_ns: 0
            },
            O
        )
        .is_none());
        // 1 - 1e-12 of 10 ms rounds to the whole period: also always on.
        assert!(CpuModel::new(
            &CpuConfig {
                period_ns: 10_000_000,
                share: 1.0 - 1e-12,
                phase_ns: 0
            },
            O
        )
        .is_none());
    }

    #[test]
    fn slices_start_at_the_phase_of_each_period() {
        // 10 ms period, 35 %, slice starts 2 ms into each period: on [2, 5.5) ms.
        let m = model(10_000_000, 0.35, 2_000_000);
        assert!(!m.is_on(O));
        assert!(!m.is_on(O + 1_999_999));
        assert!(m.is_on(O + 2_000_000));
        assert!(m.is_on(O + 5_499_999));
        assert!(!m.is_on(O + 5_500_000));
        assert_eq!(m.next_on(O), O + 2_000_000);
        assert_eq!(m.next_on(O + 5_500_000), O + 12_000_000);
        assert_eq!(m.next_on(O + 3_000_000), O + 3_000_000);
        // No phase: on [0, 3.5) ms of each period.
        let m = model(10_000_000, 0.35, 0);
        assert!(m.is_on(O) && !m.is_on(O + 3_500_000) && m.is_on(O + 10_000_000));
    }

    #[test]
    fn steal_is_the_off_share_of_whole_periods() {
        for (share, phase) in [(0.35, 0), (0.5, 3_000_000), (0.9, 9_999_999)] {
            let m = model(10_000_000, share, phase);
            let on = m.on_ns_between(O, O + 1_000_000_000);
            assert_eq!(
                on,
                (share * 1e9).round() as u64,
                "share {share} phase {phase}"
            );
            // Within any one period, whatever it starts at.
            for start in [0, 1, 4_000_000, 7_777_777] {
                assert_eq!(m.on_ns_between(O + start, O + start + 10_000_000), m.on_ns);
            }
        }
    }

    #[test]
    fn work_pauses_while_off() {
        let m = model(10_000_000, 0.5, 0); // on [0, 5) ms
        assert_eq!(m.after_on(O, 1_000), O + 1_000);
        // 2 ms of work from 4 ms: 1 ms before the slice ends, 1 ms in the next slice.
        assert_eq!(m.after_on(O + 4_000_000, 2_000_000), O + 11_000_000);
        // Work started while off starts at the next slice.
        assert_eq!(m.after_on(O + 7_000_000, 1_000), O + 10_001_000);
        // Work that ends exactly at a slice's end (an off instant) is used at the next start.
        assert_eq!(m.after_on(O + 4_000_000, 1_000_000), O + 10_000_000);
        assert_eq!(m.after_on(O, 5_000_000), O + 10_000_000);
        assert_eq!(m.after_on(O + 7_000_000, 0), O + 10_000_000);
        // Consistent with the accounting.
        for (t, w) in [(O + 123, 7_654_321), (O + 6_000_000, 12_345_678)] {
            let end = m.after_on(t, w);
            assert_eq!(m.on_ns_between(t, end), w);
            assert!(m.on_ns_between(t, end - 1) < w);
        }
        // Ends on a slice boundary: done at the first on instant with all the work behind it.
        for (t, w) in [
            (O, 5_000_000),
            (O + 1_000_000, 9_000_000),
            (O + 6_000_000, 5_000_000),
        ] {
            let end = m.after_on(t, w);
            assert!(m.is_on(end), "{t} {w} -> {end}");
            assert_eq!(m.on_ns_between(t, end), w);
            assert_eq!(m.after_on(t, w - 1) + 1, end - (m.period_ns - m.on_ns));
        }
    }

    #[test]
    fn bad_input_names_the_field() {
        let c = |period_ns, share, phase_ns| {
            validate(
                &CpuConfig {
                    period_ns,
                    share,
                    phase_ns,
                },
                "nodes.3.cpu",
            )
        };
        assert!(c(10_000_000, 0.0, 0)
            .unwrap_err()
            .starts_with("nodes.3.cpu.share: 0 is outside (0, 1]"));
        assert!(c(10_000_000, 1.5, 0)
            .unwrap_err()
            .starts_with("nodes.3.cpu.share: 1.5 is outside (0, 1]"));
        assert!(c(10_000_000, f64::NAN, 0)
            .unwrap_err()
            .starts_with("nodes.3.cpu.share: NaN"));
        assert!(c(0, 0.5, 0)
            .unwrap_err()
            .starts_with("nodes.3.cpu.period_ns: 0 is outside"));
        assert!(c(10, 0.5, 10)
            .unwrap_err()
            .starts_with("nodes.3.cpu.phase_ns: 10 is not below period_ns (10)"));
        assert!(c(10, 0.01, 0)
            .unwrap_err()
            .starts_with("nodes.3.cpu.share: 0.01 of a 10 ns period"));
        // 90 % of 3 ns rounds to 3 ns = the period: refused rather than silently 100 %.
        let e = c(3, 0.9, 0).unwrap_err();
        assert!(
            e.starts_with("nodes.3.cpu.share: 0.9 of a 3 ns period rounds to the whole period"),
            "{e}"
        );
        assert!(c(10_000_000, 1.0 - 1e-12, 0)
            .unwrap_err()
            .starts_with("nodes.3.cpu.share:"));
        c(10, 0.9, 0).unwrap();
        c(10_000_000, 1.0, 0).unwrap();
    }
}
