"""Runs the chosen suites case by case and collects every raw figure."""

from .suites import SUITES, Skip
from .timing import compare

RATIO_PEERS = ("torch", "numpy")


class Context:
    """What suites see: the mode, the size cap, and the libraries being compared."""

    def __init__(self, mg, peers, quick, max_size):
        self.quick, self.max_size = quick, max_size
        self._modules = {"minigrad": mg, **{name: p.module for name, p in peers.items()}}
        self.libs = list(self._modules)

    def module(self, lib):
        return self._modules[lib]


def collect(ctx, suite_names, say):
    """[(suite, case)] for every suite that can run here; the others are reported as skipped."""
    cases, skipped = [], []
    for name in suite_names:
        try:
            for case in SUITES[name].cases(ctx):
                cases.append((name, case))
        except Skip as e:
            skipped.append({"suite": name, "case": None, "reason": str(e)})
            say(f"{name}: skipped: {e}")
    return cases, skipped


def run_case(ctx, suite, case, rounds, sample_s, copy_gbps, budget_s=None, pause_s=0.0):
    """One result record (see `report.SCHEMA`), or raises Skip."""
    fns = case.build(ctx)
    record = {"suite": suite, "case": case.name, "kind": case.kind, "params": case.params}
    if case.kind == "memory":
        record["metrics"] = {lib: fn() for lib, fn in fns.items()}
        record["ratios"] = _ratios(record["metrics"], "peak_bytes")
        return record
    metrics = compare(fns, rounds=rounds, sample_s=sample_s, budget_s=budget_s, timer=case.timer, pause_s=pause_s)
    record["bytes_per_call"], record["flops_per_call"] = case.bytes, case.flops
    if case.copy_gbps:
        copy_gbps = record["copy_bandwidth_gbps"] = case.copy_gbps
    for m in metrics.values():
        if case.bytes:
            m["gbps"] = case.bytes / m["median_s"] / 1e9
            m["fraction_of_copy_bandwidth"] = m["gbps"] / copy_gbps if copy_gbps else None
        if case.flops:
            m["gflops"] = case.flops / m["median_s"] / 1e9
    record["metrics"] = metrics
    record["ratios"] = _ratios(metrics, "median_s")
    return record


def _ratios(metrics, key):
    """minigrad / peer for `key` (time or bytes): below 1 means minigrad is faster or smaller."""
    out = {}
    mine = metrics.get("minigrad", {}).get(key)
    for peer in RATIO_PEERS:
        theirs = metrics.get(peer, {}).get(key)
        if mine is not None and theirs:
            out[f"minigrad/{peer}"] = mine / theirs
    return out
