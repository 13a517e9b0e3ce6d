"""Process CPU time per call of the `reduce` suite's cases, one thread, minigrad and torch
interleaved (best of 7 rounds of about 3 ms each): steadier than wall clock on a shared machine.

    PYTHONPATH=python python3 docs/bench/reduce_cpu_time.py OUT.json   # SIZES=1000,100000 OPS=sum,norm
"""
import json, os, sys, time
os.environ.setdefault("RAYON_NUM_THREADS", "1")
import numpy as np, torch
import minigrad as mg
from minigrad.bench.suites.reduce import OPS
torch.set_num_threads(int(os.environ["RAYON_NUM_THREADS"]))
out = {}
sizes = [int(s) for s in os.environ.get("SIZES", "1000,100000,1000000,10000000").split(",")]
only = os.environ.get("OPS")
for name, (tf, _) in OPS.items():
    if only and name not in only.split(","):
        continue
    for n in sizes:
        a = np.random.default_rng(n).standard_normal((max(1, n // 1000), min(n, 1000))).astype(np.float32)
        fm = (lambda x=mg.from_numpy(a.copy()): tf(mg, x))
        ft = (lambda x=torch.from_numpy(a.copy()): tf(torch, x))
        fm(); ft()
        t0 = time.process_time(); fm(); one = max(time.process_time() - t0, 1e-6)
        k = max(1, int(0.003 / one))
        best = {"mg": 1e9, "torch": 1e9}
        for _ in range(7):
            for lib, f in (("mg", fm), ("torch", ft)):
                t0 = time.process_time()
                for _ in range(k):
                    f()
                best[lib] = min(best[lib], (time.process_time() - t0) / k)
        out[f"{name} {n:.0e}"] = best
        print(f"{name:18s} {n:9d} mg {best['mg']*1e6:9.2f} us torch {best['torch']*1e6:9.2f} us ratio {best['mg']/best['torch']:.2f}", flush=True)
json.dump(out, open(sys.argv[1], "w"))
