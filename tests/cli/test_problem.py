#!/usr/bin/env python3
"""End-to-end tests of `tcfem solve --problem FILE.json`: the user's problem on a mapped box with a
variable coefficient and mixed boundary data, its reports, and bad problem files.

Usage: test_problem.py TCFEM_BINARY [GMSH_MESH_WRITER]
(with the second argument, the build reads Gmsh meshes and they are tested too)
"""
import json
import math
import os
import subprocess
import sys
import tempfile

TCFEM = sys.argv[1]
MESH_WRITER = sys.argv[2] if len(sys.argv) > 2 else None
failures = []


def run(args, timeout=600):
    return subprocess.run([TCFEM] + args, capture_output=True, text=True, timeout=timeout)


def check(cond, what):
    if not cond:
        failures.append(what)


U = "exp(x)*sin(y)"
ANNULUS = {
    "dim": 2,
    "degree": 2,
    "geometry": {"box": [[0, 1], [0, 1]], "cells": [4, 4],
                 "map": ["(1+x)*cos(pi/2*y)", "(1+x)*sin(pi/2*y)"]},
    "coefficient": "1 + x*y",
    "rhs": "-(y*exp(x)*sin(y) + x*exp(x)*cos(y))",
    "dirichlet": {"xmin": U, "ymax": U},
    "neumann": {"xmax": "(1+x*y)*exp(x)*(x*sin(y) + y*cos(y))/2", "ymin": "-(1+x*y)*exp(x)*cos(y)"},
    "exact": U,
}


def write(tmp, name, obj):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        if isinstance(obj, str):
            f.write(obj)
        else:
            json.dump(obj, f)
    return path


def solve(tmp, problem, extra, name):
    path = write(tmp, name + ".json", problem)
    report = os.path.join(tmp, name + ".report.json")
    r = run(["solve", "--problem", path, "--json", report] + extra)
    data = None
    if r.returncode == 0 and os.path.exists(report):
        with open(report) as f:
            data = json.load(f)
    return r, data


def expect_refused(tmp, name, problem, part, extra=()):
    """The problem (None: a missing file) is exit 2 with one line on stderr containing part, and no
    report is written."""
    path = write(tmp, name + ".json", problem) if problem is not None else os.path.join(tmp, "absent.json")
    report = os.path.join(tmp, name + ".out.json")
    r = run(["solve", "--problem", path, "--json", report, "--backend", "cpu"] + list(extra))
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    check(r.returncode == 2, f"{name}: exit {r.returncode} (expected 2); stderr {r.stderr!r}")
    check(len(lines) == 1 and part in lines[0], f"{name}: message {lines!r} lacks {part!r}")
    check(not os.path.exists(report), f"{name}: a report was written")


