"""The examples' models for the in-place auditor: each function returns `(model, example_inputs)`,
the form `minigrad audit module:callable` takes.

Run: minigrad audit examples/audit_models.py:convnet
     minigrad audit examples/audit_models.py:convnet_skip_after_relu   (an unsafe variant)

`mlp`, `convnet` and `gan` are the models of mlp_digits.py, convnet_digits.py and
gan_gaussians.py, on a small random batch; every `inplace=True` in them is safe, and the audit
says how much each saves. `convnet_skip_after_relu` moves the residual block's skip connection
after its last in-place ReLU ("try moving it", says convnet_digits.py): ReLU's backward needs its
output, which `out += x` then overwrites.
"""

import minigrad
import convnet_digits
import gan_gaussians
import mlp_digits


def mlp():
    minigrad.manual_seed(0)
    return mlp_digits.build(minigrad), minigrad.rand(32, 64)


def convnet():
    minigrad.manual_seed(0)
    return convnet_digits.build(minigrad), minigrad.rand(16, 1, 8, 8)


def gan():
    """The generator and the discriminator in a row: D(G(z)), as in the generator's loss."""
    minigrad.manual_seed(0)
    generator, discriminator = gan_gaussians.build(minigrad)
    return minigrad.nn.Sequential(generator, discriminator), minigrad.randn(64, 8)


def convnet_skip_after_relu():
    minigrad.manual_seed(0)
    return skip_after_relu(convnet_digits.build(minigrad)), minigrad.rand(16, 1, 8, 8)


def skip_after_relu(model):
    """The conv net (of either library) with its residual block's skip moved after the ReLU;
    `block.add_in_place = False` adds it out of place instead (the tests switch it)."""
    block = model[3]
    block.add_in_place = True
    block.forward = _skip_after_relu.__get__(block)
    return model


def _skip_after_relu(self, x):
    out = self.relu(self.bn1(self.conv1(x)))
    out = self.relu(self.bn2(self.conv2(out)))
    if self.add_in_place:
        out += x              # overwrites what the ReLU above saved for its backward
    else:
        out = out + x
    return out
