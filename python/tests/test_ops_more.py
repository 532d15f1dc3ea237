"""softmax, logsumexp, cumsum, sort, argsort, topk, take, take_along_axis,
erf and slice_update, compared with NumPy (float64) on random inputs."""

import math

import numpy as np
import pytest

import weft.core as mx

rng = np.random.default_rng(5)


def random(shape, dtype="float32"):
    return (rng.standard_normal(shape) * 3).astype(dtype)


def check(out, want, rtol=1e-5, atol=1e-6):
    out = np.array(out)
    assert out.shape == np.shape(want)
    np.testing.assert_allclose(out, want, rtol=rtol, atol=atol)


def np_logsumexp(x, axis=None, keepdims=False):
    x = x.astype(np.float64)
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def np_softmax(x, axis=None):
    x = x.astype(np.float64)
    return np.exp(x - np_logsumexp(x, axis=axis, keepdims=True))


# --- softmax, logsumexp ---


@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2), [1, 2], (0, 1, 2)])
def test_softmax(axis):
    x = random((3, 4, 5))
    out = mx.softmax(mx.array(x), axis=axis)
    want = np_softmax(x, axis=tuple(axis) if isinstance(axis, list) else axis)
    check(out, want, rtol=1e-5)
    assert out.dtype == mx.float32


def test_softmax_default_axis_is_all_and_precise_is_accepted():
    x = random((4, 6))
    check(mx.softmax(mx.array(x)), np_softmax(x))
    check(mx.softmax(mx.array(x), axis=-1, precise=True), np_softmax(x, axis=-1))
    # Integers compute in float32; float16 stays float16.
    assert mx.softmax(mx.array([1, 2, 3])).dtype == mx.float32
    h = mx.softmax(mx.array(x).astype(mx.float16), axis=1)
    assert h.dtype == mx.float16
    check(h.astype(mx.float32), np_softmax(x.astype(np.float16), axis=1), rtol=2e-3, atol=2e-3)
    # Large logits stay finite (stable).
    check(mx.softmax(mx.array([1000.0, 1000.0])), [0.5, 0.5])
    with pytest.raises(ValueError):
        mx.softmax(mx.array(x), axis=2)
    with pytest.raises(ValueError):
        mx.softmax(mx.array(x), axis=(0, 0))


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2), [2, 1]])
@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp(axis, keepdims):
    x = random((3, 4, 5))
    npaxis = tuple(axis) if isinstance(axis, list) else axis
    out = mx.logsumexp(mx.array(x), axis=axis, keepdims=keepdims)
    check(out, np_logsumexp(x, npaxis, keepdims), rtol=1e-5, atol=1e-5)


def test_logsumexp_stability_and_stream():
    s = mx.new_stream(mx.cpu)
    out = mx.logsumexp(mx.array([1000.0, 1000.0]), stream=s)
    assert out.stream == s
    assert abs(out.item() - (1000 + math.log(2))) < 1e-3


# --- cumsum ---


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("inclusive", [False, True])
def test_cumsum(axis, reverse, inclusive):
    x = random((4, 7))
    out = mx.cumsum(mx.array(x), axis=axis, reverse=reverse, inclusive=inclusive)
    v = x.astype(np.float64)
    if axis is None:
        v, ax = v.reshape(-1), 0
    else:
        ax = axis
    if reverse:
        v = np.flip(v, ax)
    want = np.cumsum(v, axis=ax)
    if not inclusive:
        want = want - v
    if reverse:
        want = np.flip(want, ax)
    check(out, want, rtol=1e-5, atol=1e-5)


def test_cumsum_ints():
    x = rng.integers(-50, 50, size=(3, 9)).astype(np.int32)
    out = mx.cumsum(mx.array(x), axis=1)
    assert out.dtype == mx.int32
    np.testing.assert_array_equal(np.array(out), np.cumsum(x, axis=1))
    assert mx.cumsum(mx.array([True, False, True])).tolist() == [1, 1, 2]


# --- sort, argsort, topk ---


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_sort_and_argsort(axis):
    x = random((5, 8))
    a = mx.array(x)
    check(mx.sort(a, axis=axis), np.sort(x, axis=axis))
    idx = mx.argsort(a, axis=axis)
    assert idx.dtype == mx.uint32
    np.testing.assert_array_equal(np.array(idx), np.argsort(x, axis=axis, kind="stable"))


