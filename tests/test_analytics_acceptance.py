"""Acceptance on fakehub's simulated verl history, stored by a real collect (PyGithub over HTTP):
the OOM share across #6568/#6649, coverage lost at #7357, changepoints near true change dates."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import pytest

import fakehub
from analytics.before_after import category_shift
from analytics.changepoints import changepoints, daily_failures, job_set_changes
from analytics.coverage import coverage_diff, lost_jobs
from analytics.outcomes import logical_jobs
from analytics.setup import event_table, job_renames
from ciflake.config import Config, load_config
from ciflake.export import logical_run_frame
from fakehub.catalog import FAR_FUTURE, FAR_PAST, JobSpec, RateChange, WorkflowSpec, load
from store.queries import RunFilter, daily_job_presence, daily_run_counts, load_jobs
from tests.hubtools import collect, migrated

pytestmark = pytest.mark.slow
SEED = 7
# The smallest scale at which the changepoint assertions below hold for every seed tried
# (1-16): at 0.2 the June shift is missed on 5 of 8 seeds. A collect takes ~1 minute.
SCALE = 0.3
LINEAGE = "e2e_v1_separate_async"  # fully_async and one_step_off, now v1 separate_async
TOLERANCE = pd.Timedelta(days=3)
# The biggest shift of LINEAGE: the FSDP2 OOM regime that #6649 ends (2026-06-08) with the two
# invalid windows of e2e_fully_async_policy.yml around it, from #6568 to #6823 and the end of
# #6823's two-day fsdp2 burst. Its true dates are the lineage's true dates in this span.
BIG_SHIFT = (pd.Timestamp("2026-06-03T07:51:40Z"), pd.Timestamp("2026-06-26T08:51:50Z"))


def _logical_runs(hub: fakehub.Hub, db_url: str) -> tuple[object, Config, pd.DataFrame]:
    report = collect(hub, db_url)
    assert report.runs_new > 0 and report.log_errors == 0
    engine, config = migrated(db_url), load_config()
    return engine, config, logical_run_frame(engine, config, RunFilter())


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """A full collect of the whole simulated history (now = 2026-11-28)."""
    db_url = f"sqlite:///{tmp_path_factory.mktemp('accept') / 'ciflake.db'}"
    with fakehub.running(seed=SEED, scale=SCALE, rate_limit=1_000_000) as hub:
        engine, config, runs = _logical_runs(hub, db_url)
    yield engine, config, runs
    engine.dispose()


@pytest.fixture(scope="module")
def june(tmp_path_factory):
    """A collect made on 2026-07-01 of the runs since 2026-05-01.

    GitHub keeps job logs for 90 days, so the full collect above (now = 2026-11-28) finds every
    June log expired and can only call those failures ``unknown``: the OOM share of #6568/#6649
    is measurable only from logs collected while they existed, which is why ciflake archives them.
    """
    db_url = f"sqlite:///{tmp_path_factory.mktemp('june') / 'ciflake.db'}"
    end = datetime(2026, 7, 1, tzinfo=UTC)
    with fakehub.running(seed=SEED, scale=SCALE, end=end, rate_limit=1_000_000) as hub:
        report = collect(hub, db_url, since=datetime(2026, 5, 1, tzinfo=UTC))
    assert report.logs_expired == 0
    engine, config = migrated(db_url), load_config()
    yield logical_run_frame(engine, config, RunFilter()), config
    engine.dispose()


def test_june_logs_are_expired_in_the_full_collect(history):
    _, _, runs = history
    june = runs[(runs["created_at"] >= "2026-05-20") & (runs["created_at"] < "2026-06-22")]
    red = june[june["logical_outcome"].isin(["fail", "flaky"])]
    assert len(red) > 50 and not (red["failure_category"] == "oom").any()


def test_oom_share_drops_across_6568_and_6649(june):
    runs, config = june
    # The strongest version that holds on every seed tried (1-8 at this scale, 7 at scale 1):
    # every run (pushes and PRs); at #6568 the OOM share of red runs and the OOM runs per run
    # drop; at #6649 the OOM runs per run drop; and across the pair, the 14 days before #6568
    # against the 14 days after #6649, both the share and the runs per run drop (seeds 1-8: the
    # share from 0.29-0.67 to 0.05-0.27). Not asserted, because they do not hold in general: the
    # default branch alone (0-7 OOM runs a side here: its share rises at #6568 on seed 1, at
    # #6649 on seeds 1, 4 and 6, across the pair on seed 1, 0.17 -> 0.20, and at #6649 on seed
    # 7 at scale 1), and the share at #6649 alone (rises on seed 4, 0.22 -> 0.27): its before
    # window holds #6568's invalid-file window and its after window #6551's, whose ci_config
    # reds dilute the share, and the rollout-memory OOM regime (#6649 until #6784) starts there.
    shift = category_shift(runs, event_table(config.events), scope="all")
    oom = shift[(shift["failure_category"] == "oom") & (shift["lineage"] == LINEAGE)]
    oom = oom.set_index("event_pr")
    assert oom.loc[6568, "after_share"] < oom.loc[6568, "before_share"]
    for pr in (6568, 6649):
        assert oom.loc[pr, "after_per_run"] < oom.loc[pr, "before_per_run"], pr
    for column in ("share", "per_run"):
        before, after = oom.loc[6568, f"before_{column}"], oom.loc[6649, f"after_{column}"]
        assert after < before, column


def test_coverage_diff_at_7357_lists_the_trtllm_jobs(history):
    engine, config, runs = history
    jobs = logical_jobs(load_jobs(engine), runs, config.job_name_strip)
    lost = lost_jobs(coverage_diff(jobs, event_table(config.events), job_renames(config.lineages)))
    at_7357 = set(lost.loc[lost["event_pr"] == 7357, "logical_job"])
    assert {
        "trtllm_async_unit_tests",
        "e2e_fully_async_policy_trtllm_megatron_multi_replica",
    } <= at_7357
    # the renamed GPU jobs have successors: not lost
    assert "e2e_fully_async_policy_fsdp2" not in at_7357


def _spans(workflow: WorkflowSpec, job: JobSpec) -> list[tuple[datetime, datetime]]:
    """When the job runs: its own life, minus its absences, within the workflow's presence."""
    out = []
    for a, b in workflow.present:
        lo, hi = max(a, job.start), min(b, job.end)
        cuts = sorted(t for gap in job.absent for t in gap if lo < t < hi)
        points = [lo, *cuts, hi]
        out += [
            (x, y)
            for x, y in zip(points, points[1:], strict=False)
            if x < y and job.exists(x + (y - x) / 2)
        ]
    return out


