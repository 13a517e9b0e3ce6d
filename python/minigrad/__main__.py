"""`minigrad <command>` and `python -m minigrad <command>`; the one command is `bench`."""

import sys

USAGE = "usage: minigrad bench [options]   (minigrad bench --help for the options)"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    if argv[0] != "bench":
        print(f"minigrad: unknown command '{argv[0]}'\n{USAGE}", file=sys.stderr)
        return 2
    from .bench.cli import main as bench_main

    try:
        return bench_main(argv[1:])
    except SystemExit as e:  # argparse's errors and --help
        return e.code if isinstance(e.code, int) else 1


if __name__ == "__main__":
    sys.exit(main())
