"""weft.nn, weft.optimizers and weft.utils: the Module API, layers against
NumPy, one optimizer step against a NumPy reference, and a small MLP that
learns a synthetic task."""

import math

import numpy as np
import pytest

import weft.core as mx
import weft.nn as nn
import weft.optimizers as optim
from weft.utils import tree_flatten, tree_map, tree_unflatten


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.array(a), np.array(b), rtol=tol, atol=tol)


class MLP(nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.layers = [nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:])]
        self.norm = nn.LayerNorm(dims[1])
        self.scale = 2.0  # not a parameter

    def __call__(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i == 0:
                x = self.norm(x)
            if i < len(self.layers) - 1:
                x = nn.relu(x)
        return x


def test_trees_flatten_unflatten_map():
    tree = {"a": [mx.array(1.0), {"b": mx.array(2.0)}], "c": mx.array(3.0)}
    flat = tree_flatten(tree)
    assert [k for k, _ in flat] == ["a.0", "a.1.b", "c"]
    back = tree_unflatten(flat)
    assert isinstance(back["a"], list) and float(back["a"][1]["b"].item()) == 2.0
    doubled = tree_map(lambda x: x * 2, tree)
    assert float(doubled["a"][1]["b"].item()) == 4.0


def test_module_parameters_children_freeze_update_and_modes():
    m = MLP([4, 8, 3])
    names = [k for k, _ in tree_flatten(m.parameters())]
    assert names == ["layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias", "norm.weight", "norm.bias"]
    assert set(m.children()) == {"layers", "norm"}
    assert m.scale == 2.0 and "scale" not in m
    m.norm.freeze()
    assert [k for k, _ in tree_flatten(m.trainable_parameters())] == names[:4]
    m.unfreeze()
    assert len(tree_flatten(m.trainable_parameters())) == 6
    m.freeze(keys="bias")
    assert "layers.0.bias" not in dict(tree_flatten(m.trainable_parameters()))
    m.unfreeze()
    m.update({"layers": [{"bias": mx.zeros((8,))}, {}]})
    close(m.layers[0].bias, np.zeros(8))
    with pytest.raises(ValueError):
        m.update({"nope": mx.zeros((1,))})
    seen = []
    m.apply_to_modules(lambda name, mod: seen.append(name))
    assert set(seen) == {"", "layers.0", "layers.1", "norm"}
    d = nn.Dropout(0.5)
    x = mx.ones((1000,))
    assert float(mx.sum(d(x) == 0).item()) > 300
    d.eval()
    close(d(x), np.ones(1000))


def test_save_and_load_weights(tmp_path):
    m = MLP([4, 8, 3])
    path = str(tmp_path / "w.safetensors")
    m.save_weights(path)
    m2 = MLP([4, 8, 3])
    m2.load_weights(path)
    for (k, a), (_, b) in zip(tree_flatten(m.parameters()), tree_flatten(m2.parameters())):
        close(a, b, 0)
    with pytest.raises(ValueError):
        MLP([4, 9, 3]).load_weights(path)


def test_layers_against_numpy():
    x = mx.random.normal((2, 5, 8))
    xn = np.array(x)
    lin = nn.Linear(8, 3)
    close(lin(x), xn @ np.array(lin.weight).T + np.array(lin.bias))
    ln = nn.LayerNorm(8)
    mu, var = xn.mean(-1, keepdims=True), xn.var(-1, keepdims=True)
    close(ln(x), (xn - mu) / np.sqrt(var + 1e-5), 1e-4)
    rms = nn.RMSNorm(8)
    close(rms(x), xn / np.sqrt((xn**2).mean(-1, keepdims=True) + 1e-5), 1e-4)
    gn = nn.GroupNorm(2, 8)
    g = xn.reshape(2, 5, 4, 2)
    ref = (g - g.mean((1, 2), keepdims=True)) / np.sqrt(g.var((1, 2), keepdims=True) + 1e-5)
    close(gn(x), ref.reshape(2, 5, 8), 1e-4)
    emb = nn.Embedding(10, 4)
    ids = mx.array([[1, 3], [9, 0]])
    close(emb(ids), np.array(emb.weight)[np.array(ids)])
    mha = nn.MultiHeadAttention(8, 2)
    assert mha(x, x, x).shape == (2, 5, 8)
    close(nn.gelu(mx.array([1.0])), [0.8413447], 1e-5)
    seq = nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 2))
    assert seq(x).shape == (2, 5, 2)


def test_losses_against_numpy():
    logits = mx.array([[2.0, 1.0, 0.1], [0.5, 2.5, 0.2]])
    targets = mx.array([0, 1])
    ln = np.array(logits)
    lse = np.log(np.exp(ln).sum(-1))
    close(nn.losses.cross_entropy(logits, targets), lse - ln[[0, 1], [0, 1]])
    close(nn.losses.mse_loss(logits, mx.zeros_like(logits)), (ln**2).mean())
    p = mx.array([0.2, -1.0])
    y = mx.array([1.0, 0.0])
    bce = np.mean(np.log1p(np.exp([0.2, -1.0])) - np.array([0.2, -1.0]) * np.array([1.0, 0.0]))
    close(nn.losses.binary_cross_entropy(p, y), bce)


