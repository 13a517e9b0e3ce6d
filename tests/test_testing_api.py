"""minigrad.testing.compare_with_torch: passes when minigrad does what torch does, and fails, with
a readable account, on every kind of difference.

The differences are real: each failing function does something else under one library
(`... if lib is torch else ...`), so both runs go through the real libraries."""

import numpy as np
import pytest
import torch

import minigrad as mg
from minigrad.testing import ComparisonError, ComparisonReport, TensorSpec, compare_with_torch


def differences(fn, *inputs, **kw):
    """The (kind, where) of every difference compare_with_torch reports, and its message."""
    with pytest.raises(AssertionError) as info:
        compare_with_torch(fn, *inputs, **kw)
    err = info.value
    assert isinstance(err, ComparisonError)
    return [(d.kind, d.where) for d in err.report.differences], str(err)


# ----- agreement -----

def test_agreeing_function_returns_a_report_of_both_runs():
    def f(lib, x, w):
        y = x * w
        y.relu_()
        return y.sum(0), y

    report = compare_with_torch(f, [[1.0, -2.0], [3.0, 4.0]], np.array([0.5, -1.0], dtype=np.float32))
    assert isinstance(report, ComparisonReport) and report.ok and report.differences == []
    assert [w for w, _ in report.minigrad.outputs] == ["output[0]", "output[1]"]
    (_, t_sum), (_, t_y) = report.torch.outputs
    (_, m_sum), (_, m_y) = report.minigrad.outputs
    assert type(t_sum.grad_fn).__name__ == type(m_sum.grad_fn).__name__ == "SumBackward1"
    assert t_y._version == m_y._version == 1  # relu_ bumped it in both
    assert report.torch.ran_backward and report.minigrad.ran_backward
    np.testing.assert_array_equal(report.minigrad.grads[0].numpy(), report.torch.grads[0].numpy())
    assert "minigrad agrees with torch" in str(report)


def test_same_error_in_both_is_agreement():
    # in-place on a leaf that requires grad: the same RuntimeError in both
    report = compare_with_torch(lambda lib, x: x.add_(1), [1.0, 2.0])
    assert type(report.torch.error).__name__ == type(report.minigrad.error).__name__ == "RuntimeError"
    assert report.torch.input_versions == report.minigrad.input_versions == [0]


def test_torch_named_in_torch_message_matches_minigrad_named_in_minigrad():
    def f(lib, x):
        b = x.exp()
        b.add_(1)  # modifies what ExpBackward0 saved: backward raises in both
        return b

    report = compare_with_torch(f, [1.0, 2.0])
    t_msg, m_msg = str(report.torch.backward_error), str(report.minigrad.backward_error)
    assert "torch.FloatTensor" in t_msg and "minigrad.FloatTensor" in m_msg


def test_inputs_of_every_kind_keep_dtype_layout_and_are_not_modified():
    t_in = torch.arange(12.0).reshape(3, 4).t()[1:]  # non-contiguous with an offset
    m_in = mg.arange(6, dtype=mg.int32).reshape(2, 3)

    def f(lib, a, b, c, d):
        a.mul_(2)
        return (a.stride(), a.storage_offset(), a.is_contiguous(), str(b.dtype).split(".")[-1],
                str(c.dtype).split(".")[-1], d.stride(), a)

    report = compare_with_torch(f, t_in, [1, 2], [[True], [False]], m_in, grad=False)
    stride, offset, contiguous, b_dtype, c_dtype, d_stride, _ = report.torch.result
    assert (stride, offset, contiguous) == (t_in.stride(), t_in.storage_offset(), False)
    assert (b_dtype, c_dtype, d_stride) == ("int64", "bool", (3, 1))
    assert t_in._version == 0 and t_in[0, 0].item() == 1.0  # the caller's tensor is untouched


def test_check_stride_compares_strides():
    def f(lib, x):
        return x.t().contiguous() if lib is torch else x.t()

    assert compare_with_torch(f, [[1.0, 2.0], [3.0, 4.0]], grad=False).ok
    kinds, text = differences(f, [[1.0, 2.0], [3.0, 4.0]], grad=False, check_stride=True)
    assert kinds == [("stride", "output")]
    assert "(2, 1)" in text and "(1, 2)" in text


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("delta", [1e-9, 1e-7, 1e-6, 1e-5, 1e-3])
def test_default_tolerances_are_torch_testing_assert_close_defaults(dtype, delta):
    x = np.array([1.0, 100.0], dtype=dtype)

    def f(lib, x):
        return x + delta if lib is torch else x + 0.0

    try:
        torch.testing.assert_close(torch.from_numpy(x) + 0.0, torch.from_numpy(x) + delta)
        torch_agrees = True
    except AssertionError:
        torch_agrees = False
    if torch_agrees:
        assert compare_with_torch(f, x, grad=False).ok
    else:
        kinds, _ = differences(f, x, grad=False)
        assert kinds == [("value", "output")]
    compare_with_torch(f, x, grad=False, rtol=1e-2, atol=1e-2)  # explicit tolerances


# ----- each kind of difference -----

