//! The engine's floor plan, checked by reading its sources (issue 22; DESIGN.md "Layout").
//!
//! The rooms of `crates/tcplab-core/src` are its top-level modules. Data flows one way:
//! `sim` drives `app`, `tcp` and `cc`, which sit on `net` and `host`, which sit on the
//! leaves. The rules:
//!
//! 1. A leaf (`config`, `event`, `rng`, `time`, `packet`, `mib`, `metrics`) names no room
//!    but leaves: `config` is the schema the others read, not a place that knows them.
//! 2. `net` and `host` name only leaves, and each other where the model needs it: the one
//!    such arrow today is `net` -> `host` (`net::link` applies the EDT shaper of Cilium's
//!    Bandwidth Manager, `host::shaper`, at a node's device before its qdisc).
//! 3. `sim` is the top: no other room names it.
//! 4. No two rooms name each other, except `tcp` <-> `cc` (Linux has it: tcp_input.c
//!    calls the congestion-control hooks, which read and set the socket's state).
//!
//! A room "names" another when its code (comments and string literals aside) has a path
//! into it: `crate::X`, `use crate::{X, ...}`, or `super::` climbing out of the room.
//! `#[cfg(test)]` code counts like any other. The checker is tested on planted violations
//! below, so that it cannot pass by reading nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const LEAVES: [&str; 7] = ["config", "event", "rng", "time", "packet", "mib", "metrics"];
/// Rooms `net` and `host` may name besides the leaves (rule 2).
const NET_HOST_EXTRA: [(&str, &str); 1] = [("net", "host")];
/// Pairs of rooms allowed to name each other (rule 4).
const ALLOWED_LOOPS: [(&str, &str); 1] = [("tcp", "cc")];

