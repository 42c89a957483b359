# Entry points README names. Each bootstraps what it needs on a fresh machine:
# a .venv with kmigrate (editable, dev extras) and Kafka's jars from Maven Central.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export KMIGRATE_CACHE ?= $(CURDIR)/.cache

.PHONY: all install jars demo test test-unit test-integration lint format clean demo-down

all: test

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "kmigrate needs Python >= 3.11 (set PYTHON=...)")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	@touch $@

install: $(STAMP)

jars: $(STAMP)
	$(BIN)/kmigrate sandbox fetch

demo: jars
	$(BIN)/kmigrate demo

demo-down: $(STAMP)
	$(BIN)/kmigrate sandbox down

test: jars
	$(BIN)/pytest tests

test-unit: $(STAMP)
	$(BIN)/pytest tests/unit

test-integration: jars
	$(BIN)/pytest tests/integration

lint: $(STAMP)
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format src tests
	$(BIN)/ruff check --fix src tests

clean:
	rm -rf $(VENV) .cache .kmigrate .pytest_cache .mypy_cache .ruff_cache
