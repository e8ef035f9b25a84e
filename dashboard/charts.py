"""Altair chart builders for aggregated tables (rows are already one per bar/cell/point).

Conventions every rate chart follows: the point is the score rate with its Wilson 95% interval as
an error bar; rows keep the order they come in (the queries sort by the lower bound); rows with
fewer than `min_n` games are drawn grey, not dropped; rows flagged by the FDR test are red
diamonds; the tooltip carries n, the counts, the interval and the shrunk estimate.
"""

from __future__ import annotations

import altair as alt

SMALL_N = 30
GREY = "#b8bec9"
BLUE = "#2b5fd9"
RED = "#c4320a"

RATE_FIELDS = ("rate", "lo", "hi", "shrunk")


def _tooltip(rows: list[dict], first: list[str]) -> list[alt.Tooltip]:
    keys = list(rows[0].keys()) if rows else []
    order = [k for k in first if k in keys] + [k for k in keys if k not in first]
    tips = []
    for k in order:
        if k.startswith("_"):
            continue
        v = rows[0].get(k)
        if isinstance(v, float) or k in RATE_FIELDS:
            tips.append(alt.Tooltip(f"{k}:Q", format=".3f"))
        elif isinstance(v, (int, bool)):
            tips.append(alt.Tooltip(f"{k}:{'N' if isinstance(v, bool) else 'Q'}"))
        else:
            tips.append(alt.Tooltip(f"{k}:N"))
    return tips


def _mark_rows(rows: list[dict], min_n: int) -> list[dict]:
    out = []
    for r in rows:
        r = dict(r)
        n = r.get("n") or 0
        flagged = bool(r.get("flagged"))
        r["_sample"] = "flagged (FDR 5%)" if flagged else ("small n" if n < min_n else "ok")
        out.append(r)
    return out


SAMPLES = ["ok", "small n", "flagged (FDR 5%)"]
SHAPE_SCALE = alt.Scale(domain=SAMPLES, range=["circle", "circle", "diamond"])
SAMPLE_SCALE = alt.Scale(domain=SAMPLES, range=[BLUE, GREY, RED])


