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
