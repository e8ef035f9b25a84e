"""Altair chart builders for aggregated tables (rows are already one per bar/cell/point).

Conventions every rate chart follows: the point is the rate with its 95% interval as an error
bar; rows keep the order they come in (the queries sort by the lower bound); rows with fewer than
`min_n` games are drawn grey, not dropped; rows flagged by the FDR test are red diamonds; the
tooltip carries n, the counts, the interval and the shrunk estimate. Every chart holds its data
once, at the top level, so any of them can be split into side-by-side panels with `facet`.
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

import altair as alt

SMALL_N = 30
GREY = "#b8bec9"
BLUE = "#2b5fd9"
RED = "#c4320a"
SAMPLES = ["ok", "small n", "flagged (FDR 5%)"]
SAMPLE_SCALE = alt.Scale(domain=SAMPLES, range=[BLUE, GREY, RED])
SHAPE_SCALE = alt.Scale(domain=SAMPLES, range=["circle", "circle", "diamond"])
RATE_FIELDS = ("rate", "lo", "hi", "shrunk")

# The Vega colour schemes the heatmaps use (altair accepts only its named schemes).
Scheme = Literal["redblue", "blues", "oranges"]


def _tooltip(rows: list[dict], first: list[str]) -> list[alt.Tooltip]:
    keys = list(rows[0].keys()) if rows else []
    order = [k for k in first if k in keys] + [k for k in keys if k not in first]
    tips = []
    for k in order:
        if k.startswith("_"):
            continue
        v = next((r.get(k) for r in rows if r.get(k) is not None), None)
        if isinstance(v, bool):
            tips.append(alt.Tooltip(f"{k}:N"))
        elif isinstance(v, float) or k in RATE_FIELDS:
            tips.append(alt.Tooltip(f"{k}:Q", format=".3f"))
        elif isinstance(v, int):
            tips.append(alt.Tooltip(f"{k}:Q"))
        else:
            tips.append(alt.Tooltip(f"{k}:N"))
    return tips[:16]


INK, PAPER = "#1d2430", "#ffffff"


def _ink(v, lo: float, hi: float, *, diverging: bool) -> str:
    """The colour of a cell's number: white where the cell's colour is dark (both ends of a
    diverging scheme, the top of a sequential one), else the page's ink."""
    if not isinstance(v, int | float) or hi <= lo:
        return INK
    t = min(max((v - lo) / (hi - lo), 0.0), 1.0)
    dark = (t < 0.18 or t > 0.82) if diverging else t > 0.6
    return PAPER if dark else INK


def _link(rows: list[dict]) -> dict:
    """A point's link to the games behind it (render.drill), when its rows carry one."""
    return {"href": alt.Href("_href:N")} if rows and "_href" in rows[0] else {}


def mark_rows(rows: list[dict], min_n: int, n_field: str = "n") -> list[dict]:
    out = []
    for r in rows:
        r = dict(r)
        n = r.get(n_field) or 0
        r["_sample"] = (
            "flagged (FDR 5%)" if r.get("flagged") else ("small n" if n < min_n else "ok")
        )
        r["_opacity"] = 0.35 if n < min_n else 1.0
        out.append(r)
    return out


# Altair converts (and validates) every inlined value through its schema classes, which costs
# ~1 ms a row; the spec is built around a named, empty dataset and the rows are put in after.
PLACEHOLDER = alt.Data(name="rows")
# Schema validation costs more than building the spec; the tests' servers turn it on
# (BALANCE_VALIDATE_CHARTS, read by the app factory: dashboard/__init__.py calls validate).
VALIDATE = False


# Building a spec with Altair costs ~50 ms; the spec depends on the arguments, the fields and
# the categories drawn (sizes), never on the numbers, so it is kept per such key, with whether
# it was checked against the schema: a kept spec is used again while validation is on only if
# it was (one built unchecked is built again, checked), and turning validation on keeps what
# was checked (emptying the cache there made every checked app build every spec again).
_SPECS: dict[tuple, tuple[dict, bool]] = {}


def validate(on: bool) -> None:
    """Validate every spec used from now on against the schema (or not)."""
    global VALIDATE
    VALIDATE = bool(on)


def _signature(data: list[dict]) -> tuple:
    fields = {}
    for r in data:
        for k, v in r.items():
            if v is not None and k not in fields:
                fields[k] = type(v).__name__
    cats = hash(
        tuple(
            tuple(v for k, v in r.items() if isinstance(v, str | bool) and k != "_href")
            for r in data
        )
    )
    return tuple(sorted(fields.items())), cats, len(data)


