"""An MLP on the scikit-learn digits: the torch training loop, line for line, on minigrad.

Run: python examples/mlp_digits.py            (about 15 s on 2 cores; reaches ~97% test accuracy)
     python examples/mlp_digits.py --backend torch   (the same program on torch, to compare)
"""

from digits import backend, load, parse_args, train


def build(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Linear(64, 128),
        nn.ReLU(inplace=True),      # safe here: Linear's backward does not need its output
        nn.Linear(128, 64),
        nn.ReLU(inplace=True),
        nn.Linear(64, 10),
    )


def main():
    args = parse_args(__doc__.splitlines()[0], epochs=20, lr=0.05)
    lib = backend(args.backend)
    lib.manual_seed(args.seed)
    model = build(lib)
    print(model)
    opt = lib.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    acc = train(lib, model, opt, load(args.seed), args.epochs, args.batch_size, args.seed)
    return acc


if __name__ == "__main__":
    main()
