"""`minigrad.device`: where a tensor lives. This build computes on the CPU."""


class device:
    __slots__ = ("type", "index")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        if ":" in type:
            type, idx = type.split(":", 1)
            index = int(idx)
        if type not in ("cpu", "cuda"):
            raise RuntimeError(
                "Expected one of cpu, cuda device type at start of device string: " + type
            )
        self.type, self.index = type, index

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))


CPU = device("cpu")


def check_device(dev):
    """Accepts None/'cpu'; a CUDA device raises a clear error until the GPU backend exists."""
    if dev is None:
        return CPU
    d = device(dev) if not isinstance(dev, device) else dev
    if d.type != "cpu":
        raise RuntimeError(
            f"minigrad: device '{d}' is not available: this build runs on the CPU only "
            "(the CuPy backend is installed with `pip install minigrad[cuda]` on a machine with a GPU)"
        )
    return d
