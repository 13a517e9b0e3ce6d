"""The rules of torch's in-place / version-counter / view autograd semantics, as runnable snippets.

Each entry is one rule (R1..R62) of the reference catalog "torch-inplace-semantics.md" (written against
torch 2.13.0): the rule's Python snippet and the output torch 2.13.0 prints for it. The snippet is
plain code written against a module called `torch`; `tests/test_autograd_rules.py` runs it once with
`torch` bound to torch and once with `torch` bound to minigrad and requires identical output.

Output format (the same as the catalog's "Observed:" blocks): what the snippet printed, then one line
`Warning <Category>: <message>` per Python warning, then `<ExceptionType>: <message>` if it raised.
The variable parts of warnings are already stripped here (the `(Triggered internally at <file>:<line>.)`
suffix, and the traceback of an anomaly-mode warning), as the test does before comparing.

Snippets are copied from the catalog unchanged where minigrad has everything they use. Where a line
needs something minigrad does not have (torch.nn / torch.nn.functional, linalg.eigh, std_mean, out=,
resize_/set_, saved-tensor introspection `grad_fn._saved_*`, ...), that part is rewritten with an
equivalent minigrad has or left out, and a comment starting with "adapted:" says what and why.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    code: str
    torch_output: str
    # "exact": minigrad's output must equal torch's line for line.
    # "prefix": each of torch's lines must begin one of minigrad's lines, in order (used where minigrad
    # deliberately says more than torch: anomaly-mode "mutation blame", see DESIGN "Beyond torch").
    compare: str = "exact"


RULES: list[Rule] = []


def _rule(id, title, code, torch_output, compare="exact"):
    RULES.append(Rule(id, title, code.strip("\n") + "\n", torch_output.strip("\n"), compare))


# =====================================================================================================
# A. Version counters
# =====================================================================================================

_rule("R1", "_version starts at 0 and every in-place op bumps it by exactly 1", r"""
x = torch.zeros(4)
log = [("fresh", x._version)]
# adapted: "add(out=x)" and "uniform_" are left out (minigrad has no out= arguments and no uniform_)
for name, f in [("add_", lambda: x.add_(1)), ("relu_", lambda: x.relu_()), ("zero_", lambda: x.zero_()),
                ("fill_", lambda: x.fill_(2)), ("copy_", lambda: x.copy_(torch.ones(4))),
                ("x[0]=1", lambda: x.__setitem__(0, 1.)), ("x[mask]=0", lambda: x.__setitem__(x > 0, 0.)),
                ("x[1:3]=5", lambda: x.__setitem__(slice(1, 3), 5.)),
                ("x[tensor idx]=3", lambda: x.__setitem__(torch.tensor([0, 2]), 3.)),
                ("+=", lambda: x.__iadd__(1)),
                ("add_(0)", lambda: x.add_(0)), ("copy_(x)", lambda: x.copy_(x)),
                ("mul_(2).add_(1)", lambda: x.mul_(2).add_(1)),
                ("index_add_", lambda: x.index_add_(0, torch.tensor([0]), torch.ones(1))),
                ("masked_fill_", lambda: x.masked_fill_(x > 0, 0.))]:
    v = x._version; f(); log.append((name, x._version - v))
print(log)
print("clone:", x.clone()._version, " out-of-place result:", (x + 1)._version)
""", r"""
[('fresh', 0), ('add_', 1), ('relu_', 1), ('zero_', 1), ('fill_', 1), ('copy_', 1), ('x[0]=1', 1), ('x[mask]=0', 1), ('x[1:3]=5', 1), ('x[tensor idx]=3', 1), ('+=', 1), ('add_(0)', 1), ('copy_(x)', 1), ('mul_(2).add_(1)', 2), ('index_add_', 1), ('masked_fill_', 1)]
clone: 0  out-of-place result: 0
""")

_rule("R2", "compound index assignment can bump more than once", r"""
x = torch.zeros(4)
def d(f):
    v = x._version; f(); return x._version - v
def iadd(idx):
    t = x[idx]; t += 1; x[idx] = t
print("x[0]+=1:", d(lambda: iadd(0)), " x[1:3]+=1:", d(lambda: iadd(slice(1, 3))),
      " x[[0,1]]+=1:", d(lambda: iadd([0, 1])), " x[mask]+=1:", d(lambda: iadd(x > 0)))
""", r"""
x[0]+=1: 2  x[1:3]+=1: 2  x[[0,1]]+=1: 1  x[mask]+=1: 1
""")

_rule("R3", "metadata-changing in-place ops bump too", r"""
z = torch.zeros(2, 3)
def d(f):
    v = z._version; f(); return z._version - v
# adapted: the resize_ and set_ measurements are left out (minigrad has neither)
print("t_", d(lambda: z.t_()), "transpose_", d(lambda: z.transpose_(0, 1)), "unsqueeze_", d(lambda: z.unsqueeze_(0)),
      "squeeze_", d(lambda: z.squeeze_()), "squeeze_ again (no-op)", d(lambda: z.squeeze_()),
      "as_strided_", d(lambda: z.as_strided_((6,), (1,))))
""", r"""
t_ 1 transpose_ 1 unsqueeze_ 1 squeeze_ 1 squeeze_ again (no-op) 1 as_strided_ 1
""")

_rule("R4", "things that do NOT bump the counter", r"""
x = torch.zeros(3)
def d(f):
    v = x._version; f(); return x._version - v
print("requires_grad_()", d(lambda: x.requires_grad_()), "requires_grad_(False)", d(lambda: x.requires_grad_(False)),
      "x.grad=", d(lambda: setattr(x, "grad", torch.ones(3))), "x.data=", d(lambda: setattr(x, "data", torch.ones(3))),
      "x.data.add_", d(lambda: x.data.add_(1)), "numpy write", d(lambda: x.numpy().__setitem__(0, 5.)),
      "detach_", d(lambda: x.detach_()))
""", r"""
requires_grad_() 0 requires_grad_(False) 0 x.grad= 0 x.data= 0 x.data.add_ 0 numpy write 0 detach_ 0
""")

# R5 (out= returns the out tensor and bumps it) is not here: minigrad has no out= arguments.

_rule("R6", "views share the base's counter; non-view results get a fresh one", r"""
x = torch.arange(12.).reshape(3, 4).clone()
views = {"view": x.view(12), "reshape": x.reshape(4, 3), "transpose": x.transpose(0, 1), "t": x.t(),
         "slice": x[1:], "select": x[0], "expand": x[0:1].expand(3, 4), "unsqueeze": x.unsqueeze(0),
         "narrow": x.narrow(1, 1, 2), "diagonal": x.diagonal(), "as_strided": x.as_strided((2,), (1,)),
         "permute": x.permute(1, 0), "unbind[0]": x.unbind(0)[0], "split[0]": x.split(1)[0], "x[...]": x[...],
         "x[None]": x[None], "view of view": x[0][1:]}
copies = {"reshape(non-viewable)": x.t().reshape(12), "x[[0,1]]": x[[0, 1]], "x[mask]": x[x > 3], "clone": x.clone()}
x.add_(1)
print("base:", x._version)
print("views :", {k: (v._version, v._base is x) for k, v in views.items()})
print("copies:", {k: (v._version, v._is_view()) for k, v in copies.items()})
print("contiguous() is x:", x.contiguous() is x, " float() is x:", x.float() is x)
""", r"""
base: 1
views : {'view': (1, True), 'reshape': (1, True), 'transpose': (1, True), 't': (1, True), 'slice': (1, True), 'select': (1, True), 'expand': (1, True), 'unsqueeze': (1, True), 'narrow': (1, True), 'diagonal': (1, True), 'as_strided': (1, True), 'permute': (1, True), 'unbind[0]': (1, True), 'split[0]': (1, True), 'x[...]': (1, True), 'x[None]': (1, True), 'view of view': (1, True)}
copies: {'reshape(non-viewable)': (0, False), 'x[[0,1]]': (0, False), 'x[mask]': (0, False), 'clone': (0, False)}
contiguous() is x: True  float() is x: True
""")

_rule("R7", "detach() shares the counter, .data does not, clone() is fresh", r"""
x = torch.zeros(3); x.add_(1); x.add_(1)
d = x.detach(); print("detach version at creation:", d._version); d.add_(1); print("x after detach().add_:", x._version)
dd = x.data; print(".data version at creation:", dd._version); dd.add_(1); print("x after .data.add_:", x._version, " .data:", dd._version)
print("clone:", x.clone()._version)
# adapted: the last check (a tensor unpacked through grad_fn._saved_result shares the counter) is left
# out: minigrad's nodes do not expose their saved tensors as _saved_* attributes
""", r"""
detach version at creation: 2
x after detach().add_: 3
.data version at creation: 0
x after .data.add_: 3  .data: 1
clone: 0
""")

_rule("R8", "grad mode does not matter for bumping; inference tensors have no counter", r"""
a = torch.ones(2, requires_grad=True)
with torch.no_grad(): a.mul_(2)
print("after no_grad mul_:", a._version, a.is_leaf, a.requires_grad, a.grad_fn)
with torch.inference_mode(): a.mul_(2)
print("after inference_mode mul_:", a._version)
with torch.inference_mode(): t = torch.ones(2)
t._version
""", r"""
after no_grad mul_: 1 True True None
after inference_mode mul_: 2
RuntimeError: Inference tensors do not track version counter.
""")

# R9 (torch.autograd.graph.increment_version) is not here: minigrad has no increment_version.

# =====================================================================================================
# B. Saved tensors and the version check at backward
# =====================================================================================================

_rule("R10", "the version-mismatch error and its variants", r"""
def attempt(f):
    try: f()
    except RuntimeError as e: print(e)
