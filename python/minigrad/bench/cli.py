"""`minigrad bench`: minigrad side by side with torch and NumPy, speed and memory, in one run."""

import argparse
import datetime
import os
import sys
import time

from . import machine, peers as peer_mod, plot, report
from .progress import bar
from .runner import Context, collect, run_case
from .timing import PAUSE_S
from .suites import SUITES, Skip

MODES = {  # interleaved rounds per case, seconds per timed sample, seconds a case may take per library
    "quick": (5, 0.004, 1.0),
    "full": (21, 0.03, 15.0),
}


def _positive(kind):
    def parse(text):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
        if v <= 0:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
        return v
    return parse


def build_parser():
    p = argparse.ArgumentParser(
        prog="minigrad bench",
        description="Benchmark minigrad against torch and NumPy on this machine: time per op, "
                    "throughput, and memory of forward+backward with and without in-place ops.",
    )
    p.add_argument("suites", nargs="*", metavar="SUITE",
                   help=f"suites to run (default: all): {', '.join(SUITES)}")
    p.add_argument("--quick", action="store_true", help="a small set of sizes and few repetitions (under a minute)")
    p.add_argument("--threads", type=_positive(int), default=None,
                   help="threads for every library (default: the cores available to this process)")
    p.add_argument("--compare", default="torch,numpy", help="peers to compare with, comma-separated (torch, numpy)")
    p.add_argument("--json", metavar="FILE", help="write every raw figure and the machine description to FILE")
    p.add_argument("--plot", metavar="FILE.png", help="draw the ratios and the memory comparison (needs matplotlib)")
    p.add_argument("--markdown", metavar="FILE", help="write the tables as Markdown")
    p.add_argument("--repeat", type=_positive(int), default=None,
                   help="interleaved rounds per case, exactly (default: 5 quick, 21 full, down to 3 for a case whose calls are slow)")
    p.add_argument("--min-time", type=_positive(float), default=None, metavar="SECONDS",
                   help="length of one timed sample (default: 0.004 quick, 0.03 full)")
    p.add_argument("--pause", type=float, default=None, metavar="SECONDS",
                   help=f"idle time before each timed sample, the same for every library, so a thread pool "
                        f"still spinning after one library's sample does not run into the next (default: {PAUSE_S}; 0: none)")
    p.add_argument("--max-size", type=_positive(int), default=None, metavar="NUMEL",
                   help="leave out cases with more elements than this")
    p.add_argument("--case", action="append", default=None, metavar="TEXT",
                   help="run only the cases whose name contains TEXT (repeatable: any of them)")
    p.add_argument("--list", action="store_true", help="list the suites and exit")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def parse_args(argv):
    parser = build_parser()
    args = parser.parse_args(argv)
    unknown = [s for s in args.suites if s not in SUITES]
    if unknown:
        parser.error(f"unknown suite '{unknown[0]}' (choose from {', '.join(SUITES)})")
    try:
        args.peers = peer_mod.parse(args.compare)
    except ValueError as e:
        parser.error(f"--compare: {e}")
    if args.plot and (msg := plot.check_available()):
        parser.error(msg)
    for flag in ("json", "plot", "markdown"):  # refuse now rather than after minutes of measuring
        path = getattr(args, flag)
        if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            parser.error(f"--{flag}: the folder of {path!r} does not exist")
    args.suites = list(dict.fromkeys(args.suites)) or list(SUITES)
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    say = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    if args.list:
        for name, mod in SUITES.items():
            print(f"{name:12} {(mod.__doc__ or '').strip().splitlines()[0]}")
        return 0
    return run(args, say)


