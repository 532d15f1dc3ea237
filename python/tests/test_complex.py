"""complex64: the dtype and its categories, NumPy/buffer/DLPack interop,
Python complex scalars, arithmetic, the parts, astype, matmul, the ops
that refuse complex inputs, and gradients (dL/dRe + i dL/dIm)."""

import numpy as np
import pytest

import weft.core as mx

rng = np.random.default_rng(5)


def rand_complex(shape):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


def check(out, want, tol=1e-5):
    got = np.array(out)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_dtype_and_categories():
    c = mx.complex64
    assert c.size == 8
    assert repr(c) == "weft.core.complex64"
    assert mx.issubdtype(c, mx.complexfloating)
    assert mx.issubdtype(c, mx.inexact)
    assert mx.issubdtype(c, mx.number)
    assert not mx.issubdtype(c, mx.floating)
    assert not mx.issubdtype(mx.float32, mx.complexfloating)
    assert mx.isdtype(c, "complex floating")
    assert not mx.isdtype(mx.float32, "complex floating")
    assert mx.result_type(mx.float32, c) == c
    assert mx.result_type(mx.int64, c) == c


def test_numpy_round_trip():
    x = rand_complex((2, 3))
    a = mx.array(x)
    assert a.dtype == mx.complex64
    assert a.shape == (2, 3)
    back = np.array(a)
    assert back.dtype == np.complex64
    np.testing.assert_array_equal(back, x)
    # complex128 converts to complex64 (as float64 to float32).
    z = np.array([1 + 2j, -0.1 + 1e-3j, 3.0 - 4.5j])
    b = mx.array(z)
    assert b.dtype == mx.complex64
    np.testing.assert_array_equal(np.array(b), z.astype(np.complex64))
    # And an explicit dtype.
    assert mx.array(np.arange(3.0), dtype=mx.complex64).dtype == mx.complex64
    check(mx.array(np.arange(3.0), dtype=mx.complex64), np.arange(3.0).astype(np.complex64))


def test_buffer_protocol_and_dlpack():
    x = rand_complex((3, 2))
    a = mx.array(x)
    m = memoryview(a)
    assert m.format == "Zf"
    assert m.itemsize == 8
    np.testing.assert_array_equal(np.asarray(m), x)
    # The buffer of a transpose keeps its strides.
    np.testing.assert_array_equal(np.asarray(memoryview(a.T)), x.T)
    np.testing.assert_array_equal(np.from_dlpack(a), x)
    c = mx.from_dlpack(x)
    assert c.dtype == mx.complex64
    np.testing.assert_array_equal(np.array(c), x)


def test_python_scalars_and_lists():
    a = mx.array(1 + 2j)
    assert a.dtype == mx.complex64
    assert a.item() == 1 + 2j
    assert isinstance(a.item(), complex)
    b = mx.array([1, 2.5, 3j])
    assert b.dtype == mx.complex64
    assert b.tolist() == [1 + 0j, 2.5 + 0j, 3j]
    # Weak scalars: a real scalar keeps complex64; a complex one makes complex64.
    z = mx.array(rand_complex((4,)))
    zn = np.array(z)
    assert (z + 1).dtype == mx.complex64
    assert (z * 2.5).dtype == mx.complex64
    check(z * 2.5, zn * np.float32(2.5))
    f = mx.array([1.0, 2.0], dtype=mx.float32)
    assert (f + 1j).dtype == mx.complex64
    check(f + 1j, np.array([1 + 1j, 2 + 1j], np.complex64))
    check(2j * z, zn * 2j)
    i = mx.array([1, 2], dtype=mx.int32)
    assert (i * (1 - 1j)).dtype == mx.complex64


def test_repr_shows_complex_values():
    r = repr(mx.array([1 + 2j, -3 - 0.5j]))
    assert "complex64" in r
    assert "j" in r


def test_arithmetic_matches_numpy():
    x, y = rand_complex((3, 4)), rand_complex((3, 4))
    a, b = mx.array(x), mx.array(y)
    check(a + b, x + y)
    check(a - b, x - y)
    check(a * b, x * y)
    check(a / b, x / y, tol=1e-4)
    check(-a, -x)
    check(mx.exp(a), np.exp(x), tol=1e-4)
    check(mx.sqrt(a), np.sqrt(x), tol=1e-4)
    check(mx.sum(a, axis=0), x.sum(axis=0), tol=1e-4)
    check(mx.prod(a[:, :2], axis=1), x[:, :2].prod(axis=1), tol=1e-4)
    r = rng.standard_normal(4).astype(np.float32)
    check(a * mx.array(r), x * r)
    assert (a == a).all().item()
    check(a != b, x != y)


