#!/usr/bin/env python3
"""End-to-end tests of `tcfem bench` (CPU backend) and of bench/scripts/plot_bench.py.

Usage: test_bench.py TCFEM_BINARY PLOT_BENCH_SCRIPT [GMSH_MESH_WRITER]
(without the mesh writer, a build without Gmsh: --geometry mesh must say so)
"""
import json
import math
import os
import subprocess
import sys
import tempfile

TCFEM = sys.argv[1]
PLOT = sys.argv[2]
MESH_WRITER = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else None
failures = []

ROW_FIELDS = [
    "git_sha", "backend", "device", "sm_clock_ghz", "dim", "degree", "disc", "geometry", "quadrature", "path",
    "precision", "variant", "target_dofs", "n_dofs", "n_cells", "cells_per_direction", "repetitions", "warmup",
    "median_seconds", "min_seconds", "max_seconds", "gdof_per_s", "gb_per_s", "dram_bytes_per_apply",
    "flops_per_apply", "flop_per_dof", "tflop_per_s", "shared_bytes_per_apply", "shared_tb_per_s",
    "arithmetic_intensity", "shared_intensity", "dram_fraction", "shared_fraction", "compute_ceiling",
    "compute_fraction", "fp64_fma_fraction", "dmma_fraction", "hmma_fraction", "operator_bytes", "check_rel_diff",
    "check_tolerance", "check_passed",
]


def run(args, timeout=300):
    return subprocess.run([TCFEM] + args, capture_output=True, text=True, timeout=timeout)


def plot(args, timeout=300):
    return subprocess.run([sys.executable, PLOT] + args, capture_output=True, text=True, timeout=timeout)


def check(cond, what):
    if not cond:
        failures.append(what)


def load(path):
    with open(path) as f:
        return json.load(f)


def test_cpu_report(tmp):
    path = os.path.join(tmp, "cpu.json")
    r = run(["bench", "--backend", "cpu", "--dim", "3", "--degrees", "2,3", "--dofs", "2e4", "--repetitions", "3",
             "--json", path])
    check(r.returncode == 0, f"cpu bench exit {r.returncode}: {r.stderr}")
    check(r.stderr == "", f"cpu bench wrote to stderr: {r.stderr!r}")
    for word in ["variant", "GDoF/s", "generic", "wrote"]:
        check(word in r.stdout, f"cpu bench output lacks '{word}'")
    if not os.path.exists(path):
        check(False, "cpu bench wrote no report")
        return None
    j = load(path)
    check(j.get("command") == "bench" and j.get("backend") == "cpu", "report header")
    check(isinstance(j.get("git_sha"), str) and j["git_sha"], "report git_sha")
    check(j.get("ceilings") is None, "cpu report has no ceilings")
    check(j["config"]["degrees"] == [2, 3] and j["config"]["variants"] == ["generic"], f"config {j['config']}")
    rows = j.get("rows", [])
    check(len(rows) == 2, f"expected 2 rows (degrees 2, 3 in fp64), got {len(rows)}")
    for row in rows:
        missing = [k for k in ROW_FIELDS if k not in row]
        check(not missing, f"row lacks {missing}")
        if missing:
            continue
        k = row["degree"]
        check(row["n_dofs"] >= 2e4 and row["n_dofs"] == (row["cells_per_direction"] * k + 1) ** 3,
              f"Q{k}: n_dofs {row['n_dofs']} for {row['cells_per_direction']}^3 cells")
        check((row["cells_per_direction"] - 1) * k + 1 < 2e4 ** (1 / 3) + 1e-9, f"Q{k}: more cells than needed")
        check(0 < row["min_seconds"] <= row["median_seconds"] <= row["max_seconds"], f"Q{k}: times")
        check(math.isclose(row["gdof_per_s"], row["n_dofs"] / row["median_seconds"] * 1e-9, rel_tol=1e-9),
              f"Q{k}: gdof_per_s")
        check(math.isclose(row["gb_per_s"], row["dram_bytes_per_apply"] / row["median_seconds"] * 1e-9, rel_tol=1e-9),
              f"Q{k}: gb_per_s")
        check(row["dram_bytes_per_apply"] >= 16 * row["n_dofs"], f"Q{k}: DRAM bytes below 2 fp64 vectors")
        expected = {"backend": "cpu", "dim": 3, "disc": "cg", "geometry": "cartesian", "precision": "fp64",
                    "variant": "generic", "repetitions": 3, "warmup": 3, "target_dofs": 2e4}
        for key, value in expected.items():
            check(row[key] == value, f"Q{k}: {key} = {row[key]!r}, expected {value!r}")
        check(row["check_rel_diff"] is None, "the fp64 generic row is the reference: no check")
    return path


