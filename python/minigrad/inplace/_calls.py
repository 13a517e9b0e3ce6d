"""Seeing each in-place call of one forward pass (and each call that has an in-place twin), and
running chosen ones in their other form.

What is seen, while `Recorder.active()` is in force:

* a Tensor method that writes into `self` (`relu_`, `add_`, `+=`, `x[i] = v`, ...) or one with an
  in-place twin (`relu`, `add`, `+`, ...), when the program being audited calls it (its caller is
  outside the minigrad package, or is `minigrad.<name>(...)` called from outside);
* the activations of `nn.functional` that take `inplace=` (and their `_` forms), from anywhere,
  so `nn.ReLU(inplace=True)` is seen as the `F.relu(input, inplace=True)` its forward calls.

Calls made inside a seen call (the kernels' own helpers) are not seen. The methods are swapped in
through `_ops.registry.intercept`; the activations by replacing the names in `nn.functional` for
the block. Both are restored when the block ends; an audit is therefore not thread-safe.

A call is identified by its position among the seen calls of the pass (`index`), which is the
same in every run of the same program; `flip` names the positions that run in their other form.
"""

import dis
import inspect
import linecache
import os
import sys
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field

from .. import _C
from .._ops import registry
from ..memory import allocated
from ..nn import functional as F

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

# The in-place methods whose twin is a view (no memory to save) or a result of another dtype
# (comparisons, logical and bitwise ops): audited when called in place, never proposed as one.
_NOT_PROPOSED = {
    "t_", "transpose_", "swapaxes_", "squeeze_", "unsqueeze_", "as_strided_",
    "eq_", "ne_", "lt_", "le_", "gt_", "ge_", "greater_", "greater_equal_", "less_", "less_equal_",
    "not_equal_", "logical_and_", "logical_or_", "logical_xor_", "logical_not_",
    "bitwise_and_", "bitwise_or_", "bitwise_xor_", "bitwise_not_", "__iand__", "__ior__", "__ixor__",
}

_OPERATOR_SYMBOLS = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "pow": "**",
    "and": "&", "or": "|", "xor": "^", "matmul": "@",
}

# nn.functional activations: name -> (twin function name, in-place by its `inplace` argument?)
# `relu_` & co. are in place by name; their twin is the plain function.
FUNCTIONAL = {
    "relu": ("relu", True), "leaky_relu": ("leaky_relu", True), "elu": ("elu", True),
    "silu": ("silu", True), "dropout": ("dropout", True),
    "relu_": ("relu", False), "leaky_relu_": ("leaky_relu", False), "elu_": ("elu", False),
}


def method_names():
    """(in-place method -> twin, out-of-place method -> in-place twin) for the methods seen."""
    inplace = registry.inplace_methods()
    proposable = {twin: name for name, twin in inplace.items() if twin and name not in _NOT_PROPOSED}
    return inplace, proposable


@dataclass
class Call:
    """One seen call, as it ran in one pass. Byte counts come from the allocator."""

    index: int
    op: str                  # the method or function as written: "relu_", "__iadd__", "F.relu"
    label: str               # how a reader knows it: "relu_", "+=", "F.relu(inplace=True)"
    inplace: bool            # in place as written
    twin: str = None         # the other form's label, None where there is none
    flipped: bool = False    # ran in its other form in this pass
    where: str = None        # "file:line" of the program's line that made the call
    code: str = None         # that line's text
    module_path: str = None  # the innermost module running, as named_modules() names it ("0.relu")
    module: str = None       # and what it is ("ReLU(inplace=True)")
    statement: bool = None   # the caller drops the result (`x.relu_()` as a statement)
    nbytes: int = 0          # bytes of the tensor written (or that would be written)
    version_before: int = None
    version_after: int = None
    call_bytes: int = 0      # bytes the call allocated that were still allocated when it returned
    error: str = None        # what the as-written form raised (it then ran in its other form)
    flip_error: str = None   # what the flipped form raised (it then ran as written)
    state: str = None        # the written tensor shares memory with this input/parameter/buffer
    target: object = field(default=None, repr=False)  # the tensor written; kept only when asked
    node_after: object = field(default=None, repr=False)  # its grad_fn after the call; kept likewise

    def release(self):
        """Drops the tensor and node this record holds (before backward, which frees saves)."""
        self.target = self.node_after = None

    @property
    def ran_in_place(self):
        """Whether this pass wrote in place (as written, unless flipped or redirected)."""
        return self.inplace != self.flipped


