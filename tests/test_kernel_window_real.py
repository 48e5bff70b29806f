"""The same window in both worlds, on the real kernel (issue 23 item 2): a short tcplab
validate of tests/data/validate-path.yaml (BBR, 5 Mbit/s, 100 ms RTT, no loss). Marked
``kernel`` (root, network namespaces, the delay line); namespaces use the prefix ``fr``.
``--allow-busy``: a function check, not a timing one (the figures are not judged here).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tcplab.kernel.names import is_ours
from tcplab.kernel.validate import kernel_options, validate

pytestmark = [pytest.mark.kernel]

SCENARIO = Path(__file__).parent / "data" / "validate-path.yaml"
PREFIX = "fr"
SETS = ["flows.0.cc=bbr", "links.1.rate=5Mbit", "links.1.delay=50ms", "links.1.loss=0%", "duration=6s"]


def _skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces, tc, nft)"
    try:
        from tcplab.kernel.delayline import find_delayline

        find_delayline()
    except Exception as e:  # noqa: BLE001 - KernelError: not built; ImportError: no kernel mode
        return str(e)
    return None


def test_both_worlds_are_measured_over_the_same_window(tmp_path):
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    out = tmp_path / "v"
    kept = {}

    def runner(sc, options):
        from tcplab.kernel.run import kernel_run

        kept["kern"] = kernel_run(sc, options=options)
        return kept["kern"]

    v = validate(
        str(SCENARIO),
        overrides=SETS,
        options=kernel_options(prefix=PREFIX, allow_busy=True),
        out=out,
        plots=False,
        kernel_runner=runner,
    )
    kern = kept["kern"]
    doc = json.loads((out / "validation.json").read_text())
    name = str(kern.config["flows"][0]["name"])
    w = doc["windows"][name]
    # the same length in both worlds, each from its own first byte + the 2 s warm-up
    assert w["steady"] is True
    assert w["sim"]["to_s"] - w["sim"]["from_s"] == pytest.approx(w["length_s"])
    assert w["kernel"]["to_s"] - w["kernel"]["from_s"] == pytest.approx(w["length_s"])
    assert w["kernel"]["from_s"] == pytest.approx(w["first_byte_s"]["kernel"] + 2.0)
    # the kernel's receiver count: gaps are NaN, never a 0 once data has arrived
    ts = kern.timeseries
    got = ts.loc[ts["flow_name"] == name, "bytes_received"].to_numpy(dtype=np.float64)
    seen = got[np.isfinite(got)]
    first = int(np.argmax(seen > 0))
    assert (seen[first:] > 0).all() and (np.diff(seen) >= 0).all()
    # the steady window's goodput is the bottleneck's payload rate at most (5 Mbit/s x
    # 1448/1514), and not below the lifetime average, which includes the handshake and
    # STARTUP (5 % for the run's own variation)
    from tcplab.results.paths import flow_paths

    ceiling = flow_paths(kern.config)[name].payload_ceiling_bps
    g = next(m for m in doc["metrics"] if m["metric"] == "goodput_bps")
    assert 0 < g["kernel"] <= ceiling * 1.01
    lifetime = float(kern.flows.set_index("name").loc[name, "goodput_bps"])
    assert g["kernel"] >= 0.95 * lifetime
    assert v.windows[name].late_start == w["late_start"]
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout
    assert not [line for line in left.splitlines() if is_ours(PREFIX, line.split()[0])]