def _touches(change: RateChange, job: JobSpec, spans: list[tuple[datetime, datetime]]) -> bool:
    """Whether the change ever applies to the job while the job runs (RateChange.applies at the
    first moment both hold)."""
    return any(
        max(a, change.start) < min(b, change.end) and change.applies(job, max(a, change.start))
        for a, b in spans
    )


def true_change_dates(config: Config) -> pd.DataFrame:
    """Per lineage (lineage, date, why): the moments the simulation changes that lineage's
    failure process, the probability that a run's first attempt is red.

    fakehub draws each job's failure from its kind's base rates plus every regime and burst
    that applies to it (``RateChange.applies``: same kind, tags a subset of the job's, inside
    the change's window); a run is red if any job fails, or always when its workflow file is
    invalid or a step is broken. A lineage's rate is the mix of its workflows' runs. So its
    true dates are:

    - the start and end of every regime that applies to one of its jobs while the job runs;
    - the start and end of every such burst. Bursts are short (2-7 days) and decay linearly,
      but they are real changes, often the biggest: the 2025-11-06 image burst (+0.3 per GPU
      job) lifts this lineage's red rate from ~0.36 to ~0.74. A changepoint at a burst is a
      correct detection, so bursts belong to the truth set for precision; recall is asked only
      of the big June shift, since a burst carries too few runs at test scales to demand it;
    - the boundaries of its workflows' invalid windows and broken steps (every run red);
    - its workflows' presence boundaries (the mix changes) and its jobs' from/to and absences
      (a run with one more job fails more often).

    Left out because they do not change the red probability: runner labels (failures do not
    depend on the runner), timeouts (they only bound durations), ``needs`` edges (a Megatron
    job skipped after a failed fsdp2 job leaves the run red either way), traffic (weekday and
    weekend factors scale every workflow alike) and events that are none of the above.
    """
    catalog = load()
    lineage_of = {w.path: w.lineage for w in config.workflows}
    rows: list[tuple[str, datetime, str]] = []
    for workflow in catalog.workflows:
        lineage = lineage_of[workflow.path]
        rows += [
            (lineage, t, f"{workflow.path} present") for span in workflow.present for t in span
        ]
        rows += [(lineage, t, f"invalid: {why}") for a, b, why in workflow.invalid for t in (a, b)]
        rows += [
            (lineage, t, f"broken {kind} step in {job}")
            for a, b, job, kind in workflow.broken_steps
            for t in (a, b)
        ]
        for job in workflow.jobs:
            rows += [(lineage, t, f"job {job.id} from/to") for t in (job.start, job.end)]
            rows += [(lineage, t, f"job {job.id} absent") for gap in job.absent for t in gap]
            spans = _spans(workflow, job)
            for change in catalog.changes:
                if _touches(change, job, spans):
                    kind = "burst" if change.decays else "regime"
                    why = f"{kind} {change.category}: {change.why}"
                    rows += [(lineage, t, why) for t in (change.start, change.end)]
    frame = pd.DataFrame(rows, columns=["lineage", "date", "why"])
    frame = frame[(frame["date"] > FAR_PAST) & (frame["date"] < FAR_FUTURE)]
    frame["date"] = pd.to_datetime(frame["date"], utc=True)
    frame = frame.groupby(["lineage", "date"], as_index=False).agg(
        why=("why", lambda whys: "; ".join(dict.fromkeys(whys)))
    )
    return frame.sort_values(["lineage", "date"], ignore_index=True)


