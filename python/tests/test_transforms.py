"""weft.core's function transforms with mlx.core's signatures: grad and
value_and_grad (argnums, argnames, trees), vjp, jvp, vmap (in_axes,
out_axes), stop_gradient, checkpoint, custom_function; and from threads."""

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import weft.core as mx


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.array(a), np.array(b), rtol=tol, atol=tol)


def test_grad_of_a_scalar_function_and_second_derivative():
    f = lambda x: mx.sum(mx.sin(x) * x)
    x = mx.array([0.3, -1.2, 2.0])
    xs = np.array([0.3, -1.2, 2.0])
    close(mx.grad(f)(x), np.sin(xs) + xs * np.cos(xs))
    d2 = mx.grad(lambda x: mx.sum(mx.grad(f)(x)))(x)
    close(d2, 2 * np.cos(xs) - xs * np.sin(xs))


def test_value_and_grad_argnums_argnames_and_trees():
    def loss(params, x, scale=1.0):
        return mx.sum((x @ params["w"] + params["b"][0]) ** 2) * scale, "aux"

    params = {"w": mx.array([[1.0], [2.0]]), "b": [mx.array([0.5])]}
    x = mx.array([[1.0, 1.0], [0.0, 1.0]])
    (value, aux), g = mx.value_and_grad(loss)(params, x)
    assert aux == "aux"
    r = np.array(x) @ np.array([[1.0], [2.0]]) + 0.5
    close(value, np.sum(r**2))
    assert set(g) == {"w", "b"} and isinstance(g["b"], list)
    close(g["w"], np.array(x).T @ (2 * r))
    close(g["b"][0], [np.sum(2 * r)])
    # Two argnums: a tuple of gradients.
    gp, gx = mx.grad(lambda p, x: loss(p, x)[0], argnums=(0, 1))(params, x)
    close(gx, (2 * r) @ np.array([[1.0, 2.0]]))
    # argnames: (positional, {name: grad}).
    pos, kw = mx.grad(lambda x, scale: mx.sum(x * scale), argnums=[], argnames="scale")(x, scale=mx.array(3.0))
    assert pos is None and set(kw) == {"scale"}  # as MLX: no positional argnums
    close(kw["scale"], np.sum(np.array(x)))


def test_grad_errors_are_python_exceptions():
    with pytest.raises(ValueError):
        mx.grad(lambda x: x * 2)(mx.array([1.0, 2.0]))  # not a scalar
    with pytest.raises(ValueError):
        mx.grad(lambda x: mx.sum(x), argnums=3)(mx.array([1.0]))
    with pytest.raises(ZeroDivisionError):
        mx.grad(lambda x: 1 / 0)(mx.array([1.0]))  # the function's own exception


def test_vjp_and_jvp():
    f = lambda x, y: [x * y, mx.exp(x)]
    x, y = mx.array([1.0, 2.0]), mx.array([3.0, 4.0])
    outs, vjps = mx.vjp(f, [x, y], [mx.array([1.0, 1.0]), mx.array([0.0, 1.0])])
    close(outs[0], [3.0, 8.0])
    close(vjps[0], [3.0, 4.0 + math.exp(2.0)])
    close(vjps[1], [1.0, 2.0])
    outs, jvps = mx.jvp(f, [x, y], [mx.array([1.0, 0.0]), mx.array([0.0, 1.0])])
    close(jvps[0], [3.0, 2.0])
    close(jvps[1], [math.exp(1.0), 0.0])


def test_vmap_in_axes_out_axes_against_a_loop():
    a = mx.random.normal((4, 3))
    b = mx.random.normal((3, 5))
    f = lambda x, m: mx.softmax(x @ m, axis=-1)
    y = mx.vmap(f, in_axes=(0, None))(a, b)
    want = np.stack([np.array(f(a[i], b)) for i in range(4)])
    close(y, want)
    # Batch along axis 1 of the first argument, out on axis 1.
    y = mx.vmap(f, in_axes=(1, None), out_axes=1)(mx.transpose(a), b)
    close(y, np.transpose(want, (1, 0)))
    # Trees in and out.
    g = lambda d: {"s": mx.sum(d["x"]), "t": (d["x"] * 2,)}
    out = mx.vmap(g)({"x": a})
    close(out["s"], np.array(a).sum(1))
    close(out["t"][0], np.array(a) * 2)
    # vmap of grad: per-example gradients.
    per = mx.vmap(mx.grad(lambda x: mx.sum(x**3)))(a)
    close(per, 3 * np.array(a) ** 2)
    with pytest.raises(ValueError):
        mx.vmap(lambda x, y: x + y)(mx.ones((2, 3)), mx.ones((3, 3)))


