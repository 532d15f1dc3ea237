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
use weft::ops::{self, QuantizedMatrix, SliceArg};
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

/// A weight matrix `[out, in]`: float, or quantized as the file stores it.
#[derive(Clone)]
enum Weight {
    Dense(Array),
    Quantized(QuantizedMatrix),
}

impl Weight {
    fn shape(&self) -> Vec<usize> {
        match self {
            Weight::Dense(a) => a.shape().to_vec(),
            Weight::Quantized(q) => q.shape().to_vec(),
        }
    }

    /// `x @ w^T` for the rows of `x` (`[T, in]`); with `int8`, a quantized
    /// weight on the CPU takes steps of at most [`INT8_MAX_ROWS`] rows with
    /// int8 activations.
    fn linear(&self, x: &Array, int8: bool) -> Result<Array> {
        match self {
            Weight::Dense(w) => linear_rows(x, w),
            Weight::Quantized(q) if int8 && x.shape()[0] <= INT8_MAX_ROWS && q.w.device().is_cpu() => q.matmul_t_int8(x),
            Weight::Quantized(q) => q.matmul_t(x),
        }
    }

    /// Rows `ids` in `dtype`: an embedding lookup.
    fn rows(&self, ids: &Array, dtype: Dtype) -> Result<Array> {
        match self {
            Weight::Dense(w) => ops::astype(&ops::take(w, ids, Some(0))?, dtype),
            Weight::Quantized(q) => q.rows(ids, dtype),
        }
    }

    /// The matrix in float32 (lazy; expands a quantized one).
    fn float32(&self) -> Result<Array> {
        match self {
            Weight::Dense(w) => ops::astype(w, Dtype::F32),
            Weight::Quantized(q) => q.dequantize(Dtype::F32),
        }
    }

    fn converted(&self, dtype: Dtype) -> Result<Weight> {
        Ok(match self {
            Weight::Dense(a) => Weight::Dense(convert(a, dtype)?),
            Weight::Quantized(q) => Weight::Quantized(q.converted(dtype)?),
        })
    }

    /// Rows `start..start + n` of the matrix (lazy).
    fn part(&self, start: usize, n: usize) -> Result<Weight> {
        let rows = [SliceArg::range(start as isize, (start + n) as isize)];
        Ok(match self {
            Weight::Dense(a) => Weight::Dense(ops::slice(a, &rows)?),
            Weight::Quantized(q) => Weight::Quantized(QuantizedMatrix::new(
                ops::slice(&q.w, &rows)?,
                ops::slice(&q.scales, &rows)?,
                ops::slice(&q.biases, &rows)?,
                q.group_size,
                q.bits,
            )?),
        })
    }
}

/// Projections of one input (query, key and value; gate and up): their
/// rows stacked into one matrix when they are stored alike, so a step runs
/// one product for all of them (one pass of the kernel, one rounding of
/// `x` to int8, one task split) and splits its columns after; each its own
/// matrix when they are not (e.g. a file with `attn_v` in another format).
#[derive(Clone)]
enum Projections {
    /// The stacked matrix (evaluated) and each part's row count.
    Stacked(Weight, Vec<usize>),
    Separate(Vec<Weight>),
}

impl Projections {
    /// Stacks `parts` when [`stacked`] can (evaluating the stacked matrix,
    /// so the parts' own arrays can be dropped).
    fn new(parts: Vec<Weight>) -> Result<Projections> {
        let refs: Vec<&Weight> = parts.iter().collect();
        Ok(match stacked(&refs)? {
            Some(all) => {
                match &all {
                    Weight::Dense(a) => a.eval()?,
                    Weight::Quantized(q) => weft::eval(&[q.w.clone(), q.scales.clone(), q.biases.clone()])?,
                }
                Projections::Stacked(all, parts.iter().map(|w| w.shape()[0]).collect())
            }
            None => Projections::Separate(parts),
        })
    }

    /// `x @ w^T` for each part (`[T, in]` each `[T, out_i]`, lazy).
    fn linear(&self, x: &Array, int8: bool) -> Result<Vec<Array>> {
        match self {
            Projections::Separate(parts) => parts.iter().map(|w| w.linear(x, int8)).collect(),
            Projections::Stacked(all, sizes) => {
                let y = all.linear(x, int8)?;
                row_ranges(sizes).map(|(start, end)| ops::slice(&y, &[SliceArg::ALL, SliceArg::range(start as isize, end as isize)])).collect()
            }
        }
    }

