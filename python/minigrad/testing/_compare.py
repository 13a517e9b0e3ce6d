"""Comparing one minigrad result with one torch result: the differences, as readable records.

Nothing here asserts; `diff_values` and `diff_exceptions` return lists of `Difference`, which the
harness (`compare_with_torch`) and `assert_same` turn into reports."""

import math
from dataclasses import dataclass

import numpy as np

from ._dtypes import TORCH_TOLERANCES, dtype_name, is_float


@dataclass(frozen=True)
class Difference:
    """One way minigrad differs from torch.

    kind: "exception", "structure", "dtype", "shape", "stride", "value", "requires_grad",
    "grad_fn", "grad" or "version"; where: what differs ("output[1]", "input[0].grad",
    "input[0]._version", "forward", "backward"); torch / minigrad: each side, described;
    detail: more lines (for values: the mismatch statistics)."""

    kind: str
    where: str
    torch: str
    minigrad: str
    detail: str = ""

    def __str__(self):
        head = f"{self.where}: {_KIND_TITLES.get(self.kind, self.kind)}\n    torch:    {self.torch}\n    minigrad: {self.minigrad}"
        if self.detail:
            head += "\n" + "\n".join("    " + line for line in self.detail.splitlines())
        return head


_KIND_TITLES = {
    "exception": "exceptions differ",
    "structure": "results differ in kind",
    "dtype": "dtypes differ",
    "shape": "shapes differ",
    "stride": "strides differ",
    "value": "values differ",
    "requires_grad": "requires_grad differs",
    "grad_fn": "grad_fn names differ",
    "grad": "gradients differ",
    "version": "versions differ",
}


# ----- exceptions -----

def normalize_message(msg):
    """torch's messages name torch (`torch.FloatTensor`) where minigrad's name minigrad."""
    return str(msg).replace("torch.", "minigrad.").replace("torch", "minigrad")


def describe_exception(exc):
    return f"{type(exc).__name__}: {exc}"


def diff_exceptions(m_exc, t_exc, where, *, m_result=None, t_result=None):
    """Differences between what each side raised (None: it returned `*_result`)."""
    if m_exc is None and t_exc is None:
        return []
    if m_exc is None or t_exc is None:
        return [Difference(
            "exception", where,
            describe_exception(t_exc) if t_exc is not None else f"returned {_short(t_result)}",
            describe_exception(m_exc) if m_exc is not None else f"returned {_short(m_result)}",
            "one raised and the other did not",
        )]
    if type(m_exc).__name__ != type(t_exc).__name__:
        return [Difference("exception", where, describe_exception(t_exc), describe_exception(m_exc),
                           "different exception classes")]
    if normalize_message(m_exc) != normalize_message(t_exc):
        return [Difference("exception", where, describe_exception(t_exc), describe_exception(m_exc),
                           "different messages (compared with 'torch' read as 'minigrad')")]
    return []


def guarded(f):
    """(result, None) or (None, the exception f raised)."""
    try:
        return f(), None
    except Exception as e:  # noqa: BLE001 - every exception is a result to compare
        return None, e


# ----- values -----

def is_tensor(x):
    """A minigrad or torch tensor (recognised without importing torch)."""
    cls = type(x)
    return any(c.__module__.split(".")[0] in ("minigrad", "torch") and c.__name__ in ("Tensor", "TensorBase")
               for c in cls.__mro__)


def is_minigrad_tensor(x):
    from .._tensor import Tensor
    return isinstance(x, Tensor)


def describe(x):
    """A short description: `float32 [2, 3]` for tensors, the repr otherwise."""
    if is_tensor(x):
        return f"{dtype_name(x.dtype)} {list(x.shape)}"
    return _short(x)


def _short(x, limit=120):
    s = repr(x)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def to_numpy(t):
    """The values of a minigrad or torch tensor as a NumPy array (detached, on the CPU)."""
    return np.array(t.detach().cpu().numpy(), copy=True)


def tolerance(name, rtol=None, atol=None, tolerances=None):
    """(rtol, atol) for dtype `name`: each given one, else the table's (torch.testing's by default)."""
    default_rtol, default_atol = (tolerances or TORCH_TOLERANCES).get(name, (0.0, 0.0))
    return (default_rtol if rtol is None else rtol), (default_atol if atol is None else atol)


