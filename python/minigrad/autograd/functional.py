"""`minigrad.autograd.functional`: Jacobians, Hessians and their products with vectors, computed
with reverse mode only, as torch.autograd.functional does with `vectorize=False`.

Every function takes a Python function of tensors and the point at which to differentiate it. They
are built from `autograd.grad` exactly as torch builds them, so the same graphs are recorded, the same
`strict` checks fire with torch's words, and `create_graph=True` gives results that are themselves
differentiable:

* `vjp(f, x, v)`: vᵀ·J with one backward pass.
* `jvp(f, x, v)`: J·v with the *double-backward trick*: g(u) = uᵀ·J is linear in u, so the gradient
  of g(u)·v with respect to u is J·v (a second backward pass through the first one).
* `jacobian(f, x)`: one backward pass per output element, rows stacked.
* `hessian(f, x)`: the Jacobian of the gradient (the inner Jacobian with `create_graph=True`).
* `vhp(f, x, v)` = vᵀ·H with two backward passes; `hvp(f, x, v)` = H·v with three (the trick again).

What minigrad does not have: `vmap` (so `vectorize=True` raises `NotImplementedError`) and forward-mode
AD (so `strategy="forward-mode"` raises the errors torch raises where it cannot do it either, and
`NotImplementedError` where torch would use forward mode with vmap).
"""

from .. import _C
from .grad_mode import enable_grad, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _Tensor():
    from .._tensor import Tensor
    return Tensor


def _as_tuple(inp, arg_name=None, fn_name=None):
    """(was it a tuple, the tuple): a Tensor becomes a 1-tuple; anything else but Tensors is refused."""
    if arg_name is None and fn_name is None:
        if isinstance(inp, tuple):
            return inp
        if isinstance(inp, list):
            return tuple(inp)
        return (inp,)
    is_tuple = isinstance(inp, tuple)
    if not is_tuple:
        inp = (inp,)
    Tensor = _Tensor()
    for i, el in enumerate(inp):
        if not isinstance(el, Tensor):
            where = f"the value at index {i} has type {type(el)}" if is_tuple else f"the given {arg_name} has type {type(el)}"
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but {where}."
            )
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    """Undoes `_as_tuple` (one flag) or two nested ones (a pair of flags: outer, inner)."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph, need_graph):
    """Fresh tensor objects for the user function, so that inputs it captures by closure are told
    apart from the ones passed in: a differentiable alias (`view_as`) when the caller wants a graph back
    to the inputs, a detached leaf otherwise."""
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view_as(inp))
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs, create_graph):
    """Results leave without history unless `create_graph` asked for it (nested tuples too)."""
    if isinstance(inputs[0], _Tensor()):
        if not create_graph:
            return tuple(inp.detach() for inp in inputs)
        return inputs
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.size()} but got {el_v.size()}.")


def _check_requires_grad(inputs, input_type, strict):
    """strict mode: each of `inputs` (outputs, first gradients, Jacobian or Hessian entries) must
    depend on the inputs of the user function, else torch's error for that stage."""
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:  # only for grad_inputs
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}."
                " This is not allowed in strict mode."
            )
        if inp.requires_grad:
            continue
        if input_type == "hessian":
            raise RuntimeError(
                f"The hessian of the user-provided function with respect to input {i}"
                " is independent of the input. This is not allowed in strict mode."
                " You should ensure that your function is thrice differentiable and that"
                " the hessian depends on the inputs."
            )
        if input_type == "jacobian":
            raise RuntimeError(
                "While computing the hessian, found that the jacobian of the user-provided"
                f" function with respect to input {i} is independent of the input. This is not"
                " allowed in strict mode. You should ensure that your function is twice"
                " differentiable and that the jacobian depends on the inputs (this would be"
                " violated by a linear function for example)."
            )
        if input_type == "grad_inputs":
            raise RuntimeError(
                f"The gradient with respect to input {i} is independent of the inputs of the"
                " user-provided function. This is not allowed in strict mode."
            )
        raise RuntimeError(
            f"Output {i} of the user-provided function does not require gradients."
            " The outputs must be computed in a differentiable manner from the input"
            " when running in strict mode."
        )


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """`autograd.grad` that skips outputs which are None or do not require grad, and answers None
    for every input when no output is left (no engine call at all)."""
    from .engine import grad as _grad
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    new_outputs, new_grad_outputs = (), ()
    for out, grad_out in zip(outputs, grad_outputs):
        if out is not None and out.requires_grad:
            new_outputs += (out,)
            new_grad_outputs += (grad_out,)
    if not new_outputs:
        return (None,) * len(inputs)
    return _grad(new_outputs, inputs, new_grad_outputs, allow_unused=True, create_graph=create_graph,
                 retain_graph=retain_graph)


