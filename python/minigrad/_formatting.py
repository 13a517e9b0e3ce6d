"""repr(tensor), formatted as torch formats it, and the print options that steer it.

The rules (torch 2.13's, reproduced here from its observable behaviour):

* One formatter per tensor decides the width of every element, so columns line up.
* Floats look only at their nonzero finite values: if all are whole numbers the tensor prints in
  "int mode" (`1.`, `-3.`); scientific notation is used when max/min > 1000, max > 1e8 or
  min < 1e-4 (or when `sci_mode` forces it); otherwise fixed notation with `precision` digits.
  Integers and bools print as Python does (`True`, `-3`), right-aligned to the widest.
* More than `threshold` elements are summarised: each dim longer than 2*edgeitems keeps its first
  and last `edgeitems` entries around `...`; the formatter then sees only the kept values.
* A row wraps at `linewidth`; dims of rank k are separated by k-1 blank lines; nested rows are
  indented one column per level under `tensor(`.
* Suffixes: `size=` for empty tensors that are not 1-d (and for edgeitems=0 summaries), `dtype=`
  when the dtype is not float32 (non-empty int64 and bool also omit it), then grad_fn or
  requires_grad; each goes on a new line when it would pass `linewidth`.
"""

import dataclasses
import math
from contextlib import contextmanager

from . import _C


@dataclasses.dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: object = None


PRINT_OPTS = _PrintOptions()

_PROFILES = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80),
}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """torch.set_printoptions: a profile first, then explicit options; sci_mode is always set."""
    if profile is not None and profile in _PROFILES:
        for k, v in _PROFILES[profile].items():
            setattr(PRINT_OPTS, k, v)
    for name, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            setattr(PRINT_OPTS, name, value)
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions():
    return dataclasses.asdict(PRINT_OPTS)


@contextmanager
def printoptions(**kwargs):
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


# A summarised-away stretch of entries inside the nested data.
_ELLIPSIS = object()


def _gather(t, summarize):
    """The tensor's values as nested lists; summarised dims hold `_ELLIPSIS` between the edges."""
    if t.dim() == 0 or not summarize:
        return t.tolist()
    edge, n = PRINT_OPTS.edgeitems, t.shape[0]
    if not edge:
        return [_ELLIPSIS]
    if n <= 2 * edge:
        if t.dim() == 1:
            return t.tolist()
        return [_gather(t.select(0, i), summarize) for i in range(n)]
    if t.dim() == 1:
        return t.narrow(0, 0, edge).tolist() + [_ELLIPSIS] + t.narrow(0, n - edge, edge).tolist()
    head = [_gather(t.select(0, i), summarize) for i in range(edge)]
    tail = [_gather(t.select(0, i), summarize) for i in range(n - edge, n)]
    return head + [_ELLIPSIS] + tail


def _flat(data, out):
    if isinstance(data, list):
        for d in data:
            _flat(d, out)
    elif data is not _ELLIPSIS:
        out.append(data)
    return out


class _Formatter:
    """Decides how every element of one tensor prints (mode and common width)."""

    def __init__(self, values, floating):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        prec = PRINT_OPTS.precision
        if not floating:
            for v in values:
                self.width = max(self.width, len(str(v)))
            return
        finite = [v for v in values if math.isfinite(v) and v != 0]
        if not finite:
            return
        absolute = [abs(v) for v in finite]
        lo, hi = min(absolute), max(absolute)
        self.int_mode = all(v == math.ceil(v) for v in finite)
        if PRINT_OPTS.sci_mode is None:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        else:
            self.sci_mode = PRINT_OPTS.sci_mode
        if self.sci_mode:
            lengths = (len(f"{v:.{prec}e}") for v in finite)
        elif self.int_mode:
            lengths = (len(f"{v:.0f}") + 1 for v in finite)
        else:
            lengths = (len(f"{v:.{prec}f}") for v in finite)
        self.width = max(self.width, max(lengths))

    def format(self, v):
        prec = PRINT_OPTS.precision
        if not self.floating:
            s = str(v)
        elif self.sci_mode:
            s = f"{v:{self.width}.{prec}e}"
        elif self.int_mode:
            s = f"{v:.0f}"
            if math.isfinite(v):
                s += "."
        else:
            s = f"{v:.{prec}f}"
        return " " * (self.width - len(s)) + s


def _render(data, ndim, indent, fmt):
    if ndim == 0:
        return fmt.format(data)
    if ndim == 1:
        items = [" ..." if d is _ELLIPSIS else fmt.format(d) for d in data]
        if items == [" ..."]:
            items = ["..."]
        per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / (fmt.width + 2)))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    parts = ["..." if d is _ELLIPSIS else _render(d, ndim - 1, indent + 1, fmt) for d in data]
    return "[" + ("," + "\n" * (ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _add_suffixes(body, suffixes, indent):
    out = [body]
    last_line = len(body) - body.rfind("\n") + 1
    for s in suffixes:
        if last_line + len(s) + 2 > PRINT_OPTS.linewidth:
            out.append(",\n" + " " * indent + s)
            last_line = indent + len(s)
        else:
            out.append(", " + s)
            last_line += len(s) + 2
    out.append(")")
    return "".join(out)


def type_name(obj):
    """The type's name as torch's messages print it (C's tp_name: "str", "numpy.ndarray")."""
    tp = type(obj)
    return tp.__name__ if tp.__module__ == "builtins" else f"{tp.__module__}.{tp.__name__}"


def _size_str(shape):
    return "size=" + str(tuple(shape))


def tensor_repr(t, plain):
    """repr(t). `plain`: t's class is minigrad.Tensor itself (the caller, Tensor.__repr__, knows; this
    module sits below the class). Plain tensors and Parameters print as `tensor(`, other subclasses
    under their class name."""
    cls = type(t)
    prefix = "tensor(" if plain or cls.__name__ == "Parameter" else f"{cls.__name__}("
    indent = len(prefix)
    suffixes = []
    if t.device.type != "cpu":  # torch names a non-default device first
        suffixes.append(f"device='{t.device}'")
    dtype = t.dtype
    if t.numel() == 0:
        if t.dim() != 1:
            suffixes.append(_size_str(t.shape))
        if dtype != _C.float32:
            suffixes.append(f"dtype={dtype!r}")
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(_size_str(t.shape))
        if dtype not in _DEFAULT_DTYPES:
            suffixes.append(f"dtype={dtype!r}")
        summarize = t.numel() > PRINT_OPTS.threshold
        data = _gather(t, summarize)
        fmt = _Formatter(_flat(data, []), dtype.is_floating_point)
        body = _render(data, t.dim(), indent, fmt)
    try:
        grad_fn = getattr(t, "grad_fn", None)
        name = None if grad_fn is None else grad_fn.name() if callable(getattr(grad_fn, "name", None)) else type(grad_fn).__name__
    except RuntimeError:
        # reading grad_fn regenerates a stale view's node, which may raise (a multi-output view
        # whose base was modified in place): torch prints the tensor with `<Invalid>`
        grad_fn, name = True, "Invalid"
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{name}>")
    elif getattr(t, "requires_grad", False):
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)


_DEFAULT_DTYPES = (_C.float32, _C.int64, _C.bool)
