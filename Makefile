# `make play` and `make test` create .venv themselves; nothing else is needed
# but a Python >= 3.11 with venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: play test lint bench docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

play: $(STAMP)
	$(BIN)/oriflamme play

test: $(STAMP)
	$(BIN)/python -m pytest

# mypy cannot see setuptools' editable-install import hook, so it type-checks
# through a tree of symlinks that lays the folders out as the installed
# namespace package (oriflamme/engine -> engine, ...).
TYPECHECK := $(VENV)/typecheck

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	mkdir -p $(TYPECHECK)/oriflamme
	for pkg in engine protocol server client; do \
		ln -sfn ../../../$$pkg $(TYPECHECK)/oriflamme/$$pkg; done
	ln -sfn ../../tools $(TYPECHECK)/tools
	cd $(TYPECHECK) && ../bin/mypy --config-file ../../pyproject.toml \
		-p oriflamme.engine -p oriflamme.protocol -p oriflamme.server -p oriflamme.client -p tools

bench: $(STAMP)
	$(BIN)/python bench/engine.py
	$(BIN)/python bench/protocol.py
	$(BIN)/python bench/core.py

# Rewrite the generated parts of docs/ (PROTOCOL.md blocks, the JSON catalog,
# the test vectors, the sample records) from the code.
docs: $(STAMP)
	$(BIN)/python -m tools.docgen

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache .hypothesis