def leaf_saved():
    a = torch.tensor([0.5, 1.5], requires_grad=True); y = a.sin()
    with torch.no_grad(): a.mul_(2)
    y.sum().backward()
def input_saved_rebased():
    a = torch.tensor([0.5, 1.5], requires_grad=True); x = a * 1; y = x.sin(); x.mul_(2); x.mul_(2); x.add_(1)
    y.sum().backward()
def input_saved_nograd_mod():
    a = torch.tensor([0.5, 1.5], requires_grad=True); x = a.max(); y = x.sin()
    with torch.no_grad(): x.mul_(2)
    y.backward()
def output_saved():
    a = torch.tensor([0.5, 1.5], requires_grad=True); y = a.exp(); y.add_(1); y.sum().backward()
def constant_saved():
    a = torch.ones(2, 3, requires_grad=True); w = torch.ones(2, 3, dtype=torch.float64); y = a * w; w.add_(1); y.sum().backward()
def index_saved():
    a = torch.tensor([1., 2.], requires_grad=True); idx = torch.tensor([0, 1]); y = a.gather(0, idx); idx.zero_(); y.sum().backward()
def custom_fn():
    class MyFn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x): return x * 2
        @staticmethod
        def backward(ctx, g): return g * 2
    a = torch.tensor([0.5, 1.5], requires_grad=True); x = MyFn.apply(a); y = x.sin()
    with torch.no_grad(): x.mul_(2)
    y.sum().backward()
# adapted: two cases are left out: output1_saved (needs torch.linalg.eigh, for "output 1 of LinalgEigh")
# and zero_dim_output1_input (needs torch.std_mean); minigrad has neither op
for f in [leaf_saved, input_saved_rebased, input_saved_nograd_mod, output_saved, constant_saved,
          index_saved, custom_fn]:
    attempt(f)
""", r"""
one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [2]] is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).
one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [2]], which is output 0 of Add, is at version 3; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).
one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor []], which is output 0 of Max1, is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).
one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [2]], which is output 0 of Exp, is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).
one of the variables needed for gradient computation has been modified by an inplace operation: [torch.DoubleTensor [2, 3]] is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).
one of the variables needed for gradient computation has been modified by an inplace operation: [torch.LongTensor [2]] is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).
one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [2]], which is output 0 of MyFn, is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).
""")

_rule("R11", "which ops save their input vs their output", r"""
# adapted: the catalog lists each node's tensor-valued grad_fn._saved_* attributes; minigrad's nodes do
# not expose those. The same facts are observed through their consequence instead: for every candidate
# (the inputs a, b, M and the op's result) the op is run afresh, that one tensor is bumped under
# no_grad, and a failing backward shows the node saved it. Left out: gelu, silu, leaky_relu (no
# torch.*/Tensor method for them, and no nn.functional in minigrad) and cumsum (not in minigrad).
def saved_by(f):
    found = []
    for who in ["a", "b", "M", "result"]:
        t = {"a": torch.tensor([0.5, 1.5], requires_grad=True), "b": torch.tensor([2.0, 3.0], requires_grad=True),
             "M": torch.tensor([[1., -2.], [3., 0.5]], requires_grad=True)}
        t["result"] = f(t["a"], t["b"], t["M"])
        with torch.no_grad(): t[who].add_(1)
        try: t["result"].sum().backward()
        except RuntimeError: found.append(who)
    return found
ops = {"sin": lambda a, b, M: a.sin(), "cos": lambda a, b, M: a.cos(), "log": lambda a, b, M: a.log(),
       "pow(t,2)": lambda a, b, M: a.pow(2), "pow(t,t)": lambda a, b, M: a.pow(b), "mul(t,t)": lambda a, b, M: a * b,
       "mul(t,2)": lambda a, b, M: a * 2, "div(t,t)": lambda a, b, M: a / b, "mm": lambda a, b, M: M @ M,
       "mv": lambda a, b, M: M @ a, "abs": lambda a, b, M: a.abs(), "clamp": lambda a, b, M: a.clamp(0, 1),
       "relu": lambda a, b, M: a.relu(), "sigmoid": lambda a, b, M: a.sigmoid(), "tanh": lambda a, b, M: a.tanh(),
       "exp": lambda a, b, M: a.exp(), "sqrt": lambda a, b, M: a.sqrt(), "rsqrt": lambda a, b, M: a.rsqrt(),
       "reciprocal": lambda a, b, M: a.reciprocal(), "expm1": lambda a, b, M: a.expm1(),
       "softmax": lambda a, b, M: a.softmax(0), "log_softmax": lambda a, b, M: a.log_softmax(0),
       "max()": lambda a, b, M: a.max(), "prod": lambda a, b, M: a.prod(), "norm": lambda a, b, M: a.norm(),
       "add": lambda a, b, M: a + b, "sub": lambda a, b, M: a - b, "neg": lambda a, b, M: -a,
       "sum": lambda a, b, M: a.sum(), "mean": lambda a, b, M: a.mean(), "clone": lambda a, b, M: a.clone(),
       "where": lambda a, b, M: torch.where(a > 1, a, b)}
a = torch.tensor([0.5, 1.5], requires_grad=True); b = torch.tensor([2.0, 3.0], requires_grad=True)
M = torch.tensor([[1., -2.], [3., 0.5]], requires_grad=True)
for k, f in ops.items():
    print(f"{k:12s} {f(a, b, M).grad_fn.name():26s} {saved_by(f)}")
""", r"""
sin          SinBackward0               ['a']
cos          CosBackward0               ['a']
log          LogBackward0               ['a']
pow(t,2)     PowBackward0               ['a']
pow(t,t)     PowBackward1               ['a', 'b', 'result']
mul(t,t)     MulBackward0               ['a', 'b']
mul(t,2)     MulBackward0               []
div(t,t)     DivBackward0               ['a', 'b']
mm           MmBackward0                ['M']
mv           MvBackward0                ['a', 'M']
abs          AbsBackward0               ['a']
clamp        ClampBackward1             ['a']
relu         ReluBackward0              ['result']
sigmoid      SigmoidBackward0           ['result']
tanh         TanhBackward0              ['result']
exp          ExpBackward0               ['result']
sqrt         SqrtBackward0              ['result']
rsqrt        RsqrtBackward0             ['result']
reciprocal   ReciprocalBackward0        ['result']
expm1        Expm1Backward0             ['result']
softmax      SoftmaxBackward0           ['result']
log_softmax  LogSoftmaxBackward0        ['result']
max()        MaxBackward1               ['a', 'result']
prod         ProdBackward0              ['a', 'result']
norm         LinalgVectorNormBackward0  ['a', 'result']
add          AddBackward0               []
sub          SubBackward0               []
neg          NegBackward0               []
sum          SumBackward0               []
mean         MeanBackward0              []
clone        CloneBackward0             []
where        WhereBackward0             []
""")

_rule("R12", "modify-input-after vs modify-output-after", r"""
def run(op, which):
    a = torch.tensor([0.5, 1.5], requires_grad=True); x = a.clone(); y = op(x)
    (x if which == "input" else y).mul_(2)
    try:
        y.sum().backward(); return "ok " + str([round(v, 4) for v in a.grad.tolist()])
    except RuntimeError as e:
        return "ERROR (" + str(e).split("which is output 0 of ")[1].split(",")[0] + ")"
for name, op in [("sin", torch.sin), ("pow2", lambda t: t ** 2), ("mul self", lambda t: t * t), ("log", torch.log),
                 ("relu", torch.relu), ("sigmoid", torch.sigmoid), ("tanh", torch.tanh), ("exp", torch.exp),
                 ("sqrt", torch.sqrt), ("add 1", lambda t: t + 1), ("mul 2", lambda t: t * 2), ("neg", torch.neg),
                 ("sum", torch.sum), ("max()", torch.max)]:
    print(f"{name:9s} input-modified: {run(op, 'input'):32s} output-modified: {run(op, 'output')}")
""", r"""
sin       input-modified: ERROR (Mul)                      output-modified: ok [1.7552, 0.1415]
pow2      input-modified: ERROR (Mul)                      output-modified: ok [2.0, 6.0]
mul self  input-modified: ERROR (Mul)                      output-modified: ok [2.0, 6.0]
log       input-modified: ERROR (Mul)                      output-modified: ok [4.0, 1.3333]
relu      input-modified: ok [1.0, 1.0]                    output-modified: ERROR (Relu)
sigmoid   input-modified: ok [0.235, 0.1491]               output-modified: ERROR (Sigmoid)
tanh      input-modified: ok [0.7864, 0.1807]              output-modified: ERROR (Tanh)
exp       input-modified: ok [1.6487, 4.4817]              output-modified: ERROR (Exp)
sqrt      input-modified: ok [0.7071, 0.4082]              output-modified: ERROR (Sqrt)
add 1     input-modified: ok [1.0, 1.0]                    output-modified: ok [2.0, 2.0]
mul 2     input-modified: ok [2.0, 2.0]                    output-modified: ok [4.0, 4.0]
neg       input-modified: ok [-1.0, -1.0]                  output-modified: ok [-2.0, -2.0]
sum       input-modified: ok [1.0, 1.0]                    output-modified: ok [2.0, 2.0]
max()     input-modified: ERROR (Mul)                      output-modified: ERROR (Max1)
""")

_rule("R13", "saving is conditional on which inputs need gradients", r"""
# adapted: the catalog first prints (a * b).grad_fn._saved_self / _saved_other and
# (A @ B).grad_fn._saved_mat2, which minigrad's nodes do not expose. Their consequences instead:
# a * b (only b requires grad) saved the constant a, so bumping a breaks backward with the leaf-style
# message; A @ B (only B requires grad) did not save B, so bumping B is harmless.
a = torch.ones(2); b = torch.ones(2, requires_grad=True)
y = a * b; a.add_(1)
try: y.sum().backward()
except RuntimeError as e: print("a modified after a*b ->", e)
A = torch.ones(2, 2); B = torch.ones(2, 2, requires_grad=True); Y = A @ B
with torch.no_grad(): B.mul_(2)
Y.sum().backward(); print("B modified after A@B -> ok, B.grad =", B.grad)
a = torch.ones(2); b = torch.ones(2, requires_grad=True)
y = a * b
with torch.no_grad(): b.mul_(2)
y.sum().backward(); print("b modified after a*b -> ok, b.grad =", b.grad)
""", r"""
a modified after a*b -> one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [2]] is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).
B modified after A@B -> ok, B.grad = tensor([[2., 2.],
        [2., 2.]])
