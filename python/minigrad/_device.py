"""`minigrad.device`: where a tensor lives.

Device strings are parsed as torch parses them (`type[:index]`, torch's list of device types),
so a typo fails with torch's words. "cpu" always holds tensors; "cuda" does when
`minigrad.cuda.is_available()`, and otherwise fails saying which piece is missing."""

import builtins
import re

from ._cuda_probe import require as _require_cuda

# torch's device types, in the order its error message lists them
_TYPES = (
    "cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia", "xla",
    "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone",
)
_PATTERN = re.compile(r"([a-zA-Z_]+)(?::([1-9]\d*|0))?")


class device:
    __slots__ = ("type", "index")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        elif isinstance(type, int) and not isinstance(type, bool):
            if type < 0:
                raise RuntimeError("Device index must not be negative")
            type, index = "cuda", type
        elif not isinstance(type, str):
            raise TypeError(
                f"device() received an invalid combination of arguments - got ({builtins.type(type).__name__}), "
                "but expected one of:\n"
                " * (minigrad.device device)\n * (str type, int index = -1)\n"
            )
        else:
            m = _PATTERN.fullmatch(type)
            if not m:
                raise RuntimeError(f"Invalid device string: '{type}'")
            if m.group(1) not in _TYPES:
                raise RuntimeError(
                    f"Expected one of {', '.join(_TYPES)} device type at start of device string: {m.group(1)}"
                )
            if m.group(2) is not None:
                if index is not None:
                    raise RuntimeError(f"type (string) must not include an index because index was passed explicitly: {type}")
                index = int(m.group(2))
            type = m.group(1)
        if index is not None and index < 0:
            index = None
        self.type, self.index = type, index

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))


CPU = device("cpu")


def check_device(dev):
    """The device `dev` names (None is the CPU), once it is known to be usable: a CUDA device
    without CuPy, a GPU or the engine's CUDA backend raises a RuntimeError naming what is
    missing; a device type minigrad has no backend for raises too."""
    if dev is None:
        return CPU
    d = dev if isinstance(dev, device) else device(dev)
    if d.type == "cuda":
        _require_cuda(d.index)
        return device("cuda", d.index or 0)
    if d.type != "cpu":
        raise RuntimeError(f"minigrad: device type '{d.type}' is not supported (minigrad computes on 'cpu' and 'cuda')")
    return CPU
