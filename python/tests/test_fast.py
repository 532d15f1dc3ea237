"""weft.core.fast against NumPy float64 implementations."""

import numpy as np
import pytest

import weft.core as mx

rng = np.random.default_rng(21)


def random(shape):
    return rng.standard_normal(shape).astype(np.float32)


def check(out, want, rtol=1e-4, atol=1e-5):
    out = np.array(out)
    assert out.shape == np.shape(want)
    np.testing.assert_allclose(out, want, rtol=rtol, atol=atol)


def test_submodule_imports():
    import weft.core.fast as f1
    from weft.core import fast as f2

    assert f1 is f2 is mx.fast
    assert f1.__name__ == "weft.core.fast"


# --- norms ---


def np_rms_norm(x, w, eps):
    x = x.astype(np.float64)
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return y if w is None else y * w


def np_layer_norm(x, w, b, eps):
    x = x.astype(np.float64)
    m = x.mean(axis=-1, keepdims=True)
    v = ((x - m) ** 2).mean(axis=-1, keepdims=True)
    y = (x - m) / np.sqrt(v + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


def test_rms_norm():
    x = random((3, 5, 64)) * 3
    w = random((64,))
    check(mx.fast.rms_norm(mx.array(x), mx.array(w), 1e-5), np_rms_norm(x, w, 1e-5))
    check(mx.fast.rms_norm(mx.array(x), None, 1e-2), np_rms_norm(x, None, 1e-2))
    check(mx.fast.rms_norm(mx.array(x), weight=mx.array(w), eps=1e-6), np_rms_norm(x, w, 1e-6))
    h = mx.fast.rms_norm(mx.array(x).astype(mx.float16), mx.array(w).astype(mx.float16), 1e-5)
    assert h.dtype == mx.float16
    check(h.astype(mx.float32), np_rms_norm(x, w, 1e-5), rtol=1e-2, atol=1e-2)
    with pytest.raises(ValueError):
        mx.fast.rms_norm(mx.array(x), mx.array(w[:10]), 1e-5)


def test_layer_norm():
    x = random((4, 33)) * 2 + 1
    w, b = random((33,)), random((33,))
    check(mx.fast.layer_norm(mx.array(x), mx.array(w), mx.array(b), 1e-5), np_layer_norm(x, w, b, 1e-5))
    check(mx.fast.layer_norm(mx.array(x), None, None, 1e-5), np_layer_norm(x, None, None, 1e-5))
    check(mx.fast.layer_norm(mx.array(x), mx.array(w), None, 1e-3), np_layer_norm(x, w, None, 1e-3))
    check(mx.fast.layer_norm(mx.array(x), None, mx.array(b), 1e-3), np_layer_norm(x, None, b, 1e-3))
    with pytest.raises(ValueError):
        mx.fast.layer_norm(mx.array(x), None, mx.array(b[:3]), 1e-5)


# --- rope ---


def np_rope(x, dims, traditional, base, scale, offset):
    x = x.astype(np.float64)
    L = x.shape[-2]
    pos = (offset + np.arange(L))[:, None] * scale
    inv = base ** (-np.arange(0, dims, 2) / dims)
    theta = pos * inv[None, :]  # (L, dims/2)
    cos, sin = np.cos(theta), np.sin(theta)
    out = x.copy()
    if traditional:
        a, b = x[..., 0:dims:2], x[..., 1:dims:2]
        out[..., 0:dims:2] = a * cos - b * sin
        out[..., 1:dims:2] = a * sin + b * cos
    else:
        h = dims // 2
        a, b = x[..., :h], x[..., h:dims]
        out[..., :h] = a * cos - b * sin
        out[..., h:dims] = a * sin + b * cos
    return out


@pytest.mark.parametrize("traditional", [False, True])
@pytest.mark.parametrize("dims", [32, 16])
def test_rope(traditional, dims):
    x = random((2, 3, 7, 32))
    for base, scale, offset in [(10000.0, 1.0, 0), (500.0, 0.5, 5)]:
        out = mx.fast.rope(mx.array(x), dims, traditional=traditional, base=base, scale=scale, offset=offset)
        check(out, np_rope(x, dims, traditional, base, scale, offset), rtol=1e-4, atol=1e-4)
    # The offset may be a 0-d array, as in mlx.core.
    out = mx.fast.rope(mx.array(x), dims, traditional=traditional, base=10000.0, scale=1.0, offset=mx.array(3))
    check(out, np_rope(x, dims, traditional, 10000.0, 1.0, 3), rtol=1e-4, atol=1e-4)


def test_rope_errors():
    x = mx.array(random((1, 4, 8)))
    with pytest.raises(ValueError):
        mx.fast.rope(x, 7, traditional=False, base=10000.0, scale=1.0, offset=0)
    with pytest.raises(ValueError):
        mx.fast.rope(x, 8, traditional=False, base=None, scale=1.0, offset=0)
    with pytest.raises(ValueError):  # base and freqs both given
        mx.fast.rope(x, 8, traditional=False, base=1e4, scale=1.0, offset=0, freqs=mx.ones((4,)))
    with pytest.raises(TypeError):
        mx.fast.rope(x, 8)  # the keyword arguments are required, as in mlx.core


# --- attention ---


def np_sdpa(q, k, v, scale, mask=None):
    q, k, v = (t.astype(np.float64) for t in (q, k, v))
    B, Hq, L, D = q.shape
    Hk, S = k.shape[1], k.shape[2]
    rep = Hq // Hk
    k = np.repeat(k, rep, axis=1)
    v = np.repeat(v, rep, axis=1)
    s = scale * q @ np.swapaxes(k, -1, -2)
    if isinstance(mask, str):
        i = np.arange(L)[:, None]
        j = np.arange(S)[None, :]
        s = np.where(j <= i + S - L, s, -np.inf)
    elif mask is not None and mask.dtype == np.bool_:
        s = np.where(mask, s, -np.inf)
    elif mask is not None:
        s = s + mask
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=-1, keepdims=True)
    return p @ v