def test_cpu_fp32_check_and_quiet(tmp):
    path = os.path.join(tmp, "fp32.json")
    r = run(["bench", "--backend", "cpu", "--dim", "2", "--degrees", "1-2", "--dofs", "1e3,4e3", "--precisions",
             "fp64,fp32", "--geometry", "deformed", "--disc", "dg", "--repetitions", "2", "--warmup", "0",
             "--quiet", "--json", path])
    check(r.returncode == 0, f"fp32 bench exit {r.returncode}: {r.stderr}")
    check(r.stdout == "", f"--quiet printed {r.stdout!r}")
    if r.returncode != 0:
        return
    rows = load(path)["rows"]
    check(len(rows) == 8, f"expected 8 rows (2 precisions x 2 degrees x 2 sizes), got {len(rows)}")
    for row in rows:
        check(row["path"] == "general" and row["operator_bytes"] > 0, "deformed geometry runs the general path")
        if row["precision"] == "fp32":
            check(row["check_rel_diff"] is not None and row["check_rel_diff"] < 1e-5 and row["check_passed"] is True,
                  f"fp32 check: {row['check_rel_diff']} {row['check_passed']}")
            check(row["check_tolerance"] == 1e-5, "fp32 tolerance")


def test_cpu_mapped_geometry(tmp):
    # the quarter annulus, and the map quadratic in each coordinate (cells of geometry order 2)
    for geometry, dim in [("map", 3), ("quadratic", 3), ("quadratic", 2)]:
        path = os.path.join(tmp, f"{geometry}{dim}.json")
        r = run(["bench", "--backend", "cpu", "--dim", str(dim), "--degrees", "2", "--dofs", "2e3", "--precisions",
                 "fp64,fp32", "--geometry", geometry, "--repetitions", "2", "--warmup", "0", "--quiet", "--json",
                 path])
        check(r.returncode == 0, f"{geometry} bench exit {r.returncode}: {r.stderr}")
        if r.returncode != 0:
            continue
        data = load(path)
        rows = data["rows"]
        check(len(rows) == 2, f"expected 2 rows (2 precisions), got {len(rows)}")
        for row in rows:
            check(row["geometry"] == geometry and row["path"] == "general",
                  f"{geometry} geometry: {row['geometry']} {row['path']}")
            if row["precision"] == "fp32":
                check(row["check_passed"] is True and row["check_rel_diff"] < 1e-5,
                      f"fp32 on the {geometry} map: {row['check_rel_diff']}")


