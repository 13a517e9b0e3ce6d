"""`minigrad <command>` and `python -m minigrad <command>`: `bench` (python/minigrad/bench),
`audit` (python/minigrad/inplace/cli.py) and `kernels` (python/minigrad/_kernels_cli.py)."""

import sys

USAGE = """usage: minigrad bench [options]            benchmark against torch and NumPy (minigrad bench --help)
       minigrad audit module:callable     audit a model's in-place ops (minigrad audit --help)
       minigrad kernels [--check]         list the CUDA kernels; compile them with NVRTC (minigrad kernels --help)"""


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    if argv[0] == "bench":
        from .bench.cli import main as command
    elif argv[0] == "audit":
        from .inplace.cli import main as command
    elif argv[0] == "kernels":
        from ._kernels_cli import main as command
    else:
        print(f"minigrad: unknown command '{argv[0]}'\n{USAGE}", file=sys.stderr)
        return 2
    try:
        return command(argv[1:])
    except SystemExit as e:  # argparse's errors and --help
        return e.code if isinstance(e.code, int) else 1


if __name__ == "__main__":
    sys.exit(main())
