"""CPU solve from a start layout with the GPU's batch and cycle (1024, 32000), so the trajectory
is the GPU's at equal iterations. Usage: python benchmarks/lcn_cpu_init_run.py INSTANCE METHOD SECONDS"""
import sys, time, json
import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from lcn_bench import DATA, path  # the instances' folder; OZGEMM_LCN_DATA overrides
from ozgemm import lcn
from ozgemm.lcn.layout import layout
i, init, T = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
d = lcn.load(path(DATA, i))
t = time.perf_counter()
s = layout(d, init, seed=1)
lay = time.perf_counter() - t
p = lcn.AnnealParams(batch=1024, cycle=32000)
r = lcn.anneal(s, seconds=T, seed=1, device="cpu", params=p, report_every=5)
print(json.dumps(dict(inst=i, init=init, layout_s=lay, start=list(r.initial.objective), final=list(r.crossings.objective),
      iterations=r.iterations, seconds=r.seconds, hist=[(round(h['seconds']), h['iteration'], h['best_k']) for h in r.history[::6]])))
lcn.save(r.drawing, f'automatic-{i}.{init}-cpu.json')
