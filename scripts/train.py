#!/usr/bin/env python3
"""Trains two small models end to end and prints the loss curve and steps/s.

    python3 scripts/train.py --framework weft   # weft.core / weft.nn / weft.optimizers
    python3 scripts/train.py --framework mlx    # mlx.core / mlx.nn / mlx.optimizers
    python3 scripts/train.py --framework torch  # the same models in PyTorch

Tasks (``--task mlp|lm|all``):

* ``mlp``: a 3-layer ReLU MLP (32 -> 256 -> 256 -> 4) fitted to a fixed
  random "teacher" network (MSE) with SGD + momentum, batch 128.
* ``lm``: a 2-layer pre-norm transformer, character level (d=128, 4 heads,
  context 64, batch 32), on scripts/data/coriolanus.txt, with AdamW.

weft and mlx run the *same* model code below (only the imports differ); the
PyTorch twin has the same parameter names and shapes. Every framework starts
from the same weights (drawn with NumPy from a fixed seed and loaded) and sees
the same batches (drawn with NumPy), so their loss curves can be compared
point by point. A benchmark/demo, not a test: see docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--framework", choices=["weft", "mlx", "torch"], default="weft")
    p.add_argument("--task", choices=["mlp", "lm", "all"], default="all")
    p.add_argument("--mlp-steps", type=int, default=1000)
    p.add_argument("--lm-steps", type=int, default=200)
    p.add_argument("--log-every", type=int, default=50)
    p.add_argument("--compile", action="store_true", help="wrap the training step in mx.compile / torch.compile")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32", help="of the weights and inputs (float64: a reference for rounding drift)")
    p.add_argument("--text", default=os.path.join(HERE, "data", "coriolanus.txt"))
    p.add_argument("--csv", help="append 'framework,task,step,loss' rows to this file")
    return p.parse_args(argv)


ARGS = parse_args()
FW = ARGS.framework

if FW == "weft":
    import weft.core as mx
    import weft.nn as nn
    import weft.optimizers as optim
    from weft.utils import tree_flatten, tree_unflatten
elif FW == "mlx":
    import mlx.core as mx
    import mlx.nn as nn
    import mlx.optimizers as optim
    from mlx.utils import tree_flatten, tree_unflatten
else:
    import torch

# ---------------------------------------------------------------------------
# Data and initial weights, in NumPy (shared by every framework)
# ---------------------------------------------------------------------------

MLP_DIMS = [32, 256, 256, 4]
DTYPE = np.dtype(ARGS.dtype)
MLP_BATCH = 128
LM = dict(d=128, heads=4, layers=2, ctx=64, batch=32)


def mlp_data(seed):
    """A fixed random tanh "teacher" network and a stream of batches."""
    rng = np.random.default_rng(seed + 1000)
    a = rng.standard_normal((32, 64)).astype(np.float32) / np.sqrt(32)
    b = rng.standard_normal((64, 4)).astype(np.float32) / np.sqrt(64)

    def batch(step):
        r = np.random.default_rng([seed, 1, step])
        x = r.standard_normal((MLP_BATCH, 32)).astype(np.float32)
        y = np.tanh(x @ a) @ b + 0.01 * r.standard_normal((MLP_BATCH, 4)).astype(np.float32)
        return x.astype(DTYPE), y.astype(DTYPE)

    return batch


def linear_init(rng, fan_in, fan_out, bias=True):
    s = 1.0 / math.sqrt(fan_in)
    w = rng.uniform(-s, s, (fan_out, fan_in)).astype(np.float32)
    return (w, rng.uniform(-s, s, (fan_out,)).astype(np.float32)) if bias else (w, None)


def mlp_init(seed):
    rng = np.random.default_rng(seed + 2000)
    out = {}
    for i, (fi, fo) in enumerate(zip(MLP_DIMS[:-1], MLP_DIMS[1:])):
        out[f"layers.{i}.weight"], out[f"layers.{i}.bias"] = linear_init(rng, fi, fo)
    return {k: v.astype(DTYPE) for k, v in out.items()}


def lm_data(path, seed):
    text = open(path, encoding="utf-8").read()
    chars = sorted(set(text))
    ids = np.array([chars.index(c) for c in text], dtype=np.int32)
    ctx, bsz = LM["ctx"], LM["batch"]

    def batch(step):
        r = np.random.default_rng([seed, 2, step])
        starts = r.integers(0, len(ids) - ctx - 1, size=bsz)
        x = np.stack([ids[s:s + ctx] for s in starts])
        y = np.stack([ids[s + 1:s + ctx + 1] for s in starts])
        return x, y

    return batch, len(chars)


def lm_init(seed, vocab):
    rng = np.random.default_rng(seed + 3000)
    d, ctx = LM["d"], LM["ctx"]
    out = {
        "tok_emb.weight": (0.1 * rng.standard_normal((vocab, d))).astype(np.float32),
        "pos_emb.weight": (0.1 * rng.standard_normal((ctx, d))).astype(np.float32),
    }
    for i in range(LM["layers"]):
        p = f"blocks.{i}."
        for ln in ("ln1", "ln2"):
            out[p + ln + ".weight"] = np.ones(d, np.float32)
            out[p + ln + ".bias"] = np.zeros(d, np.float32)
        for proj in ("query_proj", "key_proj", "value_proj", "out_proj"):
            out[p + f"attn.{proj}.weight"] = linear_init(rng, d, d, bias=False)[0]
        out[p + "fc1.weight"], out[p + "fc1.bias"] = linear_init(rng, d, 4 * d)
        out[p + "fc2.weight"], out[p + "fc2.bias"] = linear_init(rng, 4 * d, d)
    out["ln_f.weight"] = np.ones(d, np.float32)
    out["ln_f.bias"] = np.zeros(d, np.float32)
    out["head.weight"], out["head.bias"] = linear_init(rng, d, vocab)
    return {k: v.astype(DTYPE) for k, v in out.items()}


# ---------------------------------------------------------------------------
# weft / mlx: one version of the models and the training loop
# ---------------------------------------------------------------------------

if FW in ("weft", "mlx"):

    class MLP(nn.Module):
        def __init__(self, dims):
            super().__init__()
            self.layers = [nn.Linear(i, o) for i, o in zip(dims[:-1], dims[1:])]

        def __call__(self, x):
            for layer in self.layers[:-1]:
                x = nn.relu(layer(x))
            return self.layers[-1](x)

    class Block(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.ln1 = nn.LayerNorm(d)
            self.attn = nn.MultiHeadAttention(d, heads)
            self.ln2 = nn.LayerNorm(d)
            self.fc1 = nn.Linear(d, 4 * d)
            self.fc2 = nn.Linear(4 * d, d)

        def __call__(self, x, mask):
            h = self.ln1(x)
            x = x + self.attn(h, h, h, mask)
            return x + self.fc2(nn.gelu(self.fc1(self.ln2(x))))

    class CharLM(nn.Module):
        def __init__(self, vocab, d, heads, layers, ctx):
            super().__init__()
            self.tok_emb = nn.Embedding(vocab, d)
            self.pos_emb = nn.Embedding(ctx, d)
            self.blocks = [Block(d, heads) for _ in range(layers)]
            self.ln_f = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab)

        def __call__(self, x):
            t = x.shape[1]
            h = self.tok_emb(x) + self.pos_emb(mx.arange(t))
            mask = nn.MultiHeadAttention.create_additive_causal_mask(t)
            for b in self.blocks:
                h = b(h, mask)
            return self.head(self.ln_f(h))

    def to_mx(a):
        # mx.array makes float64 NumPy input float32 unless told otherwise
        return mx.array(a, dtype=mx.float64) if a.dtype == np.float64 else mx.array(a)

    def load(model, weights):
        model.load_weights([(k, to_mx(v)) for k, v in weights.items()])
        mx.eval(model.parameters())

    def train(model, optimizer, loss_fn, batch, steps, name):
        loss_and_grad = nn.value_and_grad(model, loss_fn)
        state = [model.state, optimizer.state]

        def step(x, y):
            loss, grads = loss_and_grad(x, y)
            optimizer.update(model, grads)
            return loss

        if ARGS.compile:
            step = mx.compile(step, inputs=state, outputs=state)

        def run(i):
            loss = step(*map(to_mx, batch(i)))
            mx.eval(loss, state)
            return loss

        return run_loop(run, lambda loss: loss.item(), steps, name)

    def mlp_task():
        model = MLP(MLP_DIMS)
        load(model, mlp_init(ARGS.seed))

        def loss_fn(x, y):
            return nn.losses.mse_loss(model(x), y)

        return train(model, optim.SGD(learning_rate=0.05, momentum=0.9), loss_fn, mlp_data(ARGS.seed), ARGS.mlp_steps, "mlp")

    def lm_task():
        batch, vocab = lm_data(ARGS.text, ARGS.seed)
        model = CharLM(vocab, LM["d"], LM["heads"], LM["layers"], LM["ctx"])
        load(model, lm_init(ARGS.seed, vocab))

        def loss_fn(x, y):
            return nn.losses.cross_entropy(model(x), y, reduction="mean")

        opt = optim.AdamW(learning_rate=3e-3, betas=[0.9, 0.99], eps=1e-8, weight_decay=0.01, bias_correction=True)
        return train(model, opt, loss_fn, batch, ARGS.lm_steps, "lm")

    def describe():
        return f"{FW} {getattr(mx, '__version__', '?')} on {mx.default_device()}"

# ---------------------------------------------------------------------------
# PyTorch: the same models, parameter names and training loop
# ---------------------------------------------------------------------------

else:
    tnn = torch.nn
    F = torch.nn.functional

    class MLP(tnn.Module):
        def __init__(self, dims):
            super().__init__()
            self.layers = tnn.ModuleList(tnn.Linear(i, o) for i, o in zip(dims[:-1], dims[1:]))

        def forward(self, x):
            for layer in self.layers[:-1]:
                x = F.relu(layer(x))
            return self.layers[-1](x)

    class Attention(tnn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.heads = heads
            self.query_proj, self.key_proj, self.value_proj, self.out_proj = (tnn.Linear(d, d, bias=False) for _ in range(4))

        def forward(self, x, mask):
            b, t, d = x.shape
            q, k, v = (p(x).reshape(b, t, self.heads, -1).transpose(1, 2) for p in (self.query_proj, self.key_proj, self.value_proj))
            scores = (q * (1.0 / math.sqrt(q.shape[-1]))) @ k.transpose(-1, -2) + mask
            out = torch.softmax(scores, dim=-1) @ v
            return self.out_proj(out.transpose(1, 2).reshape(b, t, d))

    class Block(tnn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.ln1, self.ln2 = tnn.LayerNorm(d), tnn.LayerNorm(d)
            self.attn = Attention(d, heads)
            self.fc1, self.fc2 = tnn.Linear(d, 4 * d), tnn.Linear(4 * d, d)

        def forward(self, x, mask):
            h = self.ln1(x)
            x = x + self.attn(h, mask)
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    class CharLM(tnn.Module):
        def __init__(self, vocab, d, heads, layers, ctx):
            super().__init__()
            self.tok_emb, self.pos_emb = tnn.Embedding(vocab, d), tnn.Embedding(ctx, d)
            self.blocks = tnn.ModuleList(Block(d, heads) for _ in range(layers))
            self.ln_f = tnn.LayerNorm(d)
            self.head = tnn.Linear(d, vocab)

        def forward(self, x):
            t = x.shape[1]
            h = self.tok_emb(x) + self.pos_emb(torch.arange(t))
            mask = torch.triu(torch.full((t, t), -1e9), diagonal=1)
            for b in self.blocks:
                h = b(h, mask)
            return self.head(self.ln_f(h))

    def load(model, weights):
        model.to(torch.float64 if DTYPE == np.float64 else torch.float32)
        state = {k: torch.from_numpy(v) for k, v in weights.items()}
        missing, unexpected = model.load_state_dict(state, strict=True)
        assert not missing and not unexpected

    def train(model, optimizer, loss_fn, batch, steps, name):
        def step(x, y):
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            return loss.detach()

        if ARGS.compile:
            step = torch.compile(step)

        def feed(i):
            x, y = batch(i)
            return step(torch.from_numpy(x).long() if x.dtype == np.int32 else torch.from_numpy(x), torch.from_numpy(y).long() if y.dtype == np.int32 else torch.from_numpy(y))

        return run_loop(feed, lambda loss: loss.item(), steps, name)

    def mlp_task():
        model = MLP(MLP_DIMS)
        load(model, mlp_init(ARGS.seed))
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        return train(model, opt, F.mse_loss, mlp_data(ARGS.seed), ARGS.mlp_steps, "mlp")

    def lm_task():
        batch, vocab = lm_data(ARGS.text, ARGS.seed)
        model = CharLM(vocab, LM["d"], LM["heads"], LM["layers"], LM["ctx"])
        load(model, lm_init(ARGS.seed, vocab))
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.01)
        return train(model, opt, lambda logits, y: F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)), batch, ARGS.lm_steps, "lm")

    def describe():
        return f"torch {torch.__version__} on cpu, {torch.get_num_threads()} threads"


# ---------------------------------------------------------------------------


def run_loop(step, read, steps, name):
    """Runs ``steps`` steps; the loss is read (which waits for the step) at
    step 0, every ``--log-every`` steps and at the last step. steps/s is
    measured from the end of step 0 (which includes any tracing) to the end."""
    curve = []
    t0 = None
    for i in range(steps):
        loss = step(i)
        if i == 0 or (i + 1) % ARGS.log_every == 0 or i == steps - 1:
            value = read(loss)
            curve.append((i, value))
            print(f"{FW:5s} {name:3s} step {i:5d} loss {value:.6f}", flush=True)
            if ARGS.csv:
                with open(ARGS.csv, "a") as f:
                    f.write(f"{FW},{name},{i},{value:.7g}\n")
        if i == 0:
            t0 = time.perf_counter()
    dt = time.perf_counter() - t0
    rate = (steps - 1) / dt if steps > 1 else float("nan")
    print(f"{FW:5s} {name:3s} {steps - 1} steps in {dt:.2f} s: {rate:.2f} steps/s", flush=True)
    return curve, rate


def main():
    print(f"# {describe()}; {ARGS.dtype}; compile={ARGS.compile}", flush=True)
    if ARGS.task in ("mlp", "all"):
        mlp_task()
    if ARGS.task in ("lm", "all"):
        lm_task()


if __name__ == "__main__":
    sys.exit(main())
