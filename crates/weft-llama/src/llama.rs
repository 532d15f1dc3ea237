//! A Llama-family decoder (Llama 2/3, SmolLM, TinyLlama, ...) from a GGUF
//! file: RMSNorm, rotary position embeddings, grouped-query attention with a
//! KV cache, a SwiGLU MLP, and the output head (tied to the token embedding
//! when the file has no `output.weight`). Built from weft ops; computes in
//! float32.
//!
//! Weights keep GGUF's names (`blk.N.attn_q.weight`, ...). llama.cpp's
//! converter permutes the rows of the Q and K projections so that rotary
//! embeddings rotate adjacent pairs `(x[2i], x[2i+1])` (the "traditional"
//! layout), which is `fast::rope` with `traditional = true`.
//!
//! Each layer is a handful of fused ops (`weft::fast`: RMSNorm, RoPE,
//! attention) around the matmuls; the KV cache is preallocated and appended
//! to in place (`slice_update` on a buffer only the cache references).

use weft::fast::{self, Mask};
use weft::io::gguf::Gguf;
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
/// `[1, n_kv_heads, capacity, head_dim]` each, of which the first
/// [`KvCache::len`] positions are filled.
pub struct KvCache {
    layers: Vec<Option<(Array, Array)>>,
    len: usize,
}

/// The cache grows by this many positions at a time (one copy per step of
/// growth; appends in between write in place).
const CACHE_STEP: usize = 256;

impl KvCache {
    /// Positions cached.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Positions allocated (filled or not): the cache's memory is
    /// `capacity * n_layers * 2 * n_kv_heads * head_dim` floats.
    pub fn capacity(&self) -> usize {
        self.layers.first().and_then(|l| l.as_ref()).map_or(0, |(k, _)| k.shape()[2])
    }
}