def test_adam_step_matches_numpy():
    p = {"w": mx.array([[1.0, -2.0], [0.5, 3.0]])}
    g = {"w": mx.array([[0.1, 0.2], [-0.3, 0.4]])}
    opt = optim.Adam(learning_rate=0.1, betas=[0.9, 0.999], eps=1e-8)
    new = opt.apply_gradients(g, p)
    gn = np.array(g["w"])
    m = 0.1 * gn
    v = 0.001 * gn**2
    close(new["w"], np.array(p["w"]) - 0.1 * m / (np.sqrt(v) + 1e-8), 1e-5)
    sgd = optim.SGD(learning_rate=0.5, momentum=0.9)
    close(sgd.apply_gradients(g, p)["w"], np.array(p["w"]) - 0.5 * gn)
    aw = optim.AdamW(learning_rate=0.1, weight_decay=0.1)
    pw = np.array(p["w"]) * (1 - 0.01)
    close(aw.apply_gradients(g, p)["w"], pw - 0.1 * m / (np.sqrt(v) + 1e-8), 1e-5)
    lion = optim.Lion(learning_rate=0.1)
    close(lion.apply_gradients(g, p)["w"], np.array(p["w"]) - 0.1 * np.sign(0.1 * gn))
    rms = optim.RMSprop(learning_rate=0.1)
    close(rms.apply_gradients(g, p)["w"], np.array(p["w"]) - 0.1 * gn / (np.sqrt(0.01 * gn**2) + 1e-8), 1e-5)
    sched = optim.cosine_decay(1.0, 10)
    assert abs(float(sched(5)) - 0.5) < 1e-6
    opt = optim.SGD(learning_rate=optim.linear_schedule(1.0, 0.0, 10))
    opt.apply_gradients(g, p)
    assert abs(float(opt.learning_rate.item()) - 1.0) < 1e-6


@pytest.mark.parametrize("make_opt", [
    lambda: optim.SGD(learning_rate=0.1, momentum=0.9),
    lambda: optim.Adam(learning_rate=0.01),
    lambda: optim.AdamW(learning_rate=0.01),
    lambda: optim.Lion(learning_rate=0.001),
    lambda: optim.RMSprop(learning_rate=0.005),
    lambda: optim.Adafactor(),
])
def test_mlp_learns_a_synthetic_task(make_opt):
    mx.random.seed(0)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(256, 4)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] > 0).astype(np.int32)  # XOR-like quadrants
    X, y = mx.array(X), mx.array(y)
    model = MLP([4, 32, 2])
    opt = make_opt()

    def loss_fn(model, X, y):
        return mx.mean(nn.losses.cross_entropy(model(X), y))

    loss_and_grad = nn.value_and_grad(model, lambda X, y: loss_fn(model, X, y))
    first = None
    for _ in range(150):
        loss, grads = loss_and_grad(X, y)
        opt.update(model, grads)
        mx.eval(model.parameters(), opt.state)
        first = first if first is not None else float(loss.item())
    last = float(loss_fn(model, X, y).item())
    assert last < 0.6 * first, (first, last)


def test_tree_merge_and_unflatten_rules():
    from weft.utils import tree_merge

    assert tree_merge({"a": [1]}, {"a": [None, 2], "b": 3}) == {"a": [1, 2], "b": 3}
    assert tree_merge({"a": {}}, {"a": {}}) == {"a": {}}
    assert tree_merge({"a": 1}, {"a": 2}, lambda x, y: x + y) == {"a": 3}
    for a, b in [({"a": 1}, {"a": 1}), ({}, []), ([], ())]:
        with pytest.raises(ValueError):
            tree_merge(a, b)
    assert tree_unflatten([("0", "a"), ("2", "c")]) == ["a", {}, "c"]
    assert tree_unflatten({"01": 1, "1": 2}) == {"01": 1, "1": 2}
    from typing import NamedTuple

    class P(NamedTuple):
        m: int
        b: int

    assert tree_map(lambda x: x + 1, P(1, 2)) == P(2, 3)


def test_module_children_freeze_update_modules_set_dtype():
    m = nn.Sequential(nn.Linear(2, 2, bias=False), nn.ReLU(), nn.Linear(2, 2), mx.sigmoid)
    assert m.children()["layers"][3] == {}
    m.update_modules(m.leaf_modules())
    m.freeze(keys="bias", strict=True)
    assert not any(k.endswith("bias") for k, _ in tree_flatten(m.trainable_parameters()))
    with pytest.raises(KeyError):
        m.freeze(keys="nope", strict=True)
    for bad in ({"values": [0]}, {"layers": [0]}, {"layers": [{}, {}, {}, {}, nn.ReLU()]}):
        with pytest.raises(ValueError):
            m.update_modules(bad)
    m.set_dtype(mx.float16)
    assert all(v.dtype == mx.float16 for _, v in tree_flatten(m.parameters()))


