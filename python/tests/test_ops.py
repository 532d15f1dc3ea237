"""Module-level ops compared with NumPy on random inputs, their argument
handling (axes, shapes, dtypes, stream=) and their exception types."""

import numpy as np
import pytest

import weft.core as mx

rng = np.random.default_rng(1)


def random(shape, dtype="float32"):
    return rng.standard_normal(shape).astype(dtype)


def check(out, want, rtol=1e-5, atol=1e-6):
    out = np.array(out)
    assert out.shape == np.shape(want)
    np.testing.assert_allclose(out, want, rtol=rtol, atol=atol)


UNARY = {
    "negative": (np.negative, lambda x: x),
    "abs": (np.abs, lambda x: x),
    "exp": (np.exp, lambda x: x),
    "log": (np.log, lambda x: np.abs(x) + 0.1),
    "sqrt": (np.sqrt, lambda x: np.abs(x)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), lambda x: np.abs(x) + 0.1),
    "tanh": (np.tanh, lambda x: x),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), lambda x: x),
    "sin": (np.sin, lambda x: x),
    "cos": (np.cos, lambda x: x),
    "square": (np.square, lambda x: x),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    npf, domain = UNARY[name]
    x = domain(random((3, 17)))
    check(getattr(mx, name)(mx.array(x)), npf(x))
    # float16 stays float16
    h = mx.array(x.astype(np.float16))
    assert getattr(mx, name)(h).dtype == mx.float16


def test_unary_of_ints_is_float32():
    assert mx.exp(mx.array([1, 2])).dtype == mx.float32
    assert mx.abs(mx.array([-1, 2])).dtype == mx.int32
    assert mx.abs(mx.array([-1, 2])).tolist() == [1, 2]
    with pytest.raises(ValueError):
        mx.negative(mx.array([True]))


BINARY = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.true_divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name):
    for sa, sb in [((4, 5), (4, 5)), ((4, 1), (5,)), ((2, 1, 3), (4, 1)), ((), (3,))]:
        x, y = random(sa), random(sb)
        out = getattr(mx, name)(mx.array(x), mx.array(y))
        check(out, BINARY[name](x, y))
        check(getattr(mx, name)(mx.array(x), 0.5), BINARY[name](x, np.float32(0.5)))
        check(getattr(mx, name)(0.5, mx.array(y)), BINARY[name](np.float32(0.5), y))


def test_power():
    x, y = np.abs(random((3, 4))) + 0.1, random((3, 4))
    check(mx.power(mx.array(x), mx.array(y)), np.power(x, y))
    check(mx.power(mx.array(x), 2), x**2)
    assert mx.power(mx.array([2, 3]), 2).tolist() == [4, 9]


def test_integer_arithmetic():
    x = rng.integers(-50, 50, size=(4, 6)).astype(np.int32)
    y = rng.integers(1, 50, size=(4, 6)).astype(np.int32)
    for name in ["add", "subtract", "multiply", "maximum", "minimum"]:
        out = getattr(mx, name)(mx.array(x), mx.array(y))
        assert out.dtype == mx.int32
        np.testing.assert_array_equal(np.array(out), BINARY[name](x, y))
    check(mx.divide(mx.array(x), mx.array(y)), x / y)


def test_binary_shape_errors():
    with pytest.raises(ValueError):
        mx.add(mx.zeros((2, 3)), mx.zeros((4,)))
    with pytest.raises(TypeError):
        mx.add(mx.zeros((2,)), "a")


def test_where():
    c = rng.random((3, 4)) > 0.5
    x, y = random((3, 4)), random((4,))
    check(mx.where(mx.array(c), mx.array(x), mx.array(y)), np.where(c, x, y))
    h = mx.array(x.astype(np.float16))
    out = mx.where(mx.array(c), h, 0.0)
    assert out.dtype == mx.float16
    check(out, np.where(c, x.astype(np.float16), 0), rtol=1e-3)


