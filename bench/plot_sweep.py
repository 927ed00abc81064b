# SPDX-License-Identifier: MIT
"""bench/plot_sweep.py - draws bench/sweep.py's CSV with matplotlib: for each family, one row of
three panels per op and sweep (time; achieved GB/s, or TFLOP/s for matmul, gemm, attention and conv, with the copy
ceiling as a line; gpuops' speedup over PyTorch eager and over torch.compile), float32 solid and bfloat16
dashed; and one overview of gpuops against the best of eager and torch.compile over every case.
Writes PNGs and a Markdown summary: per family the cases, and every case at >= 2^20 elements or of
an odd shape where gpuops runs below 0.90x the best of eager and torch.compile.

usage: python3 bench/plot_sweep.py CSV [--out docs/sweep] [--summary docs/sweep/summary.md]
"""
import argparse
import collections
import csv
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator  # noqa: E402

COLORS = {"gpuops": "#d62728", "torch-eager": "#1f77b4", "torch-compile": "#2ca02c", "copy": "#7f7f7f"}
STYLE = {"float32": "-", "bfloat16": "--", "int32": ":", "int64": "-."}
XLABEL = {"n": "elements", "cols": "row length (2^24 elements in all)", "shape": "elements (odd shapes, m x n x k for matmul: m)",
          "square": "m = n = k", "gemv": "m (matrix-vector products, labelled m x n x k)", "skinny": "m (x 4096 x 4096)",
          "transformer": "m n k / 2^24 (labelled m x n x k)", "decode": "m (x 4096 x 4096)",
          "seqlen": "sequence length (batch x seqlen = 16384 tokens)",
          "resnet": "GFLOP per call (labelled N x H x W x C-K RxS/stride)"}
POINTS_ONLY = {"shape", "gemv", "transformer", "resnet"}
ROWS_PER_PAGE = 6
COPY_LABEL = "copy (tensor.copy_)"
THRESHOLD = 0.90


def load(path):
    with open(path) as fh:
        rows = [r for r in csv.DictReader(fh) if r["time_us"]]
    for r in rows:
        for k in ("time_us", "gb_per_s", "x"):
            r[k] = float(r[k])
        r["tflops"] = float(r["tflops"]) if r["tflops"] else 0.0
        r["n"] = int(r["n"])
    return rows


def by_point(rows):
    """(family, op, dtype, sweep, shape) -> {version: row}."""
    out = collections.defaultdict(dict)
    for r in rows:
        out[(r["family"], r["op"], r["dtype"], r["sweep"], r["shape"])][r["version"]] = r
    return out


def odd(r):
    """An odd size or shape: not a power of two, or a sweep of odd shapes."""
    n = r["n"]
    return r["sweep"] in ("shape", "gemv", "skinny", "decode") or n & (n - 1) != 0 or (r["sweep"] == "cols" and int(r["x"]) & (int(r["x"]) - 1))


NO_WORK_US = 0.5  # a PyTorch time below this on a case that moves a megabyte did no work (a view)


def ratios(points, no_work=None):
    """[(point key, gpuops row, eager time, compile time, best ratio)] for every point with gpuops
    and at least one PyTorch version; the points where PyTorch did no work (x.t().contiguous() of
    one row or column is a view) go to `no_work` instead."""
    out = []
    for key, v in points.items():
        g = v.get("gpuops")
        theirs = [v[k]["time_us"] for k in ("torch-eager", "torch-compile") if k in v]
        if not g or not theirs:
            continue
        if min(theirs) < NO_WORK_US and g["bytes"] >= (1 << 20):
            if no_work is not None:
                no_work.append((key, g, min(theirs)))
            continue
        e = v["torch-eager"]["time_us"] if "torch-eager" in v else None
        c = v["torch-compile"]["time_us"] if "torch-compile" in v else None
        out.append((key, g, e, c, min(theirs) / g["time_us"]))
    return out


def ratio_axis(ax):
    """A log2 axis of ratios with plain labels (0.5, 0.9, 1, 2, ...)."""
    ax.set_yscale("log", base=2)
    lo, hi = ax.get_ylim()
    fine = (0.5, 0.75, 0.9, 1, 1.25, 1.5, 2) if hi / lo < 6 else ()
    ticks = sorted({t for t in (1 / 64, 1 / 16, 1 / 4, 1, 4, 16, 64) + fine if lo <= t <= hi}) or [1]
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))


