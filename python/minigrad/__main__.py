"""`minigrad <command>` and `python -m minigrad <command>`: `bench` (python/minigrad/bench),
`audit` (python/minigrad/inplace/cli.py) and `kernels` (python/minigrad/_kernels_cli.py)."""

import os
import sys

USAGE = """usage: minigrad bench [options]            benchmark against torch and NumPy (minigrad bench --help)
       minigrad audit module:callable     audit a model's in-place ops (minigrad audit --help)
       minigrad kernels [--check]         list the CUDA kernels; compile them with NVRTC (minigrad kernels --help)"""


def main(argv=None):
    from_command_line = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    if from_command_line and argv[:1] == ["bench"] and "OPENBLAS_THREAD_TIMEOUT" not in os.environ:
        _rerun_with_idle_blas_threads(argv)
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
    except BrokenPipeError:
        # the reader left (`minigrad kernels | head`): stop quietly, as other command-line tools
        # do, with stdout pointed at /dev/null so the interpreter's final flush cannot fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, a shell's status for a writer killed by a closed pipe


def _rerun_with_idle_blas_threads(argv):
    """Starts the bench again with NumPy's OpenBLAS told to put its threads to sleep at once.

    After each call OpenBLAS's workers spin for 2^28 cycles (about 0.1 s) by default, on the cores
    the next library's samples need: a matmul timed after NumPy's took 1.4x as long. The setting is
    read when OpenBLAS loads, which `import minigrad` (NumPy) has already done here, so the only way
    to apply it is to start again; the bench records it in its machine description."""
    os.environ["OPENBLAS_THREAD_TIMEOUT"] = "4"  # 2^4 cycles: the smallest OpenBLAS accepts
    try:
        os.execv(sys.executable, [sys.executable, "-m", "minigrad", *argv])
    except OSError:
        pass  # cannot start again: measure as things are (NumPy's spinning may slow its neighbours)


if __name__ == "__main__":
    sys.exit(main())
