"""Initializers (``mlx.nn.init``): each returns a function of an array
giving a new array of its shape and dtype."""

from __future__ import annotations

import math
from typing import Callable

import weft.core as mx


def _fans(a: mx.array) -> tuple[int, int]:
    if a.ndim < 2:
        raise ValueError(f"Glorot / He initialization requires at least 2 dimensional input but input with {a.ndim} dimensions.")
    receptive = 1
    for d in a.shape[1:-1]:
        receptive *= d
    return a.shape[-1] * receptive, a.shape[0] * receptive


def constant(value: float, dtype=mx.float32) -> Callable:
    return lambda a: mx.full(a.shape, value, dtype=dtype)


def normal(mean: float = 0.0, std: float = 1.0, dtype=mx.float32) -> Callable:
    return lambda a: mx.random.normal(a.shape, dtype=dtype, loc=mean, scale=std)


def uniform(low: float = 0.0, high: float = 1.0, dtype=mx.float32) -> Callable:
    return lambda a: mx.random.uniform(low, high, a.shape, dtype=dtype)


def identity(dtype=mx.float32) -> Callable:
    def init(a: mx.array) -> mx.array:
        if a.ndim != 2 or a.shape[0] != a.shape[1]:
            raise ValueError(f"The input array must be a square matrix but got shape {a.shape}.")
        return mx.eye(a.shape[0], dtype=dtype)

    return init


def glorot_normal(dtype=mx.float32) -> Callable:
    def init(a: mx.array, gain: float = 1.0) -> mx.array:
        fan_in, fan_out = _fans(a)
        return mx.random.normal(a.shape, dtype=dtype) * (gain * math.sqrt(2.0 / (fan_in + fan_out)))

    return init


def glorot_uniform(dtype=mx.float32) -> Callable:
    def init(a: mx.array, gain: float = 1.0) -> mx.array:
        fan_in, fan_out = _fans(a)
        limit = gain * math.sqrt(6.0 / (fan_in + fan_out))
        return mx.random.uniform(-limit, limit, a.shape, dtype=dtype)

    return init


def he_normal(dtype=mx.float32) -> Callable:
    def init(a: mx.array, mode: str = "fan_in", gain: float = 1.0) -> mx.array:
        fan_in, fan_out = _fans(a)
        fan = {"fan_in": fan_in, "fan_out": fan_out}[mode]
        return mx.random.normal(a.shape, dtype=dtype) * (gain / math.sqrt(fan))

    return init


def he_uniform(dtype=mx.float32) -> Callable:
    def init(a: mx.array, mode: str = "fan_in", gain: float = 1.0) -> mx.array:
        fan_in, fan_out = _fans(a)
        fan = {"fan_in": fan_in, "fan_out": fan_out}[mode]
        limit = gain * math.sqrt(3.0 / fan)
        return mx.random.uniform(-limit, limit, a.shape, dtype=dtype)

    return init


def sparse(sparsity: float, mean: float = 0.0, std: float = 1.0, dtype=mx.float32) -> Callable:
    """Normal samples with ``ceil(sparsity * columns)`` entries of every row
    (of a 2-D array) set to zero, at random places (Martens, 2010)."""
    def init(a: mx.array) -> mx.array:
        if a.ndim != 2:
            raise ValueError("Only tensors with 2 dimensions are supported")
        rows, cols = a.shape
        num_zeros = int(math.ceil(sparsity * cols))
        rank = mx.argsort(mx.argsort(mx.random.uniform(shape=(rows, cols)), axis=1), axis=1)
        values = mx.random.normal((rows, cols), dtype=dtype, loc=mean, scale=std)
        return mx.where(rank < num_zeros, mx.zeros((), dtype=dtype), values)

    return init


def orthogonal(gain: float = 1.0, dtype=mx.float32) -> Callable:
    """``gain`` times a random matrix with orthonormal rows or columns
    (whichever are fewer), from the QR decomposition of normal samples."""
    def init(a: mx.array) -> mx.array:
        if a.ndim != 2:
            raise ValueError(f"Orthogonal initialization requires a 2D array but got a {a.ndim}D array.")
        rows, cols = a.shape
        n = max(rows, cols)
        q, r = mx.linalg.qr(mx.random.normal((n, n)), stream=mx.cpu)
        q = q * mx.sign(mx.diag(r))  # unique decomposition: the diagonal of r is positive
        return (gain * q[:rows, :cols]).astype(dtype)

    return init
