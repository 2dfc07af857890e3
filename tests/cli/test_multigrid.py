#!/usr/bin/env python3
"""End-to-end tests of `tcfem solve` with multigrid: FGMRES / CG / V-cycle / FMG with the vertex-patch
(cg and dg) and Chebyshev smoothers, fp64 and fp32 V-cycles, the JSON report, and every bad-input case.

Usage: test_multigrid.py TCFEM_BINARY [PLOT_MULTIGRID_SCRIPT]
"""
import json
import os
import subprocess
import sys
import tempfile

TCFEM = sys.argv[1]
PLOT = sys.argv[2] if len(sys.argv) > 2 else None
failures = []


def run(args, timeout=300):
    return subprocess.run([TCFEM] + args, capture_output=True, text=True, timeout=timeout)


def check(cond, what):
    if not cond:
        failures.append(what)


def solve_json(tmp, name, args):
    path = os.path.join(tmp, name + ".json")
    r = run(["solve", "--quiet", "--json", path] + args)
    check(r.returncode == 0, f"{args}: exit {r.returncode}: {r.stderr}")
    if r.returncode != 0 or not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def test_fgmres_patch(tmp):
    common = ["--dim", "3", "--degree", "3", "--refine", "2", "--solver", "fgmres", "--precond", "mg", "--tol", "1e-8"]
    base = common + ["--mg-start", "zero"]
    j64 = solve_json(tmp, "fp64", base)
    j32 = solve_json(tmp, "fp32", base + ["--mg-precision", "fp32"])
    if not j64 or not j32:
        return
    check(j64["converged"] and j64["iterations"] <= 4, f"fgmres+mg Q3: {j64['iterations']} iterations")
    check(j32["iterations"] == j64["iterations"], f"fp32 V-cycle: {j32['iterations']} vs {j64['iterations']}")
    check(abs(j32["errors"]["l2"] - j64["errors"]["l2"]) <= 0.01 * j64["errors"]["l2"], "fp32 L2 error differs")
    # below fp64 the finest level is post-smoothed in fp64 by default (--mg-finest-post auto)
    check(j32.get("multigrid", {}).get("finest_post_fp64") is True, "fp32: finest_post_fp64 by default")
    check(j64.get("multigrid", {}).get("finest_post_fp64") is False, "fp64: no separate fp64 post-smoothing")
    check(all(lev["calls"]["smoother"] == 2 * j32["multigrid"]["v_cycles"] for lev in j32["multigrid"]["levels"][1:]),
          "fp32: two smoothing steps per cycle and level, the fp64 one included")
    jv = solve_json(tmp, "fp32v", base + ["--mg-precision", "fp32", "--mg-finest-post", "vcycle"])
    if jv:
        check(jv["multigrid"].get("finest_post_fp64") is False, "--mg-finest-post vcycle")
        check(jv["config"].get("mg_finest_post") == "vcycle", "config.mg_finest_post")
        check(jv["iterations"] == j64["iterations"], f"fp32 V-cycle alone: {jv['iterations']} iterations")
    check(len(j64["residual_history"]) == j64["iterations"] + 1, "residual history length")
    # seed 004's test: left preconditioning, preconditioned residual (3 iterations at k = 3)
    jg = solve_json(tmp, "gmres", ["--dim", "3", "--degree", "3", "--refine", "2", "--solver", "gmres", "--precond", "mg",
                                   "--tol", "1e-8"])
    if jg:
        check(jg["converged"] and jg["iterations"] <= 3, f"gmres+mg Q3: {jg['iterations']} iterations")
        check(jg.get("residual_test") == "preconditioned", "gmres: residual_test")
        check(0 <= jg.get("unpreconditioned_relative_residual", -1) < 1e-6, "gmres: unpreconditioned residual")
        check(abs(jg["errors"]["l2"] - j64["errors"]["l2"]) <= 1e-3 * j64["errors"]["l2"], "gmres L2 error differs")
    # from a full-multigrid start: fewer iterations, the same test on ||b - Ax|| and the same solution
    jf = solve_json(tmp, "fmgstart", common)  # the default start
    if jf:
        check(jf["config"].get("mg_start") == "fmg", f"config.mg_start without --mg-start: {jf['config'].get('mg_start')!r}")
        check(j64["config"].get("mg_start") == "zero", f"config.mg_start: {j64['config'].get('mg_start')!r}")
        check(jf["converged"] and jf["iterations"] < j64["iterations"],
              f"fgmres from fmg: {jf['iterations']} iterations against {j64['iterations']} from zero")
        check(jf["residual_history"][0] < 1e-2, f"fmg start residual {jf['residual_history'][0]}")
        check(jf["final_relative_residual"] <= 1e-8, "fmg start: residual test")
        check(jf["multigrid"]["fmg_seconds"] > 0, "fmg start: multigrid.fmg_seconds")
        check(abs(jf["errors"]["l2"] - j64["errors"]["l2"]) <= 1e-3 * j64["errors"]["l2"], "fmg start: L2 error differs")
    mg = j64.get("multigrid", {})
    check(mg.get("n_levels") == 3, f"levels: {mg.get('n_levels')}")
    check(mg.get("coarse_solver") == "cholesky", "coarse solver")
    levels = mg.get("levels", [])
    check(len(levels) == 3 and levels[-1]["n_dofs"] == 13 ** 3, "level DoFs")
    for lev in levels[1:]:
        t = lev["times"]
        check(all(t[key] >= 0 for key in ["smoother", "operator", "transfer", "vector_ops", "coarse"]), "times")
        check(lev["calls"]["smoother"] == 2 * mg["v_cycles"], "V(1,1): two smoothing steps per cycle and level")
        check(lev["n_patches"] == (lev["cells"][0] - 1) ** 3, "patch count")
    check(levels and levels[0]["calls"]["coarse"] == mg["v_cycles"], "one coarse solve per cycle")
    cfg = j64["config"]
    for key, value in {"solver": "fgmres", "preconditioner": "mg", "smoother": "patch", "mg_precision": "fp64",
                       "pre_smooth": 1, "post_smooth": 1}.items():
        check(cfg.get(key) == value, f"config.{key} = {cfg.get(key)!r}")
    for key in ["outer_operator", "preconditioner", "orthogonalization"]:
        check(j64["timings"].get(key, -1) >= 0, f"timings.{key}")
    if PLOT:
        plots = os.path.join(tmp, "plots")
        reports = [os.path.join(tmp, name) for name in ["fp64.json", "fp32.json", "fmgstart.json"]]
        r = subprocess.run([sys.executable, PLOT, "--out", plots] + [p for p in reports if os.path.exists(p)],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"plot_multigrid.py: exit {r.returncode}: {r.stderr}")
        for name in ["convergence.png", "time_split.png"]:
            check(os.path.exists(os.path.join(plots, name)), f"plot_multigrid.py wrote no {name}")
        bad = os.path.join(tmp, "malformed.json")
        with open(bad, "w") as f:
            f.write("{}")
        r = subprocess.run([sys.executable, PLOT, "--out", plots, bad], capture_output=True, text=True)
        check(r.returncode == 2, f"plot_multigrid.py on a malformed report: exit {r.returncode}")


