"""Anomaly mode: backward errors name the forward call that made the failing node, backward
results are checked for NaN, and (beyond torch) a version error names the in-place op and the
line that modified the saved tensor, and the line that saved it (mutation blame)."""

import os
import traceback
import warnings

from .. import _C

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled"]

is_anomaly_enabled = _C.is_anomaly_enabled
is_anomaly_check_nan_enabled = _C.is_anomaly_check_nan_enabled

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_ENABLED_WARNING = (
    "Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
    "enabled for debugging."
)


def _user_stack():
    """The Python stack without minigrad's own frames (what the user wrote)."""
    frames = [f for f in traceback.extract_stack()[:-1] if not f.filename.startswith(_PACKAGE_DIR)]
    return "".join(traceback.format_list(frames))


def _user_line():
    """`file:line: source` of the innermost user frame."""
    frames = [f for f in traceback.extract_stack()[:-1] if not f.filename.startswith(_PACKAGE_DIR)]
    if not frames:
        return ""
    f = frames[-1]
    return f"{f.filename}:{f.lineno}: {(f.line or '').strip()}"


def _trace():
    # The node trace is the full user stack; blame entries read best as one line, so the core
    # asks for the stack and blame keeps its last line (see _format_blame in the core).
    return _user_line() if _C.is_anomaly_enabled() else ""


_C._set_trace_fn(_trace)


class detect_anomaly:
    """Context manager enabling anomaly detection (check_nan like torch's)."""

    def __init__(self, check_nan=True):
        self.prev = _C.is_anomaly_enabled()
        self.prev_check_nan = _C.is_anomaly_check_nan_enabled()
        self.check_nan = check_nan
        warnings.warn(_ENABLED_WARNING, UserWarning, stacklevel=2)

    def __enter__(self):
        _C._set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc):
        _C._set_anomaly_enabled(self.prev, self.prev_check_nan)
        return False


class set_detect_anomaly:
    """Switches anomaly detection on or off, at once or for a `with` block."""

    def __init__(self, mode, check_nan=True):
        self.prev = _C.is_anomaly_enabled()
        self.prev_check_nan = _C.is_anomaly_check_nan_enabled()
        _C._set_anomaly_enabled(bool(mode), check_nan)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _C._set_anomaly_enabled(self.prev, self.prev_check_nan)
        return False
