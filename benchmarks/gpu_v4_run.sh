#!/usr/bin/env bash
# Session-5 device call (issue #8, GPU v4): every GPU test file, the bench at phi = 0.5 and
# phi = 2, a kernel timeline, and the interleaved whole-call A/B. Logs under $OUT (7 files).
# Usage (device, repo root, carry .whl): bash benchmarks/gpu_v4_run.sh
set -uo pipefail
source benchmarks/device_env.sh
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader
  python3 -c "import cupy, numpy, sys; from cupy_backends.cuda.libs import cublas; h = cupy.cuda.device.get_cublas_handle(); print('python', sys.version.split()[0], 'cupy', cupy.__version__, 'numpy', numpy.__version__, 'cuda runtime', cupy.cuda.runtime.runtimeGetVersion(), 'cublas', cublas.getVersion(h))"
  git_rev=$(cat .git_rev 2>/dev/null || echo unknown); echo "code $git_rev"
  for f in ${TESTS:-tests/test_gpu.py tests/test_wide.py tests/test_ozaki_gpu.py}; do
    echo "$(basename $f .py): $(python3 -m pytest -q -p no:cacheprovider $f 2>&1 | tail -1)"
  done; } 2>&1 | tee "$OUT/tests.txt"
python3 -m ozgemm bench --device gpu --sizes 4096 8192 16384 --contracts fp64 fp64-fast fp32 --block 16 --reps 10 \
    --json "$OUT/bench.json" > "$OUT/bench.txt" 2>&1; tail -30 "$OUT/bench.txt"
python3 -m ozgemm bench --device gpu --sizes 16384 --contracts fp64 fp64-fast fp32 --phi 2 --block 16 --reps 10 \
    --json "$OUT/bench_phi2.json" > "$OUT/bench_phi2.txt" 2>&1; tail -8 "$OUT/bench_phi2.txt"
python3 benchmarks/gpu_timeline.py --sizes 4096 8192 16384 --contracts fp64 --reps 10 > "$OUT/timeline.txt" 2>&1
tail -6 "$OUT/timeline.txt"
python3 benchmarks/gpu_ab.py --sizes 4096 8192 16384 --only calls --reps 10 > "$OUT/ab.txt" 2>&1; tail -10 "$OUT/ab.txt"
