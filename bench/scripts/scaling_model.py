#!/usr/bin/env python3
"""The performance model of the distributed operator apply (cg, one GPU per rank, each rank running
the single-GPU kernel on its ghosted box after the ghost exchange, not overlapped):

    t_P(n) = t_1(n) * (1 + 2 s / n) + alpha + B_P(n) / beta

t_1(n): one GPU's apply on n^3 cells (measured); s: the sub-box sides with a neighbour (each adds two
ghost cell layers of work); B_P(n) = s * B(n): the bytes a rank sends per exchange, B(n) = k (n k + 1)^2
values of 8 bytes per side (one ghost cell layer of nodes); alpha, beta: the latency and the
bandwidth of one exchange (pack kernel, copy, handshakes, unpack kernel), fitted by least squares
of the relative deviations to the 2-GPU weak-scaling runs (s = 1). The messages of the sides of one rank are taken to run
concurrently, at the bandwidth of the slowest link they use.

Usage: scaling_model.py MEASUREMENTS.json [--plot FILE.png] [--beta-inter GB/s] [--alpha-inter us]
Prints the fit, the model against every measured point, and the predicted weak-scaling efficiency
of 8 GPUs (one node of 8 linked GPUs, 2 x 2 x 2 ranks), 64 GPUs (8 such nodes, 4 x 4 x 4 ranks) and
9,216 GPUs (24 x 24 x 16 ranks) at the largest measured n; between nodes the exchange takes
--beta-inter and --alpha-inter (assumed, not measured: defaults 25 GB/s and 10 us). Also the
efficiency if the exchange were hidden behind the interior cells (max of the two, plus the work of
the boundary cells). Exit status 2 on unreadable input.
"""
import argparse
import json
import sys


def fit(xs, ys):
    """y = a + b x, least squares of the relative deviations (weights 1 / y^2), so that the small
    exchanges (latency) count as much as the large ones (bandwidth)."""
    w = [1.0 / (y * y) for y in ys]
    sw = sum(w)
    mx = sum(wi * x for wi, x in zip(w, xs)) / sw
    my = sum(wi * y for wi, y in zip(w, ys)) / sw
    b = sum(wi * (x - mx) * (y - my) for wi, x, y in zip(w, xs, ys)) / sum(wi * (x - mx) ** 2 for wi, x in zip(w, xs))
    return my - b * mx, b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("measurements")
    ap.add_argument("--plot")
    ap.add_argument("--beta-inter", type=float, default=25.0, help="GB/s between nodes (assumed)")
    ap.add_argument("--alpha-inter", type=float, default=10.0, help="us added between nodes (assumed)")
    args = ap.parse_args()
    try:
        with open(args.measurements) as f:
            data = json.load(f)
        rows = data["rows"]
        k = int(data["degree"])
    except (OSError, ValueError, KeyError) as e:
        print(f"scaling_model: {args.measurements}: {e}", file=sys.stderr)
        return 2
    out = {}
    for path in ("ipc_ms", "host_staged_ms"):
        # the exchange's share: the 2-GPU apply minus one GPU's apply with two more cell layers
        xs = [r["bytes"] for r in rows]
        ys = [r[path] - r["one_gpu_ms"] * (1 + 2.0 / r["n"]) for r in rows]
        alpha, per_byte = fit(xs, ys)
        out[path] = (alpha, per_byte)
        print(f"{path}: alpha = {1e3 * alpha:.1f} us, beta = {1e-6 / per_byte:.1f} GB/s (pack, copy and unpack)")
        print("   n   one GPU ms   2 GPUs ms   model ms   weak efficiency measured / model")
        for r, y in zip(rows, ys):
            model = r["one_gpu_ms"] * (1 + 2.0 / r["n"]) + alpha + per_byte * r["bytes"]
            print(f"{r['n']:4d} {r['one_gpu_ms']:11.4f} {r[path]:11.4f} {model:10.4f}"
                  f"   {100 * r['one_gpu_ms'] / r[path]:5.1f}% / {100 * r['one_gpu_ms'] / model:5.1f}%")
    alpha, per_byte = out["ipc_ms"]
    big = max(rows, key=lambda r: r["n"])
    n, t1 = big["n"], big["one_gpu_ms"]
    side_bytes = k * (n * k + 1) ** 2 * 8
    inter_per_byte = 1e-6 / args.beta_inter
    inter_alpha = alpha + 1e-3 * args.alpha_inter
    print(f"\npredicted weak scaling at n = {n} (k = {k}, {t1:.3f} ms on one GPU):")
    print("  GPUs  ranks grid   sides (in node / between)   ms per apply   efficiency   hidden exchange")
    cases = [(2, "1x1x2", 1, 0), (8, "2x2x2", 3, 0), (64, "4x4x4", 3, 3), (9216, "24x24x16", 3, 3)]
    predictions = []
    for gpus, grid, s_in, s_out in cases:
        s = s_in + s_out
        work = t1 * (1 + 2.0 * s / n)
        ex_in = alpha + per_byte * s_in * side_bytes if s_in else 0.0
        ex_out = inter_alpha + inter_per_byte * s_out * side_bytes if s_out else 0.0
        ex = max(ex_in, ex_out)
        t = work + ex
        boundary = t1 * 2.0 * s / n  # the cells next to the cut planes, after the exchange
        hidden = max(work - boundary, ex) + boundary
        predictions.append((gpus, 100 * t1 / t, 100 * t1 / hidden))
        print(f"  {gpus:5d}  {grid:10s} {s_in:6d} / {s_out:d}                 {t:8.3f}      {100 * t1 / t:5.1f}%"
              f"       {100 * t1 / hidden:5.1f}%")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
        ns = [r["n"] for r in rows]
        dofs = [(r["n"] * k + 1) ** 3 for r in rows]
        for path, label in (("ipc_ms", "CUDA IPC"), ("host_staged_ms", "host-staged")):
            al, pb = out[path]
            a.plot(dofs, [100 * r["one_gpu_ms"] / r[path] for r in rows], "o", label=f"{label}, measured")
            a.plot(dofs, [100 * r["one_gpu_ms"] / (r["one_gpu_ms"] * (1 + 2.0 / r["n"]) + al + pb * r["bytes"])
                          for r in rows], "-", label=f"{label}, model")
        a.set_xscale("log")
        a.set_xlabel("DoFs per GPU")
        a.set_ylabel("weak-scaling efficiency on 2 GPUs [%]")
        a.set_ylim(0, 105)
        a.legend()
        a.set_title(f"apply, cg fp64 k = {k}, 2 GPUs (measured: H100 pair, NVLink)", fontsize=10)
        g = [p[0] for p in predictions]
        b.semilogx(g, [p[1] for p in predictions], "o-", label="exchange, then the apply (as built)")
        b.semilogx(g, [p[2] for p in predictions], "s--", label="exchange hidden behind the interior")
        b.set_xlabel("GPUs")
        b.set_ylabel("predicted weak-scaling efficiency [%]")
        b.set_ylim(0, 105)
        b.legend()
        b.set_title(f"model, {(n * k + 1) ** 3:.2g} DoFs per GPU\n(between nodes {args.beta_inter:g} GB/s, "
                    f"+{args.alpha_inter:g} us: assumed)", fontsize=10)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
        print(f"wrote {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
