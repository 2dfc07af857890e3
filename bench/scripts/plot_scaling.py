#!/usr/bin/env python3
"""Weak and strong scaling efficiency of the distributed apply and full solve (and, where the file
has it, the full solve with the vertex-patch smoother: solve_patches) from a measurements file
(docs/notebook/scaling_h200x4.json): prints the table and, with --plot, draws it.

Efficiency: weak t_1 / t_P (the same DoFs per GPU), strong t_1 / (P t_P) (the same problem). Where
the P = 2 runs come from another lease than the P = 1 run of the table, the file gives that lease's
one-GPU times (one_gpu_2) and the 2-GPU efficiency is taken against them.

Usage: plot_scaling.py MEASUREMENTS.json [--plot FILE.png]; exit status 2 on unreadable input.
"""
import argparse
import json
import sys


def efficiencies(section, kind, gpus):
    out = {}
    for k, times in section[kind].items():
        base = times[0]
        effs = []
        for p, t in zip(gpus, times):
            b = base
            if p == 2 and "one_gpu_2" in section:
                b = section["one_gpu_2"][kind][k]
            effs.append(b / t if kind == "weak" else b / (p * t))
        out[k] = effs
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("measurements")
    ap.add_argument("--plot")
    args = ap.parse_args()
    try:
        with open(args.measurements) as f:
            data = json.load(f)
        gpus = data["gpus"]
        sections = ["apply", "solve"] + (["solve_patches"] if "solve_patches" in data else [])
        table = {(what, kind): efficiencies(data[what], kind, gpus)
                 for what in sections for kind in ("weak", "strong")}
    except (OSError, ValueError, KeyError) as e:
        print(f"plot_scaling: {args.measurements}: {e}", file=sys.stderr)
        return 2
    for (what, kind), effs in table.items():
        for k, e in effs.items():
            print(f"{what:5s} {kind:6s} k={k}: " + "  ".join(f"{p} GPUs {100 * x:5.1f}%" for p, x in zip(gpus, e)))
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
        targets = {"apply": {"weak": 0.95, "strong": 0.80}, "solve": {"weak": 0.90, "strong": 0.80}}
        styles = {"apply": "-o", "solve": "--s", "solve_patches": ":^"}
        labels = {"apply": "apply", "solve": "solve, Chebyshev", "solve_patches": "solve, patches"}
        for ax, kind in zip(axes, ("weak", "strong")):
            for what in sections:
                for k, e in table[(what, kind)].items():
                    ax.plot(gpus, [100 * x for x in e], styles[what], label=f"{labels[what]}, k = {k}")
            for what in ("apply", "solve"):
                ax.axhline(100 * targets[what][kind], color="gray", lw=0.8, ls="-" if what == "apply" else "--")
            ax.set_xticks(gpus)
            ax.set_xlabel("GPUs (H200)")
            ax.set_title(f"{kind} scaling")
            ax.grid(alpha=0.3)
        axes[0].set_ylabel("efficiency [%] (gray: targets, apply solid, solve dashed)")
        axes[1].legend(fontsize=7, ncol=2)
        fig.suptitle(data.get("device", "")[:90], fontsize=8)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
