"""Shared pytest setup: hypothesis profiles (CI runs more examples) and the torch pin check."""

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "dev", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci", max_examples=150, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))

TORCH_PIN = "2.13.0"


@pytest.fixture(scope="session", autouse=True)
def _torch_version_pinned():
    """Parity is defined against one torch version; refuse to compare against another."""
    import torch

    if os.environ.get("MINIGRAD_TORCH_PIN") == "any":  # a GPU machine with its own torch (docs/gpu.md)
        return
    assert torch.__version__.split("+")[0] == TORCH_PIN, (
        f"tests compare against torch {TORCH_PIN}; installed {torch.__version__}"
    )
