"""NumPy-style math, predicates and shape helpers against NumPy on random inputs."""

import math

import numpy as np
import pytest

import weft.core as mx

RNG = np.random.default_rng(42)

UNARY = {
    "floor": (np.floor, -4, 4),
    "ceil": (np.ceil, -4, 4),
    "round": (np.round, -4, 4),
    "tan": (np.tan, -1.4, 1.4),
    "sinh": (np.sinh, -4, 4),
    "cosh": (np.cosh, -4, 4),
    "arcsin": (np.arcsin, -0.99, 0.99),
    "arccos": (np.arccos, -0.99, 0.99),
    "arctan": (np.arctan, -4, 4),
    "arcsinh": (np.arcsinh, -4, 4),
    "arccosh": (np.arccosh, 1.01, 4),
    "arctanh": (np.arctanh, -0.99, 0.99),
    "log1p": (np.log1p, -0.9, 4),
    "expm1": (np.expm1, -4, 4),
    "log2": (np.log2, 0.1, 4),
    "log10": (np.log10, 0.1, 4),
    "sign": (np.sign, -4, 4),
    "reciprocal": (np.reciprocal, 0.1, 4),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_against_numpy(name):
    f, lo, hi = UNARY[name]
    x = RNG.uniform(lo, hi, size=(4, 7)).astype(np.float32)
    got = getattr(mx, name)(mx.array(x))
    assert got.dtype == mx.float32
    np.testing.assert_allclose(np.array(got), f(x), rtol=2e-6, atol=1e-7)
    # Through a transposed view too.
    np.testing.assert_allclose(np.array(getattr(mx, name)(mx.array(x).T)), f(x.T), rtol=2e-6, atol=1e-7)


def test_aliases_and_constants():
    assert mx.asin is mx.arcsin and mx.atanh is mx.arctanh and mx.concat is mx.concatenate
    assert mx.pi == math.pi and mx.e == math.e and mx.inf == math.inf and math.isnan(mx.nan)
    assert mx.newaxis is None
    a = mx.array([[1, 2], [3, 4]])
    assert mx.permute_dims(a, (1, 0)).tolist() == [[1, 3], [2, 4]]
    assert mx.pow(a, 2).tolist() == [[1, 4], [9, 16]]


def test_round_decimals_and_integers():
    x = np.array([1.2345, -2.5, 0.5, 1.5, 2.6617, -0.0049], dtype=np.float32)
    np.testing.assert_allclose(np.array(mx.round(mx.array(x), 2)), np.round(x, 2), rtol=1e-6)
    np.testing.assert_array_equal(np.array(mx.round(mx.array(x))), np.round(x))
    i = mx.array([3, -7])
    assert mx.floor(i).dtype == mx.int32 and mx.round(i).tolist() == [3, -7]


def test_logical_and_predicates():
    a = np.array([0.0, 1.5, np.nan, -2.0, np.inf, -np.inf], dtype=np.float32)
    b = np.array([0.0, 0.0, 1.0, -2.0, 0.0, 3.0], dtype=np.float32)
    for name, f in [("logical_and", np.logical_and), ("logical_or", np.logical_or)]:
        np.testing.assert_array_equal(np.array(getattr(mx, name)(mx.array(a), mx.array(b))), f(a, b))
    np.testing.assert_array_equal(np.array(mx.logical_not(mx.array(a))), np.logical_not(a))
    for name in ("isnan", "isinf", "isfinite"):
        got = getattr(mx, name)(mx.array(a))
        assert got.dtype == mx.bool_
        np.testing.assert_array_equal(np.array(got), getattr(np, name)(a))


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2), -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_all_any_var_std(axis, keepdims):
    x = RNG.integers(0, 3, size=(3, 4, 5))
    for name in ("all", "any"):
        got = getattr(mx, name)(mx.array(x), axis=axis, keepdims=keepdims)
        np.testing.assert_array_equal(np.array(got), getattr(np, name)(x, axis=axis, keepdims=keepdims))
    f = RNG.normal(size=(3, 4, 5)).astype(np.float32)
    for ddof in (0, 1):
        for name in ("var", "std"):
            got = getattr(mx, name)(mx.array(f), axis=axis, keepdims=keepdims, ddof=ddof)
            want = getattr(np, name)(f.astype(np.float64), axis=axis, keepdims=keepdims, ddof=ddof)
            np.testing.assert_allclose(np.array(got), want, rtol=1e-5, atol=1e-6)
    assert mx.array(f).size and mx.all(mx.array(np.zeros((0,)))).item() is True


