# The two commands of the README: `make demo` (install + main job) and `make test` (the whole suite).
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
# .installed: everything (`.[test]`, which includes the train stack); .installed-core: the query path only.
STAMP := $(VENV)/.installed
CORE_STAMP := $(VENV)/.installed-core

.PHONY: test-adversarial test-fast demo test install install-core lint samples bench clean browser llama virtuoso

$(CORE_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip >/dev/null
	$(BIN)/pip install -e .
	touch $(CORE_STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip >/dev/null
	$(BIN)/pip install -e '.[test]'
	touch $(STAMP) $(CORE_STAMP)

install: $(STAMP)
install-core: $(CORE_STAMP)

KBQA := HF_HUB_OFFLINE=1 $(BIN)/kbqa
DEMO_STORE := .kbqa/stores/wikidata-mini

# Build the bundled wikidata-mini store, its grounding index and its case bank (each once), then
# answer a question end to end: the SPARQL, the answers with labels, the step report. Core install
# only: no torch (the embedder is the static model shipped in grounding/models/).
demo: $(CORE_STAMP)
	$(KBQA) ingest --sample wikidata-mini
	test -f $(DEMO_STORE)/current/index/meta.json || $(KBQA) index
	test -f $(DEMO_STORE)/current/cases/meta.json || $(KBQA) cases build --limit 5000
	$(KBQA) ask "where was sasha vujačić born"
	$(KBQA) ask "what city is the birthplace of lily tomlin"

lint: $(STAMP)
	$(BIN)/ruff check .

# The HTML-report test opens the report in Debian's chromium; install it when missing (as root).
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || echo "note: chromium not installed; the report test will be skipped"; }

# Debian's Virtuoso 7 (virtuoso-t, isql-vt) for tests/test_endpoint_virtuoso.py and bench/endpoint_large.py.
virtuoso:
	@command -v virtuoso-t >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq virtuoso-opensource >/dev/null) || echo "note: virtuoso-opensource not installed; the Virtuoso endpoint test will be skipped"; }

# llama-cpp-python, built once from source with portable CPU flags (skipped when a working build is there).
llama: $(STAMP)
	scripts/install_llama_cpp.sh

# lint-imports: the import contracts of pyproject.toml (layers, no cycles, the engine never imports its faces).
# Two pytest processes (pytest-xdist): one process took 33 min of CI's 30-min budget on this 2-core machine; the tests
# share no ports or files (each server picks a free loopback port, each store lives in its own tmp_path).
test: $(STAMP) browser llama virtuoso
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-cache
	HF_HUB_OFFLINE=1 $(BIN)/pytest -q -n 2

# The inner loop: no browser, no llama.cpp build, no model weights, no whole-benchmark-file tests (`slow`). `make test`
# stays the full suite that .ci/run calls.
FAST_SKIP = tests/test_server_browser.py tests/test_models_llama.py tests/test_grammars_qcompiler_pyrag_llama.py \
	tests/test_models_hf.py tests/test_train.py tests/test_models_fetch.py tests/adversarial \
	tests/test_explore_chooser_llama.py
test-fast: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-cache
	HF_HUB_OFFLINE=1 $(BIN)/pytest -q -n 2 -m "not slow" $(addprefix --ignore=,$(FAST_SKIP))

# Maintainers only: rebuild the committed sample dumps and benchmark copies from ../shared/data.
samples: $(STAMP)
	$(BIN)/python -m kb_dumps.build_samples

# Nightly-style: the adversarial suite with 2,000 generated examples per property (CI runs 200).
test-adversarial: $(STAMP)
	HF_HUB_OFFLINE=1 HYPOTHESIS_PROFILE=nightly $(BIN)/pytest -q tests/adversarial

bench: $(STAMP)
	$(BIN)/python bench/ingest.py

clean:
	rm -rf .kbqa .pytest_cache .ruff_cache
