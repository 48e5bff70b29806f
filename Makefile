# tcplab: two commands for a fresh machine.
#   make reproduce  set everything up, then replay the five stories in their quick form
#                   (tcplab reproduce --all --quick); index in out/reproduce/index.html
#   make test       set everything up, then run every default test (Rust: optimised with debug
#                   assertions and overflow checks, profile release-checks; Python)
# make setup also builds tcplab-delayline (target/release/), the delay line of kernel mode.
# Other targets: make demo (compare CUBIC and BBR on the built-in lossy path, 100 ms RTT,
#                5 Mbit/s, 1% loss; report in out/demo/, replaced on each run) | make setup | make bench (tcplab vs
#                ns-3, several minutes) | make bench-quick | make bench-sweep (tcplab sweep: one
#                process vs the local pool, 40 short runs) | make test-slow | make lint (rustfmt, ruff) | make verdicts (regenerate the
#                docs' verdicts from full and quick replays) | make clean

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: reproduce demo test lint setup bench bench-quick bench-sweep test-slow conformance verdicts clean

$(STAMP): pyproject.toml Cargo.toml $(shell find crates -name '*.rs' -o -name Cargo.toml) $(shell find python -name '*.py' -o -name '*.yaml')
	@test -d $(VENV) || { echo "tcplab: creating $(VENV)"; $(PYTHON) -m venv $(VENV); }
	@echo "tcplab: installing the Python dependencies (pip; a minute from a warm cache, more from the network)"
	$(PY) -m pip install --quiet --upgrade pip
	@echo "tcplab: building the engine (Rust, maturin, release profile: about a minute the first time, seconds after) and installing tcplab into $(VENV)"
	$(PY) -m pip install --quiet -e .
	@echo "tcplab: building tcplab-delayline, kernel mode's delay line (target/release/)"
	cargo build --quiet --release -p tcplab-delayline
	touch $(STAMP)

# The test extras (pytest, hypothesis, flent, dpkt, dask, nbclient, ipykernel), installed
# by name from pyproject.toml's [test] and [sweep] lists, so that `make test` does not
# rebuild the engine that `make setup` built and `make reproduce` never installs them.
$(TEST_STAMP): $(STAMP) pyproject.toml
	@echo "tcplab: installing the test extras (pytest, flent, dask, nbclient, ...)"
	$(PY) -c "import tomllib; e = tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']; print('\n'.join(r for r in e['test'] + e['sweep'] if not r.startswith('tcplab')))" > $(VENV)/test-requirements.txt
	$(PY) -m pip install --quiet -r $(VENV)/test-requirements.txt
	touch $(TEST_STAMP)

setup: $(STAMP)

reproduce: $(STAMP)
	$(VENV)/bin/tcplab reproduce --all --quick -o out/reproduce --force
	@echo "index: out/reproduce/index.html (and out/reproduce/index.md)"

demo: $(STAMP)
	$(VENV)/bin/tcplab compare builtin:cubic-vs-bbr-lossy --set flows.0.cc=cubic,bbr -o out/demo --force
	@echo "report: out/demo/report.html"

test: $(TEST_STAMP)
	@echo "tcplab: building and running the Rust tests (profile release-checks: optimised, with debug assertions and overflow checks; a second build of the engine, about 2 minutes on 2 cores the first time)"
	cargo test --workspace --profile release-checks
	$(PY) -m pytest -q

# The code's shape as CI checks it: rustfmt (rustfmt.toml) and ruff (pyproject.toml's
# [tool.ruff]); `cargo fmt --all` and `ruff format python tests bench` fix what they report.
lint: $(TEST_STAMP)
	cargo fmt --all --check
	$(VENV)/bin/ruff check python tests bench
	$(VENV)/bin/ruff format --check python tests bench

test-slow: $(TEST_STAMP)
	$(PY) -m pytest -q -m slow

bench: $(STAMP)
	$(PY) bench/run.py

bench-quick: $(STAMP)
	$(PY) bench/run.py --quick

bench-sweep: $(STAMP)
	$(PY) bench/sweep_speed.py

# docs/conformance.md: the kernel's packetdrill scripts against tcplab (needs the corpus:
# ../shared/packetdrill or $$TCPLAB_PACKETDRILL_DIR); also rewrites the expected passes.
conformance: $(STAMP)
	$(PY) -m tcplab.packetdrill.conformance --update-passes

# docs/verdicts/ and the verdicts in README.md and docs/stories.md, from the five stories
# replayed in full and in quick mode (python/tcplab/experiments/verdicts.py; tens of minutes).
verdicts: $(STAMP)
	$(VENV)/bin/tcplab reproduce --all -o out/reproduce-full --force
	$(VENV)/bin/tcplab reproduce --all --quick -o out/reproduce --force
	$(PY) -m tcplab.experiments.verdicts --full out/reproduce-full/index.json --quick out/reproduce/index.json --write

clean:
	rm -rf $(VENV) target out
