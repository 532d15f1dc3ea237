//! A Llama-family decoder (Llama 2/3, SmolLM, TinyLlama, ...) from a GGUF
//! file: RMSNorm, rotary position embeddings, grouped-query attention with a
//! KV cache, a SwiGLU MLP, and the output head (tied to the token embedding
//! when the file has no `output.weight`). Built from weft ops; computes in
//! float32.
//!
//! Weights keep GGUF's names (`blk.N.attn_q.weight`, ...). llama.cpp's
//! converter permutes the rows of the Q and K projections so that rotary
//! embeddings rotate adjacent pairs `(x[2i], x[2i+1])` (the "traditional"
//! layout); [`rope`] does exactly that.

use crate::nn;
use weft::gguf::Gguf;
use weft::ops::{self, SliceArg};
use weft::{Array, Dtype, Error, Result};

/// Hyperparameters, from the file's `<arch>.*` metadata.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub vocab_size: usize,
    pub hidden: usize,
    pub n_layers: usize,
    pub n_heads: usize,
    pub n_kv_heads: usize,
    pub head_dim: usize,
    pub ffn_hidden: usize,
    pub rope_base: f32,
    pub rms_eps: f32,
    pub context_length: usize,
}

impl Config {
    pub fn from_gguf(file: &Gguf) -> Result<Config> {
        let arch = file.get_str("general.architecture")?;
        if arch != "llama" {
            return Err(Error::InvalidArgument(format!("architecture {arch:?} is not a Llama-family model")));
        }
        let u = |k: &str| -> Result<usize> { Ok(file.get_u64(&format!("{arch}.{k}"))? as usize) };
        let hidden = u("embedding_length")?;
        let n_heads = u("attention.head_count")?;
        let n_kv_heads = file.get_u64(&format!("{arch}.attention.head_count_kv")).map(|v| v as usize).unwrap_or(n_heads);
        if n_heads == 0 || n_kv_heads == 0 || hidden % n_heads != 0 || n_heads % n_kv_heads != 0 {
            return Err(Error::InvalidArgument(format!(
                "inconsistent heads: hidden {hidden}, {n_heads} heads, {n_kv_heads} kv heads"
            )));
        }
        let head_dim = hidden / n_heads;
        if head_dim % 2 != 0 {
            return Err(Error::InvalidArgument(format!("head dimension {head_dim} is odd")));
        }
        let vocab_size = match file.get_u64(&format!("{arch}.vocab_size")) {
            Ok(v) => v as usize,
            Err(_) => file.get_str_array("tokenizer.ggml.tokens")?.len(),
        };
        Ok(Config {
            vocab_size,
            hidden,
            n_layers: u("block_count")?,
            n_heads,
            n_kv_heads,
            head_dim,
            ffn_hidden: u("feed_forward_length")?,
            rope_base: file.get_f64(&format!("{arch}.rope.freq_base")).unwrap_or(10000.0) as f32,
            rms_eps: file.get_f64(&format!("{arch}.attention.layer_norm_rms_epsilon"))? as f32,
            context_length: u("context_length").unwrap_or(2048),
        })
    }
}

struct Layer {
    attn_norm: Array,
    wq: Array,
    wk: Array,
    wv: Array,
    wo: Array,
    ffn_norm: Array,
    w_gate: Array,
    w_up: Array,
    w_down: Array,
}

/// Keys and values of the positions seen so far, per layer:
/// `[n_kv_heads, positions, head_dim]` each.
pub struct KvCache {
    layers: Vec<Option<(Array, Array)>>,
    len: usize,
}

