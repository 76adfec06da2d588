#!/usr/bin/env bash
# LCN device session (H200). Usage, from the repository root on the device:
#   bash benchmarks/lcn_device_run.sh phase1   # GPU tests (background) + 120 s probe of parameter
#                                              # sets on instances 1,3,7,9 (20 runs concurrently);
#                                              # benchmarks/lcn_pick.py picks the set (rule in its
#                                              # docstring); first 300 s of the official run of all
#                                              # nine (concurrently), states saved to .lcn_state/
#   bash benchmarks/lcn_device_run.sh phase2   # resume .lcn_state/ (carried back in) until 600 s
set -uo pipefail
source benchmarks/device_env.sh || exit 1
B=benchmarks/lcn_bench.py
ST=.lcn_state
if [ "$1" = phase1 ]; then
  { nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
    python3 -c "import cupy, numpy, sys; print('python', sys.version.split()[0], 'cupy', cupy.__version__, 'numpy', numpy.__version__, 'cuda runtime', cupy.cuda.runtime.runtimeGetVersion(), 'driver', cupy.cuda.runtime.driverGetVersion())"
    nproc; git log -1 --format=%H; } > "$OUT/gpu_tests.txt" 2>&1
  ( timeout 240 python3 -m pytest -q -p no:cacheprovider -rf tests/test_lcn_gpu.py >> "$OUT/gpu_tests.txt" 2>&1
    echo "rc=$?" >> "$OUT/gpu_tests.txt" ) &
  TP=$!
  CONFIGS='{"base": {},
   "rs": {"slack_best": true, "p_short": 0.3, "restart": true},
   "rc": {"slack_best": true, "p_short": 0.3, "restart": true, "recal": true, "reheat": 1.0, "cycle": 32000},
   "rch": {"slack_best": true, "p_short": 0.3, "restart": true, "recal": true, "reheat": 1.0, "cycle": 32000, "hinge": 0.5},
   "rc3": {"slack_best": true, "p_short": 0.3, "restart": true, "recal": true, "reheat": 1.0, "cycle": 32000, "power": 3}}'
  python3 $B probe --instances 1,3,7,9 --configs "$CONFIGS" --time 120 --checkpoints 60 --seed 1 \
    --json "$OUT/probe.json" > "$OUT/probe.log" 2>&1
  wait $TP
  tail -3 "$OUT/gpu_tests.txt"
  tail -8 "$OUT/probe.log"
  rm -rf $ST; mkdir -p $ST
  python3 benchmarks/lcn_pick.py "$OUT/probe.json" "$OUT/gpu_tests.txt" > $ST/params.json 2>> "$OUT/probe.log"
  tail -7 "$OUT/probe.log"; echo "params: $(cat $ST/params.json)"
  python3 $B solve-all --time 300 --checkpoints 60 --seed 1 --params "$(cat $ST/params.json)" --state-dir $ST \
    --out-dir /tmp/sol1 --tar "$OUT/seg1_solutions.tar.gz" --json "$OUT/seg1.json" > "$OUT/seg1.log" 2>&1
  echo "seg1 rc=$?"; tail -12 "$OUT/seg1.log"
  tar czf "$OUT/state1.tar.gz" $ST
else
  ls -la $ST; echo "params: $(cat $ST/params.json)"
  python3 $B solve-all --until 600 --checkpoints "" --seed 1 --params "$(cat $ST/params.json)" --resume $ST \
    --state-dir /tmp/state2 --out-dir /tmp/sol2 --tar "$OUT/seg2_solutions.tar.gz" --json "$OUT/seg2.json" \
    > "$OUT/seg2.log" 2>&1
  echo "seg2 rc=$?"; tail -12 "$OUT/seg2.log"
  tar czf "$OUT/state2.tar.gz" -C /tmp state2
fi
