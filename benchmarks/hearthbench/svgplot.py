"""Plain SVG charts for benchmarks/RESULTS.md, written by hand (no plotting package), so the page
is regenerated anywhere with the standard library alone. Deterministic: the same input gives the
same bytes (fixed number formats, no dates, no random ids).

- `bars`: horizontal grouped bars of ratios with a reference line at 1 (Hearth ÷ llama.cpp).
- `lines`: one or more panels side by side, each a line chart over categorical x positions
  (context lengths, sequences, clients, turns), linear or logarithmic y.
"""
from __future__ import annotations

import html
import math

FONT = 'font-family="Helvetica, Arial, sans-serif" font-size="12"'
GRID = "#dddddd"
INK = "#333333"
MUTED = "#555555"
# Hearth in warm colours, llama.cpp in blues and greys, the same across charts.
COLOURS = {"hearth": "#d9822b", "hearth-alt": "#8c4a0b", "llama": "#2b6cb0", "llama-alt": "#7f9cc0",
           "prompt": "#d9822b", "decode": "#2b6cb0", "other": "#6b8e23"}


def _esc(s: str) -> str:
    return html.escape(s, quote=True)


def _num(v: float) -> str:
    """A coordinate: one decimal, no '-0.0'."""
    s = f"{v:.1f}"
    return "0.0" if s == "-0.0" else s


def _head(width: int, height: int, title: str, subtitle: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" {FONT}>',
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="16" y="24" font-size="16" font-weight="bold">{_esc(title)}</text>',
        f'<text x="16" y="44" fill="{MUTED}">{_esc(subtitle)}</text>',
    ]


def _legend_rows(items: list[tuple[str, str, str]], width: float) -> list[list[tuple[float, tuple[str, str, str]]]]:
    """Lays legend items out left to right from x = 16, wrapping at width: rows of (x, item)."""
    rows: list[list[tuple[float, tuple[str, str, str]]]] = [[]]
    x = 16.0
    for item in items:
        w = 34 + 6.6 * len(item[0])
        if rows[-1] and x + w > width - 8:
            rows.append([])
            x = 16.0
        rows[-1].append((x, item))
        x += w
    return rows


def _legend(out: list[str], rows: list[list[tuple[float, tuple[str, str, str]]]], y: float) -> None:
    """Draws _legend_rows' rows, the first baseline at y, 18 px apart."""
    for row in rows:
        for x, (name, colour, dash) in row:
            dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
            out.append(f'<line x1="{_num(x)}" y1="{_num(y - 4)}" x2="{_num(x + 20)}" y2="{_num(y - 4)}" '
                       f'stroke="{colour}" stroke-width="3"{dash_attr}/>')
            out.append(f'<text x="{_num(x + 24)}" y="{_num(y)}">{_esc(name)}</text>')
        y += 18


def bars(title: str, subtitle: str, groups: list[tuple[str, list[float | None]]],
         series: list[tuple[str, str]], unit: str = "×", reference: float | None = 1.0) -> str:
    """groups: (label, one value per series, None = not measured); series: (name, colour)."""
    bar, gap, group_gap, left, top = 16, 4, 22, 170, 84
    width = 760
    values = [v for _, vs in groups for v in vs if v is not None]
    top_value = max(3.0, max(values) * 1.12) if values else 3.0
    plot_width = width - left - 70
    x = lambda v: left + plot_width * v / top_value
    per_group = len(series) * (bar + gap) - gap
    height = top + len(groups) * (per_group + group_gap) + 30
    out = _head(width, height, title, subtitle)
    bottom = height - 36
    for tick in range(0, int(top_value) + 1):
        tx = x(tick)
        colour = INK if reference is not None and tick == reference else GRID
        out.append(f'<line x1="{_num(tx)}" y1="{top - 8}" x2="{_num(tx)}" y2="{bottom}" stroke="{colour}"/>')
        out.append(f'<text x="{_num(tx)}" y="{bottom + 16}" text-anchor="middle" fill="{MUTED}">{tick}{unit}</text>')
    y = top
    for label, vs in groups:
        out.append(f'<text x="{left - 8}" y="{_num(y + per_group / 2 + 4)}" text-anchor="end">{_esc(label)}</text>')
        for value, (name, colour) in zip(vs, series):
            if value is None:
                out.append(f'<text x="{left + 4}" y="{y + bar - 4}" fill="{MUTED}">not measured</text>')
            else:
                out.append(f'<rect x="{left}" y="{y}" width="{_num(x(value) - left)}" height="{bar}" fill="{colour}">'
                           f'<title>{_esc(name)} {value:.2f}{unit}</title></rect>')
                out.append(f'<text x="{_num(x(value) + 4)}" y="{y + bar - 4}" fill="{INK}">{value:.2f}{unit}</text>')
            y += bar + gap
        y += group_gap - gap
    legend = []
    for name, colour in series:
        legend.append((name, colour))
    lx = 16.0
    for name, colour in legend:
        out.append(f'<rect x="{_num(lx)}" y="{top - 30}" width="12" height="12" fill="{colour}"/>')
        out.append(f'<text x="{_num(lx + 16)}" y="{top - 20}">{_esc(name)}</text>')
        lx += 30 + 6.6 * len(name)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _nice_step(span: float, ticks: int = 5) -> float:
    raw = span / ticks
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if m * mag >= raw:
            return m * mag
    return 10 * mag


