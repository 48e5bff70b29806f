"""``docs/conformance.md``: how tcplab's TCP does on the kernel's own packetdrill scripts.

One command writes it (``make conformance``, or ``python -m tcplab.packetdrill.conformance``):
it runs every script of the corpus's ``gtests/net/tcp`` against tcplab (:mod:`.run`), puts
beside each folder the running kernel's results (``docs/conformance-kernel.json``, written by
``python -m tcplab.packetdrill.kernel --json``: the same scripts on this machine's kernel),
and lists every in-scope script that does not pass with its first mismatch and, where it is
known, its cause (:data:`CAUSES`). ``--update-passes`` also rewrites the checked-in list of
scripts that pass (``tests/packetdrill_expected_passes.txt``), which the tests hold tcplab to.

In scope: everything but what the issue leaves out (:data:`OUT_OF_SCOPE`: TCP Fast Open,
MD5, zerocopy, timestamping, splice/sendfile, IPv6-only scripts and AccECN). RFC 3168 ECN
(the ``E``/``W`` flags, IP ECN marks, ``tcp_ecn``) and DCTCP are in scope since the engine
models them. The target is tcplab's passes among the in-scope scripts the kernel passes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from tcplab.packetdrill.corpus import run_many
from tcplab.packetdrill.run import ScriptResult

__all__ = ["OUT_OF_SCOPE", "CAUSES", "in_scope", "render", "main"]

#: Skip reasons that put a script out of scope (the features the issue leaves out).
OUT_OF_SCOPE = (
    "TCP Fast Open",
    "TCP MD5",
    "zerocopy",
    "timestamping",
    "splice/sendfile",
    "IPv6",
    "AccECN",
)

#: Why a script still fails or skips, where the mismatch message alone does not say
#: (script path below gtests/net/tcp -> cause).
CAUSES: dict[str, str] = {
    "blocking/blocking-write.pkt": "the blocked write() wakes when the send buffer frees memory; Linux "
    "frees a partly acknowledged skb's memory by whole pages (tcp_trim_head()), tcplab charges payload "
    "per segment, so room appears one ACK earlier (0.4 s, the kernel 0.5 s)",
    "cubic/cubic-rto-ss-ca-cwnd-bump.pkt": "PSH on 19001:20001 inside one 200 KB write: most likely "
    "tcp_sendmsg_locked()'s forced_push() mark (every max_window/2 bytes of a write), which tcplab does "
    "not model (it marks a write's end only); not yet confirmed",
    "cwnd_moderation/cwnd-moderation-ecn-enter-cwr-no-moderation-700.pkt": "the script expects cwnd 4 "
    '(PRR-CRB, sndcnt = min(delta, newly acked)); since Linux 5.11 ("tcp: avoid slow start during fast '
    'recovery on new losses") tcp_cwnd_reduction() adds one when snd_una advances without new losses: '
    "sndcnt = min(7 - 3, max(1 - 0, 1) + 1) = 2, cwnd 3 + 2 = 5 in v6.12, which tcplab gives; the "
    "kernel fails it too (5)",
    "cubic/cubic-bulk-166k.pkt": "fq on the tun (tc qdisc replace ... fq) is not modelled in scripted "
    "mode; the kernel here has no sch_fq module either",
    "cubic/cubic-bulk-166k-idle-restart.pkt": "as cubic-bulk-166k.pkt",
    "slow_start/slow-start-fq-ack-per-2pkt.pkt": "as cubic-bulk-166k.pkt",
    "eor/no-coalesce-retrans.pkt": "the first retransmission comes from RACK's reordering timer 4-8 ms "
    "after the SACK, as in the kernel (tcplab let the ACK re-arm the RTO over it until the ACK kept "
    "FLAG_SET_XMIT_TIMER clear, tcp_identify_packet_loss()). Then the ACK of that retransmission, "
    "exactly min_rtt after it here, advances RACK and marks the 10-segment skb sent before it lost, "
    "so PRR sends one segment where the script expects two. The kernel's RTT for that ACK falls just "
    "under its min_rtt (its own timing), and tcp_rack_advance() skips a retransmitted skb then: with "
    "the ACK 1.1 ms after the retransmission instead of 1.0 (`tcplab packetdrill --kernel` on an edited "
    "copy), the kernel fails at the same line with the same packet",
    "epoll/epoll_out_edge.pkt": "TCP_NOTSENT_LOWAT and epoll are not modelled",
    "epoll/epoll_out_edge_default_notsent_lowat.pkt": "TCP_NOTSENT_LOWAT and epoll are not modelled",
    "epoll/epoll_out_edge_notsent_lowat.pkt": "TCP_NOTSENT_LOWAT and epoll are not modelled",
    "notsent_lowat/notsent-lowat-default.pkt": "TCP_NOTSENT_LOWAT and poll() are not modelled",
    "notsent_lowat/notsent-lowat-setsockopt.pkt": "TCP_NOTSENT_LOWAT and poll() are not modelled",
    "notsent_lowat/notsent-lowat-sysctl.pkt": "TCP_NOTSENT_LOWAT and poll() are not modelled",
    "fast_retransmit/fr-4pkt-fack-last-mss.pkt": "the kernel fails it too (same timing error): the "
    "script's RACK timing predates the running kernels",
    "gro/gro-mss-option.pkt": "GRO of the script's packets (the corpus's gro/ folder runs a NAPI tun); "
    "tcplab hands each injected packet to TCP alone, so rcv_mss is measured per segment",
    "mtu_probe/basic-v4.pkt": "route metrics (advmss, mtu lock, initcwnd) and MTU probing are not modelled",
    "nagle/https_client.pkt": "a device without TSO/GSO is not modelled in scripted mode (the scripted "
    "host always builds GSO skbs, as Linux does on the tun by default)",
    "shutdown/shutdown-rdwr-send-queue-ack-close.pkt": "the kernel fails it too",
    "shutdown/shutdown-rdwr-write-queue-close.pkt": "the kernel fails it too",
    "splice/tcp_splice_loop_test.pkt": "urgent data (MSG_OOB) is not modelled",
    "tcp_info/tcp-info-sndbuf-limited.pkt": "the kernel fails it too; tcplab's sndbuf_limited "
    "chronograph does not start for a blocked writer of a scripted socket",
    "ts_recent/invalid_ack.pkt": "kernel change after v6.12 (ts_recent is no longer updated from an "
    "invalid ACK); the kernel fails it too",
}

ROOT_SUFFIX = Path("gtests") / "net" / "tcp"


def in_scope(r: ScriptResult) -> bool:
    """Not skipped for a feature the issue leaves out of scope."""
    return not (r.status == "skip" and any(r.message.startswith(p) for p in OUT_OF_SCOPE))


def _rel(path: str, root: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(root.resolve()))
    except ValueError:
        return path


def render(results: Sequence[ScriptResult], root: Path, kernel: dict) -> str:
    """The Markdown page for ``results`` (scripts under ``root``) beside ``kernel``'s results."""
    kres: dict[str, dict] = kernel.get("results", {})
    folders: dict[str, list[ScriptResult]] = defaultdict(list)
    for r in results:
        folders[_rel(r.path, root).split("/")[0]].append(r)
    rows = []
    tot = defaultdict(int)
    for folder in sorted(folders):
        rs = folders[folder]
        scope = [r for r in rs if in_scope(r)]
        kpass = [r for r in rs if kres.get(_rel(r.path, root), {}).get("status") == "pass"]
        kpass_scope = [r for r in scope if kres.get(_rel(r.path, root), {}).get("status") == "pass"]
        both = [r for r in kpass_scope if r.status == "pass"]
        row = {
            "scripts": len(rs),
            "in scope": len(scope),
            "pass": sum(r.status == "pass" for r in rs),
            "fail": sum(r.status == "fail" for r in rs),
            "skip (in scope)": sum(r.status == "skip" for r in scope),
            "kernel pass": len(kpass),
            "kernel pass, in scope": len(kpass_scope),
            "tcplab pass of those": len(both),
        }
        for k, v in row.items():
            tot[k] += v
        rows.append((folder, row))
    cols = list(rows[0][1]) if rows else []
    share = tot["tcplab pass of those"] / tot["kernel pass, in scope"] if tot["kernel pass, in scope"] else 0.0
    out = [
        "# Conformance: the kernel's packetdrill scripts against tcplab",
        "",
        "Generated by `make conformance` (`python -m tcplab.packetdrill.conformance`); do not edit by hand.",
        "The scripts are google/packetdrill's `gtests/net/tcp` (GPLv2, read from the corpus, never copied",
        "here: set `TCPLAB_PACKETDRILL_DIR` to a clone). Each runs against one tcplab socket in simulated",
        "time (`tcplab packetdrill`); the kernel columns are the same scripts on this machine's kernel",
        f"({kernel.get('kernel', '?')}, `tcplab packetdrill --kernel`), from `docs/conformance-kernel.json`.",
        "tcplab follows Linux v6.12; where the running kernel is newer, its own changes can make it",
        "differ from v6.12 (noted below).",
        "",
        f"**{tot['tcplab pass of those']} of the {tot['kernel pass, in scope']} in-scope scripts the kernel "
        f"passes pass on tcplab ({100 * share:.0f} %)**; {tot['pass']} pass of {tot['scripts']} scripts in all "
        f"({tot['in scope']} in scope: out of scope are {', '.join(OUT_OF_SCOPE)}).",
        "",
        "| folder | " + " | ".join(cols) + " |",
        "|---|" + "---:|" * len(cols),
    ]
    for folder, row in rows:
        out.append(f"| {folder} | " + " | ".join(str(row[c]) for c in cols) + " |")
    out.append("| **all** | " + " | ".join(f"**{tot[c]}**" for c in cols) + " |")
    out += ["", "## In-scope scripts that do not pass", ""]
    out.append("| script | tcplab | kernel | first mismatch or feature | cause |")
    out.append("|---|---|---|---|---|")
    for r in results:
        if r.status == "pass" or not in_scope(r):
            continue
        rel = _rel(r.path, root)
        k = kres.get(rel, {}).get("status", "-")
        msg = r.message.replace(str(Path(r.path).resolve()), rel).replace("|", "\\|")
        cause = CAUSES.get(rel, "").replace("|", "\\|")
        out.append(f"| {rel} | {r.status} | {k} | {msg} | {cause} |")
    disagree = [
        r
        for r in results
        if r.status == "pass" and kres.get(_rel(r.path, root), {}).get("status") not in (None, "pass")
    ]
    if disagree:
        out += ["", "## Scripts tcplab passes and the running kernel fails", ""]
        out.append("| script | kernel's first error |")
        out.append("|---|---|")
        for r in disagree:
            rel = _rel(r.path, root)
            err = kres[rel].get("first_error", "").replace("|", "\\|")
            out.append(f"| {rel} | {err} |")
    out.append("")
    return "\n".join(out)


