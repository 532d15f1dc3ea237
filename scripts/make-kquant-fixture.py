#!/usr/bin/env python3
"""Writes crates/weft/tests/fixtures/kquants.gguf: random Q4_K, Q5_K and Q6_K
tensors and, beside each, its values as decoded by gguf-py (llama.cpp's own
Python package, an implementation independent of weft's), which
crates/weft/tests/gguf.rs compares weft's decoder against bit for bit.

Run: pip install gguf numpy && python3 scripts/make-kquant-fixture.py
"""
import pathlib

import numpy as np
from gguf import GGMLQuantizationType as T, GGUFWriter
from gguf.constants import GGML_QUANT_SIZES
from gguf.quants import dequantize

OUT = pathlib.Path(__file__).resolve().parent.parent / "crates/weft/tests/fixtures/kquants.gguf"
ROWS, COLS = 3, 512  # two super-blocks per row


def random_blocks(rng, ty, n_blocks):
    """Random bytes, with each super-block's float16 scales set to finite values."""
    _, size = GGML_QUANT_SIZES[ty]
    b = rng.integers(0, 256, size=(n_blocks, size), dtype=np.uint8)
    scale = lambda: rng.uniform(-0.05, 0.05, size=(n_blocks, 1)).astype(np.float16).view(np.uint8)
    if ty in (T.Q4_K, T.Q5_K):  # d, dmin first
        b[:, 0:2] = scale()
        b[:, 2:4] = scale()
    elif ty == T.Q6_K:  # d last
        b[:, size - 2 : size] = scale()
    return b


def main():
    rng = np.random.default_rng(7)
    w = GGUFWriter(str(OUT), "kquant-fixture")
    for ty in (T.Q4_K, T.Q5_K, T.Q6_K):
        n_blocks = ROWS * COLS // 256
        raw = random_blocks(rng, ty, n_blocks).reshape(ROWS, -1)
        name = ty.name.lower()
        w.add_tensor(name, raw, raw_dtype=ty)
        want = dequantize(raw, ty).astype(np.float32).reshape(ROWS, COLS)
        w.add_tensor(name + ".expected", want)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
