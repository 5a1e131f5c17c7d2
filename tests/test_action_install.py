"""action/install.sh, the nightly action's install step, run offline from a copy of the
checkout: a clean venv gets the dependencies from requirements-runtime.lock and ciflake as a
wheel built from the checkout, at the checkout's version, with every data file it reads."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PACKAGES = [p.rstrip("*") for p in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]]
BUILD_INPUTS = ["pyproject.toml", "README.md", "requirements-runtime.lock", "action", *PACKAGES]
DEV_ONLY = {"pytest", "mypy", "ruff", "playwright", "hypothesis"}
# uv's cache, which `make venv` filled: read before the session's fixture moves XDG_CACHE_HOME.
USER_CACHE_HOME = os.environ.get("XDG_CACHE_HOME")
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")

# Our own text, in the shape of a job log: the classifier's rules (a data file) must find it.
LOG = """\
Step 3/5 : RUN pytest tests/e2e
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB total)
##[error]Process completed with exit code 1.
"""


def _pins(lock: str) -> dict[str, str]:
    """A lock's packages and versions, from its ``name==version`` lines."""
    lines = (ROOT / lock).read_text().splitlines()
    return dict(line.split(" ")[0].split("==") for line in lines if "==" in line)


def test_the_runtime_lock_is_the_full_locks_versions_without_the_developer_tools() -> None:
    """The nightly installs requirements-runtime.lock (`make lock` writes it constrained by
    requirements.lock): every package at the version the tests ran with, and no test tool."""
    runtime, full = _pins("requirements-runtime.lock"), _pins("requirements.lock")
    assert {"pandas", "sqlalchemy", "pygithub", "streamlit"} <= set(runtime)
    assert {name: full.get(name) for name in runtime} == runtime
    assert not DEV_ONLY & set(runtime), DEV_ONLY & set(runtime)
    assert set(full) >= DEV_ONLY
    lines = (ROOT / "action" / "install.sh").read_text().splitlines()
    (sync,) = [line for line in lines if line.startswith("uv pip sync")]
    assert sync.endswith(' "$src/requirements-runtime.lock"'), sync


def _source_data_files() -> set[str]:
    """Every file of the packages that is not Python source: what a wheel most easily misses."""
    return {
        str(path.relative_to(ROOT))
        for package in PACKAGES
        for path in (ROOT / package).rglob("*")
        if path.is_file() and path.suffix not in {".py", ".pyc"}
    }


@pytest.mark.slow
def test_the_action_installs_the_checkouts_version_offline_from_the_lock(tmp_path) -> None:
    """11 s on an idle 2-core machine, up to 28 s under load, with uv's cache as `make venv`
    left it; no network (UV_OFFLINE). Most of it is copying the lock's packages into the venv."""
    checkout = tmp_path / "ciflake"
    checkout.mkdir()
    for name in BUILD_INPUTS:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, checkout / name, ignore=SKIP)
        else:
            shutil.copy2(source, checkout / name)
    venv, github_path = tmp_path / "venv", tmp_path / "github_path"
    env = {**os.environ, "UV_OFFLINE": "1", "GITHUB_PATH": str(github_path)}
    env.pop("VIRTUAL_ENV", None)
    env.pop("XDG_CACHE_HOME")
    if USER_CACHE_HOME is not None:
        env["XDG_CACHE_HOME"] = USER_CACHE_HOME
    done = subprocess.run(
        ["bash", str(checkout / "action" / "install.sh"), str(venv)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert github_path.read_text() == f"{venv / 'bin'}\n"

    version = PYPROJECT["project"]["version"]
    assert version == importlib.metadata.version("ciflake")
    ciflake = str(venv / "bin" / "ciflake")

    def run(*args: str) -> str:
        result = subprocess.run([ciflake, *args], capture_output=True, text=True, cwd=tmp_path)
        assert result.returncode == 0, (args, result.stderr)
        return result.stdout

    assert run("--version") == f"ciflake, version {version}\n"
    assert "collect" in run("--help")
    db = f"sqlite:///{tmp_path / 'night.db'}"
    assert "migrated empty" in run("--db", db, "db", "upgrade")
    assert run("--db", db, "db", "stats", "--runs") == "0\n"
    (tmp_path / "job.log").write_text(LOG)
    found = json.loads(run("classify", "--json", str(tmp_path / "job.log")))
    assert (found["category"], found["line_number"]) == ("oom", 2)

    site = next((venv / "lib").glob("python3*/site-packages"))
    installed = {str(p.relative_to(site)) for p in site.rglob("*") if p.is_file()}
    assert _source_data_files() <= installed, _source_data_files() - installed
    editable = [p for p in installed if "__editable__" in p or p.endswith(".egg-link")]
    assert not editable, editable