def corpus_dir() -> Path:
    """The packetdrill clone: ``$TCPLAB_PACKETDRILL_DIR``, else ``../shared/packetdrill``."""
    env = os.environ.get("TCPLAB_PACKETDRILL_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3].parent / "shared" / "packetdrill"


def main(argv: Sequence[str] | None = None) -> int:
    repo = Path(__file__).resolve().parents[3]
    p = argparse.ArgumentParser(prog="python -m tcplab.packetdrill.conformance", description=__doc__.split("\n")[0])
    p.add_argument(
        "--corpus",
        type=Path,
        default=None,
        help="google/packetdrill clone (default: $TCPLAB_PACKETDRILL_DIR or ../shared/packetdrill)",
    )
    p.add_argument("--kernel-json", type=Path, default=repo / "docs" / "conformance-kernel.json")
    p.add_argument("--out", type=Path, default=repo / "docs" / "conformance.md")
    p.add_argument("--update-passes", action="store_true", help="rewrite tests/packetdrill_expected_passes.txt")
    a = p.parse_args(argv)
    corpus = a.corpus or corpus_dir()
    root = corpus / ROOT_SUFFIX
    if not root.is_dir():
        print(f"error: --corpus: {corpus} has no {ROOT_SUFFIX} (expected a google/packetdrill clone)", file=sys.stderr)
        return 2
    try:
        kernel = json.loads(a.kernel_json.read_text())
    except (OSError, ValueError) as e:
        print(f"error: --kernel-json: {a.kernel_json}: {e}", file=sys.stderr)
        return 2
    results = run_many([root])
    text = render(results, root, kernel)
    tmp = a.out.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(a.out)
    print(f"wrote {a.out}")
    if a.update_passes:
        passes = repo / "tests" / "packetdrill_expected_passes.txt"
        head = [line for line in passes.read_text().splitlines() if line.startswith("#")] if passes.exists() else []
        body = sorted(_rel(r.path, root) for r in results if r.status == "pass")
        passes.write_text("\n".join(head + body) + "\n")
        print(f"wrote {passes} ({len(body)} scripts)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