def test_sort_default_axis_is_last():
    x = random((3, 6))
    check(mx.sort(mx.array(x)), np.sort(x, axis=-1))
    np.testing.assert_array_equal(np.array(mx.argsort(mx.array(x))), np.argsort(x, axis=-1, kind="stable"))
    # Stable: ties keep their order.
    ties = np.array([2, 1, 2, 1, 0, 2], dtype=np.int32)
    np.testing.assert_array_equal(np.array(mx.argsort(mx.array(ties))), np.argsort(ties, kind="stable"))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_topk(axis):
    x = random((6, 9))
    for k in (1, 3, x.shape[axis]):
        out = np.array(mx.topk(mx.array(x), k, axis=axis))
        want = np.sort(np.take(np.sort(x, axis=axis), range(x.shape[axis] - k, x.shape[axis]), axis=axis), axis=axis)
        # Order within the k is not part of the contract: compare sorted.
        np.testing.assert_array_equal(np.sort(out, axis=axis), want)
    with pytest.raises(ValueError):
        mx.topk(mx.array(x), 100, axis=axis)
    check(mx.topk(mx.array(x), 2), np.sort(x, axis=-1)[:, -2:])


# --- take, take_along_axis ---


def test_take():
    x = random((5, 6, 7))
    a = mx.array(x)
    idx = rng.integers(-5, 5, size=(3, 4))
    check(mx.take(a, mx.array(idx), axis=0), np.take(x, idx, axis=0))
    idx = rng.integers(-7, 7, size=(8,))
    check(mx.take(a, mx.array(idx), axis=-1), np.take(x, idx, axis=-1))
    check(mx.take(a, idx.tolist(), axis=-1), np.take(x, idx, axis=-1))
    # Flattened, and with a scalar index.
    flat = rng.integers(0, x.size, size=(10,))
    check(mx.take(a, mx.array(flat)), np.take(x, flat))
    check(mx.take(a, 2, axis=1), np.take(x, 2, axis=1))
    with pytest.raises(ValueError):
        mx.take(a, mx.array([0.5]), axis=0)


def test_take_along_axis():
    x = random((4, 5, 6))
    a = mx.array(x)
    for axis in (0, 1, 2, -1):
        idx = np.argsort(x, axis=axis)[..., :3] if axis in (2, -1) else np.argsort(x, axis=axis)
        check(mx.take_along_axis(a, mx.array(idx.astype(np.int32)), axis=axis), np.take_along_axis(x, idx, axis=axis))
    # Broadcasting the indices against the array.
    idx = rng.integers(0, 5, size=(1, 3, 6))
    check(mx.take_along_axis(a, mx.array(idx), axis=1), np.take_along_axis(x, np.broadcast_to(idx, (4, 3, 6)), axis=1))
    # axis=None: flattened.
    idx = rng.integers(0, x.size, size=(7,))
    check(mx.take_along_axis(a, mx.array(idx)), np.take_along_axis(x.reshape(-1), idx, axis=0))
    with pytest.raises(ValueError):
        mx.take_along_axis(a, mx.array([[0]]), axis=0)


# --- erf ---


def test_erf():
    x = random((4, 50))
    want = np.vectorize(math.erf)(x.astype(np.float64))
    out = mx.erf(mx.array(x))
    assert out.dtype == mx.float32
    check(out, want, rtol=1e-5, atol=1e-6)
    assert mx.erf(mx.array([0, 1])).dtype == mx.float32
    check(mx.erf(mx.array([-1.0, 0.0, 0.5])), [math.erf(-1), 0.0, math.erf(0.5)])


# --- slice_update ---


def test_slice_update():
    x = random((5, 6, 7))
    u = random((2, 3, 7))
    out = mx.slice_update(mx.array(x), mx.array(u), mx.array([1, 2]), (0, 1))
    want = x.copy()
    want[1:3, 2:5, :] = u
    check(out, want)
    # Start indices as a list, negative start, axes in another order.
    u2 = random((5, 2, 2))
    out = mx.slice_update(mx.array(x), mx.array(u2), [-2, 3], axes=[1, 2])
    want = x.copy()
    want[:, 4:6, 3:5] = u2
    check(out, want)
    # The update is cast to the array's dtype; the input is unchanged.
    a = mx.zeros((3, 3), dtype=mx.int32)
    b = mx.slice_update(a, mx.ones((1, 2)), start_indices=mx.array([1, 1]), axes=(0, 1))
    assert b.dtype == mx.int32
    assert b.tolist() == [[0, 0, 0], [0, 1, 1], [0, 0, 0]]
    assert a.tolist() == [[0] * 3] * 3
    with pytest.raises(ValueError):
        mx.slice_update(mx.array(x), mx.array(u), mx.array([4, 0]), (0, 1))
    with pytest.raises(ValueError):
        mx.slice_update(mx.array(x), mx.array(u), mx.array([0]), (0, 1))


