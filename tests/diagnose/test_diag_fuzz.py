"""Property tests: arbitrary text never makes a parser raise anything but ParseError.

Two generators: free text (unicode, control characters, NULs) and *mutated real outputs*
(fixture lines shuffled, truncated, with tokens replaced), which reach deep into the
parsers; and, for the JSON inputs (``tc -j``, ``nstat -j``, ``ethtool --json``, the collect
manifest), JSON values of any shape, alone or put anywhere into the real documents (type
confusion). The default run is small and derandomized (the same examples every time);
``-m slow`` runs each target at volume (the fuzzing run, its count printed).
"""

from __future__ import annotations

import copy
import io
import json
import tarfile
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tcplab.diagnose import cilium, ethtool, netstat, procstat, sysctl, tc
from tcplab.diagnose import ss as ss_mod
from tcplab.diagnose.detect import sniff
from tcplab.diagnose.prom import parse_prom
from tcplab.diagnose.source import ParseError, text_source

FIX = Path(__file__).parent / "fixtures"
LINES = sorted({ln for p in FIX.iterdir() if p.suffix in (".txt", ".json") for ln in p.read_text().splitlines()})
TOKENS = sorted({t for ln in LINES for t in ln.split()} | {"", ":", "(", ")", "/", "%", "-1", "1e999", "nan", "\t"})


def _pipeline(src):  # noqa: ANN001, ANN202
    """Sniff + parse + every rule + scenarios: weird but parseable values must not crash the rules."""
    import tcplab
    from tcplab.diagnose.rules import run_rules
    from tcplab.diagnose.snapshot import load_sources

    second = text_source(src.head(1 << 20), "fuzz.txt")
    findings = run_rules(load_sources([src, second]))
    for f in findings:
        if f.scenario is not None:
            tcplab.load_scenario(f.scenario)  # a generated scenario is always valid
    return findings


PARSERS = {
    "pipeline": _pipeline,
    "ss": ss_mod.parse_ss,
    "proc_netstat": netstat.parse_proc_netstat,
    "nstat_text": netstat.parse_nstat_text,
    "nstat_json": netstat.parse_nstat_json,
    "ethtool_stats": ethtool.parse_ethtool_stats,
    "ethtool_rings": ethtool.parse_ethtool_rings,
    "ethtool_rings_json": ethtool.parse_ethtool_rings_json,
    "ethtool_driver": ethtool.parse_ethtool_driver,
    "tc_text": tc.parse_tc_text,
    "tc_json": tc.parse_tc_json,
    "prom": parse_prom,
    "sysctl": sysctl.parse_sysctl,
    "uname": sysctl.parse_uname,
    "procstat": procstat.parse_proc_stat,
    "cilium": cilium.parse_cilium,
    "sniff": sniff,
}


@st.composite
def mutated(draw) -> str:  # noqa: ANN001
    lines = draw(st.lists(st.sampled_from(LINES), max_size=12))
    out = []
    for ln in lines:
        toks = ln.split(" ")
        for _ in range(draw(st.integers(0, 3))):
            if toks:
                i = draw(st.integers(0, len(toks) - 1))
                toks[i] = draw(st.one_of(st.sampled_from(TOKENS), st.text(max_size=6)))
        text = " ".join(toks)
        if draw(st.booleans()):
            text = text[: draw(st.integers(0, len(text)))]
        out.append(text)
    return "\n".join(out)


any_text = st.one_of(st.text(max_size=400), mutated(), st.binary(max_size=200).map(lambda b: b.decode("latin-1")))


def _check(parser, text: str) -> None:  # noqa: ANN001
    try:
        parser(text_source(text.encode("utf-8", "surrogatepass"), "fuzz.txt"))
    except ParseError as e:
        assert str(e).startswith("fuzz.txt")
        assert "\n" not in str(e)


