"""The two Jacobians gradcheck compares: numerical (central differences, one element of one
input perturbed at a time) and analytical (`autograd.grad` with one-hot grad_outputs, twice)."""

import numpy as np

from ._util import GradcheckError, _as_tensor, _as_tuple, _diff_input_indices, _is_float_tensor, _to_numpy


# ----- numerical Jacobian -----

class _Perturber:
    """Writes single elements of an input in place and restores them.

    The writes go through a NumPy view of the tensor's memory, which minigrad (like torch's
    `.data`) does not count as a modification: graphs that saved the input stay usable. If the
    library gives no writable view, it falls back to `x.detach()[idx] = v` under no_grad, which
    bumps the version counter (`dirty` tells the caller to recompute its outputs afterwards).
    """

    def __init__(self, mg, tensor):
        self.mg = mg
        self.tensor = tensor
        self.dirty = False
        try:
            array = tensor.detach().numpy()
            writable = isinstance(array, np.ndarray) and array.flags.writeable
        except Exception:  # noqa: BLE001 - any failure means: use the fallback
            array, writable = None, False
        if writable and array.shape != tuple(tensor.shape):
            writable = False
        if writable and tensor.numel() > 0:
            # The view must really be the tensor's memory: probe one element and read it back.
            idx = (0,) * array.ndim
            orig = array[idx].copy()
            probe = array.dtype.type(0 if orig != 0 else 1)
            array[idx] = probe
            seen = np.asarray(tensor.detach().numpy())[idx]
            array[idx] = orig
            writable = bool(seen == probe)
        self.array = array if writable else None
        if self.array is None:
            self.dtype = _to_numpy(tensor).dtype
        else:
            self.dtype = array.dtype

    def get(self, idx):
        if self.array is not None:
            return self.array[idx].copy()
        return np.asarray(self.tensor.detach()[idx].item(), dtype=self.dtype)

    def set(self, idx, value):
        value = np.asarray(value, dtype=self.dtype)
        if self.array is not None:
            self.array[idx] = value
            return
        self.dirty = True
        with self.mg.no_grad():
            self.tensor.detach()[idx] = value.item()


def _snapshot(fn):
    """Calls fn() and copies each output (shape, dtype, values) before anything else runs: an
    output may be a view of the input being perturbed."""
    outs = []
    for o in _as_tuple(fn()):
        outs.append((o.shape, o.dtype, o.is_floating_point(), _to_numpy(o)))
    return outs


def _check_outputs_same_dtype_and_shape(out1, out2, eps, idx=None):
    on_index = f"on index {idx} " if idx is not None else ""
    if tuple(out1[0]) != tuple(out2[0]):
        raise AssertionError(
            f"Expected `func` to return outputs with the same shape"
            f" when inputs are perturbed {on_index}by {eps}, but got:"
            f" shapes {out1[0]} and {out2[0]}."
        )
    if out1[1] != out2[1]:
        raise AssertionError(
            f"Expected `func` to return outputs with the same dtype"
            f" when inputs are perturbed {on_index}by {eps}, but got:"
            f" dtypes {out1[1]} and {out2[1]}."
        )


def _numerical_jacobians(mg, func, tupled_inputs, func_out, eps):
    """For each input requiring grad, the list (one per floating output of `func_out`, in order)
    of (input numel x output numel) central-difference Jacobians, in the output's dtype.
    Returns (jacobians, indices of the floating outputs, whether the inputs' version counters
    were bumped)."""
    float_outputs = [i for i, o in enumerate(func_out) if _is_float_tensor(mg, o)]
    result, dirty = [], False
    for inp_idx in _diff_input_indices(mg, tupled_inputs):
        inp = tupled_inputs[inp_idx]
        numel = inp.numel()
        jac = []
        for k in float_outputs:
            o = func_out[k]
            jac.append(np.zeros((numel, o.numel()), dtype=_to_numpy(o).dtype))
        perturber = _Perturber(mg, inp)
        delta = perturber.dtype.type(eps)
        for d_idx, idx in enumerate(np.ndindex(*tuple(inp.shape))):
            orig = perturber.get(idx)
            perturber.set(idx, orig - delta)
            outa = _snapshot(lambda: func(*tupled_inputs))
            perturber.set(idx, orig + delta)
            outb = _snapshot(lambda: func(*tupled_inputs))
            perturber.set(idx, orig)
            for a, b in zip(outa, outb):
                _check_outputs_same_dtype_and_shape(a, b, eps, idx=idx)
            for col, k in enumerate(float_outputs):
                a, b = outa[k][3], outb[k][3]
                jac[col][d_idx] = ((b - a) / a.dtype.type(2 * eps)).reshape(-1)
        dirty = dirty or perturber.dirty
        result.append(jac)
    return result, float_outputs, dirty