def test_solvers_and_smoothers(tmp):
    ref = None
    for name, args in [("cg", ["--solver", "cg", "--precond", "mg"]), ("mg", ["--solver", "mg"]),
                       ("fmg", ["--solver", "fmg"]), ("gmres", ["--solver", "gmres", "--precond", "mg"]),
                       ("separate", ["--solver", "fgmres", "--precond", "mg",
                                                                    "--patch-variant", "separate"]),
                       ("additive", ["--solver", "fgmres", "--precond", "mg", "--smoother", "patch-additive"]),
                       ("chebyshev", ["--solver", "fgmres", "--precond", "mg", "--smoother", "chebyshev",
                                      "--pre-smooth", "2", "--post-smooth", "2"]),
                       ("deformed", ["--solver", "fgmres", "--precond", "mg", "--geometry", "deformed"]),
                       ("cg-coarse", ["--solver", "fgmres", "--precond", "mg", "--coarse-solver", "cg"]),
                       ("jacobi-fgmres", ["--solver", "fgmres", "--precond", "jacobi", "--restart", "10"])]:
        j = solve_json(tmp, name, ["--dim", "2", "--degree", "2", "--refine", "4", "--tol", "1e-10"] + args)
        if not j:
            continue
        check(j["converged"], f"{name}: not converged")
        if name != "deformed":
            if ref is None:
                ref = j["errors"]["l2"]
            check(abs(j["errors"]["l2"] - ref) <= 1e-6 * ref, f"{name}: L2 {j['errors']['l2']} vs {ref}")
    for q in ["bp3", "bp5"]:
        j = solve_json(tmp, "general-" + q, ["--dim", "3", "--degree", "3", "--refine", "2", "--geometry", "deformed",
                                             "--quadrature", q, "--solver", "fgmres", "--precond", "mg", "--tol", "1e-8"])
        check(j is not None and j["converged"] and j["iterations"] <= 6,
              f"deformed {q}: {j and j['iterations']} iterations")
    j = solve_json(tmp, "dg", ["--dim", "2", "--degree", "2", "--refine", "3", "--disc", "dg", "--solver", "fgmres",
                               "--precond", "mg", "--smoother", "chebyshev"])
    check(j is not None and j["converged"], "dg with the Chebyshev smoother")
    # dg with the vertex-patch smoothers (CPU): the same discrete solution, far fewer iterations
    fgmres = ["--solver", "fgmres"]
    for name, args in [("dg-patch", fgmres + ["--smoother", "patch"]),
                       ("dg-patch-fp32", fgmres + ["--smoother", "patch", "--mg-precision", "fp32"]),
                       ("dg-additive", fgmres + ["--smoother", "patch-additive"]),
                       ("dg-cg", ["--solver", "cg", "--smoother", "patch"])]:
        d = solve_json(tmp, name, ["--dim", "2", "--degree", "2", "--refine", "3", "--disc", "dg", "--precond", "mg"] + args)
        if d is None or j is None:
            continue
        check(d["converged"], f"{name}: not converged")
        check(abs(d["errors"]["l2"] - j["errors"]["l2"]) <= 1e-3 * j["errors"]["l2"],
              f"{name}: L2 {d['errors']['l2']} vs Chebyshev {j['errors']['l2']}")
        if name != "dg-additive":
            check(d["iterations"] <= (6 if name == "dg-cg" else 5) and d["iterations"] < j["iterations"],
                  f"{name}: {d['iterations']} iterations (Chebyshev {j['iterations']})")
        check("dg vertex patch" in d["multigrid"]["levels"][-1]["smoother"], f"{name}: smoother {d['multigrid']['levels'][-1]['smoother']}")