def test_stop_gradient_checkpoint_and_custom_function():
    x = mx.array([0.5, -1.0, 2.0])
    close(mx.grad(lambda x: mx.sum(x * mx.stop_gradient(x)))(x), np.array(x))
    f = lambda x: mx.tanh(mx.exp(x) * x)
    plain = mx.grad(lambda x: mx.sum(f(x)))(x)
    ck = mx.grad(lambda x: mx.sum(mx.checkpoint(f)(x)))(x)
    close(ck, plain, 1e-6)

    @mx.custom_function
    def g(x, y):
        return mx.sin(x) * y

    @g.vjp
    def g_vjp(primals, cotangent, output):
        x, y = primals
        return 10 * cotangent, 20 * cotangent

    gx, gy = mx.grad(lambda x, y: mx.sum(g(x, y)), argnums=(0, 1))(x, mx.ones(3))
    close(gx, [10.0] * 3)
    close(gy, [20.0] * 3)
    close(g(x, mx.ones(3)), np.sin(np.array(x)))


def test_transforms_from_threads_match_one_thread():
    w = mx.random.normal((8, 4))
    data = mx.random.normal((16, 8))

    def work(_):
        loss = lambda w: mx.mean(mx.tanh(data @ w) ** 2)
        v, g = mx.value_and_grad(loss)(w)
        per = mx.vmap(lambda r: mx.sum(r @ w))(data)
        return np.array(v), np.array(g), np.array(per)

    want = work(0)
    with ThreadPoolExecutor(8) as pool:
        for got in pool.map(work, range(32)):
            for a, b in zip(got, want):
                np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_compile_traces_once_per_signature_and_replays():
    calls = []

    def f(x, y, scale=2.0):
        calls.append(x.shape)
        return mx.exp(x) * y + scale

    cf = mx.compile(f)
    x, y = mx.array([0.0, 1.0]), mx.array([2.0, 3.0])
    close(cf(x, y), np.exp([0.0, 1.0]) * [2.0, 3.0] + 2.0)
    close(cf(x + 1, y), np.exp([1.0, 2.0]) * [2.0, 3.0] + 2.0)  # replayed, not called
    assert len(calls) == 1
    close(cf(mx.ones((3,)), mx.ones((3,))), np.exp(np.ones(3)) + 2.0)  # new shape: traced again
    close(cf(x, y, scale=5.0), np.exp([0.0, 1.0]) * [2.0, 3.0] + 5.0)  # new non-array value
    assert len(calls) == 3
    # Gradients through a compiled function, and compiled gradients.
    g = mx.grad(lambda x: mx.sum(cf(x, y)))(x)
    close(g, np.exp([0.0, 1.0]) * [2.0, 3.0])
    cg = mx.compile(mx.grad(lambda x: mx.sum(mx.sin(x))))
    close(cg(x), np.cos([0.0, 1.0]))
    close(cg(x * 2), np.cos([0.0, 2.0]))
    # From many threads at once.
    with ThreadPoolExecutor(8) as pool:
        for i, r in enumerate(pool.map(lambda i: np.array(cf(x + i, y)), range(16))):
            np.testing.assert_allclose(r, np.exp(np.array([0.0, 1.0]) + i) * [2.0, 3.0] + 2.0, rtol=1e-5)
    mx.disable_compile()
    try:
        cf(x, y)
        assert len(calls) == 4  # called directly
    finally:
        mx.enable_compile()


