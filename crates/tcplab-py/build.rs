//! The engine's version string, `TCPLAB_ENGINE_VERSION`: the package version plus a digest
//! of the engine's sources (`0.1.0+3f9a0c21d4e7`, semver build metadata).
//!
//! Why: sweeps key each run by the engine version (python/tcplab/sweep/keys.py) and refuse
//! to resume a directory made by another engine, and `tcplab export pcap` refuses to
//! re-simulate a run of another engine. Behaviour changes without a version bump (every
//! fix between releases) must still give another version, or a resumed sweep would mix
//! rows of two engines. The digest covers what decides a run's behaviour: the core and the
//! binding sources and their manifests, read in sorted path order, so the same checkout
//! gives the same version on every machine. FNV-1a (64 bit): a change detector, not a
//! security measure; no build dependency is needed for it.

use std::fs;
use std::path::{Path, PathBuf};

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_under(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs" || e == "toml") {
            out.push(path);
        }
    }
}

fn fnv1a(hash: &mut u64, bytes: &[u8]) {
    for &b in bytes {
        *hash ^= u64::from(b);
        *hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
}

fn main() {
    let manifest =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let crates = manifest
        .parent()
        .expect("crates/tcplab-py lives under crates/")
        .to_path_buf();
    let roots = [crates.join("tcplab-core/src"), crates.join("tcplab-py/src")];
    let mut files = vec![
        crates.join("tcplab-core/Cargo.toml"),
        manifest.join("Cargo.toml"),
    ];
    for root in &roots {
        files_under(root, &mut files);
        println!("cargo:rerun-if-changed={}", root.display());
    }
    for f in &files[..2] {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    files.sort();
    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    for f in &files {
        let Ok(bytes) = fs::read(f) else { continue };
        let rel = f.strip_prefix(&crates).unwrap_or(f);
        fnv1a(
            &mut hash,
            rel.to_string_lossy().replace('\\', "/").as_bytes(),
        );
        fnv1a(&mut hash, &[0]);
        fnv1a(&mut hash, &bytes);
        fnv1a(&mut hash, &[0]);
    }
    let version = std::env::var("CARGO_PKG_VERSION").expect("cargo sets CARGO_PKG_VERSION");
    println!(
        "cargo:rustc-env=TCPLAB_ENGINE_VERSION={version}+{:012x}",
        hash >> 16
    );
}
