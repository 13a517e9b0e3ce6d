"""How one comparison is timed: warm-up, a calibrated inner loop, many interleaved rounds.

Each round times every library once, in a rotating order, so a burst of load from another process
hits all libraries alike and the ratios stay meaningful on a busy machine."""

import statistics
import time


def _time_calls(fn, loops):
    t0 = time.perf_counter()
    for _ in range(loops):
        fn()
    return (time.perf_counter() - t0) / loops


def calibrate(fn, target_s, timer=_time_calls):
    """Inner-loop count so that one sample lasts about `target_s` (at least one call)."""
    loops = 1
    while True:
        per_call = timer(fn, loops)
        if per_call * loops >= target_s / 4 or loops >= 1 << 20:
            break
        loops *= 4
    return max(1, int(target_s / max(per_call, 1e-9)))


def summarize(samples):
    """Median with its spread (interquartile range) and the extremes, all in seconds per call."""
    s = sorted(samples)
    if len(s) >= 4:
        q = statistics.quantiles(s, n=4)
        p25, p75 = q[0], q[2]
    else:
        p25, p75 = s[0], s[-1]
    return {"median_s": statistics.median(s), "p25_s": p25, "p75_s": p75, "min_s": s[0], "max_s": s[-1]}


def compare(fns, rounds, sample_s, warmup=2, budget_s=None, timer=None):
    """Times each callable in `fns` ({lib: fn}) interleaved; returns {lib: summary + samples}.
    `timer(fn, loops)` gives seconds per call (default: the host clock around the loop).

    With `budget_s`, a case whose slowest library needs more than that for all its rounds gets
    fewer rounds (never under 3), so one very slow op cannot hold up a quick run."""
    timer = timer or _time_calls
    libs = list(fns)
    for lib in libs:
        for _ in range(warmup):
            fns[lib]()
    loops, per_call = {}, {}
    for lib in libs:
        loops[lib] = calibrate(fns[lib], sample_s, timer)
        per_call[lib] = timer(fns[lib], 1)
    if budget_s is not None:
        slowest = max(loops[lib] * per_call[lib] for lib in libs)
        rounds = max(min(rounds, 3), min(rounds, int(budget_s / max(slowest, 1e-9))))
    samples = {lib: [] for lib in libs}
    for r in range(rounds):
        order = libs[r % len(libs):] + libs[:r % len(libs)]
        for lib in order:
            samples[lib].append(timer(fns[lib], loops[lib]))
    out = {}
    for lib in libs:
        out[lib] = summarize(samples[lib])
        out[lib]["inner_loops"] = loops[lib]
        out[lib]["samples_s"] = samples[lib]
    return out
