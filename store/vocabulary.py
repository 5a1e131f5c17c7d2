"""The words every layer shares (DESIGN.md "Vocabulary"): one definition, imported everywhere."""

CATEGORIES: tuple[str, ...] = (
    "oom",
    "missing_dependency",
    "npu_env",
    "timeout",
    "network",
    "distributed",
    "ci_config",
    "test_failure",
    "infra",
    "unknown",
)

# Categories whose failures say more about the environment than about the code under test.
INFRA_CATEGORIES: frozenset[str] = frozenset({"infra", "npu_env", "network", "timeout"})

VERDICTS: tuple[str, ...] = ("flaky", "persistent", "one_off", "infra", "unclassified")

LOGICAL_OUTCOMES: tuple[str, ...] = ("pass", "flaky", "fail", "excluded")
# The logical outcomes every rate counts (``excluded`` counts in none), those that ended green
# (on the first attempt or a rerun) and those that went red on some attempt.
COUNTED_OUTCOMES: tuple[str, ...] = ("pass", "flaky", "fail")
GREEN_OUTCOMES: tuple[str, ...] = ("pass", "flaky")
RED_OUTCOMES: tuple[str, ...] = ("fail", "flaky")

# GitHub's conclusions of a job, attempt or run, read as green or red; ``startup_failure`` is a
# run whose workflow file is invalid. Every other conclusion is neither (cancelled, skipped...).
GREEN_CONCLUSIONS: frozenset[str] = frozenset({"success"})
RED_CONCLUSIONS: frozenset[str] = frozenset({"failure", "timed_out", "startup_failure"})

# GitHub names each VM of its hosted runners (runner group "GitHub Actions") "GitHub Actions
# <n>"; a VM runs one job and is gone, so a rate per VM means nothing: the runners table rates
# the hosts that persist and pools the hosted VMs into one row, HOSTED_RUNNERS.
HOSTED_RUNNER_PREFIX = "GitHub Actions "
HOSTED_RUNNERS = "(GitHub-hosted)"
# The runner pool of a job that never ran (no labels), and its runner.
NO_RUNNER = "(no runner)"
NO_RUNNER_NAME = "(none)"


def short_lived_runners(pool: str) -> str:
    """The runners-table row of runner pool ``pool``'s hosts that ran too few counted jobs to
    rate: self-hosted runners can be short-lived too (one container per job)."""
    return f"(short-lived runners of {pool})"


EVENT_KINDS: tuple[str, ...] = ("migration", "fix", "config", "image")

LOG_STATUSES: tuple[str, ...] = ("ok", "expired", "missing", "error")

# Which evidence decided a failure's category (DESIGN.md "Vocabulary"): a log line, GitHub's
# check-run annotations, the job's own facts (failed step, job name, no jobs, duration), or
# nothing that survives (category `unknown`); or a maintainer's correction (`triage correct`),
# which overrides them all.
EVIDENCE: tuple[str, ...] = ("maintainer", "log", "annotations", "job", "none")

# The first line of the nightly summary's comment, by which ciflake finds it again to edit it in
# place (reports.summary_render writes it, collector.summary_post looks for it).
SUMMARY_MARKER = "<!-- ciflake:summary -->"

# ciflake's issue for a failure signature (triage --post) is found again by its hidden first
# line, TRIAGE_MARKER with the signature; the nightly counts sit between COUNTS_START and
# COUNTS_END (reports.triage_body writes them, collector.triage_post rewrites only them).
TRIAGE_MARKER = "<!-- ciflake:triage {signature} -->"
COUNTS_START = "<!-- ciflake:counts -->"
COUNTS_END = "<!-- /ciflake:counts -->"
