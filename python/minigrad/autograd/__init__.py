"""minigrad.autograd: reverse-mode automatic differentiation.

The graph, the engine, saved tensors and the in-place rules live in the Rust core
(`rust/core/src/autograd/`); this package is the Python surface: `backward`, `grad`, grad
modes, custom `Function`s, anomaly mode, `gradcheck`, and graph introspection."""

from . import graph  # noqa: F401  (registers the node classes with the core)
from .engine import _is_checkpoint_valid, backward, grad  # noqa: F401  (also attaches Tensor.backward / register_hook)
from . import functional  # noqa: F401  (jacobian, hessian, vjp, jvp, hvp, vhp)
from .anomaly_mode import detect_anomaly, set_detect_anomaly, is_anomaly_enabled, is_anomaly_check_nan_enabled
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled

__all__ = [
    "backward", "grad", "Function", "FunctionCtx", "once_differentiable", "no_grad", "enable_grad",
    "set_grad_enabled", "inference_mode", "is_grad_enabled", "is_inference_mode_enabled",
    "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
    "gradcheck", "gradgradcheck", "graph", "functional",
]


def __getattr__(name):
    # gradcheck imports minigrad lazily; load it on first use.
    if name in ("gradcheck", "gradgradcheck", "GradcheckError"):
        import importlib
        mod = importlib.import_module(".gradcheck", __name__)
        for n in ("gradcheck", "gradgradcheck", "GradcheckError"):
            globals()[n] = getattr(mod, n)  # the functions shadow the submodule's name
        return globals()[name]
    raise AttributeError(f"module 'minigrad.autograd' has no attribute '{name}'")
