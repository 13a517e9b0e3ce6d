"""`minigrad.autograd.gradcheck` and `gradgradcheck`: finite differences against backward.

Same signatures, defaults, checks and messages as `torch.autograd.gradcheck` (slow mode):

* the numerical Jacobian comes from central differences, perturbing one element of one input at a
  time by `eps` (written through a NumPy view of the input's memory, so the version counter is not
  bumped, as torch writes through `.data`);
* the analytical Jacobian is built row by row: `autograd.grad` of each output against one-hot
  `grad_outputs`, twice, to catch a non-reentrant (non-deterministic) backward;
* then backward must be linear in grad_output (zero grad_outputs give zero grads of the inputs'
  dtypes and shapes), and with several differentiable outputs each must be allowed to get no
  gradient at all.

Jacobians are (input numel) x (output numel) matrices; on a mismatch `GradcheckError` says
"Jacobian mismatch for output i with respect to input j" (i counts the differentiable outputs, j
the inputs that require grad) and prints both matrices.

What minigrad cannot do, it refuses clearly: `fast_mode=True`, forward-mode AD
(`check_forward_ad`, `check_batched_forward_grad`) and vmap (`check_batched_grad`) raise
NotImplementedError. Complex, sparse and MKLDNN tensors do not exist in minigrad.

Only minigrad's public API is used, and minigrad is imported when a check runs, so this module
can be imported by `minigrad.autograd` itself.
"""

import warnings

import numpy as np

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]

# The tensor library the checks run on; None means `import minigrad` at call time. Tests point it
# at another library with the same API (torch) to compare this implementation with torch's.
_LIBRARY = None


class GradcheckError(RuntimeError):
    r"""Error raised by :func:`gradcheck` and :func:`gradgradcheck`."""


def _lib():
    if _LIBRARY is not None:
        return _LIBRARY
    import minigrad

    return minigrad


def _is_tensor(mg, x):
    return isinstance(x, mg.Tensor)


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _differentiable_outputs(x):
    return tuple(o for o in _as_tuple(x) if o.requires_grad)


def _is_float_tensor(mg, x):
    return _is_tensor(mg, x) and x.is_floating_point()


def _to_numpy(t):
    """A private row-major copy of `t`'s values."""
    return np.array(t.detach().numpy(), copy=True)


def _as_tensor(mg, array):
    """A tensor holding `array` (for printing Jacobians and building grad_outputs)."""
    return mg.from_numpy(np.array(array, order="C", copy=True))


# ----- inputs and outputs -----

def _check_inputs(mg, tupled_inputs):
    any_input_requiring_grad = False
    for idx, inp in enumerate(tupled_inputs):
        if _is_tensor(mg, inp) and inp.requires_grad:
            if inp.dtype != mg.float64:
                warnings.warn(
                    f"Input #{idx} requires gradient and "
                    "is not a double precision floating point or complex. "
                    "This check will likely fail if all the inputs are "
                    "not of double precision floating point or complex. ",
                    UserWarning,
                    stacklevel=4,
                )
            if not all(st > 0 or sz <= 1 for st, sz in zip(inp.stride(), inp.shape)):
                raise RuntimeError(
                    f"The {idx}th input has a dimension with stride 0. gradcheck only "
                    "supports inputs that are non-overlapping to be able to "
                    "compute the numerical gradients correctly. You should call "
                    ".contiguous on the input before passing it to gradcheck."
                )
            any_input_requiring_grad = True
    if not any_input_requiring_grad:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, "
            "but none of them have requires_grad=True."
        )


def _diff_input_indices(mg, tupled_inputs):
    return [i for i, a in enumerate(tupled_inputs) if _is_tensor(mg, a) and a.requires_grad]


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


# ----- the checks -----

def _slow_gradcheck(mg, func, func_out, tupled_inputs, outputs, eps, rtol, atol,
                    check_grad_dtypes, nondet_tol):
    func_out = _as_tuple(func_out)
    numerical, float_outputs, dirty = _numerical_jacobians(mg, func, tupled_inputs, func_out, eps)
    if not outputs:
        # No differentiable output: the function must not depend on the inputs at all.
        for per_input in numerical:
            for jac in per_input:
                if np.count_nonzero(jac) > 0:
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return True, func_out
    if dirty:
        # The fallback perturbation bumped the inputs' version counters: record a fresh graph.
        func_out = _as_tuple(func(*tupled_inputs))
        outputs = _differentiable_outputs(func_out)
    diff_positions = [col for col, k in enumerate(float_outputs) if func_out[k].requires_grad]
    for i, o in enumerate(outputs):
        analytical = _analytical_jacobians(mg, tupled_inputs, o, nondet_tol, check_grad_dtypes)
        for j, a in enumerate(analytical):
            n = numerical[j][diff_positions[i]]
            if not _allclose(a, n, rtol, atol):
                raise GradcheckError(_notallclose_msg(mg, a, n, i, j))
    return True, func_out