def test_new_layers_against_numpy():
    xn = np.random.RandomState(0).randn(6, 3, 4).astype(np.float32)
    x = mx.array(xn)
    bn = nn.BatchNorm(4)
    mu, var = xn.mean((0, 1)), xn.var((0, 1))
    close(bn(x), (xn - mu) / np.sqrt(var + 1e-5), 1e-4)
    close(bn.running_mean, 0.1 * mu, 1e-5)
    close(bn.running_var, 0.9 + 0.1 * xn.reshape(-1, 4).var(0, ddof=1), 1e-5)
    assert "running_mean" not in tree_flatten(bn.trainable_parameters(), destination={})
    bn.eval()
    close(bn(x), (xn - bn.running_mean) / np.sqrt(np.array(bn.running_var) + 1e-5), 1e-4)
    inorm = nn.InstanceNorm(4)
    close(inorm(x), (xn - xn.mean(1, keepdims=True)) / np.sqrt(xn.var(1, keepdims=True) + 1e-5), 1e-4)
    with pytest.raises(ValueError, match="must be positive"):
        nn.LayerNorm(4, eps=0.0)
    y = nn.Dropout2d(0.5)(mx.ones((2, 4, 4, 3)))
    yn = np.array(y)
    assert (yn == yn[:, :1, :1, :]).all()  # whole channels dropped
    close(nn.log_softmax(mx.array([[1e20, 1e20]])), [[-math.log(2)] * 2])
    close(nn.step(mx.array([-1.0, 0.0, 1.0])), [0, 1, 1])
    pe = nn.SinusoidalPositionalEncoding(4)(mx.arange(3))
    w = np.array([1.0, 1e-4])
    ref = np.concatenate([np.sin(np.arange(3)[:, None] * w), np.cos(np.arange(3)[:, None] * w)], -1) / math.sqrt(2)
    close(pe, ref, 1e-5)
    scores = nn.ALiBi()(mx.zeros((1, 2, 2, 3)))
    close(scores[0, 0], -0.0625 * np.abs(np.arange(2)[:, None] - np.arange(3)[None]))
    close(nn.losses.triplet_loss(mx.zeros((1, 2)), mx.zeros((1, 2)), mx.ones((1, 2))), [max(1e-3 - math.sqrt(2 + 1e-6) + 1, 0)], 1e-4)


def test_upsample_and_transformer():
    x = mx.arange(1, 5).reshape(1, 2, 2, 1)
    close(nn.Upsample(2, "nearest")(x)[0, :, :, 0], np.kron(np.arange(1, 5).reshape(2, 2), np.ones((2, 2))))
    close(nn.Upsample(2, "linear")(x)[0, 0, :, 0], [1, 1.25, 1.75, 2])
    close(nn.Upsample(2, "linear", align_corners=True)(x)[0, 0, :, 0], [1, 4 / 3, 5 / 3, 2])
    y = nn.Upsample(0.5, "cubic", antialias=True)(mx.random.normal((1, 8, 3)))
    assert y.shape == (1, 4, 3)
    with pytest.raises(ValueError):
        nn.Upsample(2, "nearest", antialias=True)
    model = nn.Transformer(dims=8, num_heads=2, num_encoder_layers=1, num_decoder_layers=1, norm_first=False)
    out = model(mx.random.normal((2, 5, 8)), mx.random.normal((2, 3, 8)), None, nn.MultiHeadAttention.create_additive_causal_mask(3), None)
    assert out.shape == (2, 3, 8)
    assert "decoder.layers.0.cross_attention.query_proj.weight" in tree_flatten(model.parameters(), destination={})


def test_muon_and_clip_grad_norm():
    params = {"w": mx.random.normal((6, 4)), "b": mx.zeros((4,))}
    grads = {"w": mx.random.normal((6, 4)), "b": mx.ones((4,))}
    new = optim.Muon(learning_rate=0.1, weight_decay=0.0).apply_gradients(grads, params)
    # Matrices step by a roughly orthogonal matrix (Newton-Schulz leaves
    # singular values near 1), scaled by sqrt(rows / cols).
    delta = (np.array(params["w"]) - np.array(new["w"])) / 0.1 / math.sqrt(6 / 4)
    assert np.all(np.abs(np.linalg.svd(delta, compute_uv=False) - 1) < 0.35)
    # Vectors take the Nesterov momentum step: g (1 - m) + m v, v = (1 - m) g.
    close(new["b"], -0.1 * (0.05 + 0.95 * 0.05) * np.ones(4))
    with pytest.raises(ValueError):
        optim.clip_grad_norm(grads, -1.0)
    with pytest.raises(ValueError, match=">0"):
        optim.Adagrad(learning_rate=0.1, eps=0.0)
