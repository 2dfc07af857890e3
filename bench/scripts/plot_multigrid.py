#!/usr/bin/env python3
"""Plots of `tcfem solve --json` reports of multigrid solves (--precond mg or --solver mg|fmg).

Usage: plot_multigrid.py [--out DIR] REPORT.json [REPORT.json ...]

Writes into DIR (default: the current directory):
  convergence.png   relative residual against the iteration, one line per report
  time_split.png    seconds per V-cycle component (smoother, operator, transfer, vector ops,
                    coarse) per level, stacked, one group of bars per report
Reports without a "multigrid" object (Jacobi-preconditioned solves) or without per-level times
(device solves run without --mg-timing) appear in convergence.png only; time_split.png is not
written when no report has them. Exit status 2 on unreadable or malformed input.
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COMPONENTS = ["smoother", "operator", "transfer", "vector_ops", "coarse"]


class InputError(Exception):
    pass


def label(report):
    c = report.get("config", {})
    text = f"{c.get('dim')}D {c.get('disc')} Q{c.get('degree')} {c.get('solver')}+{c.get('preconditioner')}"
    if "multigrid" in report:
        text += f" {c.get('smoother')} {c.get('mg_precision')}"
        if c.get("mg_start") == "fmg":
            text += " from FMG"  # residual_history[0] is the full-multigrid start's residual
    return text + f" ({report.get('n_dofs')} DoFs)"


def load(path):
    try:
        with open(path) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: {e}")
    if not isinstance(report, dict) or not isinstance(report.get("residual_history"), list):
        raise InputError(f"{path}: not a tcfem solve report (no residual_history)")
    mg = report.get("multigrid")
    if mg is not None:
        levels = mg.get("levels")
        if not isinstance(levels, list) or not all(
                isinstance(lev.get("times"), dict) and all(k in lev["times"] for k in COMPONENTS) for lev in levels):
            raise InputError(f"{path}: malformed multigrid.levels")
    return report


def plot_convergence(reports, out):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for r in reports:
        h = r["residual_history"]
        ax.semilogy(range(len(h)), h, marker="o", ms=3, label=label(r))
    ax.set_xlabel("iteration")
    ax.set_ylabel("relative residual")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "convergence.png"), dpi=120)
    plt.close(fig)


def timed(report):
    """Whether the report carries per-level component times (device solves need --mg-timing)."""
    return any(float(lev["times"][comp]) > 0 for lev in report["multigrid"]["levels"] for comp in COMPONENTS)


def plot_time_split(reports, paths, out):
    mg_reports = []
    for r, path in zip(reports, paths):
        if "multigrid" not in r:
            continue
        if not timed(r):
            print(f"plot_multigrid.py: {path}: no per-level times (a device solve without --mg-timing); "
                  "left out of time_split.png", file=sys.stderr)
            continue
        mg_reports.append(r)
    if not mg_reports:
        print("plot_multigrid.py: no report with per-level times: time_split.png not written", file=sys.stderr)
        return
    fig, ax = plt.subplots(figsize=(8, 4.5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    x = 0
    ticks, names = [], []
    for n, r in enumerate(mg_reports):
        c = r.get("config", {})
        ax.text(x, 1.0, f"({n + 1}) Q{c.get('degree')} {c.get('smoother')} {c.get('mg_precision')}", fontsize=7,
                transform=ax.get_xaxis_transform(), va="bottom")
        for lev in reversed(r["multigrid"]["levels"]):
            bottom = 0.0
            for i, comp in enumerate(COMPONENTS):
                v = float(lev["times"][comp])
                ax.bar(x, v, bottom=bottom, color=colors[i % len(colors)], label=comp if x == 0 else None)
                bottom += v
            ticks.append(x)
            names.append(f"L{lev['level']}")
            x += 1
        x += 1
    ax.set_xticks(ticks)
    ax.set_xticklabels(names, fontsize=7)
    ax.set_ylabel("seconds in the V-cycles")
    ax.set_title("V-cycle time per level and component", fontsize=9, pad=14)
    if mg_reports:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "time_split.png"), dpi=120)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=".")
    p.add_argument("reports", nargs="+")
    a = p.parse_args()
    try:
        reports = [load(path) for path in a.reports]
    except InputError as e:
        print(f"plot_multigrid.py: error: {e}", file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    plot_convergence(reports, a.out)
    plot_time_split(reports, a.reports, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
