"""`minigrad.nn.functional`: torch.nn.functional's names, each a thin call into the core."""

from ._functional.activation import *  # noqa: F401,F403
from ._functional.conv import *  # noqa: F401,F403
from ._functional.linear import *  # noqa: F401,F403
from ._functional.loss import *  # noqa: F401,F403
from ._functional.norm import *  # noqa: F401,F403