/// Writes `new` (`[1, kv, T, hd]`) at positions `offset..offset + T` of the
/// cache array in `slot` (growing it when full) and returns the filled part,
/// `[1, kv, offset + T, hd]`. The old cache array is dropped from `slot`
/// before the update runs, so the update reuses its buffer.
fn append(slot: &mut Option<Array>, new: &Array, offset: usize) -> Result<Array> {
    let (kv, t, hd) = (new.shape()[1], new.shape()[2], new.shape()[3]);
    let end = offset + t;
    let cache = match slot.take() {
        Some(c) if c.shape()[2] >= end => c,
        old => {
            let capacity = end.div_ceil(CACHE_STEP) * CACHE_STEP;
            let have = old.as_ref().map_or(0, |c| c.shape()[2]);
            let room = ops::zeros(&[1, kv, capacity - have, hd], new.dtype())?;
            match old {
                Some(c) => ops::concatenate(&[c, room], 2)?,
                None => room,
            }
        }
    };
    let all = SliceArg::ALL;
    let at = [all, all, SliceArg::range(offset as isize, end as isize)];
    let cache = ops::slice_update(&cache, new, &at)?;
    let filled = ops::slice(&cache, &[all, all, SliceArg::range(0, end as isize)])?;
    *slot = Some(cache);
    Ok(filled)
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

/// Below this many rows, [`linear_rows`] runs one matrix-vector product per
/// row: for a handful of rows the CPU matmul's packing of the whole weight
/// costs more than reading the weight once per row (measured with
/// `scripts/load-test`, docs/benchmarks.md).
const GEMV_ROWS: usize = 6;

/// `linear` for the rows of a batched step.
fn linear_rows(x: &Array, w: &Array) -> Result<Array> {
    let t = x.shape()[0];
    if t == 1 || t >= GEMV_ROWS {
        return linear(x, w);
    }
    let rows = (0..t)
        .map(|i| linear(&ops::slice(x, &[SliceArg::range(i as isize, i as isize + 1)])?, w))
        .collect::<Result<Vec<_>>>()?;
    ops::concatenate(&rows, 0)
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

    /// The model with every weight converted to `dtype` and evaluated on
    /// the default stream: with a GPU default device
    /// (`weft::set_default_device(Device::gpu(0))`) the weights are uploaded
    /// once and converted there, and every forward pass reads them in device
    /// memory (the KV cache is made on the stream of the pass, so on the GPU
    /// too). One converted model serves any number of threads.
    pub fn converted(&self, dtype: Dtype) -> Result<Llama> {
        let cv = |a: &Array| -> Result<Array> {
            // `+ 0` in the target type makes a device copy even when the
            // dtype is unchanged (astype to the same dtype is the input).
            let b = ops::add(&ops::astype(a, dtype)?, &ops::astype(&Array::scalar(0.0f32), dtype)?)?;
            b.eval()?;
            Ok(b)
        };
        let token_embd = cv(&self.token_embd)?;
        let tied = self.output.id() == self.token_embd.id();
        let output = if tied { token_embd.clone() } else { cv(&self.output)? };
        let layers = self
            .layers
            .iter()
            .map(|l| {
                Ok(Layer {
                    attn_norm: cv(&l.attn_norm)?,
                    wq: cv(&l.wq)?,
                    wk: cv(&l.wk)?,
                    wv: cv(&l.wv)?,
                    wo: cv(&l.wo)?,
                    ffn_norm: cv(&l.ffn_norm)?,
                    w_gate: cv(&l.w_gate)?,
                    w_up: cv(&l.w_up)?,
                    w_down: cv(&l.w_down)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Llama { config: self.config.clone(), token_embd, layers, output_norm: cv(&self.output_norm)?, output })
    }

    /// Every weight by its GGUF name (the tied output head once, as
    /// `token_embd.weight`).
    pub fn weights(&self) -> Vec<(String, Array)> {
        let mut v = vec![("token_embd.weight".to_string(), self.token_embd.clone())];
        for (i, l) in self.layers.iter().enumerate() {
            for (n, a) in [
                ("attn_norm", &l.attn_norm),
                ("attn_q", &l.wq),
                ("attn_k", &l.wk),
                ("attn_v", &l.wv),
                ("attn_output", &l.wo),
                ("ffn_norm", &l.ffn_norm),
                ("ffn_gate", &l.w_gate),
                ("ffn_up", &l.w_up),
                ("ffn_down", &l.w_down),
            ] {
                v.push((format!("blk.{i}.{n}.weight"), a.clone()));
            }
        }
        v.push(("output_norm.weight".to_string(), self.output_norm.clone()));
        v
    }

    pub fn new_cache(&self) -> KvCache {
        KvCache { layers: vec![None; self.config.n_layers], len: 0 }
    }

    /// Runs `tokens` (the positions after those in `cache`) through the
    /// model, appending their keys and values to `cache`. Returns the logits
    /// `[vocab]` that predict the token after the last one (lazy).
    pub fn forward(&self, tokens: &[u32], cache: &mut KvCache) -> Result<Array> {
        let logits = self.forward_batch(&mut [(tokens, cache)])?;
        ops::reshape(&logits, &[self.config.vocab_size as isize])
    }

    /// One step over several sequences at once, each with its own cache:
    /// `batch[i].0` holds the tokens after those in `batch[i].1` (one token
    /// for a sequence that is decoding, a chunk of its prompt for one that
    /// is filling its cache). Returns the logits `[batch.len(), vocab]`
    /// predicting each sequence's next token (lazy).
    ///
    /// The projections and the MLP run on all the step's tokens together
    /// (one matmul per weight, so the weights are read once per step);
    /// rotary embeddings, the cache append and attention run per sequence,
    /// at that sequence's own position.
    pub fn forward_batch(&self, batch: &mut [(&[u32], &mut KvCache)]) -> Result<Array> {
        let c = &self.config;
        if batch.is_empty() {
            return Err(Error::InvalidArgument("forward_batch needs at least one sequence".into()));
        }
        let mut ids = Vec::new();
        // Row range of each sequence in the step's [T, H] activations.
        let mut rows = Vec::with_capacity(batch.len());
        for (tokens, _) in batch.iter() {
            if tokens.is_empty() {
                return Err(Error::InvalidArgument("forward needs at least one token per sequence".into()));
            }
            if let Some(&t) = tokens.iter().find(|&&t| t as usize >= c.vocab_size) {
                return Err(Error::InvalidArgument(format!("token id {t} is outside the vocabulary ({})", c.vocab_size)));
            }
            rows.push(ids.len()..ids.len() + tokens.len());
            ids.extend_from_slice(tokens);
        }
        let total = ids.len();
        let ids = Array::from_vec(ids, &[total])?;
        let mut x = ops::take(&self.token_embd, &ids, Some(0))?; // [T, H]
        let scale = 1.0 / (c.head_dim as f32).sqrt();
        let rows_of = |a: &Array, r: &std::ops::Range<usize>| -> Result<Array> {
            if r.len() == total {
                return Ok(a.clone());
            }
            ops::slice(a, &[SliceArg::range(r.start as isize, r.end as isize)])
        };
        for (l, layer) in self.layers.iter().enumerate() {
            let h = fast::rms_norm(&x, Some(&layer.attn_norm), c.rms_eps)?;
            let (q_all, k_all, v_all) = (linear_rows(&h, &layer.wq)?, linear_rows(&h, &layer.wk)?, linear_rows(&h, &layer.wv)?);
            let mut outs = Vec::with_capacity(batch.len());
            for ((_, cache), r) in batch.iter_mut().zip(&rows) {
                let (t, offset) = (r.len(), cache.len);
                let heads = |y: &Array, n: usize| -> Result<Array> {
                    let y = ops::reshape(&rows_of(y, r)?, &[1, t as isize, n as isize, c.head_dim as isize])?;
                    ops::transpose(&y, &[0, 2, 1, 3]) // [1, n, t, hd]
                };
                let rope = |a: &Array| fast::rope(a, c.head_dim, true, c.rope_base, 1.0, offset);
                let q = rope(&heads(&q_all, c.n_heads)?)?;
                let k = rope(&heads(&k_all, c.n_kv_heads)?)?;
                let v = heads(&v_all, c.n_kv_heads)?;
                let (mut ks, mut vs) = match cache.layers[l].take() {
                    Some((k, v)) => (Some(k), Some(v)),
                    None => (None, None),
                };
                let k = append(&mut ks, &k, offset)?;
                let v = append(&mut vs, &v, offset)?;
                cache.layers[l] = ks.zip(vs);
                // Grouped-query attention: query head i reads kv head i / rep.
                let mask = (t > 1).then_some(Mask::Causal);
                let out = fast::scaled_dot_product_attention(&q, &k, &v, scale, mask.as_ref())?; // [1, heads, t, hd]
                outs.push(ops::reshape(&ops::transpose(&out, &[0, 2, 1, 3])?, &[t as isize, (c.n_heads * c.head_dim) as isize])?);
            }
            let out = if outs.len() == 1 { outs.pop().unwrap() } else { ops::concatenate(&outs, 0)? };
            x = ops::add(&x, &linear_rows(&out, &layer.wo)?)?;

            let h = fast::rms_norm(&x, Some(&layer.ffn_norm), c.rms_eps)?;
            let act = ops::multiply(&ops::silu(&linear_rows(&h, &layer.w_gate)?)?, &linear_rows(&h, &layer.w_up)?)?;
            x = ops::add(&x, &linear_rows(&act, &layer.w_down)?)?;
        }
        for ((_, cache), r) in batch.iter_mut().zip(&rows) {
            cache.len += r.len();
        }
        let last: Vec<Array> = rows
            .iter()
            .map(|r| ops::slice(&x, &[SliceArg::range(r.end as isize - 1, r.end as isize)]))
            .collect::<Result<_>>()?;
        let last = if last.len() == 1 { last[0].clone() } else { ops::concatenate(&last, 0)? }; // [B, H]
        let last = fast::rms_norm(&last, Some(&self.output_norm), c.rms_eps)?;
        // Logits in float32 whatever the weights' dtype (a no-op for float32).
        ops::astype(&linear_rows(&last, &self.output)?, Dtype::F32)
    }
}
