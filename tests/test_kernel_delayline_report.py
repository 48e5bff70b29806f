"""The delay line's own lateness in the run directory: ``delayline.json`` and the report's
first line (tcplab.kernel.delayline.lateness_report / lateness_line, KernelResult).

The stats are the line's contract (crates/tcplab-delayline/src/stats.rs: per TUN packets,
bytes, drops, queue_max_packets, queue_max_bytes, lateness_ns p50/p90/p99/max/count/over_1ms);
the limits are kernel mode's validity limits (tcplab.kernel.measure.LIMITS: p99 1 ms, max
20 ms). No root needed.
"""

from __future__ import annotations

import json

from tcplab.kernel.delayline import REPORT_FILE, lateness_line, lateness_report, parse_stats
from tcplab.kernel.measure import LIMITS
from test_kernel_result import make

LIMITS_NS = {"p99": 1_000_000, "max": 20_000_000}


def _tun(name: str, p99: int, mx: int, **extra) -> dict:
    late = {"p50": 40_000, "p99": p99, "max": mx, "count": 1000} | extra.pop("late", {})
    return {
        "name": name,
        "delay_ns": 50_000_000,
        "packets": 1000,
        "bytes": 1_500_000,
        "drops": 0,
        "queue_max_packets": 900,
        "lateness_ns": late,
    } | extra


STATS = {
    "version": 1,
    "cpu": 1,
    "tuns": [
        _tun("tab", 160_000, 2_800_000, queue_max_bytes=1_350_000, late={"p90": 90_000, "over_1ms": 3}),
        _tun("tba", 1_000_001, 5_000_000),  # p99 just over 1 ms; an older line: no p90
    ],
}


def test_the_limits_are_kernel_modes_validity_limits():
    assert {"p99": LIMITS["delayline_late_p99_ns"], "max": LIMITS["delayline_late_max_ns"]} == LIMITS_NS


def test_report_per_tun_with_link_and_limits():
    parse_stats(json.dumps(STATS))  # the added keys keep the contract's version 1
    doc = lateness_report(
        {"t:w0": STATS, "t:w1": {"error": "no stats"}},
        limits_ns=LIMITS_NS,
        link_names={"t:w0": {"tab": "server->emu", "tba": "emu->server"}},
    )
    assert doc["limits_ns"] == LIMITS_NS
    tab, tba, broken = doc["tuns"]
    assert (tab["netns"], tab["tun"], tab["link"], tab["cpu"]) == ("t:w0", "tab", "server->emu", 1)
    assert tab["lateness_ns"] == {
        "p50": 40_000,
        "p90": 90_000,
        "p99": 160_000,
        "max": 2_800_000,
        "count": 1000,
        "over_1ms": 3,
    }
    assert (tab["queue_max_packets"], tab["queue_max_bytes"]) == (900, 1_350_000)
    assert tab["within_limits"] is True
    # p99 over 1 ms: outside, as validity says; what an older line did not record is null
    assert tba["within_limits"] is False
    assert tba["lateness_ns"]["p90"] is None and tba["queue_max_bytes"] is None
    assert broken == {"netns": "t:w1", "error": "no stats"}
    # max over 20 ms alone is outside too
    late_max = lateness_report({"n": {"cpu": 1, "tuns": [_tun("tab", 100, 20_000_001)]}}, limits_ns=LIMITS_NS)
    assert late_max["tuns"][0]["within_limits"] is False


def test_one_line_for_the_report():
    doc = lateness_report({"t:w0": STATS}, limits_ns=LIMITS_NS, link_names={"t:w0": {"tab": "server->emu"}})
    assert lateness_line(doc) == (
        f"delay line lateness (its own, {REPORT_FILE}): server->emu p50 0.04 / p99 0.16 / max 2.80 ms; "
        "t:w0/tba p50 0.04 / p99 1.00 / max 5.00 ms"
    )
    assert lateness_line(lateness_report({}, limits_ns=LIMITS_NS)) == ""


def test_the_run_directory_has_delayline_json_and_the_report_names_it(tmp_path):
    r = make(plan={"wires": [{"ns": "t:w0", "tuns": [{"name": "tab", "delay_ns": 50_000_000, "link": 0}]}]})
    r.measurements.delaylines = {"t:w0": STATS}
    out = r.write(tmp_path / "run", plots=False)
    doc = json.loads((out / REPORT_FILE).read_text())
    assert [(t["tun"], t["within_limits"]) for t in doc["tuns"]] == [("tab", True), ("tba", False)]
    assert doc["tuns"][0]["link"] == r.config["links"][0]["name"]
    assert "delay line lateness" in r.notice["text"]
    assert REPORT_FILE in (out / "report.html").read_text()
    # the file is tcplab's: --force may replace the directory that holds it
    r.write(out, overwrite=True, plots=False)
    assert (out / REPORT_FILE).is_file()


def test_no_file_without_a_delay_line(tmp_path):
    r = make()
    assert r.measurements.delaylines == {}
    out = r.write(tmp_path / "run", plots=False)
    assert not (out / REPORT_FILE).exists()
    assert "delay line" not in r.notice["text"]
