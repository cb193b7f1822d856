# `make play` and `make test` create .venv themselves (`make setup` alone
# does only that); nothing else is needed but a Python >= 3.11 with venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup play test test-fast test-serial lint bench docs clean locale

# setuptools warns at every editable install of a package laid out as this one
# is (folders mapped onto a namespace), however it is done; it is a notice
# about setuptools itself, and a newcomer's first screen should be the game.
$(STAMP): pyproject.toml
	@echo "Setting up $(VENV) (once: a minute or so)..."
	@$(PYTHON) -m venv $(VENV)
	@$(BIN)/pip install --quiet --upgrade pip
	@PYTHONWARNINGS=ignore $(BIN)/pip install --quiet -e '.[dev]'
	@touch $(STAMP)
	@echo "Ready: $(BIN)/oriflamme"

# The compiled catalogs (the players' languages): the editable install
# compiles them, and so does a catalog changed since (git ignores them).
PO := $(wildcard client/locale/*/LC_MESSAGES/oriflamme.po)
MO := $(PO:.po=.mo)
$(MO): %.mo: %.po $(STAMP)
	@$(BIN)/python -m tools.catalogs compile >/dev/null

setup: $(STAMP) $(MO)

# Extract the strings marked in the code, merge them into each catalog, and
# compile; `python -m tools.catalogs missing` lists what is not translated.
locale: $(STAMP)
	$(BIN)/python -m tools.catalogs update

# (ORIFLAMME_LAUNCHER: a player who quits mid-game is told `make play` brings
# the table back, rather than the path of the program.)
play: $(STAMP) $(MO)
	@ORIFLAMME_LAUNCHER=make $(BIN)/oriflamme play

# pytest-xdist (in the test extras) spreads the tests over every core; where
# it is missing they run one after another. worksteal: a worker with nothing
# left takes tests queued for the other (a few tests take much longer than most).
XDIST = $(shell $(BIN)/python -c 'import xdist' 2>/dev/null && echo '-n auto --dist worksteal')
# What needs no socket, process or terminal, and is not one of the few slow
# in-process tests (the markers are in pyproject.toml): under a minute.
FAST = -m 'not network and not process and not terminal and not slow'

test: $(STAMP) $(MO)
	$(BIN)/python -m pytest $(XDIST)

# (bytecode written, whatever the environment says: pytest keeps the test
# modules it rewrote there, which would take each worker seconds again)
test-fast: $(STAMP) $(MO)
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest $(XDIST) $(FAST)

test-serial: $(STAMP) $(MO)
	$(BIN)/python -m pytest

# mypy cannot see setuptools' editable-install import hook, so it type-checks
# through a tree of symlinks that lays the folders out as the installed
# namespace package (oriflamme/engine -> engine, ...). tests/ is a package
# (tests.engine.builders, ...) and is checked with the others; bench/ is a
# folder of scripts that import each other as top-level modules (`from
# _load_client import ...`), so it is checked as files, in a second run: mypy
# takes either packages or files in one run, not both.
TYPECHECK := $(VENV)/typecheck

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	mkdir -p $(TYPECHECK)/oriflamme
	for pkg in engine protocol server client launcher; do \
		ln -sfn ../../../$$pkg $(TYPECHECK)/oriflamme/$$pkg; done
	for dir in tools tests bench; do ln -sfn ../../$$dir $(TYPECHECK)/$$dir; done
	cd $(TYPECHECK) && ../bin/mypy --config-file ../../pyproject.toml \
		-p oriflamme.engine -p oriflamme.protocol -p oriflamme.server -p oriflamme.client \
		-p oriflamme.launcher \
		-p tools -p tests
	cd $(TYPECHECK) && ../bin/mypy --config-file ../../pyproject.toml bench

bench: $(STAMP)
	$(BIN)/python bench/engine.py
	$(BIN)/python bench/protocol.py
	$(BIN)/python bench/core.py

# Rewrite the generated parts of docs/ (PROTOCOL.md and COMMANDS.md blocks, the JSON catalog,
# the test vectors, the sample records) from the code.
docs: $(STAMP)
	$(BIN)/python -m tools.docgen

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache .hypothesis
