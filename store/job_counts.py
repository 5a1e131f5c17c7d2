"""SQL of the logical-job report tables (reports.job_tables) over the derived tables: each read
is one statement, aggregated or cut down in the database, the same text on SQLite and
PostgreSQL. What depends on the configuration (lineages, runner pools, invalid windows) is
applied by the caller on what these return."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    BigInteger,
    Select,
    Text,
    and_,
    case,
    cast,
    distinct,
    func,
    literal,
    literal_column,
    null,
    or_,
    select,
    type_coerce,
    union_all,
)

from store import rollups
from store.frame_queries import label_tuples
from store.models import (
    Failure,
    LogicalJob,
    LogicalRun,
    RollupJob,
    RollupJobOutcome,
    WorkflowRun,
)
from store.runfilter import (
    Bind,
    RunFilter,
    UTCWeek,
    UTCWeekOfDay,
    filtered,
    raw_frame,
    selects_run,
)
from store.vocabulary import (
    COUNTED_OUTCOMES,
    GREEN_OUTCOMES,
    HOSTED_RUNNER_PREFIX,
    HOSTED_RUNNERS,
    NO_RUNNER_NAME,
    RED_OUTCOMES,
)

if TYPE_CHECKING:
    import pandas as pd


COUNT_KEYS = [
    "workflow_path",
    "logical_job",
    "week",
    "runner_name",
    "labels",
    "logical_outcome",
    "incident_id",
]


def _counted(where: RunFilter, keys: Sequence[str], more: Any = None) -> Select[Any]:
    """job_counts' statement: one GROUP BY of the logical jobs of ``where`` per ``keys`` (and
    the columns ``more`` makes of the runner name), from a rollup of jobs when it holds
    ``where`` (store.rollups.covers), else from the logical jobs themselves."""
    rolled = rollups.covers(where)
    # what counts no runner reads the rollup without them: a third of the rows at scale 1
    r: type[RollupJob] | type[RollupJobOutcome] = RollupJob
    if not {"runner_name", "labels"} & set(keys) and more is None:
        r = RollupJobOutcome
    if rolled:
        columns = {
            "workflow_path": r.workflow_path,
            "logical_job": r.logical_job,
            "week": UTCWeekOfDay(r.day),
            "logical_outcome": r.logical_outcome,
            "incident_id": r.incident_id,
        }
        if r is RollupJob:
            columns |= {"runner_name": RollupJob.runner_name, "labels": RollupJob.labels}
        n: Any = cast(func.sum(r.n), BigInteger)
    else:
        job, run, hit = LogicalJob, WorkflowRun, rollups.job_incident()
        red = job.logical_outcome.in_(RED_OUTCOMES)
        columns = {
            "workflow_path": run.workflow_path,
            "logical_job": job.logical_job,
            "week": UTCWeek(run.created_at),
            "runner_name": job.runner_name,
            "labels": cast(job.labels, Text),
            "logical_outcome": job.logical_outcome,
            "incident_id": hit.c.incident_id,
        }
        n = func.count()
    extra = more(columns["runner_name"]) if more is not None else []
    labelled = [*(columns[key].label(key) for key in keys), n.label("n"), *extra]
    stmt: Select[Any] = select(*labelled)
    group: list[Any] = [literal_column(str(i)) for i in range(1, len(keys) + 1)]
    if rolled:
        return rollups.within(stmt.group_by(*group), r, where)
    stmt = (
        stmt.select_from(job)
        .join(run, run.id == job.run_id)
        .outerjoin(hit, and_(hit.c.job_id == job.red_job_id, red))
        .group_by(*group)
    )
    return filtered(stmt, where)


def job_counts(bind: Bind, where: RunFilter, keys: Sequence[str] = COUNT_KEYS) -> pd.DataFrame:
    """Logical jobs of ``where`` counted (``n``) per workflow, logical job, ISO week, runner,
    runner labels, outcome and incident (red jobs only; None: none), or per the ``keys`` of
    COUNT_KEYS given: keys, n. Labels as tuples of str. One GROUP BY over the logical jobs:
    what the flaky-jobs table counts from (and, from the raw rows, the runner tables)."""
    frame = raw_frame(bind, _counted(where, keys))
    return frame.assign(labels=label_tuples(frame["labels"])) if "labels" in keys else frame


RUNNER_COUNT_COLUMNS = [
    "part",
    "runner_name",
    "labels",
    "workflow_path",
    "logical_job",
    "week",
    "logical_outcome",
    "incident_id",
    "n",
    "works",
]


def runner_counts(
    bind: Bind, where: RunFilter, min_runs: int, named: Sequence[str]
) -> pd.DataFrame:
    """What the Runners page's tables count, in one statement over job_counts' GROUP BY
    (RUNNER_COUNT_COLUMNS; labels as tuples of str), a few rows per table row, by ``part``:

    - ``runner``: per runners-table row (``runner_name`` the host that keeps its row, else
      None and the ``labels`` of its short-lived pool), outcome and incident: ``n`` and
      ``works``, how many of them failed and went green that week on another runner;
    - ``runners``: per runners-table row, ``n`` its hosts (runner names);
    - ``pool``: per label set, outcome and incident: ``n``, and ``works`` by label set;
    - ``place``: per workflow, logical job, week and runner (``runner_name``, NO_RUNNER_NAME
      for none) with a hard failure: ``n`` of them and ``works`` (1: the job went green that
      week on another runner).

    A host (every GitHub-hosted VM is the one HOSTED_RUNNERS) keeps its row when it ran
    ``min_runs`` counted jobs, or is one of ``named`` (the runner incidents' hosts),
    HOSTED_RUNNERS or NO_RUNNER_NAME (analytics.job_counts.runner_rows). A job went green on
    another runner when the first or the last runner (in text order) of its week's green jobs
    is not its own: no window, no distinct count, a few GROUP BYs of narrow rows.

    The jobs are grouped by job_counts' keys first. At scale 1 the groups are about as many as
    the jobs (most runner names run one job), and the jobs read a row each made the statement
    a sixth cheaper there; but where jobs repeat (the 16x benchmark's 16 copies) the groupings
    after it then read 16 times the rows: 1.5 -> 3.2 s of CPU on SQLite, 2.6 -> 7.7 s on
    PostgreSQL (#49)."""

    def placed(runner: Any) -> list[Any]:
        # place and host follow from runner_name: computed by the GROUP BY, not by a pass over it
        place = func.coalesce(runner, NO_RUNNER_NAME)
        hosted = func.substr(runner, 1, len(HOSTED_RUNNER_PREFIX))
        host = case((hosted == HOSTED_RUNNER_PREFIX, HOSTED_RUNNERS), else_=place)
        return [place.label("place"), host.label("host")]

    c = _counted(where, COUNT_KEYS, placed).cte("placed")
    week = [c.c.workflow_path, c.c.logical_job, c.c.week]
    greens = (
        select(
            *week,
            func.min(c.c.place).label("place_low"),
            func.max(c.c.place).label("place_high"),
            func.min(c.c.labels).label("labels_low"),
            func.max(c.c.labels).label("labels_high"),
        )
        .where(c.c.logical_outcome.in_(GREEN_OUTCOMES))
        .group_by(*week)
        .cte("greens")
    )
    g = greens.c
    counted = case((c.c.logical_outcome.in_(COUNTED_OUTCOMES), c.c.n), else_=0)
    always = c.c.host.in_([*named, HOSTED_RUNNERS, NO_RUNNER_NAME])
    hosts = select(c.c.host).group_by(c.c.host).having(or_(func.sum(counted) >= min_runs, always))
    kept = c.c.host.in_(select(hosts.cte("kept")))
    failed = c.c.logical_outcome == "fail"

    def elsewhere(low: Any, high: Any, own: Any) -> Any:
        return case((and_(failed, low.is_not(None), or_(low != own, high != own)), c.c.n), else_=0)

    rowed = (
        select(
            *c.c,
            case((kept, c.c.host)).label("row_host"),
            case((kept, null()), else_=c.c.labels).label("row_labels"),
            elsewhere(g.place_low, g.place_high, c.c.place).label("works"),
            elsewhere(g.labels_low, g.labels_high, c.c.labels).label("pool_works"),
        )
        .outerjoin(greens, and_(*(g[k.name] == k for k in week)))
        .cte("rowed")
    )
    r = rowed.c
    # the runner and pool parts sum one GROUP BY of the rows: a few rows per table row
    outcome = [r.logical_outcome, r.incident_id]
    row = [r.row_host, r.row_labels]
    sums = [func.sum(r[name]).label(name) for name in ("n", "works", "pool_works")]
    tally = select(*row, r.labels, *outcome, *sums).group_by(*row, r.labels, *outcome)
    t = tally.cte("tally").c
    by_row = [t.row_host, t.row_labels, t.logical_outcome, t.incident_id]
    by_labels = [t.labels, t.logical_outcome, t.incident_id]
    at_place = [r.workflow_path, r.logical_job, r.week, r.place]
    parts = [
        _part("runner", by_row, func.sum(t.n), func.sum(t.works)).group_by(*by_row),
        _part("runners", row, func.count(distinct(r.runner_name))).group_by(*row),
        _part("pool", by_labels, func.sum(t.n), func.sum(t.pool_works)).group_by(*by_labels),
        _part("place", at_place, func.sum(r.n), func.max(case((r.works > 0, 1), else_=0)))
        .where(r.logical_outcome == "fail")
        .group_by(*at_place),
    ]
    both = union_all(*parts).subquery("parts")
    frame = raw_frame(bind, select(*both.c))
    given = frame["labels"].notna()  # the parts without labels: NaN, as the driver gave it
    return frame.assign(labels=label_tuples(frame["labels"][given]).reindex(frame.index))


def _part(part: str, keys: list[Any], n: Any, works: Any = None) -> Select[Any]:
    """One part of runner_counts as RUNNER_COUNT_COLUMNS: the columns ``keys`` (labelled
    with their names; ``row_host`` and ``row_labels`` as runner_name and labels, ``place``
    as runner_name), the others null."""
    names = {"row_host": "runner_name", "row_labels": "labels", "place": "runner_name"}
    given = {names.get(key.name, key.name): key for key in keys}
    typed = {"n": BigInteger, "works": BigInteger}
    # PostgreSQL sums bigint counts as numeric (Decimal in Python): counts stay integers
    sums = {"n": cast(n, BigInteger), "works": None if works is None else cast(works, BigInteger)}
    columns = {"part": literal(part), **given, **sums}
    return select(
        *(
            (
                columns[name]
                if columns.get(name) is not None
                else cast(null(), typed.get(name, Text))
            ).label(name)
            for name in RUNNER_COUNT_COLUMNS
        )
    )


NEIGHBOURS = ("prev_run_id", "prev_outcome", "next_run_id", "next_outcome", "same_sha_run_id")


def failed_jobs(bind: Bind, where: RunFilter, logical_job: str | None = None) -> pd.DataFrame:
    """The red logical jobs (flaky, fail) of ``where`` (and of ``logical_job`` only when given:
    its neighbours are its own runs, so the windows then sort its rows alone) with what their
    verdict reads
    (analytics.verdicts.decide): their neighbours on the branch (``prev_``/``next_run_id`` and
    ``_outcome``: the job's previous and next non-excluded run of the same workflow and branch)
    and ``same_sha_run_id``, the smallest run where the same logical job went green on the same
    commit (any workflow; None when it is the job's own run or there is none). One statement:
    window functions over the selected logical jobs, only the red rows returned."""
    job, run = LogicalJob, WorkflowRun
    branch = [run.workflow_path, job.logical_job, run.head_branch]
    in_time = [run.created_at, run.id]
    green_run = case((job.logical_outcome.in_(GREEN_OUTCOMES), run.id))
    same_sha = func.min(green_run).over(partition_by=[run.head_sha, job.logical_job])
    counted = filtered(
        select(
            job.run_id,
            job.logical_job,
            func.lag(run.id).over(partition_by=branch, order_by=in_time).label("prev_run_id"),
            func.lag(job.logical_outcome)
            .over(partition_by=branch, order_by=in_time)
            .label("prev_outcome"),
            func.lead(run.id).over(partition_by=branch, order_by=in_time).label("next_run_id"),
            func.lead(job.logical_outcome)
            .over(partition_by=branch, order_by=in_time)
            .label("next_outcome"),
            case((run.head_sha.is_not(None), same_sha)).label("same_sha_run_id"),
        )
        .join(run, run.id == job.run_id)
        .where(job.logical_outcome != "excluded")
        .where(*([job.logical_job == logical_job] if logical_job is not None else [])),
        where,
    ).subquery("counted")
    # The windows sort narrow rows; the red rows' other columns are joined on afterwards.
    stmt = (
        select(
            run.workflow_path,
            job.logical_job,
            run.id.label("run_id"),
            run.head_branch,
            run.head_sha,
            run.created_at,
            run.html_url,
            job.attempts,
            job.last_attempt,
            job.logical_outcome,
            job.runner_name,
            job.red_attempt,
            job.red_job_id,
            job.category,
            *(counted.c[name] for name in NEIGHBOURS),
        )
        .select_from(counted)
        .join(job, and_(job.run_id == counted.c.run_id, job.logical_job == counted.c.logical_job))
        .join(run, run.id == job.run_id)
        .where(job.logical_outcome.in_(RED_OUTCOMES))
    )
    return raw_frame(bind, stmt, ("created_at",))


def failed_job_environments(bind: Bind, where: RunFilter) -> pd.DataFrame:
    """The failure (with its environment, ``env``, as JSON text) of every hard-failed logical
    job of ``where`` whose last red shard's log printed one, with the job's facts: run_id,
    run_attempt, job_id, category, env, workflow_path, logical_job, runner_name, created_at,
    week; in failure order (run, attempt, job)."""
    job, run, fail = LogicalJob, WorkflowRun, Failure
    env = type_coerce(fail.env, Text)
    stmt = (
        select(
            fail.run_id,
            fail.run_attempt,
            fail.job_id,
            fail.category,
            env.label("env"),
            run.workflow_path,
            job.logical_job,
            job.runner_name,
            run.created_at,
            UTCWeek(run.created_at).label("week"),
        )
        .join(job, and_(job.red_job_id == fail.job_id, job.run_id == fail.run_id))
        .join(run, run.id == job.run_id)
        .where(job.logical_outcome == "fail")
        .where(cast(fail.env, Text) != "{}")  # most logs print none: their rows add nothing
        .where(selects_run(fail.run_id, where))
        .order_by(fail.run_id, fail.run_attempt, fail.job_id)
    )
    return raw_frame(bind, stmt, ("created_at",))


def red_turns(bind: Bind, where: RunFilter) -> pd.DataFrame:
    """Where the logical runs of ``where`` turn red or green: in each workflow and branch, in
    time order (ties by run id) and without excluded runs, every hard red after a run that
    was not one (a red streak starts) and every run after a hard red that is not one (the
    streak is repaired): workflow_path, head_branch, run_id, created_at, red (0 or 1), in no
    particular order. One statement, one window: a few rows per streak, however many runs
    (analytics.health.streaks_of_turns pairs them)."""
    outcome, run = LogicalRun.logical_outcome, WorkflowRun
    red = case((outcome == "fail", 1), else_=0)
    previous = func.lag(red).over(
        partition_by=[run.workflow_path, run.head_branch], order_by=[run.created_at, run.id]
    )
    ordered = filtered(
        select(
            run.workflow_path,
            run.head_branch,
            run.id.label("run_id"),
            run.created_at,
            red.label("red"),
            func.coalesce(previous, 0).label("previous"),
        )
        .join(run, run.id == LogicalRun.run_id)
        .where(outcome != "excluded"),
        where,
    ).subquery("ordered")
    kept = [ordered.c[name] for name in ("workflow_path", "head_branch", "run_id", "created_at")]
    stmt = select(*kept, ordered.c.red).where(ordered.c.red != ordered.c.previous)
    return raw_frame(bind, stmt, ("created_at",))