@pytest.mark.parametrize("heads", [(4, 4), (4, 2), (6, 1)])
@pytest.mark.parametrize("lengths", [(5, 5), (3, 9), (1, 17)])
def test_sdpa(heads, lengths):
    hq, hk = heads
    L, S = lengths
    B, D = 2, 16
    q, k, v = random((B, hq, L, D)), random((B, hk, S, D)), random((B, hk, S, D))
    scale = D**-0.5
    Q, K, V = mx.array(q), mx.array(k), mx.array(v)
    check(mx.fast.scaled_dot_product_attention(Q, K, V, scale=scale), np_sdpa(q, k, v, scale))
    check(mx.fast.scaled_dot_product_attention(Q, K, V, scale=scale, mask=None), np_sdpa(q, k, v, scale))
    check(
        mx.fast.scaled_dot_product_attention(Q, K, V, scale=scale, mask="causal"),
        np_sdpa(q, k, v, scale, "causal"),
    )
    # A boolean mask (broadcast over batch and heads) keeps True.
    bm = rng.random((L, S)) < 0.7
    bm[:, 0] = True  # every query sees at least one key
    check(
        mx.fast.scaled_dot_product_attention(Q, K, V, scale=scale, mask=mx.array(bm)),
        np_sdpa(q, k, v, scale, bm),
    )
    # An additive float mask, per head.
    fm = random((1, hq, L, S))
    check(
        mx.fast.scaled_dot_product_attention(Q, K, V, scale=scale, mask=mx.array(fm)),
        np_sdpa(q, k, v, scale, fm),
    )


