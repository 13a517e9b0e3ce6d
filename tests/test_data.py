"""minigrad.utils.data against torch.utils.data (torch 2.13): batching, lengths, drop_last, collate
structure and dtypes, samplers, datasets, random_split, argument errors. Shuffled orders come from
minigrad's own streams, so shuffling is checked for what torch guarantees (each epoch a permutation,
batch sizes, reproducibility under a seed, which random state it consumes), not for torch's order."""

import collections
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as TD
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
import minigrad.utils.data as MD
from parity import assert_same, assert_same_error, run_both

DATA = {torch: TD, mg: MD}
Point = collections.namedtuple("Point", "x y")


def assert_same_batch(m, t):
    """Same structure (container types, keys, lengths), tensors equal in dtype, shape and values."""
    if isinstance(t, torch.Tensor):
        assert_same(m, t)
        assert m.requires_grad == t.requires_grad
        return
    assert type(m).__name__ == type(t).__name__, (type(m), type(t))
    if isinstance(t, dict):
        assert list(m) == list(t)
        for k in t:
            assert_same_batch(m[k], t[k])
    elif isinstance(t, (list, tuple)):
        assert len(m) == len(t)
        for a, b in zip(m, t):
            assert_same_batch(a, b)
    elif isinstance(t, np.ndarray):
        np.testing.assert_array_equal(m, t)
    else:
        assert m == t and type(m) is type(t)


def to_lib(L, sample):
    """A sample description with `("tensor", array)` leaves, built for library L."""
    if isinstance(sample, tuple) and len(sample) == 2 and sample[0] == "tensor":
        return L.from_numpy(np.array(sample[1]))
    if isinstance(sample, Point):
        return Point(*(to_lib(L, s) for s in sample))
    if isinstance(sample, dict):
        return type(sample)((k, to_lib(L, v)) for k, v in sample.items())
    if isinstance(sample, (list, tuple)):
        return type(sample)(to_lib(L, s) for s in sample)
    return sample


def T(a, dtype=None):
    return ("tensor", np.asarray(a, dtype=dtype))


SAMPLES = {  # name -> function of i giving sample i
    "float32_tensor": lambda i: T(np.arange(3) + i, np.float32),
    "int64_tensor": lambda i: T([i, 2 * i], np.int64),
    "bool_tensor": lambda i: T([i % 2 == 0], np.bool_),
    "float64_scalar_tensor": lambda i: T(i / 3, np.float64),
    "int32_tensor": lambda i: T([[i]], np.int32),
    "numpy_float32": lambda i: np.full((2, 2), i, dtype=np.float32),
    "numpy_int32": lambda i: np.arange(3, dtype=np.int32) * i,
    "numpy_bool": lambda i: np.array([i % 3 == 0]),
    "numpy_float_scalar": lambda i: np.float32(i / 2),
    "numpy_float64_scalar": lambda i: np.float64(i / 7),
    "numpy_int_scalar": lambda i: np.int64(i),
    "numpy_bool_scalar": lambda i: np.bool_(i % 2),
    "python_int": lambda i: i,
    "python_float": lambda i: i * 0.25,
    "python_bool": lambda i: i % 2 == 1,
    "string": lambda i: f"s{i}",
    "bytes": lambda i: bytes([i]),
    "tuple": lambda i: (T([i], np.float32), i),
    "list": lambda i: [i, float(i), T(i, np.int64)],
    "dict": lambda i: {"x": T([i, i], np.float32), "label": i, "name": f"n{i}"},
    "ordered_dict": lambda i: collections.OrderedDict(b=i, a=T(i, np.float64)),
    "namedtuple": lambda i: Point(T([i], np.float32), i * 1.5),
    "nested": lambda i: {"pair": (T([i], np.float32), [i, {"deep": np.float32(i)}])},
}


class ListDataset:
    def __init__(self, items):
        self.items = items

    def __getitem__(self, i):
        return self.items[i]

    def __len__(self):
        return len(self.items)


@pytest.mark.parametrize("name", sorted(SAMPLES))
@pytest.mark.parametrize("batch_size", [1, 3, None])
def test_default_collate_and_convert_match_torch(name, batch_size):
    make = SAMPLES[name]
    batches = {}
    for L in (torch, mg):
        items = [to_lib(L, make(i)) for i in range(5)]
        loader = DATA[L].DataLoader(ListDataset(items), batch_size=batch_size)
        batches[L] = list(loader)
    assert len(batches[mg]) == len(batches[torch])
    for m, t in zip(batches[mg], batches[torch]):
        assert_same_batch(m, t)


