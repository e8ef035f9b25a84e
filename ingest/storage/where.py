"""Where a `balance` command acts: a store file, a lake, or a running server, decided once for
every command by one precedence (docs/settings.md, "Which store"):

1. the command's argument: `--db PATH`, `--lake CATALOG` or `--server URL`; at most one
   (two is a mistake: one line on stderr, exit 2);
2. else the environment: `$BALANCE_LAKE` (a lake), then `$BALANCE_DB` (a file), for the kinds
   the command reads; a command that asks a server by default (`balance sql`) reads
   `$BALANCE_URL` instead;
3. else the command's default: the file `balance.duckdb`, or the server at
   http://127.0.0.1:8000 (`balance sql`); a command with no default (`balance lake ...`)
   says what to give.

Kinds a command cannot read are not taken from the environment (`balance report` with
`$BALANCE_LAKE` set reads `$BALANCE_DB`'s file).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from . import settings
from .interface import Target

DEFAULT_DB = "balance.duckdb"
DEFAULT_URL = "http://127.0.0.1:8000"

FILE, LAKE, SERVER = "file", "lake", "server"
_ARGUMENT = {FILE: "--db", LAKE: "--lake", SERVER: "--server"}
_VARIABLE = {LAKE: "BALANCE_LAKE", FILE: "BALANCE_DB", SERVER: "BALANCE_URL"}


@dataclass(frozen=True)
class Reads:
    """What a command reads: the kinds it takes (in the order its help names them) and its
    default kind (None: it must be told)."""

    kinds: tuple[str, ...]
    default: str | None = FILE


# every command that reads or writes the games, and what it takes
COMMANDS: dict[str, Reads] = {
    "serve": Reads((FILE, LAKE)),
    "load-demo": Reads((FILE, LAKE)),
    "reverify": Reads((FILE, LAKE, SERVER)),
    "jobs run": Reads((FILE, LAKE)),
    "sql": Reads((FILE, LAKE, SERVER), default=SERVER),
    "report": Reads((FILE, SERVER)),
    "export": Reads((FILE, SERVER, LAKE)),
    "rules": Reads((FILE, LAKE, SERVER)),
    "lab": Reads((FILE, LAKE)),
    "lake": Reads((LAKE,), default=None),
}


class WhereError(ValueError):
    """A mistaken choice of store (two given, or none where the command has no default): one
    line for stderr after the command's name; the command exits 2."""


@dataclass(frozen=True)
class Where:
    kind: str  # FILE | LAKE | SERVER
    location: str  # the path, the catalog or the URL
    via: str  # what decided it: "--db", "$BALANCE_LAKE", "default"
    data_path: str | None = None  # a lake's, when given

    @property
    def db(self) -> str | None:
        return self.location if self.kind == FILE else None

    @property
    def lake(self) -> str | None:
        return self.location if self.kind == LAKE else None

    @property
    def server(self) -> str | None:
        return self.location.rstrip("/") if self.kind == SERVER else None

    def target(self) -> Target:
        """The store (interface.open_store's target); a server is no store."""
        if self.kind == SERVER:
            raise WhereError(f"{self.location} is a server, not a store")
        if self.kind == LAKE:
            return Target(lake=self.location, data_path=self.data_path)
        return Target(db=self.location)


def resolve(
    command: str,
    *,
    db: str | None = None,
    lake: str | None = None,
    server: str | None = None,
    data_path: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Where:
    """Where `command` (a key of COMMANDS) acts, by the module's precedence."""
    reads = COMMANDS[command]
    given = {FILE: db, LAKE: lake, SERVER: server}
    named = [kind for kind in reads.kinds if given[kind]]
    stray = [kind for kind in given if given[kind] and kind not in reads.kinds]
    if stray:  # (argparse offers only the command's own; a caller passing more is a bug)
        raise WhereError(f"this command takes no {_ARGUMENT[stray[0]]}")
    if len(named) > 1:
        options = " or ".join(_ARGUMENT[k] for k in named)
        raise WhereError(f"give one of {options}, not {len(named)}")
    if data_path and named and named[0] != LAKE:
        instead = _ARGUMENT[named[0]]
        raise WhereError(f"--data-path goes with --lake (the lake's data path), not {instead}")
    if named:
        kind = named[0]
        return _where(kind, str(given[kind]), _ARGUMENT[kind], data_path)
    order = (SERVER,) if reads.default == SERVER else (LAKE, FILE)
    for kind in order:
        value = settings.given(_VARIABLE[kind].removeprefix(settings.PREFIX), env)
        if value and kind in reads.kinds:
            return _where(kind, value, f"${_VARIABLE[kind]}", data_path)
    if reads.default is None:
        wanted = " or ".join(f"{_ARGUMENT[k]} ..." for k in reads.kinds)
        variables = " or ".join(_VARIABLE[k] for k in reads.kinds)
        raise WhereError(f"give {wanted} (or set {variables})")
    fallback = DEFAULT_URL if reads.default == SERVER else DEFAULT_DB
    return _where(reads.default, fallback, "default", data_path)


def _where(kind: str, location: str, via: str, data_path: str | None) -> Where:
    return Where(kind, location, via, data_path if kind == LAKE else None)


def of_args(command: str, args, env: Mapping[str, str] | None = None) -> Where:
    """`resolve` from an argparse namespace (its db / lake / server / data_path, where the
    command has them)."""
    return resolve(
        command,
        db=getattr(args, "db", None),
        lake=getattr(args, "lake", None),
        server=getattr(args, "server", None),
        data_path=getattr(args, "data_path", None),
        env=env,
    )


def precedence_table() -> list[tuple[str, str, str, str]]:
    """(command, arguments, environment, default) a row: the table docs/settings.md holds."""
    out = []
    for command, reads in COMMANDS.items():
        arguments = " / ".join(f"`{_ARGUMENT[k]}`" for k in reads.kinds)
        order = (SERVER,) if reads.default == SERVER else (LAKE, FILE)
        variables = [f"`${_VARIABLE[k]}`" for k in order if k in reads.kinds]
        default = {FILE: f"`{DEFAULT_DB}`", SERVER: DEFAULT_URL, None: "none: say which"}
        environment = ", then ".join(variables) or "-"
        out.append((f"`balance {command}`", arguments, environment, default[reads.default]))
    return out