b modified after a*b -> ok, b.grad = tensor([1., 1.])
""")

_rule("R14", "in-place ops: self-formulas save a copy of the old value, result-formulas save self itself", r"""
def chain(ops):
    a = torch.tensor([-1.0, 0.5, 2.0], requires_grad=True); y = a * 2
    for op in ops: op(y)
    try:
        # adapted: gradients rounded to 4 places (float32 cos may differ from torch's in the last bit)
        y.sum().backward(); return f"ok a.grad={[round(v, 4) for v in a.grad.tolist()]} grad_fn={y.grad_fn.name()}"
    except RuntimeError as e: return "ERROR " + str(e)
print("relu_ then mul_(3):", chain([lambda t: t.relu_(), lambda t: t.mul_(3)]))
print("mul_(3) then relu_:", chain([lambda t: t.mul_(3), lambda t: t.relu_()]))
print("sin_ then add_(1):", chain([lambda t: t.sin_(), lambda t: t.add_(1)]))
print("exp_ then add_(1):", chain([lambda t: t.exp_(), lambda t: t.add_(1)]))
# adapted: the catalog also prints, per op, whether grad_fn._saved_self/_saved_result is x itself or a
# copy (via data_ptr); minigrad's nodes do not expose saved tensors, so only the consequence (does a
# later x.add_(1) break backward?) is printed. hardtanh_, threshold_, leaky_relu_ and elu_ (all
# torch.nn.functional) are left out; minigrad has none of them.
for name, op in [("sin_", lambda t: t.sin_()), ("pow_(2)", lambda t: t.pow_(2)), ("mul_(b)", lambda t: t.mul_(torch.tensor([2., 3.], requires_grad=True))),
                 ("div_(b)", lambda t: t.div_(torch.tensor([2., 3.], requires_grad=True))), ("log_", lambda t: t.log_()),
                 ("abs_", lambda t: t.abs_()), ("clamp_", lambda t: t.clamp_(0., 1.)),
                 ("relu_", lambda t: t.relu_()), ("sigmoid_", lambda t: t.sigmoid_()),
                 ("tanh_", lambda t: t.tanh_()), ("exp_", lambda t: t.exp_()), ("sqrt_", lambda t: t.sqrt_())]:
    a = torch.tensor([0.5, 1.5], requires_grad=True); x = a.clone(); op(x)
    x.add_(1)
    try: x.sum().backward(); after = "ok"
    except RuntimeError: after = "version error"
    print(f"{name:12s} -> later x.add_(1) then backward: {after}")
""", r"""
relu_ then mul_(3): ERROR one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [3]], which is output 0 of Relu, is at version 2; expected version 1 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).
mul_(3) then relu_: ok a.grad=[0.0, 6.0, 6.0] grad_fn=ReluBackward0
sin_ then add_(1): ok a.grad=[-0.8323, 1.0806, -1.3073] grad_fn=AddBackward0
exp_ then add_(1): ERROR one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [3]], which is output 0 of Exp, is at version 2; expected version 1 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).
sin_         -> later x.add_(1) then backward: ok
pow_(2)      -> later x.add_(1) then backward: ok
mul_(b)      -> later x.add_(1) then backward: ok
div_(b)      -> later x.add_(1) then backward: ok
log_         -> later x.add_(1) then backward: ok
abs_         -> later x.add_(1) then backward: ok
clamp_       -> later x.add_(1) then backward: ok
relu_        -> later x.add_(1) then backward: version error
sigmoid_     -> later x.add_(1) then backward: version error
tanh_        -> later x.add_(1) then backward: version error
exp_         -> later x.add_(1) then backward: version error
sqrt_        -> later x.add_(1) then backward: version error
""")

_rule("R15", "self-aliasing in-place ops", r"""
def t(f):
    a = torch.tensor([1., 2.], requires_grad=True); x = a.clone()
    try:
        f(x); x.sum().backward(); return a.grad
    except RuntimeError as e: return str(e)
print("mul_(x):", t(lambda x: x.mul_(x)))
print("div_(x):", t(lambda x: x.div_(x)).split(",")[1])
print("pow_(x):", t(lambda x: x.pow_(x)).split(",")[1])
print("add_(x):", t(lambda x: x.add_(x)))
print("mul_(x[0]):", t(lambda x: x.mul_(x[0])))
p = torch.tensor([1., 2., 3.]); p[1:].add_(p[:-1])
""", r"""
mul_(x): one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [2]], which is output 0 of Mul, is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).
div_(x):  which is output 0 of Div
pow_(x):  which is output 0 of Pow1
add_(x): tensor([2., 2.])
mul_(x[0]): unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.
RuntimeError: unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.
""")

_rule("R16", "writes that bypass the counter give silently wrong gradients", r"""
a = torch.tensor([1., 2.], requires_grad=True); x = a * 1; y = x.sin()
x.data.mul_(2)
y.sum().backward()
print("grad:", a.grad, " cos(2x):", torch.cos(torch.tensor([2., 4.])))
b = torch.tensor([0.5, 1.5], requires_grad=True); z = b.sin()
b.data = torch.tensor([9., 9.])
z.sum().backward(); print("after b.data=...:", b.grad, b._version)
""", r"""
grad: tensor([-0.4161, -0.6536])  cos(2x): tensor([-0.4161, -0.6536])
after b.data=...: tensor([-0.9111, -0.9111]) 0
""")

# R17 (saved-tensor hooks switch the version check off) is not here: minigrad has no
# torch.autograd.graph.saved_tensors_hooks.

_rule("R18", "backward twice: only graphs with saved tensors complain", r"""
def twice(f):
    a = torch.ones(2, requires_grad=True); y = f(a).sum()
    try:
        y.backward(); y.backward(); return a.grad
    except RuntimeError as e: return "RuntimeError: " + str(e)
print("(a+1).sum():", twice(lambda a: a + 1))
print("(-a).sum():", twice(lambda a: -a))
print("(a*2).sum():", twice(lambda a: a * 2))
a = torch.ones(2, requires_grad=True); y = (a * a).sum(); y.backward(retain_graph=True); y.backward()
print("retain_graph:", a.grad)
# adapted: the catalog's last line reads z.grad_fn._saved_self after the backward; minigrad's nodes do
# not expose saved tensors, so the freed SinBackward0 is reached by a second backward instead
z = a.sin(); z.sum().backward(); z.sum().backward()
""", r"""
(a+1).sum(): tensor([2., 2.])
(-a).sum(): tensor([-2., -2.])
(a*2).sum(): RuntimeError: Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.
retain_graph: tensor([4., 4.])
RuntimeError: Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.
""")

_rule("R19", "anomaly mode: extra warnings and the alternative hint", r"""
with torch.autograd.detect_anomaly():
    a = torch.tensor([0.5, 1.5], requires_grad=True); x = a * 1; y = x.sin(); x.mul_(2)
    y.sum().backward()
""", r"""
Warning UserWarning: Anomaly Detection has been enabled. This mode will increase the runtime and should only be enabled for debugging.
Warning UserWarning: Error detected in SinBackward0. Traceback of forward call that caused the error:
RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [2]], which is output 0 of Mul, is at version 1; expected version 0 instead. Hint: the backtrace further above shows the operation that failed to compute its gradient. The variable in question was changed in there or anywhere later. Good luck!
""", compare="prefix")

# =====================================================================================================
# C. The relu_ seed example; how autograd.grad identifies inputs
# =====================================================================================================

_rule("R20", "seed: grad(relu_(x), (x,)) is 1, grad(relu_(x.clone()), (x,)) is 0", r"""
# adapted: F.relu_(x) is written torch.relu_(x) (minigrad has no nn.functional; same op, same object)
x = torch.tensor([-1.0]).requires_grad_().clone()
out = torch.relu_(x)
print(out is x, x.grad_fn.name(), x._version)
print(torch.autograd.grad(out, (x,)))
x = torch.tensor([-1.0]).requires_grad_().clone()
x2 = x.clone()
print(torch.autograd.grad(torch.relu_(x2), (x,)))
a = torch.tensor([0.5, 1.5], requires_grad=True); b = a * 2
print(torch.autograd.grad(b, b, torch.tensor([3., 4.])), torch.autograd.grad(a, a, torch.ones(2)))
""", r"""
True ReluBackward0 1
(tensor([1.]),)
(tensor([0.]),)
(tensor([3., 4.]),) (tensor([1., 1.]),)
""")

_rule("R21", "inputs are resolved by their current gradient edge", r"""
from torch.autograd.graph import get_gradient_edge
a = torch.tensor([1., 2.], requires_grad=True); x = a * 1
old = get_gradient_edge(x); y = x * 3
x.relu_()
print(old.node.name(), "->", get_gradient_edge(x).node.name())
print(torch.autograd.grad(y.sum(), old, retain_graph=True))
print(torch.autograd.grad(y.sum(), x, allow_unused=True, retain_graph=True))
torch.autograd.grad(y.sum(), x)
""", r"""
MulBackward0 -> ReluBackward0
(tensor([3., 3.]),)
(None,)
RuntimeError: The differentiated Tensor at index 0 appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior.
""")

# =====================================================================================================
# D. Leaf rules
# =====================================================================================================

_rule("R22", "in-place on a leaf that requires grad (grad mode on)", r"""
for label, f in [("add_", lambda a: a.add_(1)), ("relu_", lambda a: a.relu_()), ("copy_", lambda a: a.copy_(torch.zeros(4))),
                 ("+=", lambda a: a.__iadd__(1)), ("a[mask]=0", lambda a: a.__setitem__(a > 0, 0.)),
                 ("a[[0,1]]=0", lambda a: a.__setitem__([0, 1], 0.)), ("a[...]=0", lambda a: a.__setitem__(Ellipsis, 0.)),
                 ("a[:]=0", lambda a: a.__setitem__(slice(None), 0.))]:
    a = torch.ones(4, requires_grad=True)
    try: f(a)
    except RuntimeError as e: print(f"{label:10s} {e}")