def _fmt_tick(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v / 1000:g}k"
    return f"{v:g}"


def lines(title: str, subtitle: str, panels: list[dict]) -> str:
    """panels: each {"title", "x_labels": [str], "x_title", "y_label", "log_y": bool, "points_only":
    bool (markers without lines, for x positions that are not a sequence), "series": [(name, colour,
    dash, [y or None per x label])]}. Panels share the legend (series names in the first panel
    that has them)."""
    panel_w, panel_h, left, top, gap = 340 if len(panels) > 1 else 640, 280, 64, 84, 40
    width = left + len(panels) * panel_w + (len(panels) - 1) * (gap + left) + 24
    seen: list[tuple[str, str, str]] = []
    for p in panels:
        for name, colour, dash, _ in p["series"]:
            if (name, colour, dash) not in seen:
                seen.append((name, colour, dash))
    legend = _legend_rows(seen, width)
    height = top + panel_h + 64 + 18 * len(legend)
    out = _head(width, height, title, subtitle)
    for i, p in enumerate(panels):
        x0 = left + i * (panel_w + gap + left)
        y0, y1 = top, top + panel_h
        values = [v for s in p["series"] for v in s[3] if v is not None]
        if p.get("log_y"):
            steps = [m * 10 ** e for e in range(-3, 7) for m in (1, 2, 5)]
            lo = max(t for t in steps if t <= min(values))
            hi = min(t for t in steps if t >= max(values))
            ymap = lambda v, lo=lo, hi=hi: y1 - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * panel_h
            ticks = [t for t in steps if lo <= t <= hi]
        else:
            step = _nice_step(max(values) * 1.08)
            hi = step * math.ceil(max(values) * 1.08 / step)
            ymap = lambda v, hi=hi: y1 - v / hi * panel_h
            ticks = [step * k for k in range(int(round(hi / step)) + 1)]
        n = len(p["x_labels"])
        xmap = lambda j, n=n, x0=x0: x0 + (j + 0.5) * panel_w / n
        out.append(f'<text x="{_num(x0)}" y="{top - 14}" font-weight="bold">{_esc(p["title"])}</text>')
        for t in ticks:
            ty = ymap(t)
            out.append(f'<line x1="{_num(x0)}" y1="{_num(ty)}" x2="{_num(x0 + panel_w)}" y2="{_num(ty)}" stroke="{GRID}"/>')
            out.append(f'<text x="{_num(x0 - 6)}" y="{_num(ty + 4)}" text-anchor="end" fill="{MUTED}">{_fmt_tick(t)}</text>')
        out.append(f'<line x1="{_num(x0)}" y1="{y1}" x2="{_num(x0 + panel_w)}" y2="{y1}" stroke="{INK}"/>')
        if p.get("reference") is not None:
            ry = ymap(p["reference"])
            out.append(f'<line x1="{_num(x0)}" y1="{_num(ry)}" x2="{_num(x0 + panel_w)}" y2="{_num(ry)}" stroke="{INK}"/>')
        every = max(1, math.ceil(n / 15))
        for j, lab in enumerate(p["x_labels"]):
            if j % every == 0 or j == n - 1:
                out.append(f'<text x="{_num(xmap(j))}" y="{y1 + 16}" text-anchor="middle" fill="{MUTED}">{_esc(lab)}</text>')
        out.append(f'<text x="{_num(x0 + panel_w / 2)}" y="{y1 + 36}" text-anchor="middle">{_esc(p["x_title"])}</text>')
        out.append(f'<text x="{_num(x0 - 48)}" y="{_num((y0 + y1) / 2)}" text-anchor="middle" '
                   f'transform="rotate(-90 {_num(x0 - 48)} {_num((y0 + y1) / 2)})">{_esc(p["y_label"])}</text>')
        for name, colour, dash, ys in p["series"]:
            pts = [(xmap(j), ymap(v), v) for j, v in enumerate(ys) if v is not None]
            dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
            if not p.get("points_only"):
                path = " ".join(f"{_num(px)},{_num(py)}" for px, py, _ in pts)
                out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash_attr}/>')
            for px, py, v in pts:
                out.append(f'<circle cx="{_num(px)}" cy="{_num(py)}" r="3" fill="{colour}">'
                           f'<title>{_esc(name)}: {v:g}</title></circle>')
    _legend(out, legend, top + panel_h + 62)
    out.append("</svg>")
    return "\n".join(out) + "\n"
