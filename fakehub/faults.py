"""Faults injected into API answers on demand, deterministic for a seed and a request order.

Spec syntax (for `--faults` and `POST /_admin/faults {"spec": ...}`): comma-separated items,
each `KIND=AMOUNT[:ARG]`, where AMOUNT is a probability per request (`0.05`) or `xN` for "the
next N API requests" (`x3`). Kinds:

    500, 502, 503       answer that status with GitHub's error body (GithubRetry retries them)
    502_post            502 to a POST only, after the route ran (the comment was created)
    429                 429 with `Retry-After: ARG` (default 1)
    429_noretry         429 without Retry-After (PyGithub does not retry it)
    secondary           403 "You have exceeded a secondary rate limit" with `Retry-After: ARG`
    secondary_noretry   the same 403 without Retry-After
    reset               drop the connection without an answer
    slow                wait ARG seconds (default 2.0) before answering normally
    truncate            send the full Content-Length but only half of the body
    exhaust_after=N[:S] after N requests that count against the limit, the primary budget is
                        spent: 403 "API rate limit exceeded" until S seconds later (default 60)
    big_page=N          a list page of more than N items is "too slow": 502, as GitHub answers
                        a request it could not serve in 10 s (ask for fewer per page)
    seed=N              the fault random seed (default: the server's seed)

Example: `500=0.05,502=0.02,reset=0.01,slow=0.05:2.0,truncate=0.01,secondary=x2,
exhaust_after=300:30`. Faults hit API routes only: never `/_admin`, never the blob host.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from random import Random

KINDS = (
    "500",
    "502",
    "503",
    "502_post",
    "429",
    "429_noretry",
    "secondary",
    "secondary_noretry",
    "reset",
    "slow",
    "truncate",
)
DEFAULT_ARGS = {"429": 1.0, "secondary": 1.0, "slow": 2.0}


@dataclass
class Rule:
    kind: str
    probability: float = 0.0
    remaining: int = 0  # for `xN` rules
    arg: float = 0.0


@dataclass
class Faults:
    """Parsed fault rules plus what fired so far."""

    spec: str = ""
    rules: list[Rule] = field(default_factory=list)
    exhaust_after: int | None = None
    exhaust_seconds: float = 60.0
    big_page: int | None = None
    seed: int = 0
    fired: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def parse(cls, spec: str, seed: int = 0) -> Faults:
        faults = cls(spec=spec.strip(), seed=seed)
        for item in filter(None, (part.strip() for part in spec.split(","))):
            kind, _, value = item.partition("=")
            amount, _, arg = value.partition(":")
            if kind == "seed":
                faults.seed = int(amount)
            elif kind == "exhaust_after":
                faults.exhaust_after = int(amount)
                faults.exhaust_seconds = float(arg or 60)
            elif kind == "big_page":
                faults.big_page = int(amount)
            elif kind in KINDS:
                rule = Rule(kind, arg=float(arg or DEFAULT_ARGS.get(kind, 0.0)))
                if amount.startswith("x"):
                    rule.remaining = int(amount[1:])
                else:
                    rule.probability = float(amount)
                    if not 0.0 <= rule.probability <= 1.0:
                        raise ValueError(f"fault probability out of [0, 1]: {item}")
                faults.rules.append(rule)
            else:
                raise ValueError(f"unknown fault kind {kind!r} in {item!r}; kinds: {KINDS}")
        return faults

    def too_big(self, body: bytes) -> bool:
        """Whether a JSON answer is a list page over the `big_page` threshold (counted)."""
        if self.big_page is None or not body.startswith((b"[", b"{")):
            return False
        try:
            data = json.loads(body)
        except ValueError:
            return False
        if isinstance(data, dict):
            data = next((v for k, v in data.items() if isinstance(v, list) and k != "steps"), [])
        big = isinstance(data, list) and len(data) > self.big_page
        if big:
            with self._lock:
                self.fired["big_page"] = self.fired.get("big_page", 0) + 1
        return big

    def pick(self, request_index: int, method: str = "GET") -> list[Rule]:
        """The faults that hit the request with this index (slow can combine with another);
        `502_post` rules skip requests that are not POSTs."""
        rng = Random(f"{self.seed}:{request_index}")
        hits: list[Rule] = []
        with self._lock:
            for rule in self.rules:
                draw = rng.random()
                if rule.kind == "502_post" and method != "POST":
                    continue
                hit = rule.remaining > 0 or draw < rule.probability
                taken = any(h.kind != "slow" for h in hits)
                if not hit or (rule.kind != "slow" and taken):
                    continue
                if rule.remaining > 0:
                    rule.remaining -= 1
                hits.append(rule)
                self.fired[rule.kind] = self.fired.get(rule.kind, 0) + 1
        return hits
