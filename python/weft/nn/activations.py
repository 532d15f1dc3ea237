"""Activation functions (``mlx.nn``), composed of weft.core ops."""

from __future__ import annotations

import math

import weft.core as mx


def sigmoid(x: mx.array) -> mx.array:
    return mx.sigmoid(x)


def tanh(x: mx.array) -> mx.array:
    return mx.tanh(x)


def relu(x: mx.array) -> mx.array:
    return mx.maximum(x, 0)


def relu6(x: mx.array) -> mx.array:
    return mx.minimum(mx.maximum(x, 0), 6.0)


def leaky_relu(x: mx.array, negative_slope: float = 0.01) -> mx.array:
    return mx.maximum(negative_slope * x, x)


def elu(x: mx.array, alpha: float = 1.0) -> mx.array:
    return mx.where(x > 0, x, alpha * (mx.exp(mx.minimum(x, 0)) - 1))


def celu(x: mx.array, alpha: float = 1.0) -> mx.array:
    return mx.maximum(x, 0.0) + alpha * (mx.exp(mx.minimum(x, 0.0) / alpha) - 1)


def selu(x: mx.array) -> mx.array:
    return elu(x, 1.67326) * 1.0507


def silu(x: mx.array) -> mx.array:
    return x * mx.sigmoid(x)


def log_sigmoid(x: mx.array) -> mx.array:
    return -softplus(-x)


def softplus(x: mx.array) -> mx.array:
    return mx.logaddexp(x, 0)


def softsign(x: mx.array) -> mx.array:
    return x / (1 + mx.abs(x))


def mish(x: mx.array) -> mx.array:
    return x * mx.tanh(softplus(x))


def gelu(x: mx.array) -> mx.array:
    """``x * Phi(x)`` with the exact normal CDF."""
    return x * (1 + mx.erf(x / math.sqrt(2))) / 2


def gelu_approx(x: mx.array) -> mx.array:
    """GELU with the tanh approximation."""
    return 0.5 * x * (1 + mx.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def gelu_fast_approx(x: mx.array) -> mx.array:
    """``x * sigmoid(1.702 x)``."""
    return x * mx.sigmoid(1.702 * x)


def hardswish(x: mx.array) -> mx.array:
    return x * mx.minimum(mx.maximum(x + 3, 0), 6) / 6


def hard_tanh(x: mx.array, min_val: float = -1.0, max_val: float = 1.0) -> mx.array:
    return mx.minimum(mx.maximum(x, min_val), max_val)


def hard_shrink(x: mx.array, lambd: float = 0.5) -> mx.array:
    return mx.where(mx.abs(x) > lambd, x, 0)


def softmin(x: mx.array, axis: int = -1) -> mx.array:
    return mx.softmax(-x, axis=axis)


def log_softmax(x: mx.array, axis: int = -1) -> mx.array:
    """``x - logsumexp(x)``, with ``x`` first shifted by its max so that
    large equal logits keep their exact gaps."""
    x = x - mx.stop_gradient(mx.max(x, axis=axis, keepdims=True))
    return x - mx.logsumexp(x, axis=axis, keepdims=True)


def glu(x: mx.array, axis: int = -1) -> mx.array:
    a, b = mx.split(x, 2, axis=axis)
    return a * mx.sigmoid(b)


def prelu(x: mx.array, alpha: mx.array) -> mx.array:
    return mx.maximum(0, x) + alpha * mx.minimum(0, x)


def step(x: mx.array, threshold: float = 0.0) -> mx.array:
    """1 where ``x >= threshold``, else 0."""
    return mx.where(x >= threshold, 1, 0)


def softmax(x: mx.array, axis: int = -1) -> mx.array:
    return mx.softmax(x, axis=axis)


def softshrink(x: mx.array, lambd: float = 0.5) -> mx.array:
    return mx.where(mx.abs(x) > lambd, x - mx.sign(x) * lambd, 0)
