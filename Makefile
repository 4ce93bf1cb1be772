# The common verbs. `make run` and `make test` set up everything they need on a fresh machine.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
PYTHON ?= python3
# Debian packages the tests need: Chromium (browser tests), libseccomp (sandbox), PostgreSQL (progress
# store), nginx (the load balancer's configuration, deploy/nginx), Node and npm (the official
# TypeScript SDK client, in tests/ts).
TEST_DEBS := chromium libseccomp2 postgresql nginx
TS_CLIENT := tests/ts/node_modules/.installed-stamp
RUN_DEBS := libseccomp2
BENCH_DEBS := libseccomp2

.PHONY: install ts-runtime lock run test test-fast coverage lint format bench check-lessons system-deps-run system-deps-test system-deps-bench system-deps-node vendor test-js clean

install: $(STAMP) ts-runtime

# What a learner's server.ts runs on (runtime/node: Node 24 LTS, the TypeScript SDK, zod; seen
# read-only by its sandbox) and what turns it into JavaScript (runtime/esbuild), at their locked
# versions: docs/typescript.md.
TS_RUNTIME := runtime/node/node_modules/.installed-stamp runtime/esbuild/node_modules/.installed-stamp
ts-runtime: $(TS_RUNTIME)
runtime/%/node_modules/.installed-stamp: runtime/%/package-lock.json
	@command -v npm >/dev/null || $(MAKE) --no-print-directory system-deps-node
	npm ci --prefix runtime/$* --no-audit --no-fund --loglevel=error
	touch $@

# Exact versions, with hashes, from the lock files (`make lock` writes them anew from pyproject.toml's
# ranges, keeping every pin it can), installed by uv: pip installs uv at its locked version, and uv
# installs the rest in a few seconds where pip takes half a minute. uv trusts the system's certificate
# store (a school's proxy may have added its own there). The project goes in without its dependencies.
UV := $(VENV)/bin/uv pip install -q --system-certs --python $(PY)
$(STAMP): pyproject.toml requirements-dev.lock requirements-uv.lock
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --require-hashes -r requirements-uv.lock
	$(UV) --compile-bytecode --require-hashes -r requirements-dev.lock
	$(UV) --no-deps -e .
	touch $(STAMP)

# requirements.lock: what the app needs (the container installs it); requirements-dev.lock: that and
# the tests' packages (`make install`); requirements-uv.lock: uv at UV_VERSION. `make lock` runs uv
# from a venv of its own, so it works before `make install` has.
UV_VERSION := 0.13.9
LOCK_OPTS := --generate-hashes --python-version 3.11.7 --python-platform x86_64-unknown-linux-gnu --no-annotate
lock:
	test -x $(VENV)-uv/bin/uv || ($(PYTHON) -m venv $(VENV)-uv && $(VENV)-uv/bin/pip install -q uv==$(UV_VERSION))
	echo "uv==$(UV_VERSION)" | $(VENV)-uv/bin/uv pip compile -q - $(LOCK_OPTS) -o requirements-uv.lock
	$(VENV)-uv/bin/uv pip compile -q pyproject.toml $(LOCK_OPTS) -o requirements.lock
	$(VENV)-uv/bin/uv pip compile -q pyproject.toml --extra test $(LOCK_OPTS) -c requirements.lock -o requirements-dev.lock

# Install missing Debian packages when we can (root); otherwise say what is missing. Installed means
# "install ok installed": `dpkg -s` also succeeds for a removed package whose config files remain.
define ensure_debs
	@missing=""; for p in $(1); do \
	  [ "$$(dpkg-query -W -f='$${Status}' $$p 2>/dev/null)" = "install ok installed" ] || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "missing Debian packages:$$missing (install them, or run as root)"; exit 1; fi; \
	fi
endef

system-deps-run:
	$(call ensure_debs,$(RUN_DEBS))

system-deps-test:
	$(call ensure_debs,$(TEST_DEBS))

system-deps-bench:
	$(call ensure_debs,$(BENCH_DEBS))

run: install system-deps-run
	$(PY) -m app $(if $(HOST),--host $(HOST)) $(if $(PORT),--port $(PORT))

