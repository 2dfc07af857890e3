#!/usr/bin/env python3
"""`tcfem bench` on several MPI ranks: each measurement's box cut into one sub-box per rank.

The input of every measurement is a function of the global DoF index, so ||A x|| (a row's
`output_norm`, summed over the owned entries of every rank) must be the same on 1, 2 and 3 ranks up
to rounding: that checks the partition, the ghost exchange and each kernel family on its ghosted
sub-box. Each row is also checked against the generic fp64 operator on the same ranks. The report
gives the ranks, the process grid, the exchange and every rank's median; the summary is printed
once. Uneven sub-boxes, one cell per rank along a direction, cg and dg, Cartesian, deformed and
mapped geometry. Bad input (more ranks than cells, --ceilings, exchange options on the CPU backend,
--backend cuda without a GPU) ends every rank with exit 2, one message and no report.

With --gpu every run takes --backend cuda (one GPU per rank) on 1 and 2 ranks, on each exchange path
of the build and machine, every kernel family; without two usable GPUs the test skips.

Usage: test_mpi_bench.py TCFEM_BINARY MPIEXEC [--gpu]   (MPIEXEC may carry options)
"""
import json
import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_cli import GPU, check, finish, run  # noqa: E402  (the command line, the runner, the failures)


def bench(tmp, ranks, args, name):
    report = os.path.join(tmp, f"{name}.{ranks}.json")
    r = run(ranks, ["bench", "--threads", "1", "--repetitions", "2", "--warmup", "1", "--json", report] + args)
    data = None
    if r.returncode == 0 and os.path.exists(report):
        with open(report) as f:
            data = json.load(f)
    return r, data


def key(row):
    return (row["variant"], row["precision"], row["degree"], row["geometry_form"])


def same_bench(tmp, name, args, rank_counts=(2, 3), multi_args=(), exchange=None, overlapped=None):
    """Every row on every rank count: the same DoFs and output norm as on one rank, its check passed.
    exchange: how the rows' exchange begins; overlapped: whether they ran it beside the interior cells."""
    r1, ref = bench(tmp, 1, args, name)
    check(r1.returncode == 0 and ref is not None, f"{name}: one rank: exit {r1.returncode} {r1.stderr}")
    if ref is None:
        return
    check(ref["distributed"]["ranks"] == 1 and all("distributed" not in row for row in ref["rows"]),
          f"{name}: one rank's report names ranks")
    ref_rows = {key(row): row for row in ref["rows"]}
    check(len(ref_rows) > 0, f"{name}: no rows")
    for ranks in rank_counts:
        r, data = bench(tmp, ranks, args + list(multi_args), name)
        check(r.returncode == 0 and data is not None, f"{name}: {ranks} ranks: exit {r.returncode} {r.stderr}")
        if data is None:
            continue
        check(r.stdout.count("tcfem bench:") == 1, f"{name}: {ranks} ranks: the summary printed more than once")
        check(r.stderr == "", f"{name}: {ranks} ranks: stderr {r.stderr!r}")
        check(data["distributed"]["ranks"] == ranks and data["check_failures"] == 0,
              f"{name}: {ranks} ranks: report {data['distributed']}, {data['check_failures']} check failures")
        rows = {key(row): row for row in data["rows"]}
        check(set(rows) == set(ref_rows), f"{name}: {ranks} ranks: rows {sorted(rows)} against {sorted(ref_rows)}")
        for k, row in rows.items():
            if k not in ref_rows:
                continue
            one = ref_rows[k]
            what = f"{name}: {ranks} ranks, {k}"
            dist = row.get("distributed", {})
            check(dist.get("ranks") == ranks and math.prod(dist.get("process_grid", [0])) == ranks and
                  len(dist.get("rank_median_seconds", [])) == ranks and len(dist.get("rank_local_dofs", [])) == ranks,
                  f"{what}: distributed fields {dist}")
            check(sum(dist.get("rank_local_dofs", [])) >= row["n_dofs"] and dist.get("max_neighbours", 0) >= 1 and
                  dist.get("max_bytes_sent_per_apply", 0) > 0, f"{what}: local entries and messages {dist}")
            check(row["median_seconds"] >= max(dist.get("rank_median_seconds", [0])) * (1 - 1e-12),
                  f"{what}: the median is not the slowest rank's")
            check(row["n_dofs"] == one["n_dofs"] and row["n_cells"] == one["n_cells"], f"{what}: DoFs or cells differ")
            tol = 1e-12 if row["precision"] == "fp64" else 1e-5
            a, b = row["output_norm"], one["output_norm"]
            check(a is not None and b is not None and b > 0 and abs(a - b) <= tol * b,
                  f"{what}: ||A x|| {a} against {b} on one rank")
            if row["check_passed"] is not None or one["check_passed"] is not None:
                check(row["check_passed"] is True, f"{what}: check {row['check_rel_diff']} > {row['check_tolerance']}")
            if exchange is not None:
                check(dist.get("exchange", "").startswith(exchange), f"{what}: exchange {dist.get('exchange')!r}")
            if overlapped is not None and row["variant"] == "cuda-core" and row["path"] == "cartesian":
                check(dist.get("exchange_overlapped") == overlapped,
                      f"{what}: exchange_overlapped {dist.get('exchange_overlapped')} (expected {overlapped})")


def expect_refused(tmp, name, ranks, args, part):
    report = os.path.join(tmp, name + ".refused.json")
    r = run(ranks, ["bench", "--json", report] + args, timeout=120)
    lines = [l for l in r.stderr.splitlines() if l.startswith("tcfem")]
    check(r.returncode == 2, f"{name}: exit {r.returncode} (expected 2); stderr {r.stderr!r}")
    check(len(lines) == 1 and part in lines[0], f"{name}: messages {lines!r} lack {part!r} (or repeat it)")
    check(not os.path.exists(report), f"{name}: a report was written")


