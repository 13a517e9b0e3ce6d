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

The package keeps each part small: `_util` (the error, helpers and input checks),
`_jacobians` (numerical and analytical Jacobians), `_checks` (what is compared). Tests load
it standalone, under another name, to run the very same code on torch.
"""

import numpy as np

from ._checks import _slow_gradcheck, _test_backward_mul_by_grad_output, _test_undefined_backward_mode
from ._util import GradcheckError, _as_tensor, _as_tuple, _check_inputs, _differentiable_outputs, _is_tensor, _to_numpy

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]

# The tensor library the checks run on; None means `import minigrad` at call time. Tests point it
# at another library with the same API (torch) to compare this implementation with torch's.
_LIBRARY = None


def _lib():
    if _LIBRARY is not None:
        return _LIBRARY
    import minigrad

    return minigrad


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
