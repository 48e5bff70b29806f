"""A number of thousands of digits in a host's captured text is a bad input, not a traceback.

CPython refuses ``int()`` of a decimal string of more than 4300 digits (a ``ValueError`` that
names no file), and a float literal that large reads as ``inf``. A kernel counter is a u64
(20 digits), so every reader of host captures refuses more than 30 digits, or a counter that
is not finite, as one ``error: FILE:LINE: ...`` line with exit 2 (issue 21 item 3, the
diagnose side; before, nstat text, tc JSON and ss text gave tracebacks, and a
node_exporter counter of 1e5000 was read as an infinite number of timeouts).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tcplab.cli import app

HUGE = "9" * 5000
runner = CliRunner()

CASES = {
    "nstat.txt": f"#kernel\nTcpExtTCPTimeouts {HUGE} 0.0\n",
    "snmp.txt": "Tcp: RtoAlgorithm CurrEstab\nTcp: 1 " + HUGE + "\n",
    "ss.txt": (
        "State Recv-Q Send-Q Local Address:Port Peer Address:Port Process\n"
        f"ESTAB {HUGE} 0 10.0.0.1:1 10.0.0.2:2\n\t cubic rtt:1/1 cwnd:10\n"
    ),
    "ss-retrans.txt": (
        "State Recv-Q Send-Q Local Address:Port Peer Address:Port Process\n"
        f"ESTAB 0 0 10.0.0.1:1 10.0.0.2:2\n\t cubic rtt:1/1 cwnd:10 retrans:0/{HUGE}\n"
    ),
    "tc.txt": (
        "qdisc tbf 1: dev eth0 root refcnt 2 rate 10Mbit burst 32Kb lat 50ms\n"
        f" Sent {HUGE} bytes 1 pkt (dropped 0, overlimits 0 requeues 0)\n backlog 0b 0p requeues 0\n"
    ),
    "tc.json": (
        '[{"kind":"tbf","handle":"1:","dev":"eth0","root":true,"options":{"rate":1250000,"burst":1,'
        f'"lat":1}},"bytes":{HUGE},"packets":1,"drops":0,"overlimits":0,"requeues":0,"backlog":0,"qlen":0}}]\n'
    ),
    "ethtool.txt": f"NIC statistics:\n     rx_dropped: {HUGE}\n",
    "node.prom": (
        "# HELP node_netstat_TcpExt_TCPTimeouts Statistic TcpExtTCPTimeouts.\n"
        "# TYPE node_netstat_TcpExt_TCPTimeouts untyped\n"
        f"node_netstat_TcpExt_TCPTimeouts {HUGE}\n"
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_huge_number_in_a_capture_is_one_line(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text(CASES[name], encoding="utf-8")
    r = runner.invoke(app, ["diagnose", str(path)])
    assert "Traceback" not in r.output, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert r.exit_code == 2, r.output
    lines = [line for line in r.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}"), r.output
    assert HUGE[:100] not in lines[0]  # never the whole number back
