"""torch.nn's module classes, one file per family (as torch/nn/modules)."""

from .activation import CELU, ELU, GELU, SELU, LeakyReLU, LogSoftmax, ReLU, SiLU, Sigmoid, Softmax, Tanh
from .batchnorm import BatchNorm1d, BatchNorm2d
from .container import ModuleDict, ModuleList, Sequential
from .conv import Conv2d
from .dropout import Dropout
from .flatten import Flatten, Unflatten
from .linear import Identity, Linear
from .loss import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, L1Loss, MSELoss, NLLLoss, SmoothL1Loss
from .module import Module
from .normalization import LayerNorm
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
from .sparse import Embedding

__all__ = [
    "Module", "Sequential", "ModuleList", "ModuleDict", "Identity", "Linear", "Conv2d", "ReLU", "LeakyReLU", "ELU", "SELU", "CELU",
    "Sigmoid", "Tanh", "GELU", "SiLU", "Softmax", "LogSoftmax", "Dropout", "BatchNorm1d", "BatchNorm2d", "LayerNorm",
    "Flatten", "Unflatten", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "Embedding", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss",
    "NLLLoss", "CrossEntropyLoss", "BCELoss", "BCEWithLogitsLoss",
]
