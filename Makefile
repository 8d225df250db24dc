# The two commands of the README: `make demo` (install + main job) and `make test` (the whole suite).
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test install lint samples bench clean browser

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip >/dev/null
	$(BIN)/pip install -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# Build the bundled wikidata-mini store (once), then answer a real query on it.
demo: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/kbqa ingest --sample wikidata-mini
	HF_HUB_OFFLINE=1 $(BIN)/kbqa sparql 'SELECT ?person ?name WHERE { ?person wdt:P19 ?city . ?city rdfs:label "Detroit"@en . ?person rdfs:label ?name FILTER(LANG(?name) = "en") } LIMIT 10'

lint: $(STAMP)
	$(BIN)/ruff check .

# The HTML-report test opens the report in Debian's chromium; install it when missing (as root).
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || echo "note: chromium not installed; the report test will be skipped"; }

test: $(STAMP) browser
	$(BIN)/ruff check .
	HF_HUB_OFFLINE=1 $(BIN)/pytest -q

# Maintainers only: rebuild the committed sample dumps and benchmark copies from ../shared/data.
samples: $(STAMP)
	$(BIN)/python -m kb_dumps.build_samples

bench: $(STAMP)
	$(BIN)/python bench/ingest.py

clean:
	rm -rf .kbqa .pytest_cache .ruff_cache
