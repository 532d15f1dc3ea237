//! Throughput of a Llama-family GGUF model on weft, for
//! `scripts/bench-llama.py` (which runs MLX on the same token ids beside it).
//!
//! ```text
//! cargo run --release -p weft-llama --example bench -- [--model FILE.gguf]
//!     [--prompt-tokens 128] [--decode-tokens 64] [--repeats 3] [--max-k 3]
//!     [--ids-out ids.json] [--device cpu|gpu] [--dtype f32|bf16|f16] [--ks 1,8]
//!     [--dump-weights FILE.safetensors] [--weights quantized|f32] [--int8 on|off] [--graph]
//! ```
//! Prints one JSON object per line:
//! - `prompt`: tokens/s of one forward pass over the prompt;
//! - `decode`: tokens/s of greedy decoding after the prompt;
//! - `concurrent`: K generations (prompt + decode each) on K threads, every
//!   thread on the same thread-local stream object, against the same K run
//!   one after another on one thread; decoded tokens/s over all K.
//!
//! Each figure is the median of `--repeats` runs after one warm-up.
//!
//! `--device gpu` converts the weights to `--dtype` on `Device::gpu(0)` once
//! (the default stream is the GPU's), and every thread of the concurrent
//! runs uses its own GPU stream. `--ks` lists the K of the concurrent runs
//! (default `1..=max-k`). `--dump-weights` writes the float32 weights under
//! their GGUF names (for `scripts/gpu_llama_torch.py`). `--weights f32`
//! expands the file's quantized weights to float32 at load (default: kept
//! quantized, as `Llama::from_gguf` does). `--int8 on|off` turns the
//! quantized weights' int8 activations for decode steps on or off
//! (`Llama::with_int8_activations`; default: the model's default).
//! `--graph` (GPU) also decodes with each step one CUDA graph launch
//! (`weft_llama::GraphDecoder`) and prints a `decode_graph` line, and a
//! `concurrent_graph` line per K (K threads, each with its own graph).

use std::time::Instant;
use weft::io::gguf::Gguf;
use weft::{Device, Dtype, Stream};
use weft_llama::{GraphDecoder, Llama, Sampler, Tokenizer};

#[path = "../tests/common/mod.rs"]
mod common;

const TEXT: &str = "The quick brown fox jumps over the lazy dog. Streams and arrays that work \
                    from any thread, correctly and in parallel, on the CPU and on GPUs. ";

struct Args {
    model: Option<String>,
    prompt_tokens: usize,
    decode_tokens: usize,
    repeats: usize,
    max_k: usize,
    ids_out: Option<String>,
    device: Device,
    dtype: Dtype,
    ks: Option<Vec<usize>>,
    dump: Option<String>,
    float32_weights: bool,
    int8: Option<bool>,
    graph: bool,
}

