"""`balance report [--db PATH | --server URL] [--out report.html]`: the findings as one file,
the few a designer can act on first, each with its effect beyond the minimum, interval, how long
it has persisted and links to its chart, games and SQL.

The rows are `analysis.findings.collect`'s, the same as the dashboard's Findings page
(/dashboard/p/findings): read from a stopped store file (opened read-only) or through a running
server's SQL console (POST /sql/api, with $BALANCE_TOKEN as `balance sql` sends it). The file
is self-contained (inline style, no script, nothing fetched): a table a row a finding, each
with a link to its chart and to its SQL in the console of the dashboard at `--link-base`.
"""

from __future__ import annotations

import argparse
import html
import os
import stat
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlencode

import polars as pl

from ingest.storage import settings as storage_settings

from . import findings as fi

DEFAULT_URL = "http://127.0.0.1:8000"  # as `balance sql`


GENERATOR = "balance report"  # in the HTML head: what a later run may replace


class ReportError(Exception):
    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


def server_fetch(url: str, token: str | None = None) -> Callable[[str], pl.DataFrame]:
    """fetch(sql) through a server's /sql/api (its row limit: a truncated answer fails)."""
    from ingest.storage.remote import Api, RemoteError

    api = Api(url, token, timeout=60)

    def fetch(sql: str) -> pl.DataFrame:
        try:
            got = api.request("POST", "/sql/api", json_body={"sql": sql})
            if not got.ok:
                raise ReportError(f"the server refused the query: {got.problem()}")
            answer = got.json()
        except RemoteError as exc:
            raise ReportError(str(exc), exc.code) from None
        if answer.get("truncated"):
            raise ReportError("the server's row limit cut the answer short")
        cols = answer["columns"]
        return pl.DataFrame(
            [dict(zip(cols, r, strict=True)) for r in answer["rows"]],
            schema=cols,
            orient="row",
            infer_schema_length=None,
        )

    return fetch


def file_fetch(path: str):
    """(fetch, close) on a stopped store file, read-only."""
    from .public_dataset import ExportError, open_stopped_store

    try:
        con = open_stopped_store(path)
    except ExportError as exc:
        raise ReportError(str(exc), exc.code) from None
    return (lambda sql: con.sql(sql).pl()), con.close


def chart_url(base: str, chart: str) -> str:
    page, _, chart_id = chart.partition("#")
    return f"{base}/dashboard/p/{page}#chart-{chart_id}"


def console_url(base: str, sql: str) -> str:
    return f"{base}/sql?" + urlencode({"q": sql})


STYLE = """body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse}td,th{border-bottom:1px solid #ddd;padding:4px 8px;
text-align:left;vertical-align:top}th{background:#f4f4f4}td.num{text-align:right;
font-variant-numeric:tabular-nums}.meta{color:#666}code{font-size:12px}"""


