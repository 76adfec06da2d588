#!/bin/bash
# Session 15 device calls: $1 selects the step list (see the case below). Prints a short summary last.
source benchmarks/device_env.sh || exit 1
step() { echo "== $*"; }
# the whole GPU test file (log in $OUT), then the public benchmark of the four sizes nearest 85 %
# in 4 fresh processes; $1, $2: the two time limits (s)
tests_and_repeat() {
  step "tests/test_fwt_gpu.py (whole file) on ${CODE:-?}"
  timeout "$1" python3 -m pytest -q -p no:cacheprovider -rf tests/test_fwt_gpu.py > $OUT/test_fwt_gpu.txt 2>&1; echo "rc $?"
  tail -4 $OUT/test_fwt_gpu.txt
  step "public bench, fresh processes"
  timeout "$2" python3 benchmarks/fwt_repeat.py 4 "float16:15,float32:15,float64:15,float64:14" | tail -4
}
case "$1" in
  1) tests_and_repeat 360 200 ;;  # (call 1: the same steps, tail -6 of the test log)
  2)
    step "ab: h15 one exchange (OZ_FWT_H15_X1=1) vs default"
    timeout 150 python3 benchmarks/fwt_ab_build.py "float16:15" "" "-DOZ_FWT_H15_X1=1" "" "-DOZ_FWT_H15_X1=1"
    step "trace h15 default, then X1"; timeout 60 python3 benchmarks/fwt_trace.py h15
    FWT_TRACE_OPTS="-DOZ_FWT_H15_X1=1" timeout 60 python3 benchmarks/fwt_trace.py h15
    ;;
  3)
    step "ab: h15 one exchange X1=1, deferred stores X1=2 (mma phase), X1=3 (spread)"
    timeout 150 python3 benchmarks/fwt_ab_build.py "float16:15" "" "-DOZ_FWT_H15_X1=1" "-DOZ_FWT_H15_X1=2" "-DOZ_FWT_H15_X1=3" "" "-DOZ_FWT_H15_X1=2" "-DOZ_FWT_H15_X1=3"
    for o in 2 3; do step "trace X1=$o"; FWT_TRACE_OPTS="-DOZ_FWT_H15_X1=$o" timeout 60 python3 benchmarks/fwt_trace.py h15 | grep -v "first row"; done
    ;;
  4)
    step "h15 sources: base (7d7c9db) vs noinline row loop + leftover tickets, its static build, inlined"
    timeout 200 python3 benchmarks/fwt_src_ab.py float16 "benchmarks/_tmp/fwht_base.cu" "ozgemm/fwt/fwht.cu" "ozgemm/fwt/fwht.cu -DOZ_FWT_LEFTOVER=0" "ozgemm/fwt/fwht.cu -DOZ_FWT_H15_INLINE=1" "benchmarks/_tmp/fwht_base.cu" "ozgemm/fwt/fwht.cu"
    step "trace h15 (new)"; timeout 60 python3 benchmarks/fwt_trace.py h15 | grep -v "first row"
    step "tests: h15, leftover, 2^24 first pass, float16 within bound"
    timeout 200 python3 -m pytest -q -p no:cacheprovider -rf tests/test_fwt_gpu.py -k "h15 or leftover or first_pass_of_2_24 or (random_within_bound and float16)" 2>&1 | tail -3
    step "public bench, fresh processes"; timeout 100 python3 benchmarks/fwt_repeat.py 4 "float16:15" | tail -1
    ;;
  5)
    step "h15 sources: base (7d7c9db) vs inlined loop + leftover tickets (default), + X1, + PF=3, probes (wrong values)"
    F=ozgemm/fwt/fwht.cu
    timeout 200 python3 benchmarks/fwt_src_ab.py float16 "benchmarks/_tmp/fwht_base.cu" "$F" "$F -DOZ_FWT_H15_X1=1" "$F -DOZ_FWT_H15_PF=3" "$F -DOZ_FWT_H15_PROBE=1" "$F -DOZ_FWT_H15_PROBE=2"
    step "public bench, fresh processes (default)"; timeout 100 python3 benchmarks/fwt_repeat.py 4 "float16:15" | tail -1
    ;;
  6) tests_and_repeat 380 150 ;;
  7)
    step "ozgemm fwt bench, 256 MiB, float16/32/64, 2^8..2^16 (+ the default extra lengths) on ${CODE:-?}"
    timeout 300 python3 -m ozgemm fwt bench --dtypes float16,float32,float64 --lmin 8 --lmax 16 --mbytes 256 --json $OUT/fwt_bench_256mib.json > $OUT/fwt_bench_256mib.txt 2>&1; echo "rc $?"
    grep -E "2\^1[45] " $OUT/fwt_bench_256mib.txt
    step "trace h15"; timeout 60 python3 benchmarks/fwt_trace.py h15 | grep -v "first row"
    ;;
  8)
    step "ozgemm fwt bench, 256 MiB, float16/32/64, 2^17..2^22 on ${CODE:-?}"
    timeout 200 python3 -m ozgemm fwt bench --dtypes float16,float32,float64 --lmin 17 --lmax 22 --mbytes 256 --json $OUT/fwt_bench_17_22.json > $OUT/fwt_bench_17_22.txt 2>&1; echo "rc $?"
    grep -E "L=(17|22) " $OUT/fwt_bench_17_22.txt
    step "public bench float16 2^15, 8 more fresh processes"; timeout 150 python3 benchmarks/fwt_repeat.py 8 "float16:15" | tail -1
    ;;
  *) "$@" ;;
esac
