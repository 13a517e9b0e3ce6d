"""In-place update helpers that torch's optimizers call but `minigrad.Tensor` lacks.

`lerp_`, `addcmul_` and `addcdiv_` are composed from ordinary tensor ops in the
order torch's CPU kernels evaluate them, so each still mutates its target with a
single in-place op (one `_version` bump, like torch's fused kernel). The only
difference left is rounding: torch's AVX2 kernels fuse the final multiply-add
(an FMA), minigrad rounds the product first — at most an ulp per step.
Callers run these under `no_grad()`.
"""


def lerp_(target, end, weight):
    """target += weight * (end - target), torch's form for |weight| < 0.5."""
    diff = end.sub(target)
    if abs(weight) < 0.5:
        return target.add_(diff, alpha=weight)
    # torch switches to end - (end - target) * (1 - weight) for large weights
    return target.copy_(end.sub(diff.mul(1 - weight)))


def addcmul_(target, tensor1, tensor2, value=1):
    """target += (value * tensor1) * tensor2."""
    return target.add_(tensor1.mul(value).mul(tensor2))


def addcdiv_(target, tensor1, tensor2, value=1):
    """target += (value * tensor1) / tensor2 (the order torch's CPU kernel uses)."""
    return target.add_(tensor1.mul(value).div(tensor2))
