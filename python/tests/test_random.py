"""weft.core.random: keys, reproducibility, ranges and distributions."""

import math
import threading

import numpy as np
import pytest

import weft.core as mx

N = 100_000


def test_submodule_imports():
    import weft.core.random as r1
    from weft.core import random as r2

    assert r1 is r2 is mx.random
    assert r1.__name__ == "weft.core.random"
    assert mx.random.normal((2,)).shape == (2,)


def test_keys_and_split():
    k = mx.random.key(42)
    assert k.dtype == mx.uint32 and k.shape == (2,)
    assert mx.random.key(42).tolist() == k.tolist()
    assert mx.random.key(43).tolist() != k.tolist()
    ks = mx.random.split(k)
    assert ks.shape == (2, 2) and ks.dtype == mx.uint32
    assert mx.random.split(k, num=5).shape == (5, 2)
    np.testing.assert_array_equal(np.array(mx.random.split(k)), np.array(ks))
    rows = np.array(mx.random.split(k, 8))
    assert len({tuple(r) for r in rows}) == 8
    with pytest.raises(ValueError):
        mx.random.split(mx.array([1, 2, 3], dtype=mx.uint32))


def test_same_key_same_numbers_different_keys_differ():
    k1, k2 = mx.random.split(mx.random.key(0))
    for f in (
        lambda k: mx.random.uniform(shape=(100,), key=k),
        lambda k: mx.random.normal((100,), key=k),
        lambda k: mx.random.randint(0, 1000, (100,), key=k),
        lambda k: mx.random.bits((100,), key=k),
        lambda k: mx.random.bernoulli(0.5, (100,), key=k),
        lambda k: mx.random.categorical(mx.zeros((100, 10)), key=k),
    ):
        a, b, c = np.array(f(k1)), np.array(f(k1)), np.array(f(k2))
        np.testing.assert_array_equal(a, b)
        assert (a != c).any()


def test_seed_makes_default_stream_reproducible():
    mx.random.seed(7)
    a = [np.array(mx.random.normal((50,))), np.array(mx.random.uniform(shape=(50,)))]
    mx.random.seed(7)
    b = [np.array(mx.random.normal((50,))), np.array(mx.random.uniform(shape=(50,)))]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    # Successive draws differ; another seed differs.
    assert (a[0] != np.array(mx.random.normal((50,)))).any()
    mx.random.seed(8)
    assert (a[0] != np.array(mx.random.normal((50,)))).any()


def test_seed_reaches_other_threads():
    # A thread's default key restarts at the seed too.
    out = {}
    mx.random.seed(3)
    t = threading.Thread(target=lambda: out.__setitem__("thread", np.array(mx.random.normal((20,)))))
    t.start()
    t.join()
    mx.random.seed(3)
    here = np.array(mx.random.normal((20,)))
    np.testing.assert_array_equal(out["thread"], here)


def test_uniform():
    k = mx.random.key(1)
    x = np.array(mx.random.uniform(shape=(N,), key=k), dtype=np.float64)
    assert x.min() >= 0 and x.max() < 1
    assert abs(x.mean() - 0.5) < 0.005
    assert abs(x.std() - math.sqrt(1 / 12)) < 0.005
    y = mx.random.uniform(-3, 5, (N,), key=k)
    assert y.dtype == mx.float32
    y = np.array(y, dtype=np.float64)
    assert y.min() >= -3 and y.max() < 5
    assert abs(y.mean() - 1) < 0.05
    # dtype, default shape, array bounds (broadcast to shape).
    assert mx.random.uniform(dtype=mx.float16).dtype == mx.float16
    assert mx.random.uniform().shape == ()
    low = mx.array([0.0, 10.0, 100.0])
    z = np.array(mx.random.uniform(low, low + 1, (1000, 3), key=k))
    assert z.shape == (1000, 3)
    assert (z >= [0, 10, 100]).all() and (z < [1, 11, 101]).all()
    with pytest.raises(ValueError):
        mx.random.uniform(low, low + 1, (2,), key=k)
    with pytest.raises(ValueError):
        mx.random.uniform(1, 0, (2,))
    with pytest.raises(ValueError):
        mx.random.uniform(shape=(2,), dtype=mx.int32)


