"""Per-client token buckets, in memory only: addresses are never written anywhere."""

from __future__ import annotations

import math
import threading
import time


class RateLimiter:
    """`rate` requests a second per client, bursts of up to `burst`; rate 0 disables it.

    Idle buckets are dropped (a full bucket is the same as no bucket), so memory stays
    bounded by the clients active in the last `burst / rate` seconds.
    """

    def __init__(self, rate: float, burst: float | None = None, clock=time.monotonic):
        self.rate = float(rate)
        self.burst = float(burst) if burst else max(1.0, 2 * self.rate)
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # client -> (tokens, stamp)
        self._lock = threading.Lock()
        self._next_sweep = 0.0

    @property
    def enabled(self) -> bool:
        return self.rate > 0

    def acquire(self, client: str, cost: float = 1.0) -> float:
        """0 if the request may go ahead, else the seconds to wait before retrying."""
        if not self.enabled:
            return 0.0
        now = self._clock()
        with self._lock:
            if now >= self._next_sweep:
                self._sweep(now)
            tokens, stamp = self._buckets.get(client, (self.burst, now))
            tokens = min(self.burst, tokens + (now - stamp) * self.rate)
            if tokens >= cost:
                self._buckets[client] = (tokens - cost, now)
                return 0.0
            self._buckets[client] = (tokens, now)
            return (cost - tokens) / self.rate

    def _sweep(self, now: float) -> None:
        full_after = self.burst / self.rate
        stale = [c for c, (_, stamp) in self._buckets.items() if now - stamp > full_after]
        for client in stale:
            del self._buckets[client]
        self._next_sweep = now + max(1.0, full_after)


def retry_after(seconds: float) -> str:
    """Retry-After takes whole seconds; never 0 (that would invite an immediate retry)."""
    return str(max(1, math.ceil(seconds)))
