"""Recurrent layers (``mlx.nn``): inputs ``[N, L, D]`` or ``[L, D]``; the
output holds the hidden state after every step, ``[N, L, H]`` (``[L, H]``).
Weights and biases are drawn from U(-k, k), k = 1/sqrt(hidden_size)."""

from __future__ import annotations

import math
from typing import Callable, Optional

import weft.core as mx
from weft.nn.module import Module


def _uniform(scale: float, shape: tuple) -> mx.array:
    return mx.random.uniform(-scale, scale, shape)


def _check_input(name: str, x: mx.array, input_size: int) -> None:
    if x.ndim not in (2, 3) or x.shape[-1] != input_size:
        raise ValueError(f"{name} expects inputs of shape [N, L, {input_size}] or [L, {input_size}], got {x.shape}")


class RNN(Module):
    """Elman recurrence: ``h_t = nonlinearity(x_t Wxh^T + h_{t-1} Whh^T + bias)``
    (``tanh`` by default)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: Optional[Callable] = None) -> None:
        super().__init__()
        self.nonlinearity = nonlinearity or mx.tanh
        if not callable(self.nonlinearity):
            raise ValueError(f"Nonlinearity must be callable. Current value: {nonlinearity}.")
        self.hidden_size = hidden_size
        scale = 1.0 / math.sqrt(hidden_size)
        self.Wxh = _uniform(scale, (hidden_size, input_size))
        self.Whh = _uniform(scale, (hidden_size, hidden_size))
        if bias:
            self.bias = _uniform(scale, (hidden_size,))

    def _extra_repr(self) -> str:
        return (
            f"input_dims={self.Wxh.shape[1]}, hidden_size={self.hidden_size}, "
            f"nonlinearity={self.nonlinearity}, bias={'bias' in self}"
        )

    def __call__(self, x: mx.array, hidden: Optional[mx.array] = None) -> mx.array:
        _check_input("RNN", x, self.Wxh.shape[1])
        x = x @ self.Wxh.T + self.bias if "bias" in self else x @ self.Wxh.T
        states = []
        for t in range(x.shape[-2]):
            h = x[..., t, :]
            if hidden is not None:
                h = h + hidden @ self.Whh.T
            hidden = self.nonlinearity(h)
            states.append(hidden)
        return mx.stack(states, axis=-2)


class GRU(Module):
    """Gated recurrent unit: gates ``r, z = sigmoid(x Wx_rz^T + b_rz + h Wh_rz^T)``,
    candidate ``n = tanh(x Wx_n^T + b_n + r * (h Wh_n^T + bhn))``, then
    ``h = (1 - z) * n + z * h``. A missing initial state is zeros."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        scale = 1.0 / math.sqrt(hidden_size)
        self.Wx = _uniform(scale, (3 * hidden_size, input_size))
        self.Wh = _uniform(scale, (3 * hidden_size, hidden_size))
        if bias:
            self.b = _uniform(scale, (3 * hidden_size,))
            self.bhn = _uniform(scale, (hidden_size,))

    def _extra_repr(self) -> str:
        return f"input_dims={self.Wx.shape[1]}, hidden_size={self.hidden_size}, bias={'b' in self}"

    def __call__(self, x: mx.array, hidden: Optional[mx.array] = None) -> mx.array:
        _check_input("GRU", x, self.Wx.shape[1])
        H = self.hidden_size
        x = x @ self.Wx.T + self.b if "b" in self else x @ self.Wx.T
        if hidden is None:
            hidden = mx.zeros((*x.shape[:-2], H), x.dtype)
        x_rz, x_n = x[..., : 2 * H], x[..., 2 * H :]
        states = []
        for t in range(x.shape[-2]):
            h_proj = hidden @ self.Wh.T
            h_rz, h_n = h_proj[..., : 2 * H], h_proj[..., 2 * H :]
            if "bhn" in self:
                h_n = h_n + self.bhn
            rz = mx.sigmoid(x_rz[..., t, :] + h_rz)
            r, z = rz[..., :H], rz[..., H:]
            n = mx.tanh(x_n[..., t, :] + r * h_n)
            hidden = (1 - z) * n + z * hidden
            states.append(hidden)
        return mx.stack(states, axis=-2)


class LSTM(Module):
    """Long short-term memory: ``i, f, g, o`` from ``x Wx^T + h Wh^T + bias``
    (sigmoid, sigmoid, tanh, sigmoid); ``c = f * c + i * g``,
    ``h = o * tanh(c)``. Returns the hidden and the cell states of every
    step."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        scale = 1.0 / math.sqrt(hidden_size)
        self.Wx = _uniform(scale, (4 * hidden_size, input_size))
        self.Wh = _uniform(scale, (4 * hidden_size, hidden_size))
        if bias:
            self.bias = _uniform(scale, (4 * hidden_size,))

    def _extra_repr(self) -> str:
        return f"input_dims={self.Wx.shape[1]}, hidden_size={self.hidden_size}, bias={'bias' in self}"

    def __call__(
        self, x: mx.array, hidden: Optional[mx.array] = None, cell: Optional[mx.array] = None
    ) -> tuple[mx.array, mx.array]:
        _check_input("LSTM", x, self.Wx.shape[1])
        H = self.hidden_size
        x = x @ self.Wx.T + self.bias if "bias" in self else x @ self.Wx.T
        hs, cs = [], []
        for t in range(x.shape[-2]):
            ifgo = x[..., t, :]
            if hidden is not None:
                ifgo = ifgo + hidden @ self.Wh.T
            i = mx.sigmoid(ifgo[..., :H])
            f = mx.sigmoid(ifgo[..., H : 2 * H])
            g = mx.tanh(ifgo[..., 2 * H : 3 * H])
            o = mx.sigmoid(ifgo[..., 3 * H :])
            cell = f * cell + i * g if cell is not None else i * g
            hidden = o * mx.tanh(cell)
            hs.append(hidden)
            cs.append(cell)
        return mx.stack(hs, axis=-2), mx.stack(cs, axis=-2)