def gpu_main():
    probe = run(2, ["bench", "--backend", "cuda", "--degrees", "1", "--dofs", "1000", "--variants", "generic",
                    "--repetitions", "1", "--quiet"], timeout=300)
    if probe.returncode != 0:
        lines = [l for l in probe.stderr.splitlines() if l.startswith("tcfem")] or ["exit %d" % probe.returncode]
        print("no CUDA device for each of 2 ranks: GPU tests skip (" + lines[0] + ")")
        return 0
    paths = {"auto": "CUDA IPC", "host-staged": "MPI on the host", "cuda-ipc": "CUDA IPC"}
    nccl = run(2, ["bench", "--backend", "cuda", "--degrees", "1", "--dofs", "1000", "--variants", "generic",
                   "--repetitions", "1", "--quiet", "--exchange", "nccl"])
    if nccl.returncode == 0:
        paths["nccl"] = "NCCL"
    else:
        check("no NCCL" in nccl.stderr, f"--exchange nccl refused without naming NCCL: {nccl.stderr}")
    cuda = ["--backend", "cuda", "--precisions", "fp64,fp32"]
    with tempfile.TemporaryDirectory() as tmp:
        for path, text in paths.items():
            same_bench(tmp, "gpu_box_" + path, cuda + ["--dim", "3", "--degrees", "2,5", "--dofs", "3e5"], (2,),
                       multi_args=["--exchange", path], exchange=text, overlapped=True)
        same_bench(tmp, "gpu_box_no_overlap", cuda + ["--dim", "3", "--degrees", "4", "--dofs", "3e5"], (2,),
                   multi_args=["--exchange-overlap", "off"], overlapped=False)
        same_bench(tmp, "gpu_box_2d", cuda + ["--dim", "2", "--degrees", "3,8", "--dofs", "2e5"], (2,))
        same_bench(tmp, "gpu_deformed", cuda + ["--dim", "3", "--geometry", "deformed", "--degrees", "3",
                                                "--dofs", "2e5"], (2,))
        same_bench(tmp, "gpu_dg", cuda + ["--dim", "3", "--disc", "dg", "--degrees", "2,4", "--dofs", "2e5"], (2,))
        for quad in ("bp5", "bp3"):
            for form in ("pa", "mf"):
                same_bench(tmp, "gpu_map_" + quad + "_" + form,
                           cuda + ["--dim", "3", "--geometry", "map", "--quadrature", quad, "--geometry-form", form,
                                   "--degrees", "2,4", "--dofs", "2e5"], (2,))
        same_bench(tmp, "gpu_map_bp3", cuda + ["--dim", "2", "--geometry", "map", "--degrees", "3",
                                               "--dofs", "2e5"], (2,))
    return finish("test_mpi_bench --gpu")


def main():
    if GPU:
        return gpu_main()
    cpu = ["--backend", "cpu", "--precisions", "fp64,fp32"]
    with tempfile.TemporaryDirectory() as tmp:
        # uneven sub-boxes (9 cells over 2 and 3 ranks), Cartesian and deformed
        same_bench(tmp, "box_3d", cpu + ["--dim", "3", "--degrees", "3", "--dofs", "2e4"])
        same_bench(tmp, "deformed_3d", cpu + ["--dim", "3", "--geometry", "deformed", "--degrees", "2",
                                              "--dofs", "1e4"])
        # one cell per rank along a direction: Q8 on 3 x 3 cells over 3 ranks
        same_bench(tmp, "one_cell_per_rank", cpu + ["--dim", "2", "--degrees", "8", "--dofs", "300"], (3,))
        # dg, the mapped box (the quarter annulus) and the trilinear map
        same_bench(tmp, "dg_3d", cpu + ["--dim", "3", "--disc", "dg", "--degrees", "2", "--dofs", "1e4"])
        same_bench(tmp, "map_dg_2d", cpu + ["--dim", "2", "--disc", "dg", "--geometry", "map", "--degrees", "2,5",
                                            "--dofs", "1e4"])
        same_bench(tmp, "trilinear_bp5", cpu + ["--dim", "3", "--geometry", "trilinear", "--quadrature", "bp5",
                                                "--degrees", "3", "--dofs", "1e4"])

        # bad input: every rank ends with exit 2 and one message, no report
        expect_refused(tmp, "too_many_ranks", 2, ["--backend", "cpu", "--dim", "2", "--degrees", "8", "--dofs", "10"],
                       "cannot be split")
        expect_refused(tmp, "ceilings", 2, ["--backend", "cpu", "--ceilings"], "--ceilings")
        expect_refused(tmp, "nccl_cpu", 2, ["--backend", "cpu", "--exchange", "nccl"],
                       "--exchange nccl: the ghost exchange of a distributed run with --backend cuda")
        expect_refused(tmp, "overlap_cpu", 2, ["--backend", "cpu", "--exchange-overlap", "off"],
                       "--exchange-overlap off")
        expect_refused(tmp, "exchange_name", 2, ["--backend", "cpu", "--exchange", "mpi"], "--exchange")
        one = run(1, ["bench", "--backend", "cuda", "--degrees", "1", "--dofs", "100", "--quiet"])
        if one.returncode == 2 and "no usable CUDA device" in one.stderr:
            expect_refused(tmp, "no_gpu", 2, ["--backend", "cuda", "--degrees", "1", "--dofs", "100"],
                           "no usable CUDA device")
    return finish("test_mpi_bench")


if __name__ == "__main__":
    sys.exit(main())