def render(f: fi.Findings, *, link_base: str, source: str, generated: str) -> str:
    """The report's HTML: the summary, the findings (strongest first), what each family could
    have seen, and the descriptive section."""
    e = html.escape
    rows = []
    for r in f.table.iter_rows(named=True):
        n = "" if r["n"] is None else f"{r['n']:,}"
        chart = f'<a href="{e(chart_url(link_base, r["chart"]))}">chart</a>' if r["chart"] else ""
        games = (
            f'<a href="{e(link_base + "/dashboard/" + r["games"])}">games</a>' if r["games"] else ""
        )
        rows.append(
            "<tr>"
            f'<td class="num">{r["rank"]}</td><td class="statement">{e(r["statement"])}</td>'
            f'<td class="num">{_n(r["effect"])}</td><td class="num">[{_n(r["lo"])}, '
            f"{_n(r['hi'])}]</td>"
            f'<td class="num">{_n(r["beyond"])}</td>'
            f'<td class="num">{n}</td><td class="since">{e(r["since"])}</td>'
            f"<td>{e(r['family'])}</td><td>{chart} {games} "
            f'<a href="{e(console_url(link_base, r["sql"]))}">SQL</a></td></tr>'
        )
    watch = "".join(
        "<tr>"
        f'<td class="num">{r["rank"]}</td><td class="watch">{e(r["statement"])}</td>'
        f'<td class="num">{_n(r["effect"])}</td><td class="num">[{_n(r["lo"])}, '
        f"{_n(r['hi'])}]</td>"
        f'<td class="num">{_count(r["n"])}</td>'
        f'<td class="confirm">{e(r["confirm"])}</td><td>{e(r["family"])}</td><td>'
        + (f'<a href="{e(chart_url(link_base, r["chart"]))}">chart</a> ' if r["chart"] else "")
        + (
            f'<a href="{e(link_base + "/dashboard/" + r["games"])}">games</a> '
            if r["games"]
            else ""
        )
        + f'<a href="{e(console_url(link_base, r["sql"]))}">SQL</a></td></tr>'
        for r in f.watch.iter_rows(named=True)
    )
    watch_head = (
        "<tr><th>#</th><th>not yet a finding</th><th>effect</th><th>interval (always valid)"
        "</th><th>n</th><th>games to confirm</th><th>family</th><th>links</th></tr>"
    )
    watch_body = (
        f"<table id='watch'>{watch_head}{watch}</table>"
        if watch
        else "<p id='watch'>Nothing to watch: no other effect is clear of zero with its "
        "estimate beyond the minimum.</p>"
    )
    fams = "".join(
        f"<tr><td>{e(r['family'])}</td><td class='num'>{r['tested']:,} of {r['rows']:,}</td>"
        f"<td class='num'>{r['flagged']:,}</td><td class='num'>{_n(r['minimum'])}</td>"
        f"<td class='num'>{_n(r['detectable_typical'])}</td>"
        f"<td class='verdict'>{e(r['verdict'])}</td></tr>"
        for r in f.families.iter_rows(named=True)
    )
    desc = "".join(
        f"<tr><td>{e(r['statement'])}</td><td class='num'>{_v(r['value'])}</td>"
        f"<td class='num'>[{_v(r['lo'])}, {_v(r['hi'])}]</td>"
        f"<td class='num'>{r['n']:,}</td><td>{e(r['why'])}</td></tr>"
        for r in f.descriptive.iter_rows(named=True)
    )
    head = (
        "<tr><th>#</th><th>finding</th><th>effect</th><th>interval (always valid)</th>"
        "<th>beyond the minimum</th><th>n</th><th>since</th><th>family</th><th>links</th></tr>"
    )
    body = (
        f"<table id='findings'>{head}{''.join(rows)}</table>"
        if rows
        else "<p id='findings'>No finding: no effect clears the minimum that matters for its "
        "kind. The families below say what each could have seen.</p>"
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="generator" content="{GENERATOR}">
<title>Balance findings</title>
<style>{STYLE}</style></head><body>
<h1>Balance findings</h1>
<p class="meta">From {e(source)}, {e(generated)}. The rate tables are on the default balance cut
(human against human on the live client version; the computer levels on every version).</p>
<p id="summary">{e(f.summary())}</p>
{body}
<p class="meta">Effect: on the score (or solve / win rate) scale, against what the finding
names, with an interval that stays valid however often the report is read; a finding's whole
interval lies beyond its kind's minimum effect. Strongest evidence first (the standard errors
by which it clears the minimum).</p>
<h2>Watch: not yet findings</h2>
<p class="meta">Effects whose interval (the same always-valid interval, the same share of the
error budget) is clear of zero and whose estimate is beyond the minimum, but whose interval is
not yet wholly beyond it: worth watching, not yet worth acting on. On data with no effect the
findings and this list together show on average at most {fi.dc.report_alpha():g} false
entries. Games to confirm: how many more games (sides, attempts) would put the interval wholly
beyond the minimum with 80% power, if the effect is what it is estimated now.</p>
{watch_body}
<h2>What each family could have seen</h2>
<table id="families"><tr><th>family</th><th>rows tested</th><th>findings</th><th>minimum</th>
<th>detectable (80% power)</th><th>verdict</th></tr>
{fams}</table>
<h2>Descriptive (not findings)</h2>
<table id="descriptive"><tr><th>what</th><th>score</th><th>95% interval</th><th>n</th>
<th>why it is not a finding</th></tr>
{desc}</table>
</body></html>
"""


def write_report(out: Path, text: str) -> None:
    """Write the report to `out` whole or not at all (a file beside, renamed over it). It
    replaces only an earlier report (its generator tag), never another file, and never writes
    through a symbolic link; ReportError (one line) when it cannot."""
    try:
        st = os.lstat(out)
    except (FileNotFoundError, NotADirectoryError):
        st = None
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            raise ReportError(f"{out} is a symbolic link: give the file itself", 2)
        if stat.S_ISDIR(st.st_mode):
            raise ReportError(f"{out} is a folder: give a file name, e.g. {out}/report.html", 2)
        with open(out, "rb") as f:
            head = f.read(512)
        if not stat.S_ISREG(st.st_mode) or GENERATOR.encode() not in head:
            raise ReportError(f"{out} exists and is not a balance report: nothing replaced", 2)
    if not out.parent.is_dir():
        raise ReportError(f"{out.parent} is not a folder: make it first", 2)
    tmp = None
    try:
        fd, name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent)
        tmp = Path(name)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        tmp.rename(out)
    except OSError as exc:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        raise ReportError(f"cannot write {out}: {exc.strerror or exc}; nothing written") from None


def _count(v) -> str:
    return "" if v is None else f"{v:,}"


def _v(v) -> str:
    return "" if v is None else f"{v:.3f}"


def _n(v) -> str:
    return "" if v is None else f"{v:+.3f}"


def _p(v) -> str:
    return "" if v is None else f"{v:.2g}"


def run(args: argparse.Namespace) -> int:
    from ingest.storage.where import WhereError, of_args

    try:
        chosen = of_args("report", args)
    except WhereError as exc:
        print(f"balance report: {exc}", file=sys.stderr)
        return 2
    try:
        close = None
        if chosen.server:
            fetch = server_fetch(chosen.server)
            source = f"the server at {chosen.server}"
        else:
            db = str(chosen.db)
            fetch, close = file_fetch(db)
            source = f"the store {db}"
        try:
            found = fi.collect(fetch)
        finally:
            if close is not None:
                close()
    except ReportError as exc:
        print(f"balance report: {exc}", file=sys.stderr)
        return exc.code
    base = (args.link_base or args.server or storage_settings.value("URL") or DEFAULT_URL).rstrip(
        "/"
    )
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    text = render(found, link_base=base, source=source, generated=generated)
    try:
        write_report(Path(args.out), text)
    except ReportError as exc:
        print(f"balance report: {exc}", file=sys.stderr)
        return exc.code
    fams = found.families
    with_flag = int((fams["flagged"] > 0).sum()) if fams.height else 0
    print(
        f"wrote {args.out}: {found.table.height} findings in {with_flag} of "
        f"{found.tested} families, {found.watch.height} to watch (report-level control: at "
        f"most {fi.dc.report_alpha():g} false entries expected)"
    )
    return 0
