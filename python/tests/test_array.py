"""The array class: construction, dtypes, NumPy round trips, operators with
MLX's weak scalar typing, indexing, iteration, repr."""

import operator

import numpy as np
import pytest

import weft.core as mx

rng = np.random.default_rng(0)

NP_DTYPES = ["bool", "uint8", "uint32", "int32", "int64", "float16", "float32"]


def random(shape, dtype="float32"):
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if np.dtype(dtype).kind in "ui":
        return rng.integers(0, 100, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def test_dtypes():
    assert mx.bool_.size == 1
    assert mx.uint8.size == 1
    assert mx.int32.size == 4
    assert mx.int64.size == 8
    assert mx.float16.size == 2
    assert mx.bfloat16.size == 2
    assert mx.float32.size == 4
    assert str(mx.float32) == "weft.core.float32"
    assert mx.float32 == mx.float32
    assert mx.float32 != mx.float16
    assert len({mx.float32, mx.float32, mx.int32}) == 2


def test_scalar_construction():
    assert mx.array(True).dtype == mx.bool_
    assert mx.array(1).dtype == mx.int32
    assert mx.array(2**40).dtype == mx.int64
    assert mx.array(1.5).dtype == mx.float32
    x = mx.array(3)
    assert x.shape == ()
    assert x.ndim == 0
    assert x.size == 1
    assert x.item() == 3
    assert isinstance(x.item(), int)
    assert isinstance(mx.array(1.5).item(), float)
    assert mx.array(True).item() is True
    assert mx.array(2.5, mx.float16).dtype == mx.float16
    assert mx.array(2, dtype=mx.float32).item() == 2.0


def test_list_construction():
    x = mx.array([[1, 2, 3], [4, 5, 6]])
    assert x.shape == (2, 3)
    assert x.dtype == mx.int32
    assert x.tolist() == [[1, 2, 3], [4, 5, 6]]
    assert mx.array([1, 2.5]).dtype == mx.float32
    assert mx.array([True, False]).dtype == mx.bool_
    assert mx.array([True, 2]).dtype == mx.int32
    assert mx.array([]).shape == (0,)
    assert mx.array([]).dtype == mx.float32
    assert mx.array(((1, 2), (3, 4))).shape == (2, 2)
    assert mx.array([[1, 2]], dtype=mx.float16).dtype == mx.float16
    with pytest.raises(ValueError):
        mx.array([[1, 2], [3]])
    with pytest.raises(ValueError):
        mx.array([[1, 2], 3])
    with pytest.raises(ValueError):  # as in MLX
        mx.array(["a"])
    with pytest.raises(TypeError):
        mx.array(object())


def test_list_of_arrays():
    a, b = mx.array([1, 2]), mx.array([3, 4])
    x = mx.array([a, b])
    assert x.shape == (2, 2)
    assert x.tolist() == [[1, 2], [3, 4]]
    y = mx.array([[a, b], [b, a]])
    assert y.shape == (2, 2, 2)


@pytest.mark.parametrize("dtype", NP_DTYPES)
def test_numpy_round_trip(dtype):
    for shape in [(), (5,), (3, 4), (2, 3, 4)]:
        n = random(shape, dtype)
        a = mx.array(n)
        assert a.shape == n.shape
        assert a.dtype == getattr(mx, "bool_" if dtype == "bool" else dtype)
        back = np.array(a)
        assert back.dtype == n.dtype
        np.testing.assert_array_equal(back, n)
        assert a.tolist() == n.tolist()


def test_numpy_conversions():
    # float64 becomes float32, as in MLX.
    assert mx.array(np.ones(3)).dtype == mx.float32
    # non-contiguous NumPy inputs.
    n = random((4, 6))
    np.testing.assert_array_equal(np.array(mx.array(n.T)), n.T)
    np.testing.assert_array_equal(np.array(mx.array(n[::2, ::-3])), n[::2, ::-3])
    # NumPy scalars.
    assert mx.array(np.float32(2.5)).item() == 2.5
    assert mx.array(np.int64(7)).dtype == mx.int64
    # dtype given.
    assert mx.array(np.arange(3), dtype=mx.float16).dtype == mx.float16
    # results are writable NumPy arrays.
    out = np.array(mx.array([1.0, 2.0]))
    out[0] = 5
    assert out[0] == 5
    assert np.asarray(mx.array([1, 2]), dtype=np.float64).dtype == np.float64
    with pytest.raises(ValueError):
        np.array(mx.array([1.0], mx.bfloat16))
    np.testing.assert_array_equal(np.array(mx.array([1.5], mx.bfloat16).astype(mx.float32)), [1.5])


def test_properties():
    a = mx.zeros((2, 3, 4), dtype=mx.float16)
    assert a.shape == (2, 3, 4)
    assert a.ndim == 3
    assert a.size == 24
    assert a.itemsize == 2
    assert a.nbytes == 48
    assert len(a) == 2
    assert a.T.shape == (4, 3, 2)
    with pytest.raises(TypeError):
        len(mx.array(1))


def test_astype_and_reshape_methods():
    n = random((2, 6))
    a = mx.array(n)
    np.testing.assert_array_equal(np.array(a.astype(mx.int32)), n.astype(np.int32))
    np.testing.assert_array_equal(np.array(a.reshape(3, 4)), n.reshape(3, 4))
    np.testing.assert_array_equal(np.array(a.reshape((4, 3))), n.reshape(4, 3))
    np.testing.assert_array_equal(np.array(a.reshape([-1])), n.reshape(-1))
    np.testing.assert_array_equal(np.array(a.transpose()), n.T)
    np.testing.assert_array_equal(np.array(a.transpose(1, 0)), n.T)
    np.testing.assert_array_equal(np.array(a.T), n.T)
    np.testing.assert_array_equal(np.array(a.flatten()), n.flatten())
    np.testing.assert_array_equal(np.array(a.swapaxes(0, 1)), n.swapaxes(0, 1))
    np.testing.assert_array_equal(np.array(a.reshape(1, 2, 1, 6).squeeze()), n)
    with pytest.raises(ValueError):
        a.reshape(5, 5)
    with pytest.raises(TypeError):
        a.astype("float32")


BINARY = [
    (operator.add, np.add),
    (operator.sub, np.subtract),
    (operator.mul, np.multiply),
    (operator.truediv, np.true_divide),
]

COMPARE = [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]


@pytest.mark.parametrize("op,npop", BINARY)
def test_binary_operators_broadcast(op, npop):
    for sa, sb in [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((), (5,))]:
        x, y = random(sa), random(sb) + 3.0
        out = op(mx.array(x), mx.array(y))
        assert out.shape == np.broadcast_shapes(sa, sb)
        np.testing.assert_allclose(np.array(out), npop(x, y), rtol=1e-6)
        # reflected, with a Python scalar
        np.testing.assert_allclose(np.array(op(2.5, mx.array(y))), npop(np.float32(2.5), y), rtol=1e-6)


@pytest.mark.parametrize("op", COMPARE)
def test_comparison_operators(op):
    x, y = random((4, 5)), random((4, 5))
    y[0] = x[0]
    out = op(mx.array(x), mx.array(y))
    assert out.dtype == mx.bool_
    np.testing.assert_array_equal(np.array(out), op(x, y))
    np.testing.assert_array_equal(np.array(op(mx.array(x), 0.0)), op(x, 0.0))


def test_other_operators():
    x = random((3, 4))
    a = mx.array(x)
    np.testing.assert_allclose(np.array(-a), -x)
    np.testing.assert_allclose(np.array(abs(a)), np.abs(x))
    p = np.abs(x) + 0.5
    np.testing.assert_allclose(np.array(mx.array(p) ** 2), p**2, rtol=1e-6)
    np.testing.assert_allclose(np.array(2 ** mx.array(p)), 2**p, rtol=1e-5)
    assert (a == None) is False  # noqa: E711
    with pytest.raises(ValueError):  # as in MLX
        a + "x"


def test_weak_scalar_typing():
    h = mx.array([1.0, 2.0], dtype=mx.float16)
    assert (h + 1.5).dtype == mx.float16
    assert (1.5 * h).dtype == mx.float16
    assert (h + 1).dtype == mx.float16
    i = mx.array([1, 2], dtype=mx.int32)
    assert (i + 1).dtype == mx.int32
    assert (i + 1.5).dtype == mx.float32
    assert (i * True).dtype == mx.int32
    u = mx.array([1, 2], dtype=mx.uint8)
    assert (u + 3).dtype == mx.uint8
    assert (u + 3).tolist() == [4, 5]
    l = mx.array([1, 2], dtype=mx.int64)
    assert (l - 1).dtype == mx.int64
    b = mx.array([True, False])
    assert (b + 1).dtype == mx.int32
    assert (b + 1.0).dtype == mx.float32
    # two Python scalars
    assert mx.add(1, 2).dtype == mx.int32
    assert mx.add(1, 2.0).dtype == mx.float32
    # int / int is true division in float32
    assert (i / 2).dtype == mx.float32
    # strong types promote
    assert (h + mx.array(1.0)).dtype == mx.float32


def test_indexing_ints_and_slices():
    x = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5).astype(np.float32)
    a = mx.array(x)
    keys = [
        0,
        -1,
        (1, 2),
        slice(None),
        slice(1, None),
        slice(None, None, -1),
        (slice(None), slice(None, None, 2)),
        (slice(None), slice(None, None, -2), 1),
        (Ellipsis, 0),
        (0, Ellipsis, slice(1, 3)),
        (None, 0),
        (slice(None), None, 1, None),
        (Ellipsis, None),
        (1, -1, slice(3, 0, -1), slice(-2, None)),
        (slice(10, 20),),
        (slice(-100, 100),),
        (1, 2, 3, 4),
        (),
        Ellipsis,
        None,
        np.int64(1),
    ]
    for k in keys:
        out = a[k]
        want = x[k]
        assert out.shape == want.shape, k
        np.testing.assert_array_equal(np.array(out), want, err_msg=str(k))


