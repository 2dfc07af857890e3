#!/usr/bin/env python3
"""The scaling scripts on the measurements in docs/notebook: scaling_model.py (the apply's model),
solve_model.py (the full solve's) and plot_scaling.py (efficiencies and the plot) run, print what they should, draw their plot, and
answer a malformed file with exit status 2.

Usage: test_scaling_scripts.py SOURCE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

SRC = sys.argv[1]
SCRIPTS = os.path.join(SRC, "bench", "scripts")
NOTEBOOK = os.path.join(SRC, "docs", "notebook")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def run(script, *args):
    return subprocess.run([sys.executable, os.path.join(SCRIPTS, script)] + list(args), capture_output=True,
                          text=True, timeout=120)


with tempfile.TemporaryDirectory() as tmp:
    data_file = os.path.join(NOTEBOOK, "scaling_h200x4.json")
    with open(data_file) as f:
        data = json.load(f)
    png = os.path.join(tmp, "scaling.png")
    r = run("plot_scaling.py", data_file, "--plot", png)
    check(r.returncode == 0, f"plot_scaling.py: exit {r.returncode}: {r.stderr}")
    check(os.path.exists(png) and os.path.getsize(png) > 1000, "plot_scaling.py wrote no plot")
    # the printed weak efficiency of the apply on 4 GPUs is t_1 / t_4 of the file
    t = data["apply"]["weak"]["4"]
    want = f"4 GPUs {100 * t[0] / t[2]:5.1f}%"
    line = [l for l in r.stdout.splitlines() if l.startswith("apply weak   k=4")]
    check(len(line) == 1 and want in line[0], f"plot_scaling.py: apply weak k=4 line {line}, expected {want}")
    # strong efficiency: t_1 / (P t_P)
    t = data["solve"]["strong"]["6"]
    want = f"4 GPUs {100 * t[0] / (4 * t[2]):5.1f}%"
    line = [l for l in r.stdout.splitlines() if l.startswith("solve strong k=6")]
    check(len(line) == 1 and want in line[0], f"plot_scaling.py: solve strong k=6 line {line}, expected {want}")
    # the vertex-patch solve's section: its own lines
    t = data["solve_patches"]["weak"]["4"]
    want = f"4 GPUs {100 * t[0] / t[2]:5.1f}%"
    line = [l for l in r.stdout.splitlines() if l.startswith("solve_patches weak   k=4")]
    check(len(line) == 1 and want in line[0], f"plot_scaling.py: solve_patches weak k=4 line {line}, expected {want}")
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        f.write('{"gpus": [1, 2]}')
    r = run("plot_scaling.py", bad)
    check(r.returncode == 2 and "plot_scaling" in r.stderr, f"plot_scaling.py on a malformed file: exit {r.returncode}")
    # the solve's model reproduces the four-GPU run it was fitted to within 2%, and predicts
    # efficiencies that fall with the neighbours and the reduction steps
    r = run("solve_model.py", data_file)
    check(r.returncode == 0, f"solve_model.py: exit {r.returncode}: {r.stderr}")
    m = data["solve_model"]
    four = [l for l in r.stdout.splitlines() if l.startswith("4 GPUs: model")]
    check(len(four) == 1, f"solve_model.py: no 4-GPU line in {r.stdout}")
    if four:
        t = float(four[0].split()[3])
        check(abs(t - m["four_gpus_slowest_s"]) < 0.02 * m["four_gpus_slowest_s"],
              f"solve_model.py: 4 GPUs {t} s against the measured {m['four_gpus_slowest_s']} s")
    effs = [float(l.rsplit(" ", 1)[1].rstrip("%")) for l in r.stdout.splitlines() if "weak efficiency" in l]
    check(len(effs) == len(m["predict"]) and effs == sorted(effs, reverse=True) and all(0 < e < 100 for e in effs),
          f"solve_model.py: predictions {effs}")
    r = run("solve_model.py", bad)
    check(r.returncode == 2 and "solve_model" in r.stderr, f"solve_model.py on a malformed file: exit {r.returncode}")
    r = run("scaling_model.py", os.path.join(NOTEBOOK, "exchange_h100x2.json"))
    check(r.returncode == 0 and "alpha" in r.stdout, f"scaling_model.py: exit {r.returncode}: {r.stderr}")
    r = run("scaling_model.py", bad)
    check(r.returncode == 2, f"scaling_model.py on a malformed file: exit {r.returncode}")

for f in failures:
    print("FAIL:", f)
print(f"test_scaling_scripts: {len(failures)} failures")
sys.exit(1 if failures else 0)
