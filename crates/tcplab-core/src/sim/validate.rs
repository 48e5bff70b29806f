//! The check of a whole configuration before a run: every field the engine relies on, in
//! the order the structure is written (nodes, links, flows, apps), then the run's memory
//! estimate and the capture's budget.
//!
//! `crate::config` is a schema: it knows the ranges of its own fields (`in_range`,
//! `TcpConfig::validate`) and nothing of the modules that act on it. The checks that need
//! a module's knowledge live in that module (`host::cpu::validate`, `net::qdisc::validate`,
//! `AppSpec::validate`, `capture::validate`, `memory::estimate`), and this walk, at the
//! top where the simulator is assembled, calls each in turn. A message names the field
//! (its path in the JSON structure), the value and what was expected; the first problem
//! found is the one reported.

use crate::config::{
    in_range, probability, AppConfig, LossConfig, NodeKind, ReaderConfig, SimConfig, MAX_DELAY_NS,
    MAX_DURATION_NS, MAX_IP_BYTES, MAX_RATE_BPS,
};
use crate::time::SUPPORTED_HZ;
use crate::{capture, host, memory, net, tcp};

/// Checks everything the engine relies on; the message names the field (its path in
/// this JSON structure), the value and what was expected. Times and sizes are bounded
/// to what the engine represents (see [`MAX_DURATION_NS`], [`MAX_DELAY_NS`]), and the
/// run's estimated memory to `SimConfig::max_memory_bytes`.
pub fn validate(cfg: &SimConfig) -> Result<(), String> {
    let n = cfg.nodes.len() as u64;
    if cfg.nodes.is_empty() {
        return Err("nodes: expected at least one node".into());
    }
    if cfg.nodes.len() > u32::MAX as usize || cfg.links.len() >= u32::MAX as usize {
        return Err("nodes/links: more than 2^32 - 1 entries".into());
    }
    if cfg.flows.len() > (u32::MAX / 2) as usize {
        return Err(format!(
            "flows: {} flows, expected at most {}",
            cfg.flows.len(),
            u32::MAX / 2
        ));
    }
    in_range(
        "duration_ns",
        cfg.duration_ns,
        1,
        MAX_DURATION_NS,
        "ns (one year)",
    )?;
    // 0 used to mean "no sampling", but every consumer divides by the interval.
    in_range(
        "sample_interval_ns",
        cfg.sample_interval_ns,
        1,
        cfg.duration_ns,
        "ns (at most duration_ns)",
    )?;
    if cfg.max_memory_bytes == 0 {
        return Err("max_memory_bytes: 0, expected a positive number of bytes".into());
    }
    for (i, node) in cfg.nodes.iter().enumerate() {
        if !SUPPORTED_HZ.contains(&node.hz) {
            return Err(format!(
                "nodes.{i}.hz: {} is not a supported CONFIG_HZ (expected 100, 250 or 1000)",
                node.hz
            ));
        }
        if node.kind == NodeKind::Router
            && (node.cpu.is_some() || node.nic.is_some() || node.cpu_cost.is_some())
        {
            let what = if node.cpu.is_some() {
                "cpu"
            } else if node.nic.is_some() {
                "nic"
            } else {
                "cpu_cost"
            };
            return Err(format!(
                "nodes.{i}.{what}: node {} is a router; CPU and NIC models are for hosts",
                node.name
            ));
        }
        if let Some(c) = &node.cpu {
            host::cpu::validate(c, &format!("nodes.{i}.cpu"))?;
        }
        if let Some(nic) = &node.nic {
            host::nic::validate(nic, &format!("nodes.{i}.nic"))?;
        }
        if let Some(c) = &node.cpu_cost {
            host::cpu::validate_cost(c, &format!("nodes.{i}.cpu_cost"))?;
        }
    }
    for (i, l) in cfg.links.iter().enumerate() {
        if l.from as u64 >= n || l.to as u64 >= n {
            return Err(format!(
                "links.{i}: endpoint index out of range ({n} nodes)"
            ));
        }
        if l.from == l.to {
            return Err(format!("links.{i}: a link must join two different nodes"));
        }
        in_range(
            &format!("links.{i}.rate_bps"),
            l.rate_bps,
            1,
            MAX_RATE_BPS,
            "bit/s (1 Pbit/s)",
        )?;
        in_range(
            &format!("links.{i}.delay_ns"),
            l.delay_ns,
            0,
            MAX_DELAY_NS,
            "ns (one hour)",
        )?;
        in_range(
            &format!("links.{i}.overhead_bytes"),
            l.overhead_bytes as u64,
            0,
            MAX_IP_BYTES,
            "bytes",
        )?;
        match &l.loss {
            LossConfig::Bernoulli { p } => probability(&format!("links.{i}.loss.p"), *p)?,
            LossConfig::GilbertElliott { p, r, h, k } => {
                for (name, v) in [("p", p), ("r", r), ("h", h), ("k", k)] {
                    probability(&format!("links.{i}.loss.{name}"), *v)?;
                }
            }
            LossConfig::Outage { start_ns, end_ns } => {
                in_range(&format!("links.{i}.loss.start_ns"), *start_ns, 0, MAX_DURATION_NS, "ns")?;
                in_range(&format!("links.{i}.loss.end_ns"), *end_ns, start_ns.saturating_add(1), MAX_DURATION_NS, "ns (after start_ns)")?;
            }
            LossConfig::DropList { .. } if l.loss_filter.min_ip_bytes > 0 => {
                return Err(format!(
                    "links.{i}.loss_filter.min_ip_bytes: {} with a drop list, which already counts data packets only; expected 0",
                    l.loss_filter.min_ip_bytes
                ))
            }
            _ => {}
        }
        in_range(
            &format!("links.{i}.loss_filter.min_ip_bytes"),
            l.loss_filter.min_ip_bytes as u64,
            0,
            MAX_IP_BYTES,
            "bytes",
        )?;
        if !l.loss_window.is_always() {
            if !matches!(
                l.loss,
                LossConfig::Bernoulli { .. } | LossConfig::GilbertElliott { .. }
            ) {
                return Err(format!(
                    "links.{i}.loss_window: set for a loss of kind {}; expected it only with a random loss model (bernoulli, gilbert_elliott)",
                    l.loss.kind_name()
                ));
            }
            let w = &l.loss_window;
            in_range(
                &format!("links.{i}.loss_window.start_ns"),
                w.start_ns,
                0,
                MAX_DURATION_NS,
                "ns",
            )?;
            if let Some(end_ns) = w.end_ns {
                in_range(
                    &format!("links.{i}.loss_window.end_ns"),
                    end_ns,
                    w.start_ns.saturating_add(1),
                    MAX_DURATION_NS,
                    "ns (after start_ns)",
                )?;
            }
        }
        if let Some(r) = &l.reorder {
            probability(&format!("links.{i}.reorder.p"), r.p)?;
            in_range(
                &format!("links.{i}.reorder.delay_ns"),
                r.delay_ns,
                0,
                MAX_DELAY_NS,
                "ns (one hour)",
            )?;
        }
        net::qdisc::validate(&l.queue, &format!("links.{i}.queue"))?;
        let mut in_edt = vec![false; cfg.nodes.len()];
        for (j, e) in l.edt.iter().enumerate() {
            let at = format!("links.{i}.edt.{j}");
            in_range(
                &format!("{at}.rate_bps"),
                e.rate_bps,
                8,
                MAX_RATE_BPS,
                "bit/s",
            )?;
            in_range(
                &format!("{at}.drop_horizon_ns"),
                e.drop_horizon_ns,
                1,
                MAX_DELAY_NS,
                "ns (one hour)",
            )?;
            if e.nodes.is_empty() {
                return Err(format!("{at}.nodes: [], expected at least one node index"));
            }
            for &node in &e.nodes {
                if node as u64 >= n {
                    return Err(format!(
                        "{at}.nodes: {node} is not a node index (expected 0 to {})",
                        n - 1
                    ));
                }
                if std::mem::replace(&mut in_edt[node as usize], true) {
                    return Err(format!("{at}.nodes: node {node} is already in another aggregate of this link; expected each node in one"));
                }
            }
        }
    }
    for (i, f) in cfg.flows.iter().enumerate() {
        if f.src as u64 >= n || f.dst as u64 >= n {
            return Err(format!("flows.{i}: node index out of range ({n} nodes)"));
        }
        if f.src == f.dst {
            return Err(format!("flows.{i}: src and dst must differ"));
        }
        for (idx, which) in [(f.src, "src"), (f.dst, "dst")] {
            if cfg.nodes[idx as usize].kind != NodeKind::Host {
                return Err(format!(
                    "flows.{i}.{which}: node {} is a router, not a host",
                    cfg.nodes[idx as usize].name
                ));
            }
        }
        if f.start_ns >= cfg.duration_ns {
            return Err(format!(
                "flows.{i}.start_ns: {} is not before duration_ns ({})",
                f.start_ns, cfg.duration_ns
            ));
        }
        if let Some(stop) = f.stop_ns {
            in_range(
                &format!("flows.{i}.stop_ns"),
                stop,
                f.start_ns,
                MAX_DURATION_NS,
                "ns (from start_ns to one year)",
            )?;
        }
        if let AppConfig::BulkBytes { bytes } = f.app {
            in_range(&format!("flows.{i}.app.bytes"), bytes, 1, 1 << 60, "bytes")?;
        }
        match f.reader {
            ReaderConfig::Immediate => {}
            ReaderConfig::Rate { rate_bps } => {
                in_range(
                    &format!("flows.{i}.reader.rate_bps"),
                    rate_bps,
                    8,
                    MAX_RATE_BPS,
                    "bit/s",
                )?;
            }
            ReaderConfig::Bursts { interval_ns, bytes } => {
                in_range(
                    &format!("flows.{i}.reader.interval_ns"),
                    interval_ns,
                    1,
                    MAX_DELAY_NS,
                    "ns (one hour)",
                )?;
                in_range(
                    &format!("flows.{i}.reader.bytes"),
                    bytes,
                    1,
                    1 << 40,
                    "bytes",
                )?;
            }
        }
        f.tcp.validate(&format!("flows.{i}.tcp"))?;
        let c = &f.cc_params;
        let at = |name: &str| format!("flows.{i}.cc_params.{name}");
        in_range(&at("beta"), c.beta as u64, 1, 1023, "(x1024)")?;
        in_range(
            &at("bic_scale"),
            c.bic_scale as u64,
            1,
            u32::MAX as u64 >> 10,
            "",
        )?;
        in_range(
            &at("hystart_detect"),
            c.hystart_detect as u64,
            0,
            3,
            "(bits: 1 = ACK train, 2 = delay)",
        )?;
        in_range(
            &at("hystart_ack_delta_us"),
            c.hystart_ack_delta_us as u64,
            0,
            1_000_000,
            "us",
        )?;
    }
    validate_apps(cfg)?;
    let est = memory::estimate(cfg);
    if est.total_bytes > cfg.max_memory_bytes {
        return Err(est.refusal(cfg));
    }
    if let Some(c) = &cfg.capture {
        capture::validate(c, cfg.flows.len(), cfg.max_memory_bytes - est.total_bytes)?;
    }
    Ok(())
}

