"""weft.core.linalg and einsum against NumPy."""

import itertools
import threading

import numpy as np
import pytest

import weft.core as mx

rng = np.random.default_rng(7)


def random(shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def check(out, want, rtol=1e-4, atol=1e-5):
    out = np.array(out)
    assert out.shape == np.shape(want)
    np.testing.assert_allclose(out, want, rtol=rtol, atol=atol)


def spd(shape):
    x = random(shape)
    return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1], dtype=np.float32)


@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 3, 4)])
def test_norm_matches_numpy(shape):
    x = random(shape)
    a = mx.array(x)
    check(mx.linalg.norm(a), np.linalg.norm(x))
    for keepdims in (False, True):
        for ax in range(len(shape)):
            for o in [None, 0.5, 0, 1, 2, 3, -1, np.inf, -np.inf]:
                want = np.linalg.norm(x, ord=o, axis=ax, keepdims=keepdims)
                check(mx.linalg.norm(a, ord=o, axis=ax, keepdims=keepdims), want)
        for axes in itertools.permutations(range(len(shape)), 2):
            for o in [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]:
                want = np.linalg.norm(x, ord=o, axis=axes, keepdims=keepdims)
                check(mx.linalg.norm(a, ord=o, axis=list(axes), keepdims=keepdims), want)
    with pytest.raises(ValueError):
        mx.linalg.norm(a, ord="bad", axis=0)


def test_inv_solve_cholesky_match_numpy():
    a = spd((3, 4, 4))
    b = random((3, 4, 2))
    check(mx.linalg.inv(mx.array(a)), np.linalg.inv(a), atol=1e-5)
    check(mx.linalg.solve(mx.array(a), mx.array(b)), np.linalg.solve(a, b), atol=1e-5)
    check(mx.linalg.solve(mx.array(a[0]), mx.array(b[0, :, 0])), np.linalg.solve(a[0], b[0, :, 0]), atol=1e-5)
    check(mx.linalg.cholesky(mx.array(a)), np.linalg.cholesky(a), atol=1e-5)
    check(mx.linalg.cholesky(mx.array(a), upper=True), np.swapaxes(np.linalg.cholesky(a), -1, -2), atol=1e-5)
    L = mx.linalg.cholesky(mx.array(a))
    check(mx.linalg.cholesky_inv(L), np.linalg.inv(a), atol=1e-4)
    low = np.tril(a)
    check(mx.linalg.tri_inv(mx.array(a)), np.linalg.inv(low), atol=1e-5)
    check(mx.linalg.solve_triangular(mx.array(a), mx.array(b)), np.linalg.solve(low, b), atol=1e-5)
    check(mx.linalg.pinv(mx.array(a[:, :, :3])), np.linalg.pinv(a[:, :, :3]), atol=1e-4)
    check(mx.linalg.det(mx.array(a)), np.linalg.det(a), rtol=1e-4)
    sign, logdet = mx.linalg.slogdet(mx.array(a))
    want = np.linalg.slogdet(a)
    check(sign, want[0])
    check(logdet, want[1])


def test_float64_stays_float64():
    a = spd((4, 4)).astype(np.float64)
    with mx.stream(mx.cpu):
        inv = mx.linalg.inv(mx.array(a, dtype=mx.float64))
    assert inv.dtype == mx.float64
    check(inv, np.linalg.inv(a), atol=1e-12)


def test_factorizations_match_numpy():
    for shape in [(4, 4), (5, 3), (3, 5), (2, 4, 3)]:
        x = random(shape)
        q, r = mx.linalg.qr(mx.array(x))
        qn, rn = np.linalg.qr(x)
        assert q.shape == qn.shape and r.shape == rn.shape
        check(q @ r, x)
        u, s, vt = mx.linalg.svd(mx.array(x))
        un, sn, vtn = np.linalg.svd(x)
        assert u.shape == un.shape and vt.shape == vtn.shape
        check(s, sn)
        check(mx.linalg.svd(mx.array(x), compute_uv=False), sn)
        p, l, uu = mx.linalg.lu(mx.array(x))
        assert p.dtype == mx.uint32
        check(mx.take_along_axis(l, p[..., None], axis=-2) @ uu, x)
    s = random((3, 5, 5))
    s = s + np.swapaxes(s, -1, -2)
    for uplo in "LU":
        w, v = mx.linalg.eigh(mx.array(s), UPLO=uplo)
        check(w, np.linalg.eigvalsh(s, UPLO=uplo))
        check(mx.array(s) @ v, w[..., None, :] * v, atol=1e-4)
        check(mx.linalg.eigvalsh(mx.array(s), UPLO=uplo), np.linalg.eigvalsh(s, UPLO=uplo))


def test_cross_matches_numpy():
    a, b = random((2, 1, 3)), random((1, 2, 3))
    check(mx.linalg.cross(mx.array(a), mx.array(b)), np.cross(a, b))
    check(mx.linalg.cross(mx.array(a.T), mx.array(b.T), axis=0), np.cross(a.T, b.T, axis=0))
    with pytest.raises(ValueError):
        mx.linalg.cross(mx.array([1.0]), mx.array([2.0]))