def _with_nearest(found: pd.DataFrame, truth: pd.DataFrame) -> pd.DataFrame:
    """``found`` with the nearest true date of its lineage: true_date, why, distance_days."""
    pairs = found.reset_index(names="cp").merge(
        truth.rename(columns={"date": "true_date"}), on="lineage"
    )
    pairs["distance_days"] = (pairs["date"] - pairs["true_date"]).dt.total_seconds() / 86400
    nearest = pairs.loc[pairs["distance_days"].abs().groupby(pairs["cp"]).idxmin()]
    return found.join(nearest.set_index("cp")[["true_date", "why", "distance_days"]])


def _near(when: pd.Series, dates: pd.Series) -> pd.Series:
    """Whether each of ``when`` lies within TOLERANCE of one of ``dates``."""
    return when.map(lambda d: bool((dates - d).abs().min() <= TOLERANCE))


def _report(found: pd.DataFrame, daily: pd.DataFrame, truth: pd.DataFrame) -> None:
    for lineage, days in daily.groupby("lineage"):
        dates = truth.loc[truth["lineage"] == lineage, "date"]
        near = _near(days["day"], dates).mean()
        print(f"{lineage}: {len(dates)} true dates; {near:.0%} of its days lie within 3 days")
        for row in found[found["lineage"] == lineage].itertuples():
            print(
                f"  {row.date:%Y-%m-%d} [{row.date_low:%m-%d}..{row.date_high:%m-%d}] "
                f"{row.before_rate:.2f}->{row.after_rate:.2f} nearest {row.true_date:%Y-%m-%d} "
                f"({row.distance_days:+.1f} d): {row.why}"
                + (f" | job set: {row.known_change}" if row.known_change else "")
            )


@pytest.fixture(scope="module")
def found_changepoints(history):
    """(daily, truth, found): the changepoints of every lineage with their nearest true date,
    searched as the dashboard does: the job set changes read from the stored jobs are known
    days."""
    engine, config, runs = history
    daily = daily_failures(runs)
    known = job_set_changes(
        daily_job_presence(engine),
        daily_run_counts(engine),
        runs.drop_duplicates("workflow_path").set_index("workflow_path")["lineage"],
        config.job_name_strip,
    )
    truth = true_change_dates(config)
    found = _with_nearest(changepoints(daily, known=known), truth)
    _report(found, daily, truth)
    return daily, truth, found, known


def test_changepoints_fall_within_3_days_of_true_changes(found_changepoints):
    daily, truth, found, _ = found_changepoints

    # The truth set is sparse enough for the test to fail: most days are not near a true date.
    subject_days = daily.loc[daily["lineage"] == LINEAGE, "day"]
    subject_truth = truth.loc[truth["lineage"] == LINEAGE, "date"]
    assert _near(subject_days, subject_truth).mean() < 0.5

    # Precision: every changepoint of the migration's lineage is a true change.
    subject = found[found["lineage"] == LINEAGE]
    assert not subject.empty
    assert (subject["distance_days"].abs() <= TOLERANCE / pd.Timedelta(days=1)).all(), subject

    # Recall: the biggest shift is found, as a drop, near one of its true dates.
    lo, hi = BIG_SHIFT
    shift_dates = subject_truth[(subject_truth >= lo) & (subject_truth <= hi)]
    assert len(shift_dates) >= 4  # #6568, #6649, #6551, #6823
    near_shift = _near(subject["date"], shift_dates)
    drops = subject[near_shift & (subject["after_rate"] < subject["before_rate"])]
    assert not drops.empty, subject


