"""weft.core's affine quantization (quantize, dequantize, quantized_matmul,
gather_qmm, gather_mm) against a NumPy reference that unpacks the codes
itself, and bit for bit against MLX when it is installed; weft.nn's
quantized layers and nn.quantize."""

import numpy as np
import pytest

import weft.core as mx
import weft.nn as nn
from weft.utils import tree_flatten


def unpack(wq, bits, cols):
    """Codes of packed rows ``[..., words]`` as integers ``[..., cols]``."""
    raw = np.ascontiguousarray(np.array(wq)).view(np.uint8)
    stream = np.unpackbits(raw, axis=-1, bitorder="little")
    stream = stream[..., : cols * bits].reshape(*raw.shape[:-1], cols, bits)
    return stream.astype(np.int64) @ (1 << np.arange(bits))


def reference_dequantize(wq, s, b, gs, bits):
    s, b = np.array(s, dtype=np.float64), np.array(b, dtype=np.float64)
    cols = s.shape[-1] * gs
    q = unpack(wq, bits, cols)
    return q * np.repeat(s, gs, axis=-1) + np.repeat(b, gs, axis=-1)


@pytest.mark.parametrize("bits", [2, 3, 4, 5, 6, 8])
@pytest.mark.parametrize("gs", [32, 64, 128])
def test_quantize_dequantize_error_bound(gs, bits):
    w = mx.random.normal((16, 256))
    wq, s, b = mx.quantize(w, gs, bits)
    assert wq.dtype == mx.uint32 and wq.shape == (16, 256 * bits // 32)
    assert s.shape == b.shape == (16, 256 // gs)
    ref = reference_dequantize(wq, s, b, gs, bits)
    np.testing.assert_allclose(np.array(mx.dequantize(wq, s, b, gs, bits)), ref, rtol=1e-6, atol=1e-6)
    err = np.abs(np.array(w) - ref).reshape(16, -1, gs)
    assert (err <= np.abs(np.array(s))[..., None] + 1e-5).all()


@pytest.mark.parametrize("bits", [2, 3, 4, 6, 8])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_same_bits_as_mlx(bits, dtype):
    mlx = pytest.importorskip("mlx.core")
    rng = np.random.default_rng(bits)
    w = rng.standard_normal((8, 256)).astype(np.float32)
    ours = mx.quantize(mx.array(w).astype(getattr(mx, dtype)), 64, bits)
    theirs = mlx.quantize(mlx.array(w).astype(getattr(mlx, dtype)), 64, bits)
    np.testing.assert_array_equal(np.array(ours[0]), np.array(theirs[0]))
    for a, t in zip(ours[1:], theirs[1:]):
        np.testing.assert_array_equal(np.array(a.astype(mx.float32)), np.array(t.astype(mlx.float32)))


@pytest.mark.parametrize("transpose", [True, False])
@pytest.mark.parametrize("bits", [3, 4, 8])
def test_quantized_matmul_against_numpy(transpose, bits):
    gs, m, k, n = 64, 5, 256, 128
    w = mx.random.normal((n, k) if transpose else (k, n))
    wq, s, b = mx.quantize(w, gs, bits)
    x = mx.random.normal((2, m, k))
    y = mx.quantized_matmul(x, wq, s, b, transpose, gs, bits)
    w_hat = reference_dequantize(wq, s, b, gs, bits)
    ref = np.array(x, dtype=np.float64) @ (w_hat.T if transpose else w_hat)
    assert y.shape == (2, m, n)
    np.testing.assert_allclose(np.array(y), ref, rtol=1e-4, atol=1e-4)


def test_quantized_matmul_dtypes_and_errors():
    w = mx.random.normal((32, 128))
    wq, s, b = mx.quantize(w, 64, 4)
    x = mx.random.normal((3, 128))
    assert mx.quantized_matmul(x.astype(mx.float16), wq, s, b).dtype == mx.float32
    s16, b16 = s.astype(mx.float16), b.astype(mx.float16)
    assert mx.quantized_matmul(x.astype(mx.float16), wq, s16, b16).dtype == mx.float16
    with pytest.raises(ValueError):
        mx.quantized_matmul(x, wq, s, None)
    with pytest.raises(ValueError):
        mx.quantized_matmul(x, wq, s, b, mode="xyz")
    with pytest.raises(ValueError):
        mx.quantize(w, mode="mxfp4")  # not implemented by weft: a clear error
    with pytest.raises(ValueError):
        mx.quantize(w, 16, 4)
    with pytest.raises(ValueError):
        mx.quantized_matmul(x, wq.T, s, b)


def test_gradients_reach_x_scales_and_biases():
    w = mx.random.normal((32, 128))
    wq, s, b = mx.quantize(w, 64, 4)
    x = mx.random.normal((3, 128))

    def f(x, s, b):
        return mx.quantized_matmul(x, wq, s, b).sum()

    dx, ds, db = mx.grad(f, argnums=(0, 1, 2))(x, s, b)
    w_hat = mx.dequantize(wq, s, b)
    np.testing.assert_allclose(np.array(dx), np.array(mx.ones((3, 32)) @ w_hat), rtol=1e-4, atol=1e-4)
    # d/d bias of a group: the sum of x over the group, for every output row.
    xs = np.array(x).reshape(3, 2, 64).sum(-1).sum(0)
    np.testing.assert_allclose(np.array(db), np.broadcast_to(xs, (32, 2)), rtol=1e-4, atol=1e-4)
    assert ds.shape == s.shape


def test_gather_mm_and_gather_qmm():
    a = mx.random.normal((4, 3, 16))
    bm = mx.random.normal((2, 16, 5))
    lhs, rhs = mx.array([3, 0, 1]), mx.array([1, 1, 0])
    y = mx.gather_mm(a, bm, lhs, rhs)
    ref = np.stack([np.array(a)[i] @ np.array(bm)[j] for i, j in [(3, 1), (0, 1), (1, 0)]])
    np.testing.assert_allclose(np.array(y), ref, rtol=1e-5, atol=1e-5)
    w = mx.random.normal((2, 32, 64))
    wq, s, b = mx.quantize(w, 32, 4)
    x = mx.random.normal((4, 3, 64))
    yq = mx.gather_qmm(x, wq, s, b, lhs, rhs, transpose=True, group_size=32, bits=4)
    w_hat = mx.dequantize(wq, s, b, 32, 4).swapaxes(-1, -2)
    np.testing.assert_allclose(np.array(yq), np.array(mx.gather_mm(x, w_hat, lhs, rhs)), rtol=1e-4, atol=1e-4)


def test_quantized_linear_follows_linear():
    lin = nn.Linear(128, 64)
    q = lin.to_quantized(group_size=32, bits=8)
    assert isinstance(q, nn.QuantizedLinear)
    x = mx.random.normal((4, 128))
    np.testing.assert_allclose(np.array(q(x)), np.array(lin(x)), rtol=0.05, atol=0.02)
    np.testing.assert_array_equal(np.array(q.bias), np.array(lin.bias))
    # The codes, scales and biases are frozen; the bias trains.
    assert [k for k, _ in tree_flatten(q.trainable_parameters())] == ["bias"]
    q.unfreeze(keys=["scales"])
    assert sorted(k for k, _ in tree_flatten(q.trainable_parameters())) == ["bias", "scales"]
    assert "input_dims=128, output_dims=64" in repr(q)


def test_quantized_embedding_lookup_and_as_linear():
    emb = nn.Embedding(32, 128)
    q = nn.QuantizedEmbedding.from_embedding(emb, bits=8)
    ids = mx.array([[2, 6], [9, 0]])
    assert q(ids).shape == (2, 2, 128)
    assert (q(ids) - emb(ids)).abs().max().item() <= q.scales.abs().max().item()
    x = mx.random.normal((3, 128))
    np.testing.assert_allclose(np.array(q.as_linear(x)), np.array(emb.as_linear(x)), rtol=0.05, atol=0.05)
    with pytest.raises(ValueError):
        emb.to_quantized(quantize_input=True)


def test_nn_quantize_replaces_the_selected_leaves():
    m = nn.Sequential(nn.Embedding(5, 256), nn.ReLU(), nn.Linear(256, 256))
    nn.quantize(m)
    assert isinstance(m.layers[0], nn.QuantizedEmbedding)
    assert isinstance(m.layers[1], nn.ReLU)
    assert isinstance(m.layers[2], nn.QuantizedLinear)
    assert (m.layers[2].group_size, m.layers[2].bits) == (64, 4)

    m = nn.Sequential(nn.Embedding(5, 256), nn.ReLU(), nn.Linear(256, 256))
    nn.quantize(m, class_predicate=lambda _, mod: isinstance(mod, nn.Linear))
    assert isinstance(m.layers[0], nn.Embedding) and isinstance(m.layers[2], nn.QuantizedLinear)

    # A predicate may give each module its own parameters.
    m = nn.Sequential(nn.Linear(128, 128), nn.Linear(128, 128))
    nn.quantize(m, class_predicate=lambda p, _: {"group_size": 32, "bits": 8} if p == "layers.1" else True)
    assert (m.layers[0].group_size, m.layers[0].bits) == (64, 4)
    assert (m.layers[1].group_size, m.layers[1].bits) == (32, 8)
    assert m(mx.zeros((1, 128))).shape == (1, 128)

    with pytest.raises(ValueError):
        nn.quantize(nn.Sequential(nn.ReLU()), class_predicate=lambda *_: True)
