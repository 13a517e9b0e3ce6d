"""Differential tests of autograd's in-place, version-counter and view rules (R1-R62).

Each rule of the reference catalog (torch 2.13.0's observed behaviour) is a snippet in
`autograd_rule_snippets.py`, written against a module named `torch`. Every snippet is run twice, once
with `torch` bound to torch and once with it bound to minigrad, and the two outputs (prints, warnings,
final exception) must be identical after `normalize`. A second test pins torch's own output to the
text recorded next to the snippet, so a changed snippet (or torch) cannot silently make both sides
agree on something else.

To see what torch prints for a rule (e.g. after editing its snippet):
    python tests/test_autograd_rules.py R10 R22
"""

import builtins
import contextlib
import importlib
import io
import re
import sys
import warnings

import pytest
import torch

import minigrad as mg
from autograd_rule_snippets import RULES

RULES_BY_ID = {r.id: r for r in RULES}

# Every rule of the catalog that concerns ops minigrad has. Left out on purpose (see the comments in
# autograd_rule_snippets.py): R5, R25, R46 (out= arguments), R9 (autograd.graph.increment_version),
# R17 (saved_tensors_hooks), R56 (no snippet; it refers to R18).
COVERED = {f"R{i}" for i in range(1, 63)} - {"R5", "R9", "R17", "R25", "R46", "R56"}


# ----- running a snippet -----