    /// Each part as its own matrix (lazy row slices of a stacked one).
    fn parts(&self) -> Result<Vec<Weight>> {
        match self {
            Projections::Separate(parts) => Ok(parts.clone()),
            Projections::Stacked(all, sizes) => row_ranges(sizes).map(|(start, end)| all.part(start, end - start)).collect(),
        }
    }

    /// The matrices as they are kept (one when stacked).
    fn stored(&self) -> Vec<&Weight> {
        match self {
            Projections::Separate(parts) => parts.iter().collect(),
            Projections::Stacked(all, _) => vec![all],
        }
    }

    fn converted(&self, dtype: Dtype) -> Result<Projections> {
        Ok(match self {
            Projections::Separate(parts) => Projections::Separate(parts.iter().map(|w| w.converted(dtype)).collect::<Result<_>>()?),
            Projections::Stacked(all, sizes) => Projections::Stacked(all.converted(dtype)?, sizes.clone()),
        })
    }
}

/// Each stacked part's rows, `start..end`, from the parts' row counts.
fn row_ranges(sizes: &[usize]) -> impl Iterator<Item = (usize, usize)> + '_ {
    sizes.iter().scan(0, |start, &n| {
        let range = (*start, *start + n);
        *start += n;
        Some(range)
    })
}

/// `N` arrays from a vector known to hold `N` (the parts of [`Projections`]).
fn array_of<const N: usize>(v: Vec<Array>) -> Result<[Array; N]> {
    let got = v.len();
    <[Array; N]>::try_from(v).map_err(|_| Error::Internal(format!("expected {N} projections, got {got}")))
}

/// `a` in `dtype`, copied to the default device and evaluated there.
fn convert(a: &Array, dtype: Dtype) -> Result<Array> {
    let b = ops::copy_as(a, dtype)?;
    b.eval()?;
    Ok(b)
}

#[derive(Clone)]
struct Layer {
    attn_norm: Array,
    /// `attn_q`, `attn_k`, `attn_v`.
    qkv: Projections,
    wo: Weight,
    ffn_norm: Array,
    /// `ffn_gate`, `ffn_up`.
    gate_up: Projections,
    w_down: Weight,
}

impl Layer {
    /// The weight matrices by their GGUF names (stacked ones split, lazily).
    fn matrices(&self) -> Result<Vec<(&'static str, Weight)>> {
        let mut v = Vec::with_capacity(7);
        v.extend(["attn_q", "attn_k", "attn_v"].into_iter().zip(self.qkv.parts()?));
        v.push(("attn_output", self.wo.clone()));
        v.extend(["ffn_gate", "ffn_up"].into_iter().zip(self.gate_up.parts()?));
        v.push(("ffn_down", self.w_down.clone()));
        Ok(v)
    }

