"""Which requests may reach the dashboard and the SQL console, by their Host and Origin.

A server on loopback needs no token, so two things a web page could otherwise do are refused:

- DNS rebinding: a page on evil.example re-points its own name at 127.0.0.1 and reads the
  answers as same-origin. Its requests carry `Host: evil.example`, so every dashboard and
  console request must name this server: localhost or a loopback address, the address the
  server listens on (any IP address when that is 0.0.0.0 or ::), or a name in
  BALANCE_ALLOWED_HOSTS (comma separated, e.g. `balance.lan,dash.example.org`; a port, if given,
  must match too). Anything else gets 400.
- Cross-site requests that run something: an `<img>` or a form on another site can make a
  browser send GET /sql/download.csv?q=... or POST /sql/api without reading the answer. The
  routes that run a query or take a snapshot refuse (403) a request whose Origin is not this
  server (`Origin: null` included), whose `Sec-Fetch-Site` is `cross-site` or `same-site` (another
  port or subdomain), or, with neither header, whose Referer names another host. Requests
  without these headers (curl, `balance sql`, scripts) are not browsers' and pass.
"""

from __future__ import annotations

import ipaddress
from functools import wraps
from urllib.parse import urlsplit

from flask import Response, current_app, request

from . import setting

LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost"})
WILDCARDS = frozenset({"0.0.0.0", "::", ""})
FETCH_SITES_OK = frozenset({"same-origin", "none"})


def split_host(value: str) -> tuple[str, str]:
    """('host', 'port') of a Host header value; IPv6 brackets removed, lower case."""
    value = (value or "").strip().lower()
    if value.startswith("["):
        end = value.find("]")
        host, rest = value[1:end], value[end + 1 :]
        return host, rest[1:] if rest.startswith(":") else ""
    if value.count(":") == 1:
        host, port = value.split(":")
        return host, port
    return value, ""


def _ip(host: str):
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def allowed_hosts(app) -> list[tuple[str, str]]:
    raw = setting(app, "ALLOWED_HOSTS", "") or ""
    if isinstance(raw, (list, tuple, set)):
        items = list(raw)
    else:
        items = str(raw).replace(" ", ",").split(",")
    return [split_host(item) for item in items if item.strip()]


def host_allowed(app, value: str) -> bool:
    from .auth import listen_host

    host, port = split_host(value)
    if not host:
        return False
    ip = _ip(host)
    if host in LOOPBACK_NAMES or (ip is not None and ip.is_loopback):
        return True
    bound = split_host(listen_host(app))[0]
    if host == bound:
        return True
    if ip is not None and bound in WILDCARDS:
        return True  # listening everywhere: any address of this machine (a name can rebind)
    for name, want_port in allowed_hosts(app):
        if host == name and (not want_port or want_port == port):
            return True
    return False


def _wants_json() -> bool:
    return request.path.startswith("/sql/api") or request.accept_mimetypes.best == (
        "application/json"
    )


def _refuse(status: int, error: str, message: str) -> Response:
    if _wants_json() or request.path.startswith("/sql/download"):
        body = current_app.json.dumps({"error": error, "message": message})
        return Response(body, status, mimetype="application/json")
    from markupsafe import escape

    html = f"<!doctype html><title>{status}</title><h1>Refused</h1><p>{escape(message)}</p>"
    return Response(html, status, mimetype="text/html")


def check_host():
    """A before_request hook: 400 when the Host header does not name this server."""
    host = request.headers.get("Host", "")
    if host_allowed(current_app, host):
        return None
    return _refuse(
        400,
        "bad_host",
        "This server does not answer to that host name. Open it as localhost or by its "
        "address, or add the name to BALANCE_ALLOWED_HOSTS.",
    )


def _netloc(url: str) -> str | None:
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    host = parts.hostname.lower()
    host = f"[{host}]" if ":" in host else host
    default = {"http": 80, "https": 443}[parts.scheme]
    try:
        port = parts.port
    except ValueError:
        return None
    return host if port in (None, default) else f"{host}:{port}"


def _own_netloc() -> str:
    host, port = split_host(request.headers.get("Host", ""))
    host = f"[{host}]" if ":" in host else host
    default = "443" if request.scheme == "https" else "80"
    return host if port in ("", default) else f"{host}:{port}"


def cross_site_reason() -> str | None:
    """Why this request comes from another site (None: it does not, as far as we can tell)."""
    own = _own_netloc()
    origin = request.headers.get("Origin")
    if origin is not None:
        if _netloc(origin) != own:
            return f"it comes from another site (Origin: {origin[:100]})"
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None and site.lower() not in FETCH_SITES_OK:
        return f"it comes from another site (Sec-Fetch-Site: {site[:40]})"
    if origin is None and site is None:
        referer = request.headers.get("Referer")
        if referer and _netloc(referer) != own:
            return "it comes from another site (Referer)"
    return None


def same_origin(view):
    """Refuse (403) a cross-site request to a view that runs a query or changes state."""

    @wraps(view)
    def wrapper(*args, **kwargs):
        reason = cross_site_reason()
        if reason is not None:
            return _refuse(
                403,
                "cross_site",
                f"Refused: {reason}. Queries run only from this server's own pages, or from "
                "tools that send no browser headers (balance sql, curl).",
            )
        return view(*args, **kwargs)

    return wrapper
