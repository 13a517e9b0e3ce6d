"""`minigrad audit module:callable` (also `python -m minigrad audit ...`): audits the in-place ops
of the model that `callable()` returns, as `minigrad.audit` does, and prints the report.

`callable()` returns `(model, example_inputs)`, where `example_inputs` is one tensor or a tuple
of the model's arguments. `module` is a module name importable from the current directory
(`examples.nets`) or the path of a Python file (`examples/nets.py`). The exit status is 1 when
an in-place op is unsafe or raises, 2 for a usage error, 0 otherwise.
"""

import argparse
import importlib
import importlib.util
import json
import os
import sys

from .. import _C
from ._audit import audit


def build_parser():
    p = argparse.ArgumentParser(
        prog="minigrad audit",
        description="Audit the in-place ops of one forward+backward: which are safe, which break "
                    "backward, the multi-branch hazard, and the bytes each saves.",
    )
    p.add_argument("target", metavar="module:callable",
                   help="a callable returning (model, example_inputs); module is a dotted name or a .py path")
    p.add_argument("--json", metavar="FILE", help="also write the report as JSON (report.to_dict())")
    p.add_argument("--no-propose", action="store_true",
                   help="do not try out-of-place ops in place (fewer passes)")
    p.add_argument("--seed", type=int, default=0, help="seed for minigrad's generator before each pass (default 0)")
    return p


def load(target):
    """The callable named by `module:callable`."""
    module_name, sep, attr = target.rpartition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"expected module:callable, got {target!r}")
    if module_name.endswith(".py") or os.sep in module_name:
        path = os.path.abspath(module_name)
        if not os.path.isfile(path):
            raise ValueError(f"no such file: {module_name}")
        sys.path.insert(0, os.path.dirname(path))  # so the file's own imports resolve
        spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        module = importlib.import_module(module_name)
    try:
        fn = getattr(module, attr)
    except AttributeError:
        raise ValueError(f"{module_name} has no attribute {attr!r}") from None
    if not callable(fn):
        raise ValueError(f"{target} is not callable")
    return fn


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        fn = load(args.target)
    except (ValueError, ImportError) as e:
        parser.error(str(e))
    made = fn()
    if not (isinstance(made, tuple) and len(made) == 2):
        parser.error(f"{args.target}() must return (model, example_inputs), got {type(made).__name__}")
    model, inputs = made
    inputs = (inputs,) if isinstance(inputs, _C.TensorBase) else tuple(inputs)
    report = audit(model, *inputs, propose=not args.no_propose, seed=args.seed)
    print(report)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report.to_dict(), f, indent=1, default=str)
    return 1 if report.unsafe else 0
