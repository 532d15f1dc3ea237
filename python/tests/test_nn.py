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
