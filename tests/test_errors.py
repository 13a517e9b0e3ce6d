"""Bad inputs across the surface raise torch's exception type with torch's message.

Two kinds of torch messages are compared by exception type only: the argument parser's listings of
every overload ("received an invalid combination of arguments - got (...), but expected one of:")
and Python's own wording of arity errors ("takes 0 positional arguments ..."). Device errors differ
on purpose (minigrad says that it has no GPU backend; see docs/divergences.md)."""

import warnings

import pytest
import torch

import minigrad as mg
from parity import normalize_message

CASES = {
    # operators fall back to Python's own TypeError (torch returns NotImplemented)
    "mul str": lambda L: L.ones(2) * "a",
    "rsub str": lambda L: "a" - L.ones(2),
    "radd list": lambda L: [1] + L.ones(2),
    "lt str": lambda L: L.ones(2) < "a",
    "pow str": lambda L: L.ones(2) ** "a",
    "iadd str": lambda L: L.ones(2).__iadd__("a"),
    "eq str": lambda L: L.ones(2) == "a",
    "invert float": lambda L: ~L.ones(2),
    "neg bool": lambda L: -L.ones(2).bool(),
    "pos bool": lambda L: +L.ones(2).bool(),
    # methods and functions naming the bad argument
    "add str": lambda L: L.ones(2).add("a"),
    "add None": lambda L: L.ones(2).add(None),
    "add list": lambda L: L.ones(2).add([1, 2]),
    "add_ str": lambda L: L.ones(2).add_("a"),
    "floor_divide str": lambda L: L.ones(2).floor_divide("a"),
    "maximum number": lambda L: L.ones(2).maximum(1),
    "maximum fn number": lambda L: L.maximum(L.ones(2), 1),
    "minimum fn input": lambda L: L.minimum(1, L.ones(2)),
    "lt fn number input": lambda L: L.lt(1, L.ones(2)),
    "pow method str": lambda L: L.ones(2).pow("a"),
    "add alpha str": lambda L: L.ones(2).add(1, alpha="a"),
    "sub alpha float on ints": lambda L: L.ones(2, dtype=L.int64).sub(1, alpha=0.5),
    "add alpha bool": lambda L: L.ones(2).add(1, alpha=True),
    "div rounding str": lambda L: L.ones(2).div(2, rounding_mode="round"),
    "div rounding int": lambda L: L.ones(2).div(2, rounding_mode=3),
    "abs str": lambda L: L.abs("a"),
    "exp list": lambda L: L.exp([1.0]),
    "exp extra arg": lambda L: L.ones(2).exp(1),
    "logical_and number": lambda L: L.ones(2).logical_and(1),
    "type_as int": lambda L: L.ones(2).type_as(3),
    "add ndarray": lambda L: L.ones(2).add(__import__("numpy").ones(2)),
    "mul_ ndarray": lambda L: L.ones(2).mul_(__import__("numpy").ones(2)),
    "ndarray plus tensor": lambda L: __import__("numpy").ones(2) + L.ones(2),
    "add numpy scalar": lambda L: L.ones(2).add(__import__("numpy").float64(2)),
    # views: int and size arguments
    "view str": lambda L: L.ones(2).view("a"),
    "view float": lambda L: L.ones(2).view(2.0),
    "view no args": lambda L: L.ones(2).view(),
    "reshape None": lambda L: L.ones(2).reshape(None),
    "reshape float elem": lambda L: L.ones(2).reshape(1, 2.0),
    "reshape list float": lambda L: L.ones(2).reshape([1, 2.0]),
    "reshape no args": lambda L: L.ones(2).reshape(),
    "transpose float": lambda L: L.ones(2, 2).transpose(0.5, 1),
    "transpose bool": lambda L: L.ones(2, 2).transpose(True, 1),
    "narrow str": lambda L: L.ones(2).narrow("a", 0, 1),
    "narrow float length": lambda L: L.ones(2).narrow(0, 0, 1.0),
    "select float": lambda L: L.ones(2).select(0, 0.5),
    "expand float": lambda L: L.ones(2).expand(2.5),
    "expand no args": lambda L: L.ones(2).expand(),
    "squeeze str": lambda L: L.ones(2).squeeze("a"),
    "unsqueeze float": lambda L: L.ones(2).unsqueeze(1.5),
    "permute float": lambda L: L.ones(2, 2).permute(0.5, 1),
    "permute no args": lambda L: L.ones(2, 2).permute(),
    "split float": lambda L: L.ones(2).split(1.5),
    "chunk float": lambda L: L.ones(2).chunk(1.5),
    "diagonal float": lambda L: L.ones(2, 2).diagonal(0.5),
    "unbind float": lambda L: L.ones(2).unbind(0.5),
    "flatten float": lambda L: L.ones(2).flatten(0.5),
    "as_strided str": lambda L: L.ones(2).as_strided("a", (1,)),
    "size float": lambda L: L.ones(2).size(0.5),
    "size oob": lambda L: L.ones(2).size(2),
    "stride oob": lambda L: L.ones(2).stride(-2),
    "t_ 3d": lambda L: L.ones(2, 2, 2).t_(),
    "mT 1d": lambda L: L.ones(2).mT,
    # values, masks, fills
    "masked_fill str": lambda L: L.ones(2).masked_fill(L.ones(2).bool(), "a"),
    "masked_fill list mask": lambda L: L.ones(2).masked_fill([True, False], 1.0),
    "masked_fill int mask": lambda L: L.ones(2).masked_fill(L.ones(2).long(), 1.0),
    "masked_fill 1d value": lambda L: L.ones(2).masked_fill(L.ones(2).bool(), L.ones(1)),
    "where str": lambda L: L.where(L.ones(2).bool(), L.ones(2), "a"),
    "where list cond": lambda L: L.where([True, False], L.ones(2), 0.0),
    "where float cond": lambda L: L.where(L.ones(2), L.ones(2), 0.0),
    "clamp str": lambda L: L.ones(2).clamp("a"),
    "clamp none": lambda L: L.ones(2).clamp(),
    "clamp mixed": lambda L: L.ones(2).clamp(0, L.ones(2)),
    "fill_ str": lambda L: L.ones(2).fill_("a"),
    "fill_ 1d": lambda L: L.ones(2).fill_(L.ones(2)),
    "fill_ None": lambda L: L.ones(2).fill_(None),
    "copy_ str": lambda L: L.ones(2).copy_("a"),
    "copy_ list": lambda L: L.ones(2).copy_([1.0, 2.0]),
    "copy_ bad shape": lambda L: L.ones(2).copy_(L.ones(3)),
    "uniform_ bounds": lambda L: L.ones(2).uniform_(1, 0),
    "normal_ std": lambda L: L.ones(2).normal_(0, -1),
    "uniform_ int": lambda L: L.ones(2, dtype=L.int64).uniform_(),
    # conversions and the Python protocol
    "to str dtype": lambda L: L.ones(2).to(dtype="float"),
    "to bad device str": lambda L: L.ones(2).to("foo"),
    "to bad device index": lambda L: L.ones(2).to("cpu:x"),
    "to kw": lambda L: L.ones(2).to(foo=1),
    "item multi": lambda L: L.ones(2).item(),
    "item empty": lambda L: L.ones(0).item(),
    "float multi": lambda L: float(L.ones(2)),
    "int multi": lambda L: int(L.ones(2)),
    "complex multi": lambda L: complex(L.ones(2)),
    "int nan": lambda L: int(L.tensor(float("nan"))),
    "index float": lambda L: [1, 2][L.tensor(0.0)],
    "index multi": lambda L: [1, 2][L.tensor([0, 1])],
    "bool multi": lambda L: bool(L.ones(2)),
    "bool empty": lambda L: bool(L.ones(0)),
    "len 0d": lambda L: len(L.tensor(1.0)),
    "iter 0d": lambda L: iter(L.tensor(1.0)),
    "format 1d": lambda L: f"{L.ones(2):.2f}",
    "numpy arg": lambda L: L.ones(2).numpy(1),
    "float() arg": lambda L: L.ones(2).float(1),
    "contiguous memory_format": lambda L: L.ones(2).contiguous(memory_format=3),
    "device bad": lambda L: L.zeros(2, device="tpu"),
    "device bad string": lambda L: L.device("cpu:-1"),
    "device negative": lambda L: L.device(-1),
    "device float": lambda L: L.device(2.5),
    # factories
    "zeros no size": lambda L: L.zeros(),
    "zeros float": lambda L: L.zeros(2.5),
    "zeros str elem": lambda L: L.zeros([2, "a"]),
    "zeros two tuples": lambda L: L.zeros((2, 3), (4,)),
    "zeros bool": lambda L: L.zeros(True),
    "zeros negative": lambda L: L.zeros(2, -1),
    "ones negative": lambda L: L.ones(-1),
    "empty negative": lambda L: L.empty(2, -3),
    "zeros dtype str": lambda L: L.zeros(2, dtype="float"),
    "zeros size kw int": lambda L: L.zeros(size=3),
    "full int size": lambda L: L.full(3, 1.0),
    "full float elem": lambda L: L.full((2.5,), 1),
    "full str value": lambda L: L.full((2,), "x"),
    "full None value": lambda L: L.full((2,), None),
    "full 1d tensor value": lambda L: L.full((2,), L.ones(1)),
    "full negative": lambda L: L.full((2, -1), 1.0),
    "zeros_like list": lambda L: L.zeros_like([1, 2]),
    "tensor str": lambda L: L.tensor("abc"),
    "tensor str list": lambda L: L.tensor(["a"]),
    "tensor None": lambda L: L.tensor(None),
    "tensor dict": lambda L: L.tensor({1: 2}),
    "tensor ragged": lambda L: L.tensor([[1, 2], [3]]),
    "tensor ragged number": lambda L: L.tensor([[1, 2], 3]),
    "tensor list leaf": lambda L: L.tensor([1, [2, 3]]),
    "tensor float leaf list": lambda L: L.tensor([1.5, [2, 3]]),
    "tensor overflow": lambda L: L.tensor([2**63]),
    "tensor int32 overflow": lambda L: L.tensor([2**40], dtype=L.int32),
    "tensor nan to int": lambda L: L.tensor(float("nan"), dtype=L.int64),
    "tensor generator": lambda L: L.tensor(x for x in range(3)),
    "tensor 1d tensors": lambda L: L.tensor([L.ones(2), L.ones(2)]),
    "from_numpy list": lambda L: L.from_numpy([1, 2]),
    "arange no args": lambda L: L.arange(),
    "arange str": lambda L: L.arange("a"),
    "arange zero step": lambda L: L.arange(0, 1, 0),
    "arange bad sign": lambda L: L.arange(0, 10, -1),
    "arange nan": lambda L: L.arange(0, float("nan")),
    "arange inf": lambda L: L.arange(0.1234567, float("inf")),
    "arange int zero step": lambda L: L.arange(0, 5, 0.5, dtype=L.int64),
    "arange bool": lambda L: L.arange(5, dtype=L.bool),
    "linspace negative": lambda L: L.linspace(0, 1, -2),
    "linspace float steps": lambda L: L.linspace(0, 1, 2.5),
    "linspace bool": lambda L: L.linspace(0, 1, 3, dtype=L.bool),
    "eye negative": lambda L: L.eye(-1),
    "eye float": lambda L: L.eye(2.5),
    "eye negative m": lambda L: L.eye(2, -1),
    "rand int": lambda L: L.rand(2, dtype=L.int64),
    "randn bool": lambda L: L.randn(2, dtype=L.bool),
    "randint empty range": lambda L: L.randint(5, 5, (3,)),
    "randint bool range": lambda L: L.randint(5, (3,), dtype=L.bool),
    "randint int32 range": lambda L: L.randint(-(2**40), 5, (2,), dtype=L.int32),
    "randint negative size": lambda L: L.randint(0, 5, (-1,)),
}

