#!/usr/bin/env python3
"""The model of the distributed full solve (FGMRES + fp32 V-cycle + FMG start, weak scaling), from
the per-level times of a one-GPU and a four-GPU run (docs/notebook/scaling_h200x4.json,
"solve_model"):

    T_P = T_1 + a s + r log2(P) + c

T_1: the one-GPU solve; s: the neighbours of the slowest rank; a: the cost of one neighbour, the mean
of rank 0's excess over one GPU in the spread levels (one neighbour) and the slowest rank's excess
over rank 0 (its second neighbour); r: the FGMRES reductions' excess per step of a reduction tree
(log2(4) = 2 steps measured); c: the coarsest level's excess, held at its four-GPU size. Prints the
terms, the model against the measured two- and four-GPU runs and its predictions.

Usage: solve_model.py MEASUREMENTS.json; exit status 2 on unreadable input.
"""
import json
import math
import sys


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    try:
        with open(sys.argv[1]) as f:
            m = json.load(f)["solve_model"]
        t1 = m["one_gpu_s"]
        spread = sum(m["levels_4gpus_rank0_s"][l] - m["levels_1gpu_s"][l] for l in m["levels_1gpu_s"])
        second = m["four_gpus_slowest_s"] - m["four_gpus_rank0_s"]
        a = 0.5 * (spread / m["rank0_neighbours"] + second / (m["slowest_neighbours"] - m["rank0_neighbours"]))
        r = (m["orthogonalization_4gpus_s"] - m["orthogonalization_1gpu_s"]) / math.log2(4)
        c = m["coarse_4gpus_s"] - m["coarse_1gpu_s"]
        predict = m["predict"]
        measured_two = m["measured_two_gpus_s"]
        slowest_four = m["four_gpus_slowest_s"]
    except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError) as e:
        print(f"solve_model: {sys.argv[1]}: {e}", file=sys.stderr)
        return 2

    def model(p, s):
        return t1 + a * s + r * math.log2(p) + c

    print(f"terms: T_1 = {t1:.4f} s, a = {1e3 * a:.1f} ms per neighbour (spread levels {1e3 * spread:.1f} ms, "
          f"second neighbour {1e3 * second:.1f} ms), r = {1e3 * r:.1f} ms per reduction step, c = {1e3 * c:.1f} ms")
    t2 = model(2, 1)
    print(f"2 GPUs: model {t2:.3f} s ({100 * t1 / t2:.1f}%), measured "
          + ", ".join(f"{t:.4f} s" for t in measured_two))
    t4 = model(4, 2)
    print(f"4 GPUs: model {t4:.3f} s ({100 * t1 / t4:.1f}%), measured {slowest_four:.4f} s "
          f"({100 * t1 / slowest_four:.1f}%)")
    for p, grid, s in predict:
        t = model(p, s)
        print(f"{p} GPUs ({grid}, s = {s}, log2 P = {math.log2(p):.1f}): {t:.3f} s, weak efficiency {100 * t1 / t:.0f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