def _finish(make, data: list[dict], facet: str | None, key: tuple, columns: int = 2,
            resolve=("x",)) -> dict:  # fmt: skip
    key = (key, facet, columns, resolve, _signature(data))
    kept = _SPECS.get(key)
    if kept is not None and (kept[1] or not VALIDATE):
        spec = kept[0]
    else:
        chart = make()
        if facet:
            out = chart.facet(
                facet=alt.Facet(f"{facet}:N", title=None), columns=columns, data=PLACEHOLDER
            )
            if resolve:  # each panel its own categories (5x5 and 7x7 differ); in one call:
                # a second resolve_scale() replaces the first (x fell back to shared)
                out = out.resolve_scale(**dict.fromkeys(resolve, "independent"))
        else:
            out = chart.properties(data=PLACEHOLDER)
        spec = out.to_dict(validate=VALIDATE)
        spec.pop("datasets", None)
        if len(_SPECS) > 2000:
            _SPECS.clear()
        _SPECS[key] = (spec, VALIDATE)
    return {**spec, "data": {"values": data}}


def rate_chart(
    rows: list[dict],
    label: str,
    *,
    reference: float | None = 0.5,
    min_n: int = SMALL_N,
    x_title: str = "score rate (win 1, draw ½), 95% interval",
    domain: tuple[float, float] | None = (0, 1),
    facet: str | None = None,
    width: int = 420,
    n_field: str = "n",
    reference_field: str | None = None,
    columns: int = 2,
    band: tuple[str, str] | None = None,
) -> dict:
    """Dot + error bar per row (fields rate, lo, hi); y keeps the row order. The dashed null
    line is at `reference`, or at each row's `reference_field` (a value per panel, e.g. the
    fair share 1/players of a Slide table size). `band`: two fields of a row, shaded behind
    it (a target range, e.g. a computer level's)."""
    data = mark_rows(rows, min_n, n_field)
    if facet:
        sizes = Counter(r.get(facet) for r in rows)
        per_panel = max(sizes.values(), default=1)
    else:
        per_panel = len({r.get(label) for r in rows})
    height = max(40, min(16 * max(per_panel, 1), 1400))

    def make():
        tips = _tooltip(data, [label, n_field, "rate", "lo", "hi", "shrunk", "flagged"])
        # long labels (a lineup and its source, a power pair) whole: Vega cuts at 180 px
        y = alt.Y(f"{label}:N", sort=None, title=None, axis=alt.Axis(labelLimit=360))
        scale = alt.Scale(domain=list(domain)) if domain else alt.Scale(zero=False)
        color = alt.Color("_sample:N", scale=SAMPLE_SCALE, legend=alt.Legend(title=None))
        bars = (
            alt.Chart()
            .mark_rule(strokeWidth=2, clip=True)
            .encode(
                y=y,
                x=alt.X("lo:Q", scale=scale, title=x_title),
                x2="hi:Q",
                color=color,
                tooltip=tips,
            )
        )
        # One legend for colour and shape (the same field): a layer that turned its legend
        # off while another kept it made Vega warn 'Conflicting legend property "disable"'.
        dots = (
            alt.Chart()
            .mark_point(filled=True, size=60, clip=True)
            .encode(
                y=y,
                x="rate:Q",
                color=alt.Color("_sample:N", scale=SAMPLE_SCALE),
                shape=alt.Shape("_sample:N", scale=SHAPE_SCALE, legend=alt.Legend(title=None)),
                tooltip=tips,
                **_link(data),
            )
        )
        layers = [bars, dots]
        if band is not None:
            shade = alt.Chart().mark_bar(color="#12b76a", opacity=0.18, clip=True)
            lo_f, hi_f = band
            shade = shade.encode(y=y, x=alt.X(f"{lo_f}:Q", scale=scale), x2=f"{hi_f}:Q")
            layers.insert(0, shade)
        if reference is not None:
            layers.append(
                alt.Chart()
                .mark_rule(strokeDash=[4, 3], color="#667085")
                .encode(x=alt.datum(reference))
            )
        if reference_field is not None:
            layers.append(
                alt.Chart()
                .mark_rule(strokeDash=[4, 3], color="#667085")
                .encode(x=alt.X(f"{reference_field}:Q", scale=scale))
            )
        return alt.layer(*layers).properties(width=width, height=height)

    key = ("rate", label, reference, min_n, x_title, domain, width, n_field, height,
           reference_field, band)  # fmt: skip
    # x resolved per panel too: a shared x axis is drawn under every column of the grid, the
    # empty cells of the last row included (a stray axis under no panel)
    return _finish(make, data, facet, key, columns, resolve=("x", "y") if facet else ())


