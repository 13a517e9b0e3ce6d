"""Exception classes torch defines beyond Python's builtins."""


class OutOfMemoryError(RuntimeError):
    """A device allocation failed (torch.OutOfMemoryError / torch.cuda.OutOfMemoryError): the
    message gives the size asked for and what the device's pool holds. Nothing allocated before
    is lost; free tensors (or `minigrad.cuda.empty_cache()`) and retry."""