def test_clip_isclose_allclose_array_equal_logaddexp():
    x = RNG.normal(size=(5, 6)).astype(np.float32)
    np.testing.assert_array_equal(np.array(mx.clip(mx.array(x), -0.5, 0.25)), np.clip(x, -0.5, 0.25))
    np.testing.assert_array_equal(np.array(mx.clip(mx.array(x), None, 0.0)), np.clip(x, None, 0.0))
    with pytest.raises(ValueError):
        mx.clip(mx.array(x), None, None)
    y = x + RNG.normal(scale=1e-6, size=x.shape).astype(np.float32)
    np.testing.assert_array_equal(np.array(mx.isclose(mx.array(x), mx.array(y), rtol=1e-5)), np.isclose(x, y, rtol=1e-5))
    assert mx.allclose(mx.array(x), mx.array(y), atol=1e-4).item() == np.allclose(x, y, atol=1e-4)
    assert mx.allclose(mx.array(x), mx.array(x + 1)).item() is False
    n = mx.array([1.0, float("nan")])
    assert mx.array_equal(n, n).item() is False and mx.array_equal(n, n, equal_nan=True).item() is True
    assert mx.array_equal(mx.array([1, 2]), mx.array([1.0, 2.0])).item() is True
    assert mx.array_equal(mx.array([1, 2]), mx.array([1, 2, 3])).item() is False
    a, b = RNG.normal(scale=20, size=(2, 50)).astype(np.float32)
    np.testing.assert_allclose(np.array(mx.logaddexp(mx.array(a), mx.array(b))), np.logaddexp(a, b), rtol=1e-6)


def test_triangles_linspace_split_and_axes():
    x = RNG.normal(size=(2, 4, 5)).astype(np.float32)
    for k in (-2, 0, 1, 4):
        np.testing.assert_array_equal(np.array(mx.tril(mx.array(x), k)), np.tril(x, k))
        np.testing.assert_array_equal(np.array(mx.triu(mx.array(x), k)), np.triu(x, k))
        np.testing.assert_array_equal(np.array(mx.tri(4, 6, k)), np.tri(4, 6, k, dtype=np.float32))
    np.testing.assert_allclose(np.array(mx.linspace(-1, 3, 9)), np.linspace(-1, 3, 9, dtype=np.float32), rtol=1e-6)
    assert mx.linspace(0, 1).shape == (50,)
    for spec in (2, [1, 3], [-2], [0, 9]):
        got = mx.split(mx.array(x), spec, axis=-1 if spec != 2 else 1)
        want = np.split(x, spec, axis=-1 if spec != 2 else 1)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.array(g), w)
    with pytest.raises(ValueError):
        mx.split(mx.array(x), 3, axis=1)
    np.testing.assert_array_equal(np.array(mx.swapaxes(mx.array(x), 0, 2)), np.swapaxes(x, 0, 2))
    np.testing.assert_array_equal(np.array(mx.moveaxis(mx.array(x), 0, -1)), np.moveaxis(x, 0, -1))
    np.testing.assert_array_equal(np.array(mx.flip(mx.array(x), 1)), np.flip(x, 1))
    np.testing.assert_array_equal(np.array(mx.flip(mx.array(x))), np.flip(x))


def test_new_functions_work_from_worker_threads():
    # Built on the main thread, evaluated in workers: the whole point of weft.
    from concurrent.futures import ThreadPoolExecutor

    x = mx.array(RNG.normal(size=(64, 64)).astype(np.float32))
    lazy = [mx.std(mx.tril(x, k), axis=0) for k in range(8)]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda a: np.array(a), lazy))
    xn = np.array(x)
    for k, g in enumerate(got):
        np.testing.assert_allclose(g, np.std(np.tril(xn, k), axis=0), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.float32])
