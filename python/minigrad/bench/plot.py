"""`--plot FILE.png`: time ratios per case and the memory comparison (matplotlib, the `plot` extra)."""


def check_available():
    """None if matplotlib can be imported, else the message to show."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return "--plot needs matplotlib, which is not installed: pip install 'minigrad[plot]' (or pip install matplotlib)"
    return None


def draw(run, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker  # noqa: F401

    timed = [r for r in run["results"] if r["kind"] == "time" and r["ratios"]]
    mem = [r for r in run["results"] if r["kind"] == "memory" and "minigrad" in r["metrics"]]
    panels = (1 if timed else 0) + (1 if mem else 0)
    if panels == 0:
        return False
    fig, axes = plt.subplots(1, panels, figsize=(7 * panels, max(4, 0.25 * len(timed) + 1.5)), squeeze=False)
    ax_iter = iter(axes[0])
    if timed:
        ax = next(ax_iter)
        labels = [f"{r['suite']}: {r['case']}" for r in timed]
        peers = sorted({k for r in timed for k in r["ratios"]})
        height = 0.8 / max(1, len(peers))
        for j, key in enumerate(peers):
            ys = [i + j * height for i in range(len(timed))]
            ratios = [r["ratios"].get(key, float("nan")) for r in timed]
            ax.barh(ys, [v - 1 for v in ratios], left=1, height=height, label=key)  # bars grow from 1
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_yticks([i + 0.4 - height / 2 for i in range(len(timed))])
        ax.set_yticklabels(labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("time ratio (< 1: minigrad faster)")
        ax.legend(fontsize=8, loc="lower right")
    if mem:
        ax = next(ax_iter)
        libs = [lib for lib in ("minigrad", "torch") if any(lib in r["metrics"] for r in mem)]
        width = 0.8 / len(libs)
        for j, lib in enumerate(libs):
            xs = [i + j * width for i in range(len(mem))]
            ax.bar(xs, [r["metrics"].get(lib, {}).get("peak_bytes", 0) / 1e6 for r in mem], width=width, label=f"{lib} peak")
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(mem))])
        ax.set_xticklabels([r["case"] for r in mem], rotation=30, ha="right", fontsize=7)
        ax.set_ylabel("MB beyond the start, one forward+backward")
        ax.legend(fontsize=8)
    fig.suptitle(f"minigrad bench ({'quick' if run['config']['quick'] else 'full'}), {run['machine']['cpu']}, "
                 f"{run['config']['threads']} thread(s)", fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.98))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
