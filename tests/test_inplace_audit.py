"""`minigrad.audit`: its verdicts checked against what torch actually does.

Each model is written once against the library (`lib` is torch or minigrad) with one flag per
*site* (a call the auditor sees: an in-place op, or an out-of-place op with an in-place form),
saying whether that site runs in place. minigrad's audit of the model as written gives a verdict
per site; torch then runs the same model with chosen sites in place:

* the sites the audit calls safe, all in place together: torch's backward runs;
* each site it calls unsafe (or "raises"), in place beside the safe ones: torch raises (the
  version error in backward, or the in-place error at once, with the same words);
* each multi-branch site found by reading after the write: torch's results change when that site
  is made out of place;
* each out-of-place site it says could be in place: in place, torch runs and gives the same
  outputs and gradients; one it says must stay out of place: in place, torch raises, changes the
  results, or overwrites the model's input.
"""

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import minigrad

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


# ----- models with a flag per site -----

def seq_activations(lib, f):
    nn = lib.nn
    return nn.Sequential(
        nn.Linear(6, 8), nn.Sigmoid(), nn.ReLU(inplace=f[0]),          # sigmoid's backward reads its output
        nn.Linear(8, 8), nn.Tanh(), nn.ReLU(inplace=f[1]),             # so does tanh's
        nn.Linear(8, 8), nn.ReLU(inplace=f[2]),                        # Linear saves its input, not its output
        nn.Linear(8, 8), nn.BatchNorm1d(8), nn.LeakyReLU(0.1, inplace=f[3]),
        nn.Linear(8, 8), nn.ReLU(inplace=f[4]),                        # as written out of place ...
        nn.Dropout(0.3, inplace=f[5]),                                 # ... and ReLU saves its output
        nn.Linear(8, 8), nn.ELU(inplace=f[6]),
        nn.Linear(8, 8), nn.SiLU(inplace=f[7]),                        # as written out of place
        nn.Linear(8, 3),
    )


