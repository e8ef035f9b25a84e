"""What both ways of reaching the app answer: a `Response`, and the requests they share."""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass
class Response:
    status: int
    headers: dict[str, str]  # lower-cased names
    body: bytes

    def json(self):
        return json.loads(self.body)


class Client:
    """The requests both ways of reaching the app share; `request` is each one's own."""

    def request(self, method, path, body=None, headers=None, timeout=60.0) -> Response:
        raise NotImplementedError

    def get(self, path: str, **kw) -> Response:
        return self.request("GET", path, **kw)

    def post(
        self,
        path: str,
        body: bytes | str,
        content_type: str | None = None,
        headers: dict | None = None,
        **kw,
    ) -> Response:
        if isinstance(body, str):
            body = body.encode()
        headers = dict(headers or {})
        if content_type is not None:
            headers["Content-Type"] = content_type
        return self.request("POST", path, body, headers, **kw)

    def upload(self, records: list, **kw) -> Response:
        """NDJSON batch of records (dicts are dumped; bytes/str lines are sent as they are)."""
        lines = [
            r
            if isinstance(r, bytes)
            else r.encode()
            if isinstance(r, str)
            else json.dumps(r).encode()
            for r in records
        ]
        return self.post("/v1/games", b"\n".join(lines) + b"\n", "application/x-ndjson", **kw)

    def restart(self):
        self.stop()
        return self.start()
