"""Headers every answer of the server carries, whichever part of it answered (Flask's routes,
the upload route and its limits, errors).

- `X-Frame-Options: DENY` and `Content-Security-Policy: frame-ancestors 'none'`: no other site
  may show the dashboard or the console in a frame (clickjacking: a hidden frame over a decoy
  button saving or deleting a saved query). The product frames none of its own pages.
- `X-Content-Type-Options: nosniff`: a browser takes a CSV download or a JSON answer holding
  uploaded text as what it says it is, never as HTML or script it guessed.
"""

from __future__ import annotations

SECURITY_HEADERS = (
    ("X-Frame-Options", "DENY"),
    ("Content-Security-Policy", "frame-ancestors 'none'"),
    ("X-Content-Type-Options", "nosniff"),
)
_NAMES = {name.lower() for name, _ in SECURITY_HEADERS}


class SecurityHeaders:
    """WSGI middleware: the SECURITY_HEADERS on every response of `app` (replacing any of the
    same name, so that no route can weaken them)."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        def start(status, headers, exc_info=None):
            kept = [(k, v) for k, v in headers if k.lower() not in _NAMES]
            return start_response(status, kept + list(SECURITY_HEADERS), exc_info)

        return self.app(environ, start)