def test_array_methods():
    x = random((3, 5))
    a = mx.array(x)
    check(a.logsumexp(), np_logsumexp(x), rtol=1e-5)
    check(a.logsumexp(axis=1, keepdims=True), np_logsumexp(x, 1, True), rtol=1e-5)
    check(a.cumsum(axis=0), np.cumsum(x.astype(np.float64), axis=0), rtol=1e-5, atol=1e-5)
    check(a.cumsum(), np.cumsum(x.astype(np.float64)), rtol=1e-5, atol=1e-5)
    check(a.cumsum(1, reverse=True), np.flip(np.cumsum(np.flip(x, 1), axis=1), 1), rtol=1e-5, atol=1e-5)


# --- dtype queries, bitwise ops, and the composed ops bound in layout.rs ---


def test_dtype_queries_match_numpy():
    for d, n in [(mx.float32, np.float32), (mx.float16, np.float16), (mx.float64, np.float64)]:
        f, g = mx.finfo(d), np.finfo(n)
        assert (f.min, f.max, f.eps, f.bits, f.dtype) == (g.min, g.max, g.eps, g.bits, d)
        assert f.smallest_normal == float(g.smallest_normal)
    assert mx.finfo(mx.bfloat16).smallest_normal == 2.0**-126
    for d, n in [(mx.int8, np.int8), (mx.uint16, np.uint16), (mx.int64, np.int64), (mx.uint64, np.uint64)]:
        assert (mx.iinfo(d).min, mx.iinfo(d).max) == (np.iinfo(n).min, np.iinfo(n).max)
    with pytest.raises(ValueError):
        mx.finfo(mx.int32)
    with pytest.raises(ValueError):
        mx.iinfo(mx.float32)
    assert mx.issubdtype(mx.float16, mx.floating) and mx.issubdtype(mx.floating, mx.number)
    assert mx.issubdtype(mx.uint8, mx.integer) and not mx.issubdtype(mx.uint8, mx.signedinteger)
    assert not mx.issubdtype(mx.bool_, mx.number) and mx.issubdtype(mx.bool_, mx.generic)
    assert mx.result_type(mx.int8, mx.array([1], dtype=mx.uint8)) == mx.int16
    assert mx.can_cast(mx.uint8, mx.int16) and not mx.can_cast(mx.float32, mx.float16)
    assert mx.isdtype(mx.int16, ("bool", "integral")) and not mx.isdtype(mx.bool_, "numeric")
    with pytest.raises(ValueError):
        mx.isdtype(mx.int32, "no such kind")


def test_bitwise_ops_match_numpy():
    rng = np.random.default_rng(3)
    for dt in [np.int8, np.uint8, np.int32, np.uint32, np.int64]:
        a = rng.integers(-50 if np.issubdtype(dt, np.signedinteger) else 0, 100, size=(3, 4)).astype(dt)
        b = rng.integers(0, 7, size=(4,)).astype(dt)
        x, y = mx.array(a), mx.array(b)
        for got, want in [(x & y, a & b), (x | y, a | b), (x ^ y, a ^ b), (x << y, a << b), (x >> y, a >> b),
                          (~x, ~a), (mx.bitwise_and(x, 3), a & dt(3)), (mx.right_shift(x, 1), a >> dt(1))]:
            assert np.array(got).dtype == want.dtype
            assert np.array_equal(np.array(got), want)
    t = mx.array([True, False])
    assert (t & True).tolist() == [True, False] and (~t).tolist() == [False, True]
    with pytest.raises(ValueError):
        mx.array([1.0]) & mx.array([1.0])


