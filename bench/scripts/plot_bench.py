#!/usr/bin/env python3
"""Plots of `tcfem bench` reports.

Usage: plot_bench.py [--out DIR] REPORT.json [REPORT.json ...]

Writes into DIR (default: the current directory):
  roofline_dram.png     TFLOP/s against FLOP per DRAM byte, under the measured DRAM and compute ceilings
  roofline_shared.png   TFLOP/s against FLOP per shared-memory byte, under the shared-memory ceiling
  gdofs_vs_degree.png   GDoF/s against the polynomial degree, one line per (variant, precision)
  gdofs_vs_dofs.png     GDoF/s against the number of DoFs, one colour per (variant, precision), a line per degree
Ceilings come from the reports' "ceilings" objects (`tcfem bench --ceilings`); without them the
rooflines show the measurements alone. Exit status 2 on unreadable or malformed input.
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROW_FIELDS = ["variant", "precision", "degree", "n_dofs", "gdof_per_s"]
# compute ceilings in the report (key -> label), drawn where measured
COMPUTE_CEILINGS = [
    ("fp64_fma_tflop_per_s", "FP64 FMA"),
    ("fp32_fma_tflop_per_s", "FP32 FMA"),
    ("dmma_m8n8k4_tflop_per_s", "DMMA m8n8k4"),
    ("dmma_m16n8k16_tflop_per_s", "DMMA m16n8k16"),
    ("tf32_mma_tflop_per_s", "TF32 mma"),
    ("hmma_f16_tflop_per_s", "HMMA f16"),
]


class InputError(Exception):
    pass


def number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def load_reports(paths):
    """(rows, ceilings): the rows of every report, each tagged with its source; the first ceilings found."""
    rows, ceilings = [], None
    for path in paths:
        try:
            with open(path) as f:
                report = json.load(f)
        except OSError as e:
            raise InputError(f"{path}: cannot read ({e.strerror})")
        except json.JSONDecodeError as e:
            raise InputError(f"{path}: not JSON ({e.msg} at line {e.lineno})")
        if not isinstance(report, dict) or report.get("command") != "bench" or not isinstance(report.get("rows"), list):
            raise InputError(f"{path}: not a tcfem bench report (needs \"command\": \"bench\" and a \"rows\" list)")
        for i, row in enumerate(report["rows"]):
            if not isinstance(row, dict):
                raise InputError(f"{path}: rows[{i}] is not an object")
            missing = [k for k in ROW_FIELDS if k not in row]
            if missing:
                raise InputError(f"{path}: rows[{i}] lacks {', '.join(missing)}")
            if not (number(row["degree"]) and number(row["n_dofs"]) and number(row["gdof_per_s"])):
                raise InputError(f"{path}: rows[{i}]: degree, n_dofs and gdof_per_s must be numbers")
            row = dict(row)
            row["_source"] = os.path.splitext(os.path.basename(path))[0]
            rows.append(row)
        c = report.get("ceilings")
        if c is not None and not isinstance(c, dict):
            raise InputError(f"{path}: \"ceilings\" must be an object or null")
        if c and ceilings is None:
            ceilings = c
    if not rows:
        raise InputError("the reports hold no rows")
    return rows, ceilings


def series_key(row, several_sources):
    key = f"{row['variant']} {row['precision']}"
    return f"{row['_source']}: {key}" if several_sources else key


def group(rows, several_sources):
    groups = {}
    for row in rows:
        groups.setdefault(series_key(row, several_sources), []).append(row)
    return groups


def colours(keys):
    cmap = plt.get_cmap("tab10")
    return {k: cmap(i % 10) for i, k in enumerate(sorted(keys))}


def roofline(rows, ceilings, x_field, roof_field, roof_label, x_label, title, path, several_sources):
    fig, ax = plt.subplots(figsize=(8, 5.5))
    points = [r for r in rows if number(r.get(x_field)) and number(r.get("tflop_per_s")) and r[x_field] > 0
              and r["tflop_per_s"] > 0]
    groups = group(points, several_sources)
    col = colours(groups)
    xs = [r[x_field] for r in points]
    x_lo = min(xs) / 4 if xs else 0.1
    x_hi = max(xs) * 4 if xs else 100.0
    if ceilings:
        roof = ceilings.get(roof_field)
        peaks = [(ceilings[k], label) for k, label in COMPUTE_CEILINGS if number(ceilings.get(k)) and ceilings[k] > 0]
        if number(roof) and roof > 0:
            top = max([p for p, _ in peaks], default=roof * x_hi)
            x_hi = max(x_hi, 4 * top / roof)
            ax.plot([x_lo, top / roof], [roof * x_lo, top], color="black", lw=1.5)
            ax.text(x_lo * 1.2, roof * x_lo * 1.6, f"{roof_label} {roof:.3g} TB/s", rotation=0, fontsize=8)
        label_y = 0.0
        for peak, label in sorted(peaks):
            start = peak / roof if number(roof) and roof > 0 else x_lo
            ax.plot([start, x_hi], [peak, peak], color="gray", lw=1, ls="--")
            label_y = max(peak, label_y * 1.35)  # keep labels of close ceilings apart
            ax.text(x_hi, label_y, f" {label} {peak:.3g}", va="center", fontsize=8)
    for key, rs in sorted(groups.items()):
        rs = sorted(rs, key=lambda r: (r["degree"], r["n_dofs"]))
        ax.plot([r[x_field] for r in rs], [r["tflop_per_s"] for r in rs], "o", color=col[key], label=key, ms=5)
        largest = {}  # one degree label per point group: at the largest size
        for r in rs:
            largest[r["degree"]] = r
        for r in largest.values():
            ax.annotate(f"{r['degree']}", (r[x_field], r["tflop_per_s"]), fontsize=7, xytext=(3, 3),
                        textcoords="offset points")
    if not points:
        ax.text(0.5, 0.5, "no rows with FLOP and byte counts", transform=ax.transAxes, ha="center")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    ax.set_xlabel(x_label)
    ax.set_ylabel("TFLOP/s")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    if groups:
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def gdofs_vs_degree(rows, path, several_sources):
    fig, ax = plt.subplots(figsize=(8, 5))
    several_sizes = len({r.get("target_dofs", r["n_dofs"]) for r in rows}) > 1
    lines = {}
    for r in rows:
        key = series_key(r, several_sources)
        if several_sizes:
            key += f", {r.get('target_dofs', r['n_dofs']):.3g} DoFs"
        lines.setdefault(key, []).append(r)
    for key, rs in sorted(lines.items()):
        rs = sorted(rs, key=lambda r: r["degree"])
        ax.plot([r["degree"] for r in rs], [r["gdof_per_s"] for r in rs], "o-", label=key)
    ax.set_xlabel("polynomial degree k")
    ax.set_ylabel("GDoF/s")
    ax.set_title("operator throughput by degree")
    ax.set_xticks(sorted({r["degree"] for r in rows}))
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def gdofs_vs_dofs(rows, path, several_sources):
    fig, ax = plt.subplots(figsize=(8, 5))
    groups = group(rows, several_sources)
    col = colours(groups)
    for key, rs in sorted(groups.items()):
        for i, degree in enumerate(sorted({r["degree"] for r in rs})):
            line = sorted((r for r in rs if r["degree"] == degree), key=lambda r: r["n_dofs"])
            ax.plot([r["n_dofs"] for r in line], [r["gdof_per_s"] for r in line], "o-", color=col[key],
                    label=key if i == 0 else None, ms=4)
            ax.annotate(f"k={degree}", (line[-1]["n_dofs"], line[-1]["gdof_per_s"]), fontsize=7, xytext=(3, 0),
                        textcoords="offset points")
    ax.set_xscale("log")
    ax.set_xlabel("DoFs")
    ax.set_ylabel("GDoF/s")
    ax.set_title("operator throughput by problem size")
    ax.set_ylim(bottom=0)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv):
    parser = argparse.ArgumentParser(description="Plot tcfem bench reports (rooflines and throughput).")
    parser.add_argument("reports", nargs="+", metavar="REPORT.json")
    parser.add_argument("--out", default=".", metavar="DIR", help="output folder (created if missing)")
    args = parser.parse_args(argv)
    try:
        rows, ceilings = load_reports(args.reports)
        if os.path.exists(args.out) and not os.path.isdir(args.out):
            raise InputError(f"--out {args.out}: not a folder")
        os.makedirs(args.out, exist_ok=True)
    except InputError as e:
        print(f"plot_bench.py: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"plot_bench.py: error: --out {args.out}: {e.strerror}", file=sys.stderr)
        return 2
    several = len({r["_source"] for r in rows}) > 1
    out = {name: os.path.join(args.out, name + ".png")
           for name in ["roofline_dram", "roofline_shared", "gdofs_vs_degree", "gdofs_vs_dofs"]}
    roofline(rows, ceilings, "arithmetic_intensity", "dram_tb_per_s", "DRAM", "FLOP per DRAM byte",
             "DRAM roofline", out["roofline_dram"], several)
    roofline(rows, ceilings, "shared_intensity", "shared_load_tb_per_s", "shared memory", "FLOP per shared-memory byte",
             "shared-memory roofline", out["roofline_shared"], several)
    gdofs_vs_degree(rows, out["gdofs_vs_degree"], several)
    gdofs_vs_dofs(rows, out["gdofs_vs_dofs"], several)
    for path in out.values():
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
