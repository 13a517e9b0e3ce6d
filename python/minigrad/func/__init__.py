"""`minigrad.func`: torch.func's function transforms `grad`, `grad_and_value` and `vjp` (no vmap).

torch.func wraps every tensor of a transform in a per-level wrapper, so that the graph a transform
records inside is invisible outside it. minigrad has no wrappers; it gets the same results from
ordinary autograd:

* each differentiated argument becomes a fresh tensor for the function: a differentiable alias
  (`view_as`) when the caller's tensor requires grad (so nested transforms and an outer `backward()`
  still reach it), a detached leaf that requires grad otherwise;
* gradients are taken with `create_graph=True`, as torch.func does, so `grad(grad(f))` works (and
  with `retain_graph=True`: torch.func's enclosing levels keep their own graph of the forward pass;
  minigrad has one graph, which the enclosing transform walks again);
* on the way out, a result keeps its history only if that history reaches a tensor from outside the
  transform (an input that required grad, a weight captured by closure, a cotangent that requires
  grad); a result that depends only on the transform's own leaves is detached. Under `no_grad()` at
  the call, every result is detached, as torch.func ignores an outer `no_grad` for the inside and
  respects it for the outside.

The graph of a kept result has one more node than torch's (the `ViewBackward0` of the alias).
"""

from .. import _C
from ..autograd.grad_mode import enable_grad
from ..utils._pytree import tree_flatten, tree_map, tree_unflatten, treespec_pprint

__all__ = ["grad", "grad_and_value", "vjp"]


def _Tensor():
    from .._tensor import Tensor
    return Tensor


class _Level:
    """One transform call: the leaves it made (internal) and whether the caller had grad mode on."""

    def __init__(self):
        self.outer_grad = _C.is_grad_enabled()
        self.internal = []

    def make_differentiable(self, x):
        if not isinstance(x, _Tensor()):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
        if self.outer_grad and x.requires_grad:
            return x.view_as(x)
        leaf = x.detach().requires_grad_()
        self.internal.append(leaf)
        return leaf

    def _is_internal(self, t):
        return any(t is leaf for leaf in self.internal)

    def _reaches_outside(self, t):
        """Does `t`'s history reach a leaf that requires grad and was not made by this call?"""
        fn = t.grad_fn
        if fn is None:
            return t.requires_grad and not self._is_internal(t)
        seen, stack, keep = {id(fn)}, [fn], [fn]
        while stack:
            node = stack.pop()
            for nxt, _ in node.next_functions:
                if nxt is None or id(nxt) in seen:
                    continue
                seen.add(id(nxt))
                keep.append(nxt)  # ids stay unique while the nodes are alive
                if _C._is_accumulate(nxt):
                    if not self._is_internal(nxt.variable):
                        return True
                else:
                    stack.append(nxt)
        return False

    def unwrap(self, t):
        if not isinstance(t, _Tensor()):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(t)}")
        if not t.requires_grad:
            return t
        if self.outer_grad and self._reaches_outside(t):
            return t
        return t.detach()


def _autograd_grad(outputs, inputs, grad_outputs=None, retain_graph=False, create_graph=True):
    """autograd.grad over the outputs that require grad; zeros for inputs nothing reaches."""
    from .._creation import zeros_like
    from ..autograd import grad as _grad
    if grad_outputs is None:
        diff_outputs = tuple(out for out in outputs if out.requires_grad)
    else:
        pairs = [(out, go) for out, go in zip(outputs, grad_outputs) if out.requires_grad]
        diff_outputs = tuple(p[0] for p in pairs)
        grad_outputs = tuple(p[1] for p in pairs)
    if not diff_outputs:
        return tuple(zeros_like(inp) for inp in inputs)
    grads = _grad(diff_outputs, inputs, grad_outputs, retain_graph=retain_graph, create_graph=create_graph,
                  allow_unused=True)
    return tuple(zeros_like(inp) if g is None else g for g, inp in zip(grads, inputs))


# ----- argnums -----

def _validate_and_wrap_argnum(argnum, num_args):
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if 0 <= argnum < num_args:
        return argnum
    if -num_args <= argnum < 0:
        return argnum + num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def _wrap_argnums(argnums, num_args):
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    if isinstance(argnums, int):
        return _validate_and_wrap_argnum(argnums, num_args)
    wrapped = tuple(_validate_and_wrap_argnum(a, num_args) for a in argnums)
    if len(wrapped) == 0:
        raise RuntimeError("argnums must be non-empty")
    if len(set(wrapped)) != len(wrapped):
        raise RuntimeError(f"argnums elements must be unique, got {wrapped}")
    return wrapped


# ----- grad and grad_and_value -----