class Recorder:
    """Records the seen calls of one pass; `flip` holds the indices to run in their other form;
    `keep_targets` keeps the written tensors (for matching saved tensors to writes; it holds them
    alive, so passes that measure memory leave it off); `state` is [(name, tensor)] of the
    inputs, parameters and buffers, to say when a write would land in one of them."""

    def __init__(self, flip=(), keep_targets=False, state=(), stop_code=None):
        self.flip = set(flip)
        self.keep_targets = keep_targets
        self.state = list(state)
        self.stop_code = stop_code
        self.calls = []
        self.modules = []
        self._depth = 0
        self._inplace, self._proposable = method_names()
        self._forwarding = registry.forwarding_code()

    @contextmanager
    def active(self, model=None):
        with ExitStack() as stack:
            names = sorted(set(self._inplace) | set(self._proposable))
            stack.enter_context(registry.intercept(names, self._method))
            stack.enter_context(_replaced_functionals(self._functional))
            if model is not None and hasattr(model, "named_modules"):
                for name, module in model.named_modules():
                    stack.enter_context(_module_scope(module, name, self.modules))
            yield self

    # ----- the two entry points -----

    def _method(self, name, original, self_t, args, kwargs):
        if self._depth or not self._called_by_program():
            return original(self_t, *args, **kwargs)
        inplace = name in self._inplace
        twin = self._inplace[name] if inplace else self._proposable[name]

        def run(in_place):
            method = original if in_place == inplace else getattr(type(self_t), twin)
            return method(self_t, *args, **kwargs)

        return self._call(name, _method_label(name), _method_label(twin) if twin else None, inplace, self_t, run)

    def _functional(self, name, original, args, kwargs):
        if self._depth:
            return original(*args, **kwargs)
        twin_name, by_argument = FUNCTIONAL[name]
        bound = inspect.signature(original).bind(*args, **kwargs)
        bound.apply_defaults()
        if name == "dropout" and (not bound.arguments["training"] or bound.arguments["p"] == 0):
            return original(*args, **kwargs)  # the identity: nothing is written or allocated
        inplace = bool(bound.arguments["inplace"]) if by_argument else True

        def run(in_place):
            if in_place == inplace:
                return original(*args, **kwargs)
            if by_argument:
                bound.arguments["inplace"] = in_place
                return original(*bound.args, **bound.kwargs)
            return _ORIGINALS[twin_name](*args, **kwargs)  # relu_(x, ...) out of place: relu(x, ...)

        label = f"F.{name}" + ("(inplace=True)" if by_argument and inplace else "")
        other = f"F.{twin_name}" + ("(inplace=True)" if not inplace else "")
        return self._call(f"F.{name}", label, other, inplace, bound.arguments.get("input"), run)

    # ----- recording -----

    def _call(self, op, label, twin_label, inplace, target, run):
        index = len(self.calls)
        call = Call(index=index, op=op, label=label, inplace=inplace, twin=twin_label)
        self.calls.append(call)
        call.flipped = index in self.flip and twin_label is not None
        self._describe(call, target)
        before = allocated()
        self._depth += 1
        try:
            result = self._run(call, run)
        finally:
            self._depth -= 1
        call.call_bytes = allocated() - before
        if isinstance(target, _C.TensorBase):
            call.version_after = target._version
            if self.keep_targets:
                call.node_after = target.grad_fn
        return result

    def _run(self, call, run):
        in_place = call.inplace != call.flipped
        try:
            return run(in_place)
        except RuntimeError as e:
            if not in_place or call.twin is None:  # the program's own error: it ends the pass
                if call.inplace and not call.flipped:
                    call.error = _first_line(e)
                raise
            # the in-place form refused (a leaf, a view that may not be written, a shape or dtype
            # it cannot hold): report it, and go on out of place so the rest of the pass is seen
            if call.flipped:
                call.flip_error = _first_line(e)
            else:
                call.error = _first_line(e)
            call.flipped = not call.flipped
            return run(not in_place)

    def _describe(self, call, target):
        frame = self._program_frame()
        if frame is not None:
            call.where = f"{_short_path(frame.f_code.co_filename)}:{frame.f_lineno}"
            call.code = " ".join(linecache.getline(frame.f_code.co_filename, frame.f_lineno).split()) or None
            call.statement = _result_dropped(frame)
        if self.modules:
            call.module_path, module = self.modules[-1]
            call.module = _module_repr(module)
        if isinstance(target, _C.TensorBase):
            call.nbytes = target.numel() * target.element_size()
            call.version_before = target._version
            call.state = next((name for name, t in self.state if target._shares_storage(t)), None)
            if self.keep_targets:
                call.target = target

    # ----- where a call comes from -----

    def _called_by_program(self):
        """True when the method's caller is the audited program (not minigrad's own code)."""
        frame = sys._getframe(3)  # _method <- registry wrapper <- the caller
        while frame is not None and frame.f_code is self._forwarding:
            frame = frame.f_back
        return frame is not None and not frame.f_code.co_filename.startswith(PACKAGE_DIR)

    def _program_frame(self):
        """The innermost frame of the audited program, inside the model's call; None when the call
        came from minigrad's own modules all the way up (an `nn.Sequential` of them)."""
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code is self.stop_code:
                return None
            if not frame.f_code.co_filename.startswith(PACKAGE_DIR):
                return frame
            frame = frame.f_back
        return None


