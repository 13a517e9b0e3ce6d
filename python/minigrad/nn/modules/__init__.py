"""torch.nn's module classes, one file per family (as torch/nn/modules)."""
