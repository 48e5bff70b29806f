"""`tcplab diagnose` and `tcplab collect` from the command line: outputs, exit codes, bad input."""

from __future__ import annotations

import gzip
import io
import json
import shutil
import socket
import tarfile
import threading
import time
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import tcplab
from tcplab.cli import app

FIX = Path(__file__).parent / "fixtures"
runner = CliRunner()


def invoke(*args: str):  # noqa: ANN201
    return runner.invoke(app, [str(a) for a in args])


def test_terminal_report_and_exit_codes() -> None:
    r = invoke("diagnose", FIX / "ss_seed000_collapse.txt")
    assert r.exit_code == 0, r.output
    assert "cwnd-collapse" in r.output and "ss_seed000_collapse.txt:3" in r.output
    r = invoke("diagnose", FIX / "ss_seed000_collapse.txt", "--fail-on", "critical")
    assert r.exit_code == 1
    r = invoke("diagnose", FIX / "ss_healthy_format.txt", "--fail-on", "warning")
    assert r.exit_code == 0 and "No known pathology" in r.output
    r = invoke("diagnose", FIX / "tc_tbf_real.txt", "--fail-on", "warning")  # info only
    assert r.exit_code == 0


def test_json_and_markdown() -> None:
    r = invoke("diagnose", FIX / "prom_004_before.txt", FIX / "prom_004_after.txt", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["schema"] == "tcplab-diagnose/1" and doc["snapshots"] == 2 and doc["interval_s"] == 60
    ids = [f["id"] for f in doc["findings"]]
    assert "rto-rate" in ids and "nic-rx-drops" in ids
    rto = next(f for f in doc["findings"] if f["id"] == "rto-rate")
    assert rto["seed_story"].startswith("story 004 (timeouts from microbursts") and rto["evidence"][0]["line"] > 0
    r = invoke("diagnose", FIX / "prom_004_before.txt", FIX / "prom_004_after.txt", "--markdown")
    assert r.exit_code == 0 and r.output.startswith("# tcplab diagnose") and "| warning | rto-rate |" in r.output


def test_scenario_dir(tmp_path: Path) -> None:
    r = invoke("diagnose", FIX / "ss_seed000_collapse.txt", "--scenario-dir", tmp_path / "sc")
    assert r.exit_code == 0, r.output
    files = sorted((tmp_path / "sc").glob("*.yaml"))
    assert len(files) == 2
    for f in files:
        assert tcplab.load_scenario(str(f)).name == yaml.safe_load(f.read_text())["name"]


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"", ":1: empty file"),
        (b"\x00\x01\x02\x03" * 100, ":1: binary data"),
        (b"hello\n", ":1: not a recognised capture"),
        (b"#kernel\nTcpExtTCPTimeouts 1 0.0\nTcpCurrEstab oops 0.0\n", ":3: not an nstat line"),
        (b"Tcp: A B C\nTcp: 1 2 3\nTcpExt: X Y\n", ":3: TcpExt: a header line without its value line"),
        (b"NIC statistics:\n     rx_missed_errors: 1\n     rx_no_buffer_count: x\n", ":3: ethtool -S"),
        (b"qdisc fq 0: root\n Sent 1 bytes 1 pkt (dropped x, overlimits 0 requeues 0)\n", ":2: tc: a malformed"),
        (b'[{"kind": "fq", "drops": 1}, ', ":1: invalid JSON"),
    ],
)
def test_unusable_input_is_one_line_exit_2(tmp_path: Path, content: bytes, needle: str) -> None:
    p = tmp_path / "input.txt"
    p.write_bytes(content)
    r = invoke("diagnose", p)
    assert r.exit_code == 2
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: {p}") and needle in lines[0], r.output