def test_relaxation(tmp):
    """--relaxation sets the damping of the patch corrections: 1 (the default of the multiplicative
    smoother) is the best; 0.8 needs more iterations, and the report carries the value."""
    base = ["--dim", "2", "--degree", "3", "--refine", "4", "--solver", "fgmres", "--precond", "mg", "--tol", "1e-8",
            "--mg-start", "zero"]
    j1 = solve_json(tmp, "relax1", base)
    j8 = solve_json(tmp, "relax08", base + ["--relaxation", "0.8"])
    if not j1 or not j8:
        return
    check(j8["config"].get("relaxation") == 0.8, f"config.relaxation: {j8['config'].get('relaxation')}")
    check("relaxation" not in j1["config"], "config.relaxation without --relaxation")
    check(j8["converged"] and j8["iterations"] > j1["iterations"],
          f"--relaxation 0.8: {j8['iterations']} iterations against {j1['iterations']} with 1")
    r = run(["solve"] + base + ["--smoother", "patch-additive", "--relaxation", "0.3"])
    check(r.returncode == 0 and "relaxation 0.3" in r.stdout, f"additive smoother with --relaxation 0.3: {r.stdout[-300:]}")


def test_summary():
    r = run(["solve", "--dim", "2", "--degree", "3", "--refine", "3", "--solver", "fgmres", "--precond", "mg",
             "--mg-start", "zero"])
    check(r.returncode == 0, f"summary run exit {r.returncode}")
    for word in ["multigrid", "smoother", "time per level", "FGMRES iterations", "L2"]:
        check(word in r.stdout, f"multigrid summary lacks '{word}'")
    check("full multigrid" not in r.stdout, "a start line without --mg-start fmg")
    r = run(["solve", "--dim", "2", "--degree", "3", "--refine", "3", "--solver", "cg", "--precond", "mg", "--mg-start", "fmg"])
    check(r.returncode == 0, f"cg from fmg: exit {r.returncode}")
    for word in ["start           full multigrid", "after a full-multigrid start"]:
        check(word in r.stdout, f"summary of an fmg start lacks '{word}'")


