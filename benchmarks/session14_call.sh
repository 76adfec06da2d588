#!/bin/bash
# Session 14 device calls: $1 selects the step list (see the case below). Prints a short summary last.
source benchmarks/device_env.sh || exit 1
cd benchmarks/.. || exit 1
step() { echo "== $*"; }
case "$1" in
  1)
    step "tests (h15, float16, pipe_table, split)"
    timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_fwt_gpu.py -k "h15 or float16_single_pass or float16_variants or pipe_table or split" 2>&1 | tail -3
    step "trace h15 d15"; timeout 60 python3 benchmarks/fwt_trace.py h15 d15
    step "trace h15 grid 128"; timeout 30 python3 benchmarks/fwt_trace.py h15 --grid 128
    step "ab stagger"; timeout 60 python3 benchmarks/fwt_ab_build.py "float16:15" "" "-DOZ_FWT_H15_STAGGER=1"
    step "probe (grids)"; timeout 90 python3 benchmarks/fwt_h15_probe.py 256 5 | tail -8
    step "ab stagger again"; timeout 60 python3 benchmarks/fwt_ab_build.py "float16:15" "" "-DOZ_FWT_H15_STAGGER=1" "-DOZ_FWT_H15_STAGGER=1"
    ;;
  2)
    step "d15 probe (x0 staged during the d half)"; timeout 120 python3 benchmarks/fwt_d15_probe.py 256 5 | tail -12
    step "trace d15"; timeout 60 python3 benchmarks/fwt_trace.py d15
    step "trace h15 bulk stores"; FWT_TRACE_OPTS="-DOZ_FWT_H15_BULK_ST=1" timeout 60 python3 benchmarks/fwt_trace.py h15
    step "ab bulk stores"; timeout 90 python3 benchmarks/fwt_ab_build.py "float16:15" "" "-DOZ_FWT_H15_BULK_ST=1" "" "-DOZ_FWT_H15_BULK_ST=1"
    ;;
  3)
    step "d15 probe: prefetch modes"; timeout 200 python3 benchmarks/fwt_d15_probe.py 256 5 "-DOZ_FWT_D15_PF=1" "-DOZ_FWT_D15_PF=0" "-DOZ_FWT_D15_PF=2" "-DOZ_FWT_D15_PF=3" | grep -v "^random\|^integer\|^in place"
    for pf in 2 0; do step "trace d15 PF=$pf"; FWT_TRACE_OPTS="-DOZ_FWT_D15_PF=$pf" timeout 60 python3 benchmarks/fwt_trace.py d15 | grep -v "first row\|spread"; done
    ;;
  4)
    step "d15 probe: d15 (PF=0) and d15s"; timeout 200 python3 benchmarks/fwt_d15_probe.py 256 5
    step "trace d15s"; timeout 60 python3 benchmarks/fwt_trace.py d15s
    ;;
  5)
    step "tests: d15s, split first pass, random within bound float64"
    timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_fwt_gpu.py -k "d15s or split_first_pass or (random_within_bound and float64)" 2>&1 | tail -3
    step "d15 probe: default vs D15S_PF=1"; timeout 200 python3 benchmarks/fwt_d15_probe.py 256 5 "" "-DOZ_FWT_D15S_PF=1" | grep -v "^random\|^integer\|^in place"
    step "public bench float64:15 (5 processes)"; timeout 200 python3 benchmarks/fwt_repeat.py 5 "float64:15,float16:15" | tail -2
    ;;
  6)
    step "tests: d15s, h15, split first pass, random within bound"
    timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_fwt_gpu.py -k "d15s or h15 or split_first_pass or random_within_bound" 2>&1 | tail -3
    step "ab: DYN, WARPA"
    timeout 250 python3 benchmarks/fwt_ab_build.py "float64:15,float16:15" "" "-DOZ_FWT_DYN=1" "-DOZ_FWT_D15_WARPA=1" "-DOZ_FWT_DYN=1 -DOZ_FWT_D15_WARPA=1"
    ;;
  7)
    step "ab: leftover tickets vs static (OZ_FWT_LEFTOVER=0)"
    timeout 200 python3 benchmarks/fwt_ab_build.py "float64:15,float16:15" "" "-DOZ_FWT_LEFTOVER=0" "" "-DOZ_FWT_LEFTOVER=0"
    step "tests: d15s, h15, leftover, split first pass, random within bound"
    timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_fwt_gpu.py -k "d15s or h15 or leftover or split_first_pass or random_within_bound" 2>&1 | tail -4
    step "public bench, fresh processes"; timeout 200 python3 benchmarks/fwt_repeat.py 4 "float64:15,float16:15" | tail -2
    ;;
  8)
    step "ab: tickets in dynamic smem; LEFTOVER=0; D15 barrier early"
    timeout 250 python3 benchmarks/fwt_ab_build.py "float64:15,float16:15" "" "-DOZ_FWT_LEFTOVER=0" "-DOZ_FWT_D15_BAR_EARLY=1" "" "-DOZ_FWT_LEFTOVER=0"
    ;;
  9)
    step "ab: h15 early draw vs static"
    timeout 200 python3 benchmarks/fwt_ab_build.py "float16:15,float64:15" "" "-DOZ_FWT_LEFTOVER=0" "" "-DOZ_FWT_LEFTOVER=0"
    step "tests: d15s, h15, leftover"
    timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_fwt_gpu.py -k "d15s or h15 or leftover" 2>&1 | tail -4
    step "public bench, fresh processes"; timeout 200 python3 benchmarks/fwt_repeat.py 4 "float64:15,float16:15" | tail -2
    ;;
  10)
    step "h15 sources: session 13 vs current (leftover, static)"
    timeout 200 python3 benchmarks/fwt_src_ab.py float16 "benchmarks/_tmp/fwht_s13.cu" "ozgemm/fwt/fwht.cu" "ozgemm/fwt/fwht.cu -DOZ_FWT_LEFTOVER=0" "benchmarks/_tmp/fwht_s13.cu"
    ;;
  11)
    step "h15 sources: session 13 vs two-pass leftover vs its static build"
    timeout 200 python3 benchmarks/fwt_src_ab.py float16 "benchmarks/_tmp/fwht_s13.cu" "ozgemm/fwt/fwht.cu" "ozgemm/fwt/fwht.cu -DOZ_FWT_LEFTOVER=0"
    step "tests: d15s, h15, leftover"
    timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_fwt_gpu.py -k "d15s or h15 or leftover" 2>&1 | tail -4
    step "public bench, fresh processes"; timeout 200 python3 benchmarks/fwt_repeat.py 4 "float16:15,float64:15" | tail -2
    ;;
  12)
    step "tests/test_fwt_gpu.py (whole file)"
    timeout 330 python3 -m pytest -q -p no:cacheprovider -rf tests/test_fwt_gpu.py > $OUT/test_fwt_gpu.txt 2>&1; echo "rc $?"
    tail -6 $OUT/test_fwt_gpu.txt
    step "ozgemm fwt bench, 256 MiB, float16/32/64, 2^8..2^16"
    timeout 200 python3 -m ozgemm fwt bench --dtypes float16,float32,float64 --lmin 8 --lmax 16 --mbytes 256 --json $OUT/fwt_bench_256mib.json > $OUT/fwt_bench_256mib.txt 2>&1; echo "rc $?"
    grep -E "2\^1[45] " $OUT/fwt_bench_256mib.txt
    ;;
  13)
    step "ab: pipe leftover tiles vs static"
    timeout 120 python3 benchmarks/fwt_ab_build.py "float32:15,float64:14" "" "-DOZ_FWT_PIPE_LEFTOVER=0" "" "-DOZ_FWT_PIPE_LEFTOVER=0"
    step "tests: pipe, split, leftover, d15s, h15, random within bound, table"
    timeout 170 python3 -m pytest -q -p no:cacheprovider -rf tests/test_fwt_gpu.py -k "pipe or split or leftover or d15s or h15 or random_within_bound or table" > $OUT/call13_tests.txt 2>&1; echo "rc $?"; tail -3 $OUT/call13_tests.txt
    step "public bench, fresh processes"; timeout 60 python3 benchmarks/fwt_repeat.py 3 "float32:15,float64:14" | tail -2
    ;;
  *) "$@" ;;
esac
