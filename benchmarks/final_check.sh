#!/usr/bin/env bash
# Last device call of the session: every GPU test (GPU engine, wide formats, Ozaki-I) and
# the dd-operand benchmark at 8192/16384.
set -uo pipefail
source benchmarks/device_env.sh
python3 -m pytest -q -p no:cacheprovider -rf tests/test_gpu.py tests/test_ozaki_gpu.py tests/test_wide.py 2>&1 \
  | tee "$OUT/final_tests.txt" | tail -6
timeout 100 python3 benchmarks/wide_bench.py --device gpu --sizes 8192 16384 --reps 2 --cases dd:dd \
  --json "$OUT/wide_dd.json" 2>&1 | tee "$OUT/wide_dd.txt" | cut -c1-420
