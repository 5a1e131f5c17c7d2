"""GitHub's rate limits: the primary one of a token (a budget per hour, plus forced exhaustion),
and the secondary limit on creating content."""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field


@dataclass
class RateLimit:
    """`spend()` counts one request; `exhausted()` says whether the budget is gone."""

    limit: int = 5000
    window: float = 3600.0
    exhaust_after: int | None = None
    exhaust_seconds: float = 60.0
    used: int = 0
    counted_total: int = 0
    reset_at: float = field(default_factory=lambda: time.time() + 3600.0)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _roll(self) -> None:
        now = time.time()
        if now >= self.reset_at:
            self.used = 0
            self.reset_at = now + self.window

    def exhausted(self) -> bool:
        with self._lock:
            self._roll()
            return self.used >= self.limit

    def spend(self) -> None:
        with self._lock:
            self._roll()
            self.used += 1
            self.counted_total += 1
            if self.exhaust_after is not None and self.counted_total == self.exhaust_after:
                self.used = self.limit
                self.reset_at = time.time() + self.exhaust_seconds

    def headers(self) -> list[tuple[str, str]]:
        with self._lock:
            self._roll()
            return [
                ("X-RateLimit-Limit", str(self.limit)),
                ("X-RateLimit-Remaining", str(max(0, self.limit - self.used))),
                ("X-RateLimit-Used", str(min(self.used, self.limit))),
                ("X-RateLimit-Reset", str(int(self.reset_at))),
                ("X-RateLimit-Resource", "core"),
            ]

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            self._roll()
            remaining = max(0, self.limit - self.used)
            return {
                "limit": self.limit,
                "remaining": remaining,
                "reset": int(self.reset_at),
                "used": self.limit - remaining,
            }


@dataclass
class ContentLimit:
    """GitHub's secondary limit on creating content, per user: at most `per_minute` creations
    in any 60 seconds. Issue creation is stopped far below the documented 80 a minute: about 20
    (cli/cli#4801; checkmarx-ltd/cx-flow#1078). GitHub often sends no `Retry-After` with it
    (`retry_after` None)."""

    per_minute: int | None = 20
    retry_after: int | None = None
    _times: dict[str, deque[float]] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def allow(self, login: str) -> bool:
        """Count one creation by `login`; False (and not counted) when it is over the limit."""
        with self._lock:
            now = time.monotonic()
            times = self._times.setdefault(login, deque())
            while times and times[0] <= now - 60:
                times.popleft()
            if self.per_minute is not None and len(times) >= self.per_minute:
                return False
            times.append(now)
            return True