def draw_family(fam, rows, copy_peak, copy_rows, out_dir):
    groups = collections.OrderedDict()
    for r in rows:
        groups.setdefault((r["op"], r["sweep"]), []).append(r)
    keys = list(groups)
    files = []
    matmul = fam in ("matmul", "gemm", "attention", "conv")  # rated in TFLOP/s
    for page in range(0, len(keys), ROWS_PER_PAGE):
        chunk = keys[page:page + ROWS_PER_PAGE]
        fig, axes = plt.subplots(len(chunk), 3, figsize=(15, 3.1 * len(chunk)), squeeze=False)
        for row_axes, (op, sweep) in zip(axes, chunk):
            rs = groups[(op, sweep)]
            ax_t, ax_r, ax_s = row_axes
            lines = collections.defaultdict(list)
            for r in rs:
                lines[(r["version"], r["dtype"])].append(r)
            for (ver, dt), pts in sorted(lines.items()):
                pts.sort(key=lambda r: r["x"])
                xs = [r["x"] for r in pts]
                points_only = sweep in POINTS_ONLY  # separate shapes: no line between them
                kw = dict(color=COLORS.get(ver, "k"), ls="none" if points_only else STYLE.get(dt, "-"),
                          marker="o" if points_only else ".", ms=5 if points_only else 4, lw=1.2)
                ax_t.plot(xs, [r["time_us"] for r in pts], label=f"{ver} {dt}", **kw)
                ax_r.plot(xs, [r["tflops"] if matmul else r["gb_per_s"] for r in pts], **kw)
                if points_only and ver == "gpuops":
                    for r in pts:
                        ax_t.annotate(r["shape"], (r["x"], r["time_us"]), fontsize=6, xytext=(3, 3),
                                      textcoords="offset points")
            if not matmul and copy_peak:
                ax_r.axhline(copy_peak, color=COLORS["copy"], lw=1, ls=":", label=f"{COPY_LABEL} {copy_peak:.0f} GB/s")
            if sweep == "n" and op != "copy":  # the copy of the same number of elements, size by size
                for dt in sorted({r["dtype"] for r in rs} & {r["dtype"] for r in copy_rows}):
                    cp = sorted((r["x"], r["gb_per_s"]) for r in copy_rows if r["dtype"] == dt)
                    ax_r.plot(*zip(*cp), color=COLORS["copy"], ls=STYLE.get(dt, "-"), lw=0.8, label=f"copy {dt}")
            pts = collections.defaultdict(dict)
            for r in rs:
                pts[(r["dtype"], r["shape"])][r["version"]] = r
            for base, mk in (("torch-eager", "o"), ("torch-compile", "s")):
                for dt in sorted({d for d, _ in pts}):
                    xy = sorted((v["gpuops"]["x"], v[base]["time_us"] / v["gpuops"]["time_us"])
                                for (d, _), v in pts.items() if d == dt and "gpuops" in v and base in v)
                    if xy:
                        ax_s.plot(*zip(*xy), color=COLORS[base], ls="none" if sweep in POINTS_ONLY else STYLE.get(dt, "-"),
                                  marker=mk, ms=4 if sweep in POINTS_ONLY else 3, lw=1,
                                  label=f"vs {base.replace('torch-', '')} {dt}")
            ax_s.axhline(1.0, color="k", lw=0.8)
            ax_s.axhline(THRESHOLD, color="k", lw=0.8, ls=":")
            for ax in row_axes:
                ax.set_xscale("log", base=2)
                ax.grid(True, which="both", alpha=0.3)
                ax.set_xlabel(XLABEL.get(sweep, sweep))
            ax_t.set_yscale("log")
            ax_t.set_ylabel("time per call (us)")
            ax_r.set_ylabel("TFLOP/s" if matmul else "GB/s (bytes read + written)")
            ax_s.set_ylabel("speedup of gpuops")
            ax_t.set_title(f"{fam}: {op} ({sweep})", fontsize=10)
            ratio_axis(ax_s)
            for ax in row_axes:
                if ax.get_legend_handles_labels()[0]:
                    ax.legend(fontsize=7)
        fig.tight_layout()
        name = f"sweep_{fam}" + (f"_{page // ROWS_PER_PAGE + 1}" if len(keys) > ROWS_PER_PAGE else "") + ".png"
        fig.savefig(os.path.join(out_dir, name), dpi=72)
        plt.close(fig)
        files.append(name)
    return files


def draw_overview(rat, device, out_dir):
    fig, ax = plt.subplots(figsize=(11, 5))
    fams = sorted({k[0] for k, *_ in rat})
    cmap = plt.get_cmap("tab10")
    for i, f in enumerate(fams):
        xy = [(g["bytes"], r) for k, g, e, c, r in rat if k[0] == f]
        ax.scatter([x for x, _ in xy], [r for _, r in xy], s=9, color=cmap(i), label=f)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.axhline(THRESHOLD, color="k", lw=0.8, ls=":")
    ax.set_xscale("log", base=2)
    ratio_axis(ax)
    ax.set_xlabel("bytes moved per call")
    ax.set_ylabel("best PyTorch time / gpuops time")
    ax.set_title(f"gpuops against the best of PyTorch eager and torch.compile, every case ({device})", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "sweep_overview.png"), dpi=72)
    plt.close(fig)
    return "sweep_overview.png"