def _import_hook(lib):
    """`__import__` for snippets: `torch` and `torch.x.y` resolve inside `lib` (so that
    `from torch.autograd.graph import get_gradient_edge` takes minigrad's under minigrad)."""
    real_import = builtins.__import__

    def hook(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and (name == "torch" or name.startswith("torch.")):
            target = lib.__name__ + name[len("torch"):]
            if not fromlist:
                return lib
            try:
                return importlib.import_module(target)
            except ImportError:  # an attribute path rather than a module
                obj = lib
                for part in name.split(".")[1:]:
                    obj = getattr(obj, part)
                return obj
        return real_import(name, globals, locals, fromlist, level)

    return hook


_TRIGGERED = re.compile(r" \(Triggered internally at .*?:\d+\.\)")
_ANOMALY_TRACEBACK = "Traceback of forward call that caused the error:"


def _strip_variable(message):
    """Drops the parts of a warning that depend on the build or the call site: torch's
    `(Triggered internally at <file>:<line>.)` suffix and an anomaly warning's forward traceback."""
    message = _TRIGGERED.sub("", message)
    cut = message.find(_ANOMALY_TRACEBACK)
    if cut >= 0:
        message = message[: cut + len(_ANOMALY_TRACEBACK)]
    return message


def _reset_global_state(lib, grad_enabled):
    """A snippet that raised may leave grad mode or anomaly mode switched; the next must not see it."""
    if lib.is_grad_enabled() != grad_enabled:
        lib.set_grad_enabled(grad_enabled)
    is_anomaly_enabled = getattr(lib, "is_anomaly_enabled", None)
    if is_anomaly_enabled is not None and is_anomaly_enabled():
        lib.autograd.set_detect_anomaly(False)


def run_snippet(src, lib):
    """Executes `src` with `torch` bound to `lib`; returns its output in the catalog's format: stdout,
    then `Warning <Category>: <message>` per warning, then `<Type>: <message>` for an exception."""
    snippet_builtins = dict(vars(builtins), __import__=_import_hook(lib))
    namespace = {"torch": lib, "__name__": "__snippet__", "__builtins__": snippet_builtins}
    grad_enabled = lib.is_grad_enabled()
    stdout = io.StringIO()
    exc = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with contextlib.redirect_stdout(stdout):
            try:
                exec(compile(src, "<snippet>", "exec"), namespace)
            except Exception as e:  # noqa: BLE001 - the exception is part of the output
                exc = e
            finally:
                _reset_global_state(lib, grad_enabled)
    lines = []
    out = stdout.getvalue().rstrip("\n")
    if out:
        lines.append(out)
    lines += [f"Warning {w.category.__name__}: {_strip_variable(str(w.message))}" for w in caught]
    if exc is not None:
        lines.append(f"{type(exc).__name__}: {exc}")
    return "\n".join(lines)


# `torch.FloatTensor`, `torch.Size([2])`, `torch.float32`, `torch.autograd.set_detect_anomaly` name the
# library; minigrad says `minigrad.` there (docs/divergences.md). C++ node names such as
# `torch::autograd::CopySlices` are the same in both and are left alone, as are `pytorch` and paths
# like `torch/optim/optimizer.py` inside torch's messages.
_LIBRARY_NAME = re.compile(r"\btorch\.(?=[A-Za-z_])")


def normalize(output):
    """Output of `run_snippet` with the library's own name spelled `minigrad.`. Applied to both sides,
    so a minigrad message that still says `torch.FloatTensor` is not told apart from one saying
    `minigrad.FloatTensor` (tests/parity.py's message comparison does the same)."""
    return _LIBRARY_NAME.sub("minigrad.", output)


def assert_same_output(mg_out, torch_out, compare):
    m, t = normalize(mg_out), normalize(torch_out)
    if compare == "exact":
        assert m == t, f"minigrad printed:\n{m}\n\ntorch printed:\n{t}"
        return
    assert compare == "prefix", compare
    # every torch line starts a minigrad line, in order (minigrad may say more on a line, or add lines)
    m_lines = iter(m.splitlines())
    for line in t.splitlines():
        assert any(ml.startswith(line) for ml in m_lines), (
            f"torch's line\n{line}\nbegins no later line of minigrad's output:\n{m}\n\ntorch printed:\n{t}"
        )


# ----- the tests -----

RULE_PARAMS = [pytest.param(r, id=r.id) for r in RULES]


@pytest.mark.parametrize("rule", RULE_PARAMS)
def test_rule_same_output_as_torch(rule):
    """The snippet prints, warns and raises under minigrad exactly what it does under torch."""
    torch_out = run_snippet(rule.code, torch)
    mg_out = run_snippet(rule.code, mg)
    assert_same_output(mg_out, torch_out, rule.compare)


@pytest.mark.parametrize("rule", RULE_PARAMS)
def test_rule_torch_reference(rule):
    """torch 2.13.0 still prints the recorded output: the snippet tests what its rule says."""
    assert run_snippet(rule.code, torch) == rule.torch_output


def test_covered_rule_ids():
    """A rule dropped from (or added twice to) the snippet table fails here, not silently."""
    ids = [r.id for r in RULES]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    assert set(ids) == COVERED


if __name__ == "__main__":
    for rid in sys.argv[1:] or RULES_BY_ID:
        print(f"== {rid}\n{run_snippet(RULES_BY_ID[rid].code, torch)}")


def test_backward_of_an_integer_tensor_given_a_history_stops_as_torch_does():
    # fill_ with a float tensor that requires grad gives even an int tensor FillBackward3
    # (torch's quirk); a backward pass from it then stops at torch's internal assertion
    import minigrad
    import torch

    outcomes = []
    for lib in (torch, minigrad):
        x = lib.tensor(0)
        x.fill_(lib.tensor(0.0, requires_grad=True))
        assert x.requires_grad and x.grad_fn.name() == "FillBackward3"
        with pytest.raises(RuntimeError) as e:
            x.backward(gradient=lib.full((), 1.0, dtype=x.dtype))
        outcomes.append(str(e.value))
        # ... and so does one that reaches it through another op's gradient edge
        y = lib.zeros(2, 3, requires_grad=True) + x
        with pytest.raises(RuntimeError) as e:
            y.sum().backward()
        outcomes.append(str(e.value))
    assert outcomes[:2] == outcomes[2:]