def test_astype():
    x = random((3, 4)) * 10
    for d, nd in [(mx.int32, np.int32), (mx.float16, np.float16), (mx.bool_, np.bool_), (mx.int64, np.int64)]:
        np.testing.assert_array_equal(np.array(mx.astype(mx.array(x), d)), x.astype(nd))


def test_creation():
    z = mx.zeros((2, 3))
    assert z.dtype == mx.float32 and z.shape == (2, 3)
    np.testing.assert_array_equal(np.array(z), np.zeros((2, 3)))
    assert mx.zeros(4, dtype=mx.int32).tolist() == [0, 0, 0, 0]
    np.testing.assert_array_equal(np.array(mx.ones([3], mx.float16)), np.ones(3))
    f = mx.full((2, 2), 7)
    assert f.dtype == mx.int32 and f.tolist() == [[7, 7], [7, 7]]
    assert mx.full((2,), 1.5).dtype == mx.float32
    assert mx.full((2, 3), mx.array([1, 2, 3]), dtype=mx.float32).tolist() == [[1, 2, 3]] * 2
    x = mx.array(random((3, 2)).astype(np.float16))
    assert mx.zeros_like(x).dtype == mx.float16 and mx.zeros_like(x).shape == (3, 2)
    assert np.array(mx.ones_like(x)).tolist() == [[1, 1]] * 3
    with pytest.raises(ValueError):
        mx.zeros((-1, 2))
    with pytest.raises(TypeError):
        mx.zeros((2,), dtype="float32")


def test_arange():
    a = mx.arange(5)
    assert a.dtype == mx.int32 and a.tolist() == [0, 1, 2, 3, 4]
    assert mx.arange(1, 10, 3).tolist() == [1, 4, 7]
    assert mx.arange(5, 0, -2).tolist() == [5, 3, 1]
    f = mx.arange(0, 1, 0.25)
    assert f.dtype == mx.float32
    check(f, np.arange(0, 1, 0.25))
    assert mx.arange(3, dtype=mx.float16).dtype == mx.float16
    assert mx.arange(3.0).tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(ValueError):
        mx.arange(0, 3, 0)


def test_eye():
    for n, m, k in [(3, None, 0), (3, 5, 1), (4, 2, -1), (3, 3, 5)]:
        check(mx.eye(n, m, k), np.eye(n, m, k))
    assert mx.eye(2, dtype=mx.int32).dtype == mx.int32
    with pytest.raises(ValueError):
        mx.eye(-1)


def test_shape_ops():
    x = random((2, 3, 4))
    a = mx.array(x)
    check(mx.reshape(a, (4, 6)), x.reshape(4, 6))
    check(mx.reshape(a, [-1, 2]), x.reshape(-1, 2))
    check(mx.transpose(a), x.transpose())
    check(mx.transpose(a, (1, 2, 0)), x.transpose(1, 2, 0))
    check(mx.transpose(a, [-1, 0, 1]), x.transpose(-1, 0, 1))
    check(mx.broadcast_to(mx.array(x[:, :1]), (2, 5, 4)), np.broadcast_to(x[:, :1], (2, 5, 4)))
    check(mx.expand_dims(a, 0), np.expand_dims(x, 0))
    check(mx.expand_dims(a, -1), np.expand_dims(x, -1))
    check(mx.expand_dims(a, (0, 2)), np.expand_dims(x, (0, 2)))
    check(mx.squeeze(mx.array(x[:, :1, None])), x[:, :1, None].squeeze())
    check(mx.squeeze(mx.array(x[:, :1, None]), 1), x[:, :1, None].squeeze(1))
    check(mx.squeeze(mx.array(x[:, :1, None]), (1, 2)), x[:, :1, None].squeeze((1, 2)))
    check(mx.flatten(a), x.flatten())
    check(mx.flatten(a, 1), x.reshape(2, 12))
    with pytest.raises(ValueError):
        mx.reshape(a, (5, 5))
    with pytest.raises(ValueError):
        mx.transpose(a, (0, 1))
    with pytest.raises(ValueError):
        mx.broadcast_to(a, (3, 3, 4))
    with pytest.raises(ValueError):
        mx.squeeze(a, 0)
    with pytest.raises(ValueError):
        mx.expand_dims(a, 5)


