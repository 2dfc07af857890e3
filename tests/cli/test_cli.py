#!/usr/bin/env python3
"""End-to-end tests of `tcfem solve`: default run, JSON report, bad input, non-convergence.

Usage: test_cli.py TCFEM_BINARY
"""
import json
import os
import subprocess
import sys
import tempfile

TCFEM = sys.argv[1]
failures = []


def run(args, timeout=300):
    return subprocess.run([TCFEM] + args, capture_output=True, text=True, timeout=timeout)


def check(cond, what):
    if not cond:
        failures.append(what)


def test_default_run():
    """The default: FGMRES with a multigrid V-cycle (patch smoother) from a full-multigrid start, on
    the GPU where one is present; the summary's first line says which backend and why."""
    r = run(["solve"])
    check(r.returncode == 0, f"default run exit {r.returncode}: {r.stderr}")
    for word in ["DoFs", "FGMRES iterations", "multigrid", "full-multigrid start", "relative residual", "L2",
                 "H1-semi", "MDoF/s", "total", "vertex patch"]:
        check(word in r.stdout, f"default summary lacks '{word}'")
    first = r.stdout.splitlines()[0] if r.stdout else ""
    check("backend cpu (auto: no usable CUDA device" in first or "backend cuda (auto: " in first,
          f"first line does not say which backend and why: {first!r}")
    check(r.stderr == "", f"default run wrote to stderr: {r.stderr!r}")
    # --precond jacobi alone: Jacobi-preconditioned CG
    r = run(["solve", "--precond", "jacobi", "--cells", "4"])
    check(r.returncode == 0 and "CG iterations (Jacobi)" in r.stdout, f"--precond jacobi: {r.stdout!r} {r.stderr!r}")
    # an explicit backend is reported as requested
    r = run(["solve", "--backend", "cpu", "--cells", "2", "--degree", "2"])
    check(r.returncode == 0 and "backend cpu (requested)" in r.stdout, f"--backend cpu: {r.stdout!r}")


def test_threads_and_tuning(tmp):
    """--threads N gives the same solution as all threads; --tuning files are checked key by key."""
    out = {}
    for threads in ["1", "0"]:
        path = os.path.join(tmp, f"threads{threads}.json")
        r = run(["solve", "--dim", "2", "--degree", "3", "--cells", "6", "--threads", threads, "--json", path,
                 "--quiet"])
        check(r.returncode == 0, f"--threads {threads}: exit {r.returncode} {r.stderr}")
        with open(path) as f:
            out[threads] = json.load(f)
    check(out["1"]["config"]["threads"] == 1, f"config.threads = {out['1']['config'].get('threads')}")
    check(out["1"]["errors"]["l2"] == out["0"]["errors"]["l2"], "one thread and all threads disagree")
    good = os.path.join(tmp, "tuning.json")
    with open(good, "w") as f:
        json.dump({"cuda_core": {"items_per_worker": 4}, "cuda_core_geometry": {"min_blocks_per_sm": "auto", "prefetch": False},
                   "patch_smoother": {"contraction": "dense", "carveout": "driver"}}, f)
    path = os.path.join(tmp, "tuned.json")
    r = run(["solve", "--cells", "2", "--degree", "2", "--tuning", good, "--json", path, "--quiet"])
    check(r.returncode == 0, f"--tuning: exit {r.returncode} {r.stderr}")
    with open(path) as f:
        t = json.load(f)["config"]["tuning"]
    check(t["cuda_core"]["items_per_worker"] == 4 and t["cuda_core"]["waves"] == "auto" and
          t["patch_smoother"]["contraction"] == "dense" and t["patch_smoother"]["carveout"] == "driver" and
          t["cuda_core_geometry"]["prefetch"] is False and t["cuda_core_geometry"]["cells_per_block"] == "auto",
          f"config.tuning = {t!r}")
    bad_files = [
        ('{"cuda_core": {"items": 4}}', "items"), ('{"warp_drive": {}}', "warp_drive"),
        ('{"patch_smoother": {"contraction": "sparse"}}', "contraction"),
        ('{"patch_smoother": {"carveout": 101}}', "carveout"),
        ('{"cuda_core_geometry": {"min_blocks_per_sm": 2}}', "min_blocks_per_sm"),
        ('{"cuda_core_geometry": {"prefetch": "yes"}}', "prefetch"),
        ('{"cuda_core": {"waves": -1}}', "waves"), ('{"cuda_core": ', "JSON"), ('[1, 2]', "object"),
    ]
    for text, word in bad_files:
        bad = os.path.join(tmp, "bad_tuning.json")
        with open(bad, "w") as f:
            f.write(text)
        out_json = os.path.join(tmp, "bad.json")
        for cmd in (["solve", "--cells", "2"], ["bench", "--backend", "cpu", "--degrees", "1", "--dofs", "1e3"]):
            r = run(cmd + ["--tuning", bad, "--json", out_json])
            lines = [l for l in r.stderr.splitlines() if l.strip()]
            check(r.returncode == 2 and len(lines) == 1 and "--tuning" in lines[0] and word in lines[0],
                  f"{cmd[0]} --tuning {text}: exit {r.returncode}, {lines!r}")
            check(not os.path.exists(out_json), f"{cmd[0]} --tuning {text}: left an output file")
    r = run(["solve", "--tuning", os.path.join(tmp, "missing.json")])
    check(r.returncode == 2 and "--tuning" in r.stderr, f"missing tuning file: {r.returncode} {r.stderr!r}")
    r = run(["solve", "--threads", "-3"])
    check(r.returncode == 2 and "--threads" in r.stderr, f"--threads -3: {r.returncode} {r.stderr!r}")


