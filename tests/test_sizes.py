"""Sizes at and past the overflow bounds, and allocations past the machine's memory.

Each case is one expression, evaluated with `lib` bound to torch in this process and to
minigrad in a child process: a case that crashes the child (a segfault, an abort in the
allocator) fails the test that ran it instead of killing the test runner. Both libraries
must answer alike: the same exception class and message (torch's allocator message carries
a source-location prefix that minigrad leaves out), or success with the same shape.
"""

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest
import torch

import minigrad

BIG = 2**40

# Each expression names `lib` (torch or minigrad) and `F` (its nn.functional).
CASES = {
    # creation: the byte count overflows int64, or the strides do (an empty tensor)
    "zeros": "lib.zeros(2**40, 2**40)",
    "ones": "lib.ones(2**31, 2**33)",
    "empty_bool_at_bound": "lib.empty(2**63 - 1, dtype=lib.bool)",
    "empty_float_past_bound": "lib.empty(2**61, 4)",
    "zeros_float64": "lib.zeros(2**60, dtype=lib.float64)",
    "full": "lib.full((2**40, 2**40), 1.0)",
    "rand": "lib.rand(2**40, 2**40)",
    "randn": "lib.randn(2**40, 2**40)",
    "randint": "lib.randint(0, 5, (2**40, 2**40))",
    "arange": "lib.arange(0, 2**62, 1)",
    "arange_float": "lib.arange(0, 1e30, 1)",
    "linspace": "lib.linspace(0, 1, 2**62)",
    "eye": "lib.eye(2**40)",
    "empty_strides_overflow": "lib.zeros(0, 2**40, 2**40)",
    "empty_dims_fine": "lib.zeros(2**40, 2**40, 0)",
    "zeros_like_of_huge_view": "lib.zeros_like(lib.tensor(1.0).expand(2**31, 2**31))",
    # allocations past the machine's memory: the allocator's error, and the process goes on
    "empty_1e13": "lib.empty(10**13)",
    "empty_1e10": "lib.empty(10**10)",
    "zeros_float64_1e10": "lib.zeros(10**10, dtype=lib.float64)",
    "rand_1e10": "lib.rand(10**10)",
    "bool_2_62": "lib.zeros(2**62, dtype=lib.bool)",
    "contiguous_of_expanded": "lib.tensor(1.0).expand(2**20, 2**20).contiguous()",
    "clone_of_expanded": "lib.tensor(1.0).expand(2**35).clone()",
    "repeat_1e10": "lib.ones(3).repeat(10**10)",
    "repeat_2d_past_memory": "lib.ones(2, 3).repeat(10**5, 10**5)",
    "tile_past_memory": "lib.ones(3).tile((10**5, 10**5))",
    "ones_like_of_expanded": "lib.ones_like(lib.tensor(1.0).expand(10**6, 10**5))",
    "full_like_of_expanded": "lib.full_like(lib.tensor(1.0).expand(10**6, 10**5), 2.0)",
    "rand_like_of_expanded": "lib.rand_like(lib.tensor(1.0).expand(10**6, 10**5))",
    "ones_1e10": "lib.ones(10**10)",
    "full_1e10": "lib.full((10**10,), 3.0)",
    "arange_1e10": "lib.arange(10**10)",
    "expand_contiguous_past_memory": "lib.zeros(1, 3).expand(10**10, 3).contiguous()",
    "randperm_past_memory": "lib.randperm(10**11)",
    "randperm_2_62": "lib.randperm(2**62)",
    # views: the element count must fit int64; as_strided's storage too
    "expand": "lib.tensor(1.0).expand(2**40, 2**40)",
    "expand_leading": "lib.zeros(3).unsqueeze(0).expand(2**62, 3)",
    "expand_at_bound": "lib.tensor(1.0).expand(2**31, 2**31)",
    "expand_bad_size": "lib.ones(3).expand(2, -1, 2**62)",
    "as_strided_numel": "lib.arange(10.0).as_strided([2**40, 2**40], [0, 0])",
    "as_strided_storage": "lib.arange(10.0).as_strided([2**62, 2], [1, 1])",
    "as_strided_strides": "lib.arange(10.0).as_strided([2**62, 2], [2**62, 1])",
    "as_strided_offset": "lib.arange(10.0).as_strided([2], [1], 2**63 - 1)",
    "view": "lib.zeros(3).view(2**40, 2**40)",
    "view_infer": "lib.zeros(2, 3).view(-1, 2**62)",
    "view_of_empty": "lib.zeros(2**31, 0).view(2**40, 2**40, 0)",
    "reshape": "lib.zeros(3).reshape(2**40, 2**40)",
    "view_of_expanded": "lib.tensor([1.0]).expand(2**62).view(2**61, 2)",
    "narrow_start": "lib.zeros(3).narrow(0, 2**62, 2**62)",
    "narrow_length": "lib.zeros(3).narrow(0, 1, 2**63 - 1)",
    "diagonal_offset": "lib.zeros(3, 3).diagonal(2**62)",
    "diagonal_negative_offset": "lib.zeros(3, 3).diagonal(-2**62)",
    # results whose shape comes from broadcasting or joining huge views
    "broadcast_add": "lib.tensor(1.0).expand(2**40, 1) + lib.tensor(1.0).expand(1, 2**40)",
    "broadcast_add_2_33": "lib.tensor(1.0).expand(2**33, 1) + lib.tensor(1.0).expand(1, 2**33)",
    "cat": "lib.cat([lib.tensor(1.0).expand(2**61), lib.tensor(1.0).expand(2**61)])",
    "sum_of_empty": "lib.zeros(2**40, 2**20, 0).sum()",
    "sum_dim_of_empty": "lib.zeros(2**62, 0).sum(0)",
    # matmul family: the output shape
    "matmul": "lib.tensor(1.0).expand(2**40, 1) @ lib.tensor(1.0).expand(1, 2**40)",
    "bmm": "lib.tensor(1.0).expand(2**62, 1, 1).bmm(lib.tensor(1.0).expand(2**62, 1, 1))",
    "matmul_batched": "lib.tensor(1.0).expand(2**40, 1, 1).matmul(lib.tensor(1.0).expand(1, 2**40, 1, 1))",
    "mm_past_memory": "lib.zeros(3, 4).mm(lib.zeros(4, 2**40))",
    # conv / pad: output shapes and workspaces
    "pad": "F.pad(lib.zeros(1, 1, 3, 3), (2**40, 2**40, 2**40, 2**40))",
    # indexing offsets
    "index_int": "lib.zeros(3)[2**62]",
    "index_int_max": "lib.zeros(3)[2**63 - 1]",
    "index_int_min": "lib.zeros(3)[-2**63]",
    "index_tensor": "lib.zeros(3)[lib.tensor([2**62])]",
    "slice_stop": "lib.zeros(3)[1:2**63]",
    "slice_both": "lib.zeros(3)[-2**70:2**70]",
    "slice_step": "lib.zeros(5)[::2**62]",
    "index_select": "lib.ones(3).index_select(0, lib.tensor([2**62]))",
    "gather": "lib.ones(3).gather(0, lib.tensor([2**62]))",
    "scatter_": "lib.zeros(3).scatter_(0, lib.tensor([2**62]), 1.0)",
    "index_put_": "lib.zeros(3).index_put_((lib.tensor([2**62]),), lib.tensor(1.0))",
    "embedding": "F.embedding(lib.tensor([2**62]), lib.zeros(3, 2))",
}