def test_capture_needs_a_gpu_stream_and_matches_the_compiled_function():
    def f(x, y, scale=2.0):
        return {"out": mx.softmax(x, axis=-1) * scale + y, "sum": mx.sum(y)}

    cf = mx.compile(f)
    x, y = mx.array([[0.0, 1.0, 2.0]]), mx.array([1.0, 2.0, 3.0])
    if not mx.cuda.is_available():
        # On a CPU stream there is no graph to record: a clear error, not a crash.
        with pytest.raises(ValueError, match="needs a GPU stream"):
            cf.capture(x, y)
        with pytest.raises(ValueError, match="implicit state"):
            mx.compile(f, inputs=[x]).capture(x, y)
        pytest.skip("no CUDA device on this machine: the captured CUDA graph itself runs only on the GPU machine")
    mx.set_default_device(mx.gpu)
    try:
        x, y = mx.array([[0.0, 1.0, 2.0]]), mx.array([1.0, 2.0, 3.0])
        g = cf.capture(x, y)
        assert g.buffers > 0
        for i in range(3):
            xi, yi = x + i, y * i
            got, want = g(xi, yi), cf(xi, yi)
            assert set(got) == {"out", "sum"}
            np.testing.assert_allclose(np.array(got["out"]), np.array(want["out"]), rtol=1e-6)
            np.testing.assert_allclose(np.array(got["sum"]), np.array(want["sum"]), rtol=1e-6)
        with pytest.raises(ValueError, match="captured for"):
            g(mx.ones((2, 3)), y)  # another shape
        with pytest.raises(ValueError, match="captured for"):
            g(x, y, scale=3.0)  # another non-array value
        with ThreadPoolExecutor(4) as pool:
            outs = list(pool.map(lambda i: np.array(g(x + i, y)["out"]), range(8)))
        for i, r in enumerate(outs):
            np.testing.assert_allclose(r, np.array(cf(x + i, y)["out"]), rtol=1e-6)
    finally:
        mx.set_default_device(mx.cpu)


def test_compile_shapeless_traces_once_across_shapes():
    traces = []

    def f(x, w):
        traces.append(x.shape)
        h = mx.exp(x * 0.5) + mx.mean(x, axis=-1, keepdims=True)
        return mx.softmax(h @ w, axis=-1), mx.var(x, axis=0), mx.sum(h, axis=1)

    cf = mx.compile(f, shapeless=True)
    rng = np.random.default_rng(0)
    for n, k, m in [(2, 3, 4), (5, 7, 2), (1, 1, 1), (8, 3, 6), (3, 16, 5), (2, 3, 4)]:
        xs, ws = rng.normal(size=(n, k)).astype(np.float32), rng.normal(size=(k, m)).astype(np.float32)
        got = cf(mx.array(xs), mx.array(ws))
        want = f(mx.array(xs), mx.array(ws))
        for g, w in zip(got, want):
            assert g.shape == w.shape
            close(g, w)
    assert len(traces) == 1 + 6  # one trace; the other calls are the uncompiled reference
    # A new number of dimensions traces again.
    cf(mx.ones((2, 3, 4)), mx.ones((4, 2)))
    assert len(traces) == 8
    # A shape fixed when traced fails clearly on other shapes.
    cr = mx.compile(lambda x: mx.reshape(x, (6,)) * 2, shapeless=True)
    close(cr(mx.ones((2, 3))), np.full(6, 2.0))
    with pytest.raises(ValueError, match="Reshape"):
        cr(mx.ones((3, 2)))


def test_shapeless_zeros_like_and_ones_like_follow_the_input():
    cz = mx.compile(lambda x: mx.zeros_like(x), shapeless=True)
    co = mx.compile(lambda x: mx.ones_like(x, dtype=mx.int32) + x.astype(mx.int32), shapeless=True)
    for shape in [(1, 1, 32), (2, 2, 16), (3, 5, 1)]:
        x = mx.full(shape, float("nan"))
        z = cz(x)
        assert z.shape == shape and not np.isnan(np.array(z)).any() and (np.array(z) == 0).all()
        o = co(mx.full(shape, 2.0))
        assert o.shape == shape and o.dtype == mx.int32 and (np.array(o) == 3).all()


def test_grad_argument_checks_match_mlx():
    f = lambda x: x
    with pytest.raises(ValueError):
        mx.grad(f)("hello")  # not an array
    with pytest.raises(ValueError):
        mx.grad(lambda x: mx.sum(x, keepdims=True))(mx.ones((2, 2)))  # shape (1, 1) is not a scalar
    with pytest.raises(ValueError):
        mx.grad(lambda x: (mx.sum(x), x))(mx.ones(2))  # grad needs one output; value_and_grad takes aux
    with pytest.raises(ValueError):
        mx.value_and_grad(f, ())
    with pytest.raises(ValueError):
        mx.grad(f, argnums=(0, 0))
    with pytest.raises(TypeError):
        mx.value_and_grad(f, (None, None))


