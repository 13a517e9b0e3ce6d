"""How the GPU driver compiles kernels (python/minigrad/_cuda_compile.py): with the backend's own
NVRTC options and nothing else, so float32 subnormals survive as on torch's GPU kernels (CuPy's
RawModule adds -ftz=true, which flushed them: found on an H100, 2026-11-27), cached on disk per
group and architecture. Runs wherever NVRTC is (no GPU needed); CI installs it."""

import json
import re

import pytest

from minigrad import _C
from minigrad import _cuda_compile as cc
from test_cuda_kernels_cli import nvrtc_binding

SOURCES = {name: (text, instances) for name, _, text, instances in _C._cuda_sources()}
HEADERS = dict(_C._cuda_headers())


def group(source, wanted):
    """The source's code (headers inlined) and the instances that mention every string in `wanted`."""
    text, instances = SOURCES[source]
    names = [i for i in instances if all(w in i for w in wanted)]
    assert names, (source, wanted)
    return cc.inline_headers(text, HEADERS), names


def instructions(ptx):
    return [line.strip() for line in ptx.splitlines() if line.strip() and not line.strip().startswith(("//", "."))]


@pytest.mark.parametrize("source, wanted", [("copy", ["<double, float>"]), ("binary", ["float", "mg::Mul"]),
                                            ("scan", ["float", "Prod"]), ("reduce", ["Sum<float, float>"])])
def test_compiled_float_arithmetic_keeps_subnormals(tmp_path, source, wanted):
    nvrtc = nvrtc_binding()
    code, names = group(source, wanted)
    path, lowered = cc.compile_group(nvrtc, code, names, _C._cuda_nvrtc_options(), "compute_80", "ptx", directory=tmp_path)
    ptx = open(path).read()
    assert set(lowered) == set(names) and all(lowered.values())
    flushing = [i for i in instructions(ptx) if ".ftz" in i]
    assert not flushing, flushing[:5]
    # the kernels do float work at all (a test that finds no instruction proves nothing)
    assert any(re.search(r"\.f32\b", i) for i in instructions(ptx))


def test_the_same_group_is_read_from_the_cache_and_a_broken_entry_is_rebuilt(tmp_path, monkeypatch):
    nvrtc = nvrtc_binding()
    code, names = group("copy", ["<double, float>"])
    opts = _C._cuda_nvrtc_options()
    path, lowered = cc.compile_group(nvrtc, code, names, opts, "compute_80", "ptx", directory=tmp_path)
    built = open(path, "rb").read()
    real_compile = cc._compile

    def must_not_compile(*a, **k):
        raise AssertionError("compiled again although the cache holds the group")

    monkeypatch.setattr(cc, "_compile", must_not_compile)
    assert cc.compile_group(nvrtc, code, list(reversed(names)), opts, "compute_80", "ptx", directory=tmp_path) == (path, lowered)
    # another option, architecture or instance list is another entry
    calls = []
    monkeypatch.setattr(cc, "_compile", lambda *a, **k: calls.append(a[4]) or real_compile(*a, **k))
    other, _ = cc.compile_group(nvrtc, code, names[:1], opts, "compute_80", "ptx", directory=tmp_path)
    assert other != path and len(calls) == 1
    # a table that does not parse (a crash mid-write elsewhere) is rebuilt, not trusted
    table = path.rsplit(".", 1)[0] + ".json"
    open(table, "w").write("{not json")
    assert cc.compile_group(nvrtc, code, names, opts, "compute_80", "ptx", directory=tmp_path) == (path, lowered)
    assert len(calls) == 2 and open(path, "rb").read() == built and json.load(open(table)) == lowered
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".minigrad-")]  # no temporary left


def test_a_compile_error_names_the_file_and_carries_the_log(tmp_path):
    nvrtc = nvrtc_binding()
    with pytest.raises(RuntimeError, match=r"(?s)NVRTC could not compile broken\.cu.*undefined_thing"):
        cc.compile_group(nvrtc, 'extern "C" __global__ void k() { undefined_thing(); }', [], (), "compute_80", "ptx",
                         filename="broken.cu", directory=tmp_path)
    assert not list(tmp_path.iterdir())


class Archs:
    """Only the architecture list of an NVRTC (target() reads nothing else)."""

    def __init__(self, archs):
        self.archs = archs

    def getSupportedArchs(self):
        return self.archs

    def getVersion(self):
        return (12, 0)


def test_the_target_is_machine_code_for_a_known_architecture_else_ptx_the_driver_compiles():
    assert cc.target(Archs((75, 80, 86, 89, 90)), "90") == ("sm_90", "cubin")
    assert cc.target(Archs((75, 80, 86, 89, 90)), "100") == ("compute_90", "ptx")
    with pytest.raises(RuntimeError, match="cannot compile for compute capability 70"):
        cc.target(Archs((75, 80)), "70")


def test_this_nvrtc_targets_an_h100_with_machine_code():
    nvrtc = nvrtc_binding()
    assert cc.target(nvrtc, "90") == ("sm_90", "cubin")