def _test_backward_mul_by_grad_output(mg, outputs, tupled_inputs, masked):
    diff_inputs = [tupled_inputs[i] for i in _diff_input_indices(mg, tupled_inputs)]
    if not diff_inputs:
        raise GradcheckError("no Tensors requiring grad found in input")
    grads_input = mg.autograd.grad(
        list(outputs), diff_inputs, [mg.zeros_like(o) for o in outputs], allow_unused=True
    )
    for gi, di in zip(grads_input, diff_inputs):
        if gi is None:
            continue
        values = _to_numpy(gi)
        if masked:
            if not np.allclose(values, np.zeros_like(values)):
                raise GradcheckError("backward not multiplied by grad_output")
        elif not (values == 0).all():
            raise GradcheckError("backward not multiplied by grad_output")
        if gi.dtype != di.dtype:
            raise GradcheckError("grad is incorrect type")
        if tuple(gi.shape) != tuple(di.shape):
            raise GradcheckError("grad is incorrect size")
    return True


def _warn_bc_breaking():
    warnings.warn(
        "Backwards compatibility: New undefined gradient support checking "
        "feature is enabled by default, but it may break existing callers "
        "of this function. If this is true for you, you can call this "
        'function with "check_undefined_grad=False" to disable the feature',
        UserWarning,
        stacklevel=4,
    )


def _test_undefined_backward_mode(mg, func, outputs, tupled_inputs):
    """Every backward must cope with outputs that receive no gradient.

    torch makes an output's gradient undefined with an internal autograd function; here an output
    gets no gradient by being left out of `autograd.grad`'s outputs. So, with several
    differentiable outputs, each is left out in turn while the others get zero gradients, and the
    inputs' gradients must be None or zero. (torch also checks the case of all outputs undefined,
    which has no public spelling.)"""
    diff_inputs = [tupled_inputs[i] for i in _diff_input_indices(mg, tupled_inputs)]
    if not diff_inputs:
        raise GradcheckError("no Tensors requiring grad found in input")
    if len(outputs) < 2:
        return True
    for undefined in range(len(outputs)):
        fresh = _differentiable_outputs(func(*tupled_inputs))
        kept = [o for k, o in enumerate(fresh) if k != undefined]
        try:
            grads_input = mg.autograd.grad(
                kept, diff_inputs, [mg.zeros_like(o) for o in kept], allow_unused=True
            )
        except RuntimeError as e:
            _warn_bc_breaking()
            raise GradcheckError(
                "Expected backward function to handle undefined output grads. "
                'Please look at "Notes about undefined output gradients" in '
                '"tools/autograd/derivatives.yaml"'
            ) from e
        for gi in grads_input:
            if gi is not None and not (_to_numpy(gi) == 0).all():
                _warn_bc_breaking()
                raise GradcheckError(
                    "Expected all input grads to be undefined or zero when all output grads are undefined "
                    'or zero. Please look at "Notes about undefined output gradients" in '
                    '"tools/autograd/derivatives.yaml"'
                )
    return True


def gradcheck(
    func,
    inputs,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked=None,
) -> bool:
    r"""Checks the gradients computed by backward against finite differences, for the inputs that
    are floating point tensors with ``requires_grad=True`` (see torch.autograd.gradcheck).

    The analytical and numerical Jacobians must satisfy ``allclose`` (|a - n| <= atol + rtol*|n|).
    The defaults suit float64 inputs; others get a warning. Inputs must not overlap in memory
    (an expanded input is refused). Returns True, or raises GradcheckError (returns False when
    ``raise_exception=False``).

    Args:
        func: takes the inputs, returns a Tensor or a tuple of Tensors.
        inputs: a Tensor or a tuple of inputs (non-tensors are passed through).
        eps: the perturbation for central differences.
        atol, rtol: tolerances of the comparison.
        raise_exception: raise GradcheckError (True) or return False (False) on a failure.
        nondet_tol: how far two backward runs on the same inputs may differ.
        check_undefined_grad: check that outputs which get no gradient are handled.
        check_grad_dtypes: check that each gradient has its input's dtype.
        check_backward_ad: if False, nothing is checked that needs backward (then there is
            nothing minigrad can check).
        masked: for sparse inputs in torch; here only whether "backward is multiplied by
            grad_output" is checked with allclose (True) or exactly (False/None).
        fast_mode, check_forward_ad, check_batched_grad, check_batched_forward_grad: not
            supported by minigrad (NotImplementedError when set).
    """
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad to be True")
    if check_batched_grad and not check_backward_ad:
        raise AssertionError("Setting check_batched_grad=True requires check_backward_ad to be True")
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError("Setting check_batched_forward_grad=True requires check_forward_ad to be True")
    _refuse_unsupported(fast_mode=fast_mode, check_forward_ad=check_forward_ad,
                        check_batched_grad=check_batched_grad,
                        check_batched_forward_grad=check_batched_forward_grad)
    args = dict(func=func, inputs=inputs, eps=eps, atol=atol, rtol=rtol, nondet_tol=nondet_tol,
                check_undefined_grad=check_undefined_grad, check_grad_dtypes=check_grad_dtypes,
                masked=masked)
    if not raise_exception:
        try:
            return _gradcheck_helper(**args)
        except GradcheckError:
            return False
    return _gradcheck_helper(**args)


