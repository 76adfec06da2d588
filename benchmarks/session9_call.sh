#!/usr/bin/env bash
# Session 9-10 device calls: GPU tests, then A/Bs, each step with its own timeout and log under
# $OUT and one summary line. STEPS picks the steps (default: tests pairs); PAIRS_VARIANTS the
# variant_pairs.py variants (NAME:settings ...), PAIRS_SIZES, ROUNDS.
#   REV=<commit> STEPS="tests pairs" bash benchmarks/session9_call.sh
set -uo pipefail
source benchmarks/device_env.sh || exit 1
STEPS=${STEPS:-tests pairs}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/nvidia_smi.txt"
echo "code: ${REV:-unknown}"
step() { local name=$1 t=$2; shift 2; local s=$SECONDS
  timeout "$t" "$@" > "$OUT/$name.txt" 2>&1; local rc=$?
  echo "$name: rc=$rc $((SECONDS - s)) s | $(tail -1 "$OUT/$name.txt")"; }
for s in $STEPS; do case $s in
  tests)
    step test_gpu 200 python3 -m pytest -q -p no:cacheprovider -rf tests/test_gpu.py
    grep -E "^FAILED|Error" "$OUT/test_gpu.txt" | head -10
    step test_ozaki_gpu 150 python3 -m pytest -q -p no:cacheprovider -rf tests/test_ozaki_gpu.py ;;
  wide)
    step test_wide 150 python3 -m pytest -q -p no:cacheprovider -rf tests/test_wide.py ;;
  ncu_res)  # the row (A) and column (B) residue kernels of one fp64 8192 product under Nsight Compute
    step ncu_res 200 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis \
      --section WarpStateStats --section Occupancy -k regex:"scaled_residues" -c 4 \
      python3 benchmarks/gpu_ncu_probe.py 8192
    grep -E "scaled_residues|Throughput|Duration|Stall|Eligible|Issued Warp|Achieved Occupancy" "$OUT/ncu_res.txt" | head -60 ;;
  bside)  # session 10: B's statistics + residues through its columns vs a transposed copy
    step bside_ab 150 python3 benchmarks/bside_ab.py --sizes 4096 8192 16384 --rounds 5
    cat "$OUT/bside_ab.txt" ;;
  pairs)
    vs=(); for v in ${PAIRS_VARIANTS:-spec: nospec:precision.planner._SPECULATE=0}; do vs+=(--variant "$v"); done
    step pairs 300 python3 benchmarks/variant_pairs.py --sizes ${PAIRS_SIZES:-4096 8192} --contract ${CONTRACT:-fp64} \
      --rounds ${ROUNDS:-4} --json pairs.json "${vs[@]}"
    sed -n '/median over/,$p' "$OUT/pairs.txt" ;;
  stats)
    step stats_ab 90 python3 benchmarks/gpu_ab.py --sizes 4096 8192 16384 --only stats
    sed -n "/^| quantity/,\$p" "$OUT/stats_ab.txt" ;;
  lt)
    step cublaslt 150 python3 benchmarks/cublaslt_probe.py 4096 8192
    tail -15 "$OUT/cublaslt.txt" ;;
  timeline)
    step timeline 120 env PYTHONPATH=$PYTHONPATH:/opt/torch/.venv/lib/python3.12/site-packages \
      python3 benchmarks/gpu_timeline.py --sizes 4096 8192 --contracts fp64 --list --speculate both
    grep -E "^==|traced|gap " "$OUT/timeline.txt" | head -40 ;;
  probe)
    step overlap_probe 120 python3 benchmarks/overlap_probe.py --sizes 4096 8192
    cat "$OUT/overlap_probe.txt" ;;
  bench48)  # separate bench processes, fp64 4096 and 8192 only
    for i in 1 2 3; do
      step bench48_$i 120 python3 -m ozgemm bench --device gpu --sizes 4096 8192 --contracts fp64 \
        --json "$OUT/bench48_$i.json"
      grep -E "^fp64 +(4096|8192) +0.5" "$OUT/bench48_$i.txt"
    done ;;
  bench)
    step bench 400 python3 -m ozgemm bench --device gpu --sizes 1024 2048 4096 8192 16384 \
      --contracts fp64 fp64-fast fp32 --json "$OUT/bench.json"
    sed -n '/^ozgemm bench/,$p' "$OUT/bench.txt" ;;
esac; done