def test_mesh_geometry(tmp):
    """--geometry mesh: a Gmsh mesh's structured block (the quarter annulus, order 2), refined to the
    target DoFs, on the general path, fp32 checked against fp64; bad meshes and options."""
    missing = os.path.join(tmp, "absent.msh")
    if MESH_WRITER is None:
        r = run(["bench", "--backend", "cpu", "--dim", "2", "--geometry", "mesh", "--mesh", missing])
        check(r.returncode == 2 and "built without Gmsh" in r.stderr, f"mesh bench without Gmsh: {r.stderr}")
        return

    def write(args, name):
        path = os.path.join(tmp, name)
        w = subprocess.run([MESH_WRITER] + [str(a) for a in args] + [path], capture_output=True, text=True)
        check(w.returncode == 0, f"gmsh_mesh_writer {args}: {w.stderr}")
        return path

    for dim, n, version, degrees, target in [(2, 3, "4.1", "2,3", 2e3), (3, 2, "2.2", "2", 3e3)]:
        mesh = write(["annulus", dim, n, 2, version], f"annulus{dim}d.msh")
        path = os.path.join(tmp, f"mesh{dim}.json")
        r = run(["bench", "--backend", "cpu", "--dim", str(dim), "--geometry", "mesh", "--mesh", mesh, "--degrees",
                 degrees, "--dofs", str(target), "--precisions", "fp64,fp32", "--repetitions", "2", "--warmup", "0",
                 "--json", path])
        check(r.returncode == 0, f"mesh bench {dim}D exit {r.returncode}: {r.stderr}")
        if r.returncode != 0:
            continue
        data = load(path)
        check(data["config"]["geometry"] == "mesh" and data["config"]["mesh"] == mesh, f"mesh config {data['config']}")
        rows = data["rows"]
        check(len(rows) == 2 * len(degrees.split(",")), f"mesh bench {dim}D: {len(rows)} rows")
        for row in rows:
            k, m = row["degree"], row["mesh_refinement"]
            check(row["geometry"] == "mesh" and row["path"] == "general" and row["mesh"] == mesh,
                  f"mesh row: {row['geometry']} {row['path']} {row.get('mesh')}")
            check(row["cells"] == [n * m] * dim and row["n_cells"] == (n * m) ** dim,
                  f"mesh row cells {row['cells']} for refinement {m}")
            # the smallest refinement that reaches the target
            dofs = lambda mm: (n * mm * k + 1) ** dim
            check(row["n_dofs"] == dofs(m) and dofs(m) >= target and (m == 1 or dofs(m - 1) < target),
                  f"mesh row {dim}D k={k}: refinement {m}, {row['n_dofs']} DoFs for target {target}")
            if row["precision"] == "fp32":
                check(row["check_passed"] is True and row["check_rel_diff"] < 1e-5,
                      f"fp32 on the mesh: {row['check_rel_diff']}")

    def refused(args, part):
        r = run(["bench", "--backend", "cpu", "--degrees", "2", "--dofs", "1e3"] + args)
        check(r.returncode == 2 and part in r.stderr, f"bench {args}: exit {r.returncode}, stderr {r.stderr!r}")

    refused(["--dim", "2", "--geometry", "mesh"], "--mesh FILE")
    refused(["--geometry-storage", "fp32"], "--geometry map, trilinear, quadratic or mesh")
    refused(["--geometry", "map", "--geometry-storage", "fp32"], "--backend cuda")
    refused(["--geometry", "map", "--geometry-form", "mf", "--geometry-storage", "fp32"], "stores no geometry")
    refused(["--dim", "2", "--mesh", os.path.join(tmp, "annulus2d.msh")], "--geometry mesh only")
    refused(["--dim", "2", "--geometry", "mesh", "--mesh", missing], "cannot read")
    refused(["--dim", "3", "--geometry", "mesh", "--mesh", write(["simplex", 3], "tets.msh")], "tetrahedra")
    refused(["--dim", "2", "--geometry", "mesh", "--mesh", write(["unstructured", 2], "unstructured.msh")],
            "not one structured block")


