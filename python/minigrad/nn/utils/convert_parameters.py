"""`parameters_to_vector` / `vector_to_parameters`: a model's parameters as one flat vector and back.

`parameters_to_vector` is differentiable (`cat` of `view(-1)`s: a non-contiguous parameter raises
torch's view error). `vector_to_parameters` does what torch does: it *rebinds* each parameter's
`.data` to a slice of `vec` — no copy and no in-place write, so the parameters' `_version` does not
move and they share memory with `vec` afterwards (writing `vec` changes them)."""

from ..modules.module import typename

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters):
    """One 1-D tensor holding every parameter, flattened, in order."""
    from ..._ops.linalg import cat
    param_device = None
    vec = []
    for param in parameters:
        param_device = _check_param_device(param, param_device)
        vec.append(param.view(-1))
    return cat(vec)


def vector_to_parameters(vec, parameters):
    """Points each parameter's data at the next `numel()` elements of `vec`, shaped like it."""
    from ..._tensor import Tensor
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected minigrad.Tensor, but got: {typename(vec)}")
    param_device = None
    pointer = 0
    for param in parameters:
        param_device = _check_param_device(param, param_device)
        num_param = param.numel()
        param.data = vec[pointer:pointer + num_param].view_as(param).data
        pointer += num_param


def _check_param_device(param, old_param_device):
    """All parameters on one device: -1 for CPU, the index for a GPU."""
    on_gpu = param.device.type == "cuda"
    this = (param.device.index or 0) if on_gpu else -1
    if old_param_device is None:
        return this
    if this != old_param_device:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return old_param_device
