"""Quantized layers (``mlx.nn``'s ``QuantizedLinear``, ``QuantizedEmbedding``
and ``nn.quantize``), on ``weft.core.quantize`` / ``quantized_matmul``.
Written from MLX's documented behaviour. The weights are kept packed; the
layers' forward passes never expand them (``quantized_matmul`` reads the
codes directly, the embedding dequantizes only the rows it looks up).
Quantized layers are frozen when made, as in MLX."""

from __future__ import annotations

import math
from typing import Callable, Optional, Union

import weft.core as mx
from weft.nn.module import Module
from weft.utils import tree_map_with_path

# (group_size, bits) each mode uses when they are not given, as MLX.
_DEFAULTS = {"affine": (64, 4), "mxfp4": (32, 4), "nvfp4": (16, 4), "mxfp8": (32, 8)}


def _params(mode: str, group_size: Optional[int], bits: Optional[int]) -> tuple[int, int]:
    if mode not in _DEFAULTS:
        raise ValueError(f"Unknown quantization mode {mode!r}; the modes are {', '.join(_DEFAULTS)}")
    gs, b = _DEFAULTS[mode]
    return (gs if group_size is None else group_size, b if bits is None else bits)


def _quantize(w: mx.array, group_size: int, bits: int, mode: str):
    """``(weight, scales, biases)``; ``biases`` is None for modes without them."""
    out = mx.quantize(w, group_size, bits, mode=mode)
    return out[0], out[1], (out[2] if len(out) > 2 else None)


class QuantizedLinear(Module):
    """``y = x @ W.T + bias`` with ``W`` quantized (``group_size`` elements
    of a row share a scale and a bias; ``bits`` bits per element). The
    packed weight, scales and biases are frozen; ``bias`` is not quantized."""

    def __init__(
        self,
        input_dims: int,
        output_dims: int,
        bias: bool = True,
        group_size: Optional[int] = None,
        bits: Optional[int] = None,
        mode: str = "affine",
    ) -> None:
        super().__init__()
        self.group_size, self.bits = _params(mode, group_size, bits)
        self.mode = mode
        k = math.sqrt(1.0 / input_dims)
        w = mx.random.uniform(-k, k, (output_dims, input_dims))
        self.weight, self.scales, biases = _quantize(w, self.group_size, self.bits, mode)
        if biases is not None:
            self.biases = biases
        if bias:
            self.bias = mx.zeros((output_dims,))
        self.freeze()

    def _extra_repr(self) -> str:
        out_dims, packed = self.weight.shape
        in_dims = packed * 32 // self.bits
        return (
            f"input_dims={in_dims}, output_dims={out_dims}, bias={'bias' in self}, "
            f"group_size={self.group_size}, bits={self.bits}, mode={self.mode}"
        )

    def __call__(self, x: mx.array) -> mx.array:
        y = mx.quantized_matmul(
            x,
            self["weight"],
            scales=self["scales"],
            biases=self.get("biases"),
            transpose=True,
            group_size=self.group_size,
            bits=self.bits,
            mode=self.mode,
        )
        return y + self["bias"] if "bias" in self else y

    @classmethod
    def from_linear(
        cls, linear_layer: Module, group_size: Optional[int] = None, bits: Optional[int] = None, mode: str = "affine"
    ) -> "QuantizedLinear":
        """A ``QuantizedLinear`` holding ``linear_layer``'s weight, quantized,
        and its bias as it is."""
        output_dims, input_dims = linear_layer.weight.shape
        ql = cls(input_dims, output_dims, False, group_size, bits, mode=mode)
        ql.weight, ql.scales, biases = _quantize(linear_layer.weight, ql.group_size, ql.bits, mode)
        if biases is not None:
            ql.biases = biases
        if "bias" in linear_layer:
            ql.bias = linear_layer.bias
        return ql


class QuantizedEmbedding(Module):
    """An ``Embedding`` whose table is quantized; a lookup dequantizes only
    the rows it returns. ``as_linear`` uses the table as an output
    projection through ``quantized_matmul``."""

    def __init__(
        self,
        num_embeddings: int,
        dims: int,
        group_size: Optional[int] = None,
        bits: Optional[int] = None,
        mode: str = "affine",
    ) -> None:
        super().__init__()
        self.group_size, self.bits = _params(mode, group_size, bits)
        self.mode = mode
        self.num_embeddings = num_embeddings
        self.dims = dims
        w = mx.random.normal((num_embeddings, dims)) * math.sqrt(1.0 / dims)
        self.weight, self.scales, biases = _quantize(w, self.group_size, self.bits, mode)
        if biases is not None:
            self.biases = biases
        self.freeze()

    def _extra_repr(self) -> str:
        return (
            f"{self.num_embeddings}, {self.dims}, group_size={self.group_size}, "
            f"bits={self.bits}, mode={self.mode}"
        )

    def __call__(self, x: mx.array) -> mx.array:
        shape = x.shape
        x = x.flatten()
        biases = self.get("biases")
        out = mx.dequantize(
            self["weight"][x],
            scales=self["scales"][x],
            biases=None if biases is None else biases[x],
            group_size=self.group_size,
            bits=self.bits,
            mode=self.mode,
        )
        return out.reshape(*shape, -1)

    def as_linear(self, x: mx.array) -> mx.array:
        """``x @ table.T`` through ``quantized_matmul``."""
        return mx.quantized_matmul(
            x,
            self["weight"],
            scales=self["scales"],
            biases=self.get("biases"),
            transpose=True,
            group_size=self.group_size,
            bits=self.bits,
            mode=self.mode,
        )

    @classmethod
    def from_embedding(
        cls, embedding_layer: Module, group_size: Optional[int] = None, bits: Optional[int] = None, mode: str = "affine"
    ) -> "QuantizedEmbedding":
        """A ``QuantizedEmbedding`` holding ``embedding_layer``'s table, quantized."""
        num_embeddings, dims = embedding_layer.weight.shape
        ql = cls(num_embeddings, dims, group_size, bits, mode=mode)
        ql.weight, ql.scales, biases = _quantize(embedding_layer.weight, ql.group_size, ql.bits, mode)
        if biases is not None:
            ql.biases = biases
        return ql


def quantize(
    model: Module,
    group_size: Optional[int] = None,
    bits: Optional[int] = None,
    *,
    mode: str = "affine",
    quantize_input: bool = False,
    class_predicate: Optional[Callable[[str, Module], Union[bool, dict]]] = None,
) -> None:
    """Replaces, in place, each leaf module of ``model`` that
    ``class_predicate(path, module)`` selects (default: every module with a
    ``to_quantized`` method) by ``module.to_quantized(...)``. The predicate
    may return a dict of ``to_quantized`` arguments for that module instead
    of ``True``."""
    if class_predicate is None:
        class_predicate = lambda _, m: hasattr(m, "to_quantized")  # noqa: E731

    def maybe_quantize(path: str, m: Module) -> Module:
        chosen = class_predicate(path, m)
        if not chosen:
            return m
        if not hasattr(m, "to_quantized"):
            raise ValueError(f"Unable to quantize model of type {type(m)}")
        if isinstance(chosen, dict):
            return m.to_quantized(**chosen)
        kwargs = {"group_size": group_size, "bits": bits, "mode": mode}
        if quantize_input:
            kwargs["quantize_input"] = True
        return m.to_quantized(**kwargs)

    leaves = tree_map_with_path(maybe_quantize, model.leaf_modules(), is_leaf=Module.is_module)
    model.update_modules(leaves)