def paired_intervals(
    rows: list[dict],
    label: str,
    kinds: tuple[str, str],
    *,
    facet: str | None = None,
    x_title: str = "",
    width: int = 420,
    names: tuple[str, str] | None = None,
) -> dict | None:
    """Two dot-and-interval marks per row, one above the other: for each `kind`, the row's
    fields `<kind>`, `<kind>_lo`, `<kind>_hi` (a prediction beside its observation), named
    in the legend by `names` (default: the kinds). The dashed line is at 0 (no change)."""
    names = names or kinds
    data = []
    for r in rows:
        for kind, name in zip(kinds, names, strict=True):
            if r.get(kind) is None:
                continue
            data.append({label: r[label], "kind": name, "value": r[kind],
                         "lo": r.get(f"{kind}_lo"), "hi": r.get(f"{kind}_hi"),
                         **({facet: r[facet]} if facet else {})})  # fmt: skip
    if not data:
        return None
    per_panel = max(Counter(r.get(facet) for r in data).values()) if facet else len(data)
    height = max(40, min(9 * per_panel, 1400))

    def make():
        y = alt.Y(f"{label}:N", sort=None, title=None, axis=alt.Axis(labelLimit=360))
        offset = alt.YOffset("kind:N", sort=list(names))
        color = alt.Color("kind:N", sort=list(names), scale=alt.Scale(domain=list(names),
                          range=[BLUE, RED]), legend=alt.Legend(title=None))  # fmt: skip
        tips = [alt.Tooltip(f"{label}:N"), alt.Tooltip("kind:N"),
                alt.Tooltip("value:Q", format=".3f"), alt.Tooltip("lo:Q", format=".3f"),
                alt.Tooltip("hi:Q", format=".3f")]  # fmt: skip
        bars = (
            alt.Chart()
            .mark_rule(strokeWidth=2, clip=True)
            .encode(
                y=y,
                yOffset=offset,
                x=alt.X("lo:Q", scale=alt.Scale(zero=False), title=x_title),
                x2="hi:Q",
                color=color,
                tooltip=tips,
            )  # fmt: skip
        )
        dots = (
            alt.Chart()
            .mark_point(filled=True, size=50, clip=True)
            .encode(y=y, yOffset=offset, x="value:Q", color=color, tooltip=tips)
        )
        zero = alt.Chart().mark_rule(strokeDash=[4, 3], color="#667085").encode(x=alt.datum(0))
        return alt.layer(bars, dots, zero).properties(width=width, height=height)

    key = ("paired", label, names, x_title, width, height)
    return _finish(make, data, facet, key, 1, resolve=("x", "y") if facet else ())


def heatmap(
    rows: list[dict],
    x: str,
    y: str,
    *,
    value: str = "rate",
    min_n: int = SMALL_N,
    x_title: str | None = None,
    y_title: str | None = None,
    domain: tuple[float, float] | None = (0.3, 0.7),
    scheme: Scheme = "redblue",
    cell: int = 34,
    text: str | None = "n",
    facet: str | None = None,
    n_field: str = "n",
    order: list[str] | None = None,
) -> dict:
    """A cell per row; colour = value, faded when n < min_n, a red ring on flagged cells.
    `order`: the categories of both axes in this order (a square matrix, e.g. power by power:
    the same order across and down). The number in a cell is white on its darkest colours."""
    data = mark_rows(rows, min_n, n_field)
    values = [float(v) for r in data if isinstance(v := r.get(value), int | float)]
    lo, hi = domain if domain else (min(values, default=0.0), max(values, default=1.0))
    for r in data:
        r["_flag"] = 1 if r.get("flagged") else 0
        r["_ink"] = _ink(r.get(value), lo, hi, diverging=scheme == "redblue") if text else None
    nx = max(len({r.get(x) for r in rows}), 1)
    ny = max(len({r.get(y) for r in rows}), 1)

    def make():
        tips = _tooltip(data, [y, x, value, n_field, "lo", "hi", "shrunk", "flagged"])
        sort = order if order is not None else "ascending"
        enc = {
            "x": alt.X(f"{x}:O", title=x_title or x, sort=sort),
            "y": alt.Y(f"{y}:O", title=y_title or y, sort=sort),
        }
        scale = (
            alt.Scale(scheme=scheme, domain=list(domain), clamp=True)
            if domain
            else alt.Scale(scheme=scheme)
        )
        rect = (
            alt.Chart()
            .mark_rect()
            .encode(
                **enc,
                color=alt.Color(f"{value}:Q", scale=scale, title=value),
                opacity=alt.Opacity("_opacity:Q", scale=None, legend=None),
                tooltip=tips,
            )
        )
        ring = (
            alt.Chart()
            .mark_rect(fill=None, stroke=RED, strokeWidth=2.5)
            .encode(**enc, strokeOpacity=alt.StrokeOpacity("_flag:Q", scale=None, legend=None))
        )
        layers = [rect, ring]
        if text:
            layers.append(
                alt.Chart()
                .mark_text(fontSize=9)
                .encode(
                    **enc,
                    text=alt.Text(f"{text}:Q"),
                    # a value per cell, not a scale: the cells' colour scale stays the only one
                    color=alt.condition(
                        f"datum._ink == '{PAPER}'", alt.value(PAPER), alt.value(INK)
                    ),
                    tooltip=tips,
                )
            )
        return alt.layer(*layers).properties(width=min(cell * nx, 900), height=min(cell * ny, 900))

    key = ("heat", x, y, value, min_n, x_title, y_title, domain, scheme, cell, text, n_field,
           nx, ny, tuple(order or ()))  # fmt: skip
    return _finish(make, data, facet, key, resolve=("x", "y"))


