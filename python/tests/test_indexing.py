"""Indexing with integer arrays (gathers, NumPy's advanced indexing rules)
and assignment `a[key] = value`, compared with NumPy on random arrays."""

import threading

import numpy as np
import pytest

import weft.core as mx

rng = np.random.default_rng(11)


def random(shape):
    return rng.standard_normal(shape).astype(np.float32)


def same(out, want, key=None):
    out = np.array(out)
    assert out.shape == want.shape, (key, out.shape, want.shape)
    np.testing.assert_array_equal(out, want, err_msg=str(key))


# --- reading with array indices ---

X = np.arange(4 * 5 * 6 * 7, dtype=np.float32).reshape(4, 5, 6, 7) * 0.5 - 3
I3 = np.array([2, 0, -1])  # negative indices wrap
I23 = np.array([[1, -2, 0], [3, 3, 1]])


def keys():
    """Keys as (numpy key, weft key) pairs, covering the common cases."""
    w3 = mx.array(I3)
    w23 = mx.array(I23)
    return [
        (I3, w3),  # a[idx]
        (I3.tolist(), I3.tolist()),  # a list of ints
        (I3, I3),  # a NumPy array
        ((slice(None), I3), (slice(None), w3)),  # a[:, idx]
        ((I3, slice(1, 3)), (I3, slice(1, 3))),  # a[idx, 1:3]
        ((Ellipsis, I3), (Ellipsis, w3)),
        ((None, I3), (None, w3)),
        ((I3, None, slice(None, None, -1)), (w3, None, slice(None, None, -1))),
        ((slice(None), slice(None), I23), (slice(None), slice(None), w23)),  # 2-d index
        ((1, I3), (1, w3)),  # int next to an array: adjacent
        ((slice(None), 2, I3), (slice(None), 2, w3)),
        ((I3, slice(None), 2), (w3, slice(None), 2)),  # int and array apart: gathered axes first
        ((0, slice(None), I3), (0, slice(None), w3)),
        ((I3, I3), (w3, w3)),  # several arrays, adjacent
        ((slice(None), I3, I3), (slice(None), w3, w3)),
        ((I3, slice(None), I3), (w3, slice(None), w3)),  # separated by a slice
        ((I3, None, I3), (w3, None, w3)),  # separated by None
        ((I3, Ellipsis, I3), (w3, Ellipsis, w3)),  # separated by ...
        ((I23, slice(1, 4), I3), (w23, slice(1, 4), w3)),  # broadcast (2,3) with (3,)
        ((I23[:, :1], I3, slice(None), -1), (mx.array(I23[:, :1]), w3, slice(None), -1)),
        ((np.array(2), slice(None)), (mx.array(2), slice(None))),  # 0-d array
        ((np.array([], dtype=np.int64),), ([],)),  # empty
    ]


@pytest.mark.parametrize("case", range(len(keys())))
def test_array_index_matches_numpy(case):
    npkey, wkey = keys()[case]
    a = mx.array(X)
    same(a[wkey], X[npkey], npkey)


def test_array_index_random():
    x = random((6, 5, 4))
    a = mx.array(x)
    for _ in range(100):
        key = []
        for n in x.shape[: rng.integers(1, 4)]:
            kind = rng.integers(0, 4)
            if kind == 0:
                key.append(int(rng.integers(-n, n)))
            elif kind == 1:
                key.append(slice(int(rng.integers(-n, n)), None, int(rng.choice([-2, -1, 1, 2]))))
            else:
                key.append(rng.integers(-n, n, size=tuple(rng.integers(1, 3, size=kind - 1))))
        if rng.random() < 0.3:
            key.insert(int(rng.integers(0, len(key) + 1)), None)
        key = tuple(key)
        try:
            want = x[key]
        except IndexError:  # index arrays that do not broadcast
            with pytest.raises(IndexError):
                a[key]
            continue
        same(a[key], want, key)