""", r"""
add_       a leaf Variable that requires grad is being used in an in-place operation.
relu_      a leaf Variable that requires grad is being used in an in-place operation.
copy_      a leaf Variable that requires grad is being used in an in-place operation.
+=         a leaf Variable that requires grad is being used in an in-place operation.
a[mask]=0  a leaf Variable that requires grad is being used in an in-place operation.
a[[0,1]]=0 a leaf Variable that requires grad is being used in an in-place operation.
a[...]=0   a leaf Variable that requires grad is being used in an in-place operation.
a[:]=0     a leaf Variable that requires grad is being used in an in-place operation.
""")

_rule("R23", "in-place on a view of such a leaf", r"""
for label, f in [("slice add_", lambda a: a[0:2].add_(1)), ("t() mul_", lambda a: a.view(2, 2).t().mul_(2)),
                 ("view_as add_", lambda a: a.view_as(a).add_(1)), ("a[0]=2", lambda a: a.__setitem__(0, 2.)),
                 ("a[1:3]=0", lambda a: a.__setitem__(slice(1, 3), 0.)), ("a[None]=0", lambda a: a.__setitem__(None, 0.)),
                 ("unbind()[0].zero_()", lambda a: a.unbind(0)[0].zero_())]:
    a = torch.ones(4, requires_grad=True)
    try: f(a)
    except RuntimeError as e: print(f"{label:20s} {e}")
""", r"""
slice add_           a view of a leaf Variable that requires grad is being used in an in-place operation.
t() mul_             a view of a leaf Variable that requires grad is being used in an in-place operation.
view_as add_         a view of a leaf Variable that requires grad is being used in an in-place operation.
a[0]=2               a view of a leaf Variable that requires grad is being used in an in-place operation.
a[1:3]=0             a view of a leaf Variable that requires grad is being used in an in-place operation.
a[None]=0            a view of a leaf Variable that requires grad is being used in an in-place operation.
unbind()[0].zero_()  Output 0 of Unbind is a view and is being modified inplace. This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one.
""")

_rule("R24", "allowed: under no_grad, through .detach() / .data", r"""
a = torch.ones(4, requires_grad=True); v = a[0:2]; seen = []
a.register_hook(lambda g: seen.append(g.clone()))
with torch.no_grad():
    a.add_(1); a[0] = 5; v.mul_(2)
print(a, a.is_leaf, a.grad_fn, a._version, v.grad_fn.name())
(a * 2).sum().backward(); print("hook saw:", seen, "grad:", a.grad)
a.detach().add_(1); a.data.add_(1); print("version after detach().add_ and data.add_:", a._version)
""", r"""
tensor([10.,  4.,  2.,  2.], requires_grad=True) True None 3 AsStridedBackward0
hook saw: [tensor([2., 2., 2., 2.])] grad: tensor([2., 2., 2., 2.])
version after detach().add_ and data.add_: 4
""")

# R25 (out= with anything requiring grad) is not here: minigrad has no out= arguments.

_rule("R26", "in-place on a tensor that does not require grad, with an operand that does", r"""
x = torch.ones(3); w = torch.full((3,), 2., requires_grad=True)
x.add_(w)
print(x.is_leaf, x.requires_grad, x.grad_fn.name(), [(type(n).__name__ if n else None, i) for n, i in x.grad_fn.next_functions], x._version)
x.sum().backward(); print(w.grad)
x = torch.zeros(3); s = torch.tensor(2., requires_grad=True)
x[1] = s
print(x.is_leaf, x.grad_fn.name())
(x * torch.tensor([1., 7., 1.])).sum().backward(); print(s.grad)
base = torch.ones(4, 4); col = torch.full((4, 1), 3., requires_grad=True)
base.narrow(1, 2, 1).mul_(col); base.sum().backward()
print(base.requires_grad, base.grad_fn.name(), col.grad.flatten())
""", r"""
False True AddBackward0 [(None, 0), ('AccumulateGrad', 0)] 1
tensor([1., 1., 1.])
False torch::autograd::CopySlices
tensor(7.)
True torch::autograd::CopySlices tensor([1., 1., 1., 1.])
""")

_rule("R27", "custom autograd.Function and in-place (mark_dirty)", r"""
class Dirty(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2); ctx.mark_dirty(x); return x
    @staticmethod
    def backward(ctx, g): return g * 2
a = torch.ones(2, requires_grad=True); x = a.clone(); y = Dirty.apply(x)
print(y is x, x._version, x.grad_fn.name()); y.sum().backward(); print(a.grad)
Dirty.apply(torch.ones(2, requires_grad=True))
""", r"""
True 2 DirtyBackward
tensor([2., 2.])
RuntimeError: a leaf Variable that requires grad has been used in an in-place operation.
""")

# =====================================================================================================
# E. In-place on non-leaf tensors
# =====================================================================================================

_rule("R28", "the tensor's grad_fn is replaced by the in-place op's node; the op returns self", r"""
# adapted: left out leaky_relu_, elu_, hardtanh_, threshold_, silu(inplace), dropout(inplace) (all
# torch.nn.functional), uniform_, index_fill_, addcmul_ and set_, which minigrad does not have
ops = {"add_(1)": lambda t: t.add_(1), "add_(t)": lambda t: t.add_(torch.ones(3)), "sub_": lambda t: t.sub_(1),
       "mul_(2)": lambda t: t.mul_(2), "div_(2)": lambda t: t.div_(2), "pow_(2)": lambda t: t.pow_(2),
       "relu_": lambda t: t.relu_(), "sigmoid_": lambda t: t.sigmoid_(), "tanh_": lambda t: t.tanh_(),
       "exp_": lambda t: t.exp_(), "sin_": lambda t: t.sin_(), "neg_": lambda t: t.neg_(), "abs_": lambda t: t.abs_(),
       "zero_": lambda t: t.zero_(), "fill_(1)": lambda t: t.fill_(1), "copy_": lambda t: t.copy_(torch.ones(3)),
       "clamp_": lambda t: t.clamp_(0, 1), "clamp_min_": lambda t: t.clamp_min_(0), "square_": lambda t: t.square_(),
       "masked_fill_": lambda t: t.masked_fill_(t > 0, 0.),
       "scatter_": lambda t: t.scatter_(0, torch.tensor([0]), 0.),
       "t_": lambda t: t.t_(), "unsqueeze_": lambda t: t.unsqueeze_(0),
       "x[0]=1": lambda t: t.__setitem__(0, 1.), "x[1:]=0": lambda t: t.__setitem__(slice(1, None), 0.),
       "x[mask]=0": lambda t: t.__setitem__(t > 0, 0.), "x[[0,1]]=0": lambda t: t.__setitem__([0, 1], 0.),
       "x[...]=0": lambda t: t.__setitem__(Ellipsis, 0.), "x[:]=t": lambda t: t.__setitem__(slice(None), torch.zeros(3))}
for k, op in ops.items():
    a = torch.tensor([-1.0, 0.5, 2.0], requires_grad=True); x = a * 2; old = x.grad_fn
    r = op(x)
    rebased_on_old = x.grad_fn.next_functions[0][0] is old
    print(f"{k:17s} {x.grad_fn.name():32s} returns_self={r is x} version={x._version} next[0] is old={rebased_on_old}")
