#!/usr/bin/env bash
# Every GPU test file, one after another, each with its own log under $OUT.
# Usage (device): bash benchmarks/session_gpu_tests.sh [test files...]
set -uo pipefail
source benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
python3 -c "import cupy, numpy, sys; print('python', sys.version.split()[0], 'cupy', cupy.__version__, 'numpy', numpy.__version__, 'cuda runtime', cupy.cuda.runtime.runtimeGetVersion())"
files=${*:-tests/test_gpu.py tests/test_ozaki_gpu.py tests/test_wide.py tests/test_lcn_gpu.py tests/test_fwt_gpu.py}
for f in $files; do
  name=$(basename "$f" .py)
  python3 -m pytest -q -p no:cacheprovider -rf "$f" > "$OUT/$name.txt" 2>&1
  echo "$name: rc=$? $(tail -1 "$OUT/$name.txt")"
done
