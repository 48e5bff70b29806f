"""The traffic agent over loopback (no namespace, no root): bulk, maerts and rr endpoints in
one agent process, its ss samples and its JSON."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tcplab.diagnose.ss import parse_lines
from tcplab.kernel.agent import CHUNK_BYTES
from tcplab.kernel.measure import ss_samples


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def flows_spec(tmp_path: Path, duration_ns: int, t0: int) -> dict:
    ports = [free_port() for _ in range(6)]
    apps = [
        ({"kind": "bulk"}, "client"),  # bulk: the client writes
        ({"kind": "bulk", "bytes": 3 * CHUNK_BYTES + 5}, "server"),  # maerts with a byte count
        ({"kind": "rr", "request_bytes": 100, "response_bytes": 3000, "think_ns": 1_000_000}, "client"),
    ]
    listen, connect = [], []
    for i, (app, side) in enumerate(apps):
        server, client = ports[2 * i], ports[2 * i + 1]
        common = {"flow": i, "cc": "cubic", "app": app, "data_side": side}
        listen.append({**common, "role": "server", "addr": "127.0.0.1", "port": server, "peer_addr": "127.0.0.1",
                       "peer_port": client})  # fmt: skip
        connect.append({**common, "addr": "127.0.0.1", "port": server, "local_addr": "127.0.0.1",
                        "local_port": client, "start_ns": 0, "stop_ns": None})  # fmt: skip
    return {
        "node": "lo",
        "addr": "127.0.0.1",
        "t0_monotonic_ns": t0,
        "duration_ns": duration_ns,
        "sample_interval_ns": 100_000_000,
        "cpu": None,
        "listen": listen,
        "connect": connect,
        "out": str(tmp_path),
    }


def run_agent(tmp_path: Path, spec: dict, *, signal_after_s: float | None = None) -> tuple[dict, str]:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tcplab.kernel.agent", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert proc.stdout.readline().strip() == "ready"
        if signal_after_s is not None:
            time.sleep(signal_after_s)
            proc.terminate()
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    doc = json.loads((tmp_path / "agent-lo.json").read_text())
    text = (tmp_path / "ss-samples-lo.txt").read_text()
    return doc, text


def test_agent_runs_bulk_maerts_and_rr(tmp_path):
    duration = 1_000_000_000
    t0 = time.monotonic_ns() + 300_000_000
    doc, text = run_agent(tmp_path, flows_spec(tmp_path, duration, t0))
    assert doc["errors"] == [] and doc["stopped_by"] == "deadline"
    eps = {(e["flow"], e["role"]): e for e in doc["endpoints"]}
    assert len(eps) == 6
    for ep in eps.values():
        assert ep["cc_set"] == "cubic" and ep["tcp_info"]["snd_mss"] > 0
        # TCP_INFO read at the end: after the deadline, before the agent wrote its result (how
        # late after the deadline is the machine's load, not the agent's behaviour)
        assert duration <= ep["end_ns"] <= doc["ended_ns"]
    # bulk: the client wrote, the server read (the two sockets' counts are read one after the
    # other while the data flows at several GB/s: no order between them)
    c, s = eps[(0, "client")], eps[(0, "server")]
    assert c["bytes_written"] > 0 and s["bytes_read"] > 0
    assert s["tcp_info"]["bytes_received"] >= s["bytes_read"]  # counted just before TCP_INFO
    # tcpi_bytes_acked counts the SYN's sequence number too (Linux v6.12 net/ipv4/tcp_input.c:
    # tcp_snd_una_update() from the ISN), tcpi_bytes_sent only data
    assert c["tcp_info"]["bytes_acked"] <= c["tcp_info"]["bytes_sent"] + 1
    # maerts with a byte count: the server wrote exactly that and shut down; the client read it all
    c, s = eps[(1, "client")], eps[(1, "server")]
    assert s["bytes_written"] == 3 * CHUNK_BYTES + 5 and s["done_ns"] is not None
    assert s["acked_ns"] >= s["done_ns"]  # then all of it was acknowledged
    assert s["tcp_info"]["bytes_acked"] >= 3 * CHUNK_BYTES + 5 + 1  # + the SYN
    assert c["bytes_read"] == 3 * CHUNK_BYTES + 5 and c["done_ns"] is not None
    # rr: each transaction wrote a request and read a whole response
    c, s = eps[(2, "client")], eps[(2, "server")]
    n = len(c["rr"]["latency_ns"])
    assert n > 10 and all(x > 0 for x in c["rr"]["latency_ns"])
    # counts as when TCP_INFO was read: a transaction may be under way then
    assert 3000 * n <= c["bytes_read"] < 3000 * (n + 1) and n * 100 <= c["bytes_written"] <= (n + 1) * 100
    assert c["rr"]["start_ns"] == sorted(c["rr"]["start_ns"])
    # ss's lines every 100 ms from t0 to the end (read in-process): 11 samples, each with the
    # flows' sockets
    samples = ss_samples(text)
    assert doc["ss"]["samples"] + doc["ss"]["missed"] == 11 == len(samples) + doc["ss"]["missed"]
    last = samples[-1][1]
    local = {s.local for s in last}
    assert f"127.0.0.1:{eps[(0, 'client')]['local'].split(':')[1]}" in local


def test_agent_writes_its_json_on_sigterm(tmp_path):
    t0 = time.monotonic_ns() + 200_000_000
    doc, _ = run_agent(tmp_path, flows_spec(tmp_path, 30_000_000_000, t0), signal_after_s=0.8)
    # it ended on the signal, not after the 30 s of the run (by its own clock: no wall-clock bound)
    assert doc["stopped_by"] == "signal" and doc["ended_ns"] < doc["duration_ns"]
    bulk = next(e for e in doc["endpoints"] if e["flow"] == 0 and e["role"] == "server")
    assert bulk["tcp_info"]["bytes_received"] > 0


def test_ss_lines_of_loopback_parse():
    # the agent's ss command on this machine prints what the shared parser reads
    if shutil.which("ss") is None:
        pytest.skip("ss (iproute2) is not installed")
    out = subprocess.run(["ss", "-tinH", "state", "connected", "src", "127.0.0.1"], capture_output=True, text=True)
    assert out.returncode == 0
    parse_lines(enumerate(out.stdout.splitlines(), 1), "ss")


@pytest.mark.skipif(shutil.which("ip") is None, reason="ip (iproute2) is not installed")
def test_start_agents_names_the_node_that_did_not_start(tmp_path):
    import kernel_pair
    from tcplab.kernel.agent import start_agents
    from tcplab.kernel.errors import KernelError
    from tcplab.loader import load_scenario

    config = load_scenario(str(Path(__file__).parent / "data" / "kernel" / "pair" / "scenario.yaml")).to_core()
    plan = kernel_pair.PairPlan(config, "tlh3-absent")  # no such namespaces
    with pytest.raises(KernelError, match=r"kernel: the traffic agent of b did not start: .*tlh3-absent-b"):
        start_agents(plan, config, tmp_path, time.monotonic_ns() + 10**9)