# torch's own deliberately different wording (documented divergences)
TYPE_ONLY = {
    "device bad": "torch lists device types minigrad cannot use; minigrad says which it has",
}
DEVICE = {"to bad device index"}


@pytest.mark.parametrize("name", list(CASES))
def test_error_parity(name):
    f = CASES[name]
    results = []
    for lib in (torch, mg):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                r = f(lib)
                results.append(("ok", r))
            except Exception as e:  # noqa: BLE001
                results.append((type(e).__name__, normalize_message(e)))
    (kt, vt), (km, vm) = results
    if kt == "ok":
        assert km == "ok", f"torch returned {vt!r}; minigrad raised {km}: {vm}"
        return
    assert km == kt, (name, kt, vt, km, vm)
    parser_listing = "received an invalid combination of arguments" in vt
    arity = "positional argument" in vt or "takes no arguments" in vt
    if not (parser_listing or arity or name in TYPE_ONLY):
        assert vm == vt, (name, vt, vm)


@pytest.mark.skipif(mg.cuda.is_available(), reason="the refusal is for machines without a usable GPU")
def test_cuda_is_refused_clearly():
    # the sentence names what is missing on this machine (tests/test_device.py checks each case)
    for f in (lambda: mg.zeros(2, device="cuda"), lambda: mg.ones(2).cuda(), lambda: mg.ones(2).to("cuda:1"), lambda: mg.ones(2).to(3)):
        with pytest.raises(RuntimeError, match="^minigrad: CUDA is not available: "):
            f()
