"""compare_with_torch: run one function under torch and under minigrad, compare everything a
learner can observe (outputs, gradients, versions, grad_fn names, exceptions)."""

from dataclasses import dataclass, field

import numpy as np

from ._compare import (
    Difference, describe, describe_exception, diff_exceptions, diff_values, guarded, is_tensor,
)
from ._dtypes import DTYPE_NAMES, dtype_name, is_float
from ._layout import TensorSpec, spec_of_tensor
from ._torch import require_torch


class ComparisonError(AssertionError):
    """Raised by compare_with_torch when minigrad differs from torch; `.report` holds the details."""

    def __init__(self, report):
        super().__init__(str(report))
        self.report = report


@dataclass
class Run:
    """What one library did with the function: the inputs it got, what it returned or raised,
    the versions of the inputs afterwards, and the inputs' gradients after backward."""

    library: str
    inputs: list
    result: object = None
    error: BaseException = None
    outputs: list = field(default_factory=list)  # [(where, value)], tuples/lists flattened
    input_versions: list = field(default_factory=list)
    ran_backward: bool = False
    backward_error: BaseException = None
    grads: list = field(default_factory=list)

    def summary(self):
        """One line per output and input."""
        if self.error is not None:
            lines = [f"raised {describe_exception(self.error)}"]
        else:
            lines = [_describe_output(where, v) for where, v in self.outputs] or ["returned nothing"]
            if self.backward_error is not None:
                lines.append(f"backward raised {describe_exception(self.backward_error)}")
        for i, x in enumerate(self.inputs):
            line = f"input[{i}] {describe(x)} _version={self.input_versions[i]}"
            if self.ran_backward:
                g = self.grads[i]
                line += f" grad={describe(g) if g is not None else None}"
            lines.append(line)
        return lines


def _describe_output(where, v):
    if not is_tensor(v):
        return f"{where} {describe(v)}"
    return (f"{where} {describe(v)} requires_grad={v.requires_grad} grad_fn={_grad_fn_name(v)} "
            f"_version={v._version}")


def _grad_fn_name(t):
    return None if t.grad_fn is None else type(t.grad_fn).__name__


@dataclass
class ComparisonReport:
    """The result of compare_with_torch: both runs and every difference found (empty: agreed)."""

    function: str
    inputs: list
    torch: Run
    minigrad: Run
    differences: list
    compared: list

    @property
    def ok(self):
        return not self.differences

    def __str__(self):
        inputs = ", ".join(repr(s) for s in self.inputs) or "no inputs"
        if self.ok:
            head = f"compare_with_torch({self.function}): minigrad agrees with torch ({', '.join(self.compared)})"
        else:
            n = len(self.differences)
            head = f"compare_with_torch({self.function}): minigrad differs from torch in {n} place{'s' if n > 1 else ''}"
        lines = [head, f"  inputs: {inputs}"]
        for d in self.differences:
            lines += ["  " + line for line in str(d).splitlines()]
        for run in (self.torch, self.minigrad):
            lines.append(f"  {run.library} ran:")
            lines += ["    " + line for line in run.summary()]
        return "\n".join(lines)


def _as_spec(x, torch):
    if isinstance(x, TensorSpec):
        spec = x
    elif is_tensor(x):
        spec = spec_of_tensor(x)
    elif isinstance(x, (np.ndarray, np.generic)):
        spec = TensorSpec(np.array(x, copy=True))
    else:  # nested lists, numbers: torch.tensor's inference decides the dtype
        spec = TensorSpec(torch.tensor(x).numpy())
    if spec.dtype not in DTYPE_NAMES:
        raise TypeError(f"compare_with_torch: an input of dtype {spec.dtype}; both libraries support {', '.join(DTYPE_NAMES)}")
    return spec


def _flatten(value, where="output"):
    if isinstance(value, (tuple, list)):
        out = []
        for i, v in enumerate(value):
            out += _flatten(v, f"{where}[{i}]")
        return out
    return [(where, value)]


def _run(lib, name, fn, specs, grad):
    tensors = []
    for spec in specs:
        t = spec.build(lib)
        if grad and is_float(spec.dtype):
            t.requires_grad_()
        tensors.append(t)
    run = Run(name, tensors)
    run.result, run.error = guarded(lambda: fn(lib, *tensors))
    run.input_versions = [t._version for t in tensors]
    if run.error is not None:
        return run
    run.outputs = _flatten(run.result)
    differentiable = [v for _, v in run.outputs if is_tensor(v) and v.requires_grad]
    if grad and differentiable:
        def backward():
            total = differentiable[0].sum()
            for v in differentiable[1:]:
                total = total + v.sum()
            total.backward()
        run.ran_backward = True
        _, run.backward_error = guarded(backward)
        run.grads = [t.grad for t in tensors]
    return run


