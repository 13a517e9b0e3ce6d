"""Small helpers shared by the gradcheck modules: the error type, tuples of inputs and outputs,
NumPy copies of tensors, and the checks on the inputs."""

import warnings

import numpy as np


class GradcheckError(RuntimeError):
    r"""Error raised by :func:`gradcheck` and :func:`gradgradcheck`."""


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
