"""weft.core.fft against numpy.fft: values (odd and even sizes, chosen
axes, n/s padding and cutting, norm), dtypes, errors and gradients."""

import numpy as np
import pytest

import weft.core as mx

rng = np.random.default_rng(11)


def rand_real(shape):
    return rng.standard_normal(shape).astype(np.float32)


def rand_complex(shape):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


def check(out, want, tol=1e-4):
    """`out` (a weft array) against NumPy's complex128/float64 `want`."""
    got = np.array(out)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    scale = 1.0 + (np.abs(want).max() if want.size else 0.0)
    np.testing.assert_allclose(got, want, rtol=0, atol=tol * scale)


SIZES = [1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 17]


@pytest.mark.parametrize("n", SIZES)
def test_fft_ifft_match_numpy(n):
    x = rand_complex((3, n))
    y = mx.fft.fft(mx.array(x))
    assert y.dtype == mx.complex64
    check(y, np.fft.fft(x))
    check(mx.fft.ifft(mx.array(x)), np.fft.ifft(x))
    check(mx.fft.ifft(y), x)


@pytest.mark.parametrize("n", SIZES)
def test_rfft_irfft_match_numpy(n):
    x = rand_real((2, n))
    y = mx.fft.rfft(mx.array(x))
    assert y.dtype == mx.complex64
    assert y.shape == (2, n // 2 + 1)
    check(y, np.fft.rfft(x))
    back = mx.fft.irfft(y, n)
    assert back.dtype == mx.float32
    check(back, x)
    # irfft of an arbitrary (not Hermitian) half spectrum, default n.
    if n > 1:
        h = rand_complex((2, n))
        check(mx.fft.irfft(mx.array(h)), np.fft.irfft(h))


@pytest.mark.parametrize("axis", [0, 1, -3])
def test_along_a_chosen_axis(axis):
    x = rand_complex((5, 6, 3))
    check(mx.fft.fft(mx.array(x), axis=axis), np.fft.fft(x, axis=axis))
    check(mx.fft.ifft(mx.array(x), axis=axis), np.fft.ifft(x, axis=axis))
    r = rand_real((5, 6, 3))
    check(mx.fft.rfft(mx.array(r), axis=axis), np.fft.rfft(r, axis=axis))
    h = rand_complex((5, 6, 3))
    check(mx.fft.irfft(mx.array(h), axis=axis), np.fft.irfft(h, axis=axis))


@pytest.mark.parametrize("n", [1, 3, 6, 8, 13])
def test_n_pads_and_cuts(n):
    x = rand_complex((4, 6))
    check(mx.fft.fft(mx.array(x), n=n), np.fft.fft(x, n=n))
    check(mx.fft.ifft(mx.array(x), n=n, axis=0), np.fft.ifft(x, n=n, axis=0))
    r = rand_real((4, 6))
    check(mx.fft.rfft(mx.array(r), n=n), np.fft.rfft(r, n=n))
    h = rand_complex((4, 4))
    check(mx.fft.irfft(mx.array(h), n=n), np.fft.irfft(h, n=n))
    check(mx.fft.irfft(mx.array(h), n, 0), np.fft.irfft(h, n, 0))


def test_two_and_n_dimensional_transforms():
    x = rand_complex((3, 4, 5))
    a = mx.array(x)
    check(mx.fft.fft2(a), np.fft.fft2(x))
    check(mx.fft.ifft2(a), np.fft.ifft2(x))
    check(mx.fft.fftn(a), np.fft.fftn(x))
    check(mx.fft.ifftn(a), np.fft.ifftn(x))
    check(mx.fft.fft2(a, axes=(0, 2)), np.fft.fft2(x, axes=(0, 2)))
    check(mx.fft.fftn(a, s=(7, 2), axes=(2, 0)), np.fft.fftn(x, s=(7, 2), axes=(2, 0)))
    check(mx.fft.fftn(a, axes=[1]), np.fft.fftn(x, axes=[1]))
    check(mx.fft.ifftn(a, s=(2, 6), axes=(0, 1)), np.fft.ifftn(x, s=(2, 6), axes=(0, 1)))
    check(mx.fft.fft2(a, s=(3, 9)), np.fft.fft2(x, s=(3, 9)))
    # fft2 with axes=None transforms every axis, as fftn.
    check(mx.fft.fft2(a, axes=None), np.fft.fftn(x))

    r = rand_real((3, 4, 5))
    ra = mx.array(r)
    check(mx.fft.rfft2(ra), np.fft.rfft2(r))
    check(mx.fft.rfftn(ra), np.fft.rfftn(r))
    check(mx.fft.rfftn(ra, axes=(2, 0)), np.fft.rfftn(r, axes=(2, 0)))
    check(mx.fft.rfftn(ra, s=(6, 3), axes=(0, 1)), np.fft.rfftn(r, s=(6, 3), axes=(0, 1)))
    check(mx.fft.irfft2(mx.fft.rfft2(ra), s=(4, 5)), r)
    check(mx.fft.irfftn(mx.fft.rfftn(ra), s=(3, 4, 5)), r)
    h = rand_complex((3, 4, 5))
    check(mx.fft.irfft2(mx.array(h)), np.fft.irfft2(h))
    check(mx.fft.irfftn(mx.array(h)), np.fft.irfftn(h))
    check(mx.fft.irfftn(mx.array(h), s=(2, 7), axes=(0, 2)), np.fft.irfftn(h, s=(2, 7), axes=(0, 2)))


@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_norm(norm):
    x = rand_complex((2, 6))
    r = rand_real((2, 7))
    a = mx.array(x)
    check(mx.fft.fft(a, norm=norm), np.fft.fft(x, norm=norm))
    check(mx.fft.ifft(a, norm=norm), np.fft.ifft(x, norm=norm))
    check(mx.fft.fftn(a, norm=norm), np.fft.fftn(x, norm=norm))
    check(mx.fft.ifft2(a, norm=norm), np.fft.ifft2(x, norm=norm))
    check(mx.fft.rfft(mx.array(r), norm=norm), np.fft.rfft(r, norm=norm))
    check(mx.fft.irfft(mx.array(x), 9, norm=norm), np.fft.irfft(x, 9, norm=norm))
    check(mx.fft.irfftn(mx.array(x), norm=norm), np.fft.irfftn(x, norm=norm))


def test_inputs_of_other_kinds():
    # Lists, real arrays (made complex), float64 and complex128 NumPy arrays.
    check(mx.fft.fft([1.0, 2.0, 0.0, -1.0]), np.fft.fft([1.0, 2.0, 0.0, -1.0]))
    i = mx.arange(6)
    assert mx.fft.fft(i).dtype == mx.complex64
    check(mx.fft.fft(i), np.fft.fft(np.arange(6)))
    x64 = rng.standard_normal(8)
    check(mx.fft.rfft(x64), np.fft.rfft(x64))
    z128 = rng.standard_normal(8) + 1j * rng.standard_normal(8)
    check(mx.fft.fft(z128), np.fft.fft(z128))
    # A transposed (strided) input.
    z = rand_complex((4, 3))
    check(mx.fft.fft(mx.array(z).T), np.fft.fft(z.T))
    # Keyword and positional stream.
    check(mx.fft.fft(mx.array(z), 5, 0, mx.cpu), np.fft.fft(z, 5, 0))
    check(mx.fft.rfftn(mx.array(z.real), None, None, stream=mx.cpu), np.fft.rfftn(z.real))


def test_shift():
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    check(mx.fft.fftshift(mx.array(x)), np.fft.fftshift(x))
    check(mx.fft.ifftshift(mx.array(x)), np.fft.ifftshift(x))
    check(mx.fft.fftshift(mx.array(x), axes=1), np.fft.fftshift(x, axes=1))
    check(mx.fft.ifftshift(mx.array(x), axes=[0]), np.fft.ifftshift(x, axes=[0]))


@pytest.mark.parametrize(
    "call",
    [
        lambda: mx.fft.rfft(mx.array(np.ones(4, np.complex64))),
        lambda: mx.fft.fft(mx.array(np.ones(4, np.complex64)), n=0),
        lambda: mx.fft.fft(mx.array(np.ones(4, np.complex64)), n=-3),
        lambda: mx.fft.fft(mx.array(np.ones(4, np.complex64)), axis=1),
        lambda: mx.fft.fft(mx.array(np.ones(4, np.complex64)), axis=-2),
        lambda: mx.fft.fft(mx.array(1 + 2j)),
        lambda: mx.fft.fft2(mx.array(np.ones(4, np.complex64))),
        lambda: mx.fft.fftn(mx.array(np.ones((2, 4), np.complex64)), axes=(0, 0)),
        lambda: mx.fft.fftn(mx.array(np.ones((2, 4), np.complex64)), s=(2, 4), axes=(0,)),
        lambda: mx.fft.fftn(mx.array(np.ones((2, 4), np.complex64)), s=(0,)),
        lambda: mx.fft.irfft(mx.array(np.ones(1, np.complex64))),
        lambda: mx.fft.fft(mx.array(np.ones(4, np.complex64)), norm="bogus"),
    ],
)
def test_bad_arguments_raise_value_error(call):
    with pytest.raises(ValueError):
        call()


def test_submodule_imports():
    import weft.core.fft as f
    from weft.core import fft

    assert f is fft is mx.fft
    assert f.__name__ == "weft.core.fft"


def test_gradients():
    # Parseval: sum |fft(x)|^2 = n sum |x|^2, so the gradient is 2 n x
    # (for complex x: 2 n x under the dL/dRe + i dL/dIm convention).
    x = rand_real((3, 8))
    g = mx.grad(lambda a: mx.sum(mx.abs(mx.fft.fft(a)) ** 2))(mx.array(x))
    assert g.dtype == mx.float32
    check(g, 2 * 8 * x, tol=1e-3)
    z = rand_complex((5,))
    g = mx.grad(lambda a: mx.sum(mx.abs(mx.fft.ifft(a)) ** 2))(mx.array(z))
    assert g.dtype == mx.complex64
    check(g, 2 * z / 5, tol=1e-3)
    # rfft against central differences.
    w = rand_real((5,)).astype(np.float32)

    def f(a):
        y = mx.fft.rfft(a, n=8)
        return mx.sum(mx.real(y) * mx.array(w) + mx.imag(y) ** 2)

    x = rand_real((6,))
    g = np.array(mx.grad(f)(mx.array(x)))
    eps = 1e-2
    fd = []
    for i in range(6):
        p, m = x.copy(), x.copy()
        p[i] += eps
        m[i] -= eps
        fd.append((f(mx.array(p)).item() - f(mx.array(m)).item()) / (2 * eps))
    check(mx.array(g), np.array(fd), tol=1e-2)


def test_jvp_and_vmap():
    # The transforms are linear: their jvp is the transform of the tangent.
    z, t = rand_complex((6,)), rand_complex((6,))
    _, jt = mx.jvp(lambda a: mx.fft.fft(a), [mx.array(z)], [mx.array(t)])
    check(jt[0], np.fft.fft(t))
    x, tx = rand_real((8,)), rand_real((8,))
    _, jt = mx.jvp(lambda a: mx.fft.rfft(a), [mx.array(x)], [mx.array(tx)])
    check(jt[0], np.fft.rfft(tx))
    h, th = rand_complex((5,)), rand_complex((5,))
    _, jt = mx.jvp(lambda a: mx.fft.irfft(a), [mx.array(h)], [mx.array(th)])
    assert jt[0].dtype == mx.float32
    check(jt[0], np.fft.irfft(th))
    # Not holomorphic: d(re * im) = dre * im + re * dim.
    _, jt = mx.jvp(lambda a: mx.real(a) * mx.imag(a), [mx.array(z)], [mx.array(t)])
    check(jt[0], t.real * z.imag + z.real * t.imag)
    b = rand_complex((3, 4, 5))
    check(mx.vmap(lambda a: mx.fft.fft2(a))(mx.array(b)), np.fft.fft2(b))
    check(mx.vmap(lambda a: mx.fft.rfft(a), in_axes=1)(mx.array(b.real)), np.moveaxis(np.fft.rfft(b.real, axis=-1), 1, 0))


def test_fftfreq_and_rfftfreq_match_numpy():
    for n, d in [(1, 1.0), (4, 0.5), (5, 0.25), (8, -0.5), (7, 3.0)]:
        out = mx.fft.fftfreq(n, d=d)
        assert out.dtype == mx.float32
        np.testing.assert_array_equal(np.array(out), np.fft.fftfreq(n, d=d).astype(np.float32))
        np.testing.assert_array_equal(np.array(mx.fft.rfftfreq(n, d)), np.fft.rfftfreq(n, d=d).astype(np.float32))
    for bad in [(0,), (-1,), (4, 0.0)]:
        with pytest.raises(ValueError):
            mx.fft.fftfreq(*bad)
        with pytest.raises(ValueError):
            mx.fft.rfftfreq(*bad)