def test_array_index_dtypes_and_values():
    table = random((10, 3))
    ids = np.array([[9, 0], [4, 4]])
    for dt in (mx.int32, mx.int64, mx.uint32, mx.uint8):
        same(mx.array(table)[mx.array(ids).astype(dt)], table[ids])
    # argsort gives uint32 indices usable directly
    x = random((8,))
    a = mx.array(x)
    same(a[mx.argsort(a)], np.sort(x))


def test_array_index_errors():
    a = mx.array(random((3, 4)))
    with pytest.raises(IndexError):
        a[[0, 3]]  # out of range, known at once
    with pytest.raises(IndexError):
        a[[-4]]
    with pytest.raises(IndexError):
        a[np.array([0.5])]
    with pytest.raises(IndexError):
        a[[0, 1], [0, 1, 2]]  # do not broadcast
    with pytest.raises(IndexError):
        a[[0], [0], [0]]  # too many indices
    # Boolean masks are not supported, as in MLX.
    with pytest.raises(ValueError, match="boolean"):
        a[mx.array([True, False, True])]
    with pytest.raises(ValueError, match="boolean"):
        a[np.array([True, False, True])]
    with pytest.raises(ValueError, match="boolean"):
        a[[True, False, True]]
    # A weft index array out of range fails when evaluated.
    bad = a[mx.array([5])]
    with pytest.raises(RuntimeError):
        mx.eval(bad)
    bad2 = a[mx.array([0]), mx.array([7])]
    with pytest.raises(RuntimeError):
        mx.eval(bad2)


def test_array_index_is_lazy_and_stream_agnostic():
    x = random((5, 3))
    s = mx.new_stream(mx.cpu)
    with mx.stream(s):
        out = mx.array(x)[mx.array([4, 1])]
    assert out.stream == s
    same(out, x[[4, 1]])


# --- assignment ---


SET_KEYS = [
    0,
    -1,
    (1, 2),
    slice(1, 3),
    slice(None, None, -2),
    (slice(None), 1),
    (Ellipsis, 0),
    (0, Ellipsis, slice(1, 4, 2)),
    (slice(None), None, 2),
    (None, slice(1, None)),
    (1, -1, slice(3, 0, -1)),
    (),
    Ellipsis,
]


@pytest.mark.parametrize("key", SET_KEYS, ids=str)
def test_setitem_matches_numpy(key):
    x = random((4, 5, 6))
    region = x[key]
    # Full-shape values, broadcast values, scalars.
    values = [random(np.shape(region)), 2.5, random(np.shape(region)[-1:])]
    if np.ndim(region) >= 2:
        values.append(random((np.shape(region)[0],) + (1,) * (np.ndim(region) - 1)))
    for v in values:
        want = x.copy()
        want[key] = v
        a = mx.array(x)
        a[key] = mx.array(v) if isinstance(v, np.ndarray) else v
        same(a, want, key)


def test_setitem_values_of_other_kinds():
    x = random((3, 4))
    a = mx.array(x)
    a[1] = [1, 2, 3, 4]  # a list
    a[2, 1:3] = np.array([7.0, 8.0])  # a NumPy array
    a[0, 0] = True  # a bool
    want = x.copy()
    want[1] = [1, 2, 3, 4]
    want[2, 1:3] = [7, 8]
    want[0, 0] = 1
    same(a, want)
    # The value is cast to the array's dtype.
    i = mx.zeros((2, 3), dtype=mx.int32)
    i[0] = 2.75
    assert i.dtype == mx.int32
    assert i.tolist() == [[2, 2, 2], [0, 0, 0]]
    # A value with extra leading size-1 axes (NumPy allows it).
    a[0] = mx.array([[9.0, 9.0, 9.0, 9.0]])
    assert a[0].tolist() == [9.0] * 4