    /// The weight matrices as they are kept in memory.
    fn stored(&self) -> Vec<&Weight> {
        let mut v = self.qkv.stored();
        v.push(&self.wo);
        v.extend(self.gate_up.stored());
        v.push(&self.w_down);
        v
    }
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

/// Up to this many rows (a decode step, or a batched step of a few
/// sequences), quantized projections on the CPU run with int8 activations
/// when the model has them on ([`Llama::with_int8_activations`]): the rows
/// a decode step of a few sequences. Longer steps (batches of more
/// sequences, prompts) stay in float: from 4 rows on, the float row kernel
/// is as fast as the integer one (`qmm_rows` in docs/benchmarks.md), and
/// rounding `x` would cost accuracy for no time.
const INT8_MAX_ROWS: usize = 8;

/// Whether a loaded model starts with int8 activations on.
const INT8_DEFAULT: bool = false;

/// The model: its weights, evaluated (float32 or quantized as in the file).
/// A clone shares the weights' arrays (no copy).
#[derive(Clone)]
pub struct Llama {
    pub config: Config,
    token_embd: Weight,
    layers: Vec<Layer>,
    output_norm: Array,
    /// `[vocab, hidden]`: `output.weight`, or the token embedding when tied.
    output: Weight,
    /// Whether `output` is `token_embd` (tied).
    tied: bool,
    /// Whether short steps round activations to int8 for quantized weights.
    int8_activations: bool,
}

/// Rotary embedding of `x` (`[.., D]`) in the traditional layout: each
/// adjacent pair `(x[2i], x[2i + 1])` turned by the angle whose cosine and
/// sine are `cos[i]`, `sin[i]` (`[D / 2]`, `x`'s dtype). One elementwise
/// chain (a single kernel under `compile`): with `p` the pairs `[.., D/2, 2]`
/// and `r` the same pairs read swapped (a reversed view), the result is
/// `p * cos + r * sin * (-1, 1)`.
fn rotate_pairs(x: &Array, cos: &Array, sin: &Array) -> Result<Array> {
    let shape: Vec<isize> = x.shape().iter().map(|&s| s as isize).collect();
    let nd = shape.len();
    let mut pairs_shape = shape.clone();
    pairs_shape[nd - 1] /= 2;
    pairs_shape.push(2);
    let p = ops::reshape(x, &pairs_shape)?;
    let mut swap = vec![SliceArg::ALL; nd + 1];
    swap[nd] = SliceArg::new(None, None, -1);
    let r = ops::slice(&p, &swap)?;
    let sign = ops::astype(&Array::from_vec(vec![-1.0f32, 1.0], &[2])?, x.dtype())?;
    let (c, s) = (ops::expand_dims(cos, -1isize)?, ops::expand_dims(sin, -1isize)?);
    let y = ops::add(&ops::multiply(&p, &c)?, &ops::multiply(&ops::multiply(&r, &s)?, &sign)?)?;
    ops::reshape(&y, &shape)
}

/// One matrix of the rows of `parts` (all quantized alike, or all dense),
/// so one product computes the three projections or the gate and up ones;
/// `None` when they are stored differently. Lazy.
fn stacked(parts: &[&Weight]) -> Result<Option<Weight>> {
    let dense: Vec<&Array> = parts.iter().filter_map(|w| if let Weight::Dense(a) = w { Some(a) } else { None }).collect();
    if dense.len() == parts.len() {
        return Ok(Some(Weight::Dense(ops::concatenate(&dense.into_iter().cloned().collect::<Vec<_>>(), 0)?)));
    }
    let q: Vec<&QuantizedMatrix> = parts.iter().filter_map(|w| if let Weight::Quantized(q) = w { Some(q) } else { None }).collect();
    if q.len() != parts.len() || q.iter().any(|m| (m.bits, m.group_size) != (q[0].bits, q[0].group_size)) {
        return Ok(None);
    }
    let cat = |f: fn(&QuantizedMatrix) -> &Array| ops::concatenate(&q.iter().map(|m| f(m).clone()).collect::<Vec<_>>(), 0);
    let m = QuantizedMatrix::new(cat(|m| &m.w)?, cat(|m| &m.scales)?, cat(|m| &m.biases)?, q[0].group_size, q[0].bits)?;
    Ok(Some(Weight::Quantized(m)))
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
    /// Loads `file`'s weights: the block-quantized ones (`Q4_0`, `Q4_1`, `Q4_K`, `Q5_K`,
    /// `Q8_0`) kept quantized, the rest as float32.
    pub fn from_gguf(file: &Gguf) -> Result<Llama> {
        Llama::load(file, true)
    }

    /// Loads every weight of `file` dequantized to float32.
    pub fn from_gguf_float32(file: &Gguf) -> Result<Llama> {
        Llama::load(file, false)
    }

    fn load(file: &Gguf, keep_quantized: bool) -> Result<Llama> {
        let config = Config::from_gguf(file)?;
        let c = &config;
        let check = |name: &str, got: Vec<usize>, shape: &[usize]| -> Result<()> {
            if got != shape {
                return Err(Error::Shape(format!("{name} has shape {got:?}, expected {shape:?}")));
            }
            Ok(())
        };
        let dense = |name: &str, shape: &[usize]| -> Result<Array> {
            let a = file.tensor(name, Dtype::F32)?;
            check(name, a.shape().to_vec(), shape)?;
            Ok(a)
        };
        let matrix = |name: &str, shape: &[usize]| -> Result<Weight> {
            let w = match keep_quantized.then(|| file.quantized(name)).transpose()?.flatten() {
                Some(q) => Weight::Quantized(q),
                None => Weight::Dense(file.tensor(name, Dtype::F32)?),
            };
            check(name, w.shape(), shape)?;
            Ok(w)
        };
        let (h, q, kv, f) = (c.hidden, c.n_heads * c.head_dim, c.n_kv_heads * c.head_dim, c.ffn_hidden);
        let token_embd = matrix("token_embd.weight", &[c.vocab_size, h])?;
        let layers = (0..c.n_layers)
            .map(|i| {
                let name = |n: &str| format!("blk.{i}.{n}.weight");
                let w = |n: &str, shape: &[usize]| matrix(&name(n), shape);
                Ok(Layer {
                    attn_norm: dense(&name("attn_norm"), &[h])?,
                    qkv: Projections::new(vec![w("attn_q", &[q, h])?, w("attn_k", &[kv, h])?, w("attn_v", &[kv, h])?])?,
                    wo: w("attn_output", &[h, q])?,
                    ffn_norm: dense(&name("ffn_norm"), &[h])?,
                    gate_up: Projections::new(vec![w("ffn_gate", &[f, h])?, w("ffn_up", &[f, h])?])?,
                    w_down: w("ffn_down", &[h, f])?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let (output, tied) = match file.tensor_info("output.weight") {
            Some(_) => (matrix("output.weight", &[c.vocab_size, h])?, false),
            None => (token_embd.clone(), true),
        };
        let int8_activations = INT8_DEFAULT;
        Ok(Llama { output_norm: dense("output_norm.weight", &[h])?, token_embd, layers, output, tied, config, int8_activations })
    }

    /// The model with int8 activations on or off: when on, steps of at most
    /// 8 rows (decoding) multiply the quantized weights on the CPU with
    /// `x` rounded to int8 per block of 32 (`QuantizedMatrix::matmul_t_int8`,
    /// integer dot products like llama.cpp's), an approximation of the float
    /// product. Prompts, float weights and GPU weights are unaffected.
    pub fn with_int8_activations(mut self, on: bool) -> Llama {
        self.int8_activations = on;
        self
    }

    /// Whether int8 activations are on ([`Llama::with_int8_activations`]).
    pub fn int8_activations(&self) -> bool {
        self.int8_activations
    }

    /// Whether any weight is kept quantized.
    pub fn is_quantized(&self) -> bool {
        let quantized = |w: &Weight| matches!(w, Weight::Quantized(_));
        quantized(&self.token_embd)
            || quantized(&self.output)
            || self.layers.iter().any(|l| l.stored().into_iter().any(quantized))
    }

    /// The model with every float weight (and every quantized weight's
    /// scales and biases) converted to `dtype` and evaluated on the default
    /// stream: with a GPU default device
    /// (`weft::set_default_device(Device::gpu(0))`) the weights are uploaded
    /// once and converted there, and every forward pass reads them in device
    /// memory (the KV cache is made on the stream of the pass, so on the GPU
    /// too). One converted model serves any number of threads.
    pub fn converted(&self, dtype: Dtype) -> Result<Llama> {
        let token_embd = self.token_embd.converted(dtype)?;
        let output = if self.tied { token_embd.clone() } else { self.output.converted(dtype)? };
        let layers = self
            .layers
            .iter()
            .map(|l| {
                Ok(Layer {
                    attn_norm: convert(&l.attn_norm, dtype)?,
                    qkv: l.qkv.converted(dtype)?,
                    wo: l.wo.converted(dtype)?,
                    ffn_norm: convert(&l.ffn_norm, dtype)?,
                    gate_up: l.gate_up.converted(dtype)?,
                    w_down: l.w_down.converted(dtype)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Llama {
            config: self.config.clone(),
            token_embd,
            layers,
            output_norm: convert(&self.output_norm, dtype)?,
            output,
            tied: self.tied,
            int8_activations: self.int8_activations,
        })
    }

    /// Every weight by its GGUF name, in float32 (quantized ones expanded;
    /// lazy), the tied output head once, as `token_embd.weight`.
    pub fn weights(&self) -> Result<Vec<(String, Array)>> {
        let mut v = vec![("token_embd.weight".to_string(), self.token_embd.float32()?)];
        for (i, l) in self.layers.iter().enumerate() {
            for (n, a) in l.matrices()? {
                v.push((format!("blk.{i}.{n}.weight"), a.float32()?));
            }
            v.push((format!("blk.{i}.attn_norm.weight"), ops::astype(&l.attn_norm, Dtype::F32)?));
            v.push((format!("blk.{i}.ffn_norm.weight"), ops::astype(&l.ffn_norm, Dtype::F32)?));
        }
        v.push(("output_norm.weight".to_string(), ops::astype(&self.output_norm, Dtype::F32)?));
        if !self.tied {
            v.push(("output.weight".to_string(), self.output.float32()?));
        }
        Ok(v)
    }

    /// The keys and values of `cache` in the layout of [`Llama::static_step`]:
    /// `[n_layers, n_kv_heads, capacity, head_dim]` each, the cached
    /// positions first and zeros after them (evaluated, on the current
    /// stream). Fails when `capacity` is shorter than the cache.
    pub fn static_cache(&self, cache: &KvCache, capacity: usize) -> Result<(Array, Array)> {
        let c = &self.config;
        if capacity < cache.len || capacity == 0 {
            return Err(Error::InvalidArgument(format!("a static cache of {capacity} positions cannot hold {} cached ones", cache.len)));
        }
        let dtype = self.output_norm.dtype();
        let all = SliceArg::ALL;
        let filled = [all, all, SliceArg::range(0, cache.len as isize)];
        let pad = |a: Option<&Array>| -> Result<Array> {
            let room = ops::zeros(&[1, c.n_kv_heads, capacity - cache.len, c.head_dim], dtype)?;
            match a {
                Some(a) if cache.len > 0 => ops::concatenate(&[ops::astype(&ops::slice(a, &filled)?, dtype)?, room], 2),
                _ => Ok(room),
            }
        };
        let mut keys = Vec::with_capacity(c.n_layers);
        let mut values = Vec::with_capacity(c.n_layers);
        for l in 0..c.n_layers {
            let kv = cache.layers.get(l).and_then(|x| x.as_ref());
            keys.push(pad(kv.map(|x| &x.0))?);
            values.push(pad(kv.map(|x| &x.1))?);
        }
        let (k, v) = (ops::concatenate(&keys, 0)?, ops::concatenate(&values, 0)?);
        weft::eval(&[k.clone(), v.clone()])?;
        Ok((k, v))
    }

    /// One decode step of one sequence with everything that changes per
    /// step given as arrays, so one trace of it (`weft::transforms::Compiled`)
    /// and one CUDA graph of that trace serve every step
    /// ([`crate::GraphDecoder`]).
    ///
    /// `inputs`: the token `[1]` (uint32), its position `[1]` (int32, the
    /// number of positions before it), and the keys and values of
    /// [`Llama::static_cache`] (`[n_layers, n_kv_heads, capacity, head_dim]`).
    /// Returns the logits `[1, vocab]` (float32) and the keys and values with
    /// the token's written at its position. Attention reads the whole
    /// capacity with the positions after the token masked out; the rotary
    /// angles are computed once per step from the position array. The
    /// query, key and value projections run as one product, and so do the
    /// gate and up ones, on their weights' rows stacked at load
    /// ([`Projections`]), as in [`Llama::forward_batch`].
    pub fn static_step(&self, inputs: &[Array]) -> Result<Vec<Array>> {
        let c = &self.config;
        let [token, pos, keys, values] = inputs else {
            return Err(Error::InvalidArgument(format!("static_step takes 4 inputs (token, position, keys, values), got {}", inputs.len())));
        };
        let cap = keys.shape().get(2).copied().unwrap_or(0);
        let want = [c.n_layers, c.n_kv_heads, cap, c.head_dim];
        if keys.shape() != want || values.shape() != want || token.shape() != [1] || pos.shape() != [1] {
            return Err(Error::Shape(format!(
                "static_step: token {:?}, position {:?}, keys {:?}, values {:?}; expected [1], [1] and {want:?}",
                token.shape(),
                pos.shape(),
                keys.shape(),
                values.shape()
            )));
        }
        let dtype = self.output_norm.dtype();
        // Positions of the cache: the token's own (where its key and value
        // go) and those attention may read (up to and including it).
        let slots = ops::arange(0.0, cap as f64, 1.0, Dtype::I32)?;
        let here = ops::reshape(&ops::equal(&slots, pos)?, &[1, 1, cap as isize, 1])?;
        let seen = fast::Mask::Array(ops::reshape(&ops::less_equal(&slots, pos)?, &[1, 1, 1, cap as isize])?);
        // The rotary angles of the position, once for every layer: feature
        // pair `i` turns by `pos * base^(-2i / head_dim)` (as `fast::rope`,
        // computed in float32 as `fast::rope_with` does).
        let half = c.head_dim / 2;
        let inv = ops::exp(&ops::multiply(&ops::arange(0.0, half as f64, 1.0, Dtype::F32)?, &Array::scalar(-c.rope_base.ln() / half as f32))?)?;
        let theta = ops::multiply(&ops::astype(pos, Dtype::F32)?, &inv)?; // [half]
        let (cos, sin) = (ops::astype(&ops::cos(&theta)?, dtype)?, ops::astype(&ops::sin(&theta)?, dtype)?);
        let scale = 1.0 / (c.head_dim as f32).sqrt();
        let mut x = self.token_embd.rows(token, dtype)?; // [1, H]
        let (mut new_keys, mut new_values) = (Vec::with_capacity(c.n_layers), Vec::with_capacity(c.n_layers));
        let all = SliceArg::ALL;
        for (l, layer) in self.layers.iter().enumerate() {
            let h = fast::rms_norm(&x, Some(&layer.attn_norm), c.rms_eps)?;
            let heads = |y: &Array, n: usize| -> Result<Array> {
                ops::transpose(&ops::reshape(y, &[1, 1, n as isize, c.head_dim as isize])?, &[0, 2, 1, 3]) // [1, n, 1, hd]
            };
            let rope = |a: &Array| rotate_pairs(a, &cos, &sin);
            let [q, k, v] = array_of(layer.qkv.linear(&h, false)?)?;
            let q = rope(&heads(&q, c.n_heads)?)?;
            let k = ops::astype(&rope(&heads(&k, c.n_kv_heads)?)?, dtype)?;
            let v = ops::astype(&heads(&v, c.n_kv_heads)?, dtype)?;
            let layer_of = |a: &Array| ops::slice(a, &[SliceArg::range(l as isize, l as isize + 1), all, all]);
            let ks = ops::where_(&here, &k, &layer_of(keys)?)?; // [1, kv, cap, hd]
            let vs = ops::where_(&here, &v, &layer_of(values)?)?;
            let out = fast::scaled_dot_product_attention(&q, &ks, &vs, scale, Some(&seen))?; // [1, heads, 1, hd]
            let out = ops::reshape(&out, &[1, (c.n_heads * c.head_dim) as isize])?;
            new_keys.push(ks);
            new_values.push(vs);
            x = ops::add(&x, &layer.wo.linear(&out, false)?)?;
            let h = fast::rms_norm(&x, Some(&layer.ffn_norm), c.rms_eps)?;
            let [gate, up] = array_of(layer.gate_up.linear(&h, false)?)?;
            let act = ops::multiply(&ops::silu(&gate)?, &up)?;
            x = ops::add(&x, &layer.w_down.linear(&act, false)?)?;
        }
        let last = fast::rms_norm(&x, Some(&self.output_norm), c.rms_eps)?;
        let logits = ops::astype(&self.output.linear(&last, false)?, Dtype::F32)?;
        Ok(vec![logits, ops::concatenate(&new_keys, 0)?, ops::concatenate(&new_values, 0)?])
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
    /// (one matmul per weight, so the weights are read once per step; the
    /// query, key and value projections as one product, and the gate and up
    /// ones, when [`Projections`] could stack them);
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
        let mut x = self.token_embd.rows(&ids, self.output_norm.dtype())?; // [T, H]
        let scale = 1.0 / (c.head_dim as f32).sqrt();
        let rows_of = |a: &Array, r: &std::ops::Range<usize>| -> Result<Array> {
            if r.len() == total {
                return Ok(a.clone());
            }
            ops::slice(a, &[SliceArg::range(r.start as isize, r.end as isize)])
        };
        for (l, layer) in self.layers.iter().enumerate() {
            let h = fast::rms_norm(&x, Some(&layer.attn_norm), c.rms_eps)?;
            let int8 = self.int8_activations;
            let [q_all, k_all, v_all] = array_of(layer.qkv.linear(&h, int8)?)?;
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
            x = ops::add(&x, &layer.wo.linear(&out, int8)?)?;

            let h = fast::rms_norm(&x, Some(&layer.ffn_norm), c.rms_eps)?;
            let [gate, up] = array_of(layer.gate_up.linear(&h, int8)?)?;
            let act = ops::multiply(&ops::silu(&gate)?, &up)?;
            x = ops::add(&x, &layer.w_down.linear(&act, int8)?)?;
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
        ops::astype(&self.output.linear(&last, self.int8_activations)?, Dtype::F32)
    }
}
