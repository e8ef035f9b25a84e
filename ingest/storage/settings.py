"""The storage layer's settings, and the one reader of `BALANCE_*` from the environment.

Every layer keeps one table of its settings (this one; analysis/settings.py;
dashboard/settings.py; ingest/server/config.py), each row a `Setting` (name, default, parser,
how docs/settings.md shows the default, what it sets). A command or an app factory reads a
setting through its layer's table where it starts and passes the value down; only the tables
read the environment (tests/test_settings_read_once.py holds it), and docs/settings.md is held
equal to the tables (tests/test_settings_docs.py: each row there is `render(setting)`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .sizes import MiB, parse_size

PREFIX = "BALANCE_"


@dataclass(frozen=True)
class Setting:
    name: str  # without its BALANCE_ prefix
    default: Any  # None: not set (`shown` says what happens then)
    parse: Callable[[Any], Any]
    shown: str  # the default, as docs/settings.md writes it
    help: str  # what it sets, as docs/settings.md writes it

    @property
    def variable(self) -> str:
        return PREFIX + self.name


def text(value: Any) -> str:
    return str(value)


def flag(value: Any) -> bool:
    """`1`, `true`, `on`, `yes` (any case) and every other non-empty value but `0`, `false`,
    `off`, `no`: true."""
    return str(value).strip().lower() not in ("", "0", "false", "off", "no")


def _ssl(value: Any) -> bool:
    return str(value).strip().lower() not in ("0", "false", "no")


def given(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """`BALANCE_<name>` as the environment (or `environ`) gives it; None when unset, empty or
    blank."""
    environ = os.environ if environ is None else environ
    raw = environ.get(PREFIX + name)
    return raw if raw and raw.strip() else None


def read(table: Mapping[str, Setting], name: str, environ: Mapping[str, str] | None = None):
    """Setting `name` of `table` from the environment, parsed, else its default. ValueError
    names a value that does not parse."""
    setting = table[name]
    raw = given(name, environ)
    if raw is None:
        return setting.default
    try:
        return setting.parse(raw)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{setting.variable}={raw!r}: {exc}") from None


def render(setting: Setting) -> str:
    """Its row in docs/settings.md."""
    return f"| `{setting.variable}` | {setting.shown} | {setting.help} |"


TABLE: tuple[Setting, ...] = (
    Setting("MIN_FREE", 64 * MiB, parse_size, "`67108864` (64 MiB)",
            "bytes of free disk the store keeps in reserve: below it uploads get 503 + "
            "Retry-After instead of filling the disk; `0`: no reserve"),
    Setting("TOKEN", None, text, "—",
            "bearer token for the admin routes, `balance ... --server` commands and a "
            "non-loopback dashboard"),
    Setting("URL", "http://127.0.0.1:8000", text, "`http://127.0.0.1:8000`",
            "the server that `balance sql` and `balance report --server` ask by default"),
    Setting("LAKE_EXTENSIONS", None, text,
            "`$XDG_CACHE_HOME/slow6-balance/duckdb-extensions`",
            "where the lake's DuckDB extensions are installed from the pinned wheels and loaded "
            "(never DuckDB's shared `~/.duckdb`)"),
    Setting("S3_ENDPOINT", None, text, "—",
            "an S3-compatible endpoint for a data path on object storage (credentials: the "
            "usual `AWS_*` variables)"),
    Setting("S3_URL_STYLE", None, text, "—", "`path` or `vhost` addressing for that endpoint"),
    Setting("S3_USE_SSL", None, _ssl, "`true`", "`false` for a plain-HTTP endpoint"),
)  # fmt: skip
BY_NAME = {s.name: s for s in TABLE}


def value(name: str, environ: Mapping[str, str] | None = None):
    """A storage setting (this table) from the environment, parsed, else its default."""
    return read(BY_NAME, name, environ)
