#!/usr/bin/env bash
# Device run for the pipelined row kernel (session 6): restricted sweep of the PIPE candidates
# for rows of 2^12-2^15 (+ the committed entries), the before/after benchmark of those lengths
# and the full benchmark (fwt_device.py), then the PIPE GPU tests.
# Usage (device): bash benchmarks/fwt_pipe_run.sh [pytest -k expression]
set -uo pipefail
source benchmarks/device_env.sh
python3 -c "import cupy, numpy, sys; print('python', sys.version.split()[0], 'cupy', cupy.__version__, 'numpy', numpy.__version__, 'cuda runtime', cupy.cuda.runtime.runtimeGetVersion())"
timeout ${SWEEP_S:-400} python3 benchmarks/fwt_device.py --tune-L ${TUNE_L:-12-15} ${SWEEP_FLAG:---tune-pipe} --no-tests ${EXTRA_FLAGS:-} > "$OUT/fwt_device_log.txt" 2>&1
echo "fwt_device rc=$?"
grep -E "^adopt|FAILED|exact=False|Error|error" "$OUT/fwt_device_log.txt" | head -40
timeout ${TEST_S:-150} python3 -m pytest -q -p no:cacheprovider -rf tests/test_fwt_gpu.py -k "${1:-pipe}" > "$OUT/pipe_tests.txt" 2>&1
echo "pipe tests rc=$? $(tail -1 "$OUT/pipe_tests.txt")"
grep -E "^\| (float16|float32|float64) \| 2\^1[2-6] " "$OUT/fwt_device_log.txt" | tail -30
