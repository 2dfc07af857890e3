#!/usr/bin/env python3
"""End-to-end tests of `tcfem wave`: the default basin (its normal mode's frequency against the
dispersion relation, energy, errors, the VTU time series), problem files on curved basins with
absorbing and seafloor faces, and bad input (exit 2, nothing written) and a blow-up (exit 3, the
report written).

Usage: test_wave.py TCFEM_BINARY [--gpu]   (--gpu: the same runs with --backend cuda as well)
"""
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

TCFEM = sys.argv[1]
BACKENDS = ["cpu", "cuda"] if "--gpu" in sys.argv[2:] else ["cpu"]
failures = []

if "cuda" in BACKENDS:
    probe = subprocess.run([TCFEM, "wave", "--backend", "cuda", "--dim", "2", "--degree", "2", "--t-end", "0.01", "--quiet"],
                           capture_output=True, text=True)
    if probe.returncode != 0 and ("CUDA" in probe.stderr or "device" in probe.stderr):
        print("no CUDA device: GPU tests skip (" + probe.stderr.strip() + ")")
        sys.exit(0)


def run(args, timeout=600):
    return subprocess.run([TCFEM, "wave"] + args, capture_output=True, text=True, timeout=timeout)


def check(cond, what):
    if not cond:
        failures.append(what)


def write(tmp, name, obj):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(obj if isinstance(obj, str) else json.dumps(obj))
    return path


def report(path):
    with open(path) as f:
        return json.load(f)


CURVED = {
    "dim": 2, "degree": 3,
    "geometry": {"box": [[0, 2], [-1, 0]], "cells": [8, 4],
                 "map": ["x", "y*(1 - 0.4*exp(-4*(x-1)^2))"]},
    "rho": "1 + 0.2*x", "K": "1.5", "g": "1",
    "boundary": {"xmin": "absorbing", "xmax": "absorbing", "ymin": "seafloor", "ymax": "surface"},
    "seafloor_velocity": "exp(-20*(x-1)^2)*sin(4*t)",
    "time": {"end": 1.0},
}