@pytest.mark.parametrize("batch", [
    [None, None], [object()], [[1, 2], [1]], [np.array(["a"]), np.array(["b"])], [np.array([object()])],
], ids=["none", "object", "unequal_lists", "numpy_strings", "numpy_objects"])
def test_collate_errors_match_torch(batch):
    assert_same_error(lambda: MD.default_collate(batch), lambda: TD.default_collate(batch))


def test_default_convert_leaves_string_arrays_and_collate_stacks_with_grad():
    arr = np.array(["a", "b"])
    assert MD.default_convert(arr) is arr and TD.default_convert(arr) is arr
    for L in (torch, mg):
        out = DATA[L].default_collate([L.ones(2, requires_grad=True), L.zeros(2)])
        assert type(out.grad_fn).__name__ == "StackBackward0"


def test_collate_numpy_arrays_share_memory_only_through_stack():
    arrays = [np.ones(3, dtype=np.float32), np.zeros(3, dtype=np.float32)]
    out = MD.default_collate(arrays)
    arrays[0][0] = 5.0  # stack copied
    assert out[0, 0].item() == 1.0


# ----- batching, lengths, drop_last, shuffling -----

@settings(max_examples=40)
@given(n=st.integers(0, 23), batch_size=st.integers(1, 7), drop_last=st.booleans(), shuffle=st.booleans())
def test_batch_sizes_and_lengths_match_torch(n, batch_size, drop_last, shuffle):
    def run(L):
        x = L.arange(n * 2).reshape(n, 2)
        ds = DATA[L].TensorDataset(x, L.arange(n))
        loader = DATA[L].DataLoader(ds, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
                                    generator=L.Generator().manual_seed(0))
        batches = list(loader)
        for xb, yb in batches:  # rows stay with their labels
            assert (xb[:, 0] == yb * 2).all()
        sizes = [(tuple(xb.shape), tuple(yb.shape), str(xb.dtype)[-5:]) for xb, yb in batches]
        return len(loader), sizes, [i for _, yb in batches for i in yb.tolist()]
    kind, m, t = run_both(lambda: run(mg), lambda: run(torch))  # an empty dataset cannot be shuffled
    if kind == "err":
        return
    assert m[0] == t[0] == len(t[1])
    assert m[1] == t[1]
    seen = m[2]
    assert len(seen) == len(set(seen)) and set(seen) <= set(range(n))
    if not shuffle:
        assert seen == t[2]
    elif not drop_last:
        assert sorted(seen) == list(range(n))


def test_shuffle_is_reproducible_and_new_each_epoch():
    def epochs(seed, k=3):
        loader = MD.DataLoader(range(20), batch_size=5, shuffle=True, generator=mg.Generator().manual_seed(seed))
        return [[i for b in loader for i in b.tolist()] for _ in range(k)]
    a, b = epochs(0), epochs(0)
    assert a == b
    assert a[0] != a[1] and sorted(a[0]) == list(range(20))
    assert epochs(1) != a
    mg.manual_seed(5)
    c = [b.tolist() for b in MD.DataLoader(range(20), batch_size=5, shuffle=True)]
    mg.manual_seed(5)
    d = [b.tolist() for b in MD.DataLoader(range(20), batch_size=5, shuffle=True)]
    assert c == d


@pytest.mark.parametrize("with_generator", [False, True])
@pytest.mark.parametrize("shuffle", [False, True])
def test_which_random_stream_an_epoch_consumes_matches_torch(with_generator, shuffle):
    """An epoch draws a base seed (and, shuffling without a generator, the sampler's seed) from the
    global stream; with a generator it leaves the global stream alone. Same in both libraries."""
    moved = {}
    for L in (torch, mg):
        L.manual_seed(0)
        expected = L.rand(3)
        L.manual_seed(0)
        gen = L.Generator().manual_seed(1) if with_generator else None
        list(DATA[L].DataLoader(range(6), batch_size=2, shuffle=shuffle, generator=gen))
        moved[L] = not bool((L.rand(3) == expected).all())
    assert moved[mg] == moved[torch] == (not with_generator)


