#!/usr/bin/env bash
# Session 11 device calls: SASS opcode counts of the residue kernels (carried cubins, compiled
# locally by nvcc 13.0), the residue-kernel A/B (benchmarks/residue_ab.py) and GPU test suites.
#   STEPS="sass ab tests" bash benchmarks/session11_call.sh
set -uo pipefail
source benchmarks/device_env.sh || exit 1
STEPS=${STEPS:-sass ab tests}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/nvidia_smi.txt"
step() { local name=$1 t=$2; shift 2; local s=$SECONDS
  timeout "$t" "$@" > "$OUT/$name.txt" 2>&1; local rc=$?
  echo "$name: rc=$rc $((SECONDS - s)) s | $(tail -1 "$OUT/$name.txt")"; }
for s in $STEPS; do case $s in
  sass)
    for c in benchmarks/results/session11/*.cubin; do for f in ${SASS_FUNS:-scaled_residues scaled_residues_cols}; do
      o="$OUT/sass_$(basename $c .cubin)_$f.txt"; cuobjdump -sass -fun $f $c > "$o" 2>&1
      echo "== $(basename $c) $f: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' $o) instrs:" \
        $(grep -oE '^\s+/\*[0-9a-f]{4}\*/\s+(@!?U?P[0-9T] )?[A-Z0-9]+(\.[A-Z0-9]+)*' $o | awk '{print $NF}' | sort | uniq -c | sort -rn | head -14 | awk '{printf "%s:%s ", $2, $1}')
    done; done ;;
  ab)
    step residue_ab 200 python3 benchmarks/residue_ab.py --sizes 4096 8192 16384 --rounds ${ROUNDS:-5} \
      --variant fp: --variant int:RES_FP_SPLIT=0 ${AB_EXTRA:-}
    cat "$OUT/residue_ab.txt" ;;
  ncu)  # the row (A) and column (B) residue kernels of one fp64 8192 product under Nsight Compute
    step ncu_res 200 ncu --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis \
      --section WarpStateStats --section Occupancy -k regex:"scaled_residues" -c 3 \
      python3 benchmarks/gpu_ncu_probe.py 8192
    grep -E "^  [a-z_]+ \(|DRAM Throughput|Duration|Compute \(SM\)|Issue Slots Busy|Executed Ipc A|Pipe|Warp Cycles Per Issued" "$OUT/ncu_res.txt" | head -40 ;;
  ncu_plan)  # plan_scalars_i32 of one warm fp64 8192 product under Nsight Compute
    step ncu_plan 120 ncu --profile-from-start off --clock-control none --section SpeedOfLight --section Occupancy \
      --section WarpStateStats --section SchedulerStats --section LaunchStats --section MemoryWorkloadAnalysis \
      -k regex:"plan_scalars" python3 benchmarks/gpu_kernel_times.py 8192 fp64
    grep -E "DRAM Throughput|Duration|Compute \(SM\)|Registers Per|Achieved Occupancy|Theoretical Occ|Eligible|Issued Warp|No Eligible|Warp Cycles Per Issued|Stall|Grid Size|Block Limit Reg|L2 Hit|Mem Busy|Max Bandwidth" "$OUT/ncu_plan.txt" | head -30 ;;
  ktimes)  # per-kernel times of one warm fp64 product per size (ncu, serialised)
    for n in ${KT_SIZES:-8192 4096}; do
      step ktimes_$n 150 ncu --profile-from-start off --clock-control none --metrics gpu__time_duration.sum --csv \
        python3 benchmarks/gpu_kernel_times.py $n ${CONTRACT:-fp64}
      python3 benchmarks/kernel_times_table.py "$OUT/ktimes_$n.txt" | tee "$OUT/ktimes_${n}_table.txt"
    done ;;
  tests)
    step test_gpu 200 python3 -m pytest -q -p no:cacheprovider -rf tests/test_gpu.py
    grep -E "^FAILED|Error" "$OUT/test_gpu.txt" | head -10
    step test_ozaki_gpu 150 python3 -m pytest -q -p no:cacheprovider -rf tests/test_ozaki_gpu.py
    step test_wide 150 python3 -m pytest -q -p no:cacheprovider -rf tests/test_wide.py ;;
  bench48|bench)  # the same steps as session 9-10 (separate bench processes / the full bench)
    STEPS=$s bash benchmarks/session9_call.sh | tail -n +2 ;;
esac; done
