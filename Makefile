# Every target creates or updates .venv from requirements.lock first, so each one is the only
# command a new machine needs.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
UV := $(shell command -v uv 2>/dev/null)

.PHONY: venv demo test test-fast bench screenshots lint reliability lock clean

# Bytecode compiled once here and for our own packages before each test run: with
# PYTHONDONTWRITEBYTECODE set (as on our machines) every process the tests start would
# otherwise compile pandas, SQLAlchemy and the rest again, about 2 s each.
$(STAMP): requirements.lock pyproject.toml
	@if [ -z "$(UV)" ]; then python3 -m pip install --quiet uv; fi
	uv venv --quiet --allow-existing --python python3 $(VENV)
	uv pip sync --quiet --compile-bytecode --python $(PY) requirements.lock
	uv pip install --quiet --python $(PY) --no-deps -e .
	@touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/ciflake demo

# Every test, on one worker more than there are cores (pytest-xdist; tests of one xdist_group
# share a worker), then the 15 slowest with their times. A collecting test waits on its fakehub
# child half the time, so a third worker on 2 cores fills those waits: 13m46s against 14m51s
# with two (2026-12-05, the whole suite, PostgreSQL included).
SOURCES := analytics bench ciflake collector dashboard fakehub migrations reports store tests
WORKERS := $(shell echo $$(( $$(nproc) + 1 )))

test: $(STAMP)
	$(PY) -m compileall -q $(SOURCES)
	$(PY) -m pytest -n $(WORKERS) --dist loadgroup --durations=15

# The unit tests: no fakehub, no browser, nothing marked slow (make test runs everything).
test-fast: $(STAMP)
	$(PY) -m compileall -q $(SOURCES)
	$(PY) -m pytest -n auto -m "not slow and not browser and not hub" --ignore=tests/reliability

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) -m tests.support.layers
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) -m bench.run

# docs/screenshots/*.png from the demo, in Debian's Chromium (apt install chromium).
screenshots: $(STAMP)
	$(PY) -m bench.screenshots

reliability: $(STAMP)
	$(PY) -m tests.reliability

# requirements-runtime.lock, what the nightly action installs: ciflake's own dependencies
# without the dev extra, at the versions of requirements.lock (its constraints), so the two
# locks never disagree.
lock:
	uv pip compile pyproject.toml --extra dev --python-version 3.11 --generate-hashes \
		--no-emit-index-url --no-header -o requirements.lock
	uv pip compile pyproject.toml -c requirements.lock --python-version 3.11 --generate-hashes \
		--no-emit-index-url --no-header -o requirements-runtime.lock

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
