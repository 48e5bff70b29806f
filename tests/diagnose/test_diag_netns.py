"""`tcplab collect` inside a network namespace, on traffic the test makes, then `diagnose`.

Two namespaces joined by a veth pair, a tbf shaper with a small queue on the sender's
side, and a bulk TCP transfer between them (bounded in time; it never leaves the two
namespaces this test creates). `tcplab collect` runs in the sender's namespace; `diagnose`
must find the connection in `ss`, the shaper in `tc`, and report the shaper's drops or
shaping. Needs root and iproute2; skipped otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tcplab.cli import app

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("tc") is None,
    reason="needs root and iproute2 (ip, tc) to create network namespaces",
)

SENDER_ADDR = "10.77.0.1"
RECEIVER_ADDR = "10.77.0.2"

RECEIVER = textwrap.dedent(
    f"""
    import socket, time
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("{RECEIVER_ADDR}", 5201)); s.listen(1); s.settimeout(10)
    c, _ = s.accept(); c.settimeout(1)
    end = time.monotonic() + 12
    while time.monotonic() < end:
        try:
            if not c.recv(1 << 16):
                break
        except OSError:
            pass
    """
)

SENDER = textwrap.dedent(
    f"""
    import socket, time
    for _ in range(50):
        try:
            c = socket.create_connection(("{RECEIVER_ADDR}", 5201), timeout=1); break
        except OSError:
            time.sleep(0.1)
    c.settimeout(1)
    buf = b"x" * (1 << 16)
    end = time.monotonic() + 6
    while time.monotonic() < end:
        try:
            c.send(buf)
        except OSError:
            pass
    c.close()
    """
)


def sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, timeout=20)


@pytest.fixture
def two_namespaces():
    tag = f"{os.getpid() % 100000}"
    a, b = f"tcplab-a{tag}", f"tcplab-b{tag}"
    va, vb = f"tla{tag}", f"tlb{tag}"
    try:
        sh("ip", "netns", "add", a)
        sh("ip", "netns", "add", b)
        sh("ip", "link", "add", va, "netns", a, "type", "veth", "peer", "name", vb, "netns", b)
        for ns, dev, addr in ((a, va, SENDER_ADDR), (b, vb, RECEIVER_ADDR)):
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
        # A 20 Mbit/s shaper with a ~15 ms queue: a bulk flow overruns it.
        sh("ip", "netns", "exec", a, "tc", "qdisc", "add", "dev", va, "root", "tbf", "rate", "20mbit", "burst",
           "32kbit", "latency", "15ms")  # fmt: skip
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        for ns in (a, b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        pytest.skip(f"cannot create network namespaces here: {e}")
    try:
        yield a, b, va
    finally:
        for ns in (a, b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=20)


def test_collect_in_a_namespace_sees_the_flow_and_the_shaper(two_namespaces, tmp_path: Path) -> None:
    a, b, va = two_namespaces
    recv = subprocess.Popen(["ip", "netns", "exec", b, sys.executable, "-c", RECEIVER])
    send = subprocess.Popen(["ip", "netns", "exec", a, sys.executable, "-c", SENDER])
    try:
        time.sleep(1.0)  # let the flow start and fill the shaper
        out = tmp_path / "cap.tar.gz"
        collect = [sys.executable, "-c", "from tcplab.cli import main; main()", "collect"]
        r = subprocess.run(
            ["ip", "netns", "exec", a, *collect, "-o", str(out), "--interval", "1s", "--count", "2", "-q"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 0, r.stderr
    finally:
        for p in (send, recv):
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()

    from typer.testing import CliRunner

    res = CliRunner().invoke(app, ["diagnose", str(out), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["snapshots"] == 2
    kinds = {i["kind"] for i in doc["inputs"]}
    assert "ss" in kinds and any(k.startswith("tc") for k in kinds), kinds
    # The shaper on the sender's veth: a bulk flow into a 15 ms tbf queue must be shaped
    # (overlimits) and, with CUBIC filling the queue, dropped.
    shaper = [f for f in doc["findings"] if f["id"] in ("tbf-drops", "tbf-shaping")]
    assert shaper, [f["id"] for f in doc["findings"]]
    assert any(va in json.dumps(f) for f in shaper)
