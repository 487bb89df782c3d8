#!/usr/bin/env python3
"""The benchmark's charts, drawn from its saved results (bench.csv).

  bench_chart.py --csv build/bench/bench.csv [--svg bench.svg]
                 [--speedup-svg bench-speedup.svg]

bench_block.py writes bench.csv (one row per system, T and thread count:
kind, system, T, threads, median_ms, min_ms, spread_pct, gflops, pct_peak,
speedup) and calls this script's draw(); run it alone to redraw the charts
of an earlier run without measuring again. Plain SVG, no plotting library.

bench.svg: ms per call (min, log-log) against T, one panel per thread
count; attnc's lines bold, in saturated colours, labelled at their ends;
the peers thin and light (colour by system, dash by environment: tuned
solid, AVX2-restricted dashed, out of the box dotted).

bench-speedup.svg: top row, attnc's speed-up over the best peer of the
same T and thread count (AVX-512 path: over every tuned and out-of-the-box
peer; AVX2 path: over the AVX2-restricted peers, as bench_block.py's
table), with the 1x line; bottom row, % of the FP32 peak measured in the
same run, attnc bold, the peers light. One column per thread count.
"""
import argparse
import csv
import math
import sys

# attnc: bold, saturated, one colour per code path.
ATTNC_STYLE = {
    "attnc avx512": ("#c0122c", 3.5),
    "attnc avx2": ("#1a5fd0", 3.5),
}
# Peers: light; colour by system, dash by environment.
PEER_COLOUR = {"torch mha": "#8c8c8c", "torch manual": "#b59a6a"}
PEER_DASH = {"tuned": "", "avx2": "6,3", "default": "1.5,3"}
PEER_WIDTH = 1.3
FONT = 'font-family="sans-serif"'


def read_rows(path):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            try:
                rows.append(dict(kind=r["kind"], system=r["system"], T=int(r["T"]),
                                 threads=int(r["threads"]), min_ms=float(r["min_ms"]),
                                 median_ms=float(r["median_ms"]),
                                 pct_peak=float(r["pct_peak"])))
            except (KeyError, ValueError) as e:
                sys.exit(f"bench_chart: {path}: bad row {r}: {e}")
    return rows


def is_attnc(system):
    return system.startswith("attnc")


def peer_style(system):
    """(colour, dash) of a peer such as 'torch mha tuned'."""
    words = system.split()
    mode = words[-1] if words[-1] in PEER_DASH else "tuned"
    base = " ".join(words[:-1]) if words[-1] in PEER_DASH else system
    return PEER_COLOUR.get(base, "#9a9a9a"), PEER_DASH[mode]


def best_peer(rows, r):
    """The fastest peer block of r's T and threads that r is compared with
    (bench_block.py's rule), or None."""
    want = ("avx2",) if "avx2" in r["system"] else ("tuned", "default")
    peers = [q for q in rows if q["kind"] == "block" and q["T"] == r["T"] and
             q["threads"] == r["threads"] and q["system"].startswith("torch") and
             q["system"].split()[-1] in want]
    return min(peers, key=lambda q: q["min_ms"]) if peers else None


def nice_log_ticks(lo, hi):
    """1-2-5 per decade; 1-2-3-5-7 when that gives fewer than 4 ticks."""
    for steps in ((1, 2, 5), (1, 2, 3, 5, 7)):
        ticks, v = [], 10 ** math.floor(math.log10(lo))
        while v <= hi * 1.0001:
            for k in steps:
                if lo * 0.9999 <= v * k <= hi * 1.0001:
                    ticks.append(round(v * k, 12))
            v *= 10
        if len(ticks) >= 4:
            break
    return ticks


def nice_lin_ticks(lo, hi, most=6):
    span = hi - lo
    step = 10 ** math.floor(math.log10(span / most)) if span > 0 else 1
    for m in (1, 2, 2.5, 5, 10):
        if span / (step * m) <= most:
            step *= m
            break
    t = math.ceil(lo / step) * step
    ticks = []
    while t <= hi + 1e-9:
        ticks.append(round(t, 10))
        t += step
    return ticks


