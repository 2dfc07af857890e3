#!/usr/bin/env python3
"""End-to-end tests of `tcfem direct`: a run with a JSON report, the mesh table, --quiet, bad input.

Usage: test_direct.py TCFEM_BINARY
"""
import json
import os
import subprocess
import sys
import tempfile

TCFEM = sys.argv[1]
failures = []


def run(args, timeout=300):
    return subprocess.run([TCFEM, "direct"] + args, capture_output=True, text=True, timeout=timeout)


def check(cond, what):
    if not cond:
        failures.append(what)


def test_json_report(tmp):
    path = os.path.join(tmp, "direct.json")
    r = run(["--mesh", "flow-square", "--level", "4", "--coarse-level", "1", "--rhs", "3", "--repetitions", "2",
             "--json", path])
    check(r.returncode == 0, f"flow-square run exit {r.returncode}: {r.stderr}")
    for word in ["|C| = 42", "|E| = 1078", "|I| = 2352", "NNZ / N", "FLOP / rhs", "kappa", "Pi", "fp64", "fp32",
                 "fp16", "GFLOP/s", "MDoF/s"]:
        check(word in r.stdout, f"summary lacks '{word}'")
    check(r.stderr == "", f"run wrote to stderr: {r.stderr!r}")
    with open(path) as f:
        j = json.load(f)
    check(j["n_dofs"] == 3472, f"n_dofs {j['n_dofs']}")
    counts = j["counts"]
    check((counts["n_coarse"], counts["n_edge"], counts["n_interior"]) == (42, 1078, 2352), f"counts {counts}")
    check(counts["n_classes"] == 3, "three classes of similar triangles")
    check(abs(j["conditions"]["a_fem"]["kappa"] - 1097.0) < 1.0, f"kappa(A_FEM) {j['conditions']['a_fem']}")
    check(j["conditions"]["pi"]["kappa"] < 100, "kappa(Pi) not small")
    for c in j["conditions"]["classes"]:
        check(c["kappa"] < 100, "kappa(C_k) not small")
    res = {r["precision"]: r for r in j["results"]}
    check(set(res) == {"fp64", "fp32", "fp16"}, f"precisions {set(res)}")
    e64 = res["fp64"]["errors"]
    for p in ["fp32", "fp16"]:
        for n in ["n1", "n10"]:
            check(res[p]["errors"][n] > 0, f"{p} error {n}")
    for n in ["n1", "n10"]:
        check(abs(res["fp32"]["errors"][n] - e64[n]) <= 1e-3 * e64[n], f"fp32 error {n} differs from fp64")
        check(res["fp64"]["difference_to_fp64"][n] < 1e-12, "fp64 differs from the reference")
        check(res["fp16"]["difference_to_fp64"][n] < 1e-2, "fp16 too far from fp64")
    for p, row in res.items():
        for key in ["median_seconds", "gflops", "mdofs_per_s", "mdofs_per_s_per_rhs"]:
            check(row[key] > 0, f"{p} {key} = {row[key]}")
        check(abs(row["mdofs_per_s"] - 3 * row["mdofs_per_s_per_rhs"]) <= 1e-6 * row["mdofs_per_s"], "MDoF/s total")
    for p, tol in [("fp64", 1e-13), ("fp32", 1e-6), ("fp16", 1e-4)]:
        check(res[p]["first_of_many_vs_alone"] <= tol, f"{p}: many right-hand sides differ from one alone")
    check(j["flops_per_rhs"] > 0 and j["nnz"]["per_n"]["pi_inverse"] > 0, "flops / nnz")
    check(j["config"]["coarse_level_auto"] is False and j["config"]["rhs"] == 3, "config")


def test_auto_coarse_level_and_squares():
    for mesh in ["square-q1", "square-p1"]:
        r = run(["--mesh", mesh, "--level", "4", "--precision", "fp64,fp16", "--repetitions", "1"])
        check(r.returncode == 0, f"{mesh} exit {r.returncode}: {r.stderr}")
        check("(auto: fewest FLOPs)" in r.stdout, f"{mesh}: auto coarse level not reported")
        check("fp32 " not in r.stdout, f"{mesh}: fp32 ran though not asked for")


def test_mesh_table():
    r = run(["--mesh", "flow-square", "--level", "3", "--mesh-table"])
    check(r.returncode == 0, f"mesh table exit {r.returncode}: {r.stderr}")
    lines = [l.split() for l in r.stdout.splitlines() if l.strip()[:1].isdigit()]
    check([int(l[1]) for l in lines] == [7, 42, 196, 840], f"N per level {lines}")
    check([int(l[2]) for l in lines] == [28, 112, 448, 1792], f"elements per level {lines}")
    check(abs(float(lines[-1][4]) - 257.68) < 0.01, f"kappa at level 3: {lines[-1]}")


def test_quiet():
    r = run(["--mesh", "square-q1", "--level", "3", "--quiet", "--condition", "off"])
    check(r.returncode == 0 and r.stdout == "", f"--quiet printed {r.stdout!r} (exit {r.returncode})")


def test_bad_input(tmp):
    path = os.path.join(tmp, "bad.json")
    cases = [
        (["--mesh", "circle"], "--mesh"),
        (["--level", "13"], "--level"),
        (["--level", "-1"], "--level"),
        (["--level", "abc"], "--level"),
        (["--level", "4", "--coarse-level", "5"], "--coarse-level"),
        (["--coarse-level", "x"], "--coarse-level"),
        (["--precision", "fp8"], "--precision"),
        (["--precision", "fp64,"], "--precision"),
        (["--rhs", "0"], "--rhs"),
        (["--repetitions", "0"], "--repetitions"),
        (["--backend", "gpu"], "--backend"),
        (["--condition", "maybe"], "--condition"),
        (["--json", "/nonexistent-dir/x.json"], "--json"),
        (["--level", "12", "--json", path], "--level"),
        (["--level", "6", "--coarse-level", "1", "--rhs", "1000000", "--json", path], "--rhs"),
    ]
    for args, option in cases:
        r = run(args, timeout=60)
        check(r.returncode == 2, f"{args}: exit {r.returncode}, expected 2 ({r.stderr.strip()})")
        lines = r.stderr.strip().splitlines()
        check(len(lines) == 1 and option in r.stderr, f"{args}: stderr should be one line naming {option}: {r.stderr!r}")
        check(r.stdout == "", f"{args}: printed {r.stdout!r}")
    check(not os.path.exists(path), "a refused run wrote its report")
    r = run(["--level", "12"], timeout=60)
    check("needs an estimated" in r.stderr, f"memory refusal without the estimate: {r.stderr!r}")


def test_cuda_backend():
    # without a GPU (CI): refused as bad input; with one: a run
    r = run(["--mesh", "square-q1", "--level", "4", "--backend", "cuda", "--repetitions", "1"])
    if r.returncode == 2:
        check("--backend cuda" in r.stderr, f"cuda refusal should name --backend cuda: {r.stderr!r}")
    else:
        check(r.returncode == 0 and "fp16" in r.stdout, f"cuda run exit {r.returncode}: {r.stderr}")


with tempfile.TemporaryDirectory() as tmp:
    test_json_report(tmp)
    test_auto_coarse_level_and_squares()
    test_mesh_table()
    test_quiet()
    test_bad_input(tmp)
    test_cuda_backend()

if failures:
    for f in failures:
        print("FAIL:", f)
    sys.exit(1)
