"""A first tour of minigrad: tensors, views, in-place ops and the version counter.

Run: python examples/quickstart.py
Everything printed here is what torch prints for the same program (with `torch.` spelled
`minigrad.`), which is the point of minigrad.
"""

import numpy as np

import minigrad as mg


def section(title):
    print(f"\n== {title} ==")


section("tensors and type promotion")
x = mg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
print(x)
print("shape", x.shape, "stride", x.stride(), "dtype", x.dtype)
i = mg.arange(3)
print("int64 * 2.5 ->", (i * 2.5).dtype, "; bool + 1 ->", (mg.tensor([True]) + 1).dtype)

section("views share memory and the version counter")
v = x.t()                      # a view: no copy
print("v._base is x:", v._base is x, "| v.is_contiguous():", v.is_contiguous())
x.add_(1)                      # in place: writes x's memory, bumps the shared counter
print("after x.add_(1): x._version =", x._version, ", v._version =", v._version)
print("v sees the write:", v)

section("in-place ops return the same object; += mutates")
y = mg.ones(3)
same = y.mul_(2)
print("y.mul_(2) is y:", same is y)
before = id(y)
y += 1
print("y += 1 kept the object:", id(y) == before, "| version:", y._version)

section("copies start a fresh counter")
c = x.clone()
print("clone version:", c._version, "| .data version:", x.data._version, "| detach shares:", x.detach()._version)

section("NumPy interop is zero-copy")
a = x.numpy()
a[0, 0] = 100.0
print("write through numpy shows in x:", x[0, 0].item())
t = mg.from_numpy(np.arange(4.0))
print("from_numpy keeps float64:", t.dtype)

section("indexing: basic keys are views, advanced keys copy")
row = x[1]
picked = x[x > 3]
print("x[1] is a view:", row._base is x, "| x[x > 3] is a copy:", picked._base is None, picked)
before = x._version
x[0] += 1                      # __getitem__ (view), add_ (+1), __setitem__ copy_ (+1)
print("x[0] += 1 bumps the version by", x._version - before, "(as torch: rule R2)")

section("reductions and products")
print("sum:", x.sum().item(), "| max over dim 1:", x.max(1).values, "| x @ x.t():", (x @ x.t()).shape)

section("autograd: gradients, saved tensors and the version check")
w = mg.tensor([0.5, 1.5], requires_grad=True)
h = w * 2
out = (h.sin() * h).sum()
out.backward()
print("grad_fn:", out.grad_fn.name(), "| w.grad:", w.grad)
h2 = w * 1
s2 = h2.sin()                  # SinBackward0 saves its input h2 (at version 0)
h2.mul_(2)                     # ... which this in-place op changes (version 1)
try:
    s2.sum().backward()
except RuntimeError as e:
    print("RuntimeError:", str(e).split(" Hint:")[0])
z = mg.tensor([-1.0], requires_grad=True).clone()
r = z.relu_()                  # the same object, its history rebased onto ReluBackward0
print("relu_ returns self:", r is z, "| grad(relu_(z), z):", mg.autograd.grad(r, (z,))[0], "(rule R20)")

section("errors read like torch's")
for bad in (lambda: mg.zeros(3).add_(mg.zeros(2, 3)), lambda: mg.zeros(3).expand(2, 3).mul_(2),
            lambda: mg.arange(6).view(4, -1)):
    try:
        bad()
    except RuntimeError as e:
        print("RuntimeError:", e)

section("exact memory accounting")
mg.memory.reset_peak()
big = mg.zeros(1_000_000)
print("allocated:", mg.memory.allocated(), "bytes; peak:", mg.memory.peak(), "bytes")
del big
print("after del:", mg.memory.allocated(), "bytes (the freed block is cached for reuse)")
