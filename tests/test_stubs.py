"""The type stub of the extension (python/minigrad/_C.pyi) matches the built module.

`mypy.stubtest` imports minigrad._C and compares it with the stub: every name, every class
member, every argument's name, kind and default (read from PyO3's text signatures), and the
stub's `__all__`. A binding added, removed or renamed in rust/py without the same change in the
stub fails here. The second test shows the check has teeth: a stub with one function missing
and one argument renamed fails it."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy")

PYTHON = Path(__file__).resolve().parents[1] / "python"
STUB = PYTHON / "minigrad" / "_C.pyi"


def stubtest(stubs_dir, cache_dir):
    env = dict(os.environ, MYPYPATH=str(stubs_dir), MYPY_CACHE_DIR=str(cache_dir),
               PYTHONPATH=os.pathsep.join([str(PYTHON), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-m", "mypy.stubtest", "minigrad._C"], capture_output=True,
                         text=True, env=env, cwd=cache_dir, timeout=600)
    return out.returncode, out.stdout + out.stderr


def test_the_stub_matches_the_extension(tmp_path):
    code, out = stubtest(PYTHON, tmp_path)
    assert code == 0, out


def test_a_stub_that_disagrees_fails(tmp_path):
    stubs = tmp_path / "stubs" / "minigrad"
    stubs.mkdir(parents=True)
    (stubs / "__init__.pyi").write_text("")
    text = STUB.read_text()
    assert "def zero_(x: TensorBase)" in text and "def unary_(x: TensorBase, op: str)" in text
    text = text.replace("def zero_(x: TensorBase) -> TensorBase: ...\n", "")
    text = text.replace("def unary_(x: TensorBase, op: str)", "def unary_(x: TensorBase, kernel: str)")
    (stubs / "_C.pyi").write_text(text)
    code, out = stubtest(tmp_path / "stubs", tmp_path)
    assert code != 0
    assert "minigrad._C.zero_ is not present in stub" in out
    assert 'minigrad._C.unary_ is inconsistent, stub parameter "kernel" differs from runtime parameter "op"' in out


def test_the_package_is_marked_typed():
    assert (PYTHON / "minigrad" / "py.typed").exists()
