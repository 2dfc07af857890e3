"""What the MPI tests of the tcfem command share: their command line (TCFEM_BINARY MPIEXEC [--gpu];
MPIEXEC may carry options), the launcher's environment (Open MPI as root, more ranks than cores),
a runner for N ranks (one rank: the binary alone) and the list of failures."""
import os
import shlex
import subprocess
import sys

TCFEM, MPIEXEC = sys.argv[1], shlex.split(sys.argv[2])  # the launcher, maybe with options
GPU = "--gpu" in sys.argv[3:]
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def run(ranks, args, timeout=300):
    cmd = [TCFEM] + args if ranks == 1 else MPIEXEC + ["-np", str(ranks), "--oversubscribe", TCFEM] + args
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=ENV)


def finish(label):
    """Prints the failures and the count; the exit status."""
    for f in failures:
        print("FAIL:", f)
    print(f"{label}: {len(failures)} failures")
    return 1 if failures else 0
