"""Layers (``mlx.nn``): written from MLX's documented behaviour."""

from __future__ import annotations

import math
from typing import Any

import weft.core as mx
from weft.nn import activations as act
from weft.nn.module import Module
from weft.nn.quantized import QuantizedEmbedding, QuantizedLinear


class Identity(Module):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def __call__(self, x: mx.array) -> mx.array:
        return x


class Linear(Module):
    """``y = x @ weight.T + bias``; weight ``[output_dims, input_dims]``
    drawn from U(-k, k), k = 1/sqrt(input_dims)."""

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True) -> None:
        super().__init__()
        k = math.sqrt(1.0 / input_dims)
        self.weight = mx.random.uniform(-k, k, (output_dims, input_dims))
        if bias:
            self.bias = mx.random.uniform(-k, k, (output_dims,))

    def _extra_repr(self) -> str:
        o, i = self.weight.shape
        return f"input_dims={i}, output_dims={o}, bias={'bias' in self}"

    def __call__(self, x: mx.array) -> mx.array:
        y = x @ self.weight.T
        return y + self.bias if "bias" in self else y

    def to_quantized(
        self, group_size: int | None = None, bits: int | None = None, mode: str = "affine", quantize_input: bool = False
    ) -> Module:
        """This layer as a ``QuantizedLinear`` (its weight quantized)."""
        if quantize_input:
            raise ValueError("weft has no QQLinear: quantize_input=True is not supported")
        return QuantizedLinear.from_linear(self, group_size, bits, mode=mode)


class Bilinear(Module):
    """``y_i = x1^T W_i x2 + b_i``."""

    def __init__(self, input1_dims: int, input2_dims: int, output_dims: int, bias: bool = True) -> None:
        super().__init__()
        k = math.sqrt(1.0 / input1_dims)
        self.weight = mx.random.uniform(-k, k, (output_dims, input2_dims, input1_dims))
        if bias:
            self.bias = mx.random.uniform(-k, k, (output_dims,))

    def __call__(self, x1: mx.array, x2: mx.array) -> mx.array:
        o, i2, i1 = self.weight.shape
        lead = x1.shape[:-1]
        x1 = x1.reshape(-1, i1)
        x2 = x2.reshape(-1, 1, i2)
        w = self.weight.reshape(o * i2, i1)
        y = (x1 @ w.T).reshape(-1, o, i2)
        y = (y * x2).sum(-1)
        if "bias" in self:
            y = y + self.bias
        return y.reshape(*lead, o)


class Embedding(Module):
    """A table of ``num_embeddings`` vectors of ``dims``, drawn from N(0, 1/dims)."""

    def __init__(self, num_embeddings: int, dims: int) -> None:
        super().__init__()
        self.weight = mx.random.normal((num_embeddings, dims)) * math.sqrt(1.0 / dims)

    def __call__(self, x: mx.array) -> mx.array:
        return mx.take(self.weight, x, axis=0)

    def as_linear(self, x: mx.array) -> mx.array:
        """``x @ weight.T``: the table as an output projection (tied weights)."""
        return x @ self.weight.T

    def to_quantized(
        self, group_size: int | None = None, bits: int | None = None, mode: str = "affine", quantize_input: bool = False
    ) -> Module:
        """This layer as a ``QuantizedEmbedding`` (its table quantized)."""
        if quantize_input:
            raise ValueError("Quantized input is not supported for Embedding")
        return QuantizedEmbedding.from_embedding(self, group_size, bits, mode=mode)


def _check_eps(eps: float) -> None:
    if not eps > 0:
        raise ValueError(f"eps must be positive, got {eps}")


class RMSNorm(Module):
    def __init__(self, dims: int, eps: float = 1e-5) -> None:
        super().__init__()
        _check_eps(eps)
        self.weight = mx.ones((dims,))
        self.eps = eps

    def __call__(self, x: mx.array) -> mx.array:
        return mx.fast.rms_norm(x, self.weight, self.eps)


class LayerNorm(Module):
    def __init__(self, dims: int, eps: float = 1e-5, affine: bool = True, bias: bool = True) -> None:
        super().__init__()
        _check_eps(eps)
        if affine:
            self.weight = mx.ones((dims,))
            if bias:
                self.bias = mx.zeros((dims,))
        self.eps = eps
        self.dims = dims

    def __call__(self, x: mx.array) -> mx.array:
        w = self.get("weight")
        b = self.get("bias")
        return mx.fast.layer_norm(x, w, b, self.eps)