# Where torch's own arithmetic overflows, minigrad answers what the arithmetic means; each of
# these is in docs/divergences.md. They must still raise a clean error, never crash. The last
# field says whether torch raises the same class (None: torch computes it, too slowly to run).
DIVERGENT = {
    # torch: "... resulted in a negative output size" (its size sum wraps around)
    "pad_2_62": ("lib.zeros(1, 1, 3, 3)", "F.pad(x, (2**62, 2**62))", "RuntimeError", True),
    # torch: the allocator refuses a padded intermediate; minigrad: the output's size overflows
    "conv2d_padding_2_40": ("lib.zeros(1, 1, 3, 3)", "F.conv2d(x, lib.zeros(1, 1, 1, 1), padding=2**40)", "RuntimeError", True),
    # torch: "Given padding=... expected padding to be at most ..." (a check of its own)
    "conv2d_padding_2_62": ("lib.zeros(1, 1, 3, 3)", "F.conv2d(x, lib.zeros(1, 1, 1, 1), padding=2**62)", "RuntimeError", True),
    # torch: std::vector's max_size error; minigrad: its allocator's error
    "chunk_2_62": ("lib.zeros(0)", "x.chunk(2**62)", "RuntimeError", True),
    # minigrad's im2col workspace (C_in*KH*KW x OH*OW, here 16 TB) is past memory: the
    # allocator's error; torch's direct kernel needs none and computes it (for hours)
    "conv2d_workspace": ("lib.zeros(1, 1, 3000, 3000)", "F.conv2d(x, lib.zeros(1, 1, 1000, 1000))", "RuntimeError", None),
}

