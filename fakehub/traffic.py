"""The traffic that triggers fakehub's runs: pushes to main and to pull-request branches.

Main-branch commits and pull-request pushes arrive as Poisson processes at the catalog's weekly
rates (scaled by ``scale``, pull requests by ``pr_scale`` when given), clustered in verl's
working hours, each with a commit title, an actor and a SHA drawn from the seed;
``fakehub.history`` starts the workflows each one triggers. A catalog may give its own
``actors``, ``areas`` and ``topics`` in its ``traffic``; verl's are the lists below.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from random import Random

from fakehub.catalog import Catalog

ACTORS = (
    "wuxibin-dev",
    "vermouth-ai",
    "eric-haibin",
    "hiyouga-bot",
    "ccclyu",
    "tongyx",
    "zhaochenyang",
    "PeterSH6",
    "ETOgaosion",
    "Begunner",
    "chenhaiq",
    "lllzzz-npu",
    "ascend-ci-robot",
    "yyDing1",
)
AREAS = (
    "trainer",
    "rollout",
    "fsdp",
    "megatron",
    "ci",
    "vllm",
    "sglang",
    "ray",
    "data",
    "npu",
    "algo",
    "ckpt",
    "recipe",
    "perf",
    "misc",
)
VERBS = ("fix", "feat", "refactor", "chore", "perf", "doc", "test")
TOPICS = (
    "weight sync between trainer and rollout",
    "fully async rollouter restart",
    "dynamic batch size",
    "checkpoint engine bucket size",
    "agent loop timeout",
    "TransferQueue client init",
    "log_prob micro batch",
    "GRPO advantage normalisation",
    "rollout tensor parallel sharding",
    "reward manager registry",
    "Ascend device mesh",
    "mbridge weight conversion",
    "LoRA merge",
    "sequence packing on NPU",
    "validation generation config",
    "Ray placement group ordering",
    "vLLM sleep mode",
    "entropy coefficient schedule",
    "dataset preprocessing cache",
    "uv lock",
)


def _id_hex(*parts: object) -> str:
    return hashlib.sha1(":".join(map(str, parts)).encode()).hexdigest()


def _poisson(rng: Random, lam: float) -> int:
    """Knuth's method; lam stays below ~30 per day here."""
    limit, k, p = pow(2.718281828459045, -lam), 0, rng.random()
    while p > limit:
        k += 1
        p *= rng.random()
    return k


@dataclass(frozen=True)
class Trigger:
    """A push to main or to a pull-request branch."""

    at: datetime
    event: str
    branch: str
    sha: str
    title: str
    pr: int | None
    actor: str


def pr_number(catalog: Catalog, at: datetime) -> int:
    """The pull-request number GitHub was handing out at ``at`` (interpolated anchors)."""
    anchors = catalog.traffic["pr_number_anchors"]
    points = [(datetime.fromisoformat(t.replace("Z", "+00:00")), n) for t, n in anchors]
    for (t0, n0), (t1, n1) in zip(points, points[1:], strict=False):
        if at <= t1 or (t1, n1) == points[-1]:
            return int(n0 + (n1 - n0) * ((at - t0) / (t1 - t0)))
    return points[-1][1]


def triggers(
    rng: Random,
    catalog: Catalog,
    seed: int | str,
    scale: float,
    now: datetime,
    pr_scale: float | None = None,
) -> list[Trigger]:
    """Every push from the catalog's start to ``now``, oldest first; ``pr_scale`` scales the
    pull-request pushes on their own (default: ``scale``)."""
    traffic = catalog.traffic
    pr = scale if pr_scale is None else pr_scale
    per_day = {
        "push": traffic["main_commits_per_week"] / 7 * scale,
        "pull_request": traffic["pr_pushes_per_week"] / 7 * pr,
    }
    out: list[Trigger] = []
    day = catalog.start
    while day < now:
        weekday = 1.2 if day.weekday() < 5 else 0.5
        for event, lam in per_day.items():
            for _ in range(_poisson(rng, lam * weekday)):
                # verl merges cluster in Asian working hours (UTC 01-12), with a long tail.
                hour = rng.choice((1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 16, 19, 22))
                at = day + timedelta(hours=hour, seconds=rng.randrange(3600))
                if at < now:
                    out.append(trigger(rng, catalog, seed, event, at))
        day += timedelta(days=1)
    out.sort(key=lambda t: t.at)
    return out


def trigger(rng: Random, catalog: Catalog, seed: int | str, event: str, at: datetime) -> Trigger:
    """One push at ``at``: to main, or to a pull request's branch. ``seed``: the history's key
    (``History.key``), which the SHA is made from."""
    words = catalog.traffic
    back = words.get("pr_spread", 60)  # a pushed PR was opened up to this many numbers ago
    number = pr_number(catalog, at) - (0 if event == "push" else rng.randrange(1, back))
    area = rng.choice(words.get("areas", AREAS))
    title = f"[{area}] {rng.choice(VERBS)}: {rng.choice(words.get('topics', TOPICS))}"
    actor = rng.choice(words.get("actors", ACTORS))
    if event == "push":
        return Trigger(
            at,
            event,
            "main",
            _id_hex(seed, at, title),
            f"{title} (#{number})",
            None,
            actor,
        )
    branch = f"{actor.lower()}/{title.split(': ')[1].replace(' ', '-')[:28]}-{number % 97}"
    return Trigger(at, event, branch, _id_hex(seed, at, branch), title, number, actor)
