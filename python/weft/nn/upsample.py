"""``nn.Upsample``: nearest, (multi)linear and (multi)cubic resampling of
the spatial axes of channels-last inputs, from MLX's documented behaviour.

Linear and cubic resampling are separable: each spatial axis is resampled
in turn by a ``[out, in]`` matrix of interpolation weights."""

from __future__ import annotations

import math
from typing import Callable, Literal

import weft.core as mx
from weft.nn.module import Module


_FLOATING = (mx.float16, mx.bfloat16, mx.float32, mx.float64)


def _cubic_kernel(a: float) -> Callable[[float], float]:
    """Keys' cubic convolution kernel with coefficient ``a``."""
    def k(t: float) -> float:
        t = abs(t)
        if t <= 1:
            return ((a + 2) * t - (a + 3)) * t * t + 1
        if t < 2:
            return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
        return 0.0

    return k


def _linear_kernel(t: float) -> float:
    return max(0.0, 1 - abs(t))


def _source(dst: int, n_in: int, n_out: int, scale: float, align_corners: bool) -> float:
    """The input coordinate an output index samples: the grids' ends meet
    (``align_corners``) or their centers do, samples ``1/scale`` apart."""
    if align_corners:
        return dst * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return (dst + 0.5 - n_out / 2) / scale + n_in / 2 - 0.5


def _weights(n_in: int, n_out: int, scale: float, mode: str, align_corners: bool, antialias: bool) -> list[list[float]]:
    """The ``[n_out, n_in]`` interpolation matrix of one axis."""
    rows = [[0.0] * n_in for _ in range(n_out)]
    if mode == "linear":
        kernel, support = _linear_kernel, 1
    else:
        kernel, support = _cubic_kernel(-0.5 if antialias else -0.75), 2
    if antialias:
        # As PIL: the taps inside the input, normalized; downsampling
        # stretches the kernel by 1/scale, which low-pass filters the input.
        stretch = min(scale, 1.0)
        width = support / stretch
        for dst, row in enumerate(rows):
            center = _source(dst, n_in, n_out, scale, False) + 0.5
            lo, hi = max(int(center - width + 0.5), 0), min(int(center + width + 0.5), n_in)
            for j in range(lo, hi):
                row[j] = kernel((j - center + 0.5) * stretch)
            total = sum(row)
            rows[dst] = [w / total for w in row] if total else row
        return rows
    for dst, row in enumerate(rows):
        src = _source(dst, n_in, n_out, scale, align_corners)
        if mode == "linear":
            src = max(src, 0.0)
        base = math.floor(src)
        for j in range(base - support + 1, base + support + 1):
            row[min(max(j, 0), n_in - 1)] += kernel(src - j)
    return rows


def _along(x: mx.array, axis: int, matrix: mx.array) -> mx.array:
    """``x`` with ``axis`` replaced by ``matrix @ x`` along it."""
    y = mx.moveaxis(x, axis, -1) @ matrix.T
    return mx.moveaxis(y, -1, axis)


class Upsample(Module):
    """Resamples the spatial axes (``1`` to ``ndim - 2``; the first is the
    batch and the last the features) by ``scale_factor`` (one per spatial
    axis, or one for all), to ``floor(size * scale)`` samples each.

    ``mode`` is ``"nearest"``, ``"linear"`` (bilinear, trilinear, ...) or
    ``"cubic"``. With ``align_corners`` the first and last samples of input
    and output coincide. ``antialias`` low-pass filters when downsampling
    (linear and cubic), and makes cubic use ``a = -0.5`` instead of ``-0.75``;
    it rejects ``"nearest"`` and ``align_corners``."""

    def __init__(
        self,
        scale_factor: float | tuple,
        mode: Literal["nearest", "linear", "cubic"] = "nearest",
        align_corners: bool = False,
        antialias: bool = False,
    ) -> None:
        super().__init__()
        if mode not in ("nearest", "linear", "cubic"):
            raise ValueError(f"[Upsample] Got unsupported upsampling algorithm: {mode}")
        if antialias and mode == "nearest":
            raise ValueError("[Upsample] antialias is not supported with mode='nearest'.")
        if antialias and align_corners:
            raise ValueError("[Upsample] antialias is not supported with align_corners=True.")
        if isinstance(scale_factor, (list, tuple)):
            self.scale_factor = tuple(map(float, scale_factor))
        else:
            self.scale_factor = float(scale_factor)
        self.mode, self.align_corners, self.antialias = mode, align_corners, antialias

    def _extra_repr(self) -> str:
        return f"scale_factor={self.scale_factor}, mode={self.mode!r}, align_corners={self.align_corners}"

    def __call__(self, x: mx.array) -> mx.array:
        dims = x.ndim - 2
        if dims <= 0:
            raise ValueError(f"[Upsample] The input should have at least 1 spatial dimension, got shape {x.shape}.")
        scales = self.scale_factor if isinstance(self.scale_factor, tuple) else (self.scale_factor,) * dims
        if len(scales) != dims:
            raise ValueError(f"[Upsample] One scale per spatial dimension is required but scale_factor={scales} and the number of spatial dimensions is {dims}.")
        for axis, scale in enumerate(scales, start=1):
            n_in = x.shape[axis]
            n_out = int(n_in * scale)
            if self.mode == "nearest":
                idx = [min(d * n_in // n_out, n_in - 1) for d in range(n_out)]
                x = mx.take(x, mx.array(idx, dtype=mx.int32), axis=axis)
            else:
                w = _weights(n_in, n_out, scale, self.mode, self.align_corners, self.antialias)
                if x.dtype not in _FLOATING:
                    x = x.astype(mx.float32)
                x = _along(x, axis, mx.array(w, dtype=x.dtype))
        return x
