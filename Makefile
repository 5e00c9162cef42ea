# Two commands matter: `make run` (console on the embedded default, with a live demo)
# and `make test` (everything CI runs). Both install what they need on a fresh machine.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
# Django 6 needs Python >= 3.12: take the newest suitable interpreter on PATH or in pyenv.
PYTHON ?= $(shell for p in python3.13 python3.12 $$HOME/.pyenv/versions/3.13*/bin/python3 $$HOME/.pyenv/versions/3.12*/bin/python3; do \
	if command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then command -v $$p; break; fi; done)
TEST_DB ?= console
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/$(TEST_DB)
TEST_REDIS_URL ?= redis://127.0.0.1:6379/0
# pgbouncer: tests/e2e/test_pgbouncer.py runs the console behind a real one (transaction pooling).
APT_PACKAGES := bubblewrap jq chromium iproute2 pgbouncer
# The real agent clients (Claude Code, Codex CLI, Gemini CLI) that tests/reach_clients drives,
# installed from the npm registry outside the work tree, once per pinned lockfile.
REACH_CLIENTS_DIR ?= $(HOME)/.cache/console-tests/reach-clients
REACH_CLIENTS_LOCK := tests/reach_clients/npm/package.json tests/reach_clients/npm/package-lock.json

.PHONY: run test lint typecheck venv system-deps services demo bench clean faults load reach-clients

$(VENV)/.installed: pyproject.toml
	@test -n "$(PYTHON)" || { echo "No Python >= 3.12 found (PATH or ~/.pyenv/versions)"; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	@touch $@

venv: $(VENV)/.installed

system-deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; fi

services:
	@pg_isready -q -h 127.0.0.1 -p 5432 || pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql) main start
	@redis-cli -h 127.0.0.1 ping >/dev/null 2>&1 || redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log
	@for i in $$(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && redis-cli -h 127.0.0.1 ping >/dev/null 2>&1 && break; sleep 1; \
		[ $$i -eq 30 ] && { echo "PostgreSQL/Redis did not come up"; exit 1; }; done
	@# makemigrations --check reads the migration history of the main database: make sure it exists.
	@psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname='$(TEST_DB)'" | grep -q 1 \
		|| createdb -h 127.0.0.1 -U postgres $(TEST_DB)

reach-clients:
	@command -v npm >/dev/null || { echo "npm (Node.js >= 20) is needed for the real-client tests"; exit 1; }
	@stamp="$(REACH_CLIENTS_DIR)/.installed-$$(cat $(REACH_CLIENTS_LOCK) | sha256sum | cut -c1-16)"; \
	if [ ! -e "$$stamp" ]; then \
		echo "installing the real agent clients into $(REACH_CLIENTS_DIR)"; \
		mkdir -p "$(REACH_CLIENTS_DIR)" && rm -f "$(REACH_CLIENTS_DIR)"/.installed-* && \
		cp $(REACH_CLIENTS_LOCK) "$(REACH_CLIENTS_DIR)/" && \
		npm ci --prefix "$(REACH_CLIENTS_DIR)" --no-audit --no-fund --loglevel=error && \
		for c in claude codex gemini; do "$(REACH_CLIENTS_DIR)/node_modules/.bin/$$c" --version >/dev/null || exit 1; done && \
		touch "$$stamp"; \
	fi

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: venv
	$(VENV)/bin/mypy agents console_client console approvals audit users runtimes demo

run: venv system-deps
	$(PY) manage.py migrate --noinput
	$(PY) manage.py seed_demo
	$(PY) manage.py run_console --demo

test: system-deps venv services reach-clients lint typecheck
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) $(PY) manage.py makemigrations --check --dry-run
	@# Three lanes at once (tests/run_lanes.py): the whole suite on PostgreSQL + Redis in two halves (a few unit
	@# folders of it after the third lane), and the unit, API and portal tests on the embedded default of
	@# `make run` (SQLite, in-process).
	@# SCALEOUT_REQUIRED: a missing pgbouncer or PostgreSQL server binary fails the scale-out tests.
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) REACH_CLIENTS_DIR=$(REACH_CLIENTS_DIR) REACH_CLIENTS_REQUIRED=1 \
		SCALEOUT_REQUIRED=1 $(PY) tests/run_lanes.py $(PYTEST_ARGS)

bench: venv services
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) bash bench/run_all.sh

# Full fault runs (outages up to 60 s; own Redis, Celery, a private PostgreSQL cluster for the
# restart) and the 3-minute mixed locust load. `make test` runs shortened forms of both.
faults: venv services
	DATABASE_URL=$(TEST_DATABASE_URL) PYTHONPATH=. $(PY) bench/faults/run.py all $(FAULTS_ARGS)

load: venv services
	DATABASE_URL=$(TEST_DATABASE_URL) PYTHONPATH=. $(PY) bench/load/run.py --seconds $(or $(LOAD_SECONDS),180) $(LOAD_ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache var