def test_parts_and_astype():
    x = rand_complex((2, 5))
    a = mx.array(x)
    for got, want in [
        (mx.real(a), x.real),
        (mx.imag(a), x.imag),
        (a.real, x.real),
        (a.imag, x.imag),
        (mx.abs(a), np.abs(x)),
        (abs(a), np.abs(x)),
    ]:
        assert got.dtype == mx.float32
        check(got, want)
    check(mx.conjugate(a), np.conj(x))
    check(mx.conj(a), np.conj(x))
    check(a.conj(), np.conj(x))
    # Real arrays: real/conj are themselves, imag zeros.
    r = mx.array([1.0, -2.0])
    check(mx.real(r), [1.0, -2.0])
    check(mx.imag(r), [0.0, 0.0])
    check(mx.conj(r), [1.0, -2.0])
    # astype: complex -> real keeps the real part; real -> complex has im 0.
    check(a.astype(mx.float32), x.real)
    check(a.astype(mx.int32), x.real.astype(np.int32))
    check(mx.array([1, 2]).astype(mx.complex64), np.array([1, 2], np.complex64))


def test_matmul_matches_numpy():
    x, y = rand_complex((2, 3, 4)), rand_complex((4, 5))
    check(mx.array(x) @ mx.array(y), x @ y, tol=1e-4)
    r = rng.standard_normal((4, 2)).astype(np.float32)
    check(mx.matmul(mx.array(x), mx.array(r)), x @ r, tol=1e-4)
    v = rand_complex((4,))
    check(mx.array(x) @ mx.array(v), x @ v, tol=1e-4)


@pytest.mark.parametrize(
    "call",
    [
        lambda a: mx.maximum(a, a),
        lambda a: a < a,
        lambda a: mx.cummax(a),
        lambda a: mx.floor(a),
        lambda a: mx.argmax(a),
    ],
)
def test_ops_without_a_complex_meaning_raise(call):
    with pytest.raises(ValueError, match="complex"):
        call(mx.array([1 + 1j, 2 - 1j]))


def test_gradients():
    z = rand_complex((4,))
    # |z|^2: dL/dRe + i dL/dIm = 2 z.
    g = mx.grad(lambda a: mx.sum(mx.abs(a) ** 2))(mx.array(z))
    assert g.dtype == mx.complex64
    check(g, 2 * z, tol=1e-4)
    # Re(w z): d/dRe = Re w, d/dIm = -Im w, so the gradient is conj(w).
    w = rand_complex((4,))
    g = mx.grad(lambda a: mx.sum(mx.real(a * mx.array(w))))(mx.array(z))
    check(g, np.conj(w), tol=1e-5)
    # Im(z): i.
    g = mx.grad(lambda a: mx.sum(mx.imag(a)))(mx.array(z))
    check(g, np.full(4, 1j, np.complex64))
    # A real input through complex intermediates gets a real gradient:
    # L(x) = sum |x * w|^2 = sum x^2 |w|^2, dL/dx = 2 x |w|^2.
    x = rng.standard_normal(4).astype(np.float32)
    g = mx.grad(lambda a: mx.sum(mx.abs(a * mx.array(w)) ** 2))(mx.array(x))
    assert g.dtype == mx.float32
    check(g, 2 * x * np.abs(w) ** 2, tol=1e-4)
    # A complex output has no gradient.
    with pytest.raises(ValueError, match="real scalar"):
        mx.grad(lambda a: mx.sum(a * a))(mx.array(z))


def test_npy_round_trip(tmp_path):
    x = rand_complex((3, 2))
    mx.save(str(tmp_path / "z.npy"), mx.array(x))
    np.testing.assert_array_equal(np.load(tmp_path / "z.npy"), x)
    np.save(tmp_path / "n.npy", x)
    y = mx.load(str(tmp_path / "n.npy"))
    assert y.dtype == mx.complex64
    np.testing.assert_array_equal(np.array(y), x)