def _refuse_unsupported(**flags):
    reasons = {
        "fast_mode": "minigrad's gradcheck only has the slow mode (full Jacobians); call it with fast_mode=False",
        "check_forward_ad": "minigrad has no forward-mode AD; call gradcheck with check_forward_ad=False",
        "check_batched_grad": "minigrad has no vmap to batch gradients; call gradcheck with check_batched_grad=False",
        "check_batched_forward_grad": (
            "minigrad has no forward-mode AD or vmap; call gradcheck with check_batched_forward_grad=False"
        ),
        "check_fwd_over_rev": "minigrad has no forward-mode AD; call gradgradcheck with check_fwd_over_rev=False",
    }
    for name, value in flags.items():
        if value:
            raise NotImplementedError(f"{name}=True is not supported: {reasons[name]}")


def _gradcheck_helper(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad,
                      check_grad_dtypes, masked):
    mg = _lib()
    tupled_inputs = _as_tuple(inputs)
    _check_inputs(mg, tupled_inputs)

    func_out = func(*tupled_inputs)
    outputs = _differentiable_outputs(func_out)

    _, func_out = _slow_gradcheck(mg, func, func_out, tupled_inputs, outputs, eps, rtol, atol,
                                  check_grad_dtypes, nondet_tol)
    outputs = _differentiable_outputs(func_out)
    if not outputs:
        return True
    _test_backward_mul_by_grad_output(mg, outputs, tupled_inputs, masked)
    if check_undefined_grad:
        _test_undefined_backward_mode(mg, func, outputs, tupled_inputs)
    return True


def gradgradcheck(
    func,
    inputs,
    grad_outputs=None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
) -> bool:
    r"""Checks second derivatives: gradcheck of the function (inputs, grad_outputs) ->
    autograd.grad(func(inputs), inputs, grad_outputs, create_graph=True), as
    torch.autograd.gradgradcheck.

    When `grad_outputs` is None, random ones (uniform in [-1, 1), requiring grad; noncontiguous
    with `gen_non_contig_grad_outputs`) are made for the differentiable outputs.
    """
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError("Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True")
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_undefined_grad=True requires check_rev_over_rev to be True")
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_batched_grad=True requires check_rev_over_rev to be True")
    _refuse_unsupported(check_fwd_over_rev=check_fwd_over_rev)
    mg = _lib()
    tupled_inputs = _as_tuple(inputs)

    if grad_outputs is None:
        outputs = _differentiable_outputs(func(*tupled_inputs))
        tupled_grad_outputs = tuple(
            _random_grad_output(mg, o, gen_non_contig_grad_outputs) for o in outputs
        )
    else:
        tupled_grad_outputs = _as_tuple(grad_outputs)

    num_outputs = len(tupled_grad_outputs)
    diff_input_args_indices = {
        i for i, x in enumerate(tupled_inputs) if _is_tensor(mg, x) and x.requires_grad
    }
    diff_grad_output_indices = {i for i, x in enumerate(tupled_grad_outputs) if x.requires_grad}

    def new_func(*args):
        input_args = tuple(
            x.requires_grad_() if i in diff_input_args_indices else x
            for i, x in enumerate(args[:-num_outputs])
        )
        outputs = _differentiable_outputs(func(*input_args))
        grad_outputs = tuple(
            x.requires_grad_() if i in diff_grad_output_indices else x
            for i, x in enumerate(args[-num_outputs:])
        )
        diff_input_args = tuple(x for i, x in enumerate(input_args) if i in diff_input_args_indices)
        grad_inputs = mg.autograd.grad(
            outputs, diff_input_args, grad_outputs, create_graph=True, allow_unused=True
        )
        return tuple(g for g in grad_inputs if g is not None)

    return gradcheck(
        new_func,
        tupled_inputs + tupled_grad_outputs,
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad,
        check_grad_dtypes=check_grad_dtypes,
        check_batched_grad=check_batched_grad,
        fast_mode=fast_mode,
        check_forward_ad=check_fwd_over_rev,
        check_backward_ad=check_rev_over_rev,
        masked=masked,
    )


def _random_grad_output(mg, output, noncontiguous):
    """Uniform in [-1, 1), the output's dtype (float64 for a non-float output), requiring grad;
    with `noncontiguous` (and more than one element) every other element of a wider buffer."""
    dtype = _to_numpy(output).dtype if output.is_floating_point() else np.float64
    shape = tuple(output.shape)
    rng = np.random.default_rng()
    if noncontiguous and output.numel() > 1:
        wide = shape[:-1] + (2 * shape[-1],) if shape else (2,)
        base = _as_tensor(mg, np.asarray(rng.uniform(-1, 1, wide), dtype=dtype))
        grad = base[..., ::2]
    else:
        grad = _as_tensor(mg, np.asarray(rng.uniform(-1, 1, shape), dtype=dtype))
    return grad.requires_grad_()
