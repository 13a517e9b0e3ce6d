"""`minigrad kernels`: the listing, and `--check`, which compiles every CUDA kernel instance with
NVRTC (no GPU needed) and must fail on a kernel that does not compile."""

import fcntl
import glob
import os
import subprocess
import sys
from pathlib import Path

import pytest

from minigrad import _C
from minigrad import _kernels_cli as cli
from minigrad.__main__ import main as top_main

REPO = Path(__file__).resolve().parents[1]


def nvrtc_binding():
    """CuPy's NVRTC binding, or a skip saying what is missing (a failure on CI, which installs it)."""
    try:
        from cupy_backends.cuda.libs import nvrtc

        nvrtc.getVersion()
        return nvrtc
    except Exception as e:  # ImportError, or no NVRTC library
        if os.environ.get("CI"):
            raise AssertionError(f"CI must be able to compile the kernels: {e}\n{cli.INSTALL_HINT}") from e
        pytest.skip(f"NVRTC unavailable ({type(e).__name__}: {e}): {cli.INSTALL_HINT}")


def test_listing_names_every_source_and_kernel_template(capsys):
    assert top_main(["kernels"]) == 0
    out = capsys.readouterr().out
    for name, path, text, instances in _C._cuda_sources():
        assert (REPO / path).is_file(), path
        assert f"{path}  ({name}: {len(instances)} instances)" in out
        for inst in instances:
            assert f"  {inst.split('<')[0]} " in out
    total = sum(len(s[3]) for s in _C._cuda_sources())
    assert f"{len(_C._cuda_sources())} CUDA sources, {total} instances" in out


F_SETPIPE_SZ = 1031  # fcntl.h (Linux)


