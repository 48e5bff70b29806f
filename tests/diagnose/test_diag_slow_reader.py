"""A receiver that reads slowly: ss's Recv-Q and rwnd_limited, and the scenario of an archive.

Issue 7, 3.10: on a live host with a slow reader, ss showed ``rwnd_limited:...(35%)`` on the
sender and a 4.6 MB Recv-Q on the receiver, and diagnose reported only ``bbr-without-fq``
(both ends were loopback sockets, which every rule skipped), and the scenario it wrote said
"no ss capture" though ``ss.txt`` was in the archive.

The kernel's side of it: Recv-Q of an established socket is data received and not yet read
(``rcv_nxt - copied_seq``); it fills the receive buffer (``skmem rb``), so the advertised
window shrinks (Linux v6.12 net/ipv4/tcp_output.c: __tcp_select_window() from tcp_space())
and the sender's ``tcpi_rwnd_limited`` time grows (net/ipv4/tcp_output.c:
tcp_chrono_start(sk, TCP_CHRONO_RWND_LIMITED) when the window, not cwnd, stops it).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tcplab.cli import app
from tcplab.diagnose import diagnose_paths
from tcplab.diagnose.rules import SLOW_READ_SHARE

FIX = Path(__file__).parent / "fixtures"
runner = CliRunner()


def findings_of(*paths: Path) -> dict:
    _host, findings = diagnose_paths(list(paths))
    return {f.id: f for f in findings}


def test_the_issue_host_shows_a_slow_reader() -> None:
    by_id = findings_of(FIX / "ss_slow_reader_issue_format.txt", FIX / "sysctl_bbr.txt")
    f = by_id["rwnd-limited"]
    assert f.data["max_share_pct"] == 35.0 and f.data["slow_reader"] is True
    assert f.data["recv_q_bytes"] == 4600832
    assert "receiver application reading slowly" in f.summary and "Recv-Q 4600832 bytes" in f.summary
    # evidence: the sender's line with rwnd_limited and the receiver's state line with Recv-Q
    texts = [e.text for e in f.evidence]
    assert any("rwnd_limited:10024ms(35.0%)" in t for t in texts)
    assert any(t.startswith("ESTAB 4600832") for t in texts)
    assert "slow-reader" not in by_id  # the one finding explains both ends


def test_real_loopback_slow_reader() -> None:
    by_id = findings_of(FIX / "ss_slow_reader_loopback_real.txt")
    assert by_id["rwnd-limited"].data["slow_reader"] is True


def test_receiver_side_alone_is_a_slow_reader_finding() -> None:
    by_id = findings_of(FIX / "ss_slow_reader_receiver_real.txt")
    f = by_id["slow-reader"]
    assert f.severity == "warning" and f.data["recv_q_bytes"] == 16777112
    assert f.data["recv_buffer_share"] == pytest.approx(16777112 / 17503726)
    assert "rwnd-limited" not in by_id


def test_sender_side_alone_is_rwnd_limited_without_naming_the_reader() -> None:
    by_id = findings_of(FIX / "ss_slow_reader_sender_real.txt")
    f = by_id["rwnd-limited"]
    assert f.data["max_share_pct"] == 63.2 and f.data["slow_reader"] is False
    assert "slow-reader" not in by_id


def _ss(recv_q: int, rb: int | None) -> str:
    skmem = f"skmem:(r{recv_q},rb{rb},t0,tb69120,f0,w0,o0,bl0,d0) " if rb else ""
    return (
        "State Recv-Q Send-Q Local Address:Port Peer Address:Port Process\n"
        f"ESTAB {recv_q} 0 10.0.0.2:5201 10.0.0.1:40000\n"
        f"\t {skmem}ts sack cubic wscale:7,7 rto:204 rtt:0.5/0.1 mss:1448 cwnd:10 bytes_received:99999999\n"
    )


@pytest.mark.parametrize(
    ("recv_q", "rb", "slow"),
    [
        (0, 131072, False),
        (int(131072 * SLOW_READ_SHARE) - 1, 131072, False),
        (int(131072 * SLOW_READ_SHARE), 131072, True),
        (600_000, None, False),  # no skmem (ss without -m): only a large absolute backlog counts
        (2_000_000, None, True),
    ],
)
def test_slow_reader_threshold(tmp_path: Path, recv_q: int, rb: int | None, slow: bool) -> None:
    p = tmp_path / "ss.txt"
    p.write_text(_ss(recv_q, rb))
    assert ("slow-reader" in findings_of(p)) is slow


def test_a_reader_that_caught_up_between_snapshots_is_not_slow(tmp_path: Path) -> None:
    a, b = tmp_path / "ss0.txt", tmp_path / "ss1.txt"
    a.write_text(_ss(0, 131072))
    b.write_text(_ss(100_000, 131072))
    assert "slow-reader" not in findings_of(a, b)
    a.write_text(_ss(90_000, 131072))
    assert "slow-reader" in findings_of(a, b)


def _archive(path: Path, members: dict[str, Path]) -> Path:
    manifest = {"schema": "tcplab-collect/1", "files": {}, "missing": []}
    with tarfile.open(path, "w:gz") as tf:
        for name, src in members.items():
            tf.add(src, arcname=name)
            manifest["files"][name] = {"snapshot": 0, "time": 1.7e9} if name.startswith("snap") else {"static": True}
        data = json.dumps(manifest).encode()
        info = tarfile.TarInfo("manifest.json")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return path


def test_scenarios_of_an_archive_use_its_ss_capture(tmp_path: Path) -> None:
    """Every generated scenario takes the RTT from ss.txt when the finding carries none."""
    cap = _archive(
        tmp_path / "cap.tar.gz",
        {
            "snap-0/ss.txt": FIX / "ss_slow_reader_issue_format.txt",
            "snap-0/tc-qdisc.txt": FIX / "tc_mq_fq_codel_format.txt",
            "static/sysctl.txt": FIX / "sysctl_bbr.txt",
        },
    )
    r = runner.invoke(app, ["diagnose", str(cap), "--scenario-dir", str(tmp_path / "sc"), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    ids = {f["id"] for f in doc["findings"]}
    assert {"bbr-without-fq", "rwnd-limited"} <= ids
    fq = next(f for f in doc["findings"] if f["id"] == "bbr-without-fq")
    desc = fq["scenario"]["description"]
    assert "no ss capture" not in desc
    # both ends are loopback: the median of their srtts (15.434 and 0.022 ms)
    assert "RTT 7.728 ms (the median srtt of the 2 connections ss showed over loopback" in desc
    for f in doc["findings"]:
        if f["scenario"]:
            assert "no ss capture" not in f["scenario"]["description"], f["id"]


def test_scenario_without_ss_still_says_so(tmp_path: Path) -> None:
    by_id = findings_of(FIX / "sysctl_bbr.txt", FIX / "tc_mq_fq_codel_format.txt")
    assert "no ss capture" in by_id["bbr-without-fq"].scenario["description"]


# ----------------------------------------------------------------- live, in a namespace

SLOW_READER = textwrap.dedent(
    """
    import socket, time
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 5301)); s.listen(1); s.settimeout(5)
    c, _ = s.accept()
    end = time.monotonic() + 8
    while time.monotonic() < end:
        c.recv(16384)      # 16 kB per 10 ms: 1.6 MB/s, far below what loopback carries
        time.sleep(0.01)
    """
)
FAST_SENDER = textwrap.dedent(
    """
    import socket, time
    for _ in range(50):
        try:
            c = socket.create_connection(("127.0.0.1", 5301), timeout=1); break
        except OSError:
            time.sleep(0.05)
    c.settimeout(0.2)
    buf = b"x" * 65536
    end = time.monotonic() + 8
    while time.monotonic() < end:
        try:
            c.send(buf)
        except OSError:
            pass
    """
)


@pytest.fixture
def namespace():
    if os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("ss") is None:
        pytest.skip("needs root and iproute2 (ip, ss) to create a network namespace")
    ns = f"tcplab-sr{os.getpid() % 100000}"
    try:
        subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=True, timeout=20)
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True, capture_output=True, timeout=20)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        pytest.skip(f"cannot create a network namespace here: {e}")
    try:
        yield ns
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=20)


def test_collect_then_diagnose_a_live_slow_reader(namespace: str, tmp_path: Path) -> None:
    """Both ends on one host (loopback in a namespace), as in the issue; bounded to ~10 s."""
    ns = namespace
    recv = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", SLOW_READER])
    time.sleep(0.3)
    send = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", FAST_SENDER])
    out = tmp_path / "cap.tar.gz"
    try:
        time.sleep(1.5)  # the receive queue fills
        collect = [sys.executable, "-c", "from tcplab.cli import main; main()", "collect"]
        r = subprocess.run(
            ["ip", "netns", "exec", ns, *collect, "-o", str(out), "--interval", "1s", "--count", "2", "-q"],
            capture_output=True,
            text=True,
            timeout=60,  # a hang guard: collect bounds each command itself
        )
        assert r.returncode == 0, r.stderr
    finally:
        for p in (send, recv):
            p.kill()
            p.wait(timeout=10)
    res = runner.invoke(app, ["diagnose", str(out), "--json", "--scenario-dir", str(tmp_path / "sc")])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert "ss" in {i["kind"] for i in doc["inputs"]}
    f = next((f for f in doc["findings"] if f["id"] == "rwnd-limited"), None)
    assert f is not None, [g["id"] for g in doc["findings"]]
    assert f["data"]["slow_reader"] is True and "receiver application reading slowly" in f["summary"]
    for g in doc["findings"]:
        if g["scenario"]:
            assert "no ss capture" not in g["scenario"]["description"], g["id"]
