"""action/keep-one-cache.sh, the nightly's cache clean-up, run with a stand-in `gh` that serves
a list of cache entries and records every call: one test per way the database could be lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "action" / "keep-one-cache.sh"
MAIN, FEATURE = "refs/heads/main", "refs/heads/feature"

# A stand-in for `gh cache list` (filtered by --ref and --key as GitHub does, printed as the
# script's --jq asks: "ID REF KEY") and `gh cache delete ID`; every call is logged.
FAKE_GH = """\
import json, sys
from pathlib import Path

here = Path(__file__).parent
args = sys.argv[1:]
with open(here / "calls", "a") as log:
    log.write(json.dumps(args) + "\\n")
entries = json.loads((here / "entries.json").read_text())
if args[:2] == ["cache", "list"]:
    if (here / "fail").exists():
        sys.exit("HTTP 403: Resource not accessible by integration")
    ref = args[args.index("--ref") + 1] if "--ref" in args and HONOUR_REF else None
    prefix = args[args.index("--key") + 1]
    for e in entries:
        if e["key"].startswith(prefix) and ref in (None, e["ref"]):
            print(e["id"], e["ref"], e["key"])
elif args[:2] == ["cache", "delete"]:
    entries = [e for e in entries if str(e["id"]) != args[2]]
    (here / "entries.json").write_text(json.dumps(entries))
"""


def _run(tmp_path: Path, entries, *, keep, restored, ref=MAIN, honour_ref=True, refuse=False):
    """Run the script; answer (exit code, stdout, the run's summary, gh's calls, entries left).
    ``refuse``: GitHub refuses the listing."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if refuse:
        (bin_dir / "fail").touch()
    (bin_dir / "entries.json").write_text(
        json.dumps([{"id": i, "ref": r, "key": k} for i, r, k in entries])
    )
    gh = bin_dir / "gh"
    gh.write_text(f"#!{sys.executable}\nHONOUR_REF = {honour_ref}\n{FAKE_GH}")
    gh.chmod(0o755)
    summary = tmp_path / "summary.md"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_STEP_SUMMARY": str(summary),
        "KEEP": keep,
        "RESTORED": restored,
        "REF": ref,
    }
    done = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True)
    calls_file = bin_dir / "calls"
    calls = (
        [json.loads(line) for line in calls_file.read_text().splitlines()]
        if (calls_file.exists())
        else []
    )
    left = {e["key"] for e in json.loads((bin_dir / "entries.json").read_text())}
    text = summary.read_text() if summary.exists() else ""
    return done.returncode, done.stdout, text, calls, left


def _deletes(calls) -> list[str]:
    return [c[2] for c in calls if c[:2] == ["cache", "delete"]]


def test_a_normal_night_deletes_this_refs_older_entries_and_keeps_tonights(tmp_path) -> None:
    entries = [
        (1, MAIN, "ciflake-db-10-1"),
        (2, MAIN, "ciflake-db-11-1"),
        (3, MAIN, "ciflake-db-12-1"),
        (7, FEATURE, "ciflake-db-9-1"),
    ]
    code, out, summary, calls, left = _run(
        tmp_path, entries, keep="ciflake-db-12-1", restored="ciflake-db-11-1"
    )
    assert code == 0, out
    assert sorted(_deletes(calls)) == ["1", "2"]
    assert left == {"ciflake-db-12-1", "ciflake-db-9-1"}
    assert "deleted 2 older entries" in summary and "::warning" not in out
    (listing,) = [c for c in calls if c[:2] == ["cache", "list"]]
    assert listing[listing.index("--ref") + 1] == MAIN


def test_a_restore_that_matched_nothing_deletes_nothing_and_says_so_loudly(tmp_path) -> None:
    """An evicted entry or a failed restore: the night began a new database. The entries that
    are left (one the restore could not read, say) are kept, and the run says why."""
    entries = [(1, MAIN, "ciflake-db-10-1"), (3, MAIN, "ciflake-db-12-1")]
    code, out, summary, calls, left = _run(tmp_path, entries, keep="ciflake-db-12-1", restored="")
    assert code == 0 and calls == [] and len(left) == 2
    assert out.startswith("::warning title=ciflake database::no database cache entry was restored")
    assert "backfill starts again" in summary and "No cache entry deleted" in summary


def test_a_save_that_failed_deletes_nothing(tmp_path) -> None:
    """actions/cache/save only warns when it fails: tonight's key is then not listed."""
    entries = [(1, MAIN, "ciflake-db-10-1"), (2, MAIN, "ciflake-db-11-1")]
    code, out, summary, calls, left = _run(
        tmp_path, entries, keep="ciflake-db-12-1", restored="ciflake-db-11-1"
    )
    assert code == 0 and _deletes(calls) == [] and len(left) == 2
    assert "::warning" in out and "ciflake-db-12-1 is not listed" in summary


@pytest.mark.parametrize("honour_ref", [True, False], ids=["gh filters by ref", "gh does not"])
def test_a_run_on_another_branch_never_deletes_the_default_branchs_entry(
    tmp_path, honour_ref
) -> None:
    """A workflow_dispatch on a feature branch restores main's entry and saves its own on the
    feature ref: only the feature ref's older entry goes, whatever the listing returns."""
    entries = [
        (1, MAIN, "ciflake-db-10-1"),
        (2, MAIN, "ciflake-db-11-1"),
        (5, FEATURE, "ciflake-db-8-1"),
        (9, FEATURE, "ciflake-db-12-1"),
    ]
    code, out, summary, calls, left = _run(
        tmp_path,
        entries,
        keep="ciflake-db-12-1",
        restored="ciflake-db-11-1",
        ref=FEATURE,
        honour_ref=honour_ref,
    )
    assert code == 0, out
    assert _deletes(calls) == ["5"]
    assert {"ciflake-db-10-1", "ciflake-db-11-1", "ciflake-db-12-1"} == left


def test_a_listing_github_refuses_fails_the_step_and_deletes_nothing(tmp_path) -> None:
    """Without `actions: write` the listing is refused: the step fails, visibly."""
    entries = [(1, MAIN, "ciflake-db-10-1"), (3, MAIN, "ciflake-db-12-1")]
    code, _, _, calls, left = _run(
        tmp_path, entries, keep="ciflake-db-12-1", restored="ciflake-db-10-1", refuse=True
    )
    assert code != 0 and _deletes(calls) == [] and len(left) == 2