def test_quiet():
    r = run(["solve", "--quiet", "--cells", "2", "--degree", "2"])
    check(r.returncode == 0 and r.stdout == "", f"--quiet printed {r.stdout!r} (exit {r.returncode})")


def test_json_report(tmp):
    path = os.path.join(tmp, "report.json")
    r = run(["solve", "--dim", "2", "--degree", "3", "--cells", "4", "--disc", "dg", "--geometry", "deformed",
             "--tol", "1e-11", "--json", path, "--quiet"])
    check(r.returncode == 0, f"json run exit {r.returncode}: {r.stderr}")
    with open(path) as f:
        j = json.load(f)
    for key in ["n_dofs", "iterations", "converged", "final_relative_residual", "errors", "timings", "config",
                "residual_history"]:
        check(key in j, f"JSON lacks '{key}'")
    check(j["n_dofs"] == 16 * 16, f"dg Q3 4x4 should have 256 DoFs, report says {j['n_dofs']}")
    check(j["converged"] is True, "JSON converged should be true")
    check(j["final_relative_residual"] <= 1e-11, "final residual above tolerance")
    for key in ["l2", "h1_semi"]:
        check(0 < j["errors"][key] < 1e-1, f"errors.{key} = {j['errors'].get(key)}")
    for key in ["setup", "solve", "total"]:
        check(j["timings"][key] >= 0, f"timings.{key} missing or negative")
    cfg = j["config"]
    expected = {"dim": 2, "degree": 3, "cells_per_direction": 4, "disc": "dg", "geometry": "deformed",
                "tol": 1e-11, "backend": "cpu"}
    for key, value in expected.items():
        check(cfg.get(key) == value, f"config.{key} = {cfg.get(key)!r}, expected {value!r}")
    # cg: all DoFs of the space, boundary included
    path2 = os.path.join(tmp, "cg.json")
    r = run(["solve", "--dim", "3", "--degree", "2", "--refine", "2", "--json", path2, "--quiet"])
    check(r.returncode == 0, f"cg json run exit {r.returncode}")
    with open(path2) as f:
        j = json.load(f)
    check(j["n_dofs"] == 9 ** 3, f"cg Q2 4^3 should have 729 DoFs, report says {j['n_dofs']}")
    check(j["config"]["cells_per_direction"] == 4 and j["config"]["refine"] == 2, "refine not reported")


