"""The checks gradcheck runs after the Jacobians: the Jacobians agree (slow mode), backward is
linear in grad_output, and outputs that get no gradient are handled."""

import warnings

import numpy as np

from ._jacobians import _allclose, _analytical_jacobians, _notallclose_msg, _numerical_jacobians
from ._util import GradcheckError, _as_tuple, _diff_input_indices, _differentiable_outputs, _to_numpy


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
