"""The pcap in the tools people open it with: ``tshark -q -z conv,tcp`` and ``tcptrace -l``.

Skipped with the reason when a tool is not installed; with CI=true a missing tool is a
failure (.ci/run installs tshark and tcptrace when it runs as root). The tools' own
counts must agree with the flow's: frames and bytes per direction (tshark), data and
retransmitted segments, SACK-carrying ACKs, the window scale and MSS it negotiated
(tcptrace).
"""

from __future__ import annotations

import re
import subprocess

import pytest

from conftest import compiled_engine
from export_runs import tool

SCENARIO = {
    "name": "pcap-tools",
    "seed": 5,
    "duration": "3s",
    # software GSO: tcpdump on the sender sees MSS frames (with TSO it sees the skbs), so
    # the tools count the segments the flow's counters count
    "hosts": {"server": {"offload": {"tso": "off"}}, "client": {}},
    "routers": ["emu"],
    "links": [
        {"between": ["server", "emu"], "rate": "1Gbit", "delay": "50us"},
        {"between": ["emu", "client"], "rate": "10Mbit", "delay": "20ms", "loss": {"drop": [100, 400, 401]}},
    ],
    "flows": [{"name": "bulk", "from": "server", "to": "client"}],
}


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    engine = compiled_engine()
    import tcplab

    result = tcplab.run(SCENARIO, core=engine, capture={"flow": "bulk"})
    path = tmp_path_factory.mktemp("tools") / "bulk.pcap"
    path.write_bytes(result.extra_files["bulk.pcap"])
    return result, path


def test_tshark_conversation_matches_the_flow(capture):
    result, path = capture
    out = subprocess.run(
        [tool("tshark"), "-r", str(path), "-q", "-z", "conv,tcp"], capture_output=True, text=True, check=True
    ).stdout
    rows = [line for line in out.splitlines() if "<->" in line]
    assert len(rows) == 1, out
    assert "10.0.0.1:32768" in rows[0] and "10.0.0.2:5201" in rows[0]
    # "A <-> B  frames bytes (B to A) | frames bytes (A to B) | frames bytes (total) ..."
    frames = [int(f) for f, _ in re.findall(r"(\d+)\s+(\d+)\s+(?:bytes|kB|MB)", rows[0])]
    sent = int((result.capture.packets["dir"] == 0).sum())  # A = 10.0.0.1, the sender here
    assert frames == [len(result.capture.packets) - sent, sent, len(result.capture.packets)]


def test_tcptrace_counts_match_the_flow(capture):
    result, path = capture
    out = subprocess.run([tool("tcptrace"), "-l", "-n", str(path)], capture_output=True, text=True, check=True).stdout
    flow = result.flows.iloc[0]

    def field(name: str) -> tuple[int, int]:
        m = re.search(rf"{re.escape(name)}:\s+(\d+)[^\n]*?{re.escape(name)}:\s+(\d+)", out)
        assert m, f"{name} not in tcptrace's output:\n{out}"
        return int(m.group(1)), int(m.group(2))

    assert "1 TCP connection traced" in out
    assert field("actual data pkts")[0] == flow["data_segs_out"]
    assert field("rexmt data pkts")[0] == flow["retrans_segs"] >= 3
    assert field("sack pkts sent")[1] > 0  # the receiver's ACKs carry SACK blocks
    assert field("adv wind scale") == (7, 7)
    assert field("mss requested") == (1460, 1460)
    assert "req 1323 ws/ts:          Y/Y" in out