# ------------------------------------------------------------------ JSON of any shape
# Text fuzzing rarely makes valid JSON, so type confusion (a list where an object belongs, a
# string where a number does) gets its own generators: any JSON value, and the real fixtures
# with one value anywhere in them replaced by any JSON value.

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
JSON_FIXTURES = [json.loads(p.read_text()) for p in sorted(FIX.glob("*.json"))]
MANIFEST = {
    "schema": "tcplab-collect/1",
    "snapshots": [{"index": 0, "time": 1.7e9}],
    "files": {"snap-0/ss.txt": {"snapshot": 0, "time": 1.7e9, "command": "ss -tinme", "device": "eth0"}},
    "missing": ["nstat: not installed"],
}


def _paths(doc, prefix=()):  # noqa: ANN001, ANN202
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, (*prefix, i))


def _replace(doc, path, value):  # noqa: ANN001, ANN202
    if not path:
        return value
    out = copy.deepcopy(doc)
    node = out
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return out


@st.composite
def mutated_json(draw, bases: list) -> object:  # noqa: ANN001
    doc = draw(st.sampled_from(bases))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(list(_paths(doc))))
        doc = _replace(doc, path, draw(json_values))
    return doc


any_json = st.one_of(json_values, mutated_json(JSON_FIXTURES))
any_manifest = st.one_of(json_values, mutated_json([MANIFEST]))


def _manifest_archive(doc: object) -> None:
    """A collect archive whose manifest.json is ``doc``, diagnosed whole."""
    from tcplab.diagnose.snapshot import load_host

    buf = io.BytesIO()
    members = {"manifest.json": json.dumps(doc).encode(), "snap-0/ss.txt": (FIX / "ss_healthy_format.txt").read_bytes()}
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "fuzz.tar.gz"
        p.write_bytes(buf.getvalue())
        try:
            load_host([p])
        except ParseError as e:
            assert str(e).startswith(str(p)) and "\n" not in str(e)


def _manifest_only(doc: object) -> None:
    from tcplab.diagnose.snapshot import validate_manifest

    try:
        validate_manifest(doc, "fuzz.tar.gz:manifest.json")
    except ParseError as e:
        assert str(e).startswith("fuzz.tar.gz:manifest.json") and "\n" not in str(e)


def _json_text(parser):  # noqa: ANN001, ANN202
    return lambda doc: _check(parser, json.dumps(doc))


JSON_TARGETS = {
    "json-nstat_json": (_json_text(netstat.parse_nstat_json), any_json),
    "json-tc_json": (_json_text(tc.parse_tc_json), any_json),
    "json-ethtool_rings_json": (_json_text(ethtool.parse_ethtool_rings_json), any_json),
    "json-pipeline": (_json_text(_pipeline), any_json),
    "manifest": (_manifest_only, any_manifest),
    "manifest-archive": (_manifest_archive, any_manifest),
}


def _text_target(parser):  # noqa: ANN001, ANN202
    return lambda text: _check(parser, text)


TARGETS = {**{name: (_text_target(p), any_text) for name, p in PARSERS.items()}, **JSON_TARGETS}

# The default run: small, fixed (derandomize: the same examples every run, no example database),
# so it is cheap enough to run always and cannot flake; `-m slow` is the fuzzing run.
FAST_EXAMPLES = 200  # a few hundred per target (issue 7, 4.1): ~2 s each
FAST = settings(
    max_examples=FAST_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_parsers_raise_only_parse_error(name: str) -> None:
    target, strategy = TARGETS[name]
    FAST(given(strategy)(target))()


FUZZ_EXAMPLES = 5000


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TARGETS))
def test_fuzz_at_volume(name: str) -> None:
    target, strategy = TARGETS[name]
    count = 0

    @settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(strategy)
    def run(value) -> None:  # noqa: ANN001
        nonlocal count
        count += 1
        target(value)

    run()
    print(f"\nfuzz {name}: {count} inputs, 0 crashes")
