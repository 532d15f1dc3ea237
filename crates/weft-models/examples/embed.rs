//! Sentence embeddings with all-MiniLM-L6-v2.
//!
//! ```text
//! cargo run --release -p weft-models --example embed -- [--device cpu|gpu] [--out emb.json] "first sentence" "second one"
//! ```
//! Reads sentences from the arguments (or one per line on stdin), prints
//! the first values of each embedding and the throughput in sentences/s.
//! `--device gpu` loads the weights onto `Device::gpu(0)` once and runs
//! every batch there; `--out` writes the embeddings as a JSON list of lists
//! (`scripts/gpu-minilm-run` compares them with sentence-transformers').

use std::io::{BufRead, Write};
use std::time::Instant;
use weft::Device;
use weft_models::bert::SentenceEmbedder;

#[path = "../tests/common/mod.rs"]
mod common;
use common::minilm_dir;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut device = Device::cpu();
    let mut out = None;
    while args.first().is_some_and(|a| a.starts_with("--")) {
        let flag = args.remove(0);
        let value = if args.is_empty() { return Err(format!("{flag} needs a value").into()) } else { args.remove(0) };
        match flag.as_str() {
            "--device" => {
                device = match value.as_str() {
                    "cpu" => Device::cpu(),
                    "gpu" => Device::gpu(0),
                    d => return Err(format!("--device is cpu or gpu, got {d}").into()),
                }
            }
            "--out" => out = Some(value),
            f => return Err(format!("unknown flag {f} (--device, --out)").into()),
        }
    }
    // The weights are converted, and every pass runs, on the default device.
    weft::set_default_device(device)?;
    let mut sentences = args;
    if sentences.is_empty() {
        sentences = std::io::stdin().lock().lines().collect::<Result<_, _>>()?;
    }
    if sentences.is_empty() {
        sentences = vec!["weft runs transformers on the CPU.".into(), "A sentence to embed.".into()];
    }
    let dir = minilm_dir()?;
    let t = Instant::now();
    let model = SentenceEmbedder::load(&dir)?;
    eprintln!("loaded {} in {:.2?}", dir.display(), t.elapsed());
    let refs: Vec<&str> = sentences.iter().map(String::as_str).collect();
    let batch = std::env::var("WEFT_BATCH").ok().and_then(|b| b.parse().ok()).unwrap_or(32);
    let emb = model.embed(&refs, batch)?;
    for (s, e) in sentences.iter().zip(&emb) {
        println!("{:>8.4?} ... {s}", &e[..4]);
    }
    if let Some(path) = out {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path)?);
        serde_json::to_writer(&mut f, &emb)?;
        f.flush()?;
    }
    // Throughput: repeat until about two seconds have passed.
    let (t, mut n) = (Instant::now(), 0);
    while t.elapsed().as_secs_f64() < 2.0 {
        model.embed(&refs, batch)?;
        n += refs.len();
    }
    println!("{:.1} sentences/s (batch {batch}, {device})", n as f64 / t.elapsed().as_secs_f64());
    Ok(())
}