""", r"""
add_(1)           AddBackward0                     returns_self=True version=1 next[0] is old=True
add_(t)           AddBackward0                     returns_self=True version=1 next[0] is old=True
sub_              SubBackward0                     returns_self=True version=1 next[0] is old=True
mul_(2)           MulBackward0                     returns_self=True version=1 next[0] is old=True
div_(2)           DivBackward0                     returns_self=True version=1 next[0] is old=True
pow_(2)           PowBackward0                     returns_self=True version=1 next[0] is old=True
relu_             ReluBackward0                    returns_self=True version=1 next[0] is old=True
sigmoid_          SigmoidBackward0                 returns_self=True version=1 next[0] is old=True
tanh_             TanhBackward0                    returns_self=True version=1 next[0] is old=True
exp_              ExpBackward0                     returns_self=True version=1 next[0] is old=True
sin_              SinBackward0                     returns_self=True version=1 next[0] is old=True
neg_              NegBackward0                     returns_self=True version=1 next[0] is old=True
abs_              AbsBackward0                     returns_self=True version=1 next[0] is old=True
zero_             ZeroBackward0                    returns_self=True version=1 next[0] is old=True
fill_(1)          FillBackward2                    returns_self=True version=1 next[0] is old=True
copy_             torch::autograd::CopyBackwards   returns_self=True version=1 next[0] is old=True
clamp_            ClampBackward1                   returns_self=True version=1 next[0] is old=True
clamp_min_        ClampMinBackward0                returns_self=True version=1 next[0] is old=True
square_           PowBackward0                     returns_self=True version=1 next[0] is old=True
masked_fill_      MaskedFillBackward0              returns_self=True version=1 next[0] is old=True
scatter_          ScatterBackward1                 returns_self=True version=1 next[0] is old=True
t_                TBackward1                       returns_self=True version=1 next[0] is old=True
unsqueeze_        UnsqueezeBackward1               returns_self=True version=1 next[0] is old=True
x[0]=1            torch::autograd::CopySlices      returns_self=False version=1 next[0] is old=True
x[1:]=0           torch::autograd::CopySlices      returns_self=False version=1 next[0] is old=True
x[mask]=0         IndexPutBackward0                returns_self=False version=1 next[0] is old=True
x[[0,1]]=0        IndexPutBackward0                returns_self=False version=1 next[0] is old=True
x[...]=0          FillBackward3                    returns_self=False version=1 next[0] is old=True
x[:]=t            torch::autograd::CopyBackwards   returns_self=False version=1 next[0] is old=True
""")

_rule("R29", "gradients through rebased history equal the out-of-place equivalents", r"""
torch.manual_seed(0)
pairs = {"add_": (lambda t, o: t.add_(o, alpha=2), lambda t, o: t.add(o, alpha=2)), "mul_": (lambda t, o: t.mul_(o), lambda t, o: t * o),
         "div_": (lambda t, o: t.div_(o), lambda t, o: t / o), "pow_": (lambda t, o: t.pow_(2), lambda t, o: t.pow(2)),
         "relu_": (lambda t, o: t.relu_(), lambda t, o: t.relu()), "sigmoid_": (lambda t, o: t.sigmoid_(), lambda t, o: t.sigmoid()),
         "tanh_": (lambda t, o: t.tanh_(), lambda t, o: t.tanh()), "exp_": (lambda t, o: t.exp_(), lambda t, o: t.exp()),
         "sin_": (lambda t, o: t.sin_(), lambda t, o: t.sin()), "clamp_": (lambda t, o: t.clamp_(-0.5, 0.5), lambda t, o: t.clamp(-0.5, 0.5)),
         "copy_": (lambda t, o: t.copy_(o), lambda t, o: o + 0 * t), "zero_": (lambda t, o: t.zero_(), lambda t, o: t * 0),
         "masked_fill_": (lambda t, o: t.masked_fill_(o > 0, 0.), lambda t, o: t.masked_fill(o > 0, 0.)),
         "x[0:2]=o*3": (lambda t, o: t.__setitem__(slice(0, 2), o[0:2] * 3) or t, lambda t, o: torch.cat([o[0:2] * 3, t[2:]])),
         "x[mask]=7": (lambda t, o: t.__setitem__(o > 0, 7.) or t, lambda t, o: torch.where(o > 0, torch.tensor(7.), t)),
         "view mul_": (lambda t, o: (t[1:3].mul_(o[1:3]), t)[1], lambda t, o: torch.cat([t[:1], t[1:3] * o[1:3], t[3:]])),
         "mul_ then relu_": (lambda t, o: t.mul_(o).relu_(), lambda t, o: (t * o).relu())}
# adapted: minigrad has no torch.allclose; `close` is its definition (rtol=1e-05, atol=1e-08)
close = lambda u, v: bool(((u - v).abs() <= 1e-08 + 1e-05 * v.abs()).all())
res = []
for name, (ip, oop) in pairs.items():
    a1 = torch.randn(5, requires_grad=True); b1 = torch.randn(5, requires_grad=True)
    a2 = a1.detach().clone().requires_grad_(); b2 = b1.detach().clone().requires_grad_(); w = torch.randn(5)
    y1 = ip(a1.clone(), b1); (y1 * w).sum().backward(); y2 = oop(a2, b2); (y2 * w).sum().backward()
    g = lambda t: t.grad if t.grad is not None else torch.zeros(5)
    res.append((name, close(y1, y2) and close(g(a1), g(a2)) and close(g(b1), g(b2))))
print(res)
""", r"""
[('add_', True), ('mul_', True), ('div_', True), ('pow_', True), ('relu_', True), ('sigmoid_', True), ('tanh_', True), ('exp_', True), ('sin_', True), ('clamp_', True), ('copy_', True), ('zero_', True), ('masked_fill_', True), ('x[0:2]=o*3', True), ('x[mask]=7', True), ('view mul_', True), ('mul_ then relu_', True)]
""")

_rule("R30", "related non-leaf errors", r"""
a = torch.ones(2, requires_grad=True)
# adapted: the catalog's (a * 2).resize_(2) case ("cannot resize variables that require grad") is left
# out: minigrad has no resize_
for f in [lambda: (a * 2).requires_grad_(False), lambda: (a * 2)[0:1].detach_()]:
    try: f()
    except RuntimeError as e: print(e)
b = a * 2; print("requires_grad_(True) on non-leaf is a no-op:", b.requires_grad_(True) is b, b.grad_fn.name())
c = a * 2; c.detach_(); print("detach_ on non-view non-leaf:", c.is_leaf, c.requires_grad, c.grad_fn, c._version)
""", r"""
you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().
Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and hence detach_() cannot be called on these gradients. To fix this error, please refer to the Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.
requires_grad_(True) on non-leaf is a no-op: True MulBackward0
detach_ on non-view non-leaf: True False None 0
""")

_rule("R31", "tensor hooks and retain_grad across an in-place op", r"""
a = torch.tensor([1., 2.], requires_grad=True); x = a * 1; log = []
x.register_hook(lambda g: log.append(("before", g.tolist())))
x.retain_grad()
x.mul_(3)
x.register_hook(lambda g: log.append(("after", g.tolist())))
(x * torch.tensor([10., 100.])).sum().backward()
print(log, x.grad)
""", r"""
[('after', [10.0, 100.0]), ('before', [30.0, 300.0])] tensor([ 10., 100.])
""")

# =====================================================================================================
# F. In-place on views of non-leaf tensors
# =====================================================================================================

_rule("R32", "base gets CopySlices, the view gets AsStridedBackward0", r"""
a = torch.tensor([1., 2., 3., 4.], requires_grad=True); x = a * 1; old = x.grad_fn
v = x[1:3]; print("before:", v.grad_fn.name(), v._base is x)
r = v.mul_(10)
print("after:", type(x.grad_fn).__name__, x.grad_fn.name(), v.grad_fn.name(), r is v, x._version, v._version)
print(x.grad_fn.next_functions[0][0] is old, x.grad_fn.next_functions[1], v.grad_fn.next_functions[0][0] is x.grad_fn)
# adapted: the view_as_real case is left out (minigrad has no complex dtypes / view_as_complex)
for name, mk in [("select", lambda t: t[2]), ("view", lambda t: t.view(2, 2)), ("t", lambda t: t.view(2, 2).t()),
                 ("diagonal", lambda t: t.view(2, 2).diagonal()), ("x[...]", lambda t: t[...]),
                 ("view of view", lambda t: t.view(2, 2)[1])]:
    x = torch.tensor([1., 2., 3., 4.], requires_grad=True) * 1; v = mk(x); before = v.grad_fn.name(); v.mul_(10)
    print(f"{name:13s} {before:22s} -> {v.grad_fn.name():22s} base {x.grad_fn.name()}")
""", r"""
before: SliceBackward0 True
after: CopySlices torch::autograd::CopySlices AsStridedBackward0 True 1 1
True (None, 0) True
select        SelectBackward0        -> AsStridedBackward0     base torch::autograd::CopySlices
view          ViewBackward0          -> AsStridedBackward0     base torch::autograd::CopySlices
t             TBackward0             -> AsStridedBackward0     base torch::autograd::CopySlices
diagonal      DiagonalBackward0      -> AsStridedBackward0     base torch::autograd::CopySlices
x[...]        AliasBackward0         -> AsStridedBackward0     base torch::autograd::CopySlices
view of view  SelectBackward0        -> AsStridedBackward0     base torch::autograd::CopySlices
""")

_rule("R33", "gradients through CopySlices", r"""
def g(f):
    root = torch.ones(2, 2, requires_grad=True); x = root.clone(); f(x); return root.grad.tolist()
