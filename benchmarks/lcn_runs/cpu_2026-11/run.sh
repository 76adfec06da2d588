#!/bin/bash
# usage: run.sh TAG TIME SEED PARAMS inst...
tag=$1; t=$2; seed=$3; params=$4; shift 4
cd /work/main
for i in "$@"; do
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python3 -m ozgemm lcn solve ../shared/lcn/gd2025/automatic-$i.json -o /tmp/lcnb/${tag}_$i.json --time $t --seed $seed --device cpu --quiet --report-every 5 ${params:+--params "$params"} --history /tmp/lcnb/${tag}_${i}_hist.json
done