def branch(lib, f):
    """Two branches read h: sin saves it for backward, then relu_ overwrites it."""
    class Branch(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(6, 6)

        def forward(self, x):
            h = self.fc(x)
            s = h.sin_() if f[0] else h.sin()
            h = h.relu_() if f[1] else h.relu()
            return s, h
    return Branch()


def read_after(lib, f):
    """R60: the second branch reads h after relu_ wrote it (no error, different gradients)."""
    F = lib.nn.functional

    class ReadAfter(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(6, 6)

        def forward(self, x):
            h = self.fc(x)
            y = F.relu(h, inplace=f[0])
            z = h.mul_(10) if f[1] else h * 10
            return y, z
    return ReadAfter()


def exp_then_add(lib, f):
    """R14: exp_ saves its result, the tensor itself; the next in-place op overwrites it."""
    class ExpAdd(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(6, 6)

        def forward(self, x):
            h = self.fc(x)
            h = h.exp_() if f[0] else h.exp()
            h = h.add_(1) if f[1] else h.add(1)
            return h.tanh_() if f[2] else h.tanh()
    return ExpAdd()


def self_alias(lib, f):
    """R15: x.mul_(x) saves x as `other` before writing it."""
    class SelfAlias(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(6, 6)

        def forward(self, x):
            h = self.fc(x)
            return h.mul_(h) if f[0] else h.mul(h)
    return SelfAlias()


def leaf_and_input(lib, f):
    """R22: relu_ on a parameter raises at once; `x * w` in place would write the caller's x."""
    class LeafInput(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = lib.nn.Parameter(lib.ones(6) * 0.5)

        def forward(self, x):
            w = self.w.relu_() if f[0] else self.w.relu()
            return x.mul_(w) if f[1] else x * w
    return LeafInput()


def view_write(lib, f):
    """In place on a view of sigmoid's output, which SigmoidBackward0 saved."""
    class ViewWrite(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(6, 6)

        def forward(self, x):
            h = self.fc(x)
            s = h.sigmoid_() if f[0] else h.sigmoid()
            v = s[:, :2]
            v = v.mul_(2) if f[1] else v.mul(2)
            return s, v
    return ViewWrite()


FLAG_MODELS = {
    "seq_activations": (seq_activations, [True, True, True, True, False, True, True, False]),
    "branch": (branch, [False, True]),
    "read_after": (read_after, [True, False]),
    "exp_then_add": (exp_then_add, [True, True, False]),
    "self_alias": (self_alias, [True]),
    "leaf_and_input": (leaf_and_input, [True, False]),
    "view_write": (view_write, [False, True]),
}

X = np.random.default_rng(0).standard_normal((5, 6)).astype(np.float32)


def _input(lib, shape=None):
    data = X if shape is None else np.random.default_rng(1).random(shape).astype(np.float32)
    return lib.from_numpy(data.copy())


def _sites(report, count):
    sites = sorted(report.inplace + report.proposals, key=lambda op: op.index)
    assert len(sites) == count, [(s.index, s.label) for s in sites]
    return sites


class TorchPass:
    """forward+backward of a torch model: the error (and at which stage), or the results."""

    def __init__(self, model, inputs):
        before = [x.clone() for x in inputs]
        self.error = self.stage = None
        self.outputs, self.grads = [], []
        try:
            out = model(*inputs)
        except RuntimeError as e:
            self.error, self.stage = str(e), "forward"
            return
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        loss = sum(o.sum() for o in outs if o.requires_grad)
        try:
            loss.backward()
        except RuntimeError as e:
            self.error, self.stage = str(e), "backward"
            return
        self.outputs = [o.detach().clone() for o in outs]
        self.grads = [p.grad.clone() if p.grad is not None else None for p in model.parameters()]
        self.input_changed = any(not torch.equal(b, x.detach()) for b, x in zip(before, inputs))

    def same_results(self, other):
        pairs = list(zip(self.outputs, other.outputs)) + list(zip(self.grads, other.grads))
        return all((a is None and b is None) or (a is not None and b is not None and torch.allclose(a, b, 1e-5, 1e-6))
                   for a, b in pairs)


def _forward_name(node):
    """torch's error-message name of a node: SigmoidBackward0 -> Sigmoid, MaxBackward1 -> Max1."""
    head, _, n = node.rpartition("Backward")
    return head if n == "0" else head + n


def check_against_torch(report, run_torch, fixed=frozenset()):
    """The assertions of the module docstring; `run_torch(in_place)` runs torch with those sites
    in place and the others out of place, except the `fixed` sites, which stay as written."""
    safe = {op.index for op in report.inplace if op.safe}
    fixed = set(fixed)
    if all(op.safe for op in report.inplace if op.index in fixed):
        assert run_torch(safe | fixed).error is None, "torch raises with only the safe sites in place"
    for op in report.inplace:
        if op.index in fixed:
            continue
        t = run_torch(safe | fixed | {op.index})
        if op.safe:
            assert t.error is None, (op.label, t.error)
            continue
        assert t.error is not None, f"the audit calls {op.label} at {op.pointer()} {op.verdict}, torch runs it"
        if op.verdict == "raises":
            assert t.stage == "forward"
            assert op.reasons[0] == "RuntimeError: " + t.error.replace("torch.", "minigrad.")
            continue
        assert t.stage == "backward" and "modified by an inplace operation" in t.error, t.error
        named = {_forward_name(s["node"]) for s in op.overwrites if s["is_output"]}
        readers = {_forward_name(s["node"]) for s in op.overwrites if not s["is_output"]}
        if named:  # a saved result: torch names the op that saved it
            assert any(f"of {n}," in t.error for n in named), (named, t.error)
        elif op.multi_branch:  # a saved input: torch names the tensor's grad_fn now, not the reader
            assert not any(f"of {n}," in t.error for n in readers), (readers, t.error)
    for op in report.inplace:
        if op.multi_branch and op.safe and op.index not in fixed:
            with_write = run_torch(safe | fixed)
            without = run_torch((safe | fixed) - {op.index})
            assert not with_write.same_results(without), f"{op.label}: torch's results do not depend on the write"
    for p in report.proposals:
        if p.verdict == "not checked":
            continue
        base, trial = run_torch(safe | fixed), run_torch(safe | fixed | {p.index})
        if p.verdict == "yes":
            assert trial.error is None and trial.same_results(base) and not trial.input_changed, (p.label, trial.error)
        elif "overwrite the example input" in p.reason:
            assert trial.error is not None or trial.input_changed
        elif "raises" in p.reason:
            assert trial.error is not None, (p.label, p.reason)
        else:
            assert trial.error is None and not trial.same_results(base), (p.label, p.reason)


def _audit_flag_model(name):
    build, written = FLAG_MODELS[name]
    minigrad.manual_seed(0)
    report = minigrad.audit(build(minigrad, list(written)), _input(minigrad))

    def run_torch(in_place):
        torch.manual_seed(0)
        return TorchPass(build(torch, [k in in_place for k in range(len(written))]), [_input(torch)])

    return report, run_torch, written


@pytest.mark.parametrize("name", sorted(FLAG_MODELS))
def test_verdicts_match_torch(name):
    report, run_torch, written = _audit_flag_model(name)
    sites = _sites(report, len(written))
    assert [s in report.inplace for s in sites] == list(written)  # every in-place site seen as one
    check_against_torch(report, run_torch)


def _verdicts(report):
    return [(op.label, op.verdict, op.multi_branch) for op in report.inplace]


def test_the_verdicts_themselves():
    """What the audit says about each small model (torch agrees: test_verdicts_match_torch)."""
    r, _, _ = _audit_flag_model("seq_activations")
    assert [v for _, v, _ in _verdicts(r)] == ["unsafe", "unsafe", "safe", "safe", "unsafe", "safe"]
    # judged in the program with the three unsafe ones out of place
    assert r.fixed["backward"] == "runs"
    assert {p.label: p.verdict for p in r.proposals} == {"F.relu": "yes", "F.silu": "yes"}
    r, _, _ = _audit_flag_model("branch")
    assert _verdicts(r) == [("relu_", "unsafe", True)]
    assert r.inplace[0].overwrites[0]["node"] == "SinBackward0" and not r.inplace[0].overwrites[0]["is_output"]
    r, _, _ = _audit_flag_model("read_after")
    assert _verdicts(r) == [("F.relu(inplace=True)", "safe", True)]
    assert r.all_out_of_place["same_results"] is False
    assert [(p.label, p.verdict) for p in r.proposals] == [("*", "no")]
    r, _, _ = _audit_flag_model("exp_then_add")
    assert _verdicts(r) == [("exp_", "safe", False), ("add_", "unsafe", False)]
    r, _, _ = _audit_flag_model("self_alias")
    assert _verdicts(r) == [("mul_", "unsafe", False)]
    r, _, _ = _audit_flag_model("leaf_and_input")
    assert r.inplace[0].verdict == "raises"
    assert r.proposals[0].verdict == "no" and "example input 0" in r.proposals[0].reason
    r, _, _ = _audit_flag_model("view_write")
    assert _verdicts(r) == [("mul_", "unsafe", False)]


def test_proposals_on_a_program_that_runs():
    """With the unsafe sites out of place, the out-of-place sites are judged (and torch agrees)."""
    written = [False, False, True, True, False, False, True, False]
    minigrad.manual_seed(0)
    report = minigrad.audit(seq_activations(minigrad, written), _input(minigrad))
    verdicts = {p.module_path: p.verdict for p in report.proposals}
    # ReLU after Linear could be in place, not after Sigmoid or Tanh; dropout could not write
    # into ReLU's saved output; SiLU after Linear could
    assert verdicts == {"2": "no", "5": "no", "12": "yes", "13": "no", "17": "yes"}

    def run_torch(in_place):
        torch.manual_seed(0)
        return TorchPass(seq_activations(torch, [k in in_place for k in range(8)]), [_input(torch)])
    check_against_torch(report, run_torch)


# ----- the examples' models -----

@pytest.fixture
def examples(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))
    import audit_models
    return audit_models


def _switch(module):
    """The attribute that puts a site of this module in place: `inplace` of the activations,
    `add_in_place` of the moved skip connection (audit_models.skip_after_relu); None: a fixed site."""
    return next((a for a in ("inplace", "add_in_place") if hasattr(module, a)), None)


def _by_path(model, report, in_place, fixed):
    """Switches each site's module: in place where the site is in `in_place`."""
    modules = dict(model.named_modules())
    for op in report.inplace + report.proposals:
        if op.index not in fixed:
            setattr(modules[op.module_path], _switch(modules[op.module_path]), op.index in in_place)
    return model


def _example_case(examples, name):
    import convnet_digits
    import gan_gaussians
    import mlp_digits

    def gan(lib):
        return lib.nn.Sequential(*gan_gaussians.build(lib))

    builders = {
        "mlp": mlp_digits.build, "convnet": convnet_digits.build, "gan": gan,
        "convnet_skip_after_relu": lambda lib: examples.skip_after_relu(convnet_digits.build(lib)),
    }
    model, x = getattr(examples, name)()
    report = minigrad.audit(model, x)
    # sites the audit saw in the program's own code (`out += x`) cannot be switched: they stay
    modules = dict(model.named_modules())
    fixed = {op.index for op in report.inplace + report.proposals if _switch(modules[op.module_path]) is None}

    def run_torch(in_place):
        torch.manual_seed(0)
        m = _by_path(builders[name](torch), report, in_place, fixed)
        return TorchPass(m, [torch.from_numpy(x.numpy().copy())])

    return report, run_torch, fixed


@pytest.mark.parametrize("name", ["mlp", "convnet", "gan", "convnet_skip_after_relu"])
def test_examples_models_against_torch(examples, name):
    report, run_torch, fixed = _example_case(examples, name)
    check_against_torch(report, run_torch, fixed)
    unsafe = [op.label for op in report.inplace if not op.safe]
    assert unsafe == (["+="] if name == "convnet_skip_after_relu" else [])
    assert report.consistent


def test_examples_inplace_relu_saves_an_activation_at_the_call_only(examples):
    """Each ReLU(inplace=True) of the MLP saves its activation at the call, nothing held into
    backward (ReLU saves its output, Linear its input: the input is dropped either way), as the
    benchmark's memory suite found (docs/benchmarks.md)."""
    report, _, _ = _example_case(examples, "mlp")
    batch = 32
    assert [(op.saves.call, op.saves.held, op.saves.peak) for op in report.inplace] == [
        (batch * 128 * 4, 0, 0), (batch * 64 * 4, 0, 0)]


def test_leaky_relu_in_place_saves_what_the_out_of_place_form_holds():
    """Out of place, LeakyReLU saves its input for backward (R11), so the Linear's output stays
    alive into backward beside LeakyReLU's; in place (R14: leaky_relu_ saves its result) it does
    not. The allocator's counters say exactly one activation."""
    nn = minigrad.nn
    minigrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.LeakyReLU(0.2, inplace=True), nn.Linear(16, 2))
    (op,) = minigrad.audit(model, _input(minigrad)).inplace
    assert op.saves.call == op.saves.held == 5 * 16 * 4


# ----- the report -----

def test_findings_point_at_the_source_line():
    report, _, _ = _audit_flag_model("branch")
    (op,) = report.inplace
    assert op.where == f"{Path(__file__).relative_to(Path.cwd()) if Path(__file__).is_relative_to(Path.cwd()) else __file__}:{_line_of('h = h.relu_() if f[1] else h.relu()')}"
    assert op.code == "h = h.relu_() if f[1] else h.relu()"
    line = next(f for f in report.findings() if "UNSAFE" in f)
    assert line.startswith(op.where + ": relu_") and "SinBackward0 saved its input `self`" in line
    text = str(report)
    assert "in-place ops (1):" in text and "HAZARD" in text and line in text


def _line_of(snippet):
    return next(i for i, line in enumerate(Path(__file__).read_text().splitlines(), 1) if snippet in line
                and "_line_of" not in line)


def test_to_dict_is_plain_data():
    import json

    report, _, _ = _audit_flag_model("exp_then_add")
    d = report.to_dict()
    json.dumps(d)
    assert [op["verdict"] for op in d["inplace"]] == ["safe", "unsafe"]
    assert d["inplace"][1]["overwrites"][0]["node"] == "ExpBackward0"
    assert d["inplace"][1]["overwrites"][0]["is_output"] is True
    assert set(d["inplace"][0]["saves"]) == {"call", "held", "peak"}


def test_a_statement_relies_on_its_write():
    """`h.relu_()` as a statement: out of place the result would be dropped; not a hazard."""
    def model(x):
        h = x * 1
        h.relu_()
        return h.exp()

    x = _input(minigrad).requires_grad_()
    (op,) = minigrad.audit(model, x).inplace
    assert op.statement is True and op.safe and not op.multi_branch and op.saves is None
    assert any("relies on the write" in r for r in op.reasons)


# ----- the audit leaves no trace -----

def test_the_model_and_tensor_are_as_they_were():
    nn = minigrad.nn
    minigrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(inplace=True), nn.Linear(8, 2))
    model[0].weight.grad = minigrad.ones(8, 6)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    methods = dict(vars(minigrad.Tensor))
    functional = dict(vars(minigrad.nn.functional))
    x = _input(minigrad)
    x0 = x.clone()
    minigrad.audit(model, x)
    assert all(np.array_equal(state[k].numpy(), v.numpy()) for k, v in model.state_dict().items())
    assert np.array_equal(model[0].weight.grad.numpy(), np.ones((8, 6))) and model[3].weight.grad is None
    assert dict(vars(minigrad.Tensor)) == methods and dict(vars(minigrad.nn.functional)) == functional
    assert np.array_equal(x.numpy(), x0.numpy())


def test_a_model_that_fails_is_reported_and_cleaned_up():
    def model(x):
        raise ValueError("boom")

    methods = dict(vars(minigrad.Tensor))
    report = minigrad.audit(model, _input(minigrad))
    assert report.forward_error == "ValueError: boom"
    assert dict(vars(minigrad.Tensor)) == methods


# ----- the command line -----

def test_cli_audits_a_callable(examples, capsys, tmp_path):
    from minigrad.__main__ import main

    target = f"{EXAMPLES / 'audit_models.py'}:convnet_skip_after_relu"
    assert main(["audit", target, "--json", str(tmp_path / "r.json")]) == 1
    out = capsys.readouterr().out
    assert "UNSAFE" in out and "audit_models.py:" in out and "ReluBackward0 saved its result" in out
    assert (tmp_path / "r.json").read_text().startswith("{")
    assert main(["audit", f"{EXAMPLES / 'audit_models.py'}:mlp"]) == 0
    assert main(["audit", "no_colon"]) == 2
    assert "expected module:callable" in capsys.readouterr().err
    assert main(["audit", f"{EXAMPLES / 'audit_models.py'}:nothing"]) == 2