def test_value_difference():
    kinds, text = differences(lambda lib, x: x + (1 if lib is torch else 2), [1.0, 2.0, 3.0])
    assert kinds == [("value", "output")]
    assert "output: values differ" in text and "Mismatched elements: 3 / 3 (100.0%)" in text
    assert "Greatest absolute difference: 1" in text


def test_dtype_difference():
    kinds, text = differences(lambda lib, x: x.double() if lib is torch else x.float(), [1, 2], grad=False)
    assert kinds == [("dtype", "output")]
    assert "torch:    float64" in text and "minigrad: float32" in text


def test_shape_difference():
    kinds, text = differences(lambda lib, x: x.unsqueeze(0) if lib is torch else x, [1, 2], grad=False)
    assert kinds == [("shape", "output")]
    assert "torch:    [1, 2]" in text and "minigrad: [2]" in text


def test_structure_difference():
    kinds, text = differences(lambda lib, x: (x, x) if lib is torch else (x,), [1, 2], grad=False)
    assert kinds == [("structure", "output")]
    assert "tuple of 2" in text and "tuple of 1" in text


def test_grad_value_difference():
    # the same values and node names; minigrad's product does not see x through its second factor
    kinds, text = differences(lambda lib, x: x * x if lib is torch else x * x.detach(), [1.0, 2.0])
    assert kinds == [("grad", "input[0].grad")]
    assert "gradients differ" in text and "values differ" in text


def test_grad_missing_difference():
    kinds, text = differences(lambda lib, x, y: x + (y if lib is torch else y.detach()), [1.0], [2.0])
    assert kinds == [("grad", "input[1].grad")]
    assert "minigrad: None" in text


def test_version_difference():
    kinds, text = differences(lambda lib, x: x.add_(0) if lib is torch else x, [1, 2], grad=False)
    assert kinds == [("version", "output._version"), ("version", "input[0]._version")]
    assert "input[0]._version: versions differ\n      torch:    1\n      minigrad: 0" in text
    # without check_versions the same runs agree
    assert compare_with_torch(lambda lib, x: x.add_(0) if lib is torch else x, [1, 2], grad=False,
                              check_versions=False).ok


def test_grad_fn_name_difference():
    kinds, text = differences(lambda lib, x: x.mul(2) if lib is torch else x.add(x), [1.0, 2.0])
    assert kinds == [("grad_fn", "output.grad_fn")]
    assert "torch:    MulBackward0" in text and "minigrad: AddBackward0" in text


def test_requires_grad_difference():
    kinds, _ = differences(lambda lib, x: x * 2 if lib is torch else x.detach() * 2, [1.0])
    assert kinds == [("requires_grad", "output.requires_grad"), ("grad_fn", "output.grad_fn"),
                     ("grad", "input[0].grad")]


def test_exception_class_difference():
    kinds, text = differences(lambda lib, x: x.view(4) if lib is torch else x[5], [1.0, 2.0, 3.0])
    assert kinds == [("exception", "forward")]
    assert "different exception classes" in text
    assert "RuntimeError: shape '[4]' is invalid for input of size 3" in text and "IndexError" in text


def test_exception_message_difference():
    kinds, text = differences(lambda lib, x: x.view(4 if lib is torch else 5), [1.0, 2.0, 3.0])
    assert kinds == [("exception", "forward")]
    assert "different messages" in text and "shape '[5]'" in text


@pytest.mark.parametrize("raiser", ["torch", "minigrad"])
def test_one_raises_the_other_does_not(raiser):
    def f(lib, x):
        return x.view(4) if (lib is torch) == (raiser == "torch") else x.view(3)

    kinds, text = differences(f, [1.0, 2.0, 3.0])
    assert kinds == [("exception", "forward")]
    assert "one raised and the other did not" in text
    returned = "minigrad: returned" if raiser == "torch" else "torch:    returned"
    assert returned in text


def test_backward_raises_in_one_only():
    def f(lib, x):
        b = x.exp()
        return b.add_(1) if lib is torch else b.add(1)

    kinds, text = differences(f, [1.0, 2.0])
    assert ("exception", "backward") in kinds
    assert "modified by an inplace operation" in text


def test_report_lists_every_difference_and_both_runs():
    def f(lib, x):
        y = x * 2
        if lib is torch:
            y.add_(1)
        return y

    kinds, text = differences(f, [1.0, 2.0])
    assert kinds == [("value", "output"), ("grad_fn", "output.grad_fn"), ("version", "output._version")]
    assert "minigrad differs from torch in 3 places" in text
    assert "torch ran:" in text and "minigrad ran:" in text


def test_unsupported_input_dtype_is_refused():
    with pytest.raises(TypeError, match="float16"):
        compare_with_torch(lambda lib, x: x, np.zeros(2, dtype=np.float16))


def test_tensor_spec_input():
    spec = TensorSpec(np.arange(6, dtype=np.float64).reshape(2, 3), (("permute", (1, 0)),))
    report = compare_with_torch(lambda lib, x: (x.stride(), x * x), spec)
    assert report.torch.result[0] == (1, 3)
