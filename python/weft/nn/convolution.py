"""Convolution layers (``mlx.nn``): channels-last inputs ``[N, ..., C_in]``,
weights ``[C_out, ...kernel, C_in / groups]`` drawn from U(-k, k) with
k = 1/sqrt(C_in * kernel size), biases zero."""

from __future__ import annotations

import math
from typing import Union

import weft.core as mx
from weft.nn.module import Module


def _tuple(v: Union[int, tuple, list], n: int) -> tuple:
    return (v,) * n if isinstance(v, int) else tuple(v)


def _uniform_weight(in_channels: int, shape: tuple) -> mx.array:
    scale = math.sqrt(1.0 / (in_channels * math.prod(shape[1:-1])))
    return mx.random.uniform(-scale, scale, shape)


class _ConvNd(Module):
    _dims = 0

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias) -> None:
        super().__init__()
        if in_channels % groups != 0:
            raise ValueError(
                f"The number of input channels ({in_channels}) must be divisible by the number of groups ({groups})"
            )
        n = self._dims
        kernel_size = _tuple(kernel_size, n)
        self.weight = _uniform_weight(in_channels, (out_channels, *kernel_size, in_channels // groups))
        if bias:
            self.bias = mx.zeros((out_channels,))
        self.stride = stride if n == 1 else _tuple(stride, n)
        self.padding = padding if n == 1 else _tuple(padding, n)
        self.dilation = dilation
        self.groups = groups

    def _extra_repr(self) -> str:
        k = self.weight.shape[1:-1]
        ks = k[0] if self._dims == 1 else k
        groups = f"groups={self.groups}, " if self._has_groups else ""
        return (
            f"{self.weight.shape[-1] * self.groups}, {self.weight.shape[0]}, kernel_size={ks}, "
            f"stride={self.stride}, padding={self.padding}, dilation={self.dilation}, {groups}bias={'bias' in self}"
        )

    def __call__(self, x: mx.array) -> mx.array:
        y = self._conv(x, self.weight, self.stride, self.padding, self.dilation, self.groups)
        return y + self.bias if "bias" in self else y


class Conv1d(_ConvNd):
    """1-D convolution over ``[N, L, C_in]`` inputs."""

    _dims = 1
    _has_groups = True
    _conv = staticmethod(mx.conv1d)

    def __init__(
        self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0,
        dilation: int = 1, groups: int = 1, bias: bool = True,
    ) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias)


class Conv2d(_ConvNd):
    """2-D convolution over ``[N, H, W, C_in]`` inputs."""

    _dims = 2
    _has_groups = True
    _conv = staticmethod(mx.conv2d)

    def __init__(
        self, in_channels: int, out_channels: int, kernel_size: Union[int, tuple], stride: Union[int, tuple] = 1,
        padding: Union[int, tuple] = 0, dilation: Union[int, tuple] = 1, groups: int = 1, bias: bool = True,
    ) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias)


class Conv3d(_ConvNd):
    """3-D convolution over ``[N, D, H, W, C_in]`` inputs."""

    _dims = 3
    _has_groups = False
    _conv = staticmethod(mx.conv3d)

    def __init__(
        self, in_channels: int, out_channels: int, kernel_size: Union[int, tuple], stride: Union[int, tuple] = 1,
        padding: Union[int, tuple] = 0, dilation: Union[int, tuple] = 1, bias: bool = True,
    ) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, 1, bias)


class _ConvTransposeNd(Module):
    _dims = 0

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, output_padding, bias) -> None:
        super().__init__()
        n = self._dims
        kernel_size = _tuple(kernel_size, n)
        self.weight = _uniform_weight(in_channels, (out_channels, *kernel_size, in_channels))
        if bias:
            self.bias = mx.zeros((out_channels,))
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.output_padding = output_padding

    def _extra_repr(self) -> str:
        k = self.weight.shape[1:-1]
        ks = k[0] if self._dims == 1 else k
        return (
            f"{self.weight.shape[-1]}, {self.weight.shape[0]}, kernel_size={ks}, stride={self.stride}, "
            f"padding={self.padding}, dilation={self.dilation}, output_padding={self.output_padding}, "
            f"bias={'bias' in self}"
        )

    def __call__(self, x: mx.array) -> mx.array:
        y = self._conv(x, self.weight, self.stride, self.padding, self.dilation, self.output_padding)
        return y + self.bias if "bias" in self else y


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution over ``[N, L, C_in]`` inputs."""

    _dims = 1
    _conv = staticmethod(mx.conv_transpose1d)

    def __init__(
        self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0,
        dilation: int = 1, output_padding: int = 0, bias: bool = True,
    ) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, output_padding, bias)


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution over ``[N, H, W, C_in]`` inputs."""

    _dims = 2
    _conv = staticmethod(mx.conv_transpose2d)

    def __init__(
        self, in_channels: int, out_channels: int, kernel_size: Union[int, tuple], stride: Union[int, tuple] = 1,
        padding: Union[int, tuple] = 0, dilation: Union[int, tuple] = 1, output_padding: Union[int, tuple] = 0,
        bias: bool = True,
    ) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, output_padding, bias)


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution over ``[N, D, H, W, C_in]`` inputs."""

    _dims = 3
    _conv = staticmethod(mx.conv_transpose3d)

    def __init__(
        self, in_channels: int, out_channels: int, kernel_size: Union[int, tuple], stride: Union[int, tuple] = 1,
        padding: Union[int, tuple] = 0, dilation: Union[int, tuple] = 1, output_padding: Union[int, tuple] = 0,
        bias: bool = True,
    ) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, output_padding, bias)
