"""What does backward keep? Saved-tensor hooks show it, and checkpointing changes it.

Run: python examples/what_backward_keeps.py   (the same program runs on torch: --torch)

1. A pack hook prints every tensor saved for backward, with its version; the unpack hook prints
   its version again when backward reads it. After a Linear, an in-place ReLU keeps only its own
   output, the very tensor it overwrote: nobody needs the old values, the in-place op is legal.
2. After a sigmoid, which keeps its output for its own backward, the same in-place ReLU
   overwrites a saved tensor: the unpack log shows a tensor read at a newer version than it was
   saved at. Hooks switch autograd's own version check off (the tensor is the hooks' business
   then), so the program is run once more without them: backward raises the version error.
3. Checkpointing keeps none of a block's saved tensors and recomputes them in backward:
   minigrad's allocator counts the bytes a forward leaves alive either way.
"""

import sys

if "--torch" in sys.argv:
    import torch as lib
else:
    import minigrad as lib
nn = lib.nn


def logged(run):
    """Runs `run(names)` forward and backward with hooks that log each save and each read, then
    prints the log (naming the tensors `run` put in `names`)."""
    names, events = {}, []

    def pack(t):
        events.append(("saved", t, t._version, None))
        return (t, t._version)

    def unpack(packed):
        t, version = packed
        events.append(("read", t, t._version, version))
        return t
    with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = run(names)
        events.append(("backward",))
        y.sum().backward()
    for event in events:
        if event[0] == "backward":
            print("  backward:")
            continue
        kind, t, now, saved_at = event
        who = next((k for k, v in names.items() if v is t), "another tensor")
        note = "" if saved_at in (None, now) else f"  <-- overwritten since it was saved at version {saved_at}"
        print(f"  {kind:<6} {tuple(t.shape)} {who} at version {now}{note}")


lib.manual_seed(0)
x = lib.randn(2, 4)
lin1, relu, lin2 = nn.Linear(4, 3), nn.ReLU(inplace=True), nn.Linear(3, 2)


def after_linear(names):
    names["x (input)"] = x
    h = lin1(x)
    names["h (Linear output)"] = h
    return lin2(relu(h))


def after_sigmoid(names):
    names["x (input)"] = x
    s = lin1(x).sigmoid()
    names["s (sigmoid output)"] = s
    return relu(s)


print("1. Linear -> ReLU(inplace=True) -> Linear")
logged(after_linear)
print("2. Linear -> sigmoid -> ReLU(inplace=True)")
logged(after_sigmoid)
print("   without hooks:")
try:
    after_sigmoid({}).sum().backward()
except RuntimeError as e:
    print("  ", str(e).split(" Hint")[0])

if lib.__name__ == "minigrad":
    print("3. bytes a forward leaves alive for backward (minigrad.memory)")
    ws = [lib.randn(256, 256, requires_grad=True) for _ in range(6)]
    inp = lib.randn(128, 256)

    def block(h):
        for w in ws:
            h = (h @ w).tanh()
        return h
    for label, run in [("plain", lambda: block(inp)),
                       ("checkpoint", lambda: lib.utils.checkpoint.checkpoint(block, inp, use_reentrant=False))]:
        before = lib.memory.allocated()
        out = run().sum()
        kept = lib.memory.allocated() - before
        out.backward()
        print(f"   {label:<10} keeps {kept // 2**10:4d} KiB until backward")
