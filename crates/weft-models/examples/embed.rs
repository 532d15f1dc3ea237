//! Sentence embeddings with all-MiniLM-L6-v2.
//!
//! ```text
//! cargo run --release -p weft-models --example embed -- "first sentence" "second one"
//! ```
//! Reads sentences from the arguments (or one per line on stdin), prints
//! the first values of each embedding and the throughput in sentences/s.

use std::io::BufRead;
use std::time::Instant;
use weft_models::bert::SentenceEmbedder;

#[path = "../tests/common/mod.rs"]
mod common;
use common::minilm_dir;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut sentences: Vec<String> = std::env::args().skip(1).collect();
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
    // Throughput: repeat until about two seconds have passed.
    let (t, mut n) = (Instant::now(), 0);
    while t.elapsed().as_secs_f64() < 2.0 {
        model.embed(&refs, batch)?;
        n += refs.len();
    }
    println!("{:.1} sentences/s (batch {batch})", n as f64 / t.elapsed().as_secs_f64());
    Ok(())
}