_STRICT_NONE = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in strict mode.",
    "back_trick": (
        "The gradient with respect to the input is independent of entry {i} in the grad_outputs when using the"
        " double backward trick to compute forward mode gradients. This is not allowed in strict mode."
    ),
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed in strict mode.",
    "double_back_trick": (
        "The hessian of the user-provided function is independent of entry {i} in the grad_jacobian. This is not"
        " allowed in strict mode as it prevents from using the double backward trick to replace forward mode AD."
    ),
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    """None gradients become zeros shaped like `refs` (the mathematical value), unless strict mode
    says an independent input is an error; with create_graph, a result without history is one too."""
    from .._creation import zeros_like
    res = ()
    for i, grads_i in enumerate(grads):
        if grads_i is None:
            if strict:
                raise RuntimeError(_STRICT_NONE[stage].format(i=i))
            grads_i = zeros_like(refs[i])
        elif strict and create_graph and not grads_i.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(
                f"The {what} of the user-provided function is independent of "
                f"input {i}. This is not allowed in strict mode when create_graph=True."
            )
        res += (grads_i,)
    return res


def _single_element_v_error(fn_returns):
    if fn_returns:
        return RuntimeError(
            "The vector v can only be None if the user-provided function returns a single Tensor with a single element."
        )
    return RuntimeError(
        "The vector v can only be None if the input to the user-provided function is a single Tensor with a single element."
    )


# ----- public API -----