def test_random_split_and_subset():
    gen = mg.Generator().manual_seed(0)
    parts = MD.random_split(range(10), [3, 7], generator=gen)
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    assert list(parts[0]) == [parts[0].dataset[i] for i in parts[0].indices]
    again = MD.random_split(range(10), [3, 7], generator=mg.Generator().manual_seed(0))
    assert again[0].indices == parts[0].indices
    for fractions in ([0.3, 0.7], [0.25, 0.25, 0.5], [1 / 3] * 3, [0.1, 0.9]):
        for n in (10, 11, 3):
            m = [len(p) for p in MD.random_split(range(n), fractions)]
            t = [len(p) for p in TD.random_split(range(n), fractions)]
            assert m == t


def test_random_split_warnings_and_errors_match_torch():
    caught = {}
    for L in (torch, mg):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            DATA[L].random_split(range(1), [0.1, 0.9])
        caught[L] = [(x.category, str(x.message), x.filename) for x in w]
    assert caught[mg] == caught[torch] and caught[mg][0][2] == __file__
    for lengths in ([3, 3], [-0.5, 1.5], [0.5, 0.6]):
        assert_same_error(lambda: MD.random_split(range(5), lengths), lambda: TD.random_split(range(5), lengths))


# ----- samplers -----

def test_sequential_and_batch_samplers_match_torch():
    for n, bs, dl in [(10, 3, False), (10, 3, True), (0, 2, False), (4, 4, True), (5, 7, True)]:
        m = MD.BatchSampler(MD.SequentialSampler(range(n)), bs, dl)
        t = TD.BatchSampler(TD.SequentialSampler(range(n)), bs, dl)
        assert list(m) == list(t) and len(m) == len(t)


@pytest.mark.parametrize("replacement", [False, True])
@pytest.mark.parametrize("num_samples", [None, 3, 10, 45])
def test_random_sampler_lengths_and_ranges(replacement, num_samples):
    m = MD.RandomSampler(range(7), replacement, num_samples, generator=mg.Generator().manual_seed(0))
    t = TD.RandomSampler(range(7), replacement, num_samples)
    drawn = list(m)
    assert len(m) == len(t) == len(drawn) == len(list(t))
    assert all(0 <= i < 7 for i in drawn)
    if not replacement:  # each full pass is a permutation
        for start in range(0, len(drawn) - 6, 7):
            assert sorted(drawn[start:start + 7]) == list(range(7))


def test_subset_and_weighted_samplers():
    m = MD.SubsetRandomSampler([3, 5, 9], generator=mg.Generator().manual_seed(0))
    assert sorted(m) == [3, 5, 9] and len(m) == 3
    w = MD.WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 400, generator=mg.Generator().manual_seed(0))
    draws = list(w)
    assert len(w) == 400 and set(draws) == {1, 3} and 0.65 < draws.count(3) / 400 < 0.85
    no_repl = list(MD.WeightedRandomSampler([1.0, 0.0, 2.0, 0.5], 4, replacement=False))
    assert sorted(no_repl) == [0, 1, 2, 3] and no_repl[-1] == 1  # zero weight last, as torch's method


@pytest.mark.parametrize("prog", [
    lambda D: D.BatchSampler(range(3), 0, False),
    lambda D: D.BatchSampler(range(3), True, False),
    lambda D: D.BatchSampler(range(3), 2, 1),
    lambda D: D.RandomSampler(range(3), replacement=1),
    lambda D: D.RandomSampler(range(3), num_samples=0),
    lambda D: D.RandomSampler(range(0)),
    lambda D: D.WeightedRandomSampler([1.0], 0),
    lambda D: D.WeightedRandomSampler([1.0], 2, replacement=None),
    lambda D: D.WeightedRandomSampler([[1.0]], 2),
    lambda D: list(D.WeightedRandomSampler([-1.0, 1.0], 2)),
    lambda D: list(D.WeightedRandomSampler([-1.0, 1.0], 1)),
    lambda D: list(D.WeightedRandomSampler([float("inf"), 1.0], 2)),
    lambda D: list(D.WeightedRandomSampler([float("nan"), 1.0], 2, replacement=False)),
    lambda D: list(D.WeightedRandomSampler([0.0, 0.0], 2)),
    lambda D: list(D.WeightedRandomSampler([1.0, 1.0], 3, replacement=False)),
], ids=["bs0", "bs_bool", "drop_last_int", "replacement_int", "num_samples_0", "empty_source", "weighted_n0",
        "weighted_replacement", "weighted_2d", "weighted_negative", "weighted_negative_one", "weighted_inf",
        "weighted_nan_no_replacement", "weighted_zero_sum", "weighted_too_many"])