def bars(
    rows: list[dict],
    x: str,
    y: str,
    *,
    color: str | None = None,
    x_type: str = "N",
    width: int = 520,
    height: int = 220,
    stack: bool = True,
    facet: str | None = None,
    x_title: str | None = None,
    y_title: str | None = None,
    columns: int = 2,
    color_type: str = "N",
) -> dict:
    """Counts per category (or per day with x_type="T"), stacked by `color` when given
    (color_type "O" for ordered categories: card values 1..10 in order)."""

    def make():
        tips = _tooltip(rows, [x, y] + ([color] if color else []))
        enc = {
            "x": alt.X(f"{x}:{x_type}", title=x_title or x, sort=None),
            "y": alt.Y(f"{y}:Q", title=y_title or y, stack=True if stack else None),
            "tooltip": tips,
        }
        if color:
            enc["color"] = alt.Color(f"{color}:{color_type}")
        return alt.Chart().mark_bar().encode(**enc).properties(width=width, height=height)

    key = ("bars", x, y, color, x_type, width, height, stack, x_title, y_title, color_type)
    return _finish(make, rows, facet, key, columns)


def trend(
    rows: list[dict],
    x: str,
    *,
    color: str | None = None,
    x_type: str = "T",
    width: int = 560,
    height: int = 240,
    min_n: int = SMALL_N,
    facet: str | None = None,
    y_title: str = "score rate, 95% interval",
    columns: int = 2,
) -> dict:
    """Rate over time (or versions): points with error bars, joined by a thin line. Several
    series are drawn as small multiples (`facet`, one panel a series), not as many coloured
    lines on one axis; `color` is for two or three lines a panel at most."""
    data = mark_rows(rows, min_n)

    def make():
        tips = _tooltip(data, [x] + ([color] if color else []) + ["n", "rate", "lo", "hi"])
        enc_color = alt.Color(f"{color}:N") if color else alt.value(BLUE)
        xenc = alt.X(f"{x}:{x_type}", title=x, sort=None)
        opacity = alt.Opacity("_opacity:Q", scale=None, legend=None)
        band = (
            alt.Chart()
            .mark_rule(strokeWidth=1.5)
            .encode(
                x=xenc,
                y=alt.Y("lo:Q", scale=alt.Scale(domain=[0, 1]), title=y_title),
                y2="hi:Q",
                color=enc_color,
                opacity=opacity,
                tooltip=tips,
            )
        )
        line = alt.Chart().mark_line(strokeWidth=1).encode(x=xenc, y="rate:Q", color=enc_color)
        dots = (
            alt.Chart()
            .mark_point(filled=True, size=40)
            .encode(
                x=xenc,
                y="rate:Q",
                color=enc_color,
                opacity=opacity,
                shape=alt.Shape("_sample:N", scale=SHAPE_SCALE, legend=None),
                tooltip=tips,
                **_link(data),
            )
        )
        ref = alt.Chart().mark_rule(strokeDash=[4, 3], color="#667085").encode(y=alt.datum(0.5))
        return alt.layer(band, line, dots, ref).properties(width=width, height=height)

    key = ("trend", x, color, x_type, width, height, min_n, y_title)
    return _finish(make, data, facet, key, columns)
