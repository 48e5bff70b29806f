"""A run directory with Bandwidth-Manager pods holds each node's ``cilium status``, and
``tcplab diagnose`` reads it: Cilium with BBR on a sub-millisecond cluster is named
(cilium-bbr-low-rtt, story 000), Cilium with CUBIC is not."""

from __future__ import annotations

from pathlib import Path

import pytest

import tcplab
from tcplab.diagnose import diagnose_paths
from tcplab.diagnose.cilium import parse_cilium
from tcplab.diagnose.source import text_source


@pytest.mark.parametrize("bbr", [True, False])
def test_run_dir_cilium_status(tmp_path: Path, bbr: bool) -> None:
    r = tcplab.run(
        "builtin:bandwidth-manager-pod-limit",
        overrides=[f"bandwidth_manager.bbr={str(bbr).lower()}", "duration=1s"],
    )
    out = r.write(tmp_path / "run", plots=False)
    # the pod's node (worker) runs Cilium; the client does not
    assert sorted(p.name for p in out.glob("cilium-status-*.txt")) == ["cilium-status-worker.txt"]
    status = parse_cilium(text_source((out / "cilium-status-worker.txt").read_text()))
    assert status.bandwidth_manager
    assert status.bm_cc == ("bbr" if bbr else "cubic")
    _host, findings = diagnose_paths([out])
    assert ("cilium-bbr-low-rtt" in [f.id for f in findings]) == bbr


def test_no_cilium_status_without_bandwidth_manager_pods(tmp_path: Path) -> None:
    r = tcplab.run("builtin:cni-bandwidth-pod-limit", overrides=["duration=1s"])
    out = r.write(tmp_path / "run", plots=False)
    assert list(out.glob("cilium-status-*.txt")) == []
