#!/usr/bin/env python3
"""Markdown tables from `tcfem direct --json` reports (docs/notebook/performance_history.md).

Usage: direct_tables.py REPORT.json [REPORT.json ...]

Prints three tables over the reports (sorted by mesh, level, coarse level, right-hand sides):
errors per precision, condition numbers and sizes, and solve-phase timings per precision.
"""
import json
import sys


def load(paths):
    reports = []
    for p in paths:
        with open(p) as f:
            j = json.load(f)
        if "results" in j:
            reports.append(j)
    key = lambda j: (j["config"]["mesh"], j["config"]["level"], j["config"]["coarse_level"], j["config"]["rhs"])
    return sorted(reports, key=key)


def errors_table(reports):
    precs = ["fp64", "fp32", "tf32", "fp16"]
    seen = []
    rows = []
    for j in reports:
        c = j["config"]
        ident = (c["mesh"], c["level"], c["coarse_level"])
        if ident in seen:
            continue
        seen.append(ident)
        res = {r["precision"]: r for r in j["results"]}
        cols = [p for p in precs if p in res]
        cells = []
        for n in ["n1", "n10"]:
            for p in precs:
                cells.append(f"{res[p]['errors'][n]:.3e}" if p in res else "")
        rows.append(f"| {c['mesh']} | {c['level']} | {c['coarse_level']} | {j['n_dofs']} | " + " | ".join(cells) + " |")
    head = "| mesh | L | L0 | N | " + " | ".join(f"{p} n=1" for p in precs) + " | " + \
        " | ".join(f"{p} n=10" for p in precs) + " |"
    print(head)
    print("|" + "---|" * (4 + 2 * len(precs)))
    print("\n".join(rows))


def conditions_table(reports):
    print("| mesh | L | L0 | N | \\|C\\| | \\|E\\| | \\|I\\| | NNZ/N total | FLOP/N^1.5 | kappa(A_FEM) | kappa(A^) | kappa(Pi) | kappa(C_k) | setup [s] |")
    print("|" + "---|" * 14)
    seen = []
    for j in reports:
        c = j["config"]
        ident = (c["mesh"], c["level"], c["coarse_level"])
        if ident in seen or "conditions" not in j:
            continue
        seen.append(ident)
        k = j["conditions"]
        fmt = lambda e: f"{e['kappa']:.2f}" + ("" if e["converged"] else " (nc)")
        ck = ", ".join(f"{e['kappa']:.2f}" for e in k["classes"])
        cnt = j["counts"]
        print(f"| {c['mesh']} | {c['level']} | {c['coarse_level']} | {j['n_dofs']} | {cnt['n_coarse']} | "
              f"{cnt['n_edge']} | {cnt['n_interior']} | {j['nnz']['per_n']['total']:.2f} | {j['flops_per_n15']:.2f} | "
              f"{fmt(k['a_fem'])} | {fmt(k['prehandled'])} | {fmt(k['pi'])} | {ck} | "
              f"{j['timings']['setup']['total']:.2f} |")


def timing_table(reports):
    print("| mesh | L | L0 | N | rhs | precision | solve phase [s] | GFLOP/s | MDoF/s total | MDoF/s per rhs |")
    print("|" + "---|" * 10)
    for j in reports:
        c = j["config"]
        for r in j["results"]:
            print(f"| {c['mesh']} | {c['level']} | {c['coarse_level']} | {j['n_dofs']} | {c['rhs']} | {r['precision']} | "
                  f"{r['median_seconds']:.4g} | {r['gflops']:.2f} | {r['mdofs_per_s']:.1f} | {r['mdofs_per_s_per_rhs']:.2f} |")


if __name__ == "__main__":
    reports = load(sys.argv[1:])
    print("### errors\n")
    errors_table(reports)
    print("\n### condition numbers and sizes\n")
    conditions_table(reports)
    print("\n### solve phase\n")
    timing_table(reports)