def test_normal():
    k = mx.random.key(2)
    x = np.array(mx.random.normal((N,), key=k), dtype=np.float64)
    assert abs(x.mean()) < 0.015
    assert abs(x.std() - 1) < 0.015
    # About 68% within one standard deviation.
    assert abs((np.abs(x) < 1).mean() - 0.6827) < 0.01
    y = np.array(mx.random.normal((N,), loc=3.0, scale=0.5, key=k), dtype=np.float64)
    assert abs(y.mean() - 3) < 0.01 and abs(y.std() - 0.5) < 0.01
    assert mx.random.normal((4,), dtype=mx.bfloat16).dtype == mx.bfloat16
    assert mx.random.normal().shape == ()
    loc = mx.array([-5.0, 5.0])
    z = np.array(mx.random.normal((N // 2, 2), loc=loc, scale=2.0, key=k), dtype=np.float64)
    np.testing.assert_allclose(z.mean(axis=0), [-5, 5], atol=0.05)
    np.testing.assert_allclose(z.std(axis=0), [2, 2], atol=0.05)


def test_randint():
    k = mx.random.key(3)
    x = mx.random.randint(-4, 7, (N,), key=k)
    assert x.dtype == mx.int32
    x = np.array(x)
    assert x.min() == -4 and x.max() == 6
    counts = np.bincount(x + 4) / N
    np.testing.assert_allclose(counts, np.full(11, 1 / 11), atol=0.01)
    assert mx.random.randint(0, 10, (3,), dtype=mx.int64).dtype == mx.int64
    with pytest.raises(ValueError):
        mx.random.randint(5, 5, (2,))
    # One-element integer arrays are bounds (as MLX); per-element bounds are refused.
    y = mx.random.randint(mx.array(-4), mx.array([7]), (N,), key=k)
    assert np.array_equal(np.array(y), x)
    with pytest.raises(TypeError):
        mx.random.randint(mx.array([0, 1]), 5, (2,))
    with pytest.raises(TypeError):
        mx.random.randint(mx.array(0.5), 5, (2,))


def test_bernoulli():
    k = mx.random.key(4)
    x = mx.random.bernoulli(0.3, (N,), key=k)
    assert x.dtype == mx.bool_
    assert abs(np.array(x).mean() - 0.3) < 0.01
    assert abs(np.array(mx.random.bernoulli(shape=(N,), key=k)).mean() - 0.5) < 0.01
    p = mx.array([0.1, 0.9])
    y = np.array(mx.random.bernoulli(p, (N // 2, 2), key=k))
    np.testing.assert_allclose(y.mean(axis=0), [0.1, 0.9], atol=0.01)
    assert mx.random.bernoulli(p).shape == (2,)
    with pytest.raises(ValueError):
        mx.random.bernoulli(p, (3,))


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_categorical_frequencies():
    k = mx.random.key(5)
    logits = np.array([0.0, 1.0, -1.0, 2.0, 0.5])
    # num_samples draws from the one distribution.
    s = mx.random.categorical(mx.array(logits), num_samples=N, key=k)
    assert s.shape == (N,) and s.dtype == mx.uint32
    freq = np.bincount(np.array(s), minlength=5) / N
    np.testing.assert_allclose(freq, softmax(logits), atol=0.01)
    # shape= broadcasts the batch of distributions.
    s2 = np.array(mx.random.categorical(mx.array(logits), shape=(N,), key=k))
    np.testing.assert_allclose(np.bincount(s2, minlength=5) / N, softmax(logits), atol=0.01)
    # A batch along axis 0, one sample each.
    batch = np.stack([logits, logits[::-1]], axis=1)  # (5, 2): distributions along axis 0
    big = np.repeat(batch[:, :, None], N // 10, axis=2)
    s3 = np.array(mx.random.categorical(mx.array(big.astype(np.float32)), axis=0, key=k))
    assert s3.shape == (2, N // 10)
    for j, probs in enumerate([softmax(logits), softmax(logits[::-1])]):
        np.testing.assert_allclose(np.bincount(s3[j], minlength=5) / (N // 10), probs, atol=0.02)


def test_categorical_errors():
    logits = mx.zeros((3, 4))
    assert mx.random.categorical(logits).shape == (3,)
    assert mx.random.categorical(logits, num_samples=6).shape == (3, 6)
    assert mx.random.categorical(logits, shape=(2, 3)).shape == (2, 3)
    with pytest.raises(ValueError):
        mx.random.categorical(logits, shape=(2,), num_samples=2)
    with pytest.raises(ValueError):
        mx.random.categorical(logits, shape=(4,))
    with pytest.raises(ValueError):
        mx.random.categorical(logits, axis=2)


def test_bits():
    b = mx.random.bits((N,), key=mx.random.key(6))
    assert b.dtype == mx.uint32
    x = np.array(b).astype(np.float64)
    assert abs(x.mean() / 2**32 - 0.5) < 0.01
    # Each bit is set about half the time.
    bitfreq = ((np.array(b)[:, None] >> np.arange(32, dtype=np.uint32)) & 1).mean(axis=0)
    np.testing.assert_allclose(bitfreq, 0.5, atol=0.01)
    with pytest.raises(ValueError):
        mx.random.bits((2,), width=2)


def test_default_seed_differs_between_processes():
    # As in MLX, the default keys start from the time.
    import subprocess
    import sys

    code = "import weft.core as mx; print(mx.random.normal((4,)).tolist())"
    runs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout for _ in range(2)}
    assert len(runs) == 2


def test_state_is_the_threads_key_and_compiles_as_implicit_state():
    assert len(mx.random.state) == 1
    saved = mx.random.state[0]
    a = mx.random.uniform(shape=(4,))
    mx.random.state[0] = saved
    assert mx.random.uniform(shape=(4,)).tolist() == a.tolist()
    with pytest.raises(IndexError):
        mx.random.state[1]
    with pytest.raises(ValueError):
        mx.random.state[0] = mx.array([1, 2, 3], dtype=mx.uint32)

    f = mx.compile(lambda: mx.random.uniform(shape=(8,)), inputs=mx.random.state, outputs=mx.random.state)
    assert f().tolist() != f().tolist()  # the state advances between calls
    mx.random.seed(3)
    c = f()
    mx.random.seed(3)
    assert f().tolist() == c.tolist()


def test_scaled_samples_are_exact_in_narrow_dtypes():
    k = mx.random.key(9)
    for sampler in (mx.random.normal, mx.random.laplace):
        a = sampler(shape=(64,), loc=1.0, scale=2.0, dtype=mx.float16, key=k)
        b = 2.0 * sampler(shape=(64,), dtype=mx.float16, key=k) + 1.0
        assert a.dtype == mx.float16 and a.tolist() == b.tolist()


def test_bernoulli_needs_float_probabilities_and_truncated_bounds():
    with pytest.raises(ValueError):
        mx.random.bernoulli(0, [2])
    with pytest.raises(ValueError):
        mx.random.bernoulli(mx.array([0, 1]))
    assert mx.random.bernoulli(0.0, [3]).tolist() == [False] * 3
    # Bounds in the wrong order give the lower bound, as MLX.
    assert mx.all(mx.random.truncated_normal(2.0, -2.0, (5,)) == 2.0).item()
