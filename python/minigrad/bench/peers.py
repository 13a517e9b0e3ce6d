"""The libraries minigrad is compared with, and clear words when one is missing."""

import importlib

KNOWN = {"torch": "pip install torch", "numpy": "pip install numpy"}


class Peer:
    def __init__(self, name, module):
        self.name, self.module = name, module
        self.version = getattr(module, "__version__", "?")


def parse(text):
    """'torch,numpy' -> ['torch', 'numpy']; raises ValueError naming an unknown peer."""
    names = [t.strip() for t in text.split(",") if t.strip()] if text else []
    for n in names:
        if n not in KNOWN:
            raise ValueError(f"unknown peer '{n}' (choose from {', '.join(KNOWN)})")
    return list(dict.fromkeys(names))


def load(names, say):
    """Imports each peer; a missing one is reported through `say` and left out."""
    peers = {}
    for n in names:
        try:
            peers[n] = Peer(n, importlib.import_module(n))
        except ImportError as e:
            say(f"peer '{n}' is not installed ({e}); comparing without it. Install it with: {KNOWN[n]}")
    return peers
