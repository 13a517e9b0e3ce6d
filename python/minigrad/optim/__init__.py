"""minigrad.optim: optimizers that update parameters in place, as torch.optim does.

    opt = minigrad.optim.SGD([w], lr=0.1, momentum=0.9)
    loss.backward(); opt.step(); opt.zero_grad()
"""

from . import lr_scheduler
from .adam import Adam
from .adamw import AdamW
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "lr_scheduler"]
