"""Small hand-made frames for the analytics tests: runs, attempts, jobs, failures."""

from __future__ import annotations

import pandas as pd

T0 = pd.Timestamp("2026-06-01T00:00:00Z")


def day(n: float) -> pd.Timestamp:
    return T0 + pd.Timedelta(days=n)


def runs_frame(rows: list[dict]) -> pd.DataFrame:
    """Runs with defaults: push on main of workflow a.yml, one attempt."""
    defaults = {
        "repo": "o/r",
        "workflow_id": 1,
        "workflow_path": ".github/workflows/a.yml",
        "workflow_name": "a",
        "event": "push",
        "head_branch": "main",
        "run_number": 1,
        "run_attempt": 1,
        "status": "completed",
        "html_url": None,
    }
    frame = pd.DataFrame([{**defaults, **r} for r in rows])
    if "head_sha" not in frame:
        frame["head_sha"] = frame["run_id"].map(lambda i: f"{i:040x}")
    frame["created_at"] = pd.to_datetime(frame["created_at"], utc=True)
    return frame


def attempts_frame(rows: list[tuple[int, int, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["run_id", "attempt", "conclusion"]).assign(
        status="completed"
    )


def jobs_frame(rows: list[tuple]) -> pd.DataFrame:
    """(job_id, run_id, run_attempt, name, conclusion[, runner_name[, minutes]])."""
    records = []
    for row in rows:
        job_id, run_id, attempt, name, conclusion, *rest = row
        runner = rest[0] if rest else "runner-x"
        minutes = rest[1] if len(rest) > 1 else 10
        start = T0 + pd.Timedelta(minutes=1)
        records.append(
            {
                "job_id": job_id,
                "run_id": run_id,
                "run_attempt": attempt,
                "name": name,
                "status": "completed",
                "conclusion": conclusion,
                "created_at": T0,
                "started_at": start,
                "completed_at": start + pd.Timedelta(minutes=minutes),
                "runner_name": runner,
                "runner_group_name": None,
                "labels": [runner],
            }
        )
    return pd.DataFrame(records)


def failures_frame(rows: list[tuple]) -> pd.DataFrame:
    """(run_id, run_attempt, job_id, category[, env])."""
    records = [
        {
            "run_id": r[0],
            "run_attempt": r[1],
            "job_id": r[2],
            "category": r[3],
            "rule": r[3],
            "signature": f"sig-{r[3]}",
            "line": "x",
            "env": r[4] if len(r) > 4 else {},
        }
        for r in rows
    ]
    columns = ["run_id", "run_attempt", "job_id", "category", "rule", "signature", "line", "env"]
    return pd.DataFrame(records, columns=columns)