def test_composed_ops_match_numpy():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(3, 4)).astype(np.float32)
    a = mx.array(x)
    np.testing.assert_allclose(np.array(mx.median(a, axis=1)), np.median(x, axis=1), rtol=1e-6)
    np.testing.assert_allclose(np.array(mx.median(a)), np.median(x), rtol=1e-6)
    s = np.sort(rng.normal(size=8)).astype(np.float32)
    v = rng.normal(size=(2, 3)).astype(np.float32)
    for side in ["left", "right"]:
        assert np.array_equal(np.array(mx.searchsorted(mx.array(s), mx.array(v), side=side)), np.searchsorted(s, v, side=side))
    p = np.array(mx.partition(a, 2, axis=1))
    assert np.array_equal(np.sort(p, axis=1), np.sort(x, axis=1)) and np.all(p[:, 2] == np.sort(x, axis=1)[:, 2])
    y = rng.normal(size=(4, 5)).astype(np.float32)
    np.testing.assert_allclose(np.array(mx.tensordot(a, mx.array(y), axes=1)), np.tensordot(x, y, axes=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.array(mx.diff(a, n=2, axis=1)), np.diff(x, n=2, axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.array(mx.kron(a, a[:2, :2])), np.kron(x, x[:2, :2]), rtol=1e-6)
    np.testing.assert_allclose(np.array(mx.trace(a, offset=1)), np.trace(x, offset=1), rtol=1e-6)
    assert np.array_equal(np.array(mx.roll(a, 2, 1)), np.roll(x, 2, 1))
    assert [t.shape for t in mx.meshgrid(mx.arange(3), mx.arange(4))] == [(4, 3), (4, 3)]
    assert mx.broadcast_shapes((2, 1), (3,)) == (2, 3)
    assert mx.atleast_2d(mx.array(1.0)).shape == (1, 1) and len(mx.atleast_1d(mx.array(1), mx.array(2))) == 2
    q, r = mx.divmod(mx.array([7, -7]), mx.array([2, 2]))
    assert q.tolist() == [3, -4] and r.tolist() == [1, 1]
    from math import erf

    e = np.array(mx.erfinv(mx.array([-0.9, 0.0, 0.5, 0.999])))
    np.testing.assert_allclose([erf(float(t)) for t in e], [-0.9, 0.0, 0.5, 0.999], rtol=1e-5, atol=1e-6)
    h = np.array(mx.hadamard_transform(mx.eye(4)))
    np.testing.assert_allclose(h @ h.T, np.eye(4), atol=1e-6)


def test_new_random_distributions():
    k = mx.random.key(1)
    g = mx.random.gumbel(shape=(20000,), key=k)
    assert abs(float(mx.mean(g)) - 0.5772) < 0.05
    l1 = mx.random.laplace(shape=(4,), loc=1.0, scale=2.0, key=k)
    l0 = mx.random.laplace(shape=(4,), key=k)
    np.testing.assert_allclose(np.array(l1), 1.0 + 2.0 * np.array(l0), rtol=1e-5)
    t = mx.random.truncated_normal(-0.5, 1.5, shape=(5000,), key=k)
    assert float(t.min()) >= -0.5 and float(t.max()) <= 1.5
    p = mx.random.permutation(50, key=k)
    assert sorted(p.tolist()) == list(range(50))
    rows = mx.random.permutation(mx.arange(12).reshape(4, 3), axis=0, key=k)
    assert sorted(map(tuple, rows.tolist())) == [tuple(r) for r in np.arange(12).reshape(4, 3).tolist()]
    assert mx.random.uniform(2.0, 2.0, shape=(3,)).tolist() == [2.0, 2.0, 2.0]
    assert mx.random.normal(dtype=None).dtype == mx.float32


def test_arange_dtype_inference_and_integer_steps():
    # Python ints beyond int32 infer int64; int32's own bounds stay int32.
    a = mx.arange(2**40, 2**40 + 3)
    assert a.dtype == mx.int64 and a.tolist() == [2**40, 2**40 + 1, 2**40 + 2]
    assert mx.arange(2**31 - 3, 2**31 - 1).dtype == mx.int32
    assert mx.arange(2**40, 2**40 + 3, dtype=mx.int32).dtype == mx.int32
    assert mx.arange(0.5, 2**40, 2**39).dtype == mx.float32
    # An integer dtype steps by int(start + step) - int(start).
    assert mx.arange(0, 3, 0.2, dtype=mx.int32).tolist() == [0] * 15
    assert mx.arange(-1, -20, -1.2, dtype=mx.int32).tolist() == list(range(-1, -17, -1))
    with pytest.raises(ValueError):
        mx.arange(0, 2**40)


def test_isclose_infinities_hadamard_scalar_kron_empty():
    inf = float("inf")
    a = mx.array([inf, inf, -inf])
    b = mx.array([inf, -inf, -inf])
    assert mx.isclose(a, b).tolist() == np.isclose(np.array(a), np.array(b)).tolist()
    assert mx.hadamard_transform(mx.array(5.0)).item() == 5.0
    assert mx.hadamard_transform(mx.array(5.0), scale=0.2).item() == 1.0
    with pytest.raises(ValueError):
        mx.kron(mx.array([]), mx.array([1, 2]))


def test_arange_keyword_forms_and_infinite_steps():
    assert mx.arange(stop=3).tolist() == [0, 1, 2]
    assert mx.arange(-3, step=-1).tolist() == [0, -1, -2]
    assert mx.arange(-3, None, -1).tolist() == [0, -1, -2]
    assert mx.arange(stop=2, step=0.5).tolist() == [0, 0.5, 1.0, 1.5]
    with pytest.raises(TypeError):
        mx.arange()
    # An infinite step gives the start alone, or nothing.
    assert mx.arange(0, 10, float("inf")).tolist() == [0]
    assert mx.arange(0, -10, float("-inf")).tolist() == [0]
    assert mx.arange(10, 0, float("inf")).tolist() == []
    for bad in [(0, 2, float("nan")), (float("inf"), 1, 5), (0, float("inf"), float("inf"))]:
        with pytest.raises(ValueError):
            mx.arange(*bad)


def test_linspace_endpoint_is_the_fourth_positional_argument():
    np.testing.assert_allclose(np.array(mx.linspace(0, 10, 5, False)), np.linspace(0, 10, 5, False), rtol=1e-6)
    d = mx.linspace(0, 10, 5, False, mx.int64)
    assert d.dtype == mx.int64 and d.tolist() == [0, 2, 4, 6, 8]


@pytest.mark.parametrize("mode", ["reflect", "symmetric"])
def test_pad_mirroring_modes_match_numpy(mode):
    rng = np.random.default_rng(0)
    for shape, pw in [((8,), [(2, 3)]), ((4,), [(10, 7)]), ((1,), [(3, 2)]), ((2,), [(5, 6)]), ((5, 6), [(9, 9), (11, 0)])]:
        x = rng.standard_normal(shape).astype(np.float32)
        out = mx.pad(mx.array(x), pw, mode=mode)
        np.testing.assert_array_equal(np.array(out), np.pad(x, pw, mode=mode))
    with pytest.raises(ValueError):
        mx.pad(mx.array([]), 2, mode=mode)
    assert mx.pad(mx.zeros((0, 3)), [(0, 0), (2, 1)], mode=mode).shape == (0, 6)


def test_pad_width_forms():
    a = mx.zeros((1, 1, 1))
    for pw, n in [(1, 3), ((1,), 3), ([1], 3), ((1, 2), 4), ([(1, 2)], 4), (((1, 2),), 4)]:
        assert mx.pad(a, pw).shape == (n, n, n)
    with pytest.raises(ValueError):
        mx.pad(a, (1, 2, 3))
    with pytest.raises(ValueError):
        mx.pad(a, 1, mode="wrap")


def test_depends_returns_the_inputs_in_their_form():
    a = mx.array([1.0, 2.0, 3.0])
    b, c = mx.exp(a), mx.log(a)
    out = mx.depends([b], [c])
    assert isinstance(out, list) and mx.array_equal(out[0], b).item()
    single = mx.depends(b, c)
    assert isinstance(single, mx.array) and mx.array_equal(single, b).item()


def test_empty_put_along_axis_and_negative_integer_powers():
    a = mx.array([], mx.float32)
    assert mx.put_along_axis(a, a, a, axis=None).size == 0
    with pytest.raises(ValueError):
        mx.put_along_axis(mx.zeros((3,)), mx.array([0.0]), mx.array(1.0), axis=0)
    for dtype in [mx.int8, mx.int16, mx.int32, mx.int64]:
        x = mx.power(mx.array([2, -2, 1], dtype), mx.array([-1, -3, -9], dtype))
        assert x.tolist() == [0, 0, 0]
    assert mx.inner(mx.array([]), mx.array([])).item() == 0.0
    z = mx.vecdot(mx.array([1 + 2j, 3 + 4j]), mx.array([5 + 6j, 7 + 8j]))
    assert z.item() == np.vdot([1 + 2j, 3 + 4j], [5 + 6j, 7 + 8j])
