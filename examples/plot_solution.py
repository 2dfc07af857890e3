#!/usr/bin/env python3
"""Renders a 2D solution written by tcfem (VTU, VTK Lagrange quadrilaterals) as a PNG: the field
on every cell's node lattice, split into triangles, with the cell edges drawn.

Usage: plot_solution.py SOLUTION.vtu OUT.png [--field u] [--title TEXT]
(Debian's python3 with python3-meshio and python3-matplotlib, as scripts/setup installs them)
"""
import argparse
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import matplotlib.tri as mtri
import meshio
import numpy as np


def lattice_triangulation(m, name):
    """The triangles of every cell's node lattice of a 2D mesh of Lagrange quadrilaterals (tcfem
    writes each cell's points in lexicographic order of its lattice); returns (triangulation,
    cells, points per cell, degree)."""
    n_cells = sum(len(b.data) for b in m.cells)
    per_cell = len(m.points) // n_cells
    k = int(round(math.sqrt(per_cell))) - 1
    if (k + 1) ** 2 != per_cell or abs(m.points[:, 2]).max() > 0:
        raise SystemExit(f"{name}: not a 2D mesh of Lagrange quadrilaterals")
    tris = []
    for c in range(n_cells):
        base = c * per_cell
        for j in range(k):
            for i in range(k):
                a = base + j * (k + 1) + i
                tris += [[a, a + 1, a + k + 2], [a, a + k + 2, a + k + 1]]
    return mtri.Triangulation(m.points[:, 0], m.points[:, 1], np.array(tris)), n_cells, per_cell, k


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("vtu")
    ap.add_argument("png")
    ap.add_argument("--field", default="u")
    ap.add_argument("--title", default=None)
    args = ap.parse_args()
    m = meshio.read(args.vtu)
    if args.field not in m.point_data:
        raise SystemExit(f"{args.vtu}: no point field {args.field!r} (fields: {', '.join(m.point_data)})")
    tri, n_cells, per_cell, k = lattice_triangulation(m, args.vtu)
    x, y = m.points[:, 0], m.points[:, 1]
    fig, ax = plt.subplots(figsize=(5.2, 4.4))
    tc = ax.tripcolor(tri, m.point_data[args.field], shading="gouraud", cmap="viridis")
    fig.colorbar(tc, ax=ax, label=args.field)
    for c in range(n_cells):  # the curved cell edges through the boundary nodes of the lattice
        idx = [c * per_cell + i for i in range(k + 1)]
        idx += [c * per_cell + j * (k + 1) + k for j in range(1, k + 1)]
        idx += [c * per_cell + k * (k + 1) + i for i in range(k - 1, -1, -1)]
        idx += [c * per_cell + j * (k + 1) for j in range(k - 1, -1, -1)]
        ax.plot(x[idx], y[idx], color="white", linewidth=0.4, alpha=0.7)
    ax.set_aspect("equal")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    if args.title:
        ax.set_title(args.title, fontsize=10)
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)


if __name__ == "__main__":
    main()