def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), vᵀ·J): the vector-Jacobian product at `inputs`, one backward pass.

    `v` has the shape of func's output (it may be left out when that output has one element);
    the result has the shape of the inputs. With `strict=True` an input the outputs do not depend on
    is an error instead of a zero result."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, outputs, is_outputs_tuple)
        elif len(outputs) != 1 or outputs[0].nelement() != 1:
            raise _single_element_v_error(True)

    with set_grad_enabled(True if create_graph else _C.is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")

    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_inputs_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J·v): the Jacobian-vector product, by the double-backward trick.

    The first backward pass, seeded with a dummy `u` that requires grad, records g(u) = uᵀ·J, which is
    linear in u; differentiating g(u) with respect to u along `v` gives J·v. `u`'s value never matters
    (zeros, as torch), so the result is exact; it costs two backward passes instead of one forward-mode
    pass."""
    from .._creation import zeros_like
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        if v is not None:
            _, v = _as_tuple(v, "v", "jvp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, inputs, is_inputs_tuple)
        elif len(inputs) != 1 or inputs[0].nelement() != 1:
            raise _single_element_v_error(False)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        grad_outputs = tuple(zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)

    with set_grad_enabled(True if create_graph else _C.is_grad_enabled()):
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")

    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_outputs_tuple)


def _vectorize_unsupported(fn_name):
    return NotImplementedError(
        f"minigrad.autograd.functional.{fn_name}: vectorize=True needs batched gradients (vmap), which "
        "minigrad does not have. Use vectorize=False (the default): one backward pass per output element."
    )


def _jacfwd(func, inputs, strict, vectorize):
    if strict:
        raise RuntimeError(
            "minigrad.autograd.functional.jacobian: `strict=True` "
            'and `strategy="forward-mode"` are not supported together (yet). '
            "Please either set `strict=False` or "
            '`strategy="reverse-mode"`.'
        )
    _as_tuple(inputs, "inputs", "jacobian")
    if vectorize:
        raise NotImplementedError(
            "minigrad.autograd.functional.jacobian: forward-mode AD needs vmap and dual tensors, which "
            'minigrad does not have. Use strategy="reverse-mode" (the default).'
        )
    # torch's text, missing space included
    raise NotImplementedError(
        "Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
        "only implemented for `vectorize=True`."
    )


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of `func` at `inputs`: for output i and input j a tensor of shape
    `outputs[i].shape + inputs[j].shape` (nested tuples as the arguments were tuples or not).

    Reverse mode, one backward pass per output element (`retain_graph=True` between them); an input
    an output does not depend on gets zeros, or an error with `strict=True`."""
    from .._ops.linalg import stack
    from .._creation import zeros_like
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more performant. '
            'Otherwise, prefer to use "reverse-mode".'
        )
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                "minigrad.autograd.functional.jacobian: `create_graph=True` "
                'and `strategy="forward-mode"` are not supported together (yet). '
                "Please either set `create_graph=False` or "
                '`strategy="reverse-mode"`.'
            )
        return _jacfwd(func, inputs, strict, vectorize)

    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict=strict)

        if vectorize:
            if strict:
                raise RuntimeError(
                    "minigrad.autograd.functional.jacobian: `strict=True` "
                    "and `vectorized=True` are not supported together. "
                    "Please either set `strict=False` or "
                    "`vectorize=False`."
                )
            raise _vectorize_unsupported("jacobian")

        jacobian = ()
        for i, out in enumerate(outputs):
            rows = tuple([] for _ in inputs)
            flat = out.reshape(-1)
            for j in range(out.nelement()):
                vj = _autograd_grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
                for el_idx, (rows_el, vj_el, inp_el) in enumerate(zip(rows, vj, inputs)):
                    if vj_el is not None:
                        if strict and create_graph and not vj_el.requires_grad:
                            # torch names the output index here
                            raise RuntimeError(
                                "The jacobian of the user-provided function is "
                                f"independent of input {i}. This is not allowed in "
                                "strict mode when create_graph=True."
                            )
                        rows_el.append(vj_el)
                    else:
                        if strict:
                            raise RuntimeError(
                                f"Output {i} of the user-provided function is "
                                f"independent of input {el_idx}. This is not allowed in "
                                "strict mode."
                            )
                        rows_el.append(zeros_like(inp_el))
            jacobian += (
                tuple(stack(rows_el, dim=0).view(out.size() + inputs[el_idx].size())
                      for el_idx, rows_el in enumerate(rows)),
            )
        jacobian = _grad_postprocess(jacobian, create_graph)
        return _tuple_postprocess(jacobian, (is_outputs_tuple, is_inputs_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar `func` at `inputs`: the Jacobian of its gradient. For inputs i and j
    a tensor of shape `inputs[i].shape + inputs[j].shape`."""
    from .._tensor import Tensor
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.nelement() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        return out.squeeze()

    def jac_func(*inp):
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _scalar_function_outputs(func, inputs, fn_name):
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", fn_name)
    return is_outputs_tuple, outputs


def _check_single_output(is_outputs_tuple, outputs, fn_name):
    if is_outputs_tuple or not isinstance(outputs[0], _Tensor()):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a single element")


def _prepare_second_order(func, inputs, v, create_graph, strict, fn_name):
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, inputs, is_inputs_tuple)
    elif len(inputs) != 1 or inputs[0].nelement() != 1:
        raise RuntimeError(
            "The vector v can only be None if the input to the user-provided function "
            "is a single Tensor with a single element."
        )
    is_outputs_tuple, outputs = _scalar_function_outputs(func, inputs, fn_name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    _check_single_output(is_outputs_tuple, outputs, fn_name)
    jac = _autograd_grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict=strict)
    return is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), vᵀ·H) for a scalar `func`: backward through the gradient, seeded with `v`."""
    with enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac = _prepare_second_order(
            func, inputs, v, create_graph, strict, "vhp")

    with set_grad_enabled(True if create_graph else _C.is_grad_enabled()):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")

    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_inputs_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H·v) for a scalar `func`, by the double-backward trick on top of the gradient
    (three backward passes: for a twice continuously differentiable function `vhp` gives the same
    numbers with two)."""
    from .._creation import zeros_like
    with enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac = _prepare_second_order(
            func, inputs, v, create_graph, strict, "hvp")
        grad_jac = tuple(zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)

    with set_grad_enabled(True if create_graph else _C.is_grad_enabled()):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")

    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_inputs_tuple)
