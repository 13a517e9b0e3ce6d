"""The examples run on a clean checkout: the digits MLP trains to at least 95% test accuracy; the
conv net and the GAN run a short schedule end to end (their full runs are documented in
docs/examples.md); the GAN's `--show-error` prints torch's version-counter error."""

import os
import re
import subprocess
import sys
from pathlib import Path


EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_example(name, *args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [os.environ.get("PYTHONPATH", ""), str(EXAMPLES)] if p)
    out = subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True,
                         env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def final_accuracy(stdout):
    return float(re.search(r"final test accuracy ([\d.]+)%", stdout).group(1))


def test_mlp_reaches_95_percent():
    assert final_accuracy(run_example("mlp_digits.py")) >= 95.0


def test_convnet_trains():
    out = run_example("convnet_digits.py", "--epochs", "1")
    assert "ResidualBlock" in out and final_accuracy(out) >= 80.0


def test_gan_runs_and_covers_modes():
    out = run_example("gan_gaussians.py", "--steps", "300")
    assert re.search(r"modes covered [1-8]/8", out), out


def test_gan_show_error_prints_torch_error():
    out = run_example("gan_gaussians.py", "--show-error")
    assert "one of the variables needed for gradient computation has been modified by an inplace operation" in out


def test_what_backward_keeps_prints_what_torch_prints():
    """The saved-tensor-hooks example logs the same saves and reads (and the same error) as the
    same program on torch; the minigrad run adds the checkpoint memory section."""
    mine = run_example("what_backward_keeps.py").splitlines()
    theirs = run_example("what_backward_keeps.py", "--torch").replace("torch", "minigrad").splitlines()
    assert mine[:len(theirs)] == theirs
    assert "overwritten since it was saved at version 0" in "\n".join(theirs)
    kept = {line.split()[0]: int(line.split()[2]) for line in mine[len(theirs) + 1:]}
    assert kept["checkpoint"] < kept["plain"]
