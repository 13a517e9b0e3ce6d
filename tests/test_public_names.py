"""The public surface stays whole: every public attribute of `minigrad.Tensor` and of the `minigrad`
module that existed when the op wrappers moved into `minigrad._ops` (see docs/architecture.md) is
still there. Losing a name fails; new names are welcome (add them here when they are public API).
Private names (`_x`) are free to move, except `Tensor._version` and `Tensor._base` (torch's).
(`Tensor.FUNCTIONS` and `Tensor.MODULE_FUNCTIONS`, the bookkeeping of the op-family mixins that
`_ops` replaced, were dropped from the list with them: they were never torch API.)"""

import minigrad

TENSOR_NAMES = """
T __abs__ __add__ __and__ __array__ __array_priority__ __array_wrap__
__bool__ __class__ __complex__ __delattr__ __delitem__ __dict__ __dir__ __doc__ __eq__ __float__
__floordiv__ __format__ __ge__ __getattribute__ __getitem__ __getstate__ __gt__ __hash__
__iadd__ __iand__ __ifloordiv__ __imod__ __imul__ __index__ __init__ __init_subclass__ __int__
__invert__ __ior__ __ipow__ __isub__ __iter__ __itruediv__ __ixor__ __le__ __len__ __lt__
__matmul__ __mod__ __module__ __mul__ __ne__ __neg__ __new__ __or__ __pos__ __pow__ __radd__
__rand__ __reduce__ __reduce_ex__ __repr__ __rfloordiv__ __rmatmul__ __rmod__ __rmul__ __ror__
__rpow__ __rsub__ __rtruediv__ __rxor__ __setattr__ __setitem__ __sizeof__ __str__ __sub__
__subclasshook__ __truediv__ __weakref__ __xor__ _base _version abs abs_ absolute absolute_ add
add_ addmm all amax amin any argmax argmin as_strided as_strided_ backward bitwise_and
bitwise_and_ bitwise_not bitwise_not_ bitwise_or bitwise_or_ bitwise_xor bitwise_xor_ bmm bool
ceil ceil_ chunk clamp clamp_ clamp_max clamp_max_ clamp_min clamp_min_ clip clip_ clone
contiguous copy_ cos cos_ count_nonzero cpu cuda data data_ptr detach detach_ device diagonal
dim div div_ divide divide_ dot double dtype element_size eq eq_ exp exp_ expand expand_as expm1
expm1_ fill_ flatten float floor floor_ floor_divide floor_divide_ gather ge ge_ grad grad_fn
greater greater_ greater_equal greater_equal_ gt gt_ index_add index_add_ index_put index_put_
index_select int is_contiguous is_cuda is_floating_point is_leaf item itemsize le le_ less less_
less_equal less_equal_ log log1p log1p_ log_ log_softmax logical_and logical_and_ logical_not
logical_not_ logical_or logical_or_ logical_xor logical_xor_ logsumexp long lt lt_ mT
masked_fill masked_fill_ masked_select matmul max maximum mean min minimum mm mul mul_ multiply
multiply_ mv narrow nbytes ndim ndimension ne ne_ neg neg_ negative negative_ nelement nonzero
norm normal_ not_equal not_equal_ numel numpy output_nr permute positive pow pow_ prod
reciprocal reciprocal_ register_hook relu relu_ remainder remainder_ requires_grad
requires_grad_ reshape reshape_as retain_grad retains_grad round round_ rsqrt rsqrt_ scatter
scatter_ scatter_add scatter_add_ select shape sigmoid sigmoid_ sign sign_ sin sin_ size softmax
split split_with_sizes sqrt sqrt_ square square_ squeeze squeeze_ std storage_offset stride sub
sub_ subtract subtract_ sum swapaxes swapaxes_ t t_ tanh tanh_ to tolist transpose transpose_
true_divide true_divide_ trunc trunc_ type_as unbind unfold uniform_ unsqueeze unsqueeze_
untyped_storage_nbytes var view view_as where zero_
dsplit hsplit movedim moveaxis swapdims tensor_split unflatten vsplit
""".split()

MODULE_NAMES = """
Size Tensor __version__ abs abs_ absolute add addmm all amax amin any arange argmax argmin audit
as_strided as_tensor autograd bitwise_and bitwise_not bitwise_or bitwise_xor bmm bool cat ceil
ceil_ chunk clamp clamp_ clamp_max clamp_max_ clamp_min clamp_min_ clip clip_ clone concat
concatenate cos cos_ count_nonzero detach detach_ device diagonal div divide dot double dtype
empty empty_like enable_grad eq exp exp_ expm1 expm1_ eye fill_ flatten float float32 float64
floor floor_ floor_divide from_numpy full full_like gather ge greater greater_equal gt index_add
index_put index_put_ index_select inference_mode int int32 int64 is_floating_point
inplace is_grad_enabled is_inference_mode_enabled is_tensor le less less_equal linspace load log log1p
log1p_ log_ log_softmax logical_and logical_not logical_or logical_xor logsumexp long lt
manual_seed masked_fill masked_select matmul max maximum mean memory min minimum mm mul multiply
mv narrow ne neg neg_ negative negative_ nn no_grad nonzero norm not_equal numel ones ones_like
optim permute positive pow prod rand rand_like randint randn randn_like reciprocal reciprocal_
relu relu_ remainder reshape result_type return_types round round_ rsqrt rsqrt_ save scatter
scatter_add select serialization set_grad_enabled set_printoptions sigmoid sigmoid_ sign sin
sin_ softmax split split_with_sizes sqrt sqrt_ square square_ squeeze stack std sub subtract sum
swapaxes t tanh tanh_ tensor transpose true_divide trunc trunc_ unbind unsqueeze var where zero_
zeros zeros_like
dsplit hsplit movedim moveaxis swapdims tensor_split unflatten vsplit
""".split()


def test_tensor_keeps_every_public_attribute():
    missing = sorted(set(TENSOR_NAMES) - set(dir(minigrad.Tensor)))
    assert not missing, f"minigrad.Tensor lost {missing}"


def test_module_keeps_every_public_name():
    missing = sorted(set(MODULE_NAMES) - set(dir(minigrad)))
    assert not missing, f"minigrad lost {missing}"

