#!/usr/bin/env bash
# One device call: install the carried wheels, run the GPU tests, run the GPU benchmark.
# Usage (on the device, repo root): bash benchmarks/gpu_run.sh "SIZES" "CONTRACTS" [tests|bench|all]
set -uo pipefail
SIZES=${1:-"1024 2048 4096 8192 16384"}
CONTRACTS=${2:-"fp64 fp64-fast fp32"}
WHAT=${3:-all}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:.
else
  export PYTHONPATH=.
fi
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
python3 -c "import cupy, numpy; print('cupy', cupy.__version__, 'numpy', numpy.__version__)"
if [ "$WHAT" != bench ]; then
  python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py 2>&1 | tee "$OUT/gpu_tests.txt" | tail -25
fi
if [ "$WHAT" != tests ]; then
  python3 -m ozgemm bench --device gpu --sizes $SIZES --contracts $CONTRACTS --block 16 --reps 10 \
      --json "$OUT/gpu_bench.json" 2>&1 | tee "$OUT/gpu_bench.txt"
fi