print("view mul_, backward through base :", g(lambda x: (x.narrow(0, 0, 1).mul_(2), x.sum().backward())))
print("view mul_, backward through sibling view:", g(lambda x: (lambda v1, v2: (v1.mul_(2), v2.sum().backward()))(x.narrow(0, 0, 1), x.narrow(0, 0, 1))))
print("view-of-view mul_ :", g(lambda x: (x.narrow(0, 0, 1).narrow(1, 1, 1).mul_(2), x.sum().backward())))
a = torch.tensor([1., 2., 3., 4.], requires_grad=True); x = a * 1
x[0:3].mul_(10); x[1:4].mul_(100); (x * torch.tensor([1., 2., 3., 4.])).sum().backward()
print("overlapping views:", a.grad.tolist())
a = torch.tensor([-1., -2., 3., 4.], requires_grad=True); x = a * 1; x[0:2].relu_(); x.sum().backward()
print("relu_ on a slice:", a.grad.tolist())
""", r"""
view mul_, backward through base : [[2.0, 2.0], [1.0, 1.0]]
view mul_, backward through sibling view: [[2.0, 2.0], [0.0, 0.0]]
view-of-view mul_ : [[1.0, 2.0], [1.0, 1.0]]
overlapping views: [10.0, 2000.0, 3000.0, 400.0]
relu_ on a slice: [0.0, 0.0, 1.0, 1.0]
""")

_rule("R34", "base modified after a view was taken: the view follows the new history", r"""
a = torch.tensor([1., 2., 3., 4.], requires_grad=True); x = a * 1
v = x[1:3]; print(v.grad_fn.name())
x.mul_(10)
print(v, v.grad_fn.name())
(v * torch.tensor([5., 7.])).sum().backward(); print(a.grad)
""", r"""
SliceBackward0
tensor([20., 30.], grad_fn=<AsStridedBackward0>) AsStridedBackward0
tensor([ 0., 50., 70.,  0.])
""")

_rule("R35", "saved view / saved base and in-place through the other alias", r"""
def t(f):
    try: f()
    except RuntimeError as e: print(e)
def saved_view():
    a = torch.tensor([1., 2., 3., 4.], requires_grad=True); x = a * 1; v = x[1:3]; y = v.sin(); x.mul_(10); y.sum().backward()
def saved_base():
    a = torch.tensor([1., 2., 3., 4.], requires_grad=True); x = a * 1; y = x.sin(); x[0].mul_(2); y.sum().backward()
def saved_detach():
    a = torch.tensor([1., 2., 3., 4.], requires_grad=True); x = a * 1; y = x.sin(); x.detach().mul_(2); y.sum().backward()
t(saved_view); t(saved_base); t(saved_detach)
""", r"""
one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [2]], which is output 0 of AsStrided, is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).
one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [4]], which is output 0 of torch::autograd::CopySlices, is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).
one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [4]], which is output 0 of Mul, is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).
""")

_rule("R36", "index assignment semantics for gradients", r"""
a = torch.tensor([1., 2., 3., 4.], requires_grad=True); b = torch.tensor(9., requires_grad=True)
x = a * 1; x[1] = b * 2
print(x.grad_fn.name(), [type(n).__name__ for n, _ in x.grad_fn.next_functions])
(x * torch.tensor([1., 2., 3., 4.])).sum().backward(); print(a.grad, b.grad)
a = torch.ones(4, requires_grad=True); x = a * 1; x[torch.tensor([True, False, True, False])] = 0; x.sum().backward()
print(x.grad_fn.name(), a.grad)
a = torch.ones(4, requires_grad=True); b = torch.tensor(3., requires_grad=True); x = a * 1; x[0:3] = b
(x * torch.tensor([1., 2., 3., 4.])).sum().backward(); print("broadcast value gets summed grad:", a.grad, b.grad)
""", r"""
torch::autograd::CopySlices ['MulBackward0', 'MulBackward0']
tensor([1., 0., 3., 4.]) tensor(4.)
IndexPutBackward0 tensor([0., 1., 0., 1.])
broadcast value gets summed grad: tensor([0., 0., 0., 4.]) tensor(6.)
""")

_rule("R37", "in-place on self-overlapping views / overlapping operands is rejected in the forward", r"""
a = torch.tensor([1., 2., 3.], requires_grad=True); x = a * 1
for f in [lambda: x[0:1].expand(3).mul_(10), lambda: x[1:].copy_(x[:-1])]:
    try: f()
    except RuntimeError as e: print(e)
""", r"""
unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.
unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.
""")

# =====================================================================================================
# G. Multi-output views, views created in no_grad / inference mode, custom Functions
# =====================================================================================================

_rule("R38", "outputs of multi-view ops (unbind, split, chunk, iteration) cannot be modified in place", r"""
# adapted: tensor_split and unsafe_split (the catalog's two "not affected" cases) are left out:
# minigrad has neither
for nm, mk in [("unbind", lambda x: x.unbind(0)), ("split", lambda x: x.split(1)), ("chunk", lambda x: x.chunk(2)),
               ("split_with_sizes", lambda x: x.split([1, 1])), ("iteration", lambda x: list(x))]:
    a = torch.ones(2, 2, requires_grad=True); x = a * 1; o = mk(x)[1]
    try:
        o.mul_(2); x.sum().backward(); print(f"{nm}: ok ({o.grad_fn.name()}) grad={a.grad.tolist()}")
    except RuntimeError as e: print(f"{nm}: {e}")
""", r"""
unbind: Output 1 of Unbind is a view and is being modified inplace. This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one.
split: Output 1 of Split is a view and is being modified inplace. This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one.
chunk: Output 1 of Split is a view and is being modified inplace. This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one.
split_with_sizes: Output 1 of SplitWithSizes is a view and is being modified inplace. This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one.
iteration: Output 1 of Unbind is a view and is being modified inplace. This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one.
""")

_rule("R39", "indirect: base or a sibling modified while a multi-output view exists", r"""
def t(f):
    try: f()
    except RuntimeError as e: print(e)
def base_mod():
    a = torch.ones(2, 2, requires_grad=True); x = a * 1; p, q = x.unbind(0); x.mul_(2); q.grad_fn
def sibling_then_backward():
    a = torch.ones(2, 2, requires_grad=True); x = a * 1; p, q = x.unbind(0); x[0].mul_(2); q.sum().backward()
def nograd_mod():
    a = torch.ones(2, 2, requires_grad=True); x = a * 1; p, q = x.unbind(0)
    with torch.no_grad(): q.mul_(2)
    q.grad_fn
t(base_mod); t(sibling_then_backward); t(nograd_mod)
a = torch.ones(2, 2, requires_grad=True); p, q = a.unbind(0)
with torch.no_grad(): q.mul_(2)
print("leaf base, no_grad modification: ok", a.tolist())
""", r"""
Output 1 of Unbind is a view and its base or another view of its base has been modified inplace. This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one.
Output 1 of Unbind is a view and its base or another view of its base has been modified inplace. This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one.
Output 1 of Unbind is a view and its base or another view of its base has been modified inplace. This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one.
leaf base, no_grad modification: ok [[1.0, 1.0], [2.0, 2.0]]
""")

_rule("R40", "a view of a multi-output view inherits the restriction", r"""
a = torch.rand(10, requires_grad=True).clone(); b = a.unbind(0); c = b[0].view_as(b[0]); c.mul_(2)
""", r"""
RuntimeError: Output 0 of View is a view and is being modified inplace. This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one.
""")

_rule("R41", "views created in no_grad mode, modified in grad mode", r"""
def t(f):
    try: f(); print("ok")
    except RuntimeError as e: print(e)
def direct():
    a = torch.ones(3, requires_grad=True); x = a * 1
    with torch.no_grad(): v = x[0:2]
    print(v.requires_grad, v.grad_fn); v.mul_(2)
def direct_leaf():
    a = torch.ones(3, requires_grad=True)
    with torch.no_grad(): v = a[0:2]
    v.mul_(2)
def plain_with_grad_operand():
    x = torch.ones(3)
    with torch.no_grad(): v = x[0:2]
    v.mul_(torch.ones(2, requires_grad=True))
def plain_without():
    x = torch.ones(3)
    with torch.no_grad(): v = x[0:2]
    v.mul_(2)
def indirect():
    a = torch.ones(3, requires_grad=True); x = a * 1
    with torch.no_grad(): v = x[0:2]
    x.mul_(2); v.grad_fn
def view_of_nograd_view():
    a = torch.rand(4, requires_grad=True).clone()
    with torch.no_grad(): v = a[0:2]
    v.view(2).mul_(2)
def plain_multi_output():
    x = torch.ones(2, 2); p, q = x.unbind(0); q.mul_(torch.ones(2, requires_grad=True))
for f in [direct, direct_leaf, plain_with_grad_operand, plain_without, indirect, view_of_nograd_view, plain_multi_output]:
    t(f)
""", r"""
True None
A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).
A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).
A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).
ok
A view was created in no_grad mode and its base or another view of its base has been modified inplace with grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).
Output 0 of View is a view of a view which was created in no_grad mode and is being modified inplace with grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).
A view was created in no_grad mode and is being modified inplace with grad mode enabled. This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one.
""")

_rule("R42", "inference mode", r"""
def t(f):
    try: f()
    except RuntimeError as e: print(e)
def view_in_inference():
    a = torch.ones(3, requires_grad=True); x = a * 1
    with torch.inference_mode(): v = x[0:2]
    v.mul_(2)
def inference_tensor_inplace():
    with torch.inference_mode(): t = torch.ones(3)
    t.add_(1)
def inference_tensor_saved():
    with torch.inference_mode(): t = torch.ones(3)
    torch.ones(3, requires_grad=True) * t