/// Every app names existing flows, each `driven` flow belongs to exactly one app, and
/// each app's parameters are valid.
fn validate_apps(cfg: &SimConfig) -> Result<(), String> {
    let mut owner: Vec<Option<usize>> = vec![None; cfg.flows.len()];
    for (a, app) in cfg.apps.iter().enumerate() {
        // The name keys the app's random stream and its summary: two apps may not share it.
        if let Some(b) = cfg.apps[..a].iter().position(|o| o.name == app.name) {
            return Err(format!(
                "apps.{a}.name: {:?} is already the name of apps.{b}; expected a unique name",
                app.name
            ));
        }
        if app.flows.is_empty() {
            return Err(format!(
                "apps.{a}.flows: empty, expected the indices of the flows the app drives"
            ));
        }
        for (k, &f) in app.flows.iter().enumerate() {
            let Some(flow) = cfg.flows.get(f as usize) else {
                return Err(format!(
                    "apps.{a}.flows.{k}: {f} is not a flow index ({} flows)",
                    cfg.flows.len()
                ));
            };
            if !matches!(flow.app, AppConfig::Driven) {
                return Err(format!(
                    "apps.{a}.flows.{k}: flow {} ({f}) has app {:?}, expected driven",
                    flow.name, flow.app
                ));
            }
            if let Some(b) = owner[f as usize] {
                return Err(format!(
                    "apps.{a}.flows.{k}: flow {} ({f}) already belongs to apps.{b}",
                    flow.name
                ));
            }
            owner[f as usize] = Some(a);
        }
        app.spec
            .validate(&format!("apps.{a}.spec"), app.flows.len())?;
    }
    for (i, f) in cfg.flows.iter().enumerate() {
        if matches!(f.app, AppConfig::Driven) && owner[i].is_none() {
            return Err(format!(
                "flows.{i}.app: driven, but no app in apps drives flow {}",
                f.name
            ));
        }
    }
    Ok(())
}

/// Settings that are valid but make a run that cannot do what it is for; each line
/// names the field and says why. Returned with the results (the CLI prints them).
pub fn warnings(cfg: &SimConfig) -> Vec<String> {
    let mut out = Vec::new();
    for (i, f) in cfg.flows.iter().enumerate() {
        let t = &f.tcp;
        // The largest window the receiver can ever advertise: tcp_win_from_space() of
        // the largest buffer (Linux v6.12 include/net/tcp.h: tcp_win_from_space(), 50%).
        let max_window = tcp::receiver::max_window_bytes(t);
        if max_window < t.mss_bytes as u64 {
            out.push(format!(
                "flows.{i}.tcp.tcp_rmem: the receiver's largest window is {max_window} bytes (tcp_win_from_space of \
                 tcp_rmem max {}), below one MSS ({} bytes): the sender can never send a full segment, so \
                 the flow carries no data",
                t.tcp_rmem[2], t.mss_bytes
            ));
        }
    }
    out
}
