#!/usr/bin/env python3
"""Distributed runs of `tcfem solve` on the CPU backend: the same problem on 1, 2 and 3 MPI ranks
(uneven sub-boxes, one cell per rank along a direction; cg and dg; Cartesian, deformed and mapped
geometry with a variable coefficient and Neumann parts; CG and FGMRES with Jacobi; multigrid with
every outer solver, fp64 and fp32 V-cycles and the full-multigrid start, vertex-patch and Chebyshev
smoothers, its levels spread over the ranks down to a gathered level and the rest on rank 0) gives
the same iteration counts, and errors
and residuals equal up to rounding; --vtu NAME.pvtu writes one piece per rank and the file that
joins them; bad input ends every rank with exit 2 and one message, writes nothing and never hangs.

With --gpu every run takes --backend cuda (one GPU per rank, the device ghost exchange on each of
its paths) and the runs on two ranks are compared with the run on one GPU; without two usable GPUs
the test skips. The cuda-core kernels add with atomics, so two GPU runs differ in rounding even on
one rank: errors agree to 1e-7 relative there, iterations to 2%.

Usage: test_mpi.py TCFEM_BINARY MPIEXEC [--gpu]   (MPIEXEC may carry options: "mpirun --bind-to none")
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_cli import GPU, check, finish, run  # noqa: E402  (the command line, the runner, the failures)

CHECK_VTU = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_vtu.py")
try:
    import meshio  # noqa: F401  (check_vtu.py reads the pieces with it)
    HAVE_MESHIO = True
except ImportError:
    HAVE_MESHIO = False


def solve(tmp, ranks, args, name):
    """Jacobi unless the arguments choose the preconditioner or a multigrid solver."""
    report = os.path.join(tmp, f"{name}.{ranks}.json")
    backend = "cuda" if GPU else "cpu"
    multigrid = "--precond" in args or "mg" in args or "fmg" in args
    precond = [] if multigrid else ["--precond", "jacobi"]
    r = run(ranks, ["solve", "--backend", backend, "--threads", "1", "--json", report] + precond + args)
    data = None
    if r.returncode == 0 and os.path.exists(report):
        with open(report) as f:
            data = json.load(f)
    return r, data


U = "exp(x)*sin(y)"
ANNULUS_2D = {
    "dim": 2, "degree": 2,
    "geometry": {"box": [[0, 1], [0, 1]], "cells": [5, 3], "map": ["(1+x)*cos(pi/2*y)", "(1+x)*sin(pi/2*y)"]},
    "coefficient": "1 + x*y",
    "rhs": "-(y*exp(x)*sin(y) + x*exp(x)*cos(y))",
    "dirichlet": {"xmin": U, "ymax": U},
    "neumann": {"xmax": "(1+x*y)*exp(x)*(x*sin(y) + y*cos(y))/2", "ymin": "-(1+x*y)*exp(x)*cos(y)"},
    "exact": U,
}
U3 = "exp(x)*sin(y)*(1+z)"
ANNULUS_3D = {
    "dim": 3, "degree": 2,
    "geometry": {"box": [[0, 1], [0, 1], [0, 1]], "cells": [3, 4, 3],
                 "map": ["(1+x)*cos(pi/2*y)", "(1+x)*sin(pi/2*y)", "z"]},
    "coefficient": "2 + x",
    "rhs": "-(exp(x)*sin(y)*(1+z) + 0*x)",
    "dirichlet": {"xmin": U3, "xmax": U3, "ymin": U3, "ymax": U3, "zmin": U3},
    "neumann": {"zmax": "(2+x)*exp(x)*sin(y)"},
}


# a box with Neumann parts (the vertex patches of the vertices on them localize their residuals
# on its Cartesian cells)
UB = "exp(x)*sin(y) + z^2"
BOX_MIXED = {
    "dim": 3, "degree": 3,
    "geometry": {"box": [[0, 1], [0, 2], [0, 1]], "cells": [8, 16, 8]},
    "rhs": "-2",
    "dirichlet": {f: UB for f in ("xmin", "ymin", "zmin", "zmax")},
    "neumann": {"xmax": "exp(x)*sin(y)", "ymax": "exp(x)*cos(y)"},
    "exact": UB,
}


# a box twice as long in x: two ranks cut it across x (the cuts of the split apply are then tile
# columns, not layers)
BOX_X = {
    "dim": 3, "degree": 3,
    "geometry": {"box": [[0, 2], [0, 1], [0, 1]], "cells": [24, 8, 8]},
    "rhs": "0",
    "dirichlet": {f: U3 for f in ("xmin", "xmax", "ymin", "ymax", "zmin", "zmax")},
    "exact": U3,
}


def same_solve(tmp, name, args, rank_counts=(2, 3), problem=None, multi_args=(), overlapped=None, exchange=None):
    """The run on every rank count matches the run on one rank. overlapped (GPU): whether the report
    says the exchange ran beside the interior cells; exchange (GPU): how the report's exchange path
    begins."""
    if problem is not None:
        path = os.path.join(tmp, name + ".problem.json")
        with open(path, "w") as f:
            json.dump(problem, f)
        args = ["--problem", path] + args
    r1, ref = solve(tmp, 1, args, name)
    check(r1.returncode == 0 and ref is not None, f"{name}: one rank: exit {r1.returncode} {r1.stderr}")
    if ref is None:
        return
    check(ref["distributed"]["ranks"] == 1, f"{name}: one rank's report: {ref['distributed']}")
    for ranks in rank_counts:
        r, data = solve(tmp, ranks, args + list(multi_args), name)
        check(r.returncode == 0 and data is not None, f"{name}: {ranks} ranks: exit {r.returncode} {r.stderr}")
        if data is None:
            continue
        dist = data["distributed"]
        check(dist["ranks"] == ranks and len(dist["owned_cells"]) == ranks and len(dist["solve_seconds"]) == ranks,
              f"{name}: {ranks} ranks: report {dist}")
        check(r.stdout.count("tcfem solve:") == 1, f"{name}: {ranks} ranks: the summary printed more than once")
        if GPU:
            check(dist.get("exchange_bytes_rank0", 0) > 0 and len(dist.get("exchange_seconds", [])) == ranks,
                  f"{name}: {ranks} ranks: exchange report {dist}")
            if exchange is not None:
                check(dist.get("exchange", "").startswith(exchange),
                      f"{name}: {ranks} ranks: exchange {dist.get('exchange')}, expected {exchange}")
            if overlapped is not None:
                check(dist.get("exchange_overlapped") == overlapped,
                      f"{name}: {ranks} ranks: exchange_overlapped {dist.get('exchange_overlapped')}, "
                      f"expected {overlapped}")
        check(f"ranks           {ranks}" in r.stdout, f"{name}: {ranks} ranks: no ranks line")
        # the sums at the sub-box interfaces and the dot products add in another order than on one
        # rank; a long Jacobi-preconditioned CG amplifies that rounding, which may move the last
        # iteration across the tolerance
        slack = max(1, ref["iterations"] // 50) if GPU else 0 if ref["iterations"] < 100 else 1
        check(abs(data["iterations"] - ref["iterations"]) <= slack,
              f"{name}: {ranks} ranks: {data['iterations']} iterations, one rank {ref['iterations']}")
        check(data["n_dofs"] == ref["n_dofs"], f"{name}: {ranks} ranks: DoFs differ")
        if ref["errors"] is not None:
            for key in ("l2", "h1_semi"):
                a, b = data["errors"][key], ref["errors"][key]
                # relative, with a floor for errors near the rounding of their own computation
                check(abs(a - b) <= (1e-7 if GPU else 1e-9) * b + 1e-14,
                      f"{name}: {ranks} ranks: {key} error {a} against {b}")
        # the first iterations agree to rounding (of an fp32 V-cycle's residuals: 1e-7 to a few 1e-6
        # relative; on the GPU the kernels add with atomics, and a rank's apply splits around its
        # interior cells, so the sums at shared nodes add in another order than on one GPU: the
        # curved vertex-patch run, whose surrogate smoother takes the residual of the fp32 level
        # operator, differed by up to 4.5e-6); all end below the tolerance
        h, h1 = data["residual_history"][:10], ref["residual_history"][:10]
        rounding = 1e-5 if GPU or "fp32" in args else 1e-8
        check(all(abs(x - y) <= rounding * y + 1e-13 for x, y in zip(h, h1)),
              f"{name}: {ranks} ranks: residual history {h} against {h1}")
        check(data["converged"] and data["final_relative_residual"] <= data["config"]["tol"],
              f"{name}: {ranks} ranks: final residual {data['final_relative_residual']}")
        if "multigrid" in ref:  # the levels spread over the ranks, those below the gathered one on rank 0
            gathered = dist.get("multigrid_gathered_level")
            check(gathered is not None and 1 <= gathered < len(ref["multigrid"]["levels"]) and
                  f"gathered onto rank 0 below level {gathered}" in r.stdout,
                  f"{name}: {ranks} ranks: gathered level {gathered}")


def check_pvtu(tmp, ranks, backend="cpu", extra=()):
    """--vtu NAME.pvtu on several ranks: the pieces NAME_<r>.vtu hold every cell once, each checked
    against the exact solution by check_vtu.py (where meshio is installed); the .pvtu names them and
    the fields."""
    pvtu = os.path.join(tmp, f"sol{ranks}.pvtu")
    r = run(ranks, ["solve", "--backend", backend, "--dim", "3", "--degree", "3", "--cells", "6", "--vtu", pvtu,
                    "--tol", "1e-10"] + list(extra))
    check(r.returncode == 0, f"pvtu {ranks}: exit {r.returncode} {r.stderr}")
    check(os.path.exists(pvtu), f"pvtu {ranks}: no {pvtu}")
    if not os.path.exists(pvtu):
        return
    with open(pvtu) as f:
        text = f.read()
    sources = re.findall(r'<Piece Source="([^"]+)"', text)
    check(sources == [f"sol{ranks}_{q}.vtu" for q in range(ranks)], f"pvtu {ranks}: pieces {sources}")
    check(all(f'Name="{n}"' in text for n in ("u", "u_exact", "error")), f"pvtu {ranks}: fields in {text!r}")
    cells = 0
    for source in sources:
        piece = os.path.join(tmp, source)
        if not os.path.exists(piece):
            check(False, f"pvtu {ranks}: no piece {piece}")
            continue
        with open(piece) as f:
            cells += int(re.search(r'NumberOfCells="(\d+)"', f.read()).group(1))
        if HAVE_MESHIO:
            c = subprocess.run([sys.executable, CHECK_VTU, piece, "3", "u", "1e-3"], capture_output=True, text=True)
            check(c.returncode == 0, f"pvtu {ranks}: {source}: {c.stderr}")
    check(cells == 6 ** 3, f"pvtu {ranks}: {cells} cells in the pieces")
    check(not [f for f in os.listdir(tmp) if ".tmp." in f], f"pvtu {ranks}: temporary files left")


def expect_refused(tmp, name, ranks, args, part):
    report = os.path.join(tmp, name + ".refused.json")
    r = run(ranks, args + ["--json", report] if args and args[0] == "solve" else args, timeout=120)
    lines = [l for l in r.stderr.splitlines() if l.startswith("tcfem")]
    check(r.returncode == 2, f"{name}: exit {r.returncode} (expected 2); stderr {r.stderr!r}")
    check(len(lines) == 1 and part in lines[0], f"{name}: messages {lines!r} lack {part!r} (or repeat it)")
    check(not os.path.exists(report), f"{name}: a report was written")


def gpu_main():
    """Jacobi-CG and multigrid on 2 ranks with a GPU each against one GPU."""
    probe = run(2, ["solve", "--backend", "cuda", "--cells", "2", "--degree", "1", "--quiet"], timeout=300)
    if probe.returncode != 0:
        lines = [l for l in probe.stderr.splitlines() if l.startswith("tcfem")] or ["exit %d" % probe.returncode]
        print("no CUDA device for each of 2 ranks: GPU tests skip (" + lines[0] + ")")
        return 0
    # the paths of this build and machine: NCCL where tcfem was built with it
    nccl = run(2, ["solve", "--backend", "cuda", "--cells", "2", "--degree", "1", "--quiet", "--exchange", "nccl"])
    if nccl.returncode != 0:
        check("no NCCL" in nccl.stderr, f"--exchange nccl refused without naming NCCL: {nccl.stderr}")
    # auto: CUDA IPC, the two ranks sharing a host
    paths = {"auto": "CUDA IPC", "host-staged": "MPI on the host", "cuda-ipc": "CUDA IPC"}
    if nccl.returncode == 0:
        paths["nccl"] = "NCCL"
    with tempfile.TemporaryDirectory() as tmp:
        for path, text in paths.items():
            same_solve(tmp, "gpu_box_" + path, ["--dim", "3", "--degree", "4", "--cells", "9", "--tol", "1e-12"], (2,),
                       multi_args=["--exchange", path], overlapped=True, exchange=text)
        same_solve(tmp, "gpu_box_no_overlap", ["--dim", "3", "--degree", "4", "--cells", "9", "--tol", "1e-12"], (2,),
                   multi_args=["--exchange-overlap", "off"], overlapped=False)
        same_solve(tmp, "gpu_box_x_cut", ["--tol", "1e-12"], (2,), problem=BOX_X, overlapped=True)
        same_solve(tmp, "gpu_box_2d", ["--dim", "2", "--degree", "6", "--cells", "7", "--tol", "1e-12"], (2,))
        same_solve(tmp, "gpu_deformed", ["--dim", "3", "--degree", "3", "--cells", "6", "--geometry", "deformed",
                                         "--tol", "1e-10"], (2,))
        same_solve(tmp, "gpu_dg", ["--dim", "3", "--degree", "2", "--cells", "6", "--disc", "dg", "--tol", "1e-10"],
                   (2,))
        same_solve(tmp, "gpu_annulus_3d", ["--tol", "1e-10"], (2,), problem=ANNULUS_3D)
        same_solve(tmp, "gpu_annulus_dg", ["--disc", "dg", "--tol", "1e-10"], (2,), problem=ANNULUS_2D)
        check_pvtu(tmp, 2, "cuda", ["--precond", "jacobi"])
        # multigrid across the GPUs (Chebyshev; the one-GPU run smooths the same way): FGMRES with
        # an fp32 V-cycle and the FMG start, on every exchange path; CG with an fp64 V-cycle in 2D;
        # dg V-cycles; GMRES; the mapped problem with a coefficient and Neumann parts
        mg = ["--precond", "mg", "--smoother", "chebyshev"]
        for path, text in paths.items():
            same_solve(tmp, "gpu_mg_" + path, ["--dim", "3", "--degree", "3", "--cells", "16", "--tol", "1e-10"] + mg,
                       (2,), multi_args=["--exchange", path], exchange=text)
        same_solve(tmp, "gpu_mg_cg_2d", ["--dim", "2", "--degree", "4", "--cells", "32", "--solver", "cg",
                                         "--mg-precision", "fp64", "--tol", "1e-10"] + mg, (2,))
        same_solve(tmp, "gpu_mg_dg", ["--dim", "3", "--degree", "2", "--cells", "8", "--disc", "dg", "--solver", "mg",
                                      "--tol", "1e-10"] + mg, (2,))
        same_solve(tmp, "gpu_mg_gmres", ["--dim", "2", "--degree", "2", "--cells", "64", "--solver", "gmres",
                                         "--tol", "1e-10"] + mg, (2,))
        same_solve(tmp, "gpu_mg_annulus", ["--cells", "8", "--tol", "1e-10"] + mg, (2,), problem=ANNULUS_3D)
        same_solve(tmp, "gpu_mg_x_cut", ["--tol", "1e-10"] + mg, (2,), problem=BOX_X, overlapped=True)
        # the right-hand side and the errors on the device per rank: the built-in deformation, and
        # dg with Nitsche terms, a coefficient and Neumann parts
        same_solve(tmp, "gpu_mg_deformed", ["--dim", "3", "--degree", "3", "--cells", "8", "--geometry", "deformed",
                                            "--tol", "1e-10"] + mg, (2,))
        same_solve(tmp, "gpu_mg_annulus_dg", ["--cells", "16", "--disc", "dg", "--tol", "1e-10"] + mg, (2,),
                   problem=ANNULUS_2D)
        same_solve(tmp, "gpu_mg_no_overlap", ["--tol", "1e-10"] + mg, (2,), problem=BOX_X,
                   multi_args=["--exchange-overlap", "off"], overlapped=False)
        check_pvtu(tmp, 2, "cuda", mg)
        # the vertex patches across the GPUs (cg): the default smoother, cut across z and across x,
        # the additive and the global-residual variants, the separable surrogates of a curved map
        # with a variable coefficient; dg keeps its patches on one GPU
        same_solve(tmp, "gpu_mg_patch", ["--dim", "3", "--degree", "3", "--cells", "16", "--precond", "mg",
                                         "--tol", "1e-10"], (2,))
        same_solve(tmp, "gpu_mg_patch_x_cut", ["--tol", "1e-10", "--precond", "mg", "--smoother", "patch"], (2,),
                   problem=BOX_X)
        same_solve(tmp, "gpu_mg_patch_2d_fp64", ["--dim", "2", "--degree", "5", "--cells", "32", "--solver", "cg",
                                                 "--precond", "mg", "--mg-precision", "fp64", "--smoother", "patch",
                                                 "--tol", "1e-10"], (2,))
        same_solve(tmp, "gpu_mg_patch_additive", ["--dim", "3", "--degree", "2", "--cells", "16", "--precond", "mg",
                                                  "--smoother", "patch-additive", "--tol", "1e-10"], (2,))
        same_solve(tmp, "gpu_mg_patch_global", ["--dim", "3", "--degree", "4", "--cells", "8", "--precond", "mg",
                                                "--smoother", "patch", "--patch-variant", "global", "--tol", "1e-10"],
                   (2,))
        annulus_dirichlet = dict(ANNULUS_2D, geometry=dict(ANNULUS_2D["geometry"], cells=[16, 16]),
                                 dirichlet={f: U for f in ("xmin", "xmax", "ymin", "ymax")})
        del annulus_dirichlet["neumann"]
        # the separable surrogates: the surrogate residuals (the default fused variant) and the level
        # residual per color (global), 2D and 3D
        same_solve(tmp, "gpu_mg_patch_annulus", ["--precond", "mg", "--smoother", "patch", "--tol", "1e-10"], (2,),
                   problem=annulus_dirichlet)
        same_solve(tmp, "gpu_mg_patch_annulus_global", ["--precond", "mg", "--smoother", "patch", "--patch-variant",
                                                        "global", "--tol", "1e-10"], (2,), problem=annulus_dirichlet)
        annulus3_dirichlet = dict(ANNULUS_3D, geometry=dict(ANNULUS_3D["geometry"], cells=[8, 8, 8]),
                                  dirichlet={f: U3 for f in ("xmin", "xmax", "ymin", "ymax", "zmin", "zmax")})
        del annulus3_dirichlet["neumann"]
        same_solve(tmp, "gpu_mg_patch_annulus_3d", ["--degree", "3", "--precond", "mg", "--smoother", "patch",
                                                    "--tol", "1e-10"], (2,), problem=annulus3_dirichlet)
        # the patches of the vertices on Neumann parts across the GPUs: localized residuals on a box
        # (the default smoother; cut across y, a Neumann face on each side of the cut, and across x),
        # the level operator's residual with the surrogates on the annulus
        same_solve(tmp, "gpu_mg_patch_box_neumann", ["--precond", "mg", "--tol", "1e-10"], (2,), problem=BOX_MIXED)
        same_solve(tmp, "gpu_mg_patch_box_neumann_x", ["--precond", "mg", "--tol", "1e-10"], (2,),
                   problem=dict(BOX_MIXED, geometry={"box": [[0, 2], [0, 1], [0, 1]], "cells": [16, 8, 8]}))
        annulus_mixed = dict(ANNULUS_2D, geometry=dict(ANNULUS_2D["geometry"], cells=[16, 16]))
        same_solve(tmp, "gpu_mg_patch_annulus_neumann", ["--precond", "mg", "--smoother", "patch", "--tol", "1e-10"],
                   (2,), problem=annulus_mixed)
        expect_refused(tmp, "gpu_dg_patches", 2, ["solve", "--cells", "8", "--backend", "cuda", "--precond", "mg",
                                                  "--disc", "dg", "--smoother", "patch"],
                       "dg vertex patches on --backend cuda")
    return finish("test_mpi --gpu")


def main():
    if GPU:
        return gpu_main()
    with tempfile.TemporaryDirectory() as tmp:
        # Cartesian box, uneven sub-boxes (7 cells over 2 and 3 ranks), CG and FGMRES
        same_solve(tmp, "box_cg", ["--dim", "3", "--degree", "3", "--cells", "7", "--tol", "1e-10"])
        same_solve(tmp, "box_fgmres", ["--dim", "3", "--degree", "2", "--cells", "5", "--solver", "fgmres",
                                       "--restart", "8", "--tol", "1e-10"])
        # deformed box (general path), 2D with one cell per rank along a direction (3 cells, 3 ranks)
        same_solve(tmp, "deformed_2d", ["--dim", "2", "--degree", "4", "--cells", "3", "--geometry", "deformed",
                                        "--tol", "1e-11"])
        # dg (SIPG) on the Cartesian box and on the deformed box
        same_solve(tmp, "dg_box", ["--dim", "3", "--degree", "2", "--cells", "4", "--disc", "dg", "--tol", "1e-10"])
        same_solve(tmp, "dg_deformed", ["--dim", "2", "--degree", "3", "--cells", "6", "--disc", "dg",
                                        "--geometry", "deformed", "--tol", "1e-10"])
        # the user's problem: a mapped box, a variable coefficient, Dirichlet and Neumann parts
        same_solve(tmp, "annulus_cg", ["--tol", "1e-11"], problem=ANNULUS_2D)
        same_solve(tmp, "annulus_dg", ["--disc", "dg", "--tol", "1e-11"], problem=ANNULUS_2D)
        same_solve(tmp, "annulus_3d", ["--solver", "fgmres", "--tol", "1e-10"],
                   problem=ANNULUS_3D)

        # multigrid across ranks: the default FGMRES from a full-multigrid start in fp32 with the
        # vertex patches (12 cells: aligned sub-boxes 6/6 and 4/4/4), CG with Chebyshev, the plain
        # V-cycle and full multigrid on dg with Chebyshev, the dg vertex patches, GMRES with
        # left preconditioning; the mapped problem with a coefficient: the patches' separable
        # surrogates (all faces Dirichlet), and with Neumann parts Chebyshev on 8 x 4 cells, whose 3
        # sub-boxes do not halve (the finest level is the gathered one), and the patches of the
        # vertices on the Neumann parts across the sub-boxes on 16 x 8 cells; a box with Neumann
        # parts (the default smoother: patches with localized residuals, on the Neumann parts too)
        cheb = ["--smoother", "chebyshev"]
        same_solve(tmp, "mg_fgmres_fp32", ["--dim", "3", "--degree", "2", "--cells", "12", "--precond", "mg",
                                           "--mg-precision", "fp32", "--tol", "1e-10"])
        same_solve(tmp, "mg_cg_2d", ["--dim", "2", "--degree", "4", "--cells", "24", "--solver", "cg",
                                     "--precond", "mg", "--tol", "1e-10"] + cheb)
        same_solve(tmp, "mg_dg_vcycles", ["--dim", "2", "--degree", "3", "--cells", "16", "--disc", "dg",
                                          "--solver", "mg", "--tol", "1e-10"] + cheb)
        same_solve(tmp, "mg_dg_fmg_fp32", ["--dim", "3", "--degree", "2", "--cells", "8", "--disc", "dg",
                                           "--solver", "fmg", "--mg-precision", "fp32", "--tol", "1e-10"] + cheb)
        same_solve(tmp, "mg_dg_patches", ["--dim", "3", "--degree", "2", "--cells", "8", "--disc", "dg",
                                          "--tol", "1e-10"])
        same_solve(tmp, "mg_gmres_additive", ["--dim", "2", "--degree", "2", "--cells", "32", "--solver", "gmres",
                                              "--precond", "mg", "--smoother", "patch-additive", "--tol", "1e-10"])
        annulus_dirichlet = dict(ANNULUS_2D, geometry=dict(ANNULUS_2D["geometry"], cells=[8, 8]),
                                 dirichlet={f: U for f in ("xmin", "xmax", "ymin", "ymax")})
        del annulus_dirichlet["neumann"]
        same_solve(tmp, "mg_annulus_patches", ["--precond", "mg", "--tol", "1e-10"], problem=annulus_dirichlet)
        annulus_mixed = dict(ANNULUS_2D, geometry=dict(ANNULUS_2D["geometry"], cells=[8, 4]))
        same_solve(tmp, "mg_annulus_neumann", ["--precond", "mg", "--tol", "1e-10"] + cheb, problem=annulus_mixed)
        same_solve(tmp, "mg_annulus_neumann_patches", ["--precond", "mg", "--tol", "1e-10", "--smoother", "patch"],
                   problem=dict(annulus_mixed, geometry=dict(annulus_mixed["geometry"], cells=[16, 8])))
        same_solve(tmp, "mg_box_neumann_patches", ["--precond", "mg", "--tol", "1e-10"], problem=BOX_MIXED)

        # parallel VTU output: every rank's cells in its piece, the .pvtu joining them
        for ranks in (2, 3):
            check_pvtu(tmp, ranks)

        # bad input: every rank ends with exit 2, one message, no report, no hang
        expect_refused(tmp, "too_many_ranks", 3, ["solve", "--cells", "1", "--degree", "2"], "cannot be split")
        expect_refused(tmp, "multigrid_one_level", 2, ["solve", "--cells", "5", "--precond", "mg", "--backend",
                                                       "cpu"], "needs at least two levels")
        # refused by rank 0 alone, in a level below the gathered one: every rank ends, none hangs
        mixed = dict(annulus_mixed, geometry=dict(annulus_mixed["geometry"], cells=[16, 16]))
        mixed_path = os.path.join(tmp, "mixed.problem.json")
        with open(mixed_path, "w") as f:
            json.dump(mixed, f)
        expect_refused(tmp, "patch_neumann_dg", 2, ["solve", "--problem", mixed_path, "--backend", "cpu",
                                                    "--disc", "dg", "--smoother", "patch"], "--disc dg")
        expect_refused(tmp, "dg_patches_cuda", 2, ["solve", "--cells", "8", "--backend", "cuda", "--precond", "mg",
                                                   "--disc", "dg", "--smoother", "patch"],
                       "dg vertex patches on --backend cuda run on one rank")
        expect_refused(tmp, "fgmres_cuda", 2, ["solve", "--cells", "4", "--backend", "cuda", "--solver", "fgmres",
                                               "--precond", "jacobi"], "runs on --backend cpu only")
        expect_refused(tmp, "vtu_name", 2, ["solve", "--cells", "4", "--vtu", os.path.join(tmp, "u.vtu")], ".pvtu")
        check(not any(f.startswith("u") and "vtu" in f for f in os.listdir(tmp)), "vtu_name: a file was written")
        expect_refused(tmp, "direct", 2, ["direct"], "runs on one process")
        expect_refused(tmp, "overlap_cpu", 2, ["solve", "--cells", "4", "--backend", "cpu", "--exchange-overlap",
                                               "off"], "--exchange-overlap off")
        expect_refused(tmp, "nccl_cpu", 2, ["solve", "--cells", "4", "--backend", "cpu", "--exchange", "nccl"],
                       "--exchange nccl: the ghost exchange of a distributed run with --backend cuda")
        expect_refused(tmp, "exchange_name", 2, ["solve", "--cells", "4", "--exchange", "mpi"], "--exchange")
        # a coefficient <= 0 only in the upper sub-box: found by one rank, reported once by all
        bad = dict(ANNULUS_2D)
        bad["geometry"] = dict(ANNULUS_2D["geometry"], cells=[2, 4])
        bad["coefficient"] = "1 - 2*(y > x + 0.2)"  # negative only where the angle exceeds pi/4
        path = os.path.join(tmp, "bad.problem.json")
        with open(path, "w") as f:
            json.dump(bad, f)
        expect_refused(tmp, "coefficient_one_rank", 2, ["solve", "--problem", path, "--backend", "cpu"],
                       "rank 1: ")

    return finish("test_mpi")


if __name__ == "__main__":
    sys.exit(main())
