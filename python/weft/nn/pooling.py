"""Pooling layers (``mlx.nn``) over channels-last inputs ``[N, ..., C]``:
the max or mean of each window of ``kernel_size`` positions, ``stride``
apart (default: the kernel size), after ``padding`` on both sides of each
spatial axis (with -inf for max pooling, zeros for average pooling, which
divides by the full window size)."""

from __future__ import annotations

import math
from typing import Optional, Tuple, Union

import weft.core as mx
from weft.nn.module import Module


def _tuple(v, n: int, name: str) -> tuple:
    t = (v,) * n if isinstance(v, int) else tuple(v)
    if len(t) != n or not all(isinstance(i, int) for i in t):
        raise ValueError(f"{name} must be an int or a tuple of {n} ints, got {v!r}")
    return t


class _Pool(Module):
    _dims = 0

    def __init__(self, kernel_size, stride, padding) -> None:
        super().__init__()
        n = self._dims
        self._kernel_size = _tuple(kernel_size, n, "kernel_size")
        self._stride = self._kernel_size if stride is None else _tuple(stride, n, "stride")
        self._padding = _tuple(0 if padding is None else padding, n, "padding")
        if any(k <= 0 for k in self._kernel_size) or any(s <= 0 for s in self._stride):
            raise ValueError(f"kernel_size and stride must be positive, got {self._kernel_size} and {self._stride}")
        if any(p < 0 for p in self._padding):
            raise ValueError(f"padding must be non-negative, got {self._padding}")

    def _extra_repr(self) -> str:
        return f"kernel_size={self._kernel_size}, stride={self._stride}, padding={self._padding}"

    def __call__(self, x: mx.array) -> mx.array:
        n = self._dims
        if x.ndim != n + 2:
            raise ValueError(
                f"{type(self).__name__} expects inputs of {n + 2} dimensions [N, ..., C], got shape {x.shape}"
            )
        if any(self._padding):
            width = [(0, 0)] + [(p, p) for p in self._padding] + [(0, 0)]
            x = mx.pad(x, width, constant_values=self._pad_value(x.dtype))
        sizes = x.shape[1:-1]
        out = [(s - k) // st + 1 for s, k, st in zip(sizes, self._kernel_size, self._stride)]
        if any(o <= 0 for o in out):
            raise ValueError(
                f"{type(self).__name__}: the (padded) input of spatial shape {sizes} is smaller than the kernel {self._kernel_size}"
            )
        # One strided slice per kernel tap, each [N, ...out, C]; reduced together.
        taps = []
        for offsets in _product(self._kernel_size):
            key = (slice(None),) + tuple(
                slice(k, k + st * (o - 1) + 1, st) for k, st, o in zip(offsets, self._stride, out)
            ) + (slice(None),)
            taps.append(x[key])
        return self._reduce(mx.stack(taps, axis=0))


def _product(sizes: tuple):
    if not sizes:
        yield ()
        return
    for i in range(sizes[0]):
        for rest in _product(sizes[1:]):
            yield (i,) + rest


class _MaxPool(_Pool):
    @staticmethod
    def _pad_value(dtype):
        return -math.inf if dtype in _FLOATS else _int_min(dtype)

    @staticmethod
    def _reduce(windows: mx.array) -> mx.array:
        return mx.max(windows, axis=0)


class _AvgPool(_Pool):
    @staticmethod
    def _pad_value(dtype):
        return 0

    @staticmethod
    def _reduce(windows: mx.array) -> mx.array:
        return mx.mean(windows, axis=0)


_FLOATS = (mx.float16, mx.bfloat16, mx.float32, mx.float64)


def _int_min(dtype) -> int:
    """The smallest value of an integer (or bool) dtype."""
    signed = {mx.int8: 8, mx.int16: 16, mx.int32: 32, mx.int64: 64}
    return -(2 ** (signed[dtype] - 1)) if dtype in signed else 0


class MaxPool1d(_MaxPool):
    """Max pooling over ``[N, L, C]``."""

    _dims = 1

    def __init__(
        self, kernel_size: Union[int, Tuple[int]], stride: Optional[Union[int, Tuple[int]]] = None,
        padding: Union[int, Tuple[int]] = 0,
    ) -> None:
        super().__init__(kernel_size, stride, padding)


class MaxPool2d(_MaxPool):
    """Max pooling over ``[N, H, W, C]``."""

    _dims = 2

    def __init__(
        self, kernel_size: Union[int, Tuple[int, int]], stride: Optional[Union[int, Tuple[int, int]]] = None,
        padding: Optional[Union[int, Tuple[int, int]]] = 0,
    ) -> None:
        super().__init__(kernel_size, stride, padding)


class MaxPool3d(_MaxPool):
    """Max pooling over ``[N, D, H, W, C]``."""

    _dims = 3

    def __init__(
        self, kernel_size: Union[int, Tuple[int, int, int]], stride: Optional[Union[int, Tuple[int, int, int]]] = None,
        padding: Optional[Union[int, Tuple[int, int, int]]] = 0,
    ) -> None:
        super().__init__(kernel_size, stride, padding)


class AvgPool1d(_AvgPool):
    """Average pooling over ``[N, L, C]``."""

    _dims = 1

    def __init__(
        self, kernel_size: Union[int, Tuple[int]], stride: Optional[Union[int, Tuple[int]]] = None,
        padding: Union[int, Tuple[int]] = 0,
    ) -> None:
        super().__init__(kernel_size, stride, padding)


class AvgPool2d(_AvgPool):
    """Average pooling over ``[N, H, W, C]``."""

    _dims = 2

    def __init__(
        self, kernel_size: Union[int, Tuple[int, int]], stride: Optional[Union[int, Tuple[int, int]]] = None,
        padding: Optional[Union[int, Tuple[int, int]]] = 0,
    ) -> None:
        super().__init__(kernel_size, stride, padding)


class AvgPool3d(_AvgPool):
    """Average pooling over ``[N, D, H, W, C]``."""

    _dims = 3

    def __init__(
        self, kernel_size: Union[int, Tuple[int, int, int]], stride: Optional[Union[int, Tuple[int, int, int]]] = None,
        padding: Optional[Union[int, Tuple[int, int, int]]] = 0,
    ) -> None:
        super().__init__(kernel_size, stride, padding)