def diff_values(m, t, where="output", *, rtol=None, atol=None, tolerances=None, check_stride=False,
                equal_nan=True, kind=None):
    """Differences between a minigrad result `m` and a torch result `t`: tensors (dtype, shape,
    optionally strides, values within tolerance), tuples/lists of results, and plain values.
    `kind` relabels every difference (the harness uses "grad" for gradients)."""
    kw = dict(rtol=rtol, atol=atol, tolerances=tolerances, check_stride=check_stride, equal_nan=equal_nan, kind=kind)
    out = []
    if isinstance(t, (tuple, list)):
        if not isinstance(m, (tuple, list)) or len(m) != len(t):
            out.append(Difference("structure", where, _container(t), _container(m)))
            return _relabel(out, kind)
        for i, (a, b) in enumerate(zip(m, t)):
            out += diff_values(a, b, f"{where}[{i}]", **kw)
        return out
    if is_tensor(t):
        if not is_minigrad_tensor(m):
            return _relabel([Difference("structure", where, f"a tensor ({describe(t)})", f"{type(m).__name__} {_short(m)}")], kind)
        return _relabel(_diff_tensors(m, t, where, rtol, atol, tolerances, check_stride, equal_nan), kind)
    if is_tensor(m):
        return _relabel([Difference("structure", where, f"{type(t).__name__} {_short(t)}", f"a tensor ({describe(m)})")], kind)
    return _relabel(_diff_plain(m, t, where, rtol, atol, tolerances), kind)


def _relabel(diffs, kind):
    if kind is None:
        return diffs
    return [Difference(kind, d.where, d.torch, d.minigrad,
                       (_KIND_TITLES[d.kind] + ("\n" + d.detail if d.detail else "")) if d.kind != kind else d.detail)
            for d in diffs]


def _container(x):
    if isinstance(x, (tuple, list)):
        return f"{type(x).__name__} of {len(x)}"
    return f"{type(x).__name__} {_short(x)}"


def _number_kind(x):
    if isinstance(x, (bool, np.bool_)):
        return "bool"
    if isinstance(x, (int, np.integer)):
        return "int"
    if isinstance(x, (float, np.floating)):
        return "float"
    return None


def _diff_plain(m, t, where, rtol, atol, tolerances):
    """Plain results: numbers of the same kind (bool, int, float; floats within float64's
    tolerance), dtypes by name, anything else by ==."""
    if hasattr(t, "is_floating_point") and hasattr(m, "is_floating_point"):  # dtype objects
        same = dtype_name(m) == dtype_name(t)
    elif _number_kind(t) is not None or _number_kind(m) is not None:
        kind = _number_kind(t)
        if kind != _number_kind(m):
            same = False
        elif kind == "float":
            r, a = tolerance("float64", rtol, atol, tolerances)
            same = (math.isnan(m) and math.isnan(t)) or math.isclose(m, t, rel_tol=r, abs_tol=a)
        else:
            same = m == t
    else:
        try:
            same = bool(m == t)
        except Exception:  # noqa: BLE001 - an == that cannot answer is a difference
            same = False
    if same:
        return []
    return [Difference("value", where, f"{type(t).__name__} {_short(t)}", f"{type(m).__name__} {_short(m)}")]


def _diff_tensors(m, t, where, rtol, atol, tolerances, check_stride, equal_nan):
    name_m, name_t = dtype_name(m.dtype), dtype_name(t.dtype)
    if name_m != name_t:
        return [Difference("dtype", where, name_t, name_m)]
    if tuple(m.shape) != tuple(t.shape):
        return [Difference("shape", where, str(list(t.shape)), str(list(m.shape)))]
    out = []
    if check_stride and tuple(m.stride()) != tuple(t.stride()):
        out.append(Difference("stride", where, str(tuple(t.stride())), str(tuple(m.stride()))))
    a, b = to_numpy(m), to_numpy(t)
    if is_float(name_t):
        r, tol = tolerance(name_t, rtol, atol, tolerances)
        with np.errstate(invalid="ignore", over="ignore"):
            bad = ~np.isclose(a, b, rtol=r, atol=tol, equal_nan=equal_nan)
    else:
        r = tol = 0.0
        bad = a != b
    if bad.any():
        out.append(Difference("value", where, _values(b), _values(a), _mismatch(a, b, bad, r, tol)))
    return out


def _values(a):
    return np.array2string(a, threshold=12, edgeitems=3, precision=8, separator=", ").replace("\n", " ")


def _mismatch(a, b, bad, rtol, atol):
    n, total = int(bad.sum()), bad.size
    lines = [f"Mismatched elements: {n} / {total} ({100.0 * n / total:.1f}%)"]
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    lines.append(f"First mismatch at index {first}: torch {b[first].item()!r}, minigrad {a[first].item()!r}")
    if a.dtype.kind == "f":
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
            rel = diff / np.abs(b.astype(np.float64))
        diff = np.where(bad & np.isfinite(diff), diff, -1.0)
        rel = np.where(bad & np.isfinite(rel), rel, -1.0)
        if diff.max() >= 0:
            i = np.unravel_index(int(diff.argmax()), diff.shape)
            lines.append(f"Greatest absolute difference: {diff[i]:.6g} at index {tuple(int(k) for k in i)} (up to {atol:g} allowed)")
        if rel.max() >= 0:
            i = np.unravel_index(int(rel.argmax()), rel.shape)
            lines.append(f"Greatest relative difference: {rel[i]:.6g} at index {tuple(int(k) for k in i)} (up to {rtol:g} allowed)")
    return "\n".join(lines)
