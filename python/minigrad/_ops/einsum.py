"""`minigrad.einsum(equation, *operands)`, also in torch's sublist form
`einsum(op1, [0, 1], op2, [1, 2], [0, 2])` and with the operands as one list. The equation is
parsed and computed in `_C` (rust/py/src/composite.rs -> rust/core/src/ops/einsum.rs), as
torch's ATen einsum does, so its graph and errors are torch's."""

from .. import _C
from ._args import type_name
from .registry import function


def _subscript(n):
    if n is Ellipsis:
        return "..."
    if 0 <= n < 26:
        return chr(ord("A") + n)
    if 26 <= n < 52:
        return chr(ord("a") + n - 26)
    raise ValueError("einsum(): subscript in subscript list is not within the valid range [0, 52)")


@function
def einsum(*args):
    """Sums of products over the labelled dims of `operands`, as `equation` says
    (`"ij,jk->ik"` is a matrix product, `"ii"` a trace, `"...ij->...ji"` a batched transpose)."""
    if len(args) < 2:
        raise ValueError(
            "einsum(): must specify the equation string and at least one operand, "
            "or at least one operand and its subscripts list"
        )
    if isinstance(args[0], _C.TensorBase):
        # the sublist form: operand, subscripts, operand, subscripts, ..., [output subscripts]
        equation = ",".join("".join(_subscript(s) for s in sub) for sub in args[1::2])
        if len(args) % 2 == 1:
            equation += "->" + "".join(_subscript(s) for s in args[-1])
            operands = args[:-1:2]
        else:
            operands = args[::2]
    else:
        equation, operands = args[0], args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        return einsum(equation, *operands[0])
    if isinstance(equation, bytes):
        equation = equation.decode("latin-1")  # torch's binding reads bytes as the equation's text
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): argument 'equation' (position 1) must be str, not {type_name(equation)}")
    for i, op in enumerate(operands):
        if not isinstance(op, _C.TensorBase):
            raise TypeError(f"expected Tensor as element {i} in argument 1, but got {type_name(op)}")
    return _C.einsum(equation, list(operands))