def test_floordiv_and_mod_follow_python(dtype):
    signed = dtype != np.uint8
    x = RNG.integers(-20 if signed else 0, 21, size=(5, 8)).astype(dtype)
    y = RNG.integers(-6 if signed else 1, 7, size=(5, 8)).astype(dtype)
    y[y == 0] = 3
    if dtype == np.float32:
        x = x * np.float32(0.37)
    a, b = mx.array(x), mx.array(y)
    np.testing.assert_allclose(np.array(a // b), x // y, rtol=1e-6)
    np.testing.assert_allclose(np.array(a % b), x % y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.array(mx.floor_divide(a, b)), np.floor_divide(x, y), rtol=1e-6)
    np.testing.assert_allclose(np.array(mx.remainder(a, b)), np.remainder(x, y), rtol=1e-5, atol=1e-6)
    assert (a // b).dtype == a.dtype
    # Python scalars on either side.
    np.testing.assert_allclose(np.array(7 % b), (np.array(7, dtype=dtype) % y), rtol=1e-5, atol=1e-6)
    c = mx.array(x)
    c //= 2
    np.testing.assert_allclose(np.array(c), x // dtype(2), rtol=1e-6)
    c = mx.array(x)
    c %= 5
    np.testing.assert_allclose(np.array(c), x % dtype(5), rtol=1e-5, atol=1e-6)


def test_bool_operators_and_new_methods():
    p = mx.array([True, False, True, False])
    q = mx.array([True, True, False, False])
    assert (p & q).tolist() == [True, False, False, False]
    assert (p | q).tolist() == [True, True, True, False]
    assert (~p).tolist() == [False, True, False, True]
    assert (p & True).tolist() == [True, False, True, False]
    # On integers they are bitwise (as MLX); floats are refused.
    assert (mx.array([1, 2]) & mx.array([3, 4])).tolist() == [1, 0]
    assert (~mx.array([1, 2])).tolist() == [-2, -3]
    with pytest.raises(ValueError):
        ~mx.array([1.5])
    x = RNG.normal(size=(3, 4, 5)).astype(np.float32)
    a = mx.array(x)
    np.testing.assert_allclose(np.array(a.var(axis=1, ddof=1)), x.astype(np.float64).var(axis=1, ddof=1), rtol=1e-5)
    np.testing.assert_allclose(np.array(a.std()), x.astype(np.float64).std(), rtol=1e-5)
    assert a.all().item() == bool(np.all(x)) and (a > 5).any().item() is False
    np.testing.assert_allclose(np.array(abs(a).log1p()), np.log1p(np.abs(x)), rtol=1e-6)
    np.testing.assert_allclose(np.array(abs(a).log2()), np.log2(np.abs(x)), rtol=1e-6)
    np.testing.assert_allclose(np.array(abs(a).log10()), np.log10(np.abs(x)), rtol=1e-6)
    np.testing.assert_allclose(np.array(a.reciprocal()), 1 / x, rtol=1e-6)
    np.testing.assert_array_equal(np.array(a.round(1)), np.round(x, 1))
    np.testing.assert_array_equal(np.array(a.moveaxis(2, 0)), np.moveaxis(x, 2, 0))
    np.testing.assert_array_equal(np.array(a.mT), np.swapaxes(x, -1, -2))
    parts = a.split(2, axis=1)
    assert [p.shape for p in parts] == [(3, 2, 5), (3, 2, 5)]
    np.testing.assert_array_equal(np.array(+a), x)
    import copy

    b = copy.deepcopy(a)
    b[0] = 0.0
    np.testing.assert_array_equal(np.array(a), x)  # the copy's assignment leaves a alone
    assert np.array(b)[0].sum() == 0


def test_repeat_tile_pad():
    x = RNG.normal(size=(2, 3)).astype(np.float32)
    a = mx.array(x)
    np.testing.assert_array_equal(np.array(mx.repeat(a, 3, axis=1)), np.repeat(x, 3, axis=1))
    np.testing.assert_array_equal(np.array(mx.repeat(a, 2)), np.repeat(x, 2))
    for reps in (2, (2, 1), (3, 1, 2)):
        np.testing.assert_array_equal(np.array(mx.tile(a, reps)), np.tile(x, reps))
    for width in (1, (1, 2), [(0, 1), (2, 0)], [[1, 1]]):
        np_width = width if not isinstance(width, list) or len(width) == 2 else width * 2
        np.testing.assert_array_equal(np.array(mx.pad(a, width)), np.pad(x, np_width))
        np.testing.assert_array_equal(np.array(mx.pad(a, width, constant_values=-1.5)), np.pad(x, np_width, constant_values=-1.5))
        np.testing.assert_array_equal(np.array(mx.pad(a, width, mode="edge")), np.pad(x, np_width, mode="edge"))
    with pytest.raises(ValueError):
        mx.pad(a, [(1, 1)] * 3)
    with pytest.raises(ValueError):
        mx.pad(a, 1, mode="wrap")