def test_indexing_random_slices():
    x = random((7, 6, 5))
    a = mx.array(x)
    for _ in range(200):
        key = []
        for n in x.shape:
            start, stop = rng.integers(-n - 2, n + 2, size=2)
            step = int(rng.choice([-3, -2, -1, 1, 2, 3]))
            key.append(slice(int(start), int(stop), step))
        key = tuple(key[: rng.integers(1, 4)])
        np.testing.assert_array_equal(np.array(a[key]), x[key], err_msg=str(key))


def test_indexing_errors():
    a = mx.zeros((3, 4))
    with pytest.raises(IndexError):
        a[3]
    with pytest.raises(IndexError):
        a[0, 0, 0]
    with pytest.raises(IndexError):
        a[..., 0, ...]
    with pytest.raises(ValueError):
        a[::0]
    with pytest.raises(TypeError):
        a["x"]
    with pytest.raises(TypeError):
        a["x"] = 1


def test_iteration():
    x = random((4, 3))
    rows = list(mx.array(x))
    assert len(rows) == 4
    for r, want in zip(rows, x):
        np.testing.assert_array_equal(np.array(r), want)
    with pytest.raises(TypeError):
        iter(mx.array(1.0))


def test_scalar_conversions():
    assert float(mx.array(2.5)) == 2.5
    assert int(mx.array(7)) == 7
    assert bool(mx.array(1)) is True
    assert bool(mx.array([0])) is False
    with pytest.raises(ValueError):
        bool(mx.array([1, 2]))
    with pytest.raises(ValueError):
        mx.array([1, 2]).item()