def test_bad_input(tmp):
    mg = ["--precond", "mg"]
    cases = [
        (["--solver", "bicg"], "--solver"), (["--precond", "ilu"], "--precond"),
        (mg + ["--smoother", "gauss-seidel"], "--smoother"), (mg + ["--mg-precision", "fp8"], "--mg-precision"),
        (mg + ["--mg-precision", "fp16ec"], "--mg-precision"), (mg + ["--pre-smooth", "-1"], "--pre-smooth"),
        (mg + ["--post-smooth", "101"], "--post-smooth"), (mg + ["--pre-smooth", "0", "--post-smooth", "0"], "--pre-smooth"),
        (mg + ["--chebyshev-degree", "0"], "--chebyshev-degree"), (mg + ["--patch-variant", "bulk"], "--patch-variant"),
        (mg + ["--coarse-solver", "lu"], "--coarse-solver"), (mg + ["--mg-finest-post", "fp16"], "--mg-finest-post"),
        (["--precond", "jacobi", "--mg-finest-post", "fp64"], "--mg-finest-post"), (mg + ["--coarse-solver", "cholesky", "--cells", "30"], "--coarse-solver"),
        (["--solver", "mg", "--precond", "jacobi"], "--precond"), (["--precond", "jacobi", "--smoother", "chebyshev"], "--smoother"),
        (["--precond", "jacobi", "--mg-precision", "fp32"], "--mg-precision"), (["--precond", "jacobi", "--restart", "10"], "--restart"),
        (["--solver", "fgmres", "--restart", "0"], "--restart"), (mg + ["--backend", "cuda", "--variant", "generic"], "--variant"),
        (["--solver", "gmres", "--precond", "jacobi"], "--solver"), (mg + ["--solver", "gmres", "--mg-precision", "fp32"], "--solver"),
        (mg + ["--operator-path", "assembled"], "--operator-path"), (["--solver", "fgmres", "--precond", "jacobi", "--backend", "cuda"], "--solver"),
        (mg + ["--relaxation", "0"], "--relaxation"), (mg + ["--relaxation", "2.5"], "--relaxation"),
        (mg + ["--relaxation", "nan"], "--relaxation"), (mg + ["--smoother", "chebyshev", "--relaxation", "1"], "--relaxation"),
        (["--precond", "jacobi", "--relaxation", "1"], "--relaxation"), (["--precond", "jacobi", "--mg-start", "fmg"], "--mg-start"),
        (mg + ["--mg-start", "v-cycle"], "--mg-start"), (["--solver", "fmg", "--mg-start", "zero"], "--mg-start"),
        (mg + ["--solver", "gmres", "--mg-start", "fmg"], "--mg-start"),
    ]
    for args, option in cases:
        out = os.path.join(tmp, "bad.json")
        r = run(["solve"] + args + ["--json", out])
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        check(r.returncode == 2, f"{args}: exit {r.returncode}, expected 2 (stderr {r.stderr!r})")
        check(len(lines) == 1, f"{args}: expected one line on stderr, got {lines!r}")
        check(lines and option in lines[0], f"{args}: message does not name {option}: {lines!r}")
        check(not os.path.exists(out), f"{args}: left an output file")


def test_not_converged(tmp):
    path = os.path.join(tmp, "nc.json")
    r = run(["solve", "--dim", "2", "--refine", "3", "--solver", "fgmres", "--precond", "mg", "--mg-start", "zero",
             "--max-iter", "1", "--tol", "1e-14", "--json", path, "--quiet"])
    check(r.returncode == 3, f"non-convergence exit {r.returncode}, expected 3")
    if os.path.exists(path):
        with open(path) as f:
            j = json.load(f)
        check(j["converged"] is False and j["iterations"] == 1, "report of the non-converged run")
    else:
        check(False, "non-converged run wrote no report")


def test_cuda_multigrid_without_device():
    """Without a usable GPU (or without the CUDA backend), multigrid on --backend cuda is a clear input error."""
    for solver in (["--solver", "fgmres", "--precond", "mg"], ["--solver", "mg"], ["--solver", "cg", "--precond", "mg"]):
        r = run(["solve", "--backend", "cuda", "--cells", "2", "--degree", "2", "--smoother", "chebyshev",
                 "--mg-precision", "fp16", "--quiet"] + solver)
        if r.returncode in (0, 3):
            return  # a GPU is present (3: ran, not converged)
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        check(r.returncode == 2, f"{solver} --backend cuda without device: exit {r.returncode}")
        check(len(lines) == 1 and "--backend cuda" in lines[0], f"{solver} --backend cuda message: {lines!r}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_cuda_multigrid_without_device()
        test_fgmres_patch(tmp)
        test_solvers_and_smoothers(tmp)
        test_relaxation(tmp)
        test_summary()
        test_bad_input(tmp)
        test_not_converged(tmp)
    for f in failures:
        print("FAIL:", f)
    if failures:
        print(f"{len(failures)} checks failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
