"""The pieces of `minigrad.nn.functional`, one file per family; `nn/functional.py` re-exports them."""
