#!/usr/bin/env python3
"""The validation table of the issue: ``tcplab validate`` on tests/data/validate-path.yaml for
CUBIC and BBR, without and with 1 % loss, at 5 and 100 Mbit/s, at 0 and 100 ms RTT; prints
one Markdown table (simulator / kernel / verdict per metric and case) for the closing note.

    sudo .venv/bin/python bench/validate_matrix.py [-o out/validate-matrix] [--prefix tlh5]
        [--allow-busy] [--only cubic] [--duration 15s] [--tolerance goodput=10%,...] [--runs N]
        [--cells default|large|all] [--set PATH=VALUE ...]

``--cells large`` runs the large-buffer cells instead (issue 23), ``all`` both: the path of
tests/data/validate-path-bigbuf.yaml (the 50 ms one-way delay on the SENDER's link, so the
delay line holds everything in flight, 32 MB tcp_rmem/tcp_wmem on both hosts), CUBIC and
BBR with 1 % loss at 100 ms RTT, a 100 Mbit/s and a 1 Gbit/s bottleneck (a 1-BDP queue:
826 and 8257 packets), the first link at 10 Gbit/s and at 1 Gbit/s. Every row also shows
the delay line's own lateness (p99 / max over its TUNs, from kernel/delayline.json): the
kernel run is invalid beyond 1 ms / 20 ms.

``--set PATH=VALUE`` (repeatable) adds a scenario override to every case, after the case's own,
e.g. ``--set hosts.server.offload.tso=on --set hosts.client.offload.gro=on`` for the matrix with
Linux's default offloads in both worlds (issue 24).

``--runs N`` (default 1) runs each case N times in each world (``tcplab validate --runs``):
the cells are then mean ± sd over the runs and the verdicts follow the repeated rule
(``~``: inconclusive (spread); tcplab.kernel.repeat).

Needs root and kernel mode (tcplab kernel run's requirements). Every case's validation
directory (report.html, sim/, kernel/) is kept under -o; the table is also written to
OUT/matrix.md and OUT/matrix.json. Judge the figures on a quiet machine (uptime first): a
busy CPU stalls the emulated path and the kernel run is marked invalid (or, with
--allow-busy, is noisy).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "tests" / "data" / "validate-path.yaml"
BIGBUF_SCENARIO = ROOT / "tests" / "data" / "validate-path-bigbuf.yaml"
FRAME_BYTES = 1514


def queue_packets(rate_bps: int, rtt_ms: int) -> int:
    """A 1-BDP pfifo, never fewer than 100 packets (validate-path.yaml's description)."""
    return max(100, math.ceil(rate_bps * rtt_ms / 1000 / 8 / FRAME_BYTES))


def cases(only: list[str]) -> list[tuple[str, int, int, int]]:
    out = [(cc, rate, rtt, loss) for cc in ("cubic", "bbr") for loss in (0, 1) for rate in (5, 100) for rtt in (0, 100)]
    return [c for c in out if not only or c[0] in only]


def overrides(cc: str, rate_mbit: int, rtt_ms: int, loss_pct: int, duration: str | None) -> list[str]:
    sets = [
        f"flows.0.cc={cc}",
        f"links.1.rate={rate_mbit}Mbit",
        f"links.1.delay={rtt_ms // 2}ms",
        f"links.1.loss={loss_pct}%",
        f"links.1.queue.limit={queue_packets(rate_mbit * 10**6, rtt_ms)}",
    ]
    return sets + ([f"duration={duration}"] if duration else [])


def large_cases(only: list[str]) -> list[tuple[str, int, int]]:
    """(cc, bottleneck Mbit/s, first link Mbit/s) of the large-buffer cells (module doc)."""
    out = [(cc, rate, first) for cc in ("cubic", "bbr") for rate in (100, 1000) for first in (10_000, 1000)]
    return [c for c in out if not only or c[0] in only]


def large_overrides(cc: str, rate_mbit: int, first_mbit: int, duration: str | None) -> list[str]:
    """validate-path-bigbuf.yaml at 100 ms RTT (its 50 ms each way on the sender's link), 1 % loss."""
    sets = [
        f"flows.0.cc={cc}",
        f"links.0.rate={first_mbit}Mbit",
        f"links.1.rate={rate_mbit}Mbit",
        f"links.1.queue.limit={queue_packets(rate_mbit * 10**6, 100)}",
    ]
    return sets + ([f"duration={duration}"] if duration else [])


def line_lateness(case_dir: Path) -> dict[str, float] | None:
    """The delay lines' worst p99 and max lateness (ms) over their TUNs and the kernel runs
    of a case (kernel/delayline.json, kernel/run-K/delayline.json); None without one."""
    files = sorted(case_dir.glob("kernel/delayline.json")) + sorted(case_dir.glob("kernel/run-*/delayline.json"))
    p99 = mx = None
    for f in files:
        for t in json.loads(f.read_text(encoding="utf-8")).get("tuns", []):
            late = t.get("lateness_ns") or {}
            p99 = max(p99 or 0, (late.get("p99") or 0) / 1e6)
            mx = max(mx or 0, (late.get("max") or 0) / 1e6)
    return None if p99 is None else {"p99_ms": p99, "max_ms": mx}


COLUMNS = [
    ("goodput_bps", "goodput Mbit/s"),
    ("rtt_p50_ms", "srtt p50 ms"),
    ("rtt_p99_ms", "srtt p99 ms"),
    ("retrans_pct", "retrans %"),
]
MARK = {"within": "✓", "outside": "✗", "inconclusive (spread)": "~", "n/a": "n/a"}


def _cell(row: dict | None) -> str:
    if row is None:
        return "-"

    def num(x: float | None, metric: str) -> str:
        if x is None:
            return "-"
        if metric == "goodput_bps":
            return f"{x / 1e6:.3g}"
        if metric == "retrans_pct":
            return f"{x:.2f}"
        if metric == "queue_drops":
            return f"{x:.0f}"
        return f"{x:.1f}"

    def world(which: str) -> str:
        text = num(row[which], row["metric"])
        stats = row.get(f"{which}_stats") or {}
        if stats.get("sd") is not None and text != "-":
            text += "±" + num(stats["sd"], row["metric"])
        return text

    return f"{world('sim')} / {world('kernel')} {MARK.get(row['verdict'], '?')}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", default="out/validate-matrix")
    ap.add_argument("--prefix", default="tlh5")
    ap.add_argument("--allow-busy", action="store_true")
    ap.add_argument("--only", action="append", default=[], help="cubic or bbr (repeatable)")
    ap.add_argument("--duration", default=None, help="replace the scenario's 15s")
    ap.add_argument("--tolerance", action="append", default=[])
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--runs", type=int, default=1, help="runs per world and case (tcplab validate --runs)")
    ap.add_argument(
        "--set", action="append", default=[], dest="sets", metavar="PATH=VALUE", help="override for every case"
    )
    ap.add_argument(
        "--cells",
        choices=("default", "large", "all"),
        default="default",
        help="the validate-path matrix, the large-buffer cells (module doc), or both",
    )
    args = ap.parse_args()
    if args.runs < 1:
        ap.error(f"--runs: {args.runs} is not a count of runs; expected 1 or more")

    from tcplab.kernel.tolerances import parse_tolerances
    from tcplab.kernel.validate import ValidateError, kernel_options, validate

    tol = parse_tolerances(args.tolerance)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    records = []
    started = time.monotonic()
    todo: list[tuple[str, dict, Path, list[str]]] = []
    if args.cells in ("default", "all"):
        for cc, rate, rtt, loss in cases(args.only):
            rec = {"cc": cc, "rate_mbit": rate, "rtt_ms": rtt, "loss_pct": loss, "path": "validate-path"}
            todo.append(
                (f"{cc}-{rate}mbit-{rtt}ms-{loss}pct", rec, SCENARIO, overrides(cc, rate, rtt, loss, args.duration))
            )
    if args.cells in ("large", "all"):
        for cc, rate, first in large_cases(args.only):
            path = f"bigbuf, 1st link {first // 1000 if first >= 1000 else first} {'G' if first >= 1000 else 'M'}bit/s"
            rec = {"cc": cc, "rate_mbit": rate, "rtt_ms": 100, "loss_pct": 1, "path": path, "first_mbit": first}
            name = f"bigbuf-{cc}-{rate}mbit-first{first}mbit"
            todo.append((name, rec, BIGBUF_SCENARIO, large_overrides(cc, rate, first, args.duration)))
    for name, rec, scenario, sets in todo:
        print(f"{name} ...", file=sys.stderr, flush=True)
        rec = {"case": name} | rec
        try:
            v = validate(
                scenario,
                overrides=[*sets, *args.sets],
                tolerances=tol,
                options=kernel_options(prefix=args.prefix, allow_busy=args.allow_busy),
                out=out / name,
                overwrite=args.force,
                runs=args.runs,
            )
            doc = v.to_json()
            rec.update(valid=v.valid, verdict=v.verdict_line(), metrics=doc["metrics"], kernel=doc["kernel"])
        except ValidateError as e:
            rec.update(valid=False, verdict=f"FAILED: {e}", metrics=[])
        rec["delayline"] = line_lateness(out / name)
        records.append(rec)
    lines = [
        "| path | cc | rate | RTT | loss | "
        + " | ".join(h for _, h in COLUMNS)
        + " | queue drops | delay line late p99 / max ms | verdict |",
        "|---|---|--:|--:|--:|" + "--:|" * len(COLUMNS) + "--:|--:|---|",
    ]
    for rec in records:
        by = {m["metric"]: m for m in rec["metrics"] if m["kind"] == "flow"}
        drops = [m for m in rec["metrics"] if m["metric"] == "queue_drops" and ((m["sim"] or 0) or (m["kernel"] or 0))]
        drop_cell = "; ".join(f"{m['subject']} {_cell(m)}" for m in drops) or "0 / 0"
        cells = [_cell(by.get(k)) for k, _ in COLUMNS]
        late = rec.get("delayline")
        late_cell = f"{late['p99_ms']:.2f} / {late['max_ms']:.2f}" if late else "-"
        lines.append(
            f"| {rec['path']} | {rec['cc']} | {rec['rate_mbit']} Mbit/s | {rec['rtt_ms']} ms | {rec['loss_pct']} % | "
            + " | ".join(cells)
            + f" | {drop_cell} | {late_cell} | {rec['verdict']} |"
        )
    lines.append("")
    if args.runs > 1:
        lines.append(
            f"Cells: simulator / kernel, mean ± sd over {args.runs} runs each; ✓ within tolerance, ✗ outside "
            "(beyond tolerance and 2 standard errors of the difference), ~ inconclusive (spread) "
            "(tolerances: " + tol.spec() + ")."
        )
    else:
        lines.append("Cells: simulator / kernel, ✓ within tolerance, ✗ outside (tolerances: " + tol.spec() + ").")
    text = "\n".join(lines) + "\n"
    (out / "matrix.md").write_text(text, encoding="utf-8")
    (out / "matrix.json").write_text(json.dumps(records, indent=2) + "\n", encoding="utf-8")
    print(text)
    print(f"{len(records)} cases in {time.monotonic() - started:.0f} s; reports under {out}/", file=sys.stderr)
    return 0 if all(r["valid"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
