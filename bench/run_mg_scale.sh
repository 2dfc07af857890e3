#!/usr/bin/env bash
# The device multigrid solve at 1e8 DoFs and more: 3D cg, degrees 3..7, FGMRES(10) + V(1,1)
# multiplicative patch smoother, every V-cycle precision, tol 1e-8, one JSON report per run and one
# summary line per run. Usage: bench/run_mg_scale.sh [BUILD_DIR] [OUT_DIR] [PRECISIONS...]
#   (defaults: build-dev, mg_scale, fp64 fp32 fp16ec bf16x3 fp16)
# LARGEST=1 adds the largest problem that fits (CG + V-cycle, 1.53e9 DoFs) in fp32 and fp64.
# FINEST_POST=vcycle|fp64 sets --mg-finest-post (default auto: the finest level of a V-cycle below fp64
# is post-smoothed in fp64); reports named *_post<value>.
# START=fmg starts FGMRES (and the LARGEST runs) from one full-multigrid cycle (--mg-start fmg);
# reports named *_fmg.
# SEED_TEST=1 adds, per degree, left-preconditioned GMRES(10) with an fp64 V-cycle (--solver gmres:
# the stopping test of seed 004 on ||P(b - Ax)||; its log names ||b - Ax|| / ||b|| at the end).
set -u
build=${1:-build-dev}
out=${2:-mg_scale}
shift 2 2>/dev/null || shift $#
precisions=${*:-fp64 fp32 fp16ec bf16x3 fp16}
mkdir -p "$out"
# degree : size option (>= 1e8 DoFs, a coarse level the dense Cholesky factor accepts)
cases=("3:--cells 192" "4:--refine 7" "5:--refine 7" "6:--cells 96 --coarse-solver cholesky"
       "7:--cells 96 --coarse-solver cholesky")
summary() {
  python3 - "$1" <<'PY'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"{sys.argv[1]}: no report ({e})"); sys.exit()
c, t = j["config"], j["timings"]
print(f"k={c['degree']} {c.get('mg_precision','-'):7s} post64={int(j.get('multigrid',{}).get('finest_post_fp64',False))} {c['solver']:6s} start={c.get('mg_start','zero'):4s} dofs={j['n_dofs']:.4g} it={j['iterations']} "
      f"conv={j['converged']} res={j['final_relative_residual']:.2e} L2={j['errors']['l2']:.6e} "
      f"setup={t['setup']:.2f}s solve={t['solve']:.3f}s fmg={j.get('multigrid',{}).get('fmg_seconds',0):.3f}s errors={t['errors']:.2f}s total={t['total']:.2f}s "
      f"GDoF/s={j['n_dofs']/t['solve']/1e9 if t['solve'] > 0 else 0:.3f} device_GB={j.get('multigrid',{}).get('device_bytes',0)/1e9:.1f}")
PY
}
run() {  # name, options...
  local name=$1; shift
  timeout 300 "$build/tcfem" solve --backend cuda --dim 3 "$@" --json "$out/$name.json" > "$out/$name.log" 2>&1
  echo "rc=$? $(summary "$out/$name.json")"
}
post=()
suffix=
if [ -n "${FINEST_POST:-}" ]; then post=(--mg-finest-post "$FINEST_POST"); suffix=_post$FINEST_POST; fi
start=${START:-zero}  # tcfem solve's own default is fmg; these runs name their start
post+=(--mg-start "$start")
if [ "$start" != zero ]; then suffix=${suffix}_$start; fi
for p in $precisions; do
  for c in "${cases[@]}"; do
    k=${c%%:*}; size=${c#*:}
    # shellcheck disable=SC2086
    run "k${k}_${p}${suffix}" --degree "$k" $size --solver fgmres --restart 10 --precond mg --smoother patch \
        --mg-precision "$p" "${post[@]}" --tol 1e-8 --max-iter 50
  done
done
if [ "${SEED_TEST:-0}" = 1 ]; then
  for c in "${cases[@]}"; do
    k=${c%%:*}; size=${c#*:}
    # shellcheck disable=SC2086
    run "k${k}_gmres_fp64" --degree "$k" $size --solver gmres --restart 10 --precond mg --smoother patch \
        --mg-precision fp64 --tol 1e-8 --max-iter 50
    grep -h "||b - Ax||" "$out/k${k}_gmres_fp64.log" || true
  done
fi
if [ "${LARGEST:-0}" = 1 ]; then
  for p in fp32 fp64; do
    run "largest_k3_${p}${suffix}" --degree 3 --cells 384 --solver cg --precond mg --smoother patch --mg-precision "$p" \
        "${post[@]}" --tol 1e-8 --max-iter 100
  done
fi