def test_bad_input(tmp):
    cases = [
        (["--degree", "9"], "--degree"), (["--degree", "0"], "--degree"), (["--cells", "0"], "--cells"),
        (["--cells", "-4"], "--cells"), (["--tol", "0"], "--tol"), (["--tol", "-1e-3"], "--tol"),
        (["--tol", "2"], "--tol"), (["--max-iter", "0"], "--max-iter"), (["--dim", "4"], "--dim"),
        (["--disc", "fem"], "--disc"), (["--geometry", "round"], "--geometry"), (["--frobnicate"], "--frobnicate"),
        (["--degree", "three"], "--degree"), (["--refine", "-1"], "--refine"), (["--refine", "99"], "--refine"),
        (["--cells", "100000"], "--cells"), (["--refine", "14"], "--refine"), (["--cells", "2", "--refine", "1"], "--cells"),
        (["--json", "/nonexistent-dir/r.json"], "--json"), (["--vtu", "/nonexistent-dir/r.vtu"], "--vtu"),
        (["--backend", "fpga"], "--backend"), (["--variant", "generic"], "--variant"),
        (["--variant", "warp-drive"], "--variant"), (["--quadrature", "bp9"], "--quadrature"),
        (["--geometry-storage", "fp16"], "--geometry-storage"),
        (["--backend", "cpu", "--geometry-storage", "fp32"], "--geometry-storage"),
    ]
    for args, option in cases:
        out = os.path.join(tmp, "bad.json")
        extra = [] if any(a.startswith("--json") for a in args) else ["--json", out]
        r = run(["solve"] + args + extra)
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        check(r.returncode == 2, f"{args}: exit {r.returncode}, expected 2 (stderr {r.stderr!r})")
        check(len(lines) == 1, f"{args}: expected one line on stderr, got {lines!r}")
        check(lines and option in lines[0], f"{args}: message does not name {option}: {lines!r}")
        check(not os.path.exists(out), f"{args}: left an output file")
        check(not [f for f in os.listdir(tmp) if ".tmp." in f], f"{args}: left a temporary file")
    r = run([])
    check(r.returncode == 2, f"no command: exit {r.returncode}")
    r = run(["solve", "--help"])
    check(r.returncode == 0 and "--degree" in r.stdout, "solve --help")


def test_memory_refusal_is_fast():
    r = run(["solve", "--dim", "3", "--degree", "8", "--cells", "4000"], timeout=20)
    check(r.returncode == 2 and "memory" in r.stderr, f"huge problem: exit {r.returncode}, {r.stderr!r}")


def test_not_converged(tmp):
    path = os.path.join(tmp, "nc.json")
    r = run(["solve", "--precond", "jacobi", "--max-iter", "2", "--json", path, "--quiet"])
    check(r.returncode == 3, f"non-convergence exit {r.returncode}, expected 3")
    check(os.path.exists(path), "non-converged run wrote no report")
    if os.path.exists(path):
        with open(path) as f:
            j = json.load(f)
        check(j["converged"] is False and j["iterations"] == 2, "report of the non-converged run")


def test_paths_agree(tmp):
    """The Kronecker, general and assembled operator paths give the same discrete solution."""
    errors = {}
    for path in ["auto", "general", "assembled"]:
        out = os.path.join(tmp, f"path_{path}.json")
        r = run(["solve", "--dim", "2", "--degree", "3", "--cells", "5", "--disc", "dg", "--tol", "1e-13",
                 "--precond", "jacobi", "--operator-path", path, "--json", out, "--quiet"])
        check(r.returncode == 0, f"--operator-path {path}: exit {r.returncode} {r.stderr}")
        with open(out) as f:
            errors[path] = json.load(f)["errors"]["l2"]
    ref = errors["auto"]
    for path, e in errors.items():
        check(abs(e - ref) <= 1e-9 * ref, f"--operator-path {path}: L2 error {e} differs from {ref}")
    r = run(["solve", "--operator-path", "assembled", "--backend", "cuda"])
    check(r.returncode == 2 and "--operator-path" in r.stderr, "assembled + cuda must be refused")


def test_cuda_backend_without_device():
    """Without a usable GPU (or without the CUDA backend), --backend cuda is a clear input error."""
    r = run(["solve", "--backend", "cuda", "--cells", "2", "--degree", "2", "--quiet"])
    if r.returncode == 0:
        return  # a GPU is present
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    check(r.returncode == 2, f"--backend cuda without device: exit {r.returncode}")
    check(len(lines) == 1 and "--backend cuda" in lines[0], f"--backend cuda message: {lines!r}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_default_run()
        test_quiet()
        test_json_report(tmp)
        test_bad_input(tmp)
        test_memory_refusal_is_fast()
        test_not_converged(tmp)
        test_paths_agree(tmp)
        test_threads_and_tuning(tmp)
    test_cuda_backend_without_device()
    for f in failures:
        print("FAIL:", f)
    if failures:
        print(f"{len(failures)} checks failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
