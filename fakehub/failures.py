"""Which failure, if any, a simulated job suffers: base rates plus dated regimes and bursts.

Rates come from the catalog (one probability per category); they add up per job and moment, and
one uniform draw picks either success or a category in proportion to its rate.
"""

from __future__ import annotations

from datetime import datetime
from random import Random

from fakehub.catalog import Catalog, JobSpec, RateChange

MAX_FAILURE = 0.9


class FailureModel:
    """Failure probabilities per job and moment, with the catalog's changes pre-filtered per job."""

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog
        self._changes: dict[tuple[str, frozenset[str]], list[RateChange]] = {}

    def rates(self, job: JobSpec, at: datetime) -> dict[str, float]:
        """Probability of each failure category for this job starting at this moment."""
        key = (job.kind, job.tags)
        if key not in self._changes:
            self._changes[key] = [
                c for c in self._catalog.changes if c.kind == job.kind and c.tags <= job.tags
            ]
        rates = dict(self._catalog.base_rates.get(job.kind, {}))
        for change in self._changes[key]:
            if change.start <= at < change.end:
                rates[change.category] = rates.get(change.category, 0.0) + change.value(at)
        return rates

    def draw(self, rng: Random, job: JobSpec, at: datetime) -> str | None:
        """A failure category, or None for a green job."""
        rates = self.rates(job, at)
        total = sum(rates.values())
        shrink = MAX_FAILURE / total if total > MAX_FAILURE else 1.0
        u = rng.random()
        for category, rate in sorted(rates.items()):
            u -= rate * shrink
            if u < 0:
                return category
        return None

    def redraw_after_rerun(self, rng: Random, category: str) -> str | None:
        """On a rerun, a failed job passes with its category's rerun-pass probability."""
        return None if rng.random() < self._catalog.rerun_pass.get(category, 0.5) else category


# How a failure of each category shows on GitHub, beyond its log (seeded per job, so the main
# random stream of the history is the same whatever these shares are).
TIMEOUT_CAUSES = (("job_time_limit", 0.6), ("step_time_limit", 0.15))  # else an inner timeout
NO_RUNNER_SHARE = 0.15  # infra failures of test jobs that never found a runner


def failure_cause(seed: int, kind: str, category: str | None) -> str | None:
    """`job_time_limit` (GitHub cancels the job), `step_time_limit` (the step fails),
    `inner_timeout` (a collective or test timeout fails the job first), `no_runner` (no runner
    online took the job for a day), or None (the failure shows only in the log). Only a
    timeout or an infra failure draws: most jobs ask (every jobs payload does), and seeding a
    generator costs more than the rest of a job's steps."""
    if category not in ("timeout", "infra"):
        return None
    draw = Random(seed ^ 0xCA05E).random()
    if category == "timeout":
        for cause, share in TIMEOUT_CAUSES:
            if draw < share:
                return cause
            draw -= share
        return "inner_timeout"
    if category == "infra" and kind in ("gpu_test", "npu_test") and draw < NO_RUNNER_SHARE:
        return "no_runner"
    return None
