"""minigrad.testing needs torch only to compare and hypothesis only for its strategies: each is
imported when used, and its absence is a clear ImportError naming it."""

import os
import subprocess
import sys
from pathlib import Path

PYTHON_DIR = str(Path(__file__).resolve().parents[1] / "python")


def run(code):
    """Runs `code` in a fresh interpreter that sees this checkout's minigrad."""
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_importing_minigrad_testing_imports_neither_torch_nor_hypothesis():
    out = run("import sys, minigrad, minigrad.testing, minigrad.viz; "
              "print('torch' in sys.modules, 'hypothesis' in sys.modules)")
    assert out == "False False"


def test_compare_with_torch_without_torch_names_torch():
    out = run(
        "import sys; sys.modules['torch'] = None\n"  # what `import torch` sees when it is not installed
        "from minigrad.testing import compare_with_torch\n"
        "try:\n    compare_with_torch(lambda lib, x: x, [1.0])\n"
        "except ImportError as e:\n    print(type(e).__name__, e)\n"
    )
    assert out.startswith("ImportError minigrad.testing.compare_with_torch compares minigrad against PyTorch")
    assert "pip install torch" in out


def test_strategies_without_hypothesis_names_hypothesis():
    out = run(
        "import sys; sys.modules['hypothesis'] = None\n"
        "import minigrad.testing\n"
        "try:\n    import minigrad.testing.strategies\n"
        "except ImportError as e:\n    print(e)\n"
    )
    assert out == "minigrad.testing.strategies needs hypothesis: pip install hypothesis"
