"""Internals of `minigrad.utils.data`, laid out as torch's (`_utils.collate`, `_utils.fetch`)."""

from . import collate, fetch  # noqa: F401
