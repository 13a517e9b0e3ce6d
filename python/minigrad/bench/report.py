"""The run's report: a readable table (ratios minigrad/torch and minigrad/NumPy), a Markdown
version of it for docs, and the JSON file with every raw figure."""

import json

SCHEMA = "minigrad-bench/1"
LIBS = ("minigrad", "torch", "numpy")


def fmt_time(s):
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def fmt_bytes(n):
    sign = "-" if n < 0 else ""
    n = abs(n)
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{sign}{n / scale:.3g} {unit}"
    return f"{sign}{n} B"


def _spread(m):
    """Interquartile range as a share of the median."""
    return (m["p75_s"] - m["p25_s"]) / m["median_s"] if m["median_s"] else 0.0


def _throughput(m):
    if "gflops" in m:
        return f"{m['gflops']:.3g} GFLOP/s"
    if "gbps" in m:
        frac = m.get("fraction_of_copy_bandwidth")
        return f"{m['gbps']:.3g} GB/s" + (f" ({frac:.0%} copy)" if frac is not None else "")
    return ""


def time_rows(results, libs):
    """Header and rows of the timing table (strings)."""
    peers = [lib for lib in libs if lib != "minigrad"]
    header = ["suite", "case", *libs, *[f"mg/{p}" for p in peers], "minigrad throughput"]
    rows = []
    for r in results:
        if r["kind"] != "time":
            continue
        m = r["metrics"]
        cells = [r["suite"], r["case"]]
        for lib in libs:
            cells.append(f"{fmt_time(m[lib]['median_s'])} ±{_spread(m[lib]):.0%}" if lib in m else "—")
        for p in peers:
            ratio = r["ratios"].get(f"minigrad/{p}")
            cells.append(f"{ratio:.2f}" if ratio is not None else "—")
        cells.append(_throughput(m["minigrad"]) if "minigrad" in m else "")
        rows.append(cells)
    return header, rows


def memory_rows(results, libs):
    libs = [lib for lib in libs if lib != "numpy"]
    header = ["case", *[f"{lib} peak" for lib in libs], *[f"{lib} retained" for lib in libs], "mg/torch peak",
              "minigrad RSS growth (check)"]
    rows = []
    for r in results:
        if r["kind"] != "memory":
            continue
        m = r["metrics"]
        cells = [r["case"]]
        cells += [fmt_bytes(m[lib]["peak_bytes"]) if lib in m else "—" for lib in libs]
        cells += [fmt_bytes(m[lib]["retained_bytes"]) if lib in m else "—" for lib in libs]
        ratio = r["ratios"].get("minigrad/torch")
        cells.append(f"{ratio:.2f}" if ratio is not None else "—")
        rss = m.get("minigrad", {}).get("rss_peak_delta_bytes")
        cells.append(fmt_bytes(rss) if rss is not None else "—")
        rows.append(cells)
    return header, rows


def print_tables(run, console_print):
    """Prints the timing and memory tables with rich if installed, else as plain text."""
    libs = run["config"]["libraries"]
    tables = [("time per call (median ±IQR); mg/x < 1: minigrad faster", *time_rows(run["results"], libs)),
              ("memory of one forward+backward (peak and retained beyond the start)", *memory_rows(run["results"], libs))]
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        Console = None
    for title, header, rows in tables:
        if not rows:
            continue
        if Console is None:
            console_print(title)
            console_print(_plain(header, rows))
            continue
        table = Table(title=title, title_justify="left")
        for i, h in enumerate(header):
            table.add_column(h, justify="left" if i < 2 else "right", no_wrap=i >= 2)
        for row in rows:
            table.add_row(*row)
        console = Console(width=max(160, Console().width))
        console.print(table)


def _plain(header, rows):
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(header, widths))]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)) for row in rows]
    return "\n".join(lines)


def markdown(run):
    """The tables as Markdown (for docs/benchmarks.md)."""
    libs = run["config"]["libraries"]
    out = []
    for header, rows in (time_rows(run["results"], libs), memory_rows(run["results"], libs)):
        if not rows:
            continue
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "|".join("---" for _ in header) + "|")
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
        out.append("")
    return "\n".join(out)


def write_json(run, path):
    with open(path, "w") as f:
        json.dump(run, f, indent=1, default=str)