def test_sampler_errors_match_torch(prog):
    assert_same_error(lambda: prog(MD), lambda: prog(TD))


# ----- datasets -----

def test_datasets_match_torch():
    for L in (torch, mg):
        D = DATA[L]
        a, b = L.arange(6).reshape(3, 2), L.arange(3.0)
        ds = D.TensorDataset(a, b)
        assert len(ds) == 3
    m_ds = MD.TensorDataset(mg.arange(6).reshape(3, 2), mg.arange(3.0))
    t_ds = TD.TensorDataset(torch.arange(6).reshape(3, 2), torch.arange(3.0))
    for i in range(3):
        assert_same_batch(m_ds[i], t_ds[i])
    m_cat, t_cat = MD.ConcatDataset([range(3), range(10, 12)]), TD.ConcatDataset([range(3), range(10, 12)])
    assert len(m_cat) == len(t_cat) == 5
    assert [m_cat[i] for i in range(-5, 5)] == [t_cat[i] for i in range(-5, 5)]
    assert list(MD.Subset(range(10), [7, 2])) == list(TD.Subset(range(10), [7, 2]))
    m_st, t_st = MD.StackDataset(range(3), "abc"), TD.StackDataset(range(3), "abc")
    assert [m_st[i] for i in range(3)] == [t_st[i] for i in range(3)]
    m_kw, t_kw = MD.StackDataset(a=range(3), b="xyz"), TD.StackDataset(a=range(3), b="xyz")
    assert m_kw.__getitems__([2, 0]) == t_kw.__getitems__([2, 0])
    for m, t in zip(MD.DataLoader(m_kw, batch_size=2), TD.DataLoader(t_kw, batch_size=2)):
        assert_same_batch(m, t)
    m_add = MD.Subset(range(4), [1]) + MD.Subset(range(4), [2])
    assert type(m_add).__name__ == "ConcatDataset" and list(m_add) == [1, 2]


@pytest.mark.parametrize("prog", [
    lambda L, D: D.TensorDataset(L.zeros(3), L.zeros(2)),
    lambda L, D: D.ConcatDataset([]),
    lambda L, D: D.ConcatDataset([range(2)])[-3],
    lambda L, D: D.StackDataset(range(2), range(3)),
    lambda L, D: D.StackDataset(range(2), b=range(2)),
    lambda L, D: D.StackDataset(),
    lambda L, D: D.Dataset()[0],
], ids=["tensor_sizes", "concat_empty", "concat_index", "stack_sizes", "stack_both", "stack_none", "abstract"])
def test_dataset_errors_match_torch(prog):
    assert_same_error(lambda: prog(mg, MD), lambda: prog(torch, TD))


class Stream:
    """An iterable-style dataset of n numbers (built for either library)."""

    def __init__(self, base, n):
        self.base, self.n = base, n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


@pytest.mark.parametrize("n,batch_size,drop_last", [(7, 3, False), (7, 3, True), (6, 3, True), (4, None, False)])
def test_iterable_dataset_batches_match_torch(n, batch_size, drop_last):
    out = {}
    for L in (torch, mg):
        D = DATA[L]
        ds = type("S", (Stream, D.IterableDataset), {})(None, n)
        loader = D.DataLoader(ds, batch_size=batch_size, drop_last=drop_last)
        out[L] = (len(loader), list(loader))
    assert out[mg][0] == out[torch][0]
    assert len(out[mg][1]) == len(out[torch][1])
    for m, t in zip(out[mg][1], out[torch][1]):
        assert_same_batch(m, t)


# ----- loader arguments -----