def test_missing_file_and_corrupt_archive(tmp_path: Path) -> None:
    r = invoke("diagnose", tmp_path / "nope.txt")
    assert r.exit_code == 2 and "no such file" in r.output
    good = io.BytesIO()
    with tarfile.open(fileobj=good, mode="w:gz") as tf:
        data = (FIX / "nstat_format.txt").read_bytes()
        info = tarfile.TarInfo("snap-0/nstat.txt")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    (tmp_path / "cut.tar.gz").write_bytes(good.getvalue()[: len(good.getvalue()) // 2])
    r = invoke("diagnose", tmp_path / "cut.tar.gz")
    assert r.exit_code == 2 and r.output.startswith(f"error: {tmp_path / 'cut.tar.gz'}")
    assert len(r.output.strip().splitlines()) == 1


_PEAK = """
import resource, sys
from tcplab.diagnose import ParseError, diagnose_paths
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    diagnose_paths([sys.argv[1]])
    print("no error")
except ParseError as e:
    print(e)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024)
"""


def test_huge_input_bounded(tmp_path: Path) -> None:
    """32 MB: a valid-looking nstat file that goes bad at the end, and one endless line, each read
    in bounded memory (the reader's peak RSS grows by a fraction of the file) -- no wall-clock bound."""
    import subprocess
    import sys

    size = 32 * 2**20
    p = tmp_path / "huge.txt"
    line = b"TcpExtTCPTimeouts               115                0.0\n"
    with open(p, "wb") as f:
        f.write(b"#kernel\n")
        chunk = line * 20000
        for _ in range(size // len(chunk)):
            f.write(chunk)
        f.write(b"garbage here now\n")
    n = 1 + size // len(chunk) * 20000 + 1
    q = tmp_path / "oneline.txt"
    with open(q, "wb") as f:
        f.write(b"ESTAB 0 0 a:1 b:2 ")
        f.write(b"x" * size)
    for path, needle in ((p, f"huge.txt:{n}: not an nstat line"), (q, "oneline.txt:1: line longer than")):
        r = subprocess.run([sys.executable, "-c", _PEAK, str(path)], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        message, grown = r.stdout.strip().splitlines()
        assert needle in message
        assert int(grown) < size / 4, f"{path.name}: peak RSS grew {grown} bytes reading {size}"


def _loopback_traffic(stop: threading.Event) -> None:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    cli = socket.create_connection(srv.getsockname())
    conn, _ = srv.accept()
    conn.settimeout(0.5)

    def drain() -> None:
        while not stop.is_set():
            try:
                if not conn.recv(65536):
                    return
            except OSError:
                continue

    t = threading.Thread(target=drain, daemon=True)
    t.start()
    payload = b"x" * 65536
    deadline = time.monotonic() + 10  # bounded in time whatever happens
    cli.settimeout(0.5)
    while not stop.is_set() and time.monotonic() < deadline:
        try:
            cli.send(payload)
        except OSError:
            time.sleep(0.01)
        time.sleep(0.001)
    cli.close()
    conn.close()
    srv.close()


def test_collect_then_diagnose_on_this_host(tmp_path: Path) -> None:
    for tool in ("ss", "nstat", "tc"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (apt-get install -y iproute2)")
    stop = threading.Event()
    t = threading.Thread(target=_loopback_traffic, args=(stop,), daemon=True)
    t.start()
    try:
        out = tmp_path / "cap.tar.gz"
        r = invoke("collect", "-o", out, "--interval", "1s", "--count", "2")
    finally:
        stop.set()
        t.join(timeout=5)
    assert r.exit_code == 0, r.output
    with tarfile.open(out) as tf:
        names = tf.getnames()
        manifest = json.load(tf.extractfile("manifest.json"))
        ss_text = tf.extractfile("snap-1/ss.txt").read().decode()
    assert "snap-0/ss.txt" in names and "snap-1/proc-net-netstat.txt" in names and "static/sysctl.txt" in names
    assert len(manifest["snapshots"]) == 2
    assert "127.0.0.1" in ss_text
    r = invoke("diagnose", out, "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    # the interval is the time between the snapshots' stamps in the manifest (at least the 1 s
    # slept between them; how much more depends on the machine's load, so no upper bound)
    times = [s["time"] for s in manifest["snapshots"]]
    assert (
        doc["snapshots"] == 2 and doc["interval_s"] == pytest.approx(times[1] - times[0]) and times[1] - times[0] >= 1
    )
    kinds = {i["kind"] for i in doc["inputs"]}
    assert {"ss", "proc_netstat", "nstat_text", "procstat", "sysctl", "uname"} <= kinds
    if shutil.which("ethtool"):
        # read, or the manifest says why not (no NIC statistics, no interface, a failure)
        assert any(k.startswith("ethtool") for k in kinds) or any("ethtool" in m for m in manifest["missing"])
    with gzip.open(out) as g:  # a real gzip
        assert g.read(1)


def test_bad_member_of_a_directory_is_a_note(tmp_path: Path) -> None:
    shutil.copy(FIX / "ss_seed000_collapse.txt", tmp_path / "ss.txt")
    (tmp_path / "tc.json").write_text('[{"kind": "fq", ')
    r = invoke("diagnose", tmp_path, "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert any("tc.json:1: invalid JSON" in n for n in doc["notes"])
    assert "cwnd-collapse" in [f["id"] for f in doc["findings"]]
    (tmp_path / "ss.txt").unlink()
    r = invoke("diagnose", tmp_path)
    assert r.exit_code == 2 and "tc.json:1: invalid JSON" in r.output


def test_collect_without_tools_and_without_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Missing tools and no root are recorded in the manifest, not fatal; diagnose still reads /proc."""
    import tcplab.collect as collect_mod

    real_which = shutil.which
    monkeypatch.setattr(
        collect_mod.shutil, "which", lambda t: None if t in ("ss", "nstat", "tc", "ethtool") else real_which(t)
    )
    monkeypatch.setattr(collect_mod.os, "geteuid", lambda: 1000)
    notes: list[str] = []
    res = collect_mod.collect(tmp_path / "c.tar.gz", interval_s=0.05, count=2, timeout_s=2, log=notes.append)
    assert any("not root" in m for m in res.missing)
    assert any(m.startswith("ss: not installed") for m in res.missing)
    assert any(m.startswith("ethtool: not installed") for m in res.missing) or not collect_mod.physical_interfaces()[0]
    r = invoke("diagnose", res.path, "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["snapshots"] == 2 and any("not installed" in n for n in doc["notes"])


def test_collect_timeout_is_recorded(tmp_path: Path) -> None:
    import tcplab.collect as collect_mod

    cap = collect_mod._Capture(tmp_path, timeout_s=0.2, deadline=time.monotonic() + 300, log=lambda _m: None)
    pidfile = tmp_path / "pid"
    # a command that would run for 10 minutes: the timeout must stop it (checked by its pid, not
    # by the wall clock, which a loaded machine stretches)
    cap.run("slow.txt", ["sh", "-c", f"echo $$ > {pidfile}; exec sleep 600"], {"snapshot": 0})
    assert cap.commands[0]["error"] == "timed out after 0.2 s"
    pid = int(pidfile.read_text())
    assert not Path(f"/proc/{pid}").exists()  # killed and reaped, not left running
    assert "slow.txt" not in cap.files


def test_quiet_prints_nothing_and_answers_by_exit_status(tmp_path: Path) -> None:
    """-q as grep -q: nothing on stdout; 1 when a finding at or above --fail-on (warning by default) exists."""
    r = invoke("diagnose", "-q", FIX / "ss_seed000_collapse.txt")  # critical findings
    assert r.exit_code == 1 and r.output == ""
    r = invoke("diagnose", "-q", FIX / "ss_healthy_format.txt")
    assert r.exit_code == 0 and r.output == ""
    r = invoke("diagnose", "-q", "--fail-on", "critical", FIX / "ss_window_limited_format.txt")  # warnings only
    assert r.exit_code == 0 and r.output == ""
    r = invoke("diagnose", "-q", "--fail-on", "warning", FIX / "ss_window_limited_format.txt")
    assert r.exit_code == 1 and r.output == ""
    r = invoke("diagnose", "--quiet", "--scenario-dir", tmp_path / "sc", FIX / "ss_seed000_collapse.txt")
    assert r.exit_code == 1 and r.output == "" and list((tmp_path / "sc").glob("*.yaml"))
    r = invoke("diagnose", "-q", tmp_path / "nope.txt")  # errors still say what went wrong
    assert r.exit_code == 2 and r.output.startswith("error: ") and "no such file" in r.output
    r = invoke("diagnose", "-q", "--json", FIX / "ss_healthy_format.txt")
    assert r.exit_code == 2 and "--quiet and --json: choose one" in r.output
