"""A small conv net with a residual block and `ReLU(inplace=True)` on the scikit-learn digits.

Run: python examples/convnet_digits.py            (reaches ~98% test accuracy on 2 cores)
     python examples/convnet_digits.py --backend torch

`ReLU(inplace=True)` overwrites its input. That is safe after a BatchNorm or a convolution,
whose backward does not need their outputs; the residual block adds the skip connection
*before* the last in-place ReLU, so no saved tensor is modified (try moving it to see the
version-counter error, identical to torch's).
"""

from digits import backend, load, parse_args, train


def build(lib):
    nn = lib.nn

    class ResidualBlock(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(channels)
            self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(channels)
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += x                  # in place on a fresh tensor: AddBackward0 saves nothing
            return self.relu(out)

    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1, bias=False),
        nn.BatchNorm2d(16),
        nn.ReLU(inplace=True),
        ResidualBlock(16),
        nn.MaxPool2d(2),              # 8x8 -> 4x4
        nn.Flatten(),
        nn.Linear(16 * 4 * 4, 10),
    )


def main():
    args = parse_args(__doc__.splitlines()[0], epochs=5, lr=1e-2)
    lib = backend(args.backend)
    lib.manual_seed(args.seed)
    model = build(lib)
    print(model)
    opt = lib.optim.Adam(model.parameters(), lr=args.lr)
    return train(lib, model, opt, load(args.seed), args.epochs, args.batch_size, args.seed, shape=(-1, 1, 8, 8))


if __name__ == "__main__":
    main()
