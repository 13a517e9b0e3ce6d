"""Model code written once against torch's API: each builder takes the library module
(`torch` or `minigrad`), so the same network runs in both."""

from ._case import Skip

NN_NEEDED = ("nn.Module", "nn.Sequential", "nn.Linear", "nn.ReLU", "nn.Conv2d", "nn.BatchNorm2d",
             "nn.Flatten", "nn.functional.cross_entropy", "nn.functional.conv2d")


def require(lib, names, what="minigrad.nn"):
    """Raises Skip naming what `lib` lacks (the packages are being written in parallel)."""
    missing = []
    for dotted in names:
        obj = lib
        for part in dotted.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                break
        if obj is None:
            missing.append(dotted)
    if missing:
        raise Skip(f"{what} is not available (minigrad lacks {', '.join(missing)})")


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
    return NN_NEEDED + ("nn.AdaptiveAvgPool2d" if adaptive_pool(mg) else "nn.MaxPool2d",)
