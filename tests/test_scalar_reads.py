"""Reading a value is not a view: item(), float(), int(), bool(), tolist(), format() and repr()
of a multi-output view (unbind/split/chunk) whose base was later modified in place answer as
torch does, instead of applying the view rules that a differentiable op on it would trip."""

import pytest
import torch

import minigrad

READS = {
    "item": lambda a: a.item(),
    "float": float,
    "int": int,
    "bool": bool,
    "tolist": lambda a: a.tolist(),
    "format": lambda a: "{:.3f}".format(a),
    "repr": repr,
    # comparisons record no autograd node, so torch never checks the view (found by the fuzzer)
    "== number": lambda a: (a == 3).tolist(),
    "> number": lambda a: (a > 2).tolist(),
    "ne tensor": lambda a: a.ne(a).tolist(),
    "numpy": lambda a: a.detach().numpy().tolist(),
}

SPLITS = {
    "unbind": lambda x: x.unbind()[0],
    "split": lambda x: x.split(1)[1],
    "chunk": lambda x: x.chunk(2)[1],
}


def stale_piece(lib, split):
    x = lib.tensor([1.5, 2.5], requires_grad=True).clone()
    piece = SPLITS[split](x)
    x.mul_(2)
    return piece


@pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad=True")
@pytest.mark.parametrize("split", sorted(SPLITS))
@pytest.mark.parametrize("read", sorted(READS))
def test_reading_a_stale_multi_output_view(read, split):
    def outcome(lib):
        try:
            return READS[read](stale_piece(lib, split))
        except Exception as e:  # format() of a 1-element 1-d tensor is a TypeError in both
            return type(e).__name__
    want, got = outcome(torch), outcome(minigrad)
    if read == "repr":
        want = want.replace("torch", "minigrad")
    assert got == want


def test_a_differentiable_op_on_it_still_raises_as_torch():
    with pytest.raises(RuntimeError) as t_err:
        stale_piece(torch, "unbind") * 2
    with pytest.raises(RuntimeError) as m_err:
        stale_piece(minigrad, "unbind") * 2
    assert str(m_err.value) == str(t_err.value).replace("torch", "minigrad")
