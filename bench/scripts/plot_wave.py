#!/usr/bin/env python3
"""Renders frames of a 2D `tcfem wave` run (its VTU time series, read through the .pvd collection)
as one PNG: a field (default p) on every cell's node lattice, one panel per chosen time, with a
common symmetric color scale; and, given the run's JSON report, its energy history.

Usage: plot_wave.py RUN.pvd OUT.png [--field p] [--times 1,3,5] [--report RUN.json]
(Debian's python3 with python3-meshio and python3-matplotlib, as scripts/setup installs them)
"""
import argparse
import json
import os
import sys
import xml.etree.ElementTree as ET

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import meshio
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
from plot_solution import lattice_triangulation  # noqa: E402  (the same lattice of Lagrange cells)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pvd")
    ap.add_argument("png")
    ap.add_argument("--field", default="p")
    ap.add_argument("--times", default=None, help="comma-separated times (the nearest frames); default: 3 frames")
    ap.add_argument("--report", default=None)
    args = ap.parse_args()
    folder = os.path.dirname(os.path.abspath(args.pvd))
    frames = [(float(d.get("timestep")), os.path.join(folder, d.get("file")))
              for d in ET.parse(args.pvd).getroot().findall(".//DataSet")]
    if not frames:
        raise SystemExit(f"{args.pvd}: no frames")
    if args.times:
        wanted = [float(t) for t in args.times.split(",")]
    else:
        wanted = [frames[len(frames) * i // 3][0] for i in (1, 2)] + [frames[-1][0]]
    chosen = [min(frames, key=lambda f: abs(f[0] - t)) for t in wanted]
    meshes = [(t, meshio.read(path)) for t, path in chosen]
    vmax = max(np.abs(m.point_data[args.field]).max() for _, m in meshes) or 1.0
    rows = len(meshes) + (1 if args.report else 0)
    fig, axes = plt.subplots(rows, 1, figsize=(9, 1.9 * rows), squeeze=False)
    for ax, (t, m) in zip(axes[:, 0], meshes):
        tc = ax.tripcolor(lattice_triangulation(m, f"{args.pvd} at t = {t}")[0], m.point_data[args.field], shading="gouraud", cmap="RdBu_r",
                          vmin=-vmax, vmax=vmax)
        ax.set_title(f"{args.field} at t = {t:.3g}", fontsize=9)
        ax.set_aspect("equal")
        fig.colorbar(tc, ax=ax, pad=0.01)
    if args.report:
        with open(args.report) as f:
            h = np.array(json.load(f)["energy"]["history"])
        ax = axes[-1, 0]
        ax.plot(h[:, 0], h[:, 1])
        ax.set_xlabel("t")
        ax.set_ylabel("energy")
        ax.set_title("energy (the seafloor puts it in, the absorbing sides take it out)", fontsize=9)
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)


if __name__ == "__main__":
    main()
