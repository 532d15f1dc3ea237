"""Convolutions, as_strided and the layers built on them (weft.nn Conv*,
ConvTranspose*, pooling, RNN/GRU/LSTM), against NumPy loops."""

import itertools

import numpy as np
import pytest

import weft.core as mx
import weft.nn as nn


def conv_ref(x, w, stride, lo, hi, kd, idil, groups, flip):
    """conv_general by its definition, in float64."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    d = x.ndim - 2
    n, ci, co = x.shape[0], x.shape[-1], w.shape[0]
    cg, og = ci // groups, co // groups
    # Input dilation, then padding (negative cuts).
    dil = np.zeros((n, *[(s - 1) * i + 1 for s, i in zip(x.shape[1:-1], idil)], ci))
    dil[(slice(None), *[slice(None, None, i) for i in idil])] = x
    for a in range(d):
        ax = a + 1
        if lo[a] >= 0:
            dil = np.concatenate([np.zeros((*dil.shape[:ax], lo[a], *dil.shape[ax + 1:])), dil], axis=ax)
        else:
            dil = np.take(dil, range(-lo[a], dil.shape[ax]), axis=ax)
        if hi[a] >= 0:
            dil = np.concatenate([dil, np.zeros((*dil.shape[:ax], hi[a], *dil.shape[ax + 1:]))], axis=ax)
        else:
            dil = np.take(dil, range(0, dil.shape[ax] + hi[a]), axis=ax)
    ks = w.shape[1:-1]
    if flip:
        w = w[(slice(None), *[slice(None, None, -1)] * d)]
    out = [(p - ((k - 1) * e + 1)) // s + 1 for p, k, e, s in zip(dil.shape[1:-1], ks, kd, stride)]
    y = np.zeros((n, *out, co))
    for o in itertools.product(*[range(v) for v in out]):
        for k in itertools.product(*[range(v) for v in ks]):
            pos = tuple(oi * s + ki * e for oi, ki, s, e in zip(o, k, stride, kd))
            patch = dil[(slice(None), *pos)]  # [n, ci]
            for g in range(groups):
                wk = w[(slice(g * og, (g + 1) * og), *k)]  # [og, cg]
                y[(slice(None), *o, slice(g * og, (g + 1) * og))] += patch[:, g * cg:(g + 1) * cg] @ wk.T
    return y


CASES = [
    ((2, 9, 4), (6, 3, 2), (2,), (1,), (2,), (1,), (1,), 2, False),
    ((1, 6, 3), (2, 2, 3), (1,), (2,), (-1,), (2,), (2,), 1, True),
    ((2, 5, 6, 3), (4, 3, 2, 3), (2, 1), (1, 0), (0, 1), (1, 2), (1, 1), 1, False),
    ((1, 4, 4, 4), (4, 2, 2, 1), (1, 1), (1, 1), (1, 1), (1, 1), (2, 1), 4, True),
    ((1, 3, 4, 3, 2), (2, 2, 2, 1, 2), (1, 2, 1), (0, 1, 0), (1, 0, 1), (1, 1, 2), (1, 1, 1), 1, False),
]


@pytest.mark.parametrize("case", CASES)
def test_conv_general_matches_reference(case):
    xs, ws, stride, lo, hi, kd, idil, groups, flip = case
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    want = conv_ref(x, w, stride, lo, hi, kd, idil, groups, flip)
    got = mx.conv_general(mx.array(x), mx.array(w), stride=stride, padding=(list(lo), list(hi)),
                          kernel_dilation=kd, input_dilation=idil, groups=groups, flip=flip)
    assert got.shape == want.shape
    np.testing.assert_allclose(np.array(got), want, rtol=1e-4, atol=1e-4)
    for dt, tol in ((mx.float16, 2e-2), (mx.bfloat16, 1e-1)):
        low = mx.conv_general(mx.array(x).astype(dt), mx.array(w).astype(dt), stride=stride,
                              padding=(list(lo), list(hi)), kernel_dilation=kd, input_dilation=idil,
                              groups=groups, flip=flip)
        assert low.dtype == dt
        np.testing.assert_allclose(np.array(low.astype(mx.float32)), want, rtol=tol, atol=tol)


def test_conv_nd_and_transpose_shapes():
    x = mx.zeros((2, 8, 4))
    assert mx.conv1d(x, mx.zeros((6, 3, 4)), stride=2, padding=1).shape == (2, 4, 6)
    assert mx.conv2d(mx.zeros((1, 8, 8, 3)), mx.zeros((4, 3, 3, 3)), padding=(1, 0), dilation=2).shape == (1, 6, 4, 4)
    assert mx.conv3d(mx.zeros((1, 4, 4, 4, 2)), mx.zeros((3, 2, 2, 2, 2)), stride=2).shape == (1, 2, 2, 2, 3)
    assert mx.conv_transpose1d(x, mx.zeros((6, 3, 4)), stride=2, padding=1, output_padding=1).shape == (2, 16, 6)
    assert mx.conv_transpose2d(mx.zeros((1, 4, 5, 2)), mx.zeros((3, 3, 2, 2)), stride=(2, 3)).shape == (1, 9, 14, 3)
    assert mx.conv_transpose3d(mx.zeros((1, 2, 2, 2, 2)), mx.zeros((1, 2, 2, 2, 2)), stride=2).shape == (1, 4, 4, 4, 1)


def test_conv_transpose_is_the_input_gradient_of_conv():
    rng = np.random.default_rng(1)
    x = mx.array(rng.standard_normal((1, 7, 3)).astype(np.float32))
    w = mx.array(rng.standard_normal((2, 3, 3)).astype(np.float32))
    g = mx.array(rng.standard_normal((1, 3, 2)).astype(np.float32))
    _, (dx,) = mx.vjp(lambda x: mx.conv1d(x, w, stride=2), [x], [g])
    # conv_transpose with the weight's channels swapped: [C_in, K, C_out].
    ct = mx.conv_transpose1d(g, mx.swapaxes(w, 0, 2), stride=2, output_padding=0)
    np.testing.assert_allclose(np.array(dx), np.array(ct), rtol=1e-5, atol=1e-5)


def test_conv_gradients_match_finite_differences():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 5, 4)).astype(np.float64)
    w = rng.standard_normal((4, 2, 2)).astype(np.float64)

    def f(x, w):
        return mx.sum(mx.sin(mx.conv_general(x, w, stride=2, padding=([1], [2]), kernel_dilation=2, groups=2, flip=True)))

    gx, gw = mx.grad(f, argnums=(0, 1))(mx.array(x, mx.float32), mx.array(w, mx.float32))
    for i, (arr, g) in enumerate(((x, gx), (w, gw))):
        fd = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            up, down = arr.copy(), arr.copy()
            up[idx] += 1e-3
            down[idx] -= 1e-3
            args_up = [mx.array(v, mx.float32) for v in ((up, w) if i == 0 else (x, up))]
            args_down = [mx.array(v, mx.float32) for v in ((down, w) if i == 0 else (x, down))]
            fd[idx] = (f(*args_up).item() - f(*args_down).item()) / 2e-3
        np.testing.assert_allclose(np.array(g), fd, rtol=1e-2, atol=1e-2)


def test_vmap_conv():
    x = mx.random.uniform(shape=(3, 2, 5, 4))
    w = mx.random.uniform(shape=(3, 4, 3, 2))
    f = lambda x, w: mx.conv1d(x, w, groups=2)
    want = mx.stack([f(x[i], w[i]) for i in range(3)])
    assert mx.allclose(mx.vmap(f)(x, w), want, atol=1e-5)
    want = mx.stack([f(x[i], w[0]) for i in range(3)])
    assert mx.allclose(mx.vmap(f, in_axes=(0, None))(x, w[0]), want, atol=1e-5)
    want = mx.stack([f(x[0], w[i]) for i in range(3)])
    assert mx.allclose(mx.vmap(f, in_axes=(None, 0))(x[0], w), want, atol=1e-5)


def test_convolve_matches_numpy():
    rng = np.random.default_rng(3)
    for m, n in ((7, 3), (3, 7), (6, 4), (5, 5), (1, 1)):
        a, v = rng.standard_normal(m).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        for mode in ("full", "same", "valid"):
            np.testing.assert_allclose(np.array(mx.convolve(mx.array(a), mx.array(v), mode=mode)),
                                       np.convolve(a, v, mode=mode), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError):
        mx.convolve(mx.zeros((2, 3)), mx.zeros(3))
    with pytest.raises(ValueError):
        mx.convolve(mx.zeros(3), mx.zeros(3), mode="other")


def test_bad_conv_arguments_raise_value_error():
    x, w = mx.zeros((2, 8, 4)), mx.zeros((6, 3, 4))
    for f in (
        lambda: mx.conv1d(mx.zeros((8, 4)), w),
        lambda: mx.conv1d(x, mx.zeros((6, 3, 3))),
        lambda: mx.conv1d(x, w, groups=3),
        lambda: mx.conv1d(x, w, stride=0),
        lambda: mx.conv1d(x, mx.zeros((6, 30, 4))),
        lambda: mx.conv1d(x.astype(mx.int32), w),
        lambda: mx.conv_general(x, w, stride=[1, 1]),
        lambda: mx.conv_general(x, w, padding=([1], [1, 2])),
        lambda: mx.conv2d(x, w),
    ):
        with pytest.raises(ValueError):
            f()


def test_as_strided():
    x = np.random.default_rng(4).standard_normal(64).astype(np.float32)
    for shape, strides in (((5, 5), (3, 3)), ((4, 6), (7, 1)), ((10,), (4,))):
        for off in (0, 1, 3):
            want = np.lib.stride_tricks.as_strided(x[off:], shape, np.multiply(strides, 4))
            np.testing.assert_array_equal(np.array(mx.as_strided(mx.array(x), shape, strides, off)), want)
    a = mx.array(x)
    assert mx.array_equal(mx.as_strided(a, (64,), (-1,), 63), a[::-1])
    assert mx.as_strided(a.reshape(8, 8)).shape == (8, 8)
    for bad in (((-2, 3), (3, 1), 0), ((3,), (40,), 0), ((2,), (-1,), 0), ((1,), (1,), 64)):
        with pytest.raises(ValueError):
            mx.as_strided(a, *bad)
    # Its gradient sums the cotangents of the elements each input feeds.
    g = mx.grad(lambda v: mx.sum(mx.as_strided(v, (3, 3), (1, 1), 0)))(mx.arange(5, dtype=mx.float32))
    assert g.tolist() == [1.0, 2.0, 3.0, 2.0, 1.0]


def test_conv_layers():
    c = nn.Conv1d(2, 4, 3, groups=2)
    assert c.weight.shape == (4, 3, 1) and c.bias.shape == (4,)
    c.weight = mx.ones_like(c.weight)
    assert mx.allclose(c(mx.ones((1, 5, 2))), mx.full((1, 3, 4), 3.0))
    assert "bias" not in nn.Conv2d(3, 8, 3, bias=False).parameters()
    assert nn.Conv2d(3, 8, (3, 2), stride=2, padding=1)(mx.zeros((1, 8, 8, 3))).shape == (1, 4, 5, 8)
    assert nn.Conv3d(2, 4, 3)(mx.zeros((1, 4, 4, 4, 2))).shape == (1, 2, 2, 2, 4)
    with pytest.raises(ValueError):
        nn.Conv1d(3, 4, 3, groups=2)
    t = nn.ConvTranspose2d(4, 8, kernel_size=(3, 5))
    assert "kernel_size=(3, 5)" in str(t) and t.weight.shape == (8, 3, 5, 4)
    assert t(mx.zeros((1, 4, 4, 4))).shape == (1, 6, 8, 8)
    assert nn.ConvTranspose1d(2, 3, 3, stride=2)(mx.zeros((1, 4, 2))).shape == (1, 9, 3)
    assert nn.ConvTranspose3d(2, 3, 2, stride=2)(mx.zeros((1, 2, 2, 2, 2))).shape == (1, 4, 4, 4, 3)


def test_pooling():
    x = mx.arange(2 * 5 * 3, dtype=mx.float32).reshape(2, 5, 3)
    xn = np.array(x)
    y = nn.MaxPool1d(2, stride=1)(x)
    np.testing.assert_array_equal(np.array(y), np.maximum(xn[:, :-1], xn[:, 1:]))
    y = nn.AvgPool1d(3, stride=2, padding=1)(x)
    p = np.pad(xn, ((0, 0), (1, 1), (0, 0)))
    np.testing.assert_allclose(np.array(y), np.stack([p[:, i:i + 3].mean(1) for i in (0, 2, 4)], 1), rtol=1e-6)
    z = mx.random.normal((2, 5, 6, 3))
    y = nn.MaxPool2d((2, 3), stride=(2, 1))(z)
    zn = np.array(z)
    want = np.stack([np.stack([zn[:, 2 * i:2 * i + 2, j:j + 3].max((1, 2)) for j in range(4)], 1) for i in range(2)], 1)
    np.testing.assert_allclose(np.array(y), want)
    assert nn.AvgPool3d(2)(mx.zeros((1, 4, 4, 4, 2))).shape == (1, 2, 2, 2, 2)
    assert nn.MaxPool3d(2, padding=1)(mx.zeros((1, 4, 4, 4, 2))).shape == (1, 3, 3, 3, 2)
    assert str(nn.MaxPool2d(2)) == "MaxPool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))"
    with pytest.raises(ValueError):
        nn.MaxPool1d(2)(mx.zeros((5, 2)))


def test_recurrent_layers():
    x = mx.random.normal((2, 6, 5))
    rnn = nn.RNN(5, 4)
    h = rnn(x)
    assert h.shape == (2, 6, 4)
    # One step by hand.
    h0 = mx.tanh(x[:, 0] @ rnn.Wxh.T + rnn.bias)
    assert mx.allclose(h[:, 0], h0, atol=1e-6)
    assert mx.allclose(h[:, 1], mx.tanh(x[:, 1] @ rnn.Wxh.T + h0 @ rnn.Whh.T + rnn.bias), atol=1e-6)
    with pytest.raises(ValueError):
        nn.RNN(5, 4, nonlinearity="tanh")
    gru = nn.GRU(5, 4)
    assert gru(x).shape == (2, 6, 4)
    assert mx.allclose(gru(x), gru(x, hidden=mx.zeros((2, 4))))
    assert gru(x[0]).shape == (6, 4)
    lstm = nn.LSTM(5, 4, bias=False)
    hs, cs = lstm(x)
    assert hs.shape == cs.shape == (2, 6, 4)
    ifgo = x[:, 0] @ lstm.Wx.T
    i, f, g, o = mx.sigmoid(ifgo[:, :4]), mx.sigmoid(ifgo[:, 4:8]), mx.tanh(ifgo[:, 8:12]), mx.sigmoid(ifgo[:, 12:])
    assert mx.allclose(cs[:, 0], i * g, atol=1e-6)
    assert mx.allclose(hs[:, 0], o * mx.tanh(i * g), atol=1e-6)
    assert set(nn.GRU(3, 4).parameters()) == {"Wx", "Wh", "b", "bhn"}
    assert set(nn.LSTM(3, 4).parameters()) == {"Wx", "Wh", "bias"}