def test_annulus(tmp):
    """cg and dg on the quarter annulus: errors fall at the optimal rates under --refine; the reports
    name the problem, the geometry and the parts; the VTU carries the coefficient and the error."""
    for disc, k in [("cg", 2), ("dg", 2)]:
        errs = []
        for refine in [0, 1]:
            vtu = os.path.join(tmp, f"annulus_{disc}_{refine}.vtu")
            r, data = solve(tmp, ANNULUS, ["--disc", disc, "--refine", str(refine), "--backend", "cpu", "--vtu", vtu],
                            f"annulus_{disc}_{refine}")
            check(r.returncode == 0, f"annulus {disc} refine {refine}: exit {r.returncode} {r.stderr}")
            if data is None:
                return
            check("mapped geometry" in r.stdout and "problem" in r.stdout, f"summary: {r.stdout.splitlines()[0]!r}")
            check(data["config"]["cells"] == [4 << refine, 4 << refine], f"cells {data['config']['cells']}")
            check(data["config"]["problem"]["neumann_parts"] == ["xmax", "ymin"], "neumann parts in the report")
            check(data["config"]["problem"]["expressions"]["coefficient"] == "1 + x*y", "coefficient in the report")
            # Neumann parts at k = 2: Chebyshev (cg takes the vertex patches from k = 4 on)
            check(data["config"]["smoother"] == "chebyshev", f"{disc}: smoother {data['config']['smoother']}")
            check(data["converged"], f"annulus {disc} refine {refine} did not converge")
            errs.append(data["errors"])
            with open(vtu, "rb") as f:
                text = f.read()
            check(b'Name="coefficient"' in text and b'Name="error"' in text, "VTU lacks coefficient or error")
        if len(errs) == 2:
            rate0 = math.log2(errs[0]["l2"] / errs[1]["l2"])
            rate1 = math.log2(errs[0]["h1_semi"] / errs[1]["h1_semi"])
            check(rate0 > k + 1 - 0.4, f"{disc} L2 rate {rate0:.2f}")
            check(rate1 > k - 0.4, f"{disc} H1 rate {rate1:.2f}")
    # cg with Neumann parts at k = 4: the vertex patches, those of the vertices on the Neumann
    # parts included, in fewer iterations than Chebyshev and with the same discretization error
    runs = {}
    for extra in [[], ["--smoother", "chebyshev"]]:
        r, data = solve(tmp, ANNULUS, ["--backend", "cpu", "--degree", "4", "--tol", "1e-10"] + extra, "neumann_k4")
        check(r.returncode == 0 and data is not None and data["converged"], f"k=4 {extra}: exit {r.returncode} {r.stderr}")
        if data is not None:
            runs[data["config"]["smoother"]] = data
    if len(runs) == 2:
        check("patch" in runs, f"k=4 with Neumann parts: smoothers {list(runs)}")
        if "patch" in runs and "chebyshev" in runs:
            p, c = runs["patch"], runs["chebyshev"]
            check(p["iterations"] < c["iterations"], f"k=4: patch {p['iterations']} its, Chebyshev {c['iterations']}")
            check(abs(p["errors"]["l2"] - c["errors"]["l2"]) < 1e-3 * c["errors"]["l2"],
                  f"k=4: L2 {p['errors']['l2']} (patch) vs {c['errors']['l2']} (Chebyshev)")
    # every solver on the same problem (Dirichlet only; on the mapped box --smoother auto is the
    # vertex patch with separable surrogates for cg)
    dirichlet = dict(ANNULUS)
    dirichlet["dirichlet"] = {p: U for p in ["xmin", "xmax", "ymin", "ymax"]}
    dirichlet["neumann"] = {}
    ref = None
    for extra in [["--solver", "cg", "--precond", "jacobi"], ["--solver", "fgmres"], ["--solver", "cg"],
                  ["--solver", "gmres"], ["--solver", "fmg"], ["--solver", "fgmres", "--mg-precision", "fp32"],
                  ["--smoother", "chebyshev"]]:
        r, data = solve(tmp, dirichlet, ["--backend", "cpu", "--tol", "1e-11"] + extra, "dirichlet")
        check(r.returncode == 0, f"{extra}: exit {r.returncode} {r.stderr}")
        if data is None:
            continue
        if ref is None:
            ref = data["errors"]["l2"]
        check(abs(data["errors"]["l2"] - ref) < 1e-6 * ref, f"{extra}: L2 {data['errors']['l2']} vs {ref}")
        if "--precond" not in extra and "--smoother" not in extra:
            check(data["config"]["smoother"] == "patch", f"{extra}: smoother {data['config']['smoother']}")
            check(data["iterations"] <= 20, f"{extra}: {data['iterations']} iterations")


def test_without_exact(tmp):
    p = dict(ANNULUS)
    del p["exact"]
    r, data = solve(tmp, p, ["--backend", "cpu"], "noexact")
    check(r.returncode == 0, f"no exact: exit {r.returncode} {r.stderr}")
    check("errors          not computed" in r.stdout, "no exact: the summary should say errors are not computed")
    check(data is not None and data["errors"] is None, "no exact: errors should be null in the report")


def test_overrides(tmp):
    """--degree and --cells override the file; a 3D box that is not a cube with bounds."""
    box = {"dim": 3, "degree": 1, "geometry": {"box": [[-1, 1], [0, 2], [0, 0.5]], "cells": [4, 2, 2]},
           "coefficient": 3, "rhs": "-6", "dirichlet": {p: "x*x + y*y + z*z" for p in
                                                         ["xmin", "xmax", "ymin", "ymax", "zmin", "zmax"]},
           "exact": "x*x + y*y + z*z"}
    # -div(3 grad u) = -18 for u = |x|^2: rhs -18, exact in Q2
    box["rhs"] = "-18"
    r, data = solve(tmp, box, ["--degree", "2", "--cells", "2", "--backend", "cpu", "--tol", "1e-12"], "box3")
    check(r.returncode == 0, f"box: exit {r.returncode} {r.stderr}")
    if data:
        check(data["config"]["degree"] == 2 and data["config"]["cells"] == [2, 2, 2], f"overrides: {data['config']}")
        check(data["errors"]["l2"] < 1e-9, f"Q2 solution not reproduced: {data['errors']}")


