#!/usr/bin/env bash
# Installs ciflake into a new venv from the checkout this script lives in (the action's own, at
# the tag a workflow's `uses:` names): first the dependencies exactly as requirements-runtime.lock
# pins them (hash-checked, nothing resolved; requirements.lock's versions without the developer
# tools, so the tested set and no other), then ciflake itself as a wheel built from that
# checkout. action.yml runs it; tests/test_action_install.py runs it
# offline. Usage: install.sh VENV_DIR. On a runner, VENV_DIR/bin goes on $GITHUB_PATH.
set -euo pipefail
venv=${1:?usage: install.sh VENV_DIR}
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if ! command -v uv >/dev/null; then python3 -m pip install --quiet uv; fi  # as `make venv`
wheels=$(mktemp -d)
trap 'rm -rf "$wheels"' EXIT
uv build --quiet --wheel --out-dir "$wheels" "$src"
uv venv --quiet --python python3 "$venv"
uv pip sync --quiet --python "$venv/bin/python" "$src/requirements-runtime.lock"
uv pip install --quiet --no-deps --python "$venv/bin/python" "$wheels"/ciflake-*.whl
"$venv/bin/ciflake" --version
if [ -n "${GITHUB_PATH:-}" ]; then echo "$venv/bin" >>"$GITHUB_PATH"; fi