t(view_in_inference); t(inference_tensor_inplace); t(inference_tensor_saved)
""", r"""
A view was created in inference mode and is being modified inplace in normal mode. Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the inference_mode block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).
Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for more details.
Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`.
""")

_rule("R43", "custom Function returning a view or its input, then in-place", r"""
class IdView(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x): return x.view_as(x)
    @staticmethod
    def backward(ctx, g): return g
class Ret(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x): return x
    @staticmethod
    def backward(ctx, g): return g * 2
try:
    view = IdView.apply(torch.rand(1, 2)); view += torch.rand(1, requires_grad=True)
except RuntimeError as e: print(e)
class NotDirty(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2); return x
    @staticmethod
    def backward(ctx, g): return g * 2
x = torch.ones(2, requires_grad=True).clone(); y = NotDirty.apply(x)
print("mutating without mark_dirty:", y is x, x._version, x.grad_fn.name())
a = torch.ones(2, requires_grad=True); x = a.clone(); y = Ret.apply(x)
print(y is x, y._is_view(), y.grad_fn.name())
y.mul_(3)
""", r"""
A view was created in no_grad mode and is being modified inplace with grad mode enabled. This view was created inside a custom Function (or because an input was returned as-is) and the autograd logic to handle view+inplace would override the custom backward associated with the custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by cloning the output of the custom Function.
mutating without mark_dirty: False 1 CloneBackward0
False True RetBackward
RuntimeError: Output 0 of Ret is a view and is being modified inplace. This view was created inside a custom Function (or because an input was returned as-is) and the autograd logic to handle view+inplace would override the custom backward associated with the custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by cloning the output of the custom Function.
""")

# =====================================================================================================
# H. Shape and dtype rules of in-place ops
# =====================================================================================================

_rule("R44", "broadcasting: the other operand may broadcast, the result must have self's shape", r"""
def t(label, f):
    try: r = f(); print(label, "ok", tuple(r.shape))
    except RuntimeError as e: print(label, e)
t("[3].add_([2,3])", lambda: torch.zeros(3).add_(torch.ones(2, 3)))
t("[3] += [2,3]", lambda: torch.zeros(3).__iadd__(torch.ones(2, 3)))
t("[2,1].mul_([1,3])", lambda: torch.zeros(2, 1).mul_(torch.ones(1, 3)))
t("[].add_([3])", lambda: torch.tensor(0.).add_(torch.ones(3)))
t("[2,3].add_([3])", lambda: torch.zeros(2, 3).add_(torch.ones(3)))
t("[2,3].add_(0-dim)", lambda: torch.zeros(2, 3).add_(torch.tensor(1.)))
t("[3].add_([4])", lambda: torch.zeros(3).add_(torch.ones(4)))
t("[3].copy_([2,3])", lambda: torch.zeros(3).copy_(torch.ones(2, 3)))
t("[2,3].copy_([3])", lambda: torch.zeros(2, 3).copy_(torch.arange(3.)))
t("x[0:2] = [3]", lambda: torch.zeros(3).__setitem__(slice(0, 2), torch.ones(3)))
""", r"""
[3].add_([2,3]) output with shape [3] doesn't match the broadcast shape [2, 3]
[3] += [2,3] output with shape [3] doesn't match the broadcast shape [2, 3]
[2,1].mul_([1,3]) output with shape [2, 1] doesn't match the broadcast shape [2, 3]
[].add_([3]) output with shape [] doesn't match the broadcast shape [3]
[2,3].add_([3]) ok (2, 3)
[2,3].add_(0-dim) ok (2, 3)
[3].add_([4]) The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0
[3].copy_([2,3]) output with shape [3] doesn't match the broadcast shape [2, 3]
[2,3].copy_([3]) ok (2, 3)
x[0:2] = [3] The expanded size of the tensor (2) must match the existing size (3) at non-singleton dimension 0.  Target sizes: [2].  Tensor sizes: [3]
""")

_rule("R45", "dtype: the promoted result type must be castable to self.dtype", r"""
def t(label, f):
    try: r = f(); print(label, "ok", r.dtype, r.tolist())
    except RuntimeError as e: print(label, e)
t("long.add_(float)", lambda: torch.zeros(3, dtype=torch.int64).add_(torch.ones(3)))
t("long.add_(1.5)", lambda: torch.zeros(3, dtype=torch.int64).add_(1.5))
t("int32.mul_(float)", lambda: torch.ones(3, dtype=torch.int32).mul_(torch.ones(3)))
t("long += float", lambda: torch.zeros(3, dtype=torch.int64).__iadd__(torch.ones(3)))
t("bool.add_(long)", lambda: torch.tensor([True]).add_(torch.tensor([1])))
# adapted: "float.add_(complex)" and "float16.add_(float32)" are left out (minigrad has no complex64 or
# float16)
t("float.add_(long)", lambda: torch.zeros(3).add_(torch.ones(3, dtype=torch.int64)))
t("float32.add_(float64)", lambda: torch.zeros(2).add_(torch.ones(2, dtype=torch.float64)))
t("long.div_(2)", lambda: torch.ones(3, dtype=torch.int64).div_(2))
t("long.div_(2, floor)", lambda: torch.ones(3, dtype=torch.int64).div_(2, rounding_mode="floor"))
t("long.sqrt_()", lambda: torch.ones(3, dtype=torch.int64).sqrt_())
t("long.relu_()", lambda: torch.tensor([-1, 2]).relu_())
t("long.copy_(float)", lambda: torch.zeros(3, dtype=torch.int64).copy_(torch.tensor([1.7, 2.2, -1.5])))
t("long.fill_(1.7)", lambda: torch.zeros(2, dtype=torch.int64).fill_(1.7))
""", r"""
long.add_(float) result type Float can't be cast to the desired output type Long
long.add_(1.5) result type Float can't be cast to the desired output type Long
int32.mul_(float) result type Float can't be cast to the desired output type Int
long += float result type Float can't be cast to the desired output type Long
bool.add_(long) result type Long can't be cast to the desired output type Bool
float.add_(long) ok torch.float32 [1.0, 1.0, 1.0]
float32.add_(float64) ok torch.float32 [1.0, 1.0]
long.div_(2) result type Float can't be cast to the desired output type Long
long.div_(2, floor) ok torch.int64 [0, 0, 0]
long.sqrt_() result type Float can't be cast to the desired output type Long
long.relu_() ok torch.int64 [0, 2]
long.copy_(float) ok torch.int64 [1, 2, -1]
long.fill_(1.7) ok torch.int64 [1, 1]
""")

# R46 (out= shape/dtype) is not here: minigrad has no out= arguments.

# =====================================================================================================
# I. General autograd facts the engine must match
# =====================================================================================================

_rule("R47", "requires_grad propagation and is_leaf", r"""
a = torch.ones(2, requires_grad=True); b = torch.ones(2)
c = a + b; d = b * 2
print(a.is_leaf, b.is_leaf, c.is_leaf, c.requires_grad, c.grad_fn.name(), d.requires_grad, d.is_leaf)
print((a > 0).requires_grad, a.long().requires_grad, a.argmax().requires_grad, a.max(0)[1].requires_grad)
""", r"""
True True False True AddBackward0 False True
False False False False
""")

_rule("R48", "only floating point / complex tensors can require grad (three message variants)", r"""
for f in [lambda: torch.ones(2, dtype=torch.int64, requires_grad=True), lambda: torch.tensor([1, 2], requires_grad=True),
          lambda: torch.ones(2, dtype=torch.int64).requires_grad_(), lambda: torch.tensor([True]).requires_grad_(),
          lambda: setattr(torch.ones(2, dtype=torch.int64), "requires_grad", True)]:
    try: f()
    except RuntimeError as e: print(e)
""", r"""
Only Tensors of floating point and complex dtype can require gradients
Only Tensors of floating point and complex dtype can require gradients
only Tensors of floating point dtype can require gradients
only Tensors of floating point dtype can require gradients
only Tensors of floating point and complex dtype can require gradients
""")

_rule("R49", "gradient accumulation across backward calls", r"""
a = torch.ones(2, requires_grad=True); print(a.grad)
(a * 3).sum().backward(); g = a.grad; print(g, g._version)
(a * 4).sum().backward(); print(a.grad, a.grad is g, g._version)
b = torch.ones(2, requires_grad=True); print(torch.autograd.grad((b * 3).sum(), b), b.grad)
c = torch.ones(2, requires_grad=True); d = torch.ones(2, requires_grad=True); (c * d).sum().backward(inputs=[c]); print(c.grad, d.grad)
""", r"""
None
tensor([3., 3.]) 0
tensor([7., 7.]) True 1
(tensor([3., 3.]),) None
tensor([1., 1.]) None
""")

_rule("R50", "retain_grad, and .grad of a non-leaf", r"""
a = torch.ones(2, requires_grad=True); b = a * 2; b.retain_grad(); c = a * 3
(b * c).sum().backward()
print(b.grad, b.retains_grad, c.retains_grad, a.retains_grad)
print(c.grad)
torch.ones(2).retain_grad()
""", r"""
tensor([3., 3.]) True False False
None
Warning UserWarning: The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more information.
RuntimeError: can't retain_grad on Tensor that has requires_grad=False
""")

_rule("R51", "implicit gradient only for single-element outputs; shape check on explicit grad", r"""
a = torch.ones(2, requires_grad=True)
for f in [lambda: (a * 2).backward(), lambda: torch.autograd.grad(a * 2, a),
          lambda: (a * 3).backward(torch.tensor([1., 2., 3.])), lambda: torch.ones(2).sum().backward()]:
    try: f()
    except RuntimeError as e: print(e)
m = torch.ones(1, 1, requires_grad=True); (m * 2).backward(); print("numel-1 non-scalar ok:", m.grad)
(a * 3).backward(torch.tensor([1., 2.])); print(a.grad)
""", r"""
grad can be implicitly created only for scalar outputs
grad can be implicitly created only for scalar outputs
Mismatch in shape: grad_output[0] has a shape of torch.Size([3]) and output[0] has a shape of torch.Size([2]).
element 0 of tensors does not require grad and does not have a grad_fn
numel-1 non-scalar ok: tensor([[2.]])
tensor([3., 6.])
""")

_rule("R52", "autograd.grad input validation", r"""
a = torch.ones(2, requires_grad=True); b = torch.ones(2, requires_grad=True)
print(torch.autograd.grad((a * 2).sum(), (a, b), allow_unused=True))
print(torch.autograd.grad((a * 2).sum(), (a, b), materialize_grads=True))
for f in [lambda: torch.autograd.grad((a * 2).sum(), (a, b)), lambda: torch.autograd.grad((a * 2).sum(), (a, torch.ones(2)))]:
    try: f()
    except RuntimeError as e: print(e)
""", r"""
(tensor([2., 2.]), None)
(tensor([2., 2.]), tensor([0., 0.]))
The differentiated Tensor at index 1 appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior.
One of the differentiated Tensors does not require grad
""")

_rule("R53", "grad-mode context managers", r"""
a = torch.ones(2, requires_grad=True)
with torch.no_grad():
    b = a * 2
    with torch.enable_grad(): c = a * 2
torch.set_grad_enabled(False); d = a * 2; torch.set_grad_enabled(True)
with torch.set_grad_enabled(False): e = a * 2
print(b.requires_grad, b.grad_fn, c.requires_grad, c.grad_fn.name(), d.requires_grad, e.requires_grad, torch.is_grad_enabled())
""", r"""
False None True MulBackward0 False False True
""")

_rule("R54", "detach / detach_", r"""
a = torch.ones(2, requires_grad=True); b = a * 2; d = b.detach()
print(d.requires_grad, d.is_leaf, d.grad_fn, d._base, d.data_ptr() == b.data_ptr(), d._version == b._version)
x = torch.ones(2, requires_grad=True); y = torch.ones(2, requires_grad=True); h = x * 2
(y + h).sum().backward(retain_graph=True); h.detach_(); (y + h).sum().backward(); print(x.grad, y.grad)
z = torch.ones(10, 10, requires_grad=True); view = z.narrow(0, 1, 4); z.detach_()
print(z.requires_grad, view.requires_grad, view.grad_fn.name(), view._base is z)
try: (a * 2)[0:1].detach_()
except RuntimeError as e: print(e)
""", r"""
False True None None True True
tensor([2., 2.]) tensor([2., 2.])
False True SliceBackward0 True
Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and hence detach_() cannot be called on these gradients. To fix this error, please refer to the Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.
""")

_rule("R55", "double backward", r"""
a = torch.tensor(3., requires_grad=True); y = a ** 3
g, = torch.autograd.grad(y, a, create_graph=True); g2, = torch.autograd.grad(g, a)
print(g, g2)
""", r"""
tensor(27., grad_fn=<MulBackward0>) tensor(18.)
""")

# R56 ("Backward twice") has no snippet of its own in the catalog: it points to R18, which is here.

_rule("R57", "derivative conventions at kinks", r"""
def g(f, v):
    a = torch.tensor(v, requires_grad=True); f(a).sum().backward(); return a.grad.tolist()
print(g(torch.relu, [-1., 0., 1.]), g(lambda t: t.clone().relu_(), [-1., 0., 1.]), g(lambda t: t.clamp(0., 1.), [-1., 0., 1., 2.]),
      g(torch.abs, [-1., 0., 1.]), g(torch.max, [1., 3., 3.]))
""", r"""
[0.0, 0.0, 1.0] [0.0, 0.0, 1.0] [0.0, 1.0, 1.0, 0.0] [-1.0, 0.0, 1.0] [0.0, 0.5, 0.5]
""")

_rule("R58", "in-place into .grad and in-place after backward", r"""
a = torch.tensor([0.5, 1.5], requires_grad=True); (a * 2).sum().backward()
g = a.grad; g.zero_(); print(a.grad, g._version)
x = a * 1; y = x.sin(); y.sum().backward(); x.mul_(2); print(x._version)
""", r"""
tensor([0., 0.]) 1
1
""")

# =====================================================================================================
# J. ReLU(inplace=True) identity and hazards
# =====================================================================================================

_rule("R59", "identity of the object an in-place activation returns", r"""
# adapted: minigrad has no torch.nn / torch.nn.functional. Kept: torch.relu_ (which F.relu_ is),
# x.relu_(), and out-of-place torch.relu (as F.relu / nn.ReLU()); left out: F.relu(inplace=True) and the
# nn.ReLU/LeakyReLU/ReLU6/SiLU/ELU(inplace=True) modules, and the module repr. The view and plain-tensor
# cases call v.relu_() / p.relu_() where the catalog calls nn.ReLU(inplace=True).
for name, f in [("torch.relu_", torch.relu_), ("x.relu_()", lambda x: x.relu_()), ("torch.relu", torch.relu)]:
    x = torch.tensor([-1.0, 2.0], requires_grad=True).clone(); i = id(x); y = f(x)
    print(f"{name:27s} y is x={y is x} id equal={id(y) == i} x._version={x._version} y._version={y._version} x.grad_fn={x.grad_fn.name()}")
x = torch.tensor([[-1., 2.], [3., -4.]], requires_grad=True) * 1; v = x[0]; r = v.relu_()
print("on a view:", r is v, x.grad_fn.name(), v.grad_fn.name())
p = torch.tensor([-1., 2.]); q = p.relu_(); print("plain tensor:", q is p, p, p._version)
""", r"""
torch.relu_                 y is x=True id equal=True x._version=1 y._version=1 x.grad_fn=ReluBackward0
x.relu_()                   y is x=True id equal=True x._version=1 y._version=1 x.grad_fn=ReluBackward0
torch.relu                  y is x=False id equal=False x._version=0 y._version=0 x.grad_fn=CloneBackward0
on a view: True torch::autograd::CopySlices AsStridedBackward0
plain tensor: True tensor([0., 2.]) 1
""")

_rule("R60", "the multi-branch hazard", r"""
# adapted: F.relu(x, inplace=True) is written x.relu_() and F.relu(x) x.relu() (no nn.functional)
a = torch.tensor([-1.0, 2.0], requires_grad=True); x = a * 1
y = x.relu_(); z = x * 10
print("z sees modified x:", z); (y.sum() + z.sum()).backward(); print("in-place grad:", a.grad)
a2 = torch.tensor([-1.0, 2.0], requires_grad=True); x2 = a2 * 1
y2 = x2.relu(); z2 = x2 * 10; (y2.sum() + z2.sum()).backward(); print("out-of-place grad:", a2.grad)
a3 = torch.tensor([-1.0, 2.0], requires_grad=True); x3 = a3 * 1
out = x3 + x3.relu_(); print("x + relu_(x):", out); out.sum().backward(); print(a3.grad)
""", r"""
z sees modified x: tensor([ 0., 20.], grad_fn=<MulBackward0>)
in-place grad: tensor([ 0., 11.])
out-of-place grad: tensor([10., 11.])
x + relu_(x): tensor([0., 4.], grad_fn=<AddBackward0>)
tensor([0., 2.])
""")

_rule("R61", "when an in-place activation breaks backward", r"""
def t(label, build):
    a = torch.tensor([-1., 2.], requires_grad=True)
    try: loss = build(a); loss.backward(); print(label, "ok", a.grad.tolist())
    except RuntimeError as e: print(label, e)
# adapted: F.relu(x, inplace=True) and nn.ReLU(inplace=True)(t) are written x.relu_() / t.relu_(), and
# F.relu_ torch.relu_ (no nn / nn.functional in minigrad)
t("branch saved x:", lambda a: (lambda x: (lambda z: x.relu_().sum() + z.sum())(x.sin()))(a * 1))
t("sigmoid then relu_:", lambda a: torch.relu_(a.sigmoid()).sum())
t("tanh then ReLU(inplace):", lambda a: a.tanh().relu_().sum())
t("affine then relu_:", lambda a: torch.relu_(a * 2 + 1).sum())
t("leaf:", lambda a: a.relu_().sum())
""", r"""
branch saved x: one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [2]], which is output 0 of Relu, is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).
sigmoid then relu_: one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [2]], which is output 0 of Sigmoid, is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).
tanh then ReLU(inplace): one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [2]], which is output 0 of Tanh, is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).
affine then relu_: ok [0.0, 2.0]
leaf: a leaf Variable that requires grad is being used in an in-place operation.
""")

# =====================================================================================================
# K. Graph introspection
# =====================================================================================================

_rule("R62", "node objects and names visible from Python", r"""
from torch.autograd.graph import get_gradient_edge, Node
a = torch.tensor([1., 2.], requires_grad=True); x = a * 1
# adapted: x.grad_fn.metadata is not printed, and the last line of the catalog's snippet
# (type(y.grad_fn._raw_saved_result).__name__ == "SavedTensor") is left out: minigrad's nodes expose
# neither a metadata dict nor their saved tensors
print(type(x.grad_fn).__name__, isinstance(x.grad_fn, Node), x.grad_fn.name())
nf = x.grad_fn.next_functions; print([(type(n).__name__ if n is not None else None, i) for n, i in nf], nf[0][0].variable is a)
e = get_gradient_edge(a); print(type(e).__name__, type(e.node).__name__, e.output_nr)
x[0] = 5; print(type(x.grad_fn).__name__, x.grad_fn.name())
c = a.clone(); c.copy_(torch.ones(2)); print(type(c.grad_fn).__name__, c.grad_fn.name())
p, q = (a * 1).unbind(); print(get_gradient_edge(q).output_nr, q.grad_fn.name())
""", r"""
MulBackward0 True MulBackward0
[('AccumulateGrad', 0), (None, 0)] True
GradientEdge AccumulateGrad 0
CopySlices torch::autograd::CopySlices
CopyBackwards torch::autograd::CopyBackwards
1 UnbindBackward0
""")