def _grad_and_value(func, argnums, has_aux, args, kwargs):
    from .._tensor import Tensor
    level = _Level()
    with enable_grad():
        argnums = _wrap_argnums(argnums, len(args))
        positions = (argnums,) if isinstance(argnums, int) else argnums
        args = list(args)
        for i in positions:
            args[i] = tree_map(level.make_differentiable, args[i])
        diff_args = args[argnums] if isinstance(argnums, int) else tuple(args[i] for i in argnums)

        output = func(*args, **kwargs)
        aux = None
        if has_aux:
            if not (isinstance(output, tuple) and len(output) == 2):
                raise RuntimeError(
                    "grad_and_value(f)(*args): output of function f should be a tuple: (output, aux) "
                    "if has_aux is True"
                )
            output, aux = output
        if not isinstance(output, Tensor):
            raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(output)}")
        if output.dim() != 0:
            raise RuntimeError(
                "grad_and_value(f)(*args): Expected f(*args) "
                "to return a scalar Tensor, got tensor with "
                f"{output.dim()} dims. Maybe you wanted to "
                "use the vjp or jacrev APIs instead?"
            )
        flat_diff_args, spec = tree_flatten(diff_args)
        # retain_graph: torch.func's outer levels keep their own graphs of this forward pass; here there
        # is one graph, and an enclosing transform differentiates through the same nodes again
        flat_grads = _autograd_grad((output,), flat_diff_args, retain_graph=True, create_graph=True)
        grad_input = tree_map(level.unwrap, tree_unflatten(flat_grads, spec))
        output = level.unwrap(output)
        if has_aux:
            aux = tree_map(level.unwrap, aux)
    if has_aux:
        return grad_input, (output, aux)
    return grad_input, output


def grad_and_value(func, argnums=0, has_aux=False):
    """`grad_and_value(f)(*args)` returns `(gradient, f(*args))` for a scalar-valued `f` (with
    `has_aux=True`, `f` returns `(output, aux)` and the value is `(output, aux)`)."""
    def wrapper(*args, **kwargs):
        return _grad_and_value(func, argnums, has_aux, args, kwargs)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """`grad(f)(*args)`: the gradient of a scalar-valued `f` with respect to `args[argnums]` (an int
    or a tuple of ints; each argument may be a nested tuple/list/dict of tensors). Composes:
    `grad(grad(f))(x)` is the second derivative."""
    def wrapper(*args, **kwargs):
        results = _grad_and_value(func, argnums, has_aux, args, kwargs)
        if has_aux:
            g, (_, aux) = results
            return g, aux
        return results[0]
    return wrapper


# ----- vjp -----

def vjp(func, *primals, has_aux=False):
    """`(func(*primals), vjp_fn)`; `vjp_fn(cotangents)` returns the vector-Jacobian products, one per
    primal. The cotangents have the structure of func's output. `vjp_fn` keeps the graph
    (`retain_graph=True`) so it can be called again; its `create_graph` defaults to whether grad mode
    is on when it is called."""
    from .._tensor import Tensor
    level = _Level()
    with enable_grad():
        primals = tree_map(level.make_differentiable, primals)
        primals_out = func(*primals)
        aux = None
        if has_aux:
            if not (isinstance(primals_out, tuple) and len(primals_out) == 2):
                raise RuntimeError(
                    "vjp(f, *primals): output of function f should be a tuple: (output, aux) if has_aux is True"
                )
            primals_out, aux = primals_out
            aux = tree_map(level.unwrap, aux)
        flat_primals_out, primals_out_spec = tree_flatten(primals_out)
        if (len(flat_primals_out) == 1 and flat_primals_out[0] is None) or len(flat_primals_out) < 1:
            raise RuntimeError(
                f"vjp(f, *primals): Expected f to be a function that has non-empty output (got output = {flat_primals_out})"
            )
        for o in flat_primals_out:
            if not isinstance(o, Tensor):
                raise RuntimeError(
                    f"vjp(f, *primals): expected f(*primals) to return only tensors, got unsupported type {type(o)}"
                )
        flat_diff_primals, primals_spec = tree_flatten(primals)
        results = tree_map(level.unwrap, primals_out)
        for o in flat_primals_out:
            if not o.is_floating_point():
                raise RuntimeError(
                    "vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got Tensor "
                    f"with dtype {o.dtype}"
                )

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        if create_graph is None:
            create_graph = _C.is_grad_enabled()
        flat_cotangents, cotangents_spec = tree_flatten(cotangents)
        if primals_out_spec != cotangents_spec:
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree structure of outputs to "
                f"the function. cotangents: {treespec_pprint(cotangents_spec)}, "
                f"primal output: {treespec_pprint(primals_out_spec)}"
            )
        result = _autograd_grad(flat_primals_out, flat_diff_primals, flat_cotangents,
                                retain_graph=retain_graph, create_graph=create_graph)
        if create_graph:
            result = tuple(level.unwrap(r) for r in result)
        return tree_unflatten(result, primals_spec)

    if has_aux:
        return results, vjp_fn, aux
    return results, vjp_fn
