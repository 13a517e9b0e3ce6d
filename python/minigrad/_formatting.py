"""repr(tensor), formatted as torch formats it."""


def tensor_repr(t):
    body = repr(t.tolist())
    suffix = "" if t.dtype in _DEFAULT_DTYPES else f", dtype={t.dtype!r}"
    return f"tensor({body}{suffix})"


from . import _C  # noqa: E402

_DEFAULT_DTYPES = (_C.float32, _C.int64, _C.bool)
