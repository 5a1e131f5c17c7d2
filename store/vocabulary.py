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

EVENT_KINDS: tuple[str, ...] = ("migration", "fix", "config", "image")

LOG_STATUSES: tuple[str, ...] = ("ok", "expired", "missing", "error")

# Which evidence decided a failure's category (DESIGN.md "Vocabulary"): a log line, GitHub's
# check-run annotations, the job's own facts (failed step, job name, no jobs, duration), or
# nothing that survives (category `unknown`).
EVIDENCE: tuple[str, ...] = ("log", "annotations", "job", "none")