@pytest.mark.parametrize("kwargs", [
    dict(num_workers=-1), dict(timeout=-1), dict(prefetch_factor=2), dict(persistent_workers=True),
    dict(shuffle=True, sampler=[0, 1]), dict(batch_sampler=[[0]], batch_size=2), dict(batch_sampler=[[0]], shuffle=True),
    dict(batch_sampler=[[0]], sampler=[0]), dict(batch_sampler=[[0]], drop_last=True),
    dict(batch_size=None, drop_last=True), dict(batch_size=0), dict(batch_size=-2), dict(drop_last=1),
    dict(multiprocessing_context="spawn"),
], ids=lambda kw: ",".join(kw))
def test_loader_argument_errors_match_torch(kwargs):
    assert_same_error(lambda: MD.DataLoader(range(4), **kwargs), lambda: TD.DataLoader(range(4), **kwargs))


def test_iterable_dataset_refuses_shuffle_and_samplers_as_torch():
    for kwargs in (dict(shuffle=True), dict(sampler=[0]), dict(batch_sampler=[[0]])):
        def make(D):
            ds = type("S", (Stream, D.IterableDataset), {})(None, 3)
            return D.DataLoader(ds, **kwargs)
        kind, m, t = run_both(lambda: make(MD), lambda: make(TD))
        assert kind == "err" and str(m).split("=")[0] == str(t).split("=")[0]


def test_custom_samplers_and_collate_fn():
    for L in (torch, mg):
        D = DATA[L]
        loader = D.DataLoader(range(10), batch_sampler=D.BatchSampler([9, 1, 4, 4], 3, False))
        assert [b.tolist() for b in loader] == [[9, 1, 4], [4]] and len(loader) == 2
        loader = D.DataLoader(range(10), sampler=[3, 2, 1], batch_size=2, collate_fn=lambda b: sum(b))
        assert list(loader) == [5, 1]
        assert D.get_worker_info() is None


def test_num_workers_is_not_implemented():
    with pytest.raises(NotImplementedError, match="num_workers=2"):
        MD.DataLoader(range(4), num_workers=2)


def test_attributes_are_frozen_after_init_as_torch():
    for attr in ("batch_size", "sampler", "drop_last", "dataset"):
        def setit(D):
            loader = D.DataLoader(range(4))
            setattr(loader, attr, None)
        assert_same_error(lambda: setit(MD), lambda: setit(TD))
    loader = MD.DataLoader(range(4), batch_size=3)
    assert loader._auto_collation and len(iter(loader)) == 2


def test_pin_memory_warns_as_torch_on_a_machine_without_accelerator():
    if torch.accelerator.is_available():
        pytest.skip("torch warns only when no accelerator is present; with one it pins memory, which minigrad (CPU only) has no counterpart to compare")
    caught = {}
    for L in (torch, mg):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            list(DATA[L].DataLoader(range(2), pin_memory=True))
        caught[L] = [str(x.message) for x in w]
    assert caught[mg] == caught[torch]


def test_loader_signature_matches_torch():
    import inspect
    for name in ("DataLoader", "random_split", "RandomSampler", "BatchSampler", "WeightedRandomSampler",
                 "SubsetRandomSampler"):
        m, t = inspect.signature(getattr(MD, name)), inspect.signature(getattr(TD, name))
        names = [(p.name, p.kind) for p in m.parameters.values()]
        assert names == [(p.name, p.kind) for p in t.parameters.values()], name
        for p in m.parameters.values():
            tp = t.parameters[p.name]
            if p.name != "generator":  # torch's default for random_split is its default generator
                assert p.default == tp.default, (name, p.name)
    assert inspect.signature(MD.random_split).parameters["generator"].default is mg.default_generator


def test_generator_api():
    g = mg.Generator()
    assert g.manual_seed(7) is g and g.initial_seed() == 7 and g.device.type == "cpu"
    s = g.seed()
    assert g.initial_seed() == s
    a = mg.randperm(10, generator=mg.Generator().manual_seed(3))
    b = mg.randperm(10, generator=mg.Generator().manual_seed(3))
    assert a.dtype == mg.int64 and a.tolist() == b.tolist() and sorted(a.tolist()) == list(range(10))
    assert mg.default_generator.manual_seed(4) is mg.default_generator
    assert_same_error(lambda: mg.randperm(-1), lambda: torch.randperm(-1))
    assert_same_error(lambda: mg.randperm(3.0), lambda: torch.randperm(3.0))