def test_concatenate_and_stack():
    xs = [random((2, 3)), random((4, 3)), random((1, 3))]
    check(mx.concatenate([mx.array(x) for x in xs]), np.concatenate(xs))
    ys = [random((2, 3)), random((2, 1))]
    check(mx.concatenate([mx.array(y) for y in ys], axis=1), np.concatenate(ys, axis=1))
    check(mx.concatenate([mx.array(y) for y in ys], axis=None), np.concatenate(ys, axis=None))
    mixed = mx.concatenate([mx.array([1, 2]), mx.array([1.5])])
    assert mixed.dtype == mx.float32
    zs = [random((2, 3)) for _ in range(3)]
    check(mx.stack([mx.array(z) for z in zs]), np.stack(zs))
    check(mx.stack([mx.array(z) for z in zs], axis=-1), np.stack(zs, axis=-1))
    with pytest.raises(ValueError):
        mx.concatenate([mx.zeros((2, 3)), mx.zeros((2, 4))])
    with pytest.raises(ValueError):
        mx.concatenate([])


# --- reductions and matmul: graphs (shapes, dtypes, argument errors) ---


def test_reduction_and_matmul_graphs():
    x = np.zeros((3, 4, 5), np.float32)
    a = mx.array(x)
    for axis in [None, 0, -1, (0, 2), [1], []]:
        for keepdims in [False, True]:
            np_axis = tuple(axis) if isinstance(axis, list) else axis
            for name in ["sum", "mean", "max", "min"]:
                want = getattr(np, name)(x, axis=np_axis, keepdims=keepdims).shape
                assert getattr(mx, name)(a, axis=axis, keepdims=keepdims).shape == want, (name, axis)
                assert getattr(a, name)(axis, keepdims).shape == want
    for name in ["argmax", "argmin"]:
        assert getattr(mx, name)(a).shape == ()
        assert getattr(mx, name)(a, 1).shape == (3, 5)
        assert getattr(a, name)(axis=-1, keepdims=True).shape == (3, 4, 1)
        assert getattr(mx, name)(a).dtype == mx.uint32
        with pytest.raises(ValueError):
            getattr(mx, name)(a, 3)
    for name in ["sum", "mean", "max", "min"]:
        with pytest.raises(ValueError):
            getattr(mx, name)(a, axis=3)
        with pytest.raises(ValueError):
            getattr(mx, name)(a, axis=(0, 0))
    assert mx.sum(mx.array([True])).dtype == mx.int32
    assert mx.mean(mx.array([1])).dtype == mx.float32
    assert mx.max(mx.array([1], mx.uint8)).dtype == mx.uint8
    shapes = [((3, 4), (4, 5), (3, 5)), ((2, 3, 4), (4, 2), (2, 3, 2)), ((4,), (4, 3), (3,)), ((3, 4), (4,), (3,))]
    for sa, sb, want in shapes:
        assert mx.matmul(mx.zeros(sa), mx.zeros(sb)).shape == want
    assert (mx.zeros((2, 1, 3, 4)) @ mx.zeros((5, 4, 2))).shape == (2, 5, 3, 2)
    assert mx.matmul(mx.zeros((2, 2), mx.float16), mx.zeros((2, 2), mx.float16)).dtype == mx.float16
    with pytest.raises(ValueError):
        mx.matmul(mx.zeros((2, 3)), mx.zeros((4, 2)))
    with pytest.raises(ValueError):
        mx.matmul(mx.zeros((2, 3)), mx.array(1.0))
    with pytest.raises(ValueError):
        mx.matmul(mx.zeros((2, 2), mx.int32), mx.zeros((2, 2), mx.int32))


