"""The reference library, imported only when a comparison needs it (minigrad does not need torch)."""


def require_torch(what):
    """`import torch`, or an ImportError that says which call needed it and how to get it."""
    try:
        import torch
    except ImportError as e:
        raise ImportError(
            f"{what} compares minigrad against PyTorch, but torch is not installed: "
            "pip install torch (minigrad's own tests pin torch==2.13.0)"
        ) from e
    return torch