impl KvCache {
    /// Positions cached.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The model: weights as evaluated float32 arrays.
pub struct Llama {
    pub config: Config,
    token_embd: Array,
    layers: Vec<Layer>,
    output_norm: Array,
    /// `[vocab, hidden]`: `output.weight`, or the token embedding when tied.
    output: Array,
}

/// `x @ w^T` for a weight stored `[out, in]`.
fn linear(x: &Array, w: &Array) -> Result<Array> {
    ops::matmul(x, &ops::transpose(w, &[])?)
}

impl Llama {
    /// Loads every weight of `file`, dequantized to float32.
    pub fn from_gguf(file: &Gguf) -> Result<Llama> {
        let config = Config::from_gguf(file)?;
        let c = &config;
        let load = |name: &str, shape: &[usize]| -> Result<Array> {
            let a = file.tensor(name, Dtype::F32)?;
            if a.shape() != shape {
                return Err(Error::Shape(format!("{name} has shape {:?}, expected {shape:?}", a.shape())));
            }
            Ok(a)
        };
        let (h, q, kv, f) = (c.hidden, c.n_heads * c.head_dim, c.n_kv_heads * c.head_dim, c.ffn_hidden);
        let token_embd = load("token_embd.weight", &[c.vocab_size, h])?;
        let layers = (0..c.n_layers)
            .map(|i| {
                let w = |n: &str, shape: &[usize]| load(&format!("blk.{i}.{n}.weight"), shape);
                Ok(Layer {
                    attn_norm: w("attn_norm", &[h])?,
                    wq: w("attn_q", &[q, h])?,
                    wk: w("attn_k", &[kv, h])?,
                    wv: w("attn_v", &[kv, h])?,
                    wo: w("attn_output", &[h, q])?,
                    ffn_norm: w("ffn_norm", &[h])?,
                    w_gate: w("ffn_gate", &[f, h])?,
                    w_up: w("ffn_up", &[f, h])?,
                    w_down: w("ffn_down", &[h, f])?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let output = match file.tensor_info("output.weight") {
            Some(_) => load("output.weight", &[c.vocab_size, h])?,
            None => token_embd.clone(),
        };
        Ok(Llama { output_norm: load("output_norm.weight", &[h])?, token_embd, layers, output, config })
    }

    pub fn new_cache(&self) -> KvCache {
        KvCache { layers: vec![None; self.config.n_layers], len: 0 }
    }

    /// Runs `tokens` (the positions after those in `cache`) through the
    /// model, appending their keys and values to `cache`. Returns the logits
    /// `[vocab]` that predict the token after the last one (lazy).
    pub fn forward(&self, tokens: &[u32], cache: &mut KvCache) -> Result<Array> {
        let c = &self.config;
        if tokens.is_empty() {
            return Err(Error::InvalidArgument("forward needs at least one token".into()));
        }
        if let Some(&t) = tokens.iter().find(|&&t| t as usize >= c.vocab_size) {
            return Err(Error::InvalidArgument(format!("token id {t} is outside the vocabulary ({})", c.vocab_size)));
        }
        let (t, offset) = (tokens.len(), cache.len);
        let mut x = nn::embed(&self.token_embd, tokens)?; // [T, H]
        let (cos, sin) = nn::rope_tables(offset, t, c.head_dim, c.rope_base)?;
        let mask = if t > 1 { Some(nn::causal_mask(t, offset)?) } else { None };
        let scale = Array::scalar(1.0 / (c.head_dim as f32).sqrt());
        let rep = c.n_heads / c.n_kv_heads;
        for (layer, slot) in self.layers.iter().zip(cache.layers.iter_mut()) {
            let h = nn::rms_norm(&x, &layer.attn_norm, c.rms_eps)?;
            let heads = |w: &Array, n: usize| -> Result<Array> {
                let y = ops::reshape(&linear(&h, w)?, &[t as isize, n as isize, c.head_dim as isize])?;
                ops::transpose(&y, &[1, 0, 2]) // [n, T, hd]
            };
            let q = nn::rope(&heads(&layer.wq, c.n_heads)?, &cos, &sin)?;
            let k = nn::rope(&heads(&layer.wk, c.n_kv_heads)?, &cos, &sin)?;
            let v = heads(&layer.wv, c.n_kv_heads)?;
            let (k, v) = match slot.take() {
                None => (k, v),
                Some((pk, pv)) => (ops::concatenate(&[pk, k], 1)?, ops::concatenate(&[pv, v], 1)?),
            };
            *slot = Some((k.clone(), v.clone()));
            let s = offset + t;
            // Query heads sharing a kv head sit together: [kv, rep * T, hd].
            let q = ops::reshape(&q, &[c.n_kv_heads as isize, (rep * t) as isize, c.head_dim as isize])?;
            let scores = ops::multiply(&ops::matmul(&q, &ops::transpose(&k, &[0, 2, 1])?)?, &scale)?;
            let scores = ops::reshape(&scores, &[c.n_kv_heads as isize, rep as isize, t as isize, s as isize])?;
            let scores = match &mask {
                Some(m) => ops::add(&scores, m)?,
                None => scores,
            };
            let probs = nn::softmax_last(&scores)?;
            let probs = ops::reshape(&probs, &[c.n_kv_heads as isize, (rep * t) as isize, s as isize])?;
            let out = ops::matmul(&probs, &v)?; // [kv, rep * T, hd] = [heads, T, hd]
            let out = ops::reshape(&out, &[c.n_heads as isize, t as isize, c.head_dim as isize])?;
            let out = ops::reshape(&ops::transpose(&out, &[1, 0, 2])?, &[t as isize, (c.n_heads * c.head_dim) as isize])?;
            x = ops::add(&x, &linear(&out, &layer.wo)?)?;

            let h = nn::rms_norm(&x, &layer.ffn_norm, c.rms_eps)?;
            let act = ops::multiply(&nn::silu(&linear(&h, &layer.w_gate)?)?, &linear(&h, &layer.w_up)?)?;
            x = ops::add(&x, &linear(&act, &layer.w_down)?)?;
        }
        cache.len += t;
        let last = ops::slice(&x, &[SliceArg::range(t as isize - 1, t as isize)])?;
        let last = nn::rms_norm(&last, &self.output_norm, c.rms_eps)?;
        ops::reshape(&linear(&last, &self.output)?, &[c.vocab_size as isize])
    }
}
