#!/usr/bin/env bash
# One device call for the dd / fp128 contracts: install the carried wheels, run the GPU and
# wide-format tests, then the GPU benchmark (benchmarks/wide_bench.py).
# Usage (on the device, repo root): bash benchmarks/wide_gpu_run.sh "SIZES" [REPS]
set -uo pipefail
SIZES=${1:-"4096 8192 16384"}
REPS=${2:-2}
source benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$OUT/gpu_wide.txt"
python3 -m pytest -q -p no:cacheprovider tests/test_wide.py tests/test_gpu.py tests/test_ozaki_gpu.py 2>&1 \
  | tee "$OUT/wide_tests.txt" | tail -8
timeout 300 python3 benchmarks/wide_bench.py --device gpu --sizes $SIZES --reps "$REPS" \
  --cases dd:f64 dd:dd fp128:f64 --json "$OUT/wide_bench.json" 2>&1 | tee "$OUT/wide_bench.txt"
timeout 120 python3 benchmarks/wide_bench.py --device gpu --sizes 4096 8192 --reps "$REPS" \
  --cases fp128:q128 --json "$OUT/wide_bench_q128.json" 2>&1 | tee -a "$OUT/wide_bench.txt"
