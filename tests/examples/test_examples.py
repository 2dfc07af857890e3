#!/usr/bin/env python3
"""The examples build against the installed tcfem package and run: installs the build tree into a
prefix, configures examples/ with find_package(tcfem) there, builds, runs each program and checks
its output (convergence rates, errors, the VTU file).

Usage: test_examples.py BUILD_DIR SOURCE_DIR WITH_GMSH(ON|OFF)
"""
import os
import re
import shutil
import subprocess
import sys

build, source, with_gmsh = sys.argv[1], sys.argv[2], sys.argv[3] in ("ON", "1", "TRUE", "YES")
prefix = os.path.join(build, "examples-install")
out = os.path.join(build, "examples-build")
failures = []


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)
    if r.returncode != 0:
        print(" ".join(cmd), "\n", r.stdout[-3000:], r.stderr[-3000:])
    return r


for d in (prefix, out):
    shutil.rmtree(d, ignore_errors=True)
steps = [["cmake", "--install", build, "--prefix", prefix],
         ["cmake", "-S", os.path.join(source, "examples"), "-B", out, "-DCMAKE_BUILD_TYPE=Release",
          "-DCMAKE_PREFIX_PATH=" + prefix],
         ["cmake", "--build", out, "-j", "2"]]
for step in steps:
    if run(step).returncode != 0:
        print("FAIL:", " ".join(step))
        sys.exit(1)
for f in ["include/tcfem/tcfem.h", "bin/tcfem"]:
    if not os.path.exists(os.path.join(prefix, f)):
        failures.append(f"installed package lacks {f}")

# the programs link the installed library, not the build tree's
r = run(["ldd", os.path.join(out, "curved_annulus")])
lib = [l for l in r.stdout.splitlines() if "libtcfem_api" in l]
if not lib or prefix not in lib[0]:
    failures.append(f"curved_annulus does not use the installed libtcfem_api: {lib}")

vtu = os.path.join(out, "annulus.vtu")
r = run([os.path.join(out, "curved_annulus"), vtu])
if r.returncode != 0:
    failures.append(f"curved_annulus: exit {r.returncode}")
else:
    rows = [l.split() for l in r.stdout.splitlines() if re.match(r"\s*\d+x\d+", l)]
    if len(rows) != 4:
        failures.append(f"curved_annulus: expected 4 rows of the table, got {r.stdout!r}")
    else:
        l2_rate, h1_rate = float(rows[-1][4]), float(rows[-1][6])
        if l2_rate < 3.6 or h1_rate < 2.7:
            failures.append(f"curved_annulus: rates L2 {l2_rate} H1 {h1_rate} (Q3: 4 and 3)")
    if not os.path.exists(vtu) or b'Name="error"' not in open(vtu, "rb").read():
        failures.append("curved_annulus: no VTU with the error field")

if with_gmsh:
    vtu = os.path.join(out, "gmsh.vtu")
    r = run([os.path.join(out, "gmsh_mesh"), os.path.join(source, "examples/meshes/quarter_annulus.msh"), vtu])
    if r.returncode != 0:
        failures.append(f"gmsh_mesh: exit {r.returncode}")
    else:
        m = re.search(r"L2 error ([0-9.e+-]+)", r.stdout)
        if "8 x 8 cells" not in r.stdout or not m or float(m.group(1)) > 2e-3:
            failures.append(f"gmsh_mesh: unexpected output {r.stdout!r}")
        if not os.path.exists(vtu):
            failures.append("gmsh_mesh: no VTU")
else:
    r = run([os.path.join(out, "gmsh_mesh")])
    if r.returncode != 2 or "built without Gmsh" not in r.stderr:
        failures.append(f"gmsh_mesh without Gmsh: exit {r.returncode}, {r.stderr!r}")

for f in failures:
    print("FAIL:", f)
print("all checks passed" if not failures else f"{len(failures)} checks failed")
sys.exit(1 if failures else 0)