# Workers (pytest-xdist): most tests wait on a subprocess, a socket or a browser, so twice the cores
# keep them busy; a module's tests stay on one worker, which starts its module fixtures once, and the
# modules that start the costliest things go first (tests/conftest.py), so none is left for the end.
TEST_WORKERS ?= $(shell n=$$(nproc); [ $$n -gt 4 ] && n=4; echo $$((n * 2)))
# Bytecode, and pytest's rewritten test modules, are cached in __pycache__ (ignored by git) even where
# the environment asks Python not to: otherwise every worker and every app a test starts compiles them.
test test-fast coverage: export PYTHONDONTWRITEBYTECODE :=
test: install system-deps-test $(TS_CLIENT) test-js
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder --durations=15

# The fast tier (docs/testing.md): no root, browser, database server or real clock. The folders whose
# every test it leaves out are not even imported.
FAST := not sandbox and not browser and not postgres and not deploy and not bench and not slow
test-fast: install
	$(PY) -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadscope -m "$(FAST)" \
		--ignore=tests/sandbox --ignore=tests/browser --ignore=tests/deploy --ignore=tests/bench

# Line and branch coverage of app/ over the whole suite (docs/testing.md). The web process gives up
# root, so the data folder is open to every uid; a sandboxed server cannot write there, and is left out.
coverage: install system-deps-test $(TS_CLIENT)
	rm -rf test-artifacts/coverage && mkdir -p test-artifacts/coverage && chmod 1777 test-artifacts/coverage
	-$(PY) -m coverage run -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder
	$(PY) -m coverage combine -q
	$(PY) -m coverage report --format=total
	$(PY) -m coverage report | tail -1

# Unit tests of the console's DOM-free modules (static/console), with Node's own test runner.
test-js:
	@command -v node >/dev/null || $(MAKE) --no-print-directory system-deps-node
	node --test tests/js/*.test.mjs

# Node may come with the machine (not from Debian); install Debian's only when there is none.
$(TS_CLIENT): tests/ts/package-lock.json
	@command -v npm >/dev/null || $(MAKE) --no-print-directory system-deps-node
	npm ci --prefix tests/ts --no-audit --no-fund --loglevel=error
	touch $(TS_CLIENT)

system-deps-node:
	$(call ensure_debs,nodejs npm)

# Rebuild CodeMirror into static/vendor/ from vendor/codemirror (needs Node; the output is committed, docs/vendor.md).
vendor:
	@command -v npm >/dev/null || $(MAKE) --no-print-directory system-deps-node
	npm ci --prefix vendor/codemirror --no-audit --no-fund --loglevel=error
	node vendor/codemirror/build.mjs
	npm ci --prefix vendor/ext-apps --no-audit --no-fund --loglevel=error
	node vendor/ext-apps/build.mjs

check-lessons: install
	$(PY) -m app check-lessons

# Biome (tools/lint, from npm at its locked version) lints and formats the project's JavaScript.
BIOME_STAMP := tools/lint/node_modules/.installed-stamp
BIOME := tools/lint/node_modules/.bin/biome
$(BIOME_STAMP): tools/lint/package-lock.json
	@command -v npm >/dev/null || $(MAKE) --no-print-directory system-deps-node
	npm ci --prefix tools/lint --no-audit --no-fund --loglevel=error
	touch $(BIOME_STAMP)

lint: install $(BIOME_STAMP)
	$(BIOME) check
	$(VENV)/bin/lint-imports  # the layers of docs/ARCHITECTURE.md (pyproject.toml, [tool.importlinter])
	$(PY) -m ruff check app tests bench scripts
	$(PY) -m ruff format --check app tests bench scripts
	$(PY) -m mypy app

format: install $(BIOME_STAMP)
	$(BIOME) format --write
	$(PY) -m ruff check --fix app tests bench
	$(PY) -m ruff format app tests bench

bench: install system-deps-bench
	$(PY) -m bench

clean:
	rm -rf $(VENV) $(VENV)-uv .pytest_cache .ruff_cache test-artifacts tests/ts/node_modules tools/lint/node_modules \
		runtime/node/node_modules runtime/esbuild/node_modules
