"""Who may see the dashboard and the SQL console.

Open when the server listens on loopback only; when it listens on any other address it is
*exposed* and every dashboard/SQL request needs the token (`BALANCE_TOKEN`):
`Authorization: Bearer <token>` (what `balance sql` sends), or a browser opens any page once with
`?token=<token>`, which sets an HttpOnly cookie and redirects to the same page without the token.
The cookie holds no token: it holds `cookie_value(token)`, an HMAC-SHA256 of a fixed label keyed
with the token, so a copied cookie (or a browser's cookie store) does not give the token away
for the Bearer header, and changing the token ends every cookie. An exposed server with no token
configured refuses everyone (fail closed). The ingest endpoint is not covered: uploads stay
anonymous. Before any of this, every request must name this server in its Host header
(guard.check_host: DNS rebinding), on loopback too.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from urllib.parse import urlencode

from flask import Response, current_app, redirect, request

from . import setting

COOKIE = "balance_token"
COOKIE_LABEL = b"balance dashboard cookie v1"


def listen_host(app) -> str:
    return str(setting(app, "HOST"))


def is_loopback(host: str) -> bool:
    host = host.strip().strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name other than localhost may resolve anywhere: treat it as exposed


def exposed(app) -> bool:
    return not is_loopback(listen_host(app))


def token(app) -> str | None:
    value = setting(app, "TOKEN")
    return str(value) if value else None


def _matches(given: str | None, expected: str) -> bool:
    if not given:
        return False
    return hmac.compare_digest(given.encode(), expected.encode())


def cookie_value(secret: str) -> str:
    """What the cookie holds for a token: derived from it, not it."""
    return hmac.new(secret.encode(), COOKIE_LABEL, hashlib.sha256).hexdigest()


def _denied(message: str) -> Response:
    wants_json = request.path.startswith("/sql/api") or request.accept_mimetypes.best == (
        "application/json"
    )
    if wants_json:
        body = current_app.json.dumps({"error": "unauthorized", "message": message})
        resp = Response(body, 401, mimetype="application/json")
    else:
        resp = Response(
            f"<!doctype html><title>401</title><h1>Token required</h1><p>{message}</p>",
            401,
            mimetype="text/html",
        )
    resp.headers["WWW-Authenticate"] = 'Bearer realm="balance"'
    return resp


def require_token():
    """A before_request hook: None lets the request through, a response stops it."""
    from .guard import check_host

    refused = check_host()
    if refused is not None:
        return refused
    app = current_app
    if not exposed(app):
        return None
    expected = token(app)
    if not expected:
        return _denied("This server listens beyond loopback and has no BALANCE_TOKEN set.")
    header = request.headers.get("Authorization", "")
    if header.startswith("Bearer ") and _matches(header[7:].strip(), expected):
        return None
    if _matches(request.cookies.get(COOKIE), cookie_value(expected)):
        return None
    given = request.args.get("token")
    if _matches(given, expected):
        args = [(k, v) for k, v in request.args.items(multi=True) if k != "token"]
        target = request.path + ("?" + urlencode(args) if args else "")
        resp = redirect(target, 303)
        resp.set_cookie(
            COOKIE,
            cookie_value(expected),
            httponly=True,
            samesite="Strict",
            secure=request.is_secure,
        )
        return resp
    return _denied("Send Authorization: Bearer <BALANCE_TOKEN>, or open a page once with ?token=.")