class Panel:
    """One plot area: x always log2-spaced T values, y log or linear."""

    def __init__(self, out, x0, y0, w, h, ts, ylo, yhi, ylog, title, ylabel):
        self.out, self.x0, self.y0, self.w, self.h = out, x0, y0, w, h
        self.ts, self.ylo, self.yhi, self.ylog = ts, ylo, yhi, ylog
        self.labels = []  # y of the end labels drawn
        lx0, lx1 = math.log(min(ts)), math.log(max(ts))
        if lx1 > lx0:
            self.X = lambda t: x0 + 20 + (math.log(t) - lx0) / (lx1 - lx0) * (w - 40)
        else:  # one T: in the middle
            self.X = lambda t: x0 + w / 2
        if ylog:
            a, b = math.log(ylo), math.log(yhi)
            self.Y = lambda v: y0 + (1 - (math.log(v) - a) / (b - a)) * h
        else:
            self.Y = lambda v: y0 + (1 - (v - ylo) / (yhi - ylo)) * h
        out.append(f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="#fbfbfb" '
                   f'stroke="#999" stroke-width="0.6"/>')
        out.append(f'<text x="{x0 + w / 2:.1f}" y="{y0 - 8}" text-anchor="middle" '
                   f'font-size="13" font-weight="bold">{title}</text>')
        for t in ts:
            out.append(f'<line x1="{self.X(t):.1f}" y1="{y0}" x2="{self.X(t):.1f}" '
                       f'y2="{y0 + h}" stroke="#e4e4e4"/>')
            out.append(f'<text x="{self.X(t):.1f}" y="{y0 + h + 15}" '
                       f'text-anchor="middle" font-size="11">{t}</text>')
        out.append(f'<text x="{x0 + w / 2:.1f}" y="{y0 + h + 31}" text-anchor="middle" '
                   f'font-size="11">T (tokens)</text>')
        yt = nice_log_ticks(ylo, yhi) if ylog else nice_lin_ticks(ylo, yhi)
        for v in yt:
            out.append(f'<line x1="{x0}" y1="{self.Y(v):.1f}" x2="{x0 + w}" '
                       f'y2="{self.Y(v):.1f}" stroke="#ececec"/>')
            out.append(f'<text x="{x0 - 5}" y="{self.Y(v) + 4:.1f}" text-anchor="end" '
                       f'font-size="11">{v:g}</text>')
        out.append(f'<text x="{x0 - 44}" y="{y0 + h / 2:.1f}" font-size="11" '
                   f'text-anchor="middle" transform="rotate(-90 {x0 - 44} '
                   f'{y0 + h / 2:.1f})">{ylabel}</text>')

    def line(self, pts, colour, width, dash="", label=None, cls="peer", tip=None):
        """pts: (T, value); tip(T, value): a point's tooltip text."""
        pts = sorted(pts)
        if not pts:
            return
        d = " ".join(f"{self.X(t):.1f},{self.Y(v):.1f}" for t, v in pts)
        da = f' stroke-dasharray="{dash}"' if dash else ""
        self.out.append(f'<polyline class="{cls}" points="{d}" fill="none" stroke="{colour}" '
                        f'stroke-width="{width}"{da} stroke-linejoin="round"/>')
        r = 4 if cls == "attnc" else 2
        for t, v in pts:
            c = (f'<circle cx="{self.X(t):.1f}" cy="{self.Y(v):.1f}" r="{r}" '
                 f'fill="{colour}"')
            self.out.append(c + (f'><title>{tip(t, v)}</title></circle>' if tip else '/>'))
        if label:
            t, v = pts[-1]
            y = self.Y(v) + 4
            # Keep end labels 12 px apart (nearly equal lines).
            for _ in range(len(self.labels) + 1):
                near = [u for u in self.labels if abs(u - y) < 12]
                if not near:
                    break
                y = near[0] + (12 if y >= near[0] else -12)
            self.labels.append(y)
            self.out.append(f'<text x="{self.X(t) + 7:.1f}" y="{y:.1f}" '
                            f'font-size="11" font-weight="bold" fill="{colour}">{label}</text>')

    def hline(self, v, colour, dash=""):
        da = f' stroke-dasharray="{dash}"' if dash else ""
        self.out.append(f'<line x1="{self.x0}" y1="{self.Y(v):.1f}" x2="{self.x0 + self.w}" '
                        f'y2="{self.Y(v):.1f}" stroke="{colour}" stroke-width="1.2"{da}/>')


