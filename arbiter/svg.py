"""Small self-contained SVG charts for the HTML reports (no plotting library, no scripts)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

__all__ = ["bar_chart", "heatmap", "histogram"]

PALETTE = ("#3b6fb6", "#d9822b", "#3a9a5b", "#b6443b", "#7a5bb6", "#5b9ab6")


def histogram(
    series: dict[str, Sequence[float]],
    *,
    title: str,
    bins: int = 20,
    low: float | None = None,
    high: float | None = None,
    width: int = 560,
    height: int = 240,
) -> str:
    """Return an SVG histogram with one colour per series (bars side by side in each bin)."""
    values = [v for vs in series.values() for v in vs if math.isfinite(v)]
    if not values:
        return f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="40"><text x="8" y="24">{escape(str(title))}: no values</text></svg>'
    lo = min(values) if low is None else low
    hi = max(values) if high is None else high
    if hi <= lo:
        hi = lo + 1.0
    counts = {name: [0] * bins for name in series}
    for name, vs in series.items():
        for v in vs:
            if not math.isfinite(v):
                continue
            k = min(bins - 1, max(0, int((v - lo) / (hi - lo) * bins)))
            counts[name][k] += 1
    top = max(max(c) for c in counts.values()) or 1
    left, bottom, plot_w, plot_h = 40, 30, width - 50, height - 70
    slot = plot_w / bins
    bar = slot / max(1, len(series)) * 0.9
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(str(title))}">',
        f'<text x="{left}" y="16" font-size="13" font-weight="bold">{escape(str(title))}</text>',
        f'<line x1="{left}" y1="{height - bottom}" x2="{left + plot_w}" y2="{height - bottom}" stroke="#444"/>',
        f'<line x1="{left}" y1="{height - bottom}" x2="{left}" y2="{height - bottom - plot_h}" stroke="#444"/>',
        f'<text x="{left - 4}" y="{height - bottom - plot_h + 4}" font-size="10" text-anchor="end">{top}</text>',
        f'<text x="{left}" y="{height - bottom + 14}" font-size="10">{lo:.3g}</text>',
        f'<text x="{left + plot_w}" y="{height - bottom + 14}" font-size="10" text-anchor="end">{hi:.3g}</text>',
    ]
    for s, (name, cs) in enumerate(counts.items()):
        colour = PALETTE[s % len(PALETTE)]
        for k, c in enumerate(cs):
            if not c:
                continue
            h = c / top * plot_h
            x = left + k * slot + s * bar + slot * 0.05
            parts.append(
                f'<rect x="{x:.1f}" y="{height - bottom - h:.1f}" width="{bar:.1f}" height="{h:.1f}" '
                f'fill="{colour}"><title>{escape(str(name))}: {c}</title></rect>'
            )
        parts.append(
            f'<rect x="{left + 8 + s * 130}" y="{height - 12}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{left + 22 + s * 130}" y="{height - 3}" font-size="11">{escape(str(name))} ({len(series[name])})</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def heatmap(
    rows: Sequence[str],
    columns: Sequence[str],
    cells: Sequence[Sequence[float]],
    *,
    title: str,
    cell_px: int = 70,
) -> str:
    """Return an SVG grid (a confusion matrix): darker is more, each cell labelled."""
    top = max((v for row in cells for v in row), default=0) or 1
    left, head = 110, 50
    width = left + cell_px * len(columns) + 10
    height = head + cell_px * len(rows) + 10
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(str(title))}">',
        f'<text x="4" y="16" font-size="13" font-weight="bold">{escape(str(title))}</text>',
    ]
    for j, column in enumerate(columns):
        parts.append(
            f'<text x="{left + j * cell_px + cell_px / 2}" y="{head - 8}" font-size="11" '
            f'text-anchor="middle">{escape(str(column))}</text>'
        )
    for i, row in enumerate(rows):
        y = head + i * cell_px
        parts.append(
            f'<text x="{left - 6}" y="{y + cell_px / 2 + 4}" font-size="11" text-anchor="end">{escape(str(row))}</text>'
        )
        for j, value in enumerate(cells[i]):
            shade = int(235 - 175 * (value / top))
            ink = "#fff" if shade < 140 else "#111"
            parts.append(
                f'<rect x="{left + j * cell_px}" y="{y}" width="{cell_px - 2}" height="{cell_px - 2}" '
                f'fill="rgb({shade},{shade + 10},{min(255, shade + 40)})"/>'
                f'<text x="{left + j * cell_px + cell_px / 2}" y="{y + cell_px / 2 + 5}" font-size="14" '
                f'text-anchor="middle" fill="{ink}">{value:g}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def bar_chart(
    labels: Sequence[str],
    series: dict[str, Sequence[float]],
    *,
    title: str,
    unit: str = "",
    width: int = 560,
) -> str:
    """Return a horizontal grouped bar chart (one group per label, one bar per series)."""
    n_series = max(1, len(series))
    row_h = 14 * n_series + 10
    left, head = 130, 28
    height = head + row_h * len(labels) + 26
    top = max((v for vs in series.values() for v in vs if math.isfinite(v)), default=0) or 1
    plot_w = width - left - 70
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(str(title))}">',
        f'<text x="4" y="16" font-size="13" font-weight="bold">{escape(str(title))}</text>',
    ]
    for i, label in enumerate(labels):
        y0 = head + i * row_h
        parts.append(
            f'<text x="{left - 6}" y="{y0 + row_h / 2 + 2}" font-size="11" text-anchor="end">{escape(str(label))}</text>'
        )
        for s, (name, values) in enumerate(series.items()):
            value = values[i]
            w = 0 if not math.isfinite(value) else value / top * plot_w
            y = y0 + s * 14
            colour = PALETTE[s % len(PALETTE)]
            parts.append(
                f'<rect x="{left}" y="{y}" width="{w:.1f}" height="12" fill="{colour}"><title>{escape(str(name))}</title></rect>'
                f'<text x="{left + w + 4:.1f}" y="{y + 10}" font-size="10">{value:.3g}{escape(str(unit))}</text>'
            )
    for s, name in enumerate(series):
        parts.append(
            f'<rect x="{left + s * 110}" y="{height - 14}" width="10" height="10" fill="{PALETTE[s % len(PALETTE)]}"/>'
            f'<text x="{left + 14 + s * 110}" y="{height - 5}" font-size="11">{escape(str(name))}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
