# tcplab: two commands for a fresh machine.
#   make reproduce  set everything up, then replay the five stories in their quick form
#                   (tcplab reproduce --all --quick); index in out/reproduce/index.html
#   make test       set everything up, then run every default test (Rust: optimised with debug
#                   assertions and overflow checks, profile release-checks; Python)
# make setup also builds tcplab-delayline (target/release/), the delay line of kernel mode.
# Other targets: make demo (compare CUBIC and BBR on the built-in lossy path, 100 ms RTT,
#                5 Mbit/s, 1% loss; report in out/demo/, replaced on each run) | make setup | make bench (tcplab vs
#                ns-3, several minutes) | make bench-quick | make bench-sweep (tcplab sweep: one
#                process vs the local pool, 40 short runs) | make test-slow | make clean

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: reproduce demo test setup bench bench-quick bench-sweep test-slow clean

$(STAMP): pyproject.toml Cargo.toml $(shell find crates -name '*.rs' -o -name Cargo.toml) $(shell find python -name '*.py' -o -name '*.yaml')
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	cargo build --release -p tcplab-delayline
	touch $(STAMP)

setup: $(STAMP)

reproduce: $(STAMP)
	$(VENV)/bin/tcplab reproduce --all --quick -o out/reproduce --force
	@echo "index: out/reproduce/index.html (and out/reproduce/index.md)"

demo: $(STAMP)
	$(VENV)/bin/tcplab compare builtin:cubic-vs-bbr-lossy --set flows.0.cc=cubic,bbr -o out/demo --force
	@echo "report: out/demo/report.html"

test: $(STAMP)
	cargo test --workspace --profile release-checks
	$(PY) -m pytest -q

test-slow: $(STAMP)
	$(PY) -m pytest -q -m slow

bench: $(STAMP)
	$(PY) bench/run.py

bench-quick: $(STAMP)
	$(PY) bench/run.py --quick

bench-sweep: $(STAMP)
	$(PY) bench/sweep_speed.py

clean:
	rm -rf $(VENV) target out