def legend(out, x, y, systems):
    """attnc first (bold), then the peers (light); returns the height used."""
    out.append(f'<g class="legend" font-size="11">')
    i = 0
    for s in systems:
        if is_attnc(s):
            c, w = ATTNC_STYLE.get(s, ("#000000", 3.5))
            dash, bold = "", ' font-weight="bold"'
        else:
            (c, dash), w, bold = peer_style(s), PEER_WIDTH, ""
        yy = y + i * 17
        da = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<line x1="{x}" y1="{yy}" x2="{x + 28}" y2="{yy}" stroke="{c}" '
                   f'stroke-width="{w}"{da}/><text x="{x + 34}" y="{yy + 4}"{bold}>{s}</text>')
        i += 1
    out.append("</g>")
    return i * 17


def svg_doc(width, height, title, body):
    return "\n".join(
        [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
         f'viewBox="0 0 {width} {height}" {FONT} font-size="12">',
         f'<rect width="{width}" height="{height}" fill="white"/>',
         f'<text x="16" y="22" font-size="15" font-weight="bold">{title}</text>']
        + body + ["</svg>"]) + "\n"


def ordered_systems(rows):
    """attnc first (its code paths in ATTNC_STYLE's order), then the peers."""
    names = sorted({r["system"] for r in rows})
    rank = {s: i for i, s in enumerate(ATTNC_STYLE)}
    return (sorted((s for s in names if is_attnc(s)), key=lambda s: (rank.get(s, 99), s)) +
            [s for s in names if not is_attnc(s)])


def time_chart(rows):
    blocks = [r for r in rows if r["kind"] == "block"]
    threads = sorted({r["threads"] for r in blocks})
    ts = sorted({r["T"] for r in blocks})
    if not blocks:
        return None
    ms = [r["min_ms"] for r in blocks]
    ylo, yhi = min(ms) * 0.8, max(ms) * 1.25
    pw, ph, left, top, gap, legend_w = 340, 330, 70, 64, 90, 230
    width = left + len(threads) * (pw + gap) - gap + 100 + legend_w
    height = top + ph + 60
    body = []
    for k, p in enumerate(threads):
        x0 = left + k * (pw + gap)
        pan = Panel(body, x0, top, pw, ph, ts, ylo, yhi, True,
                    f"{p} thread{'s' if p > 1 else ''}", "ms per call (min, log scale)")
        mine = [r for r in blocks if r["threads"] == p]
        # Peers first (underneath), attnc last (on top).
        for s in ordered_systems(mine)[::-1]:
            pts = [(r["T"], r["min_ms"]) for r in mine if r["system"] == s]
            tip = lambda t, v, s=s: f"{s}, T={t}, {p}t: {v:.4g} ms"
            if is_attnc(s):
                c, w = ATTNC_STYLE.get(s, ("#000000", 3.5))
                pan.line(pts, c, w, label=s.replace("attnc ", ""), cls="attnc", tip=tip)
            else:
                c, dash = peer_style(s)
                pan.line(pts, c, PEER_WIDTH, dash, tip=tip)
    lx = left + len(threads) * (pw + gap) - gap + 100
    legend(body, lx, top + 10, ordered_systems(blocks))
    return svg_doc(width, height, "GPT-2 small causal attention block, batch 1: "
                   "ms per call against T (lower is better)", body)