def test_a_reader_that_stops_early_gets_no_traceback():
    """`minigrad kernels | head -1`: the listing stops quietly when the pipe closes (status 141,
    a shell's for a writer stopped by SIGPIPE), no BrokenPipeError traceback on stderr."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    # A pipe of one page (the listing is ~60 KB, less than a default 64 KB pipe, which could take
    # all of it before the reader leaves): the writer is still writing when the pipe closes.
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, F_SETPIPE_SZ, 4096)
    proc = subprocess.Popen([sys.executable, "-m", "minigrad", "kernels", "--instances"], stdout=write_end,
                            stderr=subprocess.PIPE, env=env, cwd=REPO)
    os.close(write_end)
    reader = os.fdopen(read_end, "rb")
    first = reader.readline()
    reader.close()  # the reader leaves after one line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141, err
    assert b"CUDA sources" in first, first
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_listing_instances(capsys):
    assert top_main(["kernels", "--instances", "--source", "softmax"]) == 0
    out = capsys.readouterr().out
    assert "    mg_softmax<float, true>" in out and "mg_unary" not in out


def test_an_unknown_source_is_refused(capsys):
    assert top_main(["kernels", "--source", "nope"]) == 2
    assert "no source named nope" in capsys.readouterr().err


def test_without_cupy_the_check_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "cupy_backends", None)  # `import cupy_backends...` raises ImportError
    monkeypatch.setitem(sys.modules, "cupy_backends.cuda.libs", None)
    assert top_main(["kernels", "--check", "--source", "softmax", "--jobs", "1"]) == 2
    err = capsys.readouterr().err
    assert "pip install cupy-cuda12x nvidia-cuda-nvrtc-cu12" in err


def test_a_kernel_that_does_not_compile_fails_the_check(capsys):
    nvrtc_binding()
    srcs, headers, options = cli.sources()
    name, path, text, instances = next(s for s in srcs if s[0] == "softmax")
    broken = text.replace("const T st = (T)s;", "const T st = (T)s + undeclared_name;")
    assert broken != text
    args = cli.parse_args(["--check", "--jobs", "1"])
    rc = cli.check([(name, path, broken, instances)], headers, options, args, sys.stdout)
    out = capsys.readouterr().out
    assert rc == 1
    assert "FAILED" in out and "undeclared_name" in out and "NVRTC log" in out


def nvrtc_libraries():
    """The NVRTC shared libraries of the installed CUDA wheels (CUDA 12's and 13's layouts)."""
    found = []
    for base in sys.path:
        found += glob.glob(os.path.join(base, "nvidia", "cuda_nvrtc", "lib", "libnvrtc.so.*[0-9]"))
        found += glob.glob(os.path.join(base, "nvidia", "cu1*", "lib", "libnvrtc.so.*[0-9]"))
    return sorted({os.path.realpath(p) for p in found if "builtins" not in p and ".alt." not in p})


def run_check(*extra):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "python"), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "minigrad", "kernels", "--check", *extra],
                          capture_output=True, text=True, env=env, timeout=1800)


def test_every_kernel_instance_compiles_with_nvrtc():
    """The check CI runs: every source, every instance, compute_80, no GPU."""
    nvrtc_binding()
    r = run_check()
    total = sum(len(s[3]) for s in _C._cuda_sources())
    assert r.returncode == 0, r.stdout[-20000:] + r.stderr[-5000:]
    assert f"{total}/{total} instances compiled" in r.stdout


@pytest.mark.parametrize("lib", nvrtc_libraries() or [None])
def test_the_sources_compile_with_each_installed_nvrtc(lib):
    """CUDA 12 and 13: CuPy picks one NVRTC (checked in full above); `--nvrtc` loads another first.
    A smoke check of the shared header with an elementwise and a block-level source, as the GPU
    machines run cupy-cuda13x and CUDA 12 installs cupy-cuda12x."""
    nvrtc_binding()
    if lib is None:
        pytest.skip("no NVRTC library found among the installed nvidia-* wheels")
    r = run_check("--nvrtc", lib, "--source", "copy", "--source", "softmax")
    assert r.returncode == 0, r.stdout[-20000:] + r.stderr[-5000:]
    major = Path(lib).name.split(".so.")[1].split(".")[0]
    assert r.stdout.startswith(f"NVRTC {major}."), r.stdout[:200]


def ptx_of(source, names):
    """{name expression: its kernel's PTX}, compiled as the backend compiles them."""
    nvrtc = nvrtc_binding()
    _, path, text, _ = next(s for s in _C._cuda_sources() if s[0] == source)
    headers = _C._cuda_headers()
    prog = nvrtc.createProgram(text, os.path.basename(path), [h[1].encode() for h in headers],
                               [h[0].encode() for h in headers])
    try:
        for n in names:
            nvrtc.addNameExpression(prog, n)
        nvrtc.compileProgram(prog, ["--gpu-architecture=compute_80", *_C._cuda_nvrtc_options()])
        ptx = nvrtc.getPTX(prog).decode()
        out = {}
        for n in names:
            body = ptx.split(f".entry {nvrtc.getLoweredName(prog, n)}(")[1]
            out[n] = body.split("\n}\n")[0]
        return out
    finally:
        nvrtc.destroyProgram(prog)


def test_contiguous_kernels_move_16_byte_vectors():
    """The *_contig kernels load and store float4 / double2 / 16 bools where aligned."""
    ptx = ptx_of("binary", ["mg_binary_contig<float, float, mg::Add>", "mg_binary_contig<double, double, mg::Mul>",
                            "mg_binary_contig<bool, float, mg::Lt>"])
    assert "ld.global.v4.f32" in ptx["mg_binary_contig<float, float, mg::Add>"]
    assert "st.global.v4.f32" in ptx["mg_binary_contig<float, float, mg::Add>"]
    assert "ld.global.v2.f64" in ptx["mg_binary_contig<double, double, mg::Mul>"]
    assert "st.global.v4.u8" in ptx["mg_binary_contig<bool, float, mg::Lt>"]  # 4 bools, one 4-byte store
    copy = ptx_of("copy", ["mg_copy_contig<bool, bool>", "mg_fill_contig<float>"])
    assert "ld.global.v4.u32" in copy["mg_copy_contig<bool, bool>"]
    assert "st.global.v4.f32" in copy["mg_fill_contig<float>"]


def test_strided_kernels_read_shapes_and_strides_in_place():
    """MgShape/MgStrides stay in parameter space: no local-memory copy of the 208-byte structs."""
    ptx = ptx_of("binary", ["mg_binary<float, float, mg::Add>", "mg_where<double>", "mg_clamp<int>"])
    for name, body in ptx.items():
        assert ".local" not in body and "ld.param" in body, name