def run(args, say):
    started = (time.perf_counter(), datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    import minigrad

    threads = args.threads or machine.cpu_count()
    loaded = minigrad.memory.peak() > 0  # minigrad computed before us: its thread pool may exist
    peers = peer_mod.load(args.peers, say)  # import torch before fixing its thread count
    thread_report = machine.set_threads(threads, loaded, peers)
    try:
        return _measure_and_report(args, say, started, minigrad, threads, peers, thread_report)
    finally:
        machine.restore_threads(thread_report)


def _measure_and_report(args, say, started, minigrad, threads, peers, thread_report):
    if getattr(minigrad._C, "_debug_build", False):
        say("WARNING: minigrad's extension is a debug build; its timings mean little. "
            "Build it optimised: pip install . (or ./scripts/dev-build.sh)")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    if load > machine.cpu_count():
        say(f"note: this machine is busy (load {load:.1f} on {machine.cpu_count()} cores); timings will be noisy, "
            "and multi-threaded pools that spin-wait (torch's OpenMP) can be badly delayed; --threads 1 is steadier")
    rounds, sample_s, budget_s = MODES["quick" if args.quick else "full"]
    if args.repeat:  # asked for exactly this many rounds
        rounds, budget_s = args.repeat, None
    sample_s = args.min_time or sample_s
    pause_s = PAUSE_S if args.pause is None else max(0.0, args.pause)
    say(f"minigrad bench ({'quick' if args.quick else 'full'}): suites {', '.join(args.suites)}; "
        f"comparing with {', '.join(peers) or 'nothing'}; {threads} thread(s)")
    copy_gbps = machine.copy_bandwidth_gbps(nbytes=(16 << 20) if args.quick else (64 << 20))
    ctx = Context(minigrad, peers, quick=args.quick, max_size=args.max_size or float("inf"))
    cases, skipped = collect(ctx, args.suites, say)
    if args.case:
        cases = [(suite, case) for suite, case in cases if any(text in case.name for text in args.case)]
    results, errors = [], []
    with bar(len(cases), enabled=not args.no_progress) as advance:
        for suite, case in cases:
            try:
                results.append(run_case(ctx, suite, case, rounds, sample_s, copy_gbps, budget_s, pause_s))
            except Skip as e:
                skipped.append({"suite": suite, "case": case.name, "reason": str(e)})
            except Exception as e:  # one broken case must not lose the rest of the run
                errors.append({"suite": suite, "case": case.name, "error": f"{type(e).__name__}: {e}"})
            advance(f"{suite}: {case.name}")
    _say_case_skips(skipped, say)
    for e in errors:
        say(f"{e['suite']}: {e['case']}: error: {e['error']}")
    run_record = {
        "schema": SCHEMA_VERSION,
        "started_at": started[1],
        "duration_s": None,
        "machine": {**machine.describe(peers, thread_report), "copy_bandwidth_gbps": copy_gbps,
                    "load_average_at_start": load},
        "config": {"suites": args.suites, "quick": args.quick, "threads": threads, "rounds": rounds,
                   "sample_s": sample_s, "pause_s": pause_s, "case_budget_s": budget_s, "max_size": args.max_size, "case": args.case, "compare": args.peers,
                   "libraries": ctx.libs},
        "results": results, "skipped": skipped, "errors": errors,
    }
    run_record["duration_s"] = time.perf_counter() - started[0]
    _write_outputs(args, run_record, copy_gbps, say)
    return 1 if errors else 0


def _write_outputs(args, run_record, copy_gbps, say):
    report.print_tables(run_record, print)
    print(f"copy bandwidth {copy_gbps:.3g} GB/s; {len(run_record['results'])} cases in {run_record['duration_s']:.1f} s")
    if args.json:
        report.write_json(run_record, args.json)
        say(f"wrote {args.json}")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(report.markdown(run_record))
        say(f"wrote {args.markdown}")
    if args.plot:
        if plot.draw(run_record, args.plot):
            say(f"wrote {args.plot}")
        else:
            say(f"--plot: nothing to draw (no comparisons ran); {args.plot} not written")


def _say_case_skips(skipped, say):
    """One line per reason, naming the cases it covers."""
    by_reason = {}
    for s in skipped:
        if s["case"] is not None:
            by_reason.setdefault((s["suite"], s["reason"]), []).append(s["case"])
    for (suite, reason), names in by_reason.items():
        say(f"{suite}: skipped: {reason} ({len(names)} case{'s' if len(names) > 1 else ''}: {', '.join(names)})")


SCHEMA_VERSION = report.SCHEMA