def test_repr():
    assert repr(mx.array([1, 2, 3])) == "array([1, 2, 3], dtype=int32)"
    assert repr(mx.array(1.5)) == "array(1.5, dtype=float32)"
    assert repr(mx.array([True, False])) == "array([True, False], dtype=bool)"
    assert repr(mx.array([[1, 2], [3, 4]])) == "array([[1, 2],\n       [3, 4]], dtype=int32)"
    assert repr(mx.array([1.0, 2.5])) == "array([1, 2.5], dtype=float32)"
    assert repr(mx.array([0.1, -2.0], mx.float16)) == "array([0.1, -2], dtype=float16)"
    assert repr(mx.array([0.1], mx.bfloat16)) == "array([0.1], dtype=bfloat16)"
    big = repr(mx.arange(5000))
    assert "..." in big and big.startswith("array([0, 1, 2, ..., 4997, 4998, 4999]")


def test_hashable():
    a = mx.array(1)
    assert hash(a) == hash(a)
    assert a in {a}


def test_complex_conversion_finfo_and_weak_int_overflow():
    assert complex(mx.array(1 + 2j, dtype=mx.complex64)) == 1 + 2j
    assert complex(mx.array(1.5)) == 1.5 + 0j
    assert complex(mx.array(3)) == 3 + 0j
    assert mx.finfo(mx.complex64).dtype == mx.float32 and mx.finfo(mx.complex64).bits == 32
    y = mx.array(2000000000, dtype=mx.int32)
    with pytest.raises(ValueError):
        y + 3000000000
    with pytest.raises(ValueError):
        mx.add(y, 3000000000)
    with pytest.raises(ValueError):
        mx.array([1], mx.uint8) + 256
    with pytest.raises(ValueError):
        mx.array([1], mx.uint32) - (-1)
    assert (mx.array([1], mx.int64) + 3000000000).tolist() == [3000000001]
    assert (mx.array([1], mx.uint8) + 255).dtype == mx.uint8


def test_scan_and_diagonal_methods_match_the_functions():
    x = mx.array(np.random.default_rng(1).random((4, 4, 4)).astype(np.float32))
    for name, args in [("cumprod", (1,)), ("cummax", (1,)), ("cummin", (0,)), ("logcumsumexp", (2,)), ("diagonal", (0, 0, 1))]:
        assert mx.array_equal(getattr(mx, name)(x, *args), getattr(x, name)(*args)).item(), name
    m = x[0]
    assert mx.array_equal(m.diag(1), mx.diag(m, 1)).item()
    assert x.cumprod(1, reverse=True).shape == (4, 4, 4)