with tempfile.TemporaryDirectory() as tmp:
    for backend in BACKENDS:
        # the default basin: 3D, k = 4, the gravity mode (1, 1), two periods
        rep = os.path.join(tmp, f"default_{backend}.json")
        frames = os.path.join(tmp, f"frames_{backend}")
        r = run(["--backend", backend, "--json", rep, "--vtu", frames, "--vtu-every", "100"])
        check(r.returncode == 0, f"{backend} default: exit {r.returncode}: {r.stderr}")
        if r.returncode == 0:
            d = report(rep)
            check(d["command"] == "wave" and d["status"] == "completed", f"{backend} default: report header")
            check(d["dofs"]["total"] == d["dofs"]["pressure"] + d["dofs"]["velocity"] == 34113, f"{backend} default: DoFs {d['dofs']}")
            check(d["mode"]["relative_error"] < 1e-6, f"{backend} default: frequency off by {d['mode']['relative_error']}")
            check(d["mode"]["zero_crossings"] == 4, f"{backend} default: {d['mode']['zero_crossings']} zero crossings")
            e = d["energy"]
            change = (e["final"] - e["initial"]) / e["initial"]
            check(-1e-6 < change <= 1e-13, f"{backend} default: energy change {change} (RK4 only loses energy, at order 6)")
            check(d["errors"]["p_l2"] / d["errors"]["p_norm"] < 1e-4, f"{backend} default: p error {d['errors']}")
            check(d["time"]["dt"] <= d["time"]["dt_limit"], f"{backend} default: dt above the limit")
            check(d["throughput"]["operator_gdofs"] > 0, f"{backend} default: no throughput")
            check(d["config"]["rk4"] == "nested", f"{backend} default: RK4 form {d['config'].get('rk4')} (auto: nested)")
            steps = d["steps"]
            with open(frames + ".pvd") as f:
                sets = ET.parse(f).getroot().findall(".//DataSet")
            expected = 1 + steps // 100 + (1 if steps % 100 else 0)
            check(len(sets) == expected, f"{backend} default: {len(sets)} frames in the pvd, expected {expected}")
            for ds in sets:
                check(os.path.exists(os.path.join(tmp, ds.get("file"))), f"{backend} default: frame {ds.get('file')} missing")
            times = [float(ds.get("timestep")) for ds in sets]
            check(times == sorted(times) and abs(times[-1] - d["time"]["end"]) < 1e-9, f"{backend} default: frame times {times}")
        if backend == "cuda":  # the matrix-free cell kernel: the same mode, the same frequency
            repm = os.path.join(tmp, "default_mf.json")
            r = run(["--backend", "cuda", "--geometry-form", "mf", "--quiet", "--json", repm])
            check(r.returncode == 0, f"cuda mf default: exit {r.returncode}: {r.stderr}")
            if r.returncode == 0:
                dm, dp = report(repm), report(rep)
                check(dm["config"]["geometry_form"] == "mf", "cuda mf: report's geometry form")
                check(abs(dm["mode"]["omega_measured"] - dp["mode"]["omega_measured"]) < 1e-9 * dp["mode"]["omega_measured"],
                      f"cuda mf: omega {dm['mode']['omega_measured']} against pa {dp['mode']['omega_measured']}")
            # both units of the cell kernel (the default report ran the automatic choice): the same mode
            for cores in ("cuda-core", "tensor-core"):
                for form in ("pa", "mf"):
                    repc = os.path.join(tmp, f"default_{cores}_{form}.json")
                    r = run(["--backend", "cuda", "--cores", cores, "--geometry-form", form, "--quiet", "--json", repc])
                    if cores == "tensor-core" and r.returncode == 2 and "need sm_90" in r.stderr:
                        print(f"note: {r.stderr.strip()}")  # a GPU without the sm_90 FP64 shapes: refused, as documented
                        continue
                    check(r.returncode == 0, f"cuda {cores} {form}: exit {r.returncode}: {r.stderr}")
                    if r.returncode == 0:
                        dc, dp = report(repc), report(rep)
                        check(dc["config"]["cores"] == cores, f"{cores} {form}: report's cores")
                        check(abs(dc["mode"]["omega_measured"] - dp["mode"]["omega_measured"]) < 1e-9 * dp["mode"]["omega_measured"],
                              f"{cores} {form}: omega {dc['mode']['omega_measured']} against {dp['mode']['omega_measured']}")
            check(report(rep)["config"]["cores"] == "cuda-core", "cuda default (k = 4): the automatic choice")
            # the stored geometry in fp32: the same mode to the rounding of the geometry, energy still only lost
            rep32 = os.path.join(tmp, "default_fp32.json")
            r = run(["--backend", "cuda", "--geometry-storage", "fp32", "--quiet", "--json", rep32])
            check(r.returncode == 0, f"cuda fp32 geometry: exit {r.returncode}: {r.stderr}")
            if r.returncode == 0:
                d32 = report(rep32)
                check(d32["config"]["geometry_storage"] == "fp32", "fp32 geometry: report's storage")
                check(d32["mode"]["relative_error"] < 1e-6, f"fp32 geometry: frequency off by {d32['mode']['relative_error']}")
                e = d32["energy"]
                change = (e["final"] - e["initial"]) / e["initial"]
                check(-1e-6 < change <= 1e-13, f"fp32 geometry: energy change {change}")
        # 2D default basin
        rep2 = os.path.join(tmp, f"default2_{backend}.json")
        r = run(["--backend", backend, "--dim", "2", "--quiet", "--json", rep2])
        check(r.returncode == 0 and r.stdout == "", f"{backend} 2D default: exit {r.returncode}, output {r.stdout!r}")
        if r.returncode == 0:
            check(report(rep2)["mode"]["relative_error"] < 1e-7, f"{backend} 2D default: frequency")
        # a curved basin with absorbing sides and a moving seafloor
        path = write(tmp, "curved.json", CURVED)
        repc = os.path.join(tmp, f"curved_{backend}.json")
        r = run(["--backend", backend, "--problem", path, "--json", repc])
        check(r.returncode == 0, f"{backend} curved: exit {r.returncode}: {r.stderr}")
        if r.returncode == 0:
            d = report(repc)
            check(d["energy"]["initial"] == 0 and d["energy"]["final"] > 0, f"{backend} curved: the seafloor puts in no energy")
            check(d["config"]["boundary"] == ["absorbing", "absorbing", "seafloor", "surface"], f"{backend} curved: boundary")
            check("errors" not in d and "mode" not in d, f"{backend} curved: errors without an exact solution")
            check(d["config"]["setup_on"] == ("device" if backend == "cuda" else "host"), f"{backend} curved: setup_on")
            check(d["config"]["rk4"] == "nested", f"{backend} curved: RK4 form {d['config'].get('rk4')} (auto: nested)")
            # the classic form: the same steps, the same energies to rounding (a moving seafloor:
            # the nested form's combined stage forcing)
            repk = os.path.join(tmp, f"curved_classic_{backend}.json")
            r = run(["--backend", backend, "--problem", path, "--json", repk, "--quiet", "--rk4", "classic"])
            check(r.returncode == 0, f"{backend} curved --rk4 classic: exit {r.returncode}: {r.stderr}")
            if r.returncode == 0:
                k = report(repk)
                check(k["config"]["rk4"] == "classic", f"{backend} curved --rk4 classic: RK4 form {k['config'].get('rk4')}")
                check(k["time"]["steps"] == d["time"]["steps"], f"{backend} curved: the same steps in both forms")
                for (_, a), (_, b) in zip(k["energy"]["history"], d["energy"]["history"]):
                    check(abs(a - b) <= 1e-10 * abs(a), f"{backend} curved: energy {b} (nested) against {a} (classic)")
            if backend == "cuda":  # the data computed on the host and copied: the same run
                reph = os.path.join(tmp, "curved_cuda_host.json")
                r = run(["--backend", "cuda", "--setup", "host", "--problem", path, "--json", reph, "--quiet"])
                check(r.returncode == 0, f"cuda curved --setup host: exit {r.returncode}: {r.stderr}")
                if r.returncode == 0:
                    h = report(reph)
                    check(h["config"]["setup_on"] == "host", "cuda curved --setup host: setup_on")
                    check(h["time"]["steps"] == d["time"]["steps"], "cuda curved: the same steps on both setups")
                    for (_, a), (_, b) in zip(h["energy"]["history"], d["energy"]["history"]):
                        check(abs(a - b) <= 1e-10 * max(abs(a), 1e-300), f"cuda curved: energy {b} (device setup) against {a} (host)")
        # absorbing sides take energy out: a pulse in a basin open on both sides
        pulse = dict(CURVED)
        pulse.pop("seafloor_velocity")
        pulse["boundary"] = {"xmin": "absorbing", "xmax": "absorbing", "ymin": "wall", "ymax": "surface"}
        pulse["initial"] = {"p": "exp(-20*((x-1)^2 + (y+0.5)^2))"}
        pulse["time"] = {"end": 4.0}
        repa = os.path.join(tmp, f"pulse_{backend}.json")
        r = run(["--backend", backend, "--problem", write(tmp, "pulse.json", pulse), "--json", repa, "--quiet"])
        check(r.returncode == 0, f"{backend} pulse: exit {r.returncode}: {r.stderr}")
        if r.returncode == 0:
            e = report(repa)["energy"]
            hist = [v for _, v in e["history"]]
            check(all(b <= a * (1 + 1e-12) for a, b in zip(hist, hist[1:])), f"{backend} pulse: energy rose")
            check(e["final"] < 0.5 * e["initial"], f"{backend} pulse: absorbing sides kept {e['final'] / e['initial']:.3f} of the energy")
            # the classic form of RK4: the same steps, the same energies to rounding
            repk = os.path.join(tmp, f"pulse_classic_{backend}.json")
            r = run(["--backend", backend, "--problem", write(tmp, "pulse.json", pulse), "--json", repk, "--quiet",
                     "--rk4", "classic"])
            check(r.returncode == 0, f"{backend} pulse --rk4 classic: exit {r.returncode}: {r.stderr}")
            if r.returncode == 0:
                k = report(repk)
                for (_, a), (_, b) in zip(k["energy"]["history"], e["history"]):
                    check(abs(a - b) <= 1e-11 * abs(a), f"{backend} pulse: energy {b} (nested) against {a} (classic)")

    # bad input: exit 2, one line naming the problem, no report written
    bad_rep = os.path.join(tmp, "bad.json")

    def refused(args, needle, what):
        if os.path.exists(bad_rep):
            os.remove(bad_rep)
        r = run(args + ["--json", bad_rep])
        check(r.returncode == 2, f"{what}: exit {r.returncode} (expected 2): {r.stderr}")
        check(needle in r.stderr, f"{what}: message {r.stderr!r} lacks {needle!r}")
        check(not os.path.exists(bad_rep), f"{what}: a report was written")

    refused(["--backend", "cpu", "--dt", "1"], "above the stability limit", "dt above the limit")
    refused(["--backend", "cpu", "--dt", "0.01", "--steps", "5"], "give at most one", "dt and steps")
    refused(["--backend", "cpu", "--cells", "4,4"], "expected 3 counts", "cells count")
    refused(["--backend", "cpu", "--cfl", "1.5"], "at most 1", "cfl above 1")
    refused(["--backend", "cpu", "--geometry-form", "mf"], "device cell kernel", "geometry form on the CPU")
    refused(["--backend", "cpu", "--cores", "tensor-core"], "--cores", "cores on the CPU")
    refused(["--backend", "cpu", "--setup", "device"], "--setup", "setup on the CPU")
    refused(["--backend", "cpu", "--geometry-storage", "fp32"], "--geometry-storage", "geometry storage on the CPU")
    refused(["--geometry-form", "mf", "--geometry-storage", "fp32"], "stores no geometry", "fp32 storage with mf")
    refused(["--backend", "cpu", "--rk4", "horner"], "--rk4", "unknown RK4 form")
    refused(["--backend", "cpu", "--problem", write(tmp, "m.json", "{\"dim\": 2,")], "malformed JSON", "malformed JSON")
    refused(["--backend", "cpu", "--problem", os.path.join(tmp, "missing.json")], "cannot read", "missing file")
    variants = [
        ({"colour": 1}, "unknown key", "unknown key"),
        ({"rho": "1 +* x"}, "rho", "malformed expression"),
        ({"K": "1 + w"}, "Unexpected token", "unknown name"),
        ({"K": "x - 1"}, "K: must be positive", "negative K"),
        ({"geometry": {"box": [[0, 2], [-1, 0]], "cells": [4, 2], "map": ["-x", "y"]}}, "inverted or degenerate", "inverted map"),
        ({"boundary": {"xmin": "open"}}, "unknown kind", "unknown boundary kind"),
        ({"boundary": {"wmin": "wall"}}, "unknown key", "unknown face"),
        ({"boundary": {"ymin": "seafloor"}, "seafloor_velocity": None}, "seafloor_velocity", "seafloor without data"),
        ({"time": {}, "initial": {"p": "x"}}, "end time is missing", "no end time"),
        ({"initial": {"mode": [1, 0]}, "boundary": {"xmin": "absorbing"}, "seafloor_velocity": None, "time": {},
          "geometry": {"box": [[0, 2], [-1, 0]], "cells": [4, 2]}, "rho": "1"}, "closed basin", "mode in an open basin"),
        ({"initial": {"mode": [1, 0]}, "boundary": {}, "seafloor_velocity": None}, "remove the map", "mode on a map"),
    ]
    for change, needle, what in variants:
        p = json.loads(json.dumps(CURVED))
        for k, v in change.items():
            if v is None:
                p.pop(k, None)
            else:
                p[k] = v
        refused(["--backend", "cpu", "--problem", write(tmp, "v.json", p)], needle, what)

    # a blow-up (the state overflows): exit 3 and the report with its status
    boom = {"dim": 2, "degree": 2, "geometry": {"box": [[0, 1], [-1, 0]], "cells": [2, 2]},
            "initial": {"p": "1e200"}, "time": {"end": 0.1}}
    repb = os.path.join(tmp, "boom.json")
    r = run(["--backend", "cpu", "--problem", write(tmp, "boom_problem.json", boom), "--json", repb])
    check(r.returncode == 3, f"blow-up: exit {r.returncode} (expected 3)")
    check("blew up" in r.stderr, f"blow-up: message {r.stderr!r}")
    check(os.path.exists(repb) and report(repb)["status"] == "blew up", "blow-up: no report with status 'blew up'")

print("test_wave: %d failures" % len(failures))
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
