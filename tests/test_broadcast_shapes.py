"""minigrad.broadcast_shapes against torch.broadcast_shapes: random shapes (ints, tuples, lists,
None, zero and one sizes), the Size it returns, and every error with torch's type and words."""

import hypothesis.extra.numpy as hnp
from hypothesis import given, strategies as st

import minigrad as mg
import torch
from parity import check_parity


@st.composite
def shape_lists(draw):
    base = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3))
    shapes = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["compatible", "compatible", "random", "int", "none", "list"]))
        if kind == "compatible":
            cut = draw(st.integers(0, len(base)))
            shapes.append(tuple(1 if draw(st.booleans()) else d for d in base[cut:]))
        elif kind == "random":
            shapes.append(draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3)))
        elif kind == "int":
            shapes.append(draw(st.integers(0, 3)))
        elif kind == "none":
            shapes.append(None)
        else:
            shapes.append(list(base))
    return shapes


@given(shapes=shape_lists())
def test_matches_torch(shapes):
    kind, got, want = check_parity(lambda: mg.broadcast_shapes(*shapes), lambda: torch.broadcast_shapes(*shapes))
    if kind == "ok":
        assert type(got) is mg.Size and tuple(got) == tuple(want)


def test_errors_match_torch():
    for shapes in [((2,), (3,)), ((2, -1),), ((1,), (-1,)), ("a",), ((2.0,),), (object(),)]:
        check_parity(lambda: mg.broadcast_shapes(*shapes), lambda: torch.broadcast_shapes(*shapes))