def test_errors():
    with pytest.raises(ValueError):
        mx.linalg.inv(mx.array([[1, 2], [3, 4]]))  # integers, as MLX
    with pytest.raises(ValueError):
        mx.linalg.qr(mx.array([1.0, 2.0]))
    with pytest.raises(ValueError):
        mx.linalg.eigh(mx.ones((2, 3)))
    with pytest.raises(ValueError):
        mx.linalg.eigh(mx.eye(2), UPLO="X")
    with pytest.raises(RuntimeError, match="singular"):
        mx.eval(mx.linalg.inv(mx.array([[1.0, 2.0], [2.0, 4.0]])))
    with pytest.raises(RuntimeError, match="positive definite"):
        mx.eval(mx.linalg.cholesky(mx.array([[1.0, 2.0], [2.0, 1.0]])))
    # A failed factorization is an error, and only for what depends on it.
    ok = mx.linalg.inv(mx.eye(2))
    assert np.array_equal(np.array(ok), np.eye(2))


def test_gradients():
    a = mx.array(spd((3, 3)))
    # d tr(inv(a)) / da = -inv(a)^T inv(a)^T
    g = mx.grad(lambda x: mx.sum(mx.linalg.inv(x) * mx.eye(3)))(a)
    ia = np.linalg.inv(np.array(a))
    check(g, -(ia.T @ ia.T), atol=1e-4)
    # d sum(svd values) / da = U Vt (the nuclear norm's gradient).
    x = random((4, 3))
    g = mx.grad(lambda y: mx.sum(mx.linalg.svd(y, compute_uv=False)))(mx.array(x))
    u, _, vt = np.linalg.svd(x, full_matrices=False)
    check(g, u @ vt, atol=1e-4)


def test_from_threads():
    a = mx.array(spd((8, 6, 6)))
    out = [None] * 4

    def work(i):
        out[i] = np.array(mx.linalg.inv(a))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for o in out:
        check(o, np.linalg.inv(np.array(a)), atol=1e-4)


@pytest.mark.parametrize(
    "spec,shapes",
    [
        ("ii->i", [(4, 4)]),
        ("ij->", [(2, 4)]),
        ("ijk->jki", [(2, 3, 4)]),
        ("ik,kj", [(2, 8), (8, 3)]),
        ("i,j->ij", [(4,), (6,)]),
        ("abcd,fgda->bfca", [(2, 8, 3, 5), (3, 7, 5, 2)]),
        ("ab,bc->c", [(5, 1), (8, 2)]),
        ("...ij,...jk->...ik", [(1, 3, 4), (2, 4, 5)]),
        ("ab...,b...->a...", [(2, 3), (3, 4)]),
        ("dcc,fce,ea,dbf->ab", [(5, 4, 4), (3, 4, 2), (2, 2), (5, 3, 3)]),
        ("Ba,aA", [(2, 3), (3, 4)]),
    ],
)
def test_einsum_matches_numpy(spec, shapes):
    xs = [random(s) for s in shapes]
    check(mx.einsum(spec, *[mx.array(x) for x in xs]), np.einsum(spec, *xs), atol=1e-4)


def test_einsum_path_matches_numpy():
    for spec, shapes in [
        ("ij,jk,kl", [(5, 8), (8, 3), (3, 7)]),
        ("ij,jk,kl", [(5, 8), (8, 10), (10, 7)]),
        ("eb,cb,fb->cef", [(4, 3), (4, 3), (3, 3)]),
        ("dd,fb,be,cdb->cef", [(5, 5), (3, 3), (3, 4), (4, 5, 3)]),
        ("bca,cdb,dbf,afc->", [(3, 4, 2), (4, 5, 3), (5, 3, 3), (2, 3, 4)]),
    ]:
        xs = [np.ones(s) for s in shapes]
        path, info = mx.einsum_path(spec, *[mx.array(x) for x in xs])
        assert path == np.einsum_path(spec, *xs)[0][1:]
        assert "Complete contraction" in info


def test_einsum_errors():
    a = mx.ones((2, 2))
    for bad in ["i1", "ij->ii", "ij->k", "ijk", "a...b...", "ij,jk"]:
        with pytest.raises(ValueError):
            mx.einsum(bad, a)
    with pytest.raises(ValueError):
        mx.einsum("ii", mx.ones((2, 3)))


def test_diag_and_diagonal_match_numpy():
    x = random((3, 4, 5))
    check(mx.diagonal(mx.array(x), 1, 0, 2), np.diagonal(x, 1, 0, 2))
    check(mx.diag(mx.array(x[0]), k=-1), np.diag(x[0], k=-1))
    check(mx.diag(mx.array(x[0, 0]), 2), np.diag(x[0, 0], 2))


def test_norms_of_complex_are_norms_of_the_moduli():
    rng = np.random.default_rng(4)
    x = (rng.random((2, 3, 3)) + 1j * rng.random((2, 3, 3))).astype(np.complex64)
    a = mx.array(x)
    out = mx.linalg.norm(a)
    assert out.dtype == mx.float32
    np.testing.assert_allclose(np.array(out), np.linalg.norm(x), rtol=1e-5)
    for axis in [(0,), (2,), (0, 1), (1, 2)]:
        np.testing.assert_allclose(np.array(mx.linalg.norm(a, axis=axis)), np.linalg.norm(x, axis=axis), rtol=1e-5)
    for ord in ["fro", 1, float("inf")]:
        np.testing.assert_allclose(np.array(mx.linalg.norm(a[0], ord=ord)), np.linalg.norm(x[0], ord=ord), rtol=1e-5)
    np.testing.assert_allclose(np.array(mx.linalg.norm(a[0, 0], ord=3)), np.linalg.norm(x[0, 0], ord=3), rtol=1e-5)
    with pytest.raises(ValueError):
        mx.linalg.norm(a[0], ord=2)
