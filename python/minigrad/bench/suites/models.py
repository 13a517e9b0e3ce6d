"""Model code written once against torch's API: each builder takes the library module
(`torch` or `minigrad`), so the same network runs in both."""

import importlib

from ._case import Skip

# the modules and the functional ops they call
CONVNET_NEEDS = ("nn.Module", "nn.Sequential", "nn.Linear", "nn.ReLU", "nn.Conv2d", "nn.BatchNorm2d", "nn.Flatten",
                 "nn.functional.conv2d", "nn.functional.batch_norm")


def require(lib, names, what="minigrad.nn"):
    """Raises Skip naming what `lib` lacks (the packages are being written in parallel)."""
    missing, broken = [], {}
    for dotted in names:
        first, *rest = dotted.split(".")
        obj = _submodule(lib, first, broken)
        for part in rest:
            obj = getattr(obj, part, None)
        if obj is None:
            missing.append(dotted)
    if missing:
        why = "".join(f"; importing {name} failed: {err}" for name, err in broken.items())
        raise Skip(f"{what} is not available (minigrad lacks {', '.join(missing)}{why})")


def _submodule(lib, name, broken):
    """`lib.name`, importing the subpackage first if the package does not import it itself; a
    subpackage that exists but fails to import is noted in `broken` (that is a bug to show)."""
    obj = getattr(lib, name, None)
    if obj is None and hasattr(lib, "__path__"):  # a package: the subpackage may be importable
        full = f"{lib.__name__}.{name}"
        try:
            obj = importlib.import_module(full)
        except ModuleNotFoundError as e:
            if e.name != full:
                broken[full] = f"{type(e).__name__}: {e}"
        except ImportError as e:
            broken[full] = f"{type(e).__name__}: {e}"
    return obj


def mlp(lib, sizes=(784, 256, 256, 10), inplace=True):
    nn = lib.nn
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU(inplace=inplace))
    return nn.Sequential(*layers)


def convnet(lib, inplace=True, adaptive_pool=True, channels=16, classes=10):
    """The examples' conv net: stem conv + BatchNorm + ReLU, one residual block, global pool,
    linear head; for 8x8 single-channel digits."""
    nn = lib.nn

    class Residual(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
            self.relu1 = nn.ReLU(inplace=inplace)
            self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
            self.relu2 = nn.ReLU(inplace=inplace)

        def forward(self, x):
            return self.relu2(self.conv2(self.relu1(self.conv1(x))) + x)

    pool = nn.AdaptiveAvgPool2d(1) if adaptive_pool else nn.MaxPool2d(8)
    return nn.Sequential(
        nn.Conv2d(1, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU(inplace=inplace),
        Residual(), pool, nn.Flatten(), nn.Linear(channels, classes),
    )


def adaptive_pool(mg):
    """Every library builds the same network: the global pool is AdaptiveAvgPool2d(1) if
    minigrad has it, else MaxPool2d(8) (the input is 8x8)."""
    return hasattr(getattr(mg, "nn", None), "AdaptiveAvgPool2d")


def convnet_needs(mg):
    if adaptive_pool(mg):
        return CONVNET_NEEDS + ("nn.AdaptiveAvgPool2d", "nn.functional.adaptive_avg_pool2d")
    return CONVNET_NEEDS + ("nn.MaxPool2d", "nn.functional.max_pool2d")