_ORIGINALS = {}  # nn.functional's own functions, while they are replaced


@contextmanager
def _replaced_functionals(hook):
    originals = {name: getattr(F, name) for name in FUNCTIONAL}
    _ORIGINALS.update(originals)

    def replacement(name, original):
        def function(*args, **kwargs):
            return hook(name, original, args, kwargs)
        function.__name__ = name
        function.__doc__ = original.__doc__
        return function

    try:
        for name, original in originals.items():
            setattr(F, name, replacement(name, original))
        yield
    finally:
        for name, original in originals.items():
            setattr(F, name, original)
        _ORIGINALS.clear()


@contextmanager
def _module_scope(module, path, stack):
    """Keeps `stack` at the modules whose forward is running (innermost last)."""
    def enter(mod, args):
        stack.append((path, mod))

    def leave(mod, args, out):
        if stack and stack[-1][1] is mod:
            stack.pop()

    handles = [module.register_forward_pre_hook(enter), module.register_forward_hook(leave, always_call=True)]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def _module_repr(module):
    extra = module.extra_repr() if hasattr(module, "extra_repr") else ""
    return f"{type(module).__name__}({extra})" if "\n" not in extra else type(module).__name__


def _method_label(name):
    if name == "__setitem__":
        return "x[...] = v"
    if name.startswith("__i") and name[3:-2] in _OPERATOR_SYMBOLS:
        return _OPERATOR_SYMBOLS[name[3:-2]] + "="
    if name.startswith("__") and name[2:-2] in _OPERATOR_SYMBOLS:
        return _OPERATOR_SYMBOLS[name[2:-2]]
    return name


def _first_line(error):
    """`Type: message`, the message's first line without torch's closing hint."""
    text = str(error).split("\n")[0].split(" Hint: ")[0]
    return f"{type(error).__name__}: {text}"


def _short_path(path):
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _result_dropped(frame):
    """Whether the instruction after the running call throws the result away (`x.relu_()` as a
    statement): read from the caller's bytecode; None when it cannot be told."""
    try:
        instructions = _instructions(frame.f_code)
    except (TypeError, ValueError):
        return None
    # f_lasti is the running call instruction, or (3.11) the last of its inline cache entries,
    # which dis does not list: the call is the last instruction starting at or before it
    at = max((k for k, i in enumerate(instructions) if i.offset <= frame.f_lasti), default=None)
    if at is None or at + 1 >= len(instructions):
        return None
    return instructions[at + 1].opname == "POP_TOP"


_CODE_CACHE = {}


def _instructions(code):
    if code not in _CODE_CACHE:
        _CODE_CACHE[code] = list(dis.get_instructions(code))
    return _CODE_CACHE[code]
