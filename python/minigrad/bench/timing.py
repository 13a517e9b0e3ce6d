"""How one comparison is timed: warm-up, a calibrated inner loop, many interleaved rounds.

Each round times every library once, in a rotating order, so a burst of load from another process
hits all libraries alike and the ratios stay meaningful on a busy machine. Before every sample of
every library the runner pauses (`PAUSE_S`), the same for all, so that a thread pool still
spin-waiting after one library's sample (torch's OpenMP workers spin for about 3.5 ms of CPU
after their last parallel region; rayon's yield a few rounds) has gone idle before the next
library's sample starts, instead of taking a core from it."""

import statistics
import time

PAUSE_S = 0.01  # idle time before each sample (see the module doc); the CLI's --pause changes it


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


def compare(fns, rounds, sample_s, warmup=2, budget_s=None, timer=None, pause_s=0.0):
    """Times each callable in `fns` ({lib: fn}) interleaved; returns {lib: summary + samples}.
    `timer(fn, loops)` gives seconds per call (default: the host clock around the loop).
    With more than one library, every sample (and every calibration) is preceded by `pause_s` of
    sleep, identical for each library, so no pool left spinning by the previous one overlaps it.

    With `budget_s`, a case whose slowest library needs more than that for all its rounds gets
    fewer rounds (never under 3), so one very slow op cannot hold up a quick run."""
    timer = timer or _time_calls
    libs = list(fns)
    pause = (lambda: time.sleep(pause_s)) if pause_s > 0 and len(libs) > 1 else (lambda: None)
    for lib in libs:
        for _ in range(warmup):
            fns[lib]()
    loops, per_call = {}, {}
    for lib in libs:
        pause()
        loops[lib] = calibrate(fns[lib], sample_s, timer)
        per_call[lib] = timer(fns[lib], 1)
    if budget_s is not None:
        slowest = max(loops[lib] * per_call[lib] for lib in libs)
        rounds = max(min(rounds, 3), min(rounds, int(budget_s / max(slowest, 1e-9))))
    samples = {lib: [] for lib in libs}
    for r in range(rounds):
        order = libs[r % len(libs):] + libs[:r % len(libs)]
        for lib in order:
            pause()
            samples[lib].append(timer(fns[lib], loops[lib]))
    out = {}
    for lib in libs:
        out[lib] = summarize(samples[lib])
        out[lib]["inner_loops"] = loops[lib]
        out[lib]["samples_s"] = samples[lib]
    return out
