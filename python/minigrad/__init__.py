"""minigrad: a small, exact, fast tensor library for learning and testing PyTorch's semantics.

    import minigrad as mg
    x = mg.tensor([[1., 2.], [3., 4.]])
    x.t_()             # in place, version counter bumped
    x._version         # 1
"""

from . import _C
from ._C import (  # noqa: A004 (torch's names)
    bfloat16, bool, dtype, float16, float32, float64, int8, int16, int32, int64, promote_types, uint8,
)
from ._creation import (
    arange, as_tensor, empty, empty_like, eye, from_dlpack, from_numpy, full, full_like, linspace,
    manual_seed, ones, ones_like, rand, rand_like, randint, randn, randn_like, tensor, zeros,
    zeros_like,
)
from ._device import device
from ._formatting import set_printoptions
from ._random import Generator, default_generator, get_rng_state, randperm, set_rng_state
from ._size import Size
from ._tensor import Tensor
from . import _ops

globals().update(_ops.FUNCTIONS)  # the module-level ops, minigrad.add, minigrad.exp, ... (python/minigrad/_ops/)
from . import cuda, memory  # noqa: F401
from .serialization import load, save  # noqa: F401
from . import autograd  # noqa: F401
from . import optim  # noqa: F401
from .autograd.grad_mode import (  # noqa: F401
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled,
)

float = float32  # noqa: A001
double = float64
long = int64
int = int32  # noqa: A001
half = float16
short = int16

_C._set_classes(Tensor, Size)

from . import nn  # noqa: E402,F401  (torch.nn is there after `import torch`, too)
from ._torch_activations import celu, celu_, selu, selu_  # noqa: E402,F401  (torch.selu, torch.celu)
from . import func, utils  # noqa: E402,F401  (torch.func, torch.utils.data)
from . import random  # noqa: E402,F401  (torch.random: fork_rng, get/set_rng_state)
from . import linalg  # noqa: E402,F401  (torch.linalg: cross)
from .inplace import audit  # noqa: E402,F401  (beyond torch: the in-place auditor)

__version__ = "0.1.0"
