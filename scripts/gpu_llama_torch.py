#!/usr/bin/env python3
"""SmolLM2-135M on the GPU with PyTorch + transformers, on weft's weights.

The weights come from `weft-llama`'s bench (`--dump-weights W.safetensors`:
the GGUF file's tensors dequantized to float32 under their GGUF names, with
the model's config in W.safetensors.json); the prompt token ids from its
`--ids-out ids.json`. llama.cpp's converter permuted the rows of the Q and
K projections for the "traditional" rotary layout; they are permuted back
for transformers' rotate-half layout. Prints JSON lines like the bench:

  prompt      tokens/s of one forward pass over the prompt
  decode      tokens/s of greedy decoding after it (eager, DynamicCache)
  concurrent  K generations on K threads, each on its own CUDA stream

    python3 scripts/gpu_llama_torch.py W.safetensors ids.json [--decode-tokens 64] [--ks 1,8]
"""

import argparse
import json
import threading
import time

import torch
from safetensors.torch import load_file
from transformers import LlamaConfig, LlamaForCausalLM


def unpermute(w, n_head):
    rows, cols = w.shape
    return w.reshape(n_head, rows // n_head // 2, 2, cols).transpose(1, 2).reshape(rows, cols)


def build(path, dtype):
    c = json.load(open(path + ".json"))
    cfg = LlamaConfig(
        vocab_size=c["vocab_size"], hidden_size=c["hidden"], intermediate_size=c["ffn_hidden"],
        num_hidden_layers=c["n_layers"], num_attention_heads=c["n_heads"], num_key_value_heads=c["n_kv_heads"],
        head_dim=c["head_dim"], rms_norm_eps=c["rms_eps"], rope_theta=c["rope_base"],
        max_position_embeddings=c["context_length"], tie_word_embeddings=True,
    )
    w = load_file(path)
    sd = {"model.embed_tokens.weight": w["token_embd.weight"], "model.norm.weight": w["output_norm.weight"]}
    names = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
             "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
             "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
             "ffn_down": "mlp.down_proj"}
    for i in range(c["n_layers"]):
        for g, h in names.items():
            t = w[f"blk.{i}.{g}.weight"]
            if g == "attn_q":
                t = unpermute(t, c["n_heads"])
            elif g == "attn_k":
                t = unpermute(t, c["n_kv_heads"])
            sd[f"model.layers.{i}.{h}.weight"] = t
    sd["lm_head.weight"] = sd["model.embed_tokens.weight"]
    model = LlamaForCausalLM(cfg)
    model.load_state_dict(sd, strict=True)
    model.tie_weights()
    return model.to(device="cuda", dtype=dtype).eval()


@torch.inference_mode()
def generate(model, ids, n):
    x = torch.tensor([ids], device="cuda")
    torch.cuda.synchronize()
    t = time.perf_counter()
    out = model(x, use_cache=True)
    nxt = out.logits[0, -1].argmax()
    toks = [int(nxt)]
    prompt_s = time.perf_counter() - t
    past = out.past_key_values
    t = time.perf_counter()
    for _ in range(1, n):
        out = model(nxt.view(1, 1), past_key_values=past, use_cache=True)
        past = out.past_key_values
        nxt = out.logits[0, -1].argmax()
        toks.append(int(nxt))
    return prompt_s, time.perf_counter() - t, toks


def median(v):
    return sorted(v)[len(v) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("weights")
    ap.add_argument("ids")
    ap.add_argument("--decode-tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ks", default="1,8")
    a = ap.parse_args()
    ids = json.load(open(a.ids))
    model = build(a.weights, torch.bfloat16)
    n = a.decode_tokens
    meta = {"impl": f"torch {torch.__version__} eager", "dtype": "bf16", "gpu": torch.cuda.get_device_name()}
    generate(model, ids, n)
    ps, ds, toks = zip(*[generate(model, ids, n) for _ in range(a.repeats)])
    print(json.dumps({**meta, "what": "prompt", "tokens": len(ids), "tok_s": round(len(ids) / median(ps), 2)}))
    print(json.dumps({**meta, "what": "decode", "tokens": n, "tok_s": round((n - 1) / median(ds), 2), "first_tokens": toks[-1][:8]}))
    for k in [int(x) for x in a.ks.split(",")]:
        par = []
        for _ in range(a.repeats):
            res = [None] * k

            def run(i):
                s = torch.cuda.Stream()
                with torch.cuda.stream(s):
                    res[i] = generate(model, ids, n)[2]
                s.synchronize()

            th = [threading.Thread(target=run, args=(i,)) for i in range(k)]
            t = time.perf_counter()
            for x in th:
                x.start()
            for x in th:
                x.join()
            par.append(k * n / (time.perf_counter() - t))
        print(json.dumps({**meta, "what": "concurrent", "k": k, "parallel_tok_s": round(median(par), 2)}))


if __name__ == "__main__":
    main()