fn parse() -> Result<Args, Box<dyn std::error::Error>> {
    let mut a = Args { model: None, prompt_tokens: 128, decode_tokens: 64, repeats: 3, max_k: 3, ids_out: None, device: Device::cpu(), dtype: Dtype::F32, ks: None, dump: None, float32_weights: false, int8: None, graph: false };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--model" => a.model = Some(value()?),
            "--prompt-tokens" => a.prompt_tokens = value()?.parse()?,
            "--decode-tokens" => a.decode_tokens = value()?.parse()?,
            "--repeats" => a.repeats = value()?.parse()?,
            "--max-k" => a.max_k = value()?.parse()?,
            "--ids-out" => a.ids_out = Some(value()?),
            "--weights" => {
                a.float32_weights = match value()?.as_str() {
                    "quantized" => false,
                    "f32" => true,
                    w => return Err(format!("--weights is quantized or f32, got {w}").into()),
                }
            }
            "--device" => {
                a.device = match value()?.as_str() {
                    "cpu" => Device::cpu(),
                    "gpu" => Device::gpu(0),
                    d => return Err(format!("--device is cpu or gpu, got {d}").into()),
                }
            }
            "--dtype" => {
                a.dtype = match value()?.as_str() {
                    "f32" => Dtype::F32,
                    "bf16" => Dtype::BF16,
                    "f16" => Dtype::F16,
                    d => return Err(format!("--dtype is f32, bf16 or f16, got {d}").into()),
                }
            }
            "--ks" => a.ks = Some(value()?.split(',').map(|k| k.parse()).collect::<Result<_, _>>()?),
            "--dump-weights" => a.dump = Some(value()?),
            "--graph" => a.graph = true,
            "--int8" => {
                a.int8 = Some(match value()?.as_str() {
                    "on" => true,
                    "off" => false,
                    v => return Err(format!("--int8 is on or off, got {v}").into()),
                })
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    Ok(a)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Seconds for the prompt pass and for `n` greedy decode steps.
fn generate(model: &Llama, ids: &[u32], n: usize) -> weft::Result<(f64, f64, Vec<u32>)> {
    let mut cache = model.new_cache();
    let mut sampler = Sampler::greedy();
    let t = Instant::now();
    let mut next = sampler.sample(&model.forward(ids, &mut cache)?)?;
    let prompt_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut out = vec![next];
    for _ in 1..n {
        next = sampler.sample(&model.forward(&[next], &mut cache)?)?;
        out.push(next);
    }
    Ok((prompt_s, t.elapsed().as_secs_f64(), out))
}

/// Greedy decoding of `n` tokens after `ids` with each step one CUDA graph
/// launch: returns decode seconds and the tokens. The graph is recorded
/// on the first call (into `graph`) and reused after.
fn generate_graph(model: &Llama, ids: &[u32], n: usize, graph: &mut Option<GraphDecoder>) -> weft::Result<(f64, Vec<u32>)> {
    let mut cache = model.new_cache();
    let mut sampler = Sampler::greedy();
    let mut next = sampler.sample(&model.forward(ids, &mut cache)?)?;
    let g = match graph {
        Some(g) => {
            g.restart(model, &cache)?;
            g
        }
        None => {
            let t = Instant::now();
            let g = graph.insert(GraphDecoder::new(model, &cache, ids.len() + n + 1)?);
            eprintln!("decode step recorded as a CUDA graph in {:.2} s", t.elapsed().as_secs_f64());
            g
        }
    };
    let t = Instant::now();
    let mut out = vec![next];
    for _ in 1..n {
        next = sampler.sample(&g.step(next)?)?;
        out.push(next);
    }
    Ok((t.elapsed().as_secs_f64(), out))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse()?;
    let path = match args.model.clone() {
        Some(m) => m,
        None => common::smollm2_path().map_err(|e| format!("no model: pass --model FILE.gguf, or {e}"))?.display().to_string(),
    };
    let file = Gguf::open(&path)?;
    let tok = Tokenizer::from_gguf(&file)?;
    let model = if args.float32_weights { Llama::from_gguf_float32(&file)? } else { Llama::from_gguf(&file)? };
    let model = match args.int8 {
        Some(on) => model.with_int8_activations(on),
        None => model,
    };
    eprintln!("int8 activations: {}", if model.int8_activations() { "on" } else { "off" });
    drop(file);
    eprintln!("weights: {}", if model.is_quantized() { "quantized as in the file" } else { "float32" });
    if let Some(f) = &args.dump {
        let w = model.weights()?;
        weft::io::save_safetensors(f, w.iter().map(|(n, a)| (n.as_str(), a)))?;
        let c = &model.config;
        let cfg = serde_json::json!({
            "vocab_size": c.vocab_size, "hidden": c.hidden, "n_layers": c.n_layers, "n_heads": c.n_heads,
            "n_kv_heads": c.n_kv_heads, "head_dim": c.head_dim, "ffn_hidden": c.ffn_hidden,
            "rope_base": c.rope_base, "rms_eps": c.rms_eps, "context_length": c.context_length,
        });
        std::fs::write(format!("{f}.json"), cfg.to_string())?;
        eprintln!("wrote {} weights to {f} (config in {f}.json)", w.len());
    }
    let model = if args.device != Device::cpu() || args.dtype != Dtype::F32 {
        weft::set_default_device(args.device)?;
        let t = Instant::now();
        let m = model.converted(args.dtype)?;
        eprintln!("weights converted to {} on {} in {:.2} s", args.dtype, args.device, t.elapsed().as_secs_f64());
        m
    } else {
        model
    };

    let mut ids = Vec::new();
    while ids.len() < args.prompt_tokens {
        ids.extend(tok.encode(TEXT)?);
    }
    ids.truncate(args.prompt_tokens);
    if let Some(f) = &args.ids_out {
        std::fs::write(f, serde_json::to_string(&ids)?)?;
    }
    let (p, n) = (args.prompt_tokens, args.decode_tokens);

    generate(&model, &ids, n)?; // warm-up
    let (mut prompt, mut decode) = (vec![], vec![]);
    let mut tokens = vec![];
    for _ in 0..args.repeats {
        let (ps, ds, out) = generate(&model, &ids, n)?;
        prompt.push(p as f64 / ps);
        decode.push((n - 1) as f64 / ds);
        tokens = out;
    }
    let dev = format!("{}", args.device);
    let dt = args.dtype;
    println!(r#"{{"impl": "weft", "device": "{dev}", "dtype": "{dt}", "what": "prompt", "tokens": {p}, "tok_s": {:.2}}}"#, median(prompt));
    println!(r#"{{"impl": "weft", "device": "{dev}", "dtype": "{dt}", "what": "decode", "tokens": {n}, "tok_s": {:.2}, "first_tokens": {:?}}}"#, median(decode), &tokens[..tokens.len().min(8)]);
    if args.graph {
        let mut graph = None;
        generate_graph(&model, &ids, n, &mut graph)?; // records the graph
        let mut rates = vec![];
        let mut graph_tokens = vec![];
        for _ in 0..args.repeats {
            let (ds, out) = generate_graph(&model, &ids, n, &mut graph)?;
            rates.push((n - 1) as f64 / ds);
            graph_tokens = out;
        }
        let same = graph_tokens.iter().zip(&tokens).take_while(|(a, b)| a == b).count();
        println!(r#"{{"impl": "weft", "device": "{dev}", "dtype": "{dt}", "what": "decode_graph", "tokens": {n}, "tok_s": {:.2}, "first_tokens": {:?}, "same_tokens_as_decode": {same}}}"#, median(rates), &graph_tokens[..graph_tokens.len().min(8)]);
    }

    // K generations: K threads on one thread-local stream object (each
    // thread gets its own queue), against the same K one after another.
    let local = Stream::new_thread_local(args.device)?;
    let ks: Vec<usize> = args.ks.clone().unwrap_or_else(|| (1..=args.max_k).collect());
    for &k in &ks {
        let (mut par, mut ser) = (vec![], vec![]);
        for _ in 0..args.repeats {
            let t = Instant::now();
            let outs: Vec<Vec<u32>> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..k)
                    .map(|_| s.spawn(|| weft::with_stream(local, || generate(&model, &ids, n)).map(|r| r.2)))
                    .collect();
                handles.into_iter().map(|h| h.join().expect("generation thread panicked")).collect::<weft::Result<_>>()
            })?;
            par.push((k * n) as f64 / t.elapsed().as_secs_f64());
            assert!(outs.iter().all(|o| *o == tokens), "a concurrent generation differs from the single-thread one");

            let t = Instant::now();
            for _ in 0..k {
                generate(&model, &ids, n)?;
            }
            ser.push((k * n) as f64 / t.elapsed().as_secs_f64());
        }
        let (par, ser) = (median(par), median(ser));
        println!(r#"{{"impl": "weft", "device": "{dev}", "dtype": "{dt}", "what": "concurrent", "k": {k}, "parallel_tok_s": {par:.2}, "serial_tok_s": {ser:.2}, "speedup": {:.2}}}"#, par / ser);
    }
    if args.graph {
        // The same K generations with graph decoding: each thread records its
        // own graph once (its own private stream), then the timed runs.
        for &k in &ks {
            let mut graphs: Vec<Option<GraphDecoder>> = (0..k).map(|_| None).collect();
            let (mut rates, mut same) = (vec![], n);
            for round in 0..=args.repeats {
                let t = Instant::now();
                let outs: Vec<Vec<u32>> = std::thread::scope(|s| {
                    let handles: Vec<_> = graphs
                        .iter_mut()
                        .map(|g| s.spawn(|| weft::with_stream(local, || generate_graph(&model, &ids, n, g)).map(|r| r.1)))
                        .collect();
                    handles.into_iter().map(|h| h.join().expect("generation thread panicked")).collect::<weft::Result<_>>()
                })?;
                for o in &outs {
                    same = same.min(o.iter().zip(&tokens).take_while(|(a, b)| a == b).count());
                }
                if round > 0 {
                    rates.push((k * n) as f64 / t.elapsed().as_secs_f64());
                }
            }
            println!(r#"{{"impl": "weft", "device": "{dev}", "dtype": "{dt}", "what": "concurrent_graph", "k": {k}, "parallel_tok_s": {:.2}, "same_tokens_as_decode": {same}}}"#, median(rates));
        }
    }
    Ok(())
}