def test_setitem_semantics():
    x = random((4, 3))
    a = mx.array(x)
    before = a * 2  # built from the old value
    view = a[1]
    alias = a  # the same Python object
    a[1] = 0.0
    same(before, x * 2)
    same(view, x[1])
    assert alias is a
    assert alias[1].tolist() == [0.0, 0.0, 0.0]
    # Repeated assignments build on each other.
    for i in range(4):
        a[i, i % 3] = float(i + 10)
    want = x.copy()
    want[1] = 0
    for i in range(4):
        want[i, i % 3] = i + 10
    same(a, want)


def test_setitem_errors():
    a = mx.zeros((3, 4))
    with pytest.raises(ValueError):
        a[mx.array([0, 1])] = mx.zeros((3, 4))  # does not broadcast to (2, 4)
    with pytest.raises(ValueError):
        a[mx.array([True, False])] = 1.0  # the mask's shape is not a prefix of (3, 4)
    with pytest.raises(ValueError):
        a[0] = mx.zeros((5,))  # does not broadcast
    with pytest.raises(ValueError):
        a[:, 0] = mx.zeros((3, 2))
    with pytest.raises(IndexError):
        a[3] = 1.0
    with pytest.raises(IndexError):
        a[0, 0, 0] = 1.0
    with pytest.raises(TypeError):
        a["x"] = 1.0
    assert a.tolist() == [[0.0] * 4] * 3  # failed assignments change nothing


def test_setitem_from_many_threads():
    # Each thread assigns its own row of one shared array object; every
    # update must land (the replacement is atomic).
    n = 16
    a = mx.zeros((n, 8))

    def work(i):
        for j in range(8):
            a[i, j] = float(i * 8 + j)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    same(a, np.arange(n * 8, dtype=np.float32).reshape(n, 8))


# --- in-place operators ---


def test_inplace_operators_update_the_object():
    x = random((3, 4))
    y = random((4,))
    a = mx.array(x)
    alias = a
    before = a + 0  # built from the old value
    a += mx.array(y)
    assert alias is a
    same(alias, x + y)
    same(before, x)
    a -= 1.5
    a *= 2
    a /= 4
    same(a, ((x + y) - 1.5) * 2 / 4)
    a **= 2
    np.testing.assert_allclose(np.array(a), (((x + y) - 1.5) * 2 / 4) ** 2, rtol=1e-6)
    m = mx.array(random((4, 4)))
    mm = np.array(m)
    b = mx.array(x)
    b @= m
    np.testing.assert_allclose(np.array(b), x @ mm, rtol=1e-5, atol=1e-5)
    # The dtype is that of `a op b`, as in MLX.
    i = mx.array([1, 2, 3])
    i += 1
    assert i.dtype == mx.int32 and i.tolist() == [2, 3, 4]
    i += 0.5
    assert i.dtype == mx.float32 and i.tolist() == [2.5, 3.5, 4.5]
    with pytest.raises(ValueError):
        a += mx.zeros((5,))
    with pytest.raises(ValueError):  # as in MLX
        a += "x"


# --- scatter: integer-array keys, boolean masks, a.at[...] ---

SCATTER_KEYS = [
    np.array([0, 2]),
    np.array([[1], [3]]),
    (np.array([0, 3, 1]), np.array([4, 0, 2])),
    (slice(None), np.array([1, 0])),
    (np.array([2, 0]), slice(1, 4), np.array([5, 1])),
    (1, np.array([0, -1])),
    (Ellipsis, np.array([2])),
]


@pytest.mark.parametrize("key", SCATTER_KEYS, ids=str)
def test_setitem_with_index_arrays_matches_numpy(key):
    x = random((4, 5, 6))
    region = x[key]
    for v in [random(np.shape(region)), -1.5, random(np.shape(region)[-1:])]:
        want = x.copy()
        want[key] = v
        a = mx.array(x)
        a[tuple(mx.array(k) if isinstance(k, np.ndarray) else k for k in key) if isinstance(key, tuple) else mx.array(key)] = (
            mx.array(v) if isinstance(v, np.ndarray) else v
        )
        same(a, want, key)