# ----- analytical Jacobian -----

def _one_hot(shape, dtype, j):
    g = np.zeros(int(np.prod(shape, dtype=np.int64)), dtype=dtype)
    g[j] = 1
    return g.reshape(tuple(shape))


def _analytical_jacobian_rows(mg, output, diff_inputs):
    """rows[i][j]: d output[j] / d input i (a tensor or None), via one-hot grad_outputs."""
    out_dtype = _to_numpy(output).dtype
    rows = [[] for _ in diff_inputs]
    for j in range(output.numel()):
        grad_output = _as_tensor(mg, _one_hot(output.shape, out_dtype, j))
        grads = mg.autograd.grad(
            [output], diff_inputs, [grad_output], retain_graph=True, allow_unused=True
        )
        for i, d in enumerate(grads):
            rows[i].append(None if d is None else d.detach().clone())
    return rows


def _stack_rows(rows, diff_inputs, output_numel):
    """(input numel x output numel) arrays from rows; also whether every row had the input's
    shape and dtype."""
    sizes_ok = types_ok = True
    jacobians = []
    for inp, inp_rows in zip(diff_inputs, rows):
        jac = np.zeros((inp.numel(), output_numel), dtype=_to_numpy(inp).dtype)
        for j, d in enumerate(inp_rows):
            if d is None:
                continue
            if tuple(d.shape) != tuple(inp.shape):
                sizes_ok = False
                continue
            if d.dtype != inp.dtype:
                types_ok = False
            jac[:, j] = _to_numpy(d).reshape(-1)
        jacobians.append(jac)
    return jacobians, sizes_ok, types_ok


FAILED_NONDET_MSG = """\n
NOTE: If your op relies on non-deterministic operations i.e., it is listed here:
https://pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html
this failure might be expected.

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck.
If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `nondet_tol=<tol>` as a keyword argument.
- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test
  to have `gradcheck_nondet_tol=<tol>`.
- is a Module test (e.g., in common_nn.py), then modify the corresponding
  module_test entry to have `gradcheck_nondet_tol=<tol>`
"""


def _analytical_jacobians(mg, tupled_inputs, output, nondet_tol, check_grad_dtypes):
    diff_inputs = [tupled_inputs[i] for i in _diff_input_indices(mg, tupled_inputs)]
    rows1 = _analytical_jacobian_rows(mg, output, diff_inputs)
    rows2 = _analytical_jacobian_rows(mg, output, diff_inputs)
    jac1, sizes_ok, types_ok = _stack_rows(rows1, diff_inputs, output.numel())
    jac2, _, _ = _stack_rows(rows2, diff_inputs, output.numel())
    reentrant = all(
        j1.size == 0 or np.abs(j1 - j2).max() <= nondet_tol for j1, j2 in zip(jac1, jac2)
    )
    if not types_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    if not reentrant:
        raise GradcheckError(
            "Backward is not reentrant, i.e., running backward with "
            "same input and grad_output multiple times gives different values, "
            "although analytical gradient matches numerical gradient."
            f"The tolerance for nondeterminism was {nondet_tol}." + FAILED_NONDET_MSG
        )
    return jac1


def _allclose(a, b, rtol, atol):
    """torch.allclose(a, b) after type promotion: |a - b| <= atol + rtol * |b|."""
    dtype = np.result_type(a.dtype, b.dtype)
    return bool(np.allclose(a.astype(dtype), b.astype(dtype), rtol=rtol, atol=atol))


def _notallclose_msg(mg, analytical, numerical, output_idx, input_idx):
    return (
        f"Jacobian mismatch for output {output_idx:d} with respect to input {input_idx:d},\n"
        f"numerical:{_as_tensor(mg, numerical)!r}\nanalytical:{_as_tensor(mg, analytical)!r}\n"
    )
