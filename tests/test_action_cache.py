"""action/keep-one-cache.sh, the nightly's cache clean-up, and action/check-restore.sh, the
guard after its restore, run with a stand-in `gh` that serves a list of cache entries and
records every call: one test per way the database could be lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
SCRIPT, GUARD = ROOT / "action" / "keep-one-cache.sh", ROOT / "action" / "check-restore.sh"
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


class FakeGitHub:
    """A stand-in `gh` on PATH over a repository's cache entries (``(id, ref, key)``), which
    the action's scripts list and delete; ``honour_ref=False`` ignores ``--ref``, ``refuse``
    refuses every listing."""

    def __init__(self, tmp_path: Path, entries, *, honour_ref=True, refuse=False) -> None:
        self.tmp_path, self.bin_dir = tmp_path, tmp_path / "bin"
        self.bin_dir.mkdir()
        if refuse:
            (self.bin_dir / "fail").touch()
        self._write([{"id": i, "ref": r, "key": k} for i, r, k in entries])
        gh = self.bin_dir / "gh"
        gh.write_text(f"#!{sys.executable}\nHONOUR_REF = {honour_ref}\n{FAKE_GH}")
        gh.chmod(0o755)

    def _entries(self) -> list[dict]:
        return json.loads((self.bin_dir / "entries.json").read_text())

    def _write(self, entries: list[dict]) -> None:
        (self.bin_dir / "entries.json").write_text(json.dumps(entries))

    def save(self, ref: str, key: str) -> None:
        """What actions/cache/save does: a new entry, with the highest id."""
        entries = self._entries()
        self._write([*entries, {"id": max(e["id"] for e in entries) + 1, "ref": ref, "key": key}])

    def newest(self, ref: str) -> str:
        """The entry `restore-keys: ciflake-db-` matches on ``ref``: its newest."""
        return max((e for e in self._entries() if e["ref"] == ref), key=lambda e: e["id"])["key"]

    def keys(self) -> set[str]:
        return {e["key"] for e in self._entries()}

    def calls(self) -> list[list[str]]:
        log = self.bin_dir / "calls"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    def run(self, script: Path, **env: str) -> tuple[int, str, str]:
        """Run ``script`` as a step would; answer (exit code, stdout, the run's summary)."""
        summary = self.tmp_path / "summary.md"
        summary.unlink(missing_ok=True)
        done = subprocess.run(
            ["bash", str(script)],
            env={
                **os.environ,
                "PATH": f"{self.bin_dir}:{os.environ['PATH']}",
                "GITHUB_REPOSITORY": "o/r",
                "GITHUB_STEP_SUMMARY": str(summary),
                **env,
            },
            capture_output=True,
            text=True,
        )
        return done.returncode, done.stdout, summary.read_text() if summary.exists() else ""


def _run(tmp_path: Path, entries, *, keep, restored, ref=MAIN, honour_ref=True, refuse=False):
    """Run keep-one-cache.sh; answer (exit code, stdout, the run's summary, gh's calls, the
    entries left). ``refuse``: GitHub refuses the listing."""
    gh = FakeGitHub(tmp_path, entries, honour_ref=honour_ref, refuse=refuse)
    code, out, summary = gh.run(SCRIPT, KEEP=keep, RESTORED=restored, REF=ref)
    return code, out, summary, gh.calls(), gh.keys()


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


def _listed_refs(calls) -> list[str]:
    return [c[c.index("--ref") + 1] for c in calls if c[:2] == ["cache", "list"]]


def test_the_guard_lets_a_night_whose_restore_matched_go_on_without_asking(tmp_path) -> None:
    gh = FakeGitHub(tmp_path, [(1, MAIN, "ciflake-db-10-1")])
    code, out, summary = gh.run(GUARD, RESTORED="ciflake-db-10-1", REF=MAIN, DEFAULT_BRANCH="main")
    assert (code, out, summary, gh.calls()) == (0, "", "", [])


@pytest.mark.parametrize("default_branch", ["main", ""], ids=["dispatch", "schedule"])
def test_the_guard_lets_a_first_night_go_on(tmp_path, default_branch) -> None:
    """Nothing listed on this ref nor on the default branch (a first night, or everything
    evicted): the night starts a new database; keep-one-cache.sh warns about it. A scheduled
    run's event names no default branch: it runs on it, so this ref is the one to list."""
    gh = FakeGitHub(tmp_path, [(7, "refs/heads/other", "ciflake-db-9-1")])
    code, out, _ = gh.run(GUARD, RESTORED="", REF=MAIN, DEFAULT_BRANCH=default_branch)
    assert code == 0 and "::error" not in out
    assert _listed_refs(gh.calls()) == [MAIN]


def test_the_guard_stops_a_night_whose_restore_failed_although_entries_exist(tmp_path) -> None:
    """A dispatch on a feature branch that restored nothing, while main holds two entries."""
    gh = FakeGitHub(tmp_path, [(1, MAIN, "ciflake-db-10-1"), (2, MAIN, "ciflake-db-11-1")])
    code, out, summary = gh.run(GUARD, RESTORED="", REF=FEATURE, DEFAULT_BRANCH="main")
    assert code == 1 and _listed_refs(gh.calls()) == [FEATURE, MAIN]
    (line,) = out.splitlines()
    assert line.startswith("::error title=ciflake database::the database restore failed")
    assert "although 2 ciflake-db- cache entries exist" in line
    assert "Nothing was collected, saved or deleted, so the next night retries" in line
    assert "re-run this job" in line and "gh cache delete ID" in summary
    assert gh.keys() == {"ciflake-db-10-1", "ciflake-db-11-1"}


def test_a_guard_github_refuses_to_answer_stops_the_night(tmp_path) -> None:
    gh = FakeGitHub(tmp_path, [(1, MAIN, "ciflake-db-10-1")], refuse=True)
    code, _, _ = gh.run(GUARD, RESTORED="", REF=MAIN, DEFAULT_BRANCH="main")
    assert code != 0


def _guarded(step: dict) -> bool:
    """Whether the step runs only when the guard let the night go on."""
    return "steps.guard.outcome == 'success'" in str(step.get("if", ""))


def _night(gh: FakeGitHub, held: dict[str, int], run_id: int, *, restore_fails: bool) -> int:
    """One scheduled night of action.yml's cache steps on main, with the steps its `if:`
    conditions let run; ``held`` maps each entry's key to the nights its database holds.
    Answers the guard's exit code (0 without a guard step)."""
    steps = yaml.safe_load((ROOT / "action.yml").read_text())["runs"]["steps"]
    ids = {s["id"]: s for s in steps if "id" in s}
    restored = "" if restore_fails else gh.newest(MAIN)
    code = 0
    if "guard" in ids:
        code, _, _ = gh.run(GUARD, RESTORED=restored, REF=MAIN, DEFAULT_BRANCH="main")
    if code and _guarded(ids["save"]):
        return code
    tonight = f"ciflake-db-{run_id}-1"
    gh.save(MAIN, tonight)
    held[tonight] = held.get(restored, 0) + 1
    (keep,) = [s for s in steps if "keep-one-cache.sh" in str(s.get("run", ""))]
    if not (code and _guarded(keep)):
        gh.run(SCRIPT, KEEP=tonight, RESTORED=restored, REF=MAIN)
    return code


def test_a_failed_restore_cannot_lose_the_database_one_night_later(tmp_path) -> None:
    """Night N's restore fails while main's entry holds 30 nights. Had it gone on, it would
    have saved a one-night database as the newest entry; night N+1 would restore that one,
    and its clean-up would delete the 30 nights. The guard stops night N instead."""
    gh = FakeGitHub(tmp_path, [(1, MAIN, "ciflake-db-10-1")])
    held = {"ciflake-db-10-1": 30}
    stopped = _night(gh, held, 11, restore_fails=True)
    left_after_night_n = gh.keys()
    assert _night(gh, held, 12, restore_fails=False) == 0
    assert gh.keys() == {"ciflake-db-12-1"} and held["ciflake-db-12-1"] == 31
    assert stopped == 1 and left_after_night_n == {"ciflake-db-10-1"}
