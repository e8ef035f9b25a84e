"""One way to wait: `wait_for(predicate, within, what)` polls until the predicate holds.

Tests wait for a state (a server healthy, a row stored, a lease run out), never for a fixed
time: a loaded machine then only makes a test slower, never wrong."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(
    predicate: Callable[[], T],
    within: float,
    what: str,
    every: float = 0.05,
    ignore: tuple[type[BaseException], ...] = (),
) -> T:
    """Call `predicate` until it returns something truthy and return that; TimeoutError naming
    `what` when `within` seconds pass first. It is tried once more at the deadline, so a slow
    machine that only reaches the state then still passes. Exceptions in `ignore` (say OSError
    while a server starts) count as "not yet"."""
    deadline = time.monotonic() + within
    while True:
        last = time.monotonic() >= deadline
        try:
            got = predicate()
        except ignore:
            got = None
        if got:
            return got
        if last:
            raise TimeoutError(f"{what}: not within {within} s")
        time.sleep(min(every, max(0.0, deadline - time.monotonic())))


def wait_until(instant: float) -> None:
    """Sleep until time.monotonic() reaches `instant`: for a test whose subject is a clock
    (a lease, a timeout, a rate window), the point in time it must be past."""
    left = instant - time.monotonic()
    if left > 0:
        time.sleep(left)
