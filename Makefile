# Entry points README names. Each bootstraps what it needs on a fresh machine:
# a .venv with kmigrate (editable, dev extras), Kafka's jars from Maven Central and the
# sandbox's Schema Registry (built with Go from the Go module proxy).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export KMIGRATE_CACHE ?= $(CURDIR)/.cache

.PHONY: all install jars jars-kafka jars-kafka-3.9 spark-cds system-deps clients vendor demo test test-fast test-unit test-integration lint format docs clean demo-down

all: test

$(STAMP): pyproject.toml src/kmigrate/codec/_shift.c
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "kmigrate needs Python >= 3.11 (set PYTHON=...)")'
	@# kmigrate.codec._shift (the byte copy's merge loop) is C: a compiler builds it
	@command -v cc >/dev/null 2>&1 || { echo "installing gcc (apt-get)"; \
	  $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc >/dev/null; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	@touch $@

install: $(STAMP)

# ... and builds the sandbox's Schema Registry with Go, and the class-data archives its
# nodes and Spark's driver start from (once each; cached under .cache/). Three parts
# `make -j` runs side by side (.ci/run does).
jars: jars-kafka jars-kafka-3.9 spark-cds
jars-kafka: $(STAMP)
	$(BIN)/kmigrate sandbox fetch --schema-registry
jars-kafka-3.9: $(STAMP)
	$(BIN)/kmigrate sandbox fetch --kafka-version 3.9.1  # ZooKeeper mode and ZooKeeper's server
spark-cds: $(STAMP)
	$(BIN)/python -m kmigrate.spark.cds_build  # Spark's driver starts 1-2 s sooner (AppCDS)

# Debian packages the integration tests use: headless Chromium opens verify's HTML report;
# PostgreSQL's server (initdb, pg_ctl) runs a throwaway database for the store tests;
# openssl makes the gateway's test certificates.
TEST_PACKAGES := chromium-headless-shell postgresql openssl
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

system-deps:
	@if ! command -v chromium-headless-shell >/dev/null 2>&1 || ! command -v openssl >/dev/null 2>&1 || \
	    ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
	  echo "installing $(TEST_PACKAGES) (apt-get)"; \
	  $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(TEST_PACKAGES) >/dev/null; \
	fi

# Test clients from other ecosystems (harness/ecosystems): franz-go, modules from the Go module proxy.
FRANZ := $(abspath $(KMIGRATE_CACHE))/clients/franz
FRANZ_SRC := $(wildcard harness/ecosystems/franz-go/*.go) harness/ecosystems/franz-go/go.mod harness/ecosystems/franz-go/go.sum
clients: $(FRANZ)
$(FRANZ): $(FRANZ_SRC)
	@command -v go >/dev/null || { echo "the franz-go test client needs Go >= 1.26 on PATH"; exit 1; }
	cd harness/ecosystems/franz-go && go build -trimpath -buildvcs=false -o $@ .

# The console's and /docs' front-end files are checked in (serve/static/vendor/README.md);
# this fetches the same versions again from the npm registry.
VENDOR := src/kmigrate/serve/static/vendor
vendor:
	rm -rf $(VENDOR)/.npm && mkdir -p $(VENDOR)/.npm
	cd $(VENDOR)/.npm && npm pack -q htmx.org@2.0.11 htmx-ext-sse@2.2.4 swagger-ui-dist@5.35.0 && \
	  for f in *.tgz; do mkdir -p "$${f%.tgz}" && tar xzf "$$f" -C "$${f%.tgz}"; done
	cp $(VENDOR)/.npm/htmx.org-2.0.11/package/dist/htmx.min.js $(VENDOR)/
	cp $(VENDOR)/.npm/htmx-ext-sse-2.2.4/package/dist/sse.min.js $(VENDOR)/htmx-ext-sse.min.js
	cd $(VENDOR)/.npm/swagger-ui-dist-5.35.0/package && \
	  cp swagger-ui-bundle.js swagger-ui-bundle.js.LICENSE.txt swagger-ui.css ../../../ && \
	  cp favicon-32x32.png ../../../swagger-favicon-32x32.png
	rm -rf $(VENDOR)/.npm

demo: jars
	$(BIN)/kmigrate demo

demo-down: $(STAMP)
	$(BIN)/kmigrate sandbox down

# Three pytest workers on the 2-core machine: the suite keeps both cores 85% busy with
# three; four ran no faster and start one more set of clusters (2, 3 and 4 measured:
# tests/README.md). tests/conftest.py says what runs whole on one worker.
TEST_WORKERS ?= 3
XDIST = -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder
test: jars system-deps clients
	$(BIN)/pytest $(XDIST) tests

# The inner loop: the unit tests and the CLI contract's bad-input cases (no brokers),
# on two workers, in about a minute.
test-fast: jars
	$(BIN)/pytest -n 2 tests/unit tests/integration/cli_contract

test-unit: $(STAMP)
	$(BIN)/pytest tests/unit

test-integration: jars system-deps clients
	$(BIN)/pytest $(XDIST) tests/integration

lint: $(STAMP)
	$(BIN)/ruff check src tests bench tools harness
	$(BIN)/ruff format --check src tests bench tools harness
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python -m tools.module_sizes src
	$(MAKE) --no-print-directory docs

# The documentation site (mkdocs.yml) into site/. --strict: a broken link, a missing page
# or a reference generator that fails (tools/docs/reference.py) fails the build.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

format: $(STAMP)
	$(BIN)/ruff format src tests bench tools harness
	$(BIN)/ruff check --fix src tests bench tools harness

clean:
	rm -rf $(VENV) .cache .kmigrate .pytest_cache .mypy_cache .ruff_cache site
