"""The Transformer of "Attention Is All You Need" (``mlx.nn.Transformer``
and its encoder and decoder stacks), from MLX's documented behaviour."""

from __future__ import annotations

from typing import Any, Callable

import weft.core as mx
from weft.nn.activations import relu
from weft.nn.layers import Dropout, LayerNorm, Linear, MultiHeadAttention
from weft.nn.module import Module
from weft.nn.utils import checkpoint as _checkpoint


class _MLP(Module):
    """Shared by the layers: ``linear2(dropout(activation(linear1(x))))``."""

    def _init_mlp(self, dims: int, mlp_dims: int | None, activation: Callable) -> None:
        mlp_dims = mlp_dims or 4 * dims
        self.linear1 = Linear(dims, mlp_dims)
        self.linear2 = Linear(mlp_dims, dims)
        self.activation = activation

    def _mlp(self, x: mx.array, dropout: Dropout) -> mx.array:
        return self.linear2(dropout(self.activation(self.linear1(x))))


class TransformerEncoderLayer(_MLP):
    """Self-attention then an MLP, each in a residual branch; ``norm_first``
    normalizes each branch's input (pre-norm), otherwise each residual sum
    (post-norm). Dropout follows the attention and the MLP's activation."""

    def __init__(self, dims: int, num_heads: int, mlp_dims: int | None = None, dropout: float = 0.0, activation: Callable[[Any], Any] = relu, norm_first: bool = True) -> None:
        super().__init__()
        self.attention = MultiHeadAttention(dims, num_heads)
        self.ln1 = LayerNorm(dims)
        self.ln2 = LayerNorm(dims)
        self._init_mlp(dims, mlp_dims, activation)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.norm_first = norm_first

    def __call__(self, x: mx.array, mask: Any) -> mx.array:
        if self.norm_first:
            y = self.ln1(x)
            x = x + self.dropout1(self.attention(y, y, y, mask))
            return x + self._mlp(self.ln2(x), self.dropout2)
        x = self.ln1(x + self.dropout1(self.attention(x, x, x, mask)))
        return self.ln2(x + self._mlp(x, self.dropout2))


class TransformerDecoderLayer(_MLP):
    """Self-attention over the targets, cross-attention to the encoder's
    ``memory``, then an MLP, each in a residual branch (pre- or post-norm as
    ``norm_first`` says)."""

    def __init__(self, dims: int, num_heads: int, mlp_dims: int | None = None, dropout: float = 0.0, activation: Callable[[Any], Any] = relu, norm_first: bool = True) -> None:
        super().__init__()
        self.self_attention = MultiHeadAttention(dims, num_heads)
        self.cross_attention = MultiHeadAttention(dims, num_heads)
        self.ln1 = LayerNorm(dims)
        self.ln2 = LayerNorm(dims)
        self.ln3 = LayerNorm(dims)
        self._init_mlp(dims, mlp_dims, activation)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.norm_first = norm_first

    def __call__(self, x: mx.array, memory: mx.array, x_mask: Any, memory_mask: Any) -> mx.array:
        if self.norm_first:
            y = self.ln1(x)
            x = x + self.dropout1(self.self_attention(y, y, y, x_mask))
            y = self.ln2(x)
            x = x + self.dropout2(self.cross_attention(y, memory, memory, memory_mask))
            return x + self._mlp(self.ln3(x), self.dropout3)
        x = self.ln1(x + self.dropout1(self.self_attention(x, x, x, x_mask)))
        x = self.ln2(x + self.dropout2(self.cross_attention(x, memory, memory, memory_mask)))
        return self.ln3(x + self._mlp(x, self.dropout3))


class _Stack(Module):
    """``num_layers`` layers then a final ``LayerNorm``; ``checkpoint``
    recomputes each layer's intermediates in the backward pass."""

    def _init_stack(self, layers: list, dims: int, checkpoint: bool) -> None:
        self.layers = layers
        self.ln = LayerNorm(dims)
        self.checkpoint = checkpoint

    def _run(self, x: mx.array, *args: Any) -> mx.array:
        for layer in self.layers:
            x = _checkpoint(layer)(x, *args) if self.checkpoint else layer(x, *args)
        return self.ln(x)


class TransformerEncoder(_Stack):
    def __init__(self, num_layers: int, dims: int, num_heads: int, mlp_dims: int | None = None, dropout: float = 0.0, activation: Callable[[Any], Any] = relu, norm_first: bool = True, checkpoint: bool = False) -> None:
        super().__init__()
        layers = [TransformerEncoderLayer(dims, num_heads, mlp_dims, dropout, activation, norm_first) for _ in range(num_layers)]
        self._init_stack(layers, dims, checkpoint)

    def __call__(self, x: mx.array, mask: Any) -> mx.array:
        return self._run(x, mask)


class TransformerDecoder(_Stack):
    def __init__(self, num_layers: int, dims: int, num_heads: int, mlp_dims: int | None = None, dropout: float = 0.0, activation: Callable[[Any], Any] = relu, norm_first: bool = True, checkpoint: bool = False) -> None:
        super().__init__()
        layers = [TransformerDecoderLayer(dims, num_heads, mlp_dims, dropout, activation, norm_first) for _ in range(num_layers)]
        self._init_stack(layers, dims, checkpoint)

    def __call__(self, x: mx.array, memory: mx.array, x_mask: Any, memory_mask: Any) -> mx.array:
        return self._run(x, memory, x_mask, memory_mask)


class Transformer(Module):
    """An encoder over the source and a decoder over the target that attends
    to the encoder's output; ``custom_encoder``/``custom_decoder`` replace
    the standard stacks (called as ``encoder(src, src_mask)`` and
    ``decoder(tgt, memory, tgt_mask, memory_mask)``)."""

    def __init__(
        self,
        dims: int = 512,
        num_heads: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        mlp_dims: int | None = None,
        dropout: float = 0.0,
        activation: Callable[[Any], Any] = relu,
        custom_encoder: Any = None,
        custom_decoder: Any = None,
        norm_first: bool = True,
        checkpoint: bool = False,
    ) -> None:
        super().__init__()
        common = (dims, num_heads, mlp_dims, dropout, activation, norm_first, checkpoint)
        self.encoder = custom_encoder if custom_encoder is not None else TransformerEncoder(num_encoder_layers, *common)
        self.decoder = custom_decoder if custom_decoder is not None else TransformerDecoder(num_decoder_layers, *common)

    def __call__(self, src: mx.array, tgt: mx.array, src_mask: Any, tgt_mask: Any, memory_mask: Any) -> mx.array:
        memory = self.encoder(src, src_mask)
        return self.decoder(tgt, memory, tgt_mask, memory_mask)