# Every lineage of the verl configuration (asserted against the collected runs below).
LINEAGES = (
    "e2e_ascend",
    "e2e_fully_async_policy_trtllm",
    "e2e_v1_separate_async",
    "e2e_v1_separate_async_ascend",
    "e2e_v1_separate_async_opd",
)
# Truth sets so dense that precision cannot fail: the share of the lineage's days within 3 days
# of a true date, measured on seeds 1-8 (the trtllm workflow lived 97 days with 16 true dates:
# its jobs come and go). Its precision is still asserted, but proves little; no changepoint was
# found there on any seed tried.
DENSE = {"e2e_fully_async_policy_trtllm": "62-70%"}


@pytest.mark.parametrize("lineage", LINEAGES)
def test_changepoints_of_every_lineage_fall_within_3_days_of_true_changes(
    found_changepoints, lineage
):
    daily, truth, found, _ = found_changepoints
    assert set(daily["lineage"]) <= set(LINEAGES)
    mine = found[found["lineage"] == lineage]
    # Whether the check could fail: the share of the lineage's days near one of its true dates.
    days = daily.loc[daily["lineage"] == lineage, "day"]
    near = _near(days, truth.loc[truth["lineage"] == lineage, "date"]).mean()
    if lineage in DENSE:
        assert near >= 0.5, f"{lineage}: {near:.0%} of days near a true date; move it out of DENSE"
    else:
        assert near < 0.5, f"{lineage}: {near:.0%} of days near a true date"
    assert (mine["distance_days"].abs() <= TOLERANCE / pd.Timedelta(days=1)).all(), mine


def test_job_set_changes_read_from_the_data_are_true_change_dates(found_changepoints):
    # The known days come from the stored jobs alone; each must be one of the simulation's
    # (a job's from/to or absence, a workflow's presence, an invalid window), within a day:
    # a change inside a day shows on that day or the next.
    _, truth, found, known = found_changepoints
    assert set(known["lineage"]) == set(LINEAGES)
    for lineage, days in known.groupby("lineage"):
        dates = truth.loc[truth["lineage"] == lineage, "date"]
        near = [(dates - day).abs().min() <= pd.Timedelta(days=1) for day in days["day"]]
        assert all(near), days[[not n for n in near]]
    # A known day lowers the evidence a cut needs, it does not make one: most are not cut.
    on_known = found[found["known_change"] != ""]
    assert len(on_known) < len(known) / 2, (len(on_known), len(known))


def test_e2e_ascend_steps_dated_on_their_job_set_changes(found_changepoints):
    # e2e_ascend has ~3.5 runs a day and two steps: 2025-12-10 (one NPU job becomes three, red
    # 0.14 -> 0.38) and 2026-08-14 (three become two, 0.31 -> 0.22). Searched freely, the first
    # landed 5 days late on this seed, 4 days off or more on 8 of 16 seeds, and the second
    # drifted up to 11 days (its likelihood moves ~0.1 a day); with the job set changes as
    # known days both land on their day on seeds 1-16 but seed 3, which cuts at 2025-12-28
    # (a fourth job joins) instead of 12-10.
    _, _, found, _ = found_changepoints
    mine = found[found["lineage"] == "e2e_ascend"]
    mine = mine.set_index(mine["date"].dt.strftime("%Y-%m-%d"))
    assert {"2025-12-10", "2026-08-14"} <= set(mine.index), mine
    rise, drop = mine.loc["2025-12-10"], mine.loc["2026-08-14"]
    assert rise["after_rate"] > rise["before_rate"] and drop["after_rate"] < drop["before_rate"]
    assert "+E2E Ascend testing for RL training scenarios of LLM models" in rise["known_change"]
    assert "-" in drop["known_change"]


def test_the_seed_sweep_finds_what_the_collect_finds(found_changepoints, history):
    # tests.changepoint_seeds reads fakehub's History instead of collecting it, to sweep seeds
    # in seconds: on this seed it must find the very changepoints the collected database gives.
    from tests.changepoint_seeds import search  # here: it imports this module

    _, config, _ = history
    _, truth, found, _ = found_changepoints
    swept = search(SEED, SCALE, config, truth)["known"]
    columns = ["lineage", "date", "before_runs", "after_runs", "known_change"]
    pd.testing.assert_frame_equal(swept[columns], found[columns])
