"""The one client of a running server's API, for every command that asks a server instead of
opening a store (`--server URL`, where.py): `balance sql`, `report`, `export`, `reverify`,
`rules`.

It sends `$BALANCE_TOKEN` as a bearer token when set, never raises for an HTTP status (the
caller reads `Answer.status`; `Answer.problem()` is the server's error as one line), and turns
what is not an answer into named errors with their exit code: `Unreachable` (no connection:
exit 2) and `Reset` (the server closed the connection mid-answer). With `retry_busy`, a busy
server (429 / 503, after its Retry-After) and a reset connection are tried again with growing
waits: a server under load answers busy for a while, and an export is long.

Exit codes, the same for every command: 0 done; 1 the server refused (its message on stderr);
2 the server could not be reached or answered something that is not the API's.
"""

from __future__ import annotations

import http.client
import json
import random
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field

from . import settings

REFUSED, UNREACHABLE = 1, 2  # the exit codes of a refusal and of no (usable) answer

RETRIES = 6  # a busy server's answer is retried this many times (waits from 1 s to 30 s)
_RESETS = (
    ConnectionResetError,
    ConnectionAbortedError,
    http.client.RemoteDisconnected,
    http.client.IncompleteRead,  # a download cut off mid-way (the server's send deadline)
)


class RemoteError(Exception):
    """No usable answer; `code` is the command's exit code."""

    code = UNREACHABLE


class Unreachable(RemoteError):
    """No connection to the server (refused, no route, a timeout)."""


class Reset(RemoteError):
    """The server closed the connection mid-answer."""


@dataclass
class Answer:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)  # names in lower case

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def json(self):
        """The body as JSON; RemoteError (exit 2) when it is not (not the API answering)."""
        try:
            return json.loads(self.body)
        except ValueError:
            raise RemoteError(f"the server answered HTTP {self.status}, not JSON") from None

    def refusal(self) -> tuple[str, int]:
        """A failed answer as (one line, exit code): the API's JSON error is a refusal (1);
        anything else (a proxy's page, an empty body) is no answer of the API (2)."""
        try:
            detail = json.loads(self.body)
        except ValueError:
            detail = None
        if isinstance(detail, dict):
            return self.problem(), REFUSED
        return f"the server answered HTTP {self.status}", UNREACHABLE

    def problem(self) -> str:
        """The server's error as one line: "<error>: <message>" from its JSON body, else the
        status."""
        try:
            detail = json.loads(self.body)
        except ValueError:
            return f"HTTP {self.status}"
        if not isinstance(detail, dict):
            return f"HTTP {self.status}"
        return f"{detail.get('error', self.status)}: {detail.get('message', '')}"


def backoff(attempt: int, retry_after: str | None) -> float:
    """Seconds before retry `attempt` (from 0): the server's Retry-After where it gives
    whole seconds, else doubling from one second, with jitter (clients retrying together
    would meet again); never more than 30 s."""
    try:
        wait = float(retry_after) if retry_after is not None else 2.0**attempt
    except ValueError:
        wait = 2.0**attempt
    return min(30.0, max(0.5, wait)) * random.uniform(1.0, 1.25)


class Api:
    """A running server's API at `base` (its URL)."""

    def __init__(self, base: str, token: str | None = None, timeout: float = 60.0):
        self.base = base.rstrip("/")
        self.token = token if token is not None else settings.value("TOKEN")
        self.timeout = timeout

    def request(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        json_body: object = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        retry_busy: bool = False,
    ) -> Answer:
        """One call of `method path`; with `retry_busy`, retried while the server is busy or
        resets the connection (RETRIES times at most)."""
        for attempt in range(RETRIES + 1 if retry_busy else 1):
            last = attempt == (RETRIES if retry_busy else 0)
            try:
                answer = self._once(method, path, body, json_body, headers, timeout)
            except Reset:
                if last:
                    raise
                wait = backoff(attempt, None)
            else:
                if not retry_busy or answer.status not in (429, 503) or last:
                    return answer
                wait = backoff(attempt, answer.headers.get("retry-after"))
            time.sleep(wait)
        raise AssertionError("unreachable")

    def _once(self, method, path, body, json_body, headers, timeout) -> Answer:
        sent = {"Accept": "application/json", **(headers or {})}
        if json_body is not None:
            body = json.dumps(json_body).encode()
            sent.setdefault("Content-Type", "application/json")
        if self.token:
            sent["Authorization"] = f"Bearer {self.token}"
        if method == "POST" and body is None:
            body = b""
        req = urllib.request.Request(self.base + path, data=body, headers=sent, method=method)
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout) as resp:
                return Answer(resp.status, resp.read(), _lower(resp.headers.items()))
        except urllib.error.HTTPError as exc:
            return Answer(exc.code, exc.read(), _lower(exc.headers.items()))
        except _RESETS as exc:  # (a refused connection is no busy server: not retried)
            raise Reset(f"{self.base} closed the connection: {type(exc).__name__}") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, _RESETS):
                raise Reset(
                    f"{self.base} closed the connection: {type(exc.reason).__name__}"
                ) from None
            raise Unreachable(f"cannot reach {self.base}: {exc.reason}") from None
        except OSError as exc:  # a timeout, a socket error
            raise Unreachable(f"cannot reach {self.base}: {getattr(exc, 'reason', exc)}") from None


def _lower(items) -> dict[str, str]:
    return {k.lower(): v for k, v in items}