def test_one_argnum_in_a_sequence_gives_its_gradient_alone():
    f = lambda x, y: mx.sum(x * y)  # noqa: E731
    x, y = mx.array([1.0, 2.0]), mx.array([3.0, 4.0])
    g = mx.grad(f, argnums=[0])(x, y)
    assert isinstance(g, mx.array) and g.tolist() == [3.0, 4.0]
    gs = mx.grad(f, argnums=(0, 1))(x, y)
    assert isinstance(gs, tuple) and [v.tolist() for v in gs] == [[3.0, 4.0], [1.0, 2.0]]


def test_grad_of_a_module_keeps_it_a_module():
    import weft.nn as nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.m1 = nn.Linear(3, 2)

    model = Model()
    x = mx.ones((3,))
    grads = mx.grad(lambda m: m.m1(x).sum())(model)
    assert isinstance(grads, Model) and isinstance(grads.m1, nn.Linear)
    assert grads.m1.weight.tolist() == [[1.0] * 3] * 2
    assert model.m1.weight.tolist() != grads.m1.weight.tolist()  # the model itself is not touched


def test_power_and_scatter_extreme_derivatives_follow_mlx():
    # d/dx (x - y)^x at x = y + 0: the exponent's term is its limit 0, not NaN.
    g = mx.grad(lambda x, y: (x - y) ** x)(mx.array(1.0), mx.array(1.0))
    assert g.item() == 1.0
    f = lambda src, upd: src.at[mx.array([1, 3])].maximum(upd)  # noqa: E731
    cot = mx.array([4.0, 5.0, 6.0, 7.0])
    _, (gs, gu) = mx.vjp(f, [mx.array([1.0, 2.0, 3.0, 4.0]), mx.array([5.0, 1.0])], [cot])
    assert gs.tolist() == [4.0, 0.0, 6.0, 7.0] and gu.tolist() == [5.0, 0.0]
    _, (gx,) = mx.jvp(lambda x: x > 0, [mx.array([1.0, -1.0])], [mx.ones((2,))])
    assert gx.dtype == mx.float32


def test_vmap_takes_a_dict_in_axes_for_one_argument_and_a_one_entry_out_axes():
    tree = {"a": mx.ones((2, 3)), "b": mx.full((2, 3), 2.0)}
    out = mx.vmap(lambda t: t["a"] + t["b"], in_axes={"a": 0, "b": 0})(tree)
    assert out.tolist() == [[3.0] * 3] * 2
    a, b = mx.ones((3, 4, 2)), mx.ones((2, 5))
    out = mx.vmap(mx.matmul, in_axes=(1, None), out_axes=(1,))(a, b)
    assert out.shape == (3, 4, 5)


def test_compile_refuses_non_constant_arguments_and_keeps_the_docstring():
    class Holder:
        value = 1

    @mx.compile
    def fun(x, y):
        return x + y.value

    with pytest.raises(ValueError):
        fun(mx.array(0.0), Holder())
    with pytest.raises(ValueError):
        fun(mx.array(0.0), y=Holder())

    @mx.compile
    def g(x, scale, name, flag=None):
        """Scales x."""
        return x * scale if name == "mul" else x + scale

    assert g.__doc__ == "Scales x."
    assert g(mx.array(2.0), 3, "mul").item() == 6.0
    assert g(mx.array(2.0), 3.0, "add", True).item() == 5.0


def test_cumprod_gradient_through_zeros():
    f = lambda y: mx.cumprod(y).sum()
    assert mx.grad(f)(mx.array([2.0, 1.0, 2.0, 2.0, 3.0])).tolist() == [20.0, 38.0, 18.0, 16.0, 8.0]
    assert mx.grad(f)(mx.array([2.0, 0.0, 2.0, 2.0, 3.0])).tolist() == [1.0, 38.0, 0.0, 0.0, 0.0]
    assert mx.grad(f)(mx.array([2.0, 0.0, 2.0, 0.0, 3.0])).tolist() == [1.0, 6.0, 0.0, 0.0, 0.0]
