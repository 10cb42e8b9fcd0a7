# subcog-store: `make test` and `make demo` set up everything from the package index on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup models test demo bench clean

setup: $(STAMP) models/.verified
	@# Byte-compile now: a hook is a fresh process each time, and some environments never write .pyc files.
	@$(BIN)/python -m compileall -q subcog_store bench

$(STAMP): requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.lock
	@# compat: the checkout as a plain sys.path entry; the default editable finder costs every process ~20 ms
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e . --config-settings editable_mode=compat
	touch $@

models/.verified: $(STAMP) models/manifest.json
	$(BIN)/python -m subcog_store.model.files fetch
	@# the model and WordNet (models/wordnet-3.0); touched: a marker already right is not rewritten
	@touch $@

models: models/.verified

# Tests in parallel processes, one a core up to 4 (a test mostly waits for the hook, CLI or worker process it
# starts); `make test TEST_WORKERS=0` runs them in this process, one after the other.
TEST_WORKERS ?= auto
test: setup
	$(BIN)/python -m pytest -q -p no:cacheprovider --durations=25 -n $(TEST_WORKERS) --maxprocesses 4

# The property tests with a new random draw each run (`make test` draws the same examples every time: tests/conftest.py).
.PHONY: explore
explore: setup
	SUBCOG_HYPOTHESIS_PROFILE=explore $(BIN)/python -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --maxprocesses 4 \
	  $$(grep -l '^from hypothesis\|^import hypothesis' tests/*.py)

demo: setup
	$(BIN)/python -m subcog_store.demo

bench: setup
	$(BIN)/python -m bench.run_all

# `subcog-store ui` in a real headless Chromium (tests/ui/run_ui.py; Debian's chromium and chromium-driver). Exit 77 of
# the harness (Chromium is not installed) is a SKIP line, not a failure; screenshots land in tests/ui/artefacts/.
.PHONY: ui-test
ui-test: setup
	@$(BIN)/python tests/ui/run_ui.py; rc=$$?; \
	if [ $$rc -eq 77 ]; then echo "make ui-test: SKIPPED (see the SKIP line above)"; exit 0; fi; \
	exit $$rc

# The Claude Code plugin's files (plugin/, .claude-plugin/marketplace.json), rendered from install-hooks' table.
.PHONY: plugin
plugin: $(STAMP)
	$(BIN)/python -m subcog_store.claude_code.plugin --write

clean:
	rm -rf $(VENV) models/*.onnx models/tokenizer.json models/.verified demo

# Reliability trials, not part of `make test`: `make torture` (the full run, long) or `make torture TORTURE=--quick`.
TORTURE ?= --full
.PHONY: torture
torture: setup
	nice -n 10 $(BIN)/python -m bench.torture $(TORTURE)

# Issue 29's faults injected as they were found (bench/faults.py): every case twice in a row, two CPU-bound processes
# beside it, and the price of the semantic re-check on the capture path; its section of bench/torture/RESULTS.md.
.PHONY: faults
faults: setup
	nice -n 10 $(BIN)/python -m bench.faults --cost

# The real Claude Code client end to end, offline (tests/e2e/README.md): fetched once with npm into
# $XDG_CACHE_HOME/subcog-store-e2e. Exit 77 of the harness (the npm registry cannot be reached) is a SKIP line, not
# a failure; any failed check fails the target.
.PHONY: e2e
e2e: setup
	@$(BIN)/python tests/e2e/run_e2e.py; rc=$$?; \
	if [ $$rc -eq 77 ]; then echo "make e2e: SKIPPED (the client could not be fetched; see the SKIP line above)"; exit 0; fi; \
	exit $$rc
