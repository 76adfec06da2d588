#!/usr/bin/env bash
# Device: instance 9 from the Kamada-Kawai start layout (ozgemm.lcn.layout), two runs at once on
# the one GPU: the current defaults and the previous GPU algorithm. T = total seconds per run
# (layout included). Usage: bash benchmarks/lcn_init_run.sh T
set -uo pipefail
T=${1:-270}
source benchmarks/device_env.sh
python3 -c "import networkx, scipy; print('networkx', networkx.__version__, 'scipy', scipy.__version__)"
OLD='{"slack_best": false, "p_short": 0.0, "restart": false, "recal": false, "hinge": 0.0, "reheat": 0.5, "cycle": 100000}'
python3 benchmarks/lcn_bench.py solve --instance 9 --init kamada-kawai --time $T --device gpu --seed 1 \
  --report-every 1 --checkpoints 60,$T --out-drawing "$OUT/automatic-9.kk-default.json" --json "$OUT/inst9_kk_default.json" \
  > "$OUT/inst9_kk_default.log" 2>&1 &
P1=$!
python3 benchmarks/lcn_bench.py solve --instance 9 --init kamada-kawai --time $T --device gpu --seed 1 \
  --report-every 1 --checkpoints 60,$T --params "$OLD" --out-drawing "$OUT/automatic-9.kk-old.json" \
  --json "$OUT/inst9_kk_old.json" > "$OUT/inst9_kk_old.log" 2>&1 &
P2=$!
wait $P1; echo "default rc=$?"; wait $P2; echo "old rc=$?"
for f in "$OUT"/inst9_kk_*.log; do echo "== $f"; tail -1 "$f" | cut -c1-700; done
