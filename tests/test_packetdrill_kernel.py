"""tcplab.packetdrill.kernel: packetdrill built from the corpus and run on this machine's kernel.

The unit tests (command lines, output parsing, the build's checks, the CLI with a stand-in
for the runs) need nothing. The kernel tests need root, ``unshare`` and ``ip``, a C compiler,
make, bison and flex, and the corpus (google/packetdrill, ``../shared/packetdrill`` beside
the project or ``$TCPLAB_PACKETDRILL_DIR``); they are skipped with the reason otherwise. They
build packetdrill once (cached in ~/.cache/tcplab, a few seconds the first time) and run
one script of the corpus (under a second), a copy of it with one outbound packet's
sequence number changed, and a stand-in binary that outlives its timeout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tcplab.packetdrill import kernel as K

CORPUS = Path(os.environ.get("TCPLAB_PACKETDRILL_DIR", Path(__file__).resolve().parents[2] / "shared" / "packetdrill"))
NET = CORPUS / "gtests" / "net"
SOURCE = NET / "packetdrill"
#: Passed on a 6.18 kernel in the corpus run (and is plain slow start: no timing subtleties).
PASSING = NET / "tcp" / "slow_start" / "slow-start-ack-per-1pkt.pkt"

# ----------------------------------------------------------------------------- unit


def test_ipv4_command_line_is_run_alls():
    argv = K.packetdrill_args("/b/packetdrill", "/c/tcp/x/y.pkt")
    assert argv[0] == "/b/packetdrill"
    assert argv[1] == "--send_omit_free"
    assert argv[-1] == "y.pkt"  # run from the script's directory
    flags = " ".join(argv[2:-1])
    assert flags == (
        "--ip_version=ipv4 --local_ip=192.168.0.1 --gateway_ip=192.168.0.1 --netmask_ip=255.255.0.0 "
        "--remote_ip=192.0.2.1 -D TFO_COOKIE=3021b9d889017eeb -D CODE=host_unreachable "
        "-D CMSG_LEVEL_IP=SOL_IP -D CMSG_TYPE_RECVERR=IP_RECVERR"
    )


def test_ipv6_only_scripts_get_the_ipv6_flags_and_extra_args_come_last():
    assert K.variant_for("/c/mtu_probe/basic-v6.pkt") == "ipv6"
    assert K.variant_for("/c/mtu_probe/basic-v4.pkt") == "ipv4"
    assert K.variant_for("/c/x/simple1.pkt") == "ipv4"
    argv = K.packetdrill_args("pd", "basic-v6.pkt", "ipv6", ["-v"])
    assert "--ip_version=ipv6" in argv and "--mtu=1520" in argv and "--remote_ip=fd3d:fa7b:d17d::1" in argv
    assert argv[-2:] == ["-v", "basic-v6.pkt"]


def test_netns_command_brings_lo_up_and_execs():
    cmd = K.netns_command(["pd", "-x", "a b.pkt"])
    assert cmd[:5] == ["unshare", "--net", "--", "sh", "-c"]
    assert "--mount" not in cmd
    assert cmd[5] == 'set -e; ip link set lo up; exec "$@"'
    assert cmd[-3:] == ["pd", "-x", "a b.pkt"]


def test_netns_command_bind_mounts_flattened_links_in_its_own_mount_namespace():
    cmd = K.netns_command(["pd"], [(Path("/c/tcp/common/defaults.sh"), Path("/c/common/my defaults.sh"))])
    assert cmd[:6] == ["unshare", "--net", "--mount", "--propagation", "private", "--"]
    assert "mount --bind '/c/common/my defaults.sh' /c/tcp/common/defaults.sh" in cmd[cmd.index("-c") + 1]


def _tree(tmp_path: Path) -> Path:
    """net/common/defaults.sh (real), net/tcp/common/defaults.sh (a flattened link to it),
    net/tcp/common/set_sysctls.py (a real script), net/tcp/x/s.pkt."""
    net = tmp_path / "net"
    (net / "common").mkdir(parents=True)
    (net / "common" / "defaults.sh").write_text("#!/bin/sh\nsysctl -q net.ipv4.tcp_sack=1\n")
    (net / "tcp" / "common").mkdir(parents=True)
    (net / "tcp" / "common" / "defaults.sh").write_text("../../common/defaults.sh")
    (net / "tcp" / "common" / "set_sysctls.py").write_text("#!/usr/bin/env python3\nimport os\n")
    (net / "tcp" / "common" / "gone.sh").write_text("../../common/nothere.sh")
    (net / "tcp" / "x").mkdir()
    (net / "tcp" / "x" / "s.pkt").write_text("0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n")
    return net


def test_flattened_links_are_found_and_only_they(tmp_path):
    net = _tree(tmp_path)
    found = K.flattened_links(net / "tcp" / "x" / "s.pkt")
    assert found == [((net / "tcp" / "common" / "defaults.sh").resolve(), (net / "common" / "defaults.sh").resolve())]


def test_real_symlinks_are_left_alone(tmp_path):
    net = _tree(tmp_path)
    link = net / "tcp" / "common" / "defaults.sh"
    link.unlink()
    link.symlink_to("../../common/defaults.sh")
    assert K.flattened_links(net / "tcp" / "x" / "s.pkt") == []


PACKET_FAIL = """\
sysctl: setting key "net.ipv4.tcp_congestion_control": Operation not permitted
s.pkt:35: error handling packet: timing error: expected outbound packet at 0.316591 sec but happened at 0.323586 sec; tolerance 0.004000 sec
script packet:  0.316591 P. 16001:18001(2000) ack 1
actual packet:  0.323586 P. 16001:18001(2000) ack 1 win 1050
"""

PYTHON_FAIL = """\
20
36
s.pkt:51: error in Python code
Traceback (most recent call last):
  File "/tmp/code_JKJHxH", line 453, in <module>
    print(tcpi_snd_cwnd); assert tcpi_snd_cwnd == 40, tcpi_snd_cwnd