def _diff_runs(t, m, check_versions, tol):
    diffs = diff_exceptions(m.error, t.error, "forward", m_result=m.result, t_result=t.result)
    if t.error is None and m.error is None:
        diffs += diff_values(m.result, t.result, "output", **tol)
        m_outputs = dict(m.outputs)
        for where, tv in t.outputs:
            mv = m_outputs.get(where)
            if not (is_tensor(tv) and is_tensor(mv)):
                continue
            if tv.requires_grad != mv.requires_grad:
                diffs.append(Difference("requires_grad", f"{where}.requires_grad", str(tv.requires_grad), str(mv.requires_grad)))
            if _grad_fn_name(tv) != _grad_fn_name(mv):
                diffs.append(Difference("grad_fn", f"{where}.grad_fn", str(_grad_fn_name(tv)), str(_grad_fn_name(mv))))
            if check_versions and tv._version != mv._version:
                diffs.append(Difference("version", f"{where}._version", str(tv._version), str(mv._version)))
        if t.ran_backward or m.ran_backward:
            diffs += diff_exceptions(m.backward_error, t.backward_error, "backward")
            for i in range(len(t.inputs)):
                tg = t.grads[i] if t.ran_backward else None
                mg = m.grads[i] if m.ran_backward else None
                if tg is None and mg is None:
                    continue
                if tg is None or mg is None:
                    diffs.append(Difference("grad", f"input[{i}].grad", describe(tg) if tg is not None else "None",
                                            describe(mg) if mg is not None else "None"))
                else:
                    diffs += diff_values(mg, tg, f"input[{i}].grad", kind="grad", **tol)
    if check_versions:
        for i, (tv, mv) in enumerate(zip(t.input_versions, m.input_versions)):
            if tv != mv:
                diffs.append(Difference("version", f"input[{i}]._version", str(tv), str(mv)))
    return diffs


def compare_with_torch(fn, *inputs, grad=True, check_versions=True, rtol=None, atol=None, check_stride=False):
    """Runs `fn(lib, *tensors)` with `lib=torch` and with `lib=minigrad` and compares the runs.

    inputs: nested lists or numbers (dtype as `torch.tensor` infers it), NumPy arrays, torch or
    minigrad tensors (their values, strides and storage offset are reproduced), or
    `TensorSpec`s (a base array and a layout, as `minigrad.testing.strategies.tensors` draws them).
    Each library gets fresh tensors with equal values and layout; with `grad`, the floating-point
    ones are leaves that require grad.

    Compared: what `fn` raised (class and message, 'torch' read as 'minigrad'), else its outputs
    (tensors or nested tuples/lists of them: dtype, shape, values within tolerance, strides with
    `check_stride`; other values by equality), each output's requires_grad and grad_fn name
    (`type(t.grad_fn).__name__`), then, with `grad` and when some output requires grad, what
    `sum(out.sum() for out in outputs).backward()` raised and every input's `.grad`; with
    `check_versions`, each input's and output's `_version`.

    Tolerances: `rtol`/`atol`, each defaulting per dtype to torch.testing.assert_close's (float32:
    1.3e-6 / 1e-5, float64: 1e-7 / 1e-7); integers and bools compare exactly; NaN equals NaN.

    Returns a ComparisonReport; raises ComparisonError (an AssertionError) listing every
    difference when there is one."""
    torch = require_torch("minigrad.testing.compare_with_torch")
    import minigrad

    specs = [_as_spec(x, torch) for x in inputs]
    t_run = _run(torch, "torch", fn, specs, grad)
    m_run = _run(minigrad, "minigrad", fn, specs, grad)
    tol = dict(rtol=rtol, atol=atol, check_stride=check_stride)
    compared = ["exceptions", "outputs", "requires_grad", "grad_fn names"]
    if grad:
        compared.append("gradients")
    if check_versions:
        compared.append("versions")
    report = ComparisonReport(
        getattr(fn, "__qualname__", repr(fn)), specs, t_run, m_run,
        _diff_runs(t_run, m_run, check_versions, tol), compared,
    )
    if not report.ok:
        raise ComparisonError(report)
    return report


def assert_same(actual, expected, *, rtol=None, atol=None, check_stride=False, equal_nan=True, tolerances=None):
    """A minigrad result `actual` equals the torch result `expected`: for tensors dtype, shape,
    values (tolerances as compare_with_torch's, or from `tolerances`, a {dtype name: (rtol, atol)}
    table), strides with `check_stride`; tuples/lists element by element; other values by
    equality. Raises AssertionError listing the differences."""
    diffs = diff_values(actual, expected, "result", rtol=rtol, atol=atol, tolerances=tolerances,
                        check_stride=check_stride, equal_nan=equal_nan)
    if diffs:
        raise AssertionError("minigrad differs from torch:\n" + "\n".join(
            "  " + line for d in diffs for line in str(d).splitlines()))
