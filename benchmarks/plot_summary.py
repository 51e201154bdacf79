#!/usr/bin/env python3
"""Draws the README's speed picture, docs/speed-vs-llama-cpp.svg, from the Summary table of the
committed benchmarks/RESULTS.md: for each model file, Hearth's prompt (pp512) and decode (tg128)
speed as a multiple of llama.cpp's on the same GGUF, same threads, in one run. Plain SVG written
by hand (no plotting package), so it is regenerated anywhere; benchmarks/run.sh runs it after it
rewrites RESULTS.md, and `python3 benchmarks/plot_summary.py` redraws it from the committed file.

    benchmarks/plot_summary.py [--results benchmarks/RESULTS.md] [--output docs/speed-vs-llama-cpp.svg]
"""
import argparse
import html
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def summary_rows(text):
    """(label, pp ratio, tg ratio) per row of the '## Summary' table, GGUF rows only (one per model
    file: both engines read the same file there)."""
    section = text.split("## Summary", 1)
    if len(section) < 2:
        sys.exit("RESULTS.md has no '## Summary' section")
    rows, header = [], None
    for line in section[1].splitlines():
        if line.startswith("## "):
            break
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if set(cells[0]) <= set("-: "):
            continue
        record = dict(zip(header, cells))
        if ".gguf" not in record.get("Hearth file", ""):
            continue
        ratio = lambda key: float(re.match(r"([0-9.]+)", record[key]).group(1))
        variant = re.search(r"\(a(\w+)\)", record["Hearth file"])
        rows.append((record["model / type"], variant.group(1) if variant else "", ratio("pp512 ×llama.cpp"), ratio("tg128 ×llama.cpp")))
    if not rows:
        sys.exit("the Summary table has no GGUF rows")
    # A model with rows for several --activation-bits variants: each labelled with its variant.
    counts = {}
    for label, *_ in rows:
        counts[label] = counts.get(label, 0) + 1
    return [(f"{label} ({variant})" if counts[label] > 1 and variant else label, pp, tg) for label, variant, pp, tg in rows]


def run_line(text):
    date = re.search(r"^- Date: (.+)$", text, re.M)
    cpu = re.search(r"^- CPU: (.+?), \d+ cores", text, re.M)
    threads = re.search(r"Threads = (\d+)", text)
    parts = [p for p in (date and date.group(1), cpu and cpu.group(1).strip(), threads and f"{threads.group(1)} threads") if p]
    return ", ".join(parts)


def svg(rows, subtitle):
    bar, gap, group_gap, left, top = 16, 4, 22, 150, 64
    width = 720
    top_ratio = max(3.0, max(max(pp, tg) for _, pp, tg in rows) * 1.1)
    plot_width = width - left - 60
    x = lambda r: left + plot_width * r / top_ratio
    height = top + len(rows) * (2 * bar + gap + group_gap) + 40
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'font-family="Helvetica, Arial, sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        '<text x="16" y="24" font-size="16" font-weight="bold">Hearth ÷ llama.cpp, same GGUF, same threads (&gt; 1 = Hearth faster)</text>',
        f'<text x="16" y="44" fill="#555555">{html.escape(subtitle)} — benchmarks/RESULTS.md</text>',
    ]
    bottom = height - 32
    for tick in range(0, int(top_ratio) + 1):
        tx = x(tick)
        colour = "#333333" if tick == 1 else "#dddddd"
        out.append(f'<line x1="{tx:.1f}" y1="{top - 8}" x2="{tx:.1f}" y2="{bottom}" stroke="{colour}"/>')
        out.append(f'<text x="{tx:.1f}" y="{bottom + 16}" text-anchor="middle" fill="#555555">{tick}×</text>')
    y = top
    for label, pp, tg in rows:
        out.append(f'<text x="{left - 8}" y="{y + bar + gap / 2 + 4:.1f}" text-anchor="end">{html.escape(label)}</text>')
        for value, colour, name in ((pp, "#d9822b", "prompt pp512"), (tg, "#2b6cb0", "decode tg128")):
            out.append(f'<rect x="{left}" y="{y}" width="{x(value) - left:.1f}" height="{bar}" fill="{colour}"><title>{name} {value:.2f}×</title></rect>')
            out.append(f'<text x="{x(value) + 4:.1f}" y="{y + bar - 4}" fill="#333333">{value:.2f}×</text>')
            y += bar + gap
        y += group_gap - gap
    legend_x = width - 230
    for i, (colour, name) in enumerate((("#d9822b", "prompt (pp512)"), ("#2b6cb0", "decode (tg128)"))):
        out.append(f'<rect x="{legend_x + i * 110}" y="{top - 22}" width="12" height="12" fill="{colour}"/>')
        out.append(f'<text x="{legend_x + i * 110 + 16}" y="{top - 12}">{name}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default=os.path.join(ROOT, "benchmarks", "RESULTS.md"))
    parser.add_argument("--output", default=os.path.join(ROOT, "docs", "speed-vs-llama-cpp.svg"))
    args = parser.parse_args()
    text = open(args.results, encoding="utf-8").read()
    picture = svg(summary_rows(text), run_line(text))
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(picture)
    print(f"wrote {os.path.relpath(args.output, ROOT)}")


if __name__ == "__main__":
    main()