def speedup_chart(rows):
    blocks = [r for r in rows if r["kind"] == "block"]
    attnc = [r for r in blocks if is_attnc(r["system"])]
    if not attnc:
        return None
    threads = sorted({r["threads"] for r in blocks})
    ts = sorted({r["T"] for r in blocks})
    sp, over = {}, {}
    for r in attnc:
        b = best_peer(blocks, r)
        if b:
            sp.setdefault((r["system"], r["threads"]), []).append((r["T"], b["min_ms"] / r["min_ms"]))
            over[(r["system"], r["threads"], r["T"])] = b["system"]
    vals = [v for pts in sp.values() for _, v in pts] + [1.0]
    slo, shi = min(vals), max(vals)
    slo, shi = min(0.8, slo * 0.9), shi * 1.1
    pk = [r["pct_peak"] for r in blocks]
    plo, phi = 0.0, max(100.0, max(pk) * 1.05) if pk else 100.0
    pw, ph, left, top, gap, legend_w = 340, 250, 70, 64, 90, 230
    width = left + len(threads) * (pw + gap) - gap + 100 + legend_w
    height = top + 2 * ph + 110 + 50
    body = []
    for k, p in enumerate(threads):
        x0 = left + k * (pw + gap)
        pan = Panel(body, x0, top, pw, ph, ts, slo, shi, False,
                    f"speed-up over the best peer, {p} thread{'s' if p > 1 else ''}",
                    "x faster (higher is better)")
        pan.hline(1.0, "#555", "4,3")
        for (s, pp), pts in sorted(sp.items()):
            if pp == p:
                c, w = ATTNC_STYLE.get(s, ("#000000", 3.5))
                tip = lambda t, v, s=s: (f"{s}, T={t}, {p}t: {v:.2f}x over "
                                         f"{over[(s, p, t)]}")
                pan.line(pts, c, w, label=s.replace("attnc ", ""), cls="attnc", tip=tip)
        y1 = top + ph + 110
        pan2 = Panel(body, x0, y1, pw, ph, ts, plo, phi, False,
                     f"% of FP32 peak, {p} thread{'s' if p > 1 else ''}",
                     "% of the measured peak")
        mine = [r for r in blocks if r["threads"] == p]
        for s in ordered_systems(mine)[::-1]:
            pts = [(r["T"], r["pct_peak"]) for r in mine if r["system"] == s]
            tip = lambda t, v, s=s: f"{s}, T={t}, {p}t: {v:.0f}% of peak"
            if is_attnc(s):
                c, w = ATTNC_STYLE.get(s, ("#000000", 3.5))
                pan2.line(pts, c, w, label=s.replace("attnc ", ""), cls="attnc", tip=tip)
            else:
                c, dash = peer_style(s)
                pan2.line(pts, c, PEER_WIDTH, dash, tip=tip)
    lx = left + len(threads) * (pw + gap) - gap + 100
    used = legend(body, lx, top + 10, ordered_systems(blocks))
    body.append(f'<text x="{lx}" y="{top + 30 + used}" font-size="10" fill="#555">'
                f'best peer: avx512 path vs tuned and</text>')
    body.append(f'<text x="{lx}" y="{top + 43 + used}" font-size="10" fill="#555">'
                f'out-of-the-box peers; avx2 path vs</text>')
    body.append(f'<text x="{lx}" y="{top + 56 + used}" font-size="10" fill="#555">'
                f'AVX2-restricted peers</text>')
    return svg_doc(width, height, "attnc against the best peer of each T and thread count, "
                   "and % of the FP32 peak", body)


def draw(rows, svg_path, speedup_path):
    """Writes the two charts (skipping one without data); returns the paths
    written."""
    written = []
    for path, doc in ((svg_path, time_chart(rows)), (speedup_path, speedup_chart(rows))):
        if path and doc:
            with open(path, "w") as f:
                f.write(doc)
            written.append(path)
    return written


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", required=True, help="bench.csv written by bench_block.py")
    ap.add_argument("--svg", default="bench.svg", help="ms against T")
    ap.add_argument("--speedup-svg", default="bench-speedup.svg",
                    help="speed-up over the best peer and %% of peak against T")
    args = ap.parse_args()
    rows = read_rows(args.csv)
    written = draw(rows, args.svg, args.speedup_svg)
    if not written:
        sys.exit(f"bench_chart: {args.csv} has no block rows to draw")
    print("wrote " + " and ".join(written))


if __name__ == "__main__":
    main()
