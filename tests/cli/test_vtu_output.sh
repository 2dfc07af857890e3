#!/usr/bin/env bash
# Writes VTU files with `tcfem solve --vtu` and reads them back with meshio (check_vtu.py):
# exact-field values must match prod sin(pi x) to rounding, the discrete solution to the
# discretization error. Usage: test_vtu_output.sh TCFEM PYTHON
set -euo pipefail
tcfem=$1
python=$2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$python" -c "import meshio" 2>/dev/null || { echo "meshio is missing for $python: run scripts/setup" >&2; exit 1; }
run_case() {  # dim disc geometry degree cells tol
  local f="$tmp/u_$1_$2_$3_$4.vtu"
  "$tcfem" solve --quiet --dim "$1" --disc "$2" --geometry "$3" --degree "$4" --cells "$5" --tol 1e-12 --vtu "$f"
  "$python" "$here/check_vtu.py" "$f" "$1" u_exact 1e-13
  "$python" "$here/check_vtu.py" "$f" "$1" u "$6"
}
run_case 3 cg deformed 3 4 5e-3
run_case 3 dg cartesian 2 3 2e-2
run_case 2 cg cartesian 5 3 1e-4
run_case 2 dg deformed 4 4 1e-3