def test_sdpa_errors():
    q = mx.array(random((1, 3, 4, 8)))
    k = mx.array(random((1, 2, 4, 8)))
    with pytest.raises(ValueError):
        mx.fast.scaled_dot_product_attention(q, k, k, scale=1.0)  # 3 heads vs 2
    with pytest.raises(ValueError):
        mx.fast.scaled_dot_product_attention(q, q, q, scale=1.0, mask="upper")
    with pytest.raises(ValueError):
        mx.fast.scaled_dot_product_attention(q, q, q, scale=1.0, mask=mx.zeros((4, 4), dtype=mx.int32))
    with pytest.raises(TypeError):
        mx.fast.scaled_dot_product_attention(q, q, q)  # scale is required


def _rope_np(x, dims, traditional, inv, positions):
    theta = positions[..., None] * inv
    c, s = np.cos(theta), np.sin(theta)
    out = x.copy()
    if traditional:
        x1, x2 = x[..., 0:dims:2], x[..., 1:dims:2]
        out[..., 0:dims:2], out[..., 1:dims:2] = x1 * c - x2 * s, x1 * s + x2 * c
    else:
        h = dims // 2
        x1, x2 = x[..., :h], x[..., h:dims]
        out[..., :h], out[..., h:dims] = x1 * c - x2 * s, x1 * s + x2 * c
    return out


def test_rope_with_freqs_and_per_example_offsets():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 2, 5, 16)).astype(np.float32)
    freqs = rng.uniform(1, 50, 6).astype(np.float32)
    for traditional in (False, True):
        out = mx.fast.rope(mx.array(x), 12, traditional=traditional, base=None, scale=1.0, offset=2, freqs=mx.array(freqs))
        want = _rope_np(x, 12, traditional, 1 / freqs, np.arange(5, dtype=np.float32) + 2)
        np.testing.assert_allclose(np.array(out), want, atol=1e-5)
        offs = np.array([0, 4, 9])
        out = mx.fast.rope(mx.array(x), 16, traditional=traditional, base=1e4, scale=1.0, offset=mx.array(offs))
        inv = 1e4 ** (-np.arange(8) / 8)
        want = _rope_np(x, 16, traditional, inv, (offs[:, None, None] + np.arange(5))[..., :])
        np.testing.assert_allclose(np.array(out), want, atol=1e-4)
    with pytest.raises(ValueError):
        mx.fast.rope(mx.array(x), 16, traditional=False, base=None, scale=1.0, offset=0, freqs=mx.ones((7,)))
    with pytest.raises(ValueError):
        mx.fast.rope(mx.array(x), 16, traditional=False, base=1e4, scale=1.0, offset=mx.array([1, 2]))
    for dims in (0, -2, 7, 32):
        with pytest.raises(ValueError):
            mx.fast.rope(mx.array(x), dims, traditional=False, base=1e4, scale=1.0, offset=0)


def test_sdpa_fully_masked_rows_average_the_values():
    rng = np.random.default_rng(8)
    q, k, v = (rng.standard_normal((1, 2, n, 8)).astype(np.float32) for n in (3, 5, 5))
    mask = np.ones((3, 5), dtype=bool)
    mask[1] = False  # query 1 sees no key
    out = np.array(mx.fast.scaled_dot_product_attention(mx.array(q), mx.array(k), mx.array(v), scale=1.0, mask=mx.array(mask)))
    assert not np.isnan(out).any()
    np.testing.assert_allclose(out[:, :, 1], v.mean(axis=2), atol=1e-5)
    full = np.array(mx.fast.scaled_dot_product_attention(mx.array(q), mx.array(k), mx.array(v), scale=1.0))
    np.testing.assert_allclose(out[:, :, [0, 2]], full[:, :, [0, 2]], atol=1e-5)
    none = mx.fast.scaled_dot_product_attention(mx.array(q), mx.array(k), mx.array(v), scale=1.0, mask=mx.array(False))
    np.testing.assert_allclose(np.array(none), np.broadcast_to(v.mean(axis=2, keepdims=True), (1, 2, 3, 8)), atol=1e-5)