def rate_chart(
    rows: list[dict],
    label: str,
    *,
    reference: float | None = 0.5,
    min_n: int = SMALL_N,
    x_title: str = "score rate (win 1, draw ½), 95% interval",
    width: int = 420,
) -> dict:
    """Dot + error bar per row; y keeps the row order (sorted by the lower bound upstream)."""
    data = _mark_rows(rows, min_n)
    tips = _tooltip(data, [label, "n", "rate", "lo", "hi", "shrunk", "flagged"])
    base = alt.Chart(alt.Data(values=data))
    y = alt.Y(f"{label}:N", sort=None, title=None)
    scale = alt.Scale(domain=[0, 1])
    bars = base.mark_rule(strokeWidth=2).encode(
        y=y,
        x=alt.X("lo:Q", scale=scale, title=x_title),
        x2="hi:Q",
        color=alt.Color("_sample:N", scale=SAMPLE_SCALE, legend=alt.Legend(title=None)),
        tooltip=tips,
    )
    dots = base.mark_point(filled=True, size=60).encode(
        y=y,
        x="rate:Q",
        color=alt.Color("_sample:N", scale=SAMPLE_SCALE, legend=None),
        shape=alt.Shape("_sample:N", scale=SHAPE_SCALE, legend=None),
        tooltip=tips,
    )
    layers = [bars, dots]
    if reference is not None:
        layers.append(
            alt.Chart(alt.Data(values=[{"ref": reference}]))
            .mark_rule(strokeDash=[4, 3], color="#667085")
            .encode(x="ref:Q")
        )
    height = max(60, min(16 * max(len({r.get(label) for r in rows}), 1), 1400))
    chart = alt.layer(*layers).properties(width=width, height=height)
    return chart.to_dict()


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
    scheme: str = "redblue",
    cell: int = 34,
    text: str | None = "n",
) -> dict:
    """A cell per row; colour = value, faded when n < min_n, a ring on flagged cells."""
    data = _mark_rows(rows, min_n)
    for r in data:
        r["_opacity"] = 0.35 if (r.get("n") or 0) < min_n else 1.0
    tips = _tooltip(data, [y, x, value, "n", "lo", "hi", "shrunk", "flagged"])
    base = alt.Chart(alt.Data(values=data)).encode(
        x=alt.X(f"{x}:O", title=x_title or x),
        y=alt.Y(f"{y}:O", title=y_title or y),
    )
    scale = alt.Scale(scheme=scheme, domain=list(domain)) if domain else alt.Scale(scheme=scheme)
    rect = base.mark_rect().encode(
        color=alt.Color(f"{value}:Q", scale=scale, title=value),
        opacity=alt.Opacity("_opacity:Q", scale=None, legend=None),
        tooltip=tips,
    )
    layers = [rect]
    flagged = [r for r in data if r.get("flagged")]
    if flagged:
        layers.append(
            alt.Chart(alt.Data(values=flagged))
            .mark_rect(fill=None, stroke=RED, strokeWidth=2)
            .encode(x=f"{x}:O", y=f"{y}:O", tooltip=tips)
        )
    if text:
        layers.append(
            base.mark_text(fontSize=9, color="#1d2430").encode(
                text=alt.Text(f"{text}:Q"), tooltip=tips
            )
        )
    nx = max(len({r.get(x) for r in rows}), 1)
    ny = max(len({r.get(y) for r in rows}), 1)
    return (
        alt.layer(*layers)
        .properties(width=min(cell * nx, 900), height=min(cell * ny, 900))
        .to_dict()
    )


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
) -> dict:
    """Counts per category (or per day with x_type="T"), stacked by `color` when given."""
    tips = _tooltip(rows, [x, y] + ([color] if color else []))
    enc = {
        "x": alt.X(f"{x}:{x_type}", title=x, sort=None),
        "y": alt.Y(f"{y}:Q", title=y, stack=True if stack else None),
        "tooltip": tips,
    }
    if color:
        enc["color"] = alt.Color(f"{color}:N")
    chart = alt.Chart(alt.Data(values=rows)).mark_bar().encode(**enc)
    return chart.properties(width=width, height=height).to_dict()


def trend(
    rows: list[dict],
    x: str,
    *,
    color: str | None = None,
    x_type: str = "T",
    width: int = 560,
    height: int = 240,
    min_n: int = SMALL_N,
) -> dict:
    """Rate over time (or versions): a line of points with the interval as error bars."""
    data = _mark_rows(rows, min_n)
    tips = _tooltip(data, [x] + ([color] if color else []) + ["n", "rate", "lo", "hi"])
    base = alt.Chart(alt.Data(values=data))
    enc_color = alt.Color(f"{color}:N") if color else alt.value(BLUE)
    xenc = alt.X(f"{x}:{x_type}", title=x, sort=None)
    scale = alt.Scale(domain=[0, 1])
    band = base.mark_rule(strokeWidth=1.5).encode(
        x=xenc, y=alt.Y("lo:Q", scale=scale, title="score rate, 95% interval"), y2="hi:Q",
        color=enc_color, tooltip=tips,
    )  # fmt: skip
    line = base.mark_line(point=False, strokeWidth=1).encode(
        x=xenc, y="rate:Q", color=enc_color, tooltip=tips
    )
    dots = base.mark_point(filled=True, size=40).encode(
        x=xenc,
        y="rate:Q",
        color=enc_color,
        opacity=alt.condition(f"datum.n < {int(min_n)}", alt.value(0.35), alt.value(1.0)),
        shape=alt.Shape("_sample:N", scale=SHAPE_SCALE, legend=None),
        tooltip=tips,
    )
    ref = (
        alt.Chart(alt.Data(values=[{"ref": 0.5}]))
        .mark_rule(strokeDash=[4, 3], color="#667085")
        .encode(y="ref:Q")
    )
    return alt.layer(band, line, dots, ref).properties(width=width, height=height).to_dict()


def histogram(rows: list[dict], x: str, y: str, *, color: str | None = None) -> dict:
    return bars(rows, x, y, color=color, x_type="O")
