"""A chart from a console result: a mark (bar, line, point, heat map) and x, y, colour and facet
chosen from its columns, built with Altair the way the dashboard's charts are (one dataset at
the top level, named, its rows put in after the spec is built) and drawn by vega-embed.

The choice travels as `chart.mark`, `chart.x`, `chart.y`, `chart.color`, `chart.facet` in a
console or saved-query URL, and as {"mark", "x", "y", "color", "facet"} in a saved query.
Field names are only ever Vega-Lite field names (escaped), never expressions.
"""

from __future__ import annotations

import re

import pyarrow as pa

from .sqlsafe import Refused

MARKS = {"bar": "Bars", "line": "Line", "point": "Points", "heatmap": "Heat map"}
CHANNELS = ("x", "y", "color", "facet")
NUMERIC = re.compile(
    r"^(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|REAL|DECIMAL.*|NUMERIC.*|INT\d+)$", re.I
)
TEMPORAL = re.compile(r"^(DATE|TIMESTAMP.*)$", re.I)
MAX_TOOLTIP = 12


def from_args(args) -> dict | None:
    """The chart chosen in a query string (None when no mark is chosen)."""
    mark = (args.get("chart.mark") or "").strip()
    if not mark:
        return None
    return checked({"mark": mark, **{c: args.get(f"chart.{c}") for c in CHANNELS}})


def checked(chart) -> dict | None:
    """A chart choice as stored and put in URLs, or Refused when it is not one."""
    if chart in (None, {}, ""):
        return None
    if not isinstance(chart, dict):
        raise Refused('A chart is {"mark": "bar", "x": "column", "y": "column", ...}.')
    mark = chart.get("mark")
    if mark not in MARKS:
        raise Refused(f"The chart's mark is one of {', '.join(MARKS)}, not {str(mark)[:40]!r}.")
    out: dict = {"mark": mark}
    for channel in CHANNELS:
        value = chart.get(channel)
        if value in (None, ""):
            out[channel] = None
            continue
        if not isinstance(value, str) or len(value) > 200:
            raise Refused(f"The chart's {channel} is a column name.")
        out[channel] = value
    if not out["x"] or not out["y"]:
        raise Refused("A chart needs an x and a y column.")
    return out


def query_args(chart: dict | None) -> dict[str, str]:
    if not chart:
        return {}
    return {f"chart.{k}": v for k, v in chart.items() if v}


def _field(name: str) -> str:
    """A column name as a Vega-Lite field: dots and brackets would mean nested access."""
    return re.sub(r"([.\[\]\\])", r"\\\1", name)


# Names Vega would misread as a field: a leading quote starts a quoted path, and a name goes
# into Vega's expressions (tooltips, sorting) as a string literal, where U+2028/U+2029 and
# control characters end it (vega-util escapes only a first U+2028)
_UNSAFE_NAME = re.compile("[\"'\\\u2028\u2029\x00-\x1f\x7f-\x9f]")


def _keys(columns: list[str]) -> dict[str, str]:
    """Column -> the field its values go under in the chart's data: the name itself, or
    `col_<i>` for a name Vega could misread (its title still shows the name)."""
    keys: dict[str, str] = {}
    taken = set(columns)
    for i, name in enumerate(columns):
        key = name
        if _UNSAFE_NAME.search(name):
            key = f"col_{i}"
            while key in taken:  # a column of that name already
                key += "_"
            taken.add(key)
        keys[name] = key
    return keys


def _title(name: str) -> str:
    """A column name as a chart title (text only): line and control characters as spaces."""
    return _UNSAFE_NAME.sub(lambda m: m.group() if m.group() in "\"'\\" else " ", name)


def _kind(dtype: str) -> str:
    if NUMERIC.match(dtype):
        return "quantitative"
    if TEMPORAL.match(dtype):
        return "temporal"
    return "nominal"


def spec(chart: dict, columns: list[str], types: list[str], rows: list[dict]) -> dict:
    """The Vega-Lite spec (with its rows) of `chart` over a result, or Refused saying which
    column is missing. `rows` are JSON-ready (render.jsonable_rows)."""
    import altair as alt  # here: a server loads Altair with its first chart, not at start

    from .. import charts

    kinds = dict(zip(columns, (_kind(t) for t in types), strict=False))
    for slot in CHANNELS:
        name = chart.get(slot)
        if name and name not in kinds:
            raise Refused(
                f"The chart's {slot} column {name!r} is not in the result "
                f"(its columns: {', '.join(columns)})."
            )
    mark, x, y = chart["mark"], chart["x"], chart["y"]
    color, facet = chart.get("color"), chart.get("facet")
    keys = _keys(columns)
    if any(k != c for c, k in keys.items()):
        rows = [{keys.get(k, k): v for k, v in r.items()} for r in rows]

    def channel(cls, name: str, kind: str, **kw):
        return cls(field=_field(keys[name]), type=kind, title=_title(name), **kw)

    x_kind, y_kind = kinds[x], kinds[y]
    if mark == "heatmap":
        x_kind = y_kind = "ordinal"
    elif mark == "bar" and x_kind == "quantitative":
        x_kind = "ordinal"  # one bar per value (board 5, 7)
    encoding: dict[str, object] = {
        "x": channel(alt.X, x, x_kind, sort=None),
        "y": channel(alt.Y, y, y_kind, sort=None),
        "tooltip": [channel(alt.Tooltip, c, kinds[c]) for c in columns[:MAX_TOOLTIP]],
    }
    if mark == "heatmap":
        encoding["color"] = (
            channel(alt.Color, color, kinds[color])
            if color
            else alt.Color(aggregate="count", type="quantitative", title="rows")
        )
    elif color:
        kind = kinds[color]
        encoding["color"] = channel(alt.Color, color, "nominal" if mark == "line" else kind)
    base = alt.Chart()
    drawn = {
        "bar": base.mark_bar(),
        "line": base.mark_line(point=True),
        "point": base.mark_point(filled=True, size=40),
        "heatmap": base.mark_rect(),
    }[mark].encode(**encoding)
    if facet:
        drawn = drawn.properties(width=260, height=200).facet(
            facet=channel(alt.Facet, facet, "nominal"), columns=3, data=charts.PLACEHOLDER
        )
    else:
        drawn = drawn.properties(width=560, height=300, data=charts.PLACEHOLDER)
    out = drawn.to_dict(validate=charts.VALIDATE)
    out.pop("datasets", None)
    out["data"] = {"values": rows}
    return out


def table_rows(table: pa.Table) -> list[dict]:
    """A result's rows for Vega (dates as ISO text, decimals as numbers, NaN as null)."""
    from ..render import frame_of, jsonable_rows

    return jsonable_rows(frame_of(table))
