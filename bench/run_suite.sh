#!/usr/bin/env bash
# The operator benchmark suite behind docs/notebook/performance_history.md: device tests, ceilings, then the
# Cartesian cg/dg kernel families and the general-geometry (BP3/BP5) path at 3e7 DoFs.
# Usage: bench/run_suite.sh TCFEM_BINARY OUTPUT_DIR [DEVICE_TESTS_BINARY]
set -uo pipefail
tcfem=$1
out=$2
tests=${3:-}
mkdir -p "$out"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader | tee "$out/device.txt"
if [ -n "$tests" ]; then
  "$tests" > "$out/device_tests.log" 2>&1
  echo "device tests rc=$?"; grep -E "PASSED|FAILED" "$out/device_tests.log"
fi
"$tcfem" bench --ceilings --dim 3 --disc cg --degrees 1-8 --precisions fp64,fp32,tf32x3,fp16ec,bf16x3,fp16,bf16 \
  --variants cuda-core,tensor-core --dofs 3e7 --json "$out/bench_cg3d.json" > "$out/bench_cg3d.log" 2>&1
echo "bench cg3d rc=$?"
"$tcfem" bench --dim 3 --disc dg --degrees 1-8 --precisions fp64,fp32,tf32x3,fp16ec,bf16x3,fp16,bf16 \
  --variants cuda-core,tensor-core,generic --dofs 3e7 \
  --json "$out/bench_dg3d.json" > "$out/bench_dg3d.log" 2>&1
echo "bench dg3d rc=$?"
"$tcfem" bench --dim 3 --disc cg --geometry deformed --quadrature bp5 --degrees 2-7 --precisions fp64,fp32 \
  --variants generic --dofs 3e7 --json "$out/bench_bp5.json" > "$out/bench_bp5.log" 2>&1
echo "bench bp5 rc=$?"
"$tcfem" bench --dim 3 --disc cg --geometry deformed --quadrature bp3 --degrees 2-7 --precisions fp64 \
  --variants generic --dofs 3e7 --json "$out/bench_bp3.json" > "$out/bench_bp3.log" 2>&1
echo "bench bp3 rc=$?"