_CHILD = textwrap.dedent(
    """
    import json, sys
    import minigrad as lib
    import minigrad.nn.functional as F
    for name, expr in json.loads(sys.stdin.read()):
        print(json.dumps({"start": name}), flush=True)
        try:
            x = eval(expr)
            out = {"ok": list(x.shape) if hasattr(x, "shape") else repr(x)}
        except BaseException as e:
            out = {"error": type(e).__name__, "message": str(e)}
        print(json.dumps({"name": name, **out}), flush=True)
    """
)


def run_in_child(cases):
    """Evaluates (name, expression) pairs with minigrad in a fresh interpreter; returns
    {name: outcome}. A crash is reported as the outcome of the case that was running."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(minigrad.__file__)), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", _CHILD], input=json.dumps(cases), capture_output=True, text=True, timeout=600, env=env)
    results, running = {}, None
    for line in proc.stdout.splitlines():
        record = json.loads(line)
        if "start" in record:
            running = record["start"]
        else:
            results[record.pop("name")] = record
            running = None
    if proc.returncode != 0:
        results[running or "?"] = {"crash": proc.returncode, "stderr": proc.stderr[-2000:]}
    return results


def torch_outcome(expr):
    try:
        x = eval(expr, {"lib": torch, "F": torch.nn.functional})
        return {"ok": list(x.shape) if hasattr(x, "shape") else repr(x)}
    except Exception as e:
        message = re.sub(r"^\[enforce fail at [^\]]*\] [^.]*\. ", "", str(e).split("\n")[0])
        return {"error": type(e).__name__, "message": message}


@pytest.fixture(scope="module")
def minigrad_outcomes():
    cases = list(CASES.items()) + [(k, f"(lambda x: {op})({make})") for k, (make, op, _, _) in DIVERGENT.items()]
    return run_in_child(cases)


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_answer_as_torch(name, minigrad_outcomes):
    got = minigrad_outcomes.get(name)
    assert got is not None and "crash" not in got, f"{CASES[name]} ended the process: {got}"
    assert got == torch_outcome(CASES[name]), CASES[name]


@pytest.mark.parametrize("name", sorted(DIVERGENT))
def test_documented_divergences_raise_cleanly(name, minigrad_outcomes):
    make, op, error, torch_raises = DIVERGENT[name]
    got = minigrad_outcomes.get(name)
    assert got is not None and "crash" not in got, f"{op} ended the process: {got}"
    assert got.get("error") == error, got
    if torch_raises:
        torch_got = torch_outcome(f"(lambda x: {op})({make})")
        assert torch_got.get("error") == error, torch_got


def test_failed_allocation_loses_nothing():
    """After refused allocations the counters are unchanged and earlier tensors intact."""
    keep = minigrad.arange(1000.0)
    before = minigrad.memory.stats()
    for make in (lambda: minigrad.empty(10**13), lambda: minigrad.zeros(2**40, 2**40), lambda: minigrad.rand(10**10)):
        with pytest.raises(RuntimeError):
            make()
    after = minigrad.memory.stats()
    assert (after["allocated_bytes"], after["peak_bytes"]) == (before["allocated_bytes"], before["peak_bytes"])
    assert keep.sum().item() == sum(range(1000))
    assert minigrad.ones(4).add_(1).tolist() == [2.0] * 4


def test_safetensors_header_with_overflowing_shape(tmp_path):
    """A crafted file whose header declares an overflowing shape is refused, not trusted."""
    header = json.dumps({"t": {"dtype": "F32", "shape": [2**40, 2**40], "data_offsets": [0, 4]}}).encode()
    path = tmp_path / "evil.safetensors"
    path.write_bytes(len(header).to_bytes(8, "little") + header + b"\0\0\0\0")
    code = f"import minigrad\ntry:\n    minigrad.load({str(path)!r})\nexcept RuntimeError as e:\n    print('RuntimeError', e)\n"
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(minigrad.__file__)))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("RuntimeError minigrad.load: cannot load"), proc.stdout