def summary(rows, rat, files, device, no_work=()):
    lines = [f"Device: {device}. {len(rat)} cases with gpuops and PyTorch timed side by side.", ""]
    lines += ["| family | cases | gpuops >= 1.0x best | >= 0.90x | below 0.90x at >= 2^20 elements or odd shapes |",
              "| --- | ---: | ---: | ---: | ---: |"]
    short = []
    for f in sorted({k[0] for k, *_ in rat}):
        rs = [x for x in rat if x[0][0] == f]
        bad = [x for x in rs if x[4] < THRESHOLD and (x[1]["n"] >= (1 << 20) or odd(x[1]))]
        short += bad
        lines.append(f"| {f} | {len(rs)} | {sum(x[4] >= 1 for x in rs)} | {sum(x[4] >= THRESHOLD for x in rs)} | {len(bad)} |")
    lines += ["", "Cases below 0.90x of the best of eager and torch.compile (>= 2^20 elements or odd shapes):", ""]
    lines += ["| family | op | dtype | shape | gpuops us | eager us | compile us | gpuops / best |",
              "| --- | --- | --- | --- | ---: | ---: | ---: | ---: |"]
    for (f, op, dt, sw, shape), g, e, c, r in sorted(short, key=lambda x: x[4]):
        es = f"{e:.1f}" if e else "-"
        cs = f"{c:.1f}" if c else "-"
        lines.append(f"| {f} | {op} | {dt} | {shape} | {g['time_us']:.1f} | {es} | {cs} | {r:.2f}x |")
    mism = [r for r in rows if r["version"] == "gpuops" and r["check"] not in ("ok", "n/a", "")]
    if mism:
        lines += ["", f"Results that disagree with eager ({len(mism)}):", ""]
        lines += [f"- {r['family']} {r['op']} {r['dtype']} {r['shape']}: {r['check']}" for r in mism]
    if no_work:
        lines += ["", "Left out: cases where PyTorch moved nothing (" + "; ".join(
            f"{k[1]} {k[2]} {k[4]}: PyTorch {t:.2f} us, gpuops {g['time_us']:.1f} us" for k, g, t in no_work) + ")."]
    fused = [x for x in rat if x[0][1] == "add_mul_exp" and x[2]]
    if fused:
        worst = min(fused, key=lambda x: x[2] / x[1]["time_us"])
        lines += ["", f"Fused chain add_mul_exp against eager (three kernels): {min(x[2] / x[1]['time_us'] for x in fused):.2f}x "
                  f"to {max(x[2] / x[1]['time_us'] for x in fused):.2f}x (lowest at {worst[0][2]} {worst[0][4]})."]
    lines += ["", "Plots: " + ", ".join(files), ""]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--out", default="docs/sweep")
    ap.add_argument("--summary", default=None, help="where to write the Markdown summary (default: OUT/summary.md)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows = load(args.csv)
    for r in rows:
        r["bytes"] = int(r["bytes"]) if r.get("bytes") else 0
    device = rows[0]["device"] if rows else "?"
    copy_rows = [r for r in rows if r["version"] == "copy"]
    big = [r for r in copy_rows if r["n"] >= (1 << 24)]
    copy_peak = max((r["gb_per_s"] for r in big), default=None)
    global COPY_LABEL
    if big and max(big, key=lambda r: r["gb_per_s"])["timing"] == "graph":
        COPY_LABEL = "tensor.copy_ (graph-timed)"
    points = by_point(rows)
    no_work = []
    rat = ratios(points, no_work)
    skip = {k for k, _, _ in no_work}
    rows = [r for r in rows if (r["family"], r["op"], r["dtype"], r["sweep"], r["shape"]) not in skip]
    files = []
    for fam in ["elementwise", "reduce", "scan", "softmax", "transpose", "matmul", "norm", "gemm", "attention", "conv"]:
        fr = [r for r in rows if r["family"] == fam]
        if fr:
            files += draw_family(fam, fr, copy_peak, copy_rows, args.out)
    if rat:
        files.append(draw_overview(rat, device, args.out))
    text = summary(rows, rat, files, device, no_work)
    path = args.summary or os.path.join(args.out, "summary.md")
    with open(path, "w") as fh:
        fh.write(text)
    print(text)
    print(f"wrote {len(files)} PNGs to {args.out} and {path}")


if __name__ == "__main__":
    main()