/// `src` with comments, string and char literals blanked (kept as spaces, so that byte
/// offsets and line numbers stay where they were).
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            let end = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if b[i..].starts_with(b"/*") {
            // Rust block comments nest.
            let (mut depth, mut j) = (0usize, i);
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if b[i] == b'r'
            && (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#'))
            && (i == 0 || !b[i - 1].is_ascii_alphanumeric() && b[i - 1] != b'_')
        {
            // A raw string r"..." or r#"..."#.
            let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
            if b.get(i + 1 + hashes) != Some(&b'"') {
                i += 1;
                continue;
            }
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat(b'#').take(hashes));
            let start = i + 2 + hashes;
            let end = b[start..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |p| start + p + close.len());
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(b.len());
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'\'' {
            // A char literal ('x', '\n', '\''), not a lifetime ('a).
            let len = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..].iter().position(|&c| c == b'\'').map(|p| p + 3)
            } else if b.get(i + 2) == Some(&b'\'') {
                Some(3)
            } else {
                None
            };
            match len {
                Some(n) => {
                    blank(&mut out, i, i + n);
                    i += n;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).expect("blanking keeps UTF-8 (only ASCII bytes are replaced)")
}

fn ident_at(s: &str, at: usize) -> &str {
    let rest = &s[at..];
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    &rest[..end]
}

/// The rooms the code of a file of room `room` names, with the line of each first mention.
/// `depth` is how many modules deep the file is below its room (0: `src/X.rs` or
/// `src/X/mod.rs`; 1: `src/X/y.rs`, ...): `super::` climbs out of the room past it.
fn named_rooms(room: &str, depth: usize, src: &str) -> BTreeMap<String, usize> {
    let code = code_only(src);
    let mut found = BTreeMap::new();
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let note = |name: &str, at: usize, found: &mut BTreeMap<String, usize>| {
        if !name.is_empty() && name != room {
            found.entry(name.to_string()).or_insert(line_of(at));
        }
    };
    let bytes = code.as_bytes();
    let is_word_start =
        |at: usize| at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
    for (at, _) in code.match_indices("crate::") {
        if !is_word_start(at) {
            continue;
        }
        let after = at + "crate::".len();
        if code[after..].starts_with('{') {
            // `use crate::{a, b::c, d::{e, f}}`: the names at depth 1 of the group.
            let (mut depth, mut expect_name) = (0usize, true);
            for (k, c) in code[after..].char_indices() {
                match c {
                    '{' => {
                        depth += 1;
                        expect_name = depth == 1;
                    }
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => expect_name = true,
                    c if c.is_whitespace() => {}
                    _ if expect_name && depth == 1 => {
                        note(ident_at(&code, after + k), after + k, &mut found);
                        expect_name = false;
                    }
                    _ => {}
                }
            }
        } else {
            note(ident_at(&code, after), after, &mut found);
        }
    }
    // `super::` chains that climb out of the room (depth + 1 of them reach the crate root).
    for (at, _) in code.match_indices("super::") {
        if !is_word_start(at) || (at >= 7 && &code[at - 7..at] == "super::") {
            continue;
        }
        let mut n = 0;
        let mut p = at;
        while code[p..].starts_with("super::") {
            n += 1;
            p += "super::".len();
        }
        if n > depth {
            note(ident_at(&code, p), p, &mut found);
        }
    }
    found
}

/// Violations of rules 1-3 by one file of `room` (rule 4 needs the whole graph).
fn file_violations(room: &str, depth: usize, src: &str) -> Vec<String> {
    let leaf = |r: &str| LEAVES.contains(&r);
    let mut out = Vec::new();
    for (other, line) in named_rooms(room, depth, src) {
        let why = if leaf(room) && !leaf(&other) {
            Some("a leaf names a room above it")
        } else if (room == "net" || room == "host")
            && !leaf(&other)
            && !NET_HOST_EXTRA.contains(&(room, other.as_str()))
        {
            Some("net and host name only leaves (and net -> host)")
        } else if other == "sim" {
            Some("sim is the top: no room names it")
        } else {
            None
        };
        if let Some(why) = why {
            out.push(format!("line {line}: {room} -> {other}: {why}"));
        }
    }
    out
}

/// Pairs of rooms that name each other, beyond [`ALLOWED_LOOPS`] (rule 4).
fn loops(edges: &BTreeSet<(String, String)>) -> Vec<String> {
    let mut out = Vec::new();
    for (a, b) in edges {
        let allowed = ALLOWED_LOOPS
            .iter()
            .any(|&(x, y)| (x, y) == (a, b) || (y, x) == (a, b));
        if a < b && edges.contains(&(b.clone(), a.clone())) && !allowed {
            out.push(format!("{a} <-> {b}"));
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `(room, depth)` of a file under `src/` (None for `lib.rs`, the crate root).
fn room_of(rel: &Path) -> Option<(String, usize)> {
    let parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let room = parts[0].trim_end_matches(".rs").to_string();
    if room == "lib" {
        return None;
    }
    // src/x.rs and src/x/mod.rs are the room itself; src/x/y.rs is one deeper, ...
    let last_is_mod = parts.last().is_some_and(|p| p == "mod.rs");
    let depth = parts.len() - 1 - usize::from(last_is_mod);
    Some((room, depth))
}

#[test]
fn the_engine_keeps_its_floor_plan() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut problems = Vec::new();
    let mut edges = BTreeSet::new();
    let mut rooms = BTreeSet::new();
    for path in &files {
        let rel = path.strip_prefix(&src).expect("under src/");
        let Some((room, depth)) = room_of(rel) else {
            continue;
        };
        rooms.insert(room.clone());
        let text = std::fs::read_to_string(path).expect("a readable source file");
        for v in file_violations(&room, depth, &text) {
            problems.push(format!("src/{}: {v}", rel.display()));
        }
        for other in named_rooms(&room, depth, &text).into_keys() {
            edges.insert((room.clone(), other));
        }
    }
    if std::env::var_os("TCPLAB_LAYOUT_PRINT").is_some() {
        for (a, b) in &edges {
            println!("{a} -> {b}");
        }
    }
    problems.extend(
        loops(&edges)
            .into_iter()
            .map(|l| format!("rooms that name each other: {l}")),
    );
    // The check read the engine: every leaf and the rooms above them are there.
    for r in LEAVES
        .iter()
        .chain(&["net", "host", "tcp", "cc", "app", "sim"])
    {
        assert!(
            rooms.contains(*r),
            "no room {r} under src/: the checker read the wrong tree ({rooms:?})"
        );
    }
    assert!(
        edges.contains(&("sim".into(), "tcp".into())),
        "the checker found no arrow sim -> tcp: it reads nothing"
    );
    assert!(
        problems.is_empty(),
        "the engine's floor plan is broken (tests/engine/layout.rs):\n{}",
        problems.join("\n")
    );
}

#[test]
fn a_leaf_naming_a_room_above_it_is_caught() {
    let v = file_violations(
        "config",
        0,
        "use serde::Deserialize;\npub data_side: crate::app::Side,\n",
    );
    assert_eq!(v, ["line 2: config -> app: a leaf names a room above it"]);
    // In a `use` group, at any position, and after a nested group.
    let v = file_violations(
        "time",
        0,
        "use crate::{rng::Rng, packet::{flags, Packet}, net::link::Link};",
    );
    assert_eq!(v, ["line 1: time -> net: a leaf names a room above it"]);
    // `super::` out of the room: from config/apps.rs (depth 1), super::super::X is crate::X.
    let v = file_violations("config", 1, "use super::super::tcp::sock::TcpSock;");
    assert_eq!(v, ["line 1: config -> tcp: a leaf names a room above it"]);
}

#[test]
fn net_and_host_name_only_leaves_and_no_one_names_sim() {
    assert_eq!(
        file_violations("net", 1, "let b = crate::capture::CaptureBuf::new(1);"),
        ["line 1: net -> capture: net and host name only leaves (and net -> host)"]
    );
    assert_eq!(
        file_violations("host", 0, "use crate::net::Network;"),
        ["line 1: host -> net: net and host name only leaves (and net -> host)"]
    );
    assert!(file_violations("net", 1, "use crate::host::shaper::EdtShaper;").is_empty());
    assert_eq!(
        file_violations("app", 1, "let t = crate::sim::BOOT_NS;"),
        ["line 1: app -> sim: sim is the top: no room names it"]
    );
}

#[test]
fn comments_strings_and_the_rooms_own_paths_are_not_arrows() {
    let src = r####"
//! Reads `crate::app` docs. /* crate::sim */
/* nested /* crate::tcp */ still a comment crate::cc */
let s = "crate::app::Side";
let r = r#"crate::sim"#;
let c = '"'; let l: &'static str = "x";
use crate::config::Side;
use crate::time::NEVER;
"####;
    assert!(
        named_rooms("config", 0, src).keys().eq(["time"]),
        "{:?}",
        named_rooms("config", 0, src)
    );
    // `super::` inside the room is no arrow: from config/apps.rs (depth 1) `super::` is
    // config; from net/qdisc/tbf.rs (depth 2) `super::super::` is net.
    assert!(named_rooms("config", 1, "use super::Side;").is_empty());
    assert!(named_rooms("net", 2, "use super::super::link::Link;").is_empty());
}

#[test]
fn two_rooms_naming_each_other_are_a_loop_unless_tcp_and_cc() {
    let e = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|&(a, b)| (a.to_string(), b.to_string()))
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(
        loops(&e(&[("tcp", "app"), ("app", "tcp"), ("sim", "app")])),
        ["app <-> tcp"]
    );
    assert!(loops(&e(&[("tcp", "cc"), ("cc", "tcp")])).is_empty());
}
