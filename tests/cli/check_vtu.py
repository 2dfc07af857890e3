#!/usr/bin/python3
"""Checks a VTU file written by tcfem against the exact solution prod_i sin(pi x_i).

Usage: check_vtu.py FILE DIM FIELD TOL

Reads FILE with meshio, requires Lagrange hexahedra (DIM 3) or quadrilaterals (DIM 2), a point
field FIELD, max |FIELD(x) - prod_{i<DIM} sin(pi x_i)| <= TOL over all points, and positively
oriented cells (corners 0,1,3(,4) of every cell form a right-handed frame). Prints one line with
the number of points and the max error; exits 0 on success, 1 with a message otherwise.
"""
import sys

import meshio
import numpy as np

CELL_TYPES = {2: "VTK_LAGRANGE_QUADRILATERAL", 3: "VTK_LAGRANGE_HEXAHEDRON"}


def fail(message):
    print(f"check_vtu: {message}", file=sys.stderr)
    sys.exit(1)


def check_orientation(points, cells, dim):
    """Fails unless every cell's corners (VTK order) span a positively oriented frame."""
    n_corners = 2**dim
    if cells.shape[1] < n_corners:
        fail(f"cells have {cells.shape[1]} points, fewer than the {n_corners} corners")
    p0 = points[cells[:, 0]]
    e1 = points[cells[:, 1]] - p0  # corner 1: +x
    e2 = points[cells[:, 3]] - p0  # corner 3: +y
    if dim == 2:
        measure = e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]
    else:
        e3 = points[cells[:, 4]] - p0  # corner 4: +z
        measure = np.einsum("ij,ij->i", np.cross(e1, e2), e3)
    bad = np.flatnonzero(measure <= 0.0)
    if bad.size:
        fail(f"{bad.size} of {len(cells)} cells are not positively oriented "
             f"(first: cell {bad[0]}, signed measure {measure[bad[0]]:.3e})")


def main(argv):
    if len(argv) != 5:
        fail("usage: check_vtu.py FILE DIM FIELD TOL")
    path, dim_arg, field, tol_arg = argv[1:]
    try:
        dim = int(dim_arg)
        tol = float(tol_arg)
    except ValueError:
        fail(f"DIM must be an integer and TOL a number, got '{dim_arg}' and '{tol_arg}'")
    if dim not in CELL_TYPES:
        fail(f"DIM must be 2 or 3, got {dim}")

    try:
        mesh = meshio.read(path, file_format="vtu")
    except Exception as e:  # meshio raises many exception types on bad input
        fail(f"cannot read '{path}': {e}")

    points = np.asarray(mesh.points, dtype=float)
    if points.ndim != 2 or len(points) == 0:
        fail(f"'{path}' has no points")
    if not mesh.cells:
        fail(f"'{path}' has no cells")
    for block in mesh.cells:
        if block.type != CELL_TYPES[dim]:
            fail(f"cell block type is {block.type}, expected {CELL_TYPES[dim]}")
        cells = np.asarray(block.data)
        if cells.size and (cells.min() < 0 or cells.max() >= len(points)):
            fail("cell connectivity refers to points that do not exist")
        check_orientation(points, cells, dim)

    if field not in mesh.point_data:
        fail(f"point field '{field}' not found (have: {', '.join(mesh.point_data) or 'none'})")
    values = np.asarray(mesh.point_data[field], dtype=float).reshape(len(points), -1)
    if values.shape[1] != 1:
        fail(f"point field '{field}' has {values.shape[1]} components, expected 1")

    exact = np.prod(np.sin(np.pi * points[:, :dim]), axis=1)
    error = np.abs(values[:, 0] - exact)
    max_error = float(np.max(error)) if np.all(np.isfinite(error)) else float("inf")
    print(f"points {len(points)} max_error {max_error:.6e}")
    if not max_error <= tol:
        fail(f"max error {max_error:.6e} exceeds tolerance {tol:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