def test_at_combines_repeated_indices():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(6, 3)).astype(np.float32)
    idx = np.array([0, 2, 0, 5, 2, 0])
    v = rng.normal(size=(6, 3)).astype(np.float32)
    a, i, u = mx.array(x), mx.array(idx), mx.array(v)
    for method, ufunc in [("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
                          ("maximum", np.maximum), ("minimum", np.minimum)]:
        want = x.copy()
        ufunc.at(want, idx, v)
        got = getattr(a.at[i], method)(u)
        np.testing.assert_allclose(np.array(got), want, rtol=1e-5, atol=1e-6, err_msg=method)
    want = x.copy()
    np.divide.at(want, idx, v)
    np.testing.assert_allclose(np.array(a.at[i].divide(u)), want, rtol=1e-4)
    # a.at[...] returns a new array; `a` is unchanged.
    assert np.array_equal(np.array(a), x)
    # Scalars, slices and ints in the key.
    want = x.copy()
    np.add.at(want, (slice(1, 4), 1), 10.0)
    same(a.at[1:4, 1].add(10.0), want)


def test_setitem_with_boolean_masks_matches_numpy():
    x = random((4, 3))
    m = np.array([[True, False, True], [False, False, True], [True, True, False], [False, False, False]])
    for v in [7.0, random((int(m.sum()),))]:
        want = x.copy()
        want[m] = v
        a = mx.array(x)
        a[mx.array(m)] = mx.array(v) if isinstance(v, np.ndarray) else v
        same(a, want)
    # A mask over the leading axis selects rows; a row value broadcasts.
    rows = np.array([True, False, True, False])
    want = x.copy()
    want[rows] = np.array([1.0, 2.0, 3.0])
    a = mx.array(x)
    a[mx.array(rows)] = mx.array([1.0, 2.0, 3.0])
    same(a, want)
    a = mx.array(x)
    a[True] = 0.0
    assert a.tolist() == [[0.0] * 3] * 4


def test_put_along_axis_matches_numpy():
    x = random((3, 5))
    idx = np.array([[4], [0], [2]])
    want = x.copy()
    np.put_along_axis(want, idx, -3.0, axis=1)
    same(mx.put_along_axis(mx.array(x), mx.array(idx), -3.0, axis=1), want)


def test_scatter_gradients_and_out_of_range():
    x = mx.array([1.0, 2.0, 3.0, 4.0])
    i = mx.array([1, 3])

    def f(x):
        return (x.at[i].add(mx.array([5.0, 6.0])) * mx.array([1.0, 2.0, 3.0, 4.0])).sum()

    assert mx.grad(f)(x).tolist() == [1.0, 2.0, 3.0, 4.0]

    def g(x):
        y = mx.zeros((4,))
        y[i] = x[:2] * 2
        return y.sum()

    assert mx.grad(g)(x).tolist() == [2.0, 2.0, 0.0, 0.0]
    # An index out of range fails when the array is read, with a clear error.
    bad = x.at[mx.array([7])].add(1.0)
    with pytest.raises(Exception, match="out of bounds"):
        bad.tolist()


def test_at_without_a_key_is_a_value_error():
    a = mx.array([1, 2])
    for name in ("add", "subtract", "multiply", "divide", "maximum", "minimum"):
        with pytest.raises(ValueError):
            getattr(a.at, name)(1)
    with pytest.raises(AttributeError):
        a.at.nothing
    assert a.at[None].add(1).tolist() == [2, 3]


def test_inplace_true_division_of_integers_is_a_value_error():
    a = mx.array([1, 2])
    with pytest.raises(ValueError):
        a /= 1
    assert a.dtype == mx.int32 and a.tolist() == [1, 2]
    a //= 2
    assert a.tolist() == [0, 1]