def test_ordering_sort_and_extremes_are_lexicographic():
    # MLX orders complex numbers by real part, then imaginary part (NumPy's
    # order too), NaN parts last.
    x = np.array([[2 + 1j, 1 + 5j, 2 - 1j, 1 + 0j], [0 + 0j, 0 - 2j, 3 + 3j, 0 + 2j]], dtype=np.complex64)
    a = mx.array(x)
    np.testing.assert_array_equal(np.array(mx.sort(a, axis=-1)), np.sort(x, axis=-1))
    np.testing.assert_array_equal(np.array(mx.sort(a, axis=0)), np.sort(x, axis=0))
    np.testing.assert_array_equal(np.take_along_axis(x, np.array(mx.argsort(a)), -1), np.sort(x, axis=-1))
    for axis in (0, 1, None):
        np.testing.assert_array_equal(np.array(mx.max(a, axis=axis)), np.max(x, axis=axis))
        np.testing.assert_array_equal(np.array(mx.min(a, axis=axis)), np.min(x, axis=axis))
    n = np.array([3 + 1j, complex(np.nan, 2), 2 + 1j, 0 + 1j], dtype=np.complex64)
    got = np.array(mx.sort(mx.array(n)))
    np.testing.assert_array_equal(got[:3], [0 + 1j, 2 + 1j, 3 + 1j])
    assert np.isnan(got[3])
    assert mx.isnan(mx.max(mx.array(n))).item() and mx.isnan(mx.min(mx.array(n))).item()


def test_predicates_allclose_and_moments():
    inf, nan = float("inf"), float("nan")
    z = [complex(0, inf), complex(-inf, 0), complex(nan, 1), complex(3, 4)]
    x = np.array(z, dtype=np.complex64)
    a = mx.array(x)
    assert mx.isinf(a).tolist() == np.isinf(x).tolist()
    assert mx.isnan(a).tolist() == np.isnan(x).tolist()
    assert mx.isfinite(a).tolist() == np.isfinite(x).tolist()
    assert mx.isneginf(mx.array([0.0, -inf]).astype(mx.complex64)).tolist() == [False, True]
    assert mx.allclose(mx.array([1 + 1j]), mx.array([1 + 1.0001j])).item() is False
    assert mx.allclose(mx.array([1 + 1j]), mx.array([1 + 1.000001j])).item() is True
    assert mx.array_equal(a, a, equal_nan=True).item()
    y = rand_complex((5, 3))
    for f in ("var", "std"):
        out = getattr(mx, f)(mx.array(y), axis=0)
        assert out.dtype == mx.float32
        check(out, getattr(np, f)(y, axis=0), tol=1e-5)
    check(mx.sign(mx.array([3 - 4j, 0j])), [0.6 - 0.8j, 0j])
    assert mx.round(mx.array([22.2 + 3.6j, 18.5 + 98.2j])).tolist() == [22 + 4j, 18 + 98j]


def test_complex_normal():
    k = mx.random.key(2)
    z = mx.random.normal((20000,), dtype=mx.complex64, key=k)
    assert z.dtype == mx.complex64 and z.shape == (20000,)
    v = np.array(z)
    assert abs(v.real.var() - 0.5) < 0.03 and abs(v.imag.var() - 0.5) < 0.03
    w = np.array(mx.random.normal((20000,), dtype=mx.complex64, loc=3 + 1j, scale=2.0, key=k))
    np.testing.assert_allclose(w, 2 * v + (3 + 1j), rtol=1e-5, atol=1e-5)
    assert mx.random.normal((2, 3), dtype=mx.complex64).shape == (2, 3)
    with pytest.raises(ValueError):
        mx.random.normal((2,), dtype=mx.complex64, loc=mx.zeros((3,)))


def test_prod_vjp_is_the_product_of_the_others():
    p = mx.array(rand_complex((2, 20)))
    c = mx.array(rand_complex((20,)))
    _, (g,) = mx.vjp(lambda x: x.prod(axis=0), [p], [c])
    assert mx.array_equal(g, mx.stack([mx.conj(p[1]) * c, mx.conj(p[0]) * c])).item()
    # Zeros: the derivative is the product of the others, not 0/0.
    g = mx.grad(lambda x: mx.prod(x))(mx.array([2.0, 0.0, 3.0]))
    assert g.tolist() == [0.0, 6.0, 0.0]
