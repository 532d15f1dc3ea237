"""Layers (``mlx.nn``): written from MLX's documented behaviour."""

from __future__ import annotations

import math
from typing import Any

import weft.core as mx
from weft.nn import activations as act
from weft.nn.module import Module


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


class RMSNorm(Module):
    def __init__(self, dims: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.weight = mx.ones((dims,))
        self.eps = eps

    def __call__(self, x: mx.array) -> mx.array:
        return mx.fast.rms_norm(x, self.weight, self.eps)


class LayerNorm(Module):
    def __init__(self, dims: int, eps: float = 1e-5, affine: bool = True, bias: bool = True) -> None:
        super().__init__()
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


class Dropout(Module):
    """Zeroes each element with probability ``p`` in training (and scales
    the rest by ``1/(1-p)``); the identity in eval mode."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        if not 0 <= p < 1:
            raise ValueError(f"The dropout probability {p} is not in [0, 1)")
        self._p_1 = 1 - p

    def __call__(self, x: mx.array) -> mx.array:
        if self._p_1 == 1 or not self.training:
            return x
        mask = mx.random.bernoulli(self._p_1, x.shape)
        return (mask * x) * (1 / self._p_1)


class RoPE(Module):
    def __init__(self, dims: int, traditional: bool = False, base: float = 10000, scale: float = 1.0) -> None:
        super().__init__()
        self.dims, self.traditional, self.base, self.scale = dims, traditional, base, scale

    def _extra_repr(self) -> str:
        return f"{self.dims}, traditional={self.traditional}"

    def __call__(self, x: mx.array, offset: int = 0) -> mx.array:
        return mx.fast.rope(x, self.dims, traditional=self.traditional, base=self.base, scale=self.scale, offset=offset)


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
        idx = mx.arange(N)
        mask = mx.expand_dims(idx, 1) < mx.expand_dims(idx, 0)
        return mask.astype(dtype) * -1e9


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


class Step(Module):
    def __init__(self, threshold: float = 0.0) -> None:
        super().__init__()
        self._threshold = threshold

    def __call__(self, x: mx.array) -> mx.array:
        return act.step(x, self._threshold)