AssertionError: 36
s.pkt: error executing code: 'python3' returned non-zero status 1
"""


@pytest.mark.parametrize(
    ("rc", "output", "status", "first"),
    [
        (0, "", "pass", ""),
        (1, PACKET_FAIL, "fail", "s.pkt:35: error handling packet: timing error:"),
        (
            1,
            "s.pkt:12: runtime error in setsockopt call: Expected result 0 but got -1 with errno 1 (Operation not permitted)\n",
            "fail",
            "s.pkt:12: runtime error in setsockopt",
        ),
        (
            1,
            "s.pkt:7: error executing `ss -ti` command: non-zero status 1\n",
            "fail",
            "s.pkt:7: error executing `ss -ti`",
        ),
        (1, PYTHON_FAIL, "fail", "s.pkt:51: error in Python code: AssertionError: 36"),
        (1, "s.pkt:4: parse error at '': syntax error\n", "error", "s.pkt:4: parse error"),
        (
            1,
            "sh: 1: ../common/nothere.sh: not found\ns.pkt: error executing init command: non-zero status 127\n",
            "error",
            "s.pkt: error executing init command",
        ),
        (1, "s.pkt: option 'bogus' unknown\n", "error", "s.pkt: option 'bogus' unknown"),
        (1, "unshare: unshare failed: Operation not permitted\n", "error", "unshare: unshare failed"),
        (127, "sh: 1: exec: /x/packetdrill: not found\n", "error", "sh: 1: exec"),
        (1, "", "fail", "exit status 1"),
    ],
)
def test_classify(rc, output, status, first):
    got_status, got_first = K.classify(rc, output)
    assert got_status == status
    assert got_first.startswith(first)


def test_classify_timeout():
    assert K.classify(-15, "", timed_out=True) == ("timeout", "")


def test_find_scripts_sorted_once_each(tmp_path):
    for rel in ("b/2.pkt", "b/1.pkt", "a/z.pkt", "a/notes.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    got = K.find_scripts([tmp_path / "b", tmp_path, tmp_path / "a" / "z.pkt"])
    assert [p.relative_to(tmp_path).as_posix() for p in got] == ["b/1.pkt", "b/2.pkt", "a/z.pkt"]


def test_format_and_totals():
    r = K.KernelScriptResult("/c/tcp/x/s.pkt", "fail", 1.234, "s.pkt:3: error handling packet: x")
    assert K.format_result(r, Path("/c/tcp")) == "fail        1.23  x/s.pkt  s.pkt:3: error handling packet: x"
    ok = K.KernelScriptResult("/c/tcp/x/t.pkt", "pass", 0.5)
    assert K.format_result(ok, Path("/c/tcp")) == "pass        0.50  x/t.pkt"
    assert K.totals([r, ok, ok]) == {"pass": 2, "fail": 1, "timeout": 0, "error": 0}


def test_missing_build_tools_are_named_before_building(tmp_path, monkeypatch):
    src = tmp_path / "src"
    src.mkdir()
    (src / "packetdrill.c").write_text("int main(void) { return 0; }\n")
    monkeypatch.setattr(K.shutil, "which", lambda name: None if name in ("bison", "flex") else f"/usr/bin/{name}")
    with pytest.raises(K.PacketdrillBuildError) as e:
        K.build_packetdrill(src, tmp_path / "cache")
    msg = str(e.value)
    assert "\n" not in msg and "bison (bison)" in msg and "flex (flex)" in msg and "make" not in msg
    assert not (tmp_path / "cache").exists()


def test_source_hash_follows_the_files(tmp_path):
    (tmp_path / "a.c").write_text("1")
    h = K.source_hash(tmp_path)
    assert len(h) == 12 and h == K.source_hash(tmp_path)
    (tmp_path / "a.c").write_text("2")
    assert K.source_hash(tmp_path) != h


def test_find_source_from_the_corpus_paths(tmp_path):
    src = tmp_path / "gtests" / "net" / "packetdrill"
    src.mkdir(parents=True)
    (src / "packetdrill.c").write_text("")
    (src / "configure").write_text("")
    (tmp_path / "gtests" / "net" / "tcp" / "x").mkdir(parents=True)
    assert K.find_source(tmp_path / "gtests" / "net" / "tcp" / "x") == src.resolve()
    assert K.find_source(tmp_path) == src.resolve()
    assert K.find_source(tmp_path / "gtests" / "net" / "tcp").parent.name == "net"


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_failed_build_names_its_log(tmp_path, monkeypatch):
    src = tmp_path / "src"
    src.mkdir()
    (src / "packetdrill.c").write_text("")
    (src / "configure").write_text("echo configured\n")
    (src / "Makefile").write_text("all:\n\t@echo 'parser.y:1: oops' && false\n")
    monkeypatch.setattr(K, "missing_build_tools", lambda: [])
    with pytest.raises(K.PacketdrillBuildError) as e:
        K.build_packetdrill(src, tmp_path / "cache")
    msg = str(e.value)
    assert "\n" not in msg and "make" in msg
    log = Path(msg.rsplit("see ", 1)[1])
    assert log.name == "build.log" and log.is_file() and "parser.y:1: oops" in log.read_text()
    assert not (tmp_path / "cache" / f"packetdrill-{K.source_hash(src)}").exists()


def test_run_script_without_a_binary_is_an_error(tmp_path):
    r = K.run_script(tmp_path / "nothere", tmp_path / "s.pkt", allow_cc=False)
    assert r.status == "error" and "no packetdrill binary" in r.first_error


def test_cli_prints_a_line_per_script_totals_and_json(tmp_path, monkeypatch, capsys):
    for name in ("a.pkt", "b.pkt"):
        (tmp_path / "d" / name).parent.mkdir(exist_ok=True)
        (tmp_path / "d" / name).write_text("")

    def fake_run(binary, script, timeout_s=60, extra_args=(), allow_cc=True):
        ok = Path(script).name == "a.pkt"
        return K.KernelScriptResult(str(script), "pass" if ok else "fail", 0.25, "" if ok else "b.pkt:1: error x")

    monkeypatch.setattr(K, "run_script", fake_run)
    out_json = tmp_path / "o" / "r.json"
    assert K.main(["--binary", "/x/pd", "--json", str(out_json), "--rerun-failed", str(tmp_path / "d")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "pass        0.25  a.pkt"
    assert lines[1] == "fail        0.25  b.pkt  b.pkt:1: error x"
    assert lines[2].startswith("total: 2 scripts  pass 1  fail 1  timeout 0  error 0")
    assert "rerun" in lines[3] and lines[4].startswith("fail") and lines[5].startswith("rerun: 1 scripts")
    doc = json.loads(out_json.read_text())
    assert doc["totals"] == {"pass": 1, "fail": 1, "timeout": 0, "error": 0}
    assert [r["status"] for r in doc["results"]] == ["pass", "fail"] and len(doc["reruns"]) == 1


# ----------------------------------------------------------------------------- kernel


def _kernel_skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces, a TUN device)"
    for tool in ("unshare", "ip"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if not Path("/proc/self/ns/net").exists():
        return "no network namespaces"
    done = subprocess.run(["unshare", "--net", "true"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return f"unshare --net failed: {done.stderr.strip()}"
    return None


def _build_skip_reason() -> str | None:
    reason = _kernel_skip_reason()
    if reason:
        return reason
    missing = K.missing_build_tools()
    if missing:
        return "building packetdrill needs " + ", ".join(missing)
    if not (SOURCE / "packetdrill.c").is_file() or not PASSING.is_file():
        return f"no packetdrill corpus at {CORPUS} (set TCPLAB_PACKETDRILL_DIR)"
    return None


@pytest.fixture(scope="module")
def binary() -> Path:
    reason = _build_skip_reason()
    if reason:
        pytest.skip(reason)
    return K.build_packetdrill(SOURCE)


@pytest.mark.kernel
def test_build_is_cached(binary):
    assert os.access(binary, os.X_OK) and (binary.parent / "build.log").is_file()
    # A second call reuses the build: neither the binary nor its build log is written again.
    before = (binary.stat().st_mtime_ns, (binary.parent / "build.log").stat().st_mtime_ns)
    assert K.build_packetdrill(SOURCE) == binary
    assert (binary.stat().st_mtime_ns, (binary.parent / "build.log").stat().st_mtime_ns) == before


@pytest.mark.kernel
def test_a_corpus_script_passes_on_the_kernel(binary):
    r = K.run_script(binary, PASSING, timeout_s=30)
    assert r.status == "pass", r.output_tail
    assert r.variant == "ipv4" and r.returncode == 0 and r.first_error == ""


@pytest.mark.kernel
def test_a_mutated_script_fails_at_the_mismatching_line(binary, tmp_path):
    lines = PASSING.read_text().splitlines()
    target = "   +0 > P. 12001:14001(2000) ack 1"
    n = lines.index(target)
    lines[n] = "   +0 > P. 12002:14002(2000) ack 1"
    # the init command's relative ../common/defaults.sh, pointed at the corpus's real file
    defaults = (NET / "common" / "defaults.sh").resolve()
    text = "\n".join(lines) + "\n"
    assert "`../common/defaults.sh" in text
    text = text.replace("`../common/defaults.sh", f"`{defaults}")
    script = tmp_path / "mutated.pkt"
    script.write_text(text)
    r = K.run_script(binary, script, timeout_s=30)
    assert r.status == "fail", r.output_tail
    assert r.first_error.startswith(f"mutated.pkt:{n + 1}: error handling packet"), r.first_error
    assert "tcp_seq" in r.first_error or "seq" in r.first_error, r.first_error


@pytest.mark.kernel
def test_a_timeout_kills_the_whole_process_group(tmp_path):
    reason = _kernel_skip_reason()
    if reason:
        pytest.skip(reason)
    marker = f"tcplab-pd-test-{os.getpid()}"
    fake = tmp_path / "packetdrill"
    fake.write_text(f"#!/bin/sh\nsh -c 'exec -a {marker} sleep 60' &\necho started\nsleep 60\n")
    fake.chmod(0o755)
    (tmp_path / "s.pkt").write_text("")
    r = K.run_script(fake, tmp_path / "s.pkt", timeout_s=1, allow_cc=False)
    assert r.status == "timeout" and r.first_error.startswith("timed out after 1 s")
    assert r.seconds < 10
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True, check=False)
    assert left.stdout.strip() == ""