def test_bad_input(tmp):
    """Each bad problem: exit 2, one line on stderr naming the problem, no report written."""
    def bad(name, problem, part, extra=()):
        expect_refused(tmp, name, problem, part, extra)

    def variant(**changes):
        p = json.loads(json.dumps(ANNULUS))
        for k, v in changes.items():
            if v is None:
                p.pop(k, None)
            else:
                p[k] = v
        return p

    bad("json", '{"dim": 2, "degree": ', "malformed JSON")
    bad("unknown", variant(source="1"), "source: unknown key")
    bad("expression", variant(rhs="sin(x"), "rhs")
    bad("name", variant(coefficient="1 + w"), "Unexpected token \"w\"")
    twice = variant()
    twice["neumann"]["xmin"] = "0"
    bad("twice", twice, "xmin: the boundary part is listed twice")
    missing = variant()
    del missing["neumann"]["ymin"]
    bad("missing", missing, "ymin: the boundary part is missing")
    bad("coefficient", variant(coefficient="x - 1.2"), "coefficient: a = ")
    inverted = variant()
    inverted["geometry"]["map"] = ["y", "x"]
    bad("inverted", inverted, "is inverted or degenerate")
    bad("nan", variant(rhs="sqrt(x - 1.5)"), "rhs: the value is")
    bad("missingfile", None, "cannot read")
    if MESH_WRITER is None:
        bad("mesh", {"dim": 2, "mesh": "domain.msh", "dirichlet": {}}, "built without Gmsh")
    bad("dim", variant(), "is for dim 2", ["--dim", "3"])
    bad("geometry", variant(), "--geometry", ["--geometry", "deformed"])


def mesh_problem(mesh):
    """ANNULUS on a Gmsh mesh of the annulus, whose parts are the physical groups."""
    names = {"xmin": "inner", "xmax": "outer", "ymin": "bottom", "ymax": "left"}
    p = json.loads(json.dumps(ANNULUS))
    del p["geometry"]
    p["mesh"] = mesh
    p["dirichlet"] = {names[k]: v for k, v in ANNULUS["dirichlet"].items()}
    p["neumann"] = {names[k]: v for k, v in ANNULUS["neumann"].items()}
    return p


def test_gmsh(tmp):
    """Structured Gmsh meshes of the annulus (order 2, both file versions): optimal rates when the
    mesh is refined by Gmsh, on cg and dg; reports name the mesh and its parts; bad meshes."""
    def write_mesh(args, name):
        path = os.path.join(tmp, name)
        r = subprocess.run([MESH_WRITER] + [str(a) for a in args] + [path], capture_output=True, text=True)
        check(r.returncode == 0, f"gmsh_mesh_writer {args}: {r.stderr}")
        return path

    for disc in ["cg", "dg"]:
        errs = []
        for n, version in [(4, "2.2"), (8, "4.1")]:
            write_mesh(["annulus", 2, n, 2, version], f"annulus{n}.msh")
            vtu = os.path.join(tmp, f"gmsh_{disc}_{n}.vtu")
            r, data = solve(tmp, mesh_problem(f"annulus{n}.msh"), ["--disc", disc, "--backend", "cpu", "--vtu", vtu],
                            f"gmsh_{disc}_{n}")
            check(r.returncode == 0, f"gmsh {disc} n={n}: exit {r.returncode} {r.stderr}")
            if data is None:
                return
            check(data["config"]["cells"] == [n, n], f"gmsh cells {data['config']['cells']}")
            pj = data["config"]["problem"]
            check(pj["mesh"].endswith(f"annulus{n}.msh") and pj["neumann_parts"] == ["bottom", "outer"],
                  f"gmsh report: {pj}")
            check(data["converged"] and os.path.exists(vtu), f"gmsh {disc} n={n}: not converged or no VTU")
            errs.append(data["errors"])
        rate0 = math.log2(errs[0]["l2"] / errs[1]["l2"])
        check(rate0 > 3 - 0.4, f"gmsh {disc} L2 rate {rate0:.2f}")

    def bad(name, problem, part, extra=()):
        expect_refused(tmp, name, problem, part, extra)

    write_mesh(["unstructured", 2], "unstructured.msh")
    bad("unstructured", mesh_problem("unstructured.msh"), "not one structured block")
    write_mesh(["simplex", 3], "tets.msh")
    tets = mesh_problem("tets.msh")
    tets["dim"] = 3
    bad("tets", tets, "tetrahedra")
    bad("nomesh", mesh_problem("absent.msh"), "absent.msh: cannot read the file")
    bad("cells", mesh_problem("annulus4.msh"), "--cells: the mesh file", ["--cells", "8"])
    boxparts = mesh_problem("annulus4.msh")
    boxparts["dirichlet"]["xmin"] = "0"
    bad("boxparts", boxparts, "dirichlet.xmin: unknown boundary part")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_annulus(tmp)
        test_without_exact(tmp)
        test_overrides(tmp)
        test_bad_input(tmp)
        if MESH_WRITER:
            test_gmsh(tmp)
    for f in failures:
        print("FAIL:", f)
    if failures:
        print(f"{len(failures)} checks failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