def test_skipped_and_strict(tmp):
    path = os.path.join(tmp, "skip.json")
    r = run(["bench", "--backend", "cpu", "--degrees", "2", "--dofs", "1e3", "--repetitions", "1", "--variants",
             "generic,tensor-core", "--json", path, "--quiet"])
    check(r.returncode == 0, f"variants generic,tensor-core on cpu: exit {r.returncode}: {r.stderr}")
    if r.returncode == 0:
        j = load(path)
        check(len(j["rows"]) == 1 and j["rows"][0]["variant"] == "generic", "one generic row")
        check([s["variant"] for s in j["skipped"]] == ["tensor-core"], f"skipped: {j['skipped']}")
    out = os.path.join(tmp, "strict.json")
    r = run(["bench", "--backend", "cpu", "--degrees", "2", "--dofs", "1e3", "--variants", "tensor-core",
             "--precisions", "fp64", "--json", out])
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    check(r.returncode == 2 and len(lines) == 1 and "--variants" in lines[0],
          f"one unsupported variant and precision: exit {r.returncode}, {lines!r}")
    check(not os.path.exists(out), "strict refusal left a file")


def test_bad_input(tmp):
    cases = [
        (["--degrees", "0"], "--degrees"), (["--degrees", "9"], "--degrees"), (["--degrees", "1-9"], "--degrees"),
        (["--degrees", "3-2"], "--degrees"), (["--degrees", "two"], "--degrees"), (["--degrees", "2,,3"], "--degrees"),
        (["--degrees", ""], "--degrees"), (["--dofs", "0"], "--dofs"), (["--dofs", "-5"], "--dofs"),
        (["--dofs", "many"], "--dofs"), (["--dofs", "1e13"], "--dofs"), (["--dofs", "nan"], "--dofs"),
        (["--dofs", "1e5x"], "--dofs"), (["--precisions", "fp128"], "--precisions"),
        (["--precisions", "fp64,"], "--precisions"), (["--variants", "fast"], "--variants"), (["--dim", "4"], "--dim"),
        (["--disc", "fem"], "--disc"), (["--geometry", "round"], "--geometry"), (["--quadrature", "bp9"], "--quadrature"),
        (["--repetitions", "0"], "--repetitions"), (["--repetitions", "many"], "--repetitions"),
        (["--warmup", "-1"], "--warmup"), (["--backend", "fpga"], "--backend"), (["--ceilings"], "--ceilings"),
        (["--json", "/nonexistent-dir/b.json"], "--json"), (["--frobnicate"], "--frobnicate"),
        # memory: refused before allocating, quickly
        (["--dofs", "1e12", "--degrees", "8"], "memory"),
    ]
    for args, option in cases:
        out = os.path.join(tmp, "bad.json")
        extra = [] if "--json" in args else ["--json", out]
        r = run(["bench", "--backend", "cpu", "--repetitions", "1"] + args + extra, timeout=30)
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        check(r.returncode == 2, f"{args}: exit {r.returncode}, expected 2 (stderr {r.stderr!r})")
        check(len(lines) == 1, f"{args}: expected one line on stderr, got {lines!r}")
        check(lines and option in lines[0], f"{args}: message does not name {option}: {lines!r}")
        check(not os.path.exists(out), f"{args}: left an output file")
        check(not [f for f in os.listdir(tmp) if ".tmp." in f], f"{args}: left a temporary file")
    r = run(["bench", "--help"])
    check(r.returncode == 0 and "--degrees" in r.stdout and "--ceilings" in r.stdout, "bench --help")


def test_cuda_without_device(tmp):
    """Without a usable GPU (or CUDA backend), --backend cuda is a clear input error and writes nothing."""
    out = os.path.join(tmp, "cuda.json")
    for extra in [[], ["--ceilings"]]:
        r = run(["bench", "--backend", "cuda", "--degrees", "1", "--dofs", "1e3", "--repetitions", "1", "--quiet",
                 "--json", out] + extra)
        if r.returncode == 0:
            return  # a GPU is present
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        check(r.returncode == 2, f"--backend cuda {extra} without device: exit {r.returncode}")
        check(len(lines) == 1 and "--backend cuda" in lines[0], f"--backend cuda message: {lines!r}")
        check(not os.path.exists(out), "--backend cuda without device left a file")