class GroupNorm(Module):
    """Normalizes groups of the feature (last) axis over every other axis
    but the batch; ``pytorch_compatible`` groups contiguous features."""

    def __init__(self, num_groups: int, dims: int, eps: float = 1e-5, affine: bool = True, pytorch_compatible: bool = False) -> None:
        super().__init__()
        if num_groups <= 0 or dims <= 0 or dims % num_groups != 0:
            raise ValueError(f"dims ({dims}) must be a positive multiple of num_groups ({num_groups})")
        _check_eps(eps)
        if affine:
            self.weight = mx.ones((dims,))
            self.bias = mx.zeros((dims,))
        self.num_groups, self.dims, self.eps, self.pytorch_compatible = num_groups, dims, eps, pytorch_compatible

    def __call__(self, x: mx.array) -> mx.array:
        b, d, g = x.shape[0], x.shape[-1], self.num_groups
        rest = x.shape[1:-1]
        if self.pytorch_compatible:
            y = x.reshape(b, -1, g, d // g)
            y = mx.transpose(y, (0, 2, 1, 3)).reshape(b, g, -1)
        else:
            y = x.reshape(b, -1, d // g, g)
            y = mx.transpose(y, (0, 3, 1, 2)).reshape(b, g, -1)
        mean = mx.mean(y, axis=-1, keepdims=True)
        var = mx.var(y, axis=-1, keepdims=True)
        y = (y - mean) * mx.rsqrt(var + self.eps)
        if self.pytorch_compatible:
            y = mx.transpose(y.reshape(b, g, -1, d // g), (0, 2, 1, 3))
        else:
            y = mx.transpose(y.reshape(b, g, -1, d // g), (0, 2, 3, 1))
        y = y.reshape(b, *rest, d)
        return y * self.weight + self.bias if "weight" in self else y


class InstanceNorm(Module):
    """Normalizes each channel (the last axis) of each sample over the
    spatial axes (all but the first and last); ``affine`` adds a learned
    per-channel scale and shift."""

    def __init__(self, dims: int, eps: float = 1e-5, affine: bool = False) -> None:
        super().__init__()
        _check_eps(eps)
        if affine:
            self.weight = mx.ones((dims,))
            self.bias = mx.zeros((dims,))
        self.dims, self.eps = dims, eps

    def _extra_repr(self) -> str:
        return f"{self.dims}, eps={self.eps}, affine={'weight' in self}"

    def __call__(self, x: mx.array) -> mx.array:
        if x.ndim < 3:
            raise ValueError(f"InstanceNorm needs an input with spatial dimensions ([N, ..., C]), got shape {x.shape}")
        axes = tuple(range(1, x.ndim - 1))
        x32 = x.astype(mx.float32)  # 16-bit statistics of large maps overflow
        mean = mx.mean(x32, axis=axes, keepdims=True)
        var = mx.var(x32, axis=axes, keepdims=True)
        y = ((x32 - mean) * mx.rsqrt(var + self.eps)).astype(x.dtype)
        return y * self.weight + self.bias if "weight" in self else y


class BatchNorm(Module):
    """Normalizes each feature (the last axis) over the batch and spatial
    axes of ``NC``, ``NLC`` or ``NHWC`` inputs. In training it uses the
    batch's statistics and (``track_running_stats``) updates running ones by
    ``momentum`` (the variance unbiased); in eval mode it uses the running
    statistics. The running statistics are frozen parameters."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = True, track_running_stats: bool = True) -> None:
        super().__init__()
        _check_eps(eps)
        self.num_features, self.eps, self.momentum, self.track_running_stats = num_features, eps, momentum, track_running_stats
        if affine:
            self.weight = mx.ones((num_features,))
            self.bias = mx.zeros((num_features,))
        if track_running_stats:
            self.running_mean = mx.zeros((num_features,))
            self.running_var = mx.ones((num_features,))
            self.freeze(keys=["running_mean", "running_var"], recurse=False)

    def unfreeze(self, *args: Any, **kwargs: Any) -> "BatchNorm":
        """As ``Module.unfreeze``; the running statistics stay frozen."""
        super().unfreeze(*args, **kwargs)
        self.freeze(keys=["running_mean", "running_var"], recurse=False)
        return self

    def _extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={'weight' in self}, track_running_stats={self.track_running_stats}"
        )

    def __call__(self, x: mx.array) -> mx.array:
        if not 2 <= x.ndim <= 4:
            raise ValueError(f"Expected input with 2 to 4 dimensions, got {x.ndim}")
        axes = tuple(range(x.ndim - 1))
        if self.training or not self.track_running_stats:
            n = x.size // x.shape[-1]
            if self.training and n < 2:
                raise ValueError(f"Expected more than 1 value per channel when training, got input of shape {x.shape}")
            mean = mx.mean(x, axis=axes)
            var = mx.var(x, axis=axes)
            if self.training and self.track_running_stats:
                m = self.momentum
                self.running_mean = (1 - m) * self.running_mean + m * mx.stop_gradient(mean)
                self.running_var = (1 - m) * self.running_var + m * mx.stop_gradient(var) * (n / (n - 1))
        else:
            mean, var = self.running_mean, self.running_var
        y = (x - mean) * mx.rsqrt(var + self.eps)
        return y * self.weight + self.bias if "weight" in self else y


class Dropout(Module):
    """Zeroes each element with probability ``p`` in training (and scales
    the rest by ``1/(1-p)``); the identity in eval mode."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        if not 0 <= p < 1:
            raise ValueError(f"The dropout probability {p} is not in [0, 1)")
        self._p_1 = 1 - p

    def _extra_repr(self) -> str:
        return f"p={1 - self._p_1}"

    def _mask_shape(self, x: mx.array) -> tuple:
        return x.shape

    def __call__(self, x: mx.array) -> mx.array:
        if self._p_1 == 1 or not self.training:
            return x
        mask = mx.random.bernoulli(self._p_1, self._mask_shape(x))
        return (mask * x) * (1 / self._p_1)


class Dropout2d(Dropout):
    """Zeroes whole channels of ``NHWC`` or ``HWC`` inputs with probability
    ``p`` in training, scaling the rest by ``1/(1-p)``."""

    _spatial = 2

    def _mask_shape(self, x: mx.array) -> tuple:
        if x.ndim not in (self._spatial + 1, self._spatial + 2):
            raise ValueError(f"Received input with {x.ndim} dimensions; expected {self._spatial + 1} or {self._spatial + 2}.")
        return x.shape[: x.ndim - self._spatial - 1] + (1,) * self._spatial + x.shape[-1:]


class Dropout3d(Dropout2d):
    """Zeroes whole channels of ``NDHWC`` or ``DHWC`` inputs with probability
    ``p`` in training, scaling the rest by ``1/(1-p)``."""

    _spatial = 3


class RoPE(Module):
    def __init__(self, dims: int, traditional: bool = False, base: float = 10000, scale: float = 1.0) -> None:
        super().__init__()
        self.dims, self.traditional, self.base, self.scale = dims, traditional, base, scale

    def _extra_repr(self) -> str:
        return f"{self.dims}, traditional={self.traditional}"

    def __call__(self, x: mx.array, offset: int = 0) -> mx.array:
        return mx.fast.rope(x, self.dims, traditional=self.traditional, base=self.base, scale=self.scale, offset=offset)


class SinusoidalPositionalEncoding(Module):
    """``[sin(x w); cos(x w)] * scale`` (or cosine first) for frequencies
    ``w`` spaced geometrically from ``max_freq`` down to ``min_freq``
    (times ``2 pi`` with ``full_turns``); ``scale`` defaults to ``sqrt(2/dims)``."""

    def __init__(self, dims: int, min_freq: float = 0.0001, max_freq: float = 1, scale: float | None = None, cos_first: bool = False, full_turns: bool = False) -> None:
        super().__init__()
        if dims <= 0 or dims % 2 != 0:
            raise ValueError(f"dims must be a positive even number, got {dims}")
        half = dims // 2
        one_zero = 1 - mx.arange(0, half, dtype=mx.float32) / max(half - 1, 1)
        lo, hi = math.log(min_freq), math.log(max_freq)
        self._sigmas = mx.exp(one_zero * (hi - lo) + lo)
        if full_turns:
            self._sigmas = self._sigmas * (2 * math.pi)
        self.scale = math.sqrt(2 / dims) if scale is None else scale
        self.cos_first = cos_first

    def __call__(self, x: mx.array) -> mx.array:
        y = mx.expand_dims(x, -1) * self._sigmas
        parts = [mx.cos(y), mx.sin(y)] if self.cos_first else [mx.sin(y), mx.cos(y)]
        return mx.concatenate(parts, axis=-1) * self.scale


class ALiBi(Module):
    """Attention with Linear Biases: adds ``-slope_h * |i - j|`` to the
    scores ``[..., heads, queries, keys]`` (query ``i`` at position
    ``offset + i``), with the per-head slopes of Press et al. (2021)."""

    @staticmethod
    def _slopes(num_heads: int) -> list[float]:
        def power_of_2(n: int) -> list[float]:
            start = 2 ** (-8 / n)
            return [start ** (i + 1) for i in range(n)]

        closest = 2 ** int(math.floor(math.log2(num_heads)))
        return power_of_2(closest) + power_of_2(2 * closest)[0::2][: num_heads - closest]

    @staticmethod
    def create_alibi_matrix(q_sequence_length: int, k_sequence_length: int, num_heads: int, offset: int = 0, dtype: Any = mx.float32) -> mx.array:
        q = mx.arange(offset, offset + q_sequence_length)
        k = mx.arange(0, k_sequence_length)
        distance = mx.abs(mx.expand_dims(q, 1) - mx.expand_dims(k, 0)).astype(mx.float32)
        slopes = mx.array(ALiBi._slopes(num_heads)).reshape(num_heads, 1, 1)
        return (-distance * slopes).astype(dtype)

    def __call__(self, attention_scores: mx.array, offset: int = 0, mask: mx.array | None = None) -> mx.array:
        *_, heads, q_len, k_len = attention_scores.shape
        bias = self.create_alibi_matrix(q_len, k_len, heads, offset, attention_scores.dtype)
        if mask is not None:
            bias = bias + mask
        return attention_scores + bias.astype(attention_scores.dtype)


class MultiHeadAttention(Module):
    """Attention over ``num_heads`` heads with input and output projections."""

    def __init__(
        self,
        dims: int,
        num_heads: int,
        query_input_dims: int | None = None,
        key_input_dims: int | None = None,
        value_input_dims: int | None = None,
        value_dims: int | None = None,
        value_output_dims: int | None = None,
        bias: bool = False,
    ) -> None:
        super().__init__()
        if dims % num_heads != 0:
            raise ValueError(f"The input feature dimensions should be divisible by the number of heads ({dims} % {num_heads}) != 0")
        query_input_dims = query_input_dims or dims
        key_input_dims = key_input_dims or dims
        value_input_dims = value_input_dims or key_input_dims
        value_dims = value_dims or dims
        value_output_dims = value_output_dims or dims
        self.num_heads = num_heads
        self.query_proj = Linear(query_input_dims, dims, bias=bias)
        self.key_proj = Linear(key_input_dims, dims, bias=bias)
        self.value_proj = Linear(value_input_dims, value_dims, bias=bias)
        self.out_proj = Linear(value_dims, value_output_dims, bias=bias)

    def __call__(self, queries: mx.array, keys: mx.array, values: mx.array, mask: Any = None) -> mx.array:
        q, k, v = self.query_proj(queries), self.key_proj(keys), self.value_proj(values)
        h = self.num_heads
        b, l, _ = q.shape
        s = k.shape[1]
        q = mx.transpose(q.reshape(b, l, h, -1), (0, 2, 1, 3))
        k = mx.transpose(k.reshape(b, s, h, -1), (0, 2, 3, 1))
        v = mx.transpose(v.reshape(b, s, h, -1), (0, 2, 1, 3))
        scale = math.sqrt(1.0 / q.shape[-1])
        scores = (q * scale) @ k
        if mask is not None:
            scores = scores + mask.astype(scores.dtype) if mask.dtype != mx.bool_ else mx.where(mask, scores, -math.inf)
        out = mx.softmax(scores, axis=-1) @ v
        out = mx.transpose(out, (0, 2, 1, 3)).reshape(b, l, -1)
        return self.out_proj(out)

    @staticmethod
    def create_additive_causal_mask(N: int, dtype: Any = mx.float32) -> mx.array:
        """``[N, N]``: 0 where a query may attend (keys not after it), a large
        negative number elsewhere (-1e9, which is ``-inf`` in 16-bit floats)."""
        idx = mx.arange(N)
        mask = mx.expand_dims(idx, 1) < mx.expand_dims(idx, 0)
        return mx.where(mask, -1e9, 0.0).astype(dtype)


class Sequential(Module):
    """Calls its layers in order."""

    def __init__(self, *modules: Any) -> None:
        super().__init__()
        self.layers = list(modules)

    def __call__(self, x: mx.array) -> mx.array:
        for m in self.layers:
            x = m(x)
        return x


def _activation(fn: Any, name: str) -> type:
    def __init__(self: Module) -> None:
        Module.__init__(self)

    def __call__(self: Module, x: mx.array) -> mx.array:
        return fn(x)

    return type(name, (Module,), {"__init__": __init__, "__call__": __call__, "__doc__": f"The ``{fn.__name__}`` activation as a module."})


ReLU = _activation(act.relu, "ReLU")
ReLU6 = _activation(act.relu6, "ReLU6")
SiLU = _activation(act.silu, "SiLU")
Sigmoid = _activation(act.sigmoid, "Sigmoid")
Tanh = _activation(act.tanh, "Tanh")
Mish = _activation(act.mish, "Mish")
Softplus = _activation(act.softplus, "Softplus")
Softsign = _activation(act.softsign, "Softsign")
LogSigmoid = _activation(act.log_sigmoid, "LogSigmoid")
SELU = _activation(act.selu, "SELU")
Hardswish = _activation(act.hardswish, "Hardswish")
HardTanh = _activation(act.hard_tanh, "HardTanh")


class GELU(Module):
    def __init__(self, approx: str = "none") -> None:
        super().__init__()
        fns = {"none": act.gelu, "precise": act.gelu_approx, "tanh": act.gelu_approx, "fast": act.gelu_fast_approx}
        if approx not in fns:
            raise ValueError(f"The approximation should be in {list(fns)} but '{approx}' was given")
        self._act = fns[approx]

    def __call__(self, x: mx.array) -> mx.array:
        return self._act(x)


class LeakyReLU(Module):
    def __init__(self, negative_slope: float = 1e-2) -> None:
        super().__init__()
        self._slope = negative_slope

    def __call__(self, x: mx.array) -> mx.array:
        return act.leaky_relu(x, self._slope)


class ELU(Module):
    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__()
        self._alpha = alpha

    def __call__(self, x: mx.array) -> mx.array:
        return act.elu(x, self._alpha)


class CELU(Module):
    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__()
        self._alpha = alpha

    def __call__(self, x: mx.array) -> mx.array:
        return act.celu(x, self._alpha)


class Softmax(Module):
    def __call__(self, x: mx.array) -> mx.array:
        return mx.softmax(x, axis=-1)


class LogSoftmax(Module):
    def __call__(self, x: mx.array) -> mx.array:
        return act.log_softmax(x)


class GLU(Module):
    def __init__(self, axis: int = -1) -> None:
        super().__init__()
        self._axis = axis

    def __call__(self, x: mx.array) -> mx.array:
        return act.glu(x, self._axis)


class PReLU(Module):
    def __init__(self, num_parameters: int = 1, init: float = 0.25) -> None:
        super().__init__()
        self.weight = mx.full((num_parameters,), init)

    def __call__(self, x: mx.array) -> mx.array:
        return act.prelu(x, self.weight)


class HardShrink(Module):
    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self._lambd = lambd

    def __call__(self, x: mx.array) -> mx.array:
        return act.hard_shrink(x, self._lambd)


class Softshrink(Module):
    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self._lambd = lambd

    def __call__(self, x: mx.array) -> mx.array:
        return act.softshrink(x, self._lambd)


class Step(Module):
    def __init__(self, threshold: float = 0.0) -> None:
        super().__init__()
        self._threshold = threshold

    def __call__(self, x: mx.array) -> mx.array:
        return act.step(x, self._threshold)