# --- reductions and matmul: values ---


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min"])
def test_reductions(name):
    x = random((3, 4, 5))
    a = mx.array(x)
    npf = getattr(np, name)
    for axis in [None, 0, -1, (0, 2), [1]]:
        for keepdims in [False, True]:
            np_axis = tuple(axis) if isinstance(axis, list) else axis
            check(getattr(mx, name)(a, axis=axis, keepdims=keepdims), npf(x, axis=np_axis, keepdims=keepdims), rtol=1e-4)
            check(getattr(a, name)(axis=axis, keepdims=keepdims), npf(x, axis=np_axis, keepdims=keepdims), rtol=1e-4)
    with pytest.raises(ValueError):
        getattr(mx, name)(a, axis=3)


def test_reduction_dtypes():
    assert mx.sum(mx.array([True, True])).dtype == mx.int32
    assert mx.mean(mx.array([1, 2])).dtype == mx.float32
    assert mx.sum(mx.array([True, True, False])).item() == 2
    assert mx.mean(mx.array([1, 2])).item() == 1.5


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_reductions(name):
    x = random((4, 6))
    a = mx.array(x)
    npf = getattr(np, name)
    out = getattr(mx, name)(a)
    assert out.dtype == mx.uint32
    assert out.item() == npf(x)
    for axis in [0, 1, -1]:
        np.testing.assert_array_equal(np.array(getattr(mx, name)(a, axis)), npf(x, axis=axis))
        np.testing.assert_array_equal(
            np.array(getattr(a, name)(axis=axis, keepdims=True)), npf(x, axis=axis, keepdims=True)
        )


def test_matmul():
    for sa, sb in [((3, 4), (4, 5)), ((2, 3, 4), (4, 2)), ((4,), (4, 3)), ((3, 4), (4,)), ((2, 1, 3, 4), (5, 4, 2))]:
        x, y = random(sa), random(sb)
        check(mx.matmul(mx.array(x), mx.array(y)), x @ y, rtol=1e-4, atol=1e-5)
        check(mx.array(x) @ mx.array(y), x @ y, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError):
        mx.matmul(mx.zeros((2, 3)), mx.zeros((4, 2)))


# --- stream= and errors at evaluation ---


def test_stream_argument():
    s = mx.new_stream(mx.cpu)
    out = mx.add(mx.array([1.0]), 1.0, stream=s)
    assert out.stream == s
    out2 = mx.zeros((2,), stream=s)
    assert out2.stream == s
    out3 = mx.array([1.0]).astype(mx.int32, stream=s)
    assert out3.stream == s
    # A device means that thread's default stream on it.
    d = mx.exp(mx.array([0.0]), stream=mx.cpu)
    assert d.stream == mx.default_stream(mx.cpu)
    assert mx.exp(mx.array([0.0]), stream=mx.Device(mx.cpu)).tolist() == [1.0]
    with pytest.raises(TypeError):
        mx.exp(mx.array([0.0]), stream="cpu")


def test_memory_limit_raises_memory_error():
    # Out of memory is a MemoryError (issue 10 item 2), also when the failure
    # is an input's (the error's root decides the exception type).
    x = mx.ones((1 << 20,))
    mx.eval(x)
    old = mx.set_memory_limit(mx.get_active_memory() + 1024)
    try:
        y = mx.exp(mx.arange(1 << 22, dtype=mx.float32))
        with pytest.raises(MemoryError):
            mx.eval(y)
        with pytest.raises(MemoryError):
            y.tolist()
    finally:
        mx.set_memory_limit(old)
    # Other work goes on.
    assert mx.exp(mx.array([0.0])).item() == 1.0


def test_memory_counters():
    x = mx.exp(mx.zeros((1 << 18,)))
    mx.eval(x)
    assert mx.get_active_memory() >= 4 * (1 << 18)
    assert mx.get_peak_memory() >= mx.get_active_memory()
    del x
    assert mx.get_cache_memory() == 0
