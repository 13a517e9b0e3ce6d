"""`minigrad.nn`: modules, parameters and functional ops with torch's names and defaults."""

from . import functional  # noqa: F401
