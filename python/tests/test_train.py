"""End-to-end training with weft.nn + weft.optimizers, checked against the same
training written in plain NumPy (float64, hand-written gradients and
optimizer updates): the loss must drop and follow the reference step by step."""

import numpy as np
import pytest

import weft.core as mx
import weft.nn as nn
import weft.optimizers as optim
from weft.utils import tree_flatten

DIMS = (6, 24, 24, 2)
STEPS = 150
BATCH = 32


def make_data(seed=0):
    """Fixed batches of a smooth regression task (a random tanh teacher)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((DIMS[0], 8)) / np.sqrt(DIMS[0])
    b = rng.standard_normal((8, DIMS[-1]))
    batches = []
    for _ in range(STEPS):
        x = rng.standard_normal((BATCH, DIMS[0]))
        batches.append((x.astype(np.float32), (np.sin(x @ a) @ b).astype(np.float32)))
    return batches


def make_weights(seed=1):
    rng = np.random.default_rng(seed)
    w = {}
    for i, (fi, fo) in enumerate(zip(DIMS[:-1], DIMS[1:])):
        s = 1 / np.sqrt(fi)
        w[f"layers.{i}.weight"] = rng.uniform(-s, s, (fo, fi)).astype(np.float32)
        w[f"layers.{i}.bias"] = rng.uniform(-s, s, (fo,)).astype(np.float32)
    return w


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(i, o) for i, o in zip(DIMS[:-1], DIMS[1:])]

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = mx.tanh(layer(x))
        return self.layers[-1](x)


# --- the NumPy reference ---------------------------------------------------


def np_loss_and_grads(w, x, y):
    """MSE of the tanh MLP and its gradients, by hand (float64)."""
    n = len(DIMS) - 1
    acts = [x.astype(np.float64)]
    for i in range(n):
        z = acts[-1] @ w[f"layers.{i}.weight"].T + w[f"layers.{i}.bias"]
        acts.append(np.tanh(z) if i < n - 1 else z)
    diff = acts[-1] - y
    loss = np.mean(diff**2)
    g = {}
    d = 2 * diff / diff.size
    for i in reversed(range(n)):
        g[f"layers.{i}.weight"] = d.T @ acts[i]
        g[f"layers.{i}.bias"] = d.sum(0)
        if i > 0:
            d = (d @ w[f"layers.{i}.weight"]) * (1 - acts[i] ** 2)
    return loss, g


def np_sgd(lr, momentum):
    v = {}

    def update(w, g):
        for k in w:
            v[k] = momentum * v.get(k, 0) + g[k]
            w[k] = w[k] - lr * v[k]

    return update


def np_adamw(lr, b1, b2, eps, wd):
    m, v, t = {}, {}, [0]

    def update(w, g):
        t[0] += 1
        for k in w:
            m[k] = b1 * m.get(k, 0) + (1 - b1) * g[k]
            v[k] = b2 * v.get(k, 0) + (1 - b2) * g[k] ** 2
            mh, vh = m[k] / (1 - b1 ** t[0]), v[k] / (1 - b2 ** t[0])
            w[k] = w[k] * (1 - lr * wd) - lr * mh / (np.sqrt(vh) + eps)

    return update


OPTIMIZERS = {
    "sgd": (lambda: optim.SGD(learning_rate=0.05, momentum=0.9), lambda: np_sgd(0.05, 0.9)),
    "adamw": (
        lambda: optim.AdamW(learning_rate=0.01, betas=[0.9, 0.99], eps=1e-8, weight_decay=0.01, bias_correction=True),
        lambda: np_adamw(0.01, 0.9, 0.99, 1e-8, 0.01),
    ),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_mlp_training_matches_numpy_reference(name):
    make_opt, make_np_opt = OPTIMIZERS[name]
    batches, init = make_data(), make_weights()

    # the reference
    w = {k: v.astype(np.float64) for k, v in init.items()}
    np_update = make_np_opt()
    ref_losses, ref_grads0 = [], None
    for x, y in batches:
        loss, g = np_loss_and_grads(w, x, y)
        ref_grads0 = ref_grads0 or g
        ref_losses.append(loss)
        np_update(w, g)

    # weft
    model = MLP()
    model.load_weights([(k, mx.array(v)) for k, v in init.items()])
    opt = make_opt()
    loss_and_grad = nn.value_and_grad(model, lambda x, y: nn.losses.mse_loss(model(x), y))
    losses = []
    for step, (x, y) in enumerate(batches):
        loss, grads = loss_and_grad(mx.array(x), mx.array(y))
        if step == 0:
            got = dict(tree_flatten(grads))
            assert sorted(got) == sorted(ref_grads0)
            for k, g in ref_grads0.items():
                np.testing.assert_allclose(np.array(got[k]), g, rtol=1e-4, atol=1e-6, err_msg=k)
        opt.update(model, grads)
        mx.eval(loss, model.parameters(), opt.state)
        losses.append(loss.item())

    losses, ref_losses = np.array(losses), np.array(ref_losses)
    # it learned: the last 10 steps' loss is well under the first step's
    assert losses[-10:].mean() < 0.2 * losses[0], (losses[0], losses[-10:])
    # and it followed the float64 reference step by step (float32 drift only)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-4, atol=1e-6)
    final = dict(tree_flatten(model.parameters()))
    for k in w:
        np.testing.assert_allclose(np.array(final[k]), w[k], rtol=1e-3, atol=2e-5, err_msg=k)
    assert int(opt.step.item()) == STEPS