def synthetic_report(path):
    """A CUDA-like report with ceilings, rows of two variants and precisions over degrees and sizes."""
    ceilings = {"runs": 5, "dram_buffer_bytes": 4 << 30, "dram_tb_per_s": 4.3, "dram_copy_kernel_tb_per_s": 3.96,
                "dram_memcpy_tb_per_s": 4.3, "fp64_fma_tflop_per_s": 31.6, "fp32_fma_tflop_per_s": 60.0,
                "dmma_m8n8k4_tflop_per_s": 33.2, "dmma_m16n8k16_tflop_per_s": 66.7, "hmma_f16_tflop_per_s": 629.0,
                "tf32_mma_tflop_per_s": None, "shared_load_tb_per_s": 32.7}
    rows = []
    for variant, precision, value in [("generic", "fp64", 8), ("tensor-core", "fp64", 8), ("generic", "fp32", 4)]:
        for k in range(1, 9):
            for n in [1e6, 3e7]:
                median = n * (1 + 0.2 * k) / (1e11 if variant == "generic" else 2e11)
                flops = n * 20.0 * (k + 1)
                dram = 2.0 * value * n
                shared = flops / (2 if variant == "generic" else 6)
                rows.append({"variant": variant, "precision": precision, "degree": k, "n_dofs": int(n),
                             "target_dofs": n, "median_seconds": median, "gdof_per_s": n / median * 1e-9,
                             "tflop_per_s": flops / median * 1e-12, "arithmetic_intensity": flops / dram,
                             "shared_intensity": flops / shared, "gb_per_s": dram / median * 1e-9})
    with open(path, "w") as f:
        json.dump({"command": "bench", "backend": "cuda", "ceilings": ceilings, "rows": rows}, f)


def test_plots(tmp, cpu_report):
    pngs = ["roofline_dram.png", "roofline_shared.png", "gdofs_vs_degree.png", "gdofs_vs_dofs.png"]
    synthetic = os.path.join(tmp, "synthetic.json")
    synthetic_report(synthetic)
    inputs = [("synthetic", [synthetic]), ("both", [synthetic] + ([cpu_report] if cpu_report else []))]
    if cpu_report:
        inputs.append(("cpu", [cpu_report]))
    for name, files in inputs:
        out = os.path.join(tmp, "plots_" + name)
        r = plot(["--out", out] + files)
        check(r.returncode == 0, f"plot {name}: exit {r.returncode}: {r.stderr}")
        for png in pngs:
            p = os.path.join(out, png)
            check(os.path.exists(p) and os.path.getsize(p) > 1000, f"plot {name}: {png} missing or empty")
    # bad input: one line on stderr, exit 2
    not_bench = os.path.join(tmp, "not_bench.json")
    with open(not_bench, "w") as f:
        json.dump({"command": "solve"}, f)
    broken = os.path.join(tmp, "broken.json")
    with open(broken, "w") as f:
        f.write("{\"command\": \"bench\", \"rows\": [")
    no_field = os.path.join(tmp, "no_field.json")
    with open(no_field, "w") as f:
        json.dump({"command": "bench", "rows": [{"variant": "generic"}]}, f)
    for bad in [os.path.join(tmp, "missing.json"), not_bench, broken, no_field]:
        r = plot(["--out", os.path.join(tmp, "bad_plots"), bad])
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        check(r.returncode == 2 and len(lines) == 1 and os.path.basename(bad) in lines[0],
              f"plot of {os.path.basename(bad)}: exit {r.returncode}, {lines!r}")
    check(not os.path.exists(os.path.join(tmp, "bad_plots")), "plot of bad input created its output folder")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        cpu_report = test_cpu_report(tmp)
        test_cpu_fp32_check_and_quiet(tmp)
        test_cpu_mapped_geometry(tmp)
        test_mesh_geometry(tmp)
        test_skipped_and_strict(tmp)
        test_bad_input(tmp)
        test_cuda_without_device(tmp)
        test_plots(tmp, cpu_report)
    for f in failures:
        print("FAIL:", f)
    if failures:
        print(f"{len(failures)} checks failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
