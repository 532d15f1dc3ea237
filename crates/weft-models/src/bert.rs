//! A BERT encoder and sentence embeddings (all-MiniLM-L6-v2 and other
//! sentence-transformers BERT checkpoints).
//!
//! The model directory is a Hugging Face checkpoint: `config.json`,
//! `model.safetensors`, `tokenizer.json` and, optionally,
//! `sentence_bert_config.json` (its `max_seq_length` truncates inputs).
//!
//! Graph per batch `[B, S]` of token ids: word + position + token-type
//! embeddings, layer norm; then per layer (post-norm): fused attention with a
//! padding mask, `LN(x + attn)`, `LN(h + W2 gelu(W1 h))`; finally mean
//! pooling over the real tokens and L2 normalization.

use std::collections::HashMap;
use std::path::Path;
use tokenizers::Tokenizer;
use weft::ops::{self, fast};
use weft::{bail, Array, Dtype, Error, Result};

/// The fields of a BERT `config.json` the encoder needs.
#[derive(Clone, Debug, PartialEq)]
pub struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    pub type_vocab_size: usize,
    pub layer_norm_eps: f64,
    /// `gelu` (exact) or `gelu_new`/`gelu_pytorch_tanh` (tanh approximation).
    pub hidden_act: String,
}

impl BertConfig {
    /// Parses a Hugging Face BERT `config.json`.
    pub fn from_json(text: &str) -> Result<BertConfig> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| Error::Io(format!("config.json: {e}")))?;
        let int = |k: &str| -> Result<usize> {
            v.get(k)
                .and_then(|x| x.as_u64())
                .map(|x| x as usize)
                .ok_or_else(|| Error::Io(format!("config.json: missing integer field {k:?}")))
        };
        let cfg = BertConfig {
            vocab_size: int("vocab_size")?,
            hidden_size: int("hidden_size")?,
            num_hidden_layers: int("num_hidden_layers")?,
            num_attention_heads: int("num_attention_heads")?,
            intermediate_size: int("intermediate_size")?,
            max_position_embeddings: int("max_position_embeddings")?,
            type_vocab_size: int("type_vocab_size").unwrap_or(2),
            layer_norm_eps: v.get("layer_norm_eps").and_then(|x| x.as_f64()).unwrap_or(1e-12),
            hidden_act: v.get("hidden_act").and_then(|x| x.as_str()).unwrap_or("gelu").to_string(),
        };
        if cfg.num_attention_heads == 0 || cfg.hidden_size % cfg.num_attention_heads != 0 {
            bail!(InvalidArgument, "config.json: hidden_size {} is not a multiple of {} heads", cfg.hidden_size, cfg.num_attention_heads);
        }
        Ok(cfg)
    }
}

/// A dense layer: `x @ weight^T + bias`, weight `[out, in]` as PyTorch stores it.
struct Linear {
    /// `weight^T`, `[in, out]` (a transposed view).
    wt: Array,
    bias: Array,
}

impl Linear {
    fn forward(&self, x: &Array) -> Result<Array> {
        ops::add(&ops::matmul(x, &self.wt)?, &self.bias)
    }
}

struct LayerNorm {
    weight: Array,
    bias: Array,
    eps: f32,
}

impl LayerNorm {
    fn forward(&self, x: &Array) -> Result<Array> {
        fast::layer_norm(x, Some(&self.weight), Some(&self.bias), self.eps)
    }
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attn_out: Linear,
    attn_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    out_norm: LayerNorm,
}

/// A BERT encoder with its weights loaded.
pub struct Bert {
    pub config: BertConfig,
    word: Array,
    position: Array,
    token_type: Array,
    emb_norm: LayerNorm,
    layers: Vec<Layer>,
}

/// Takes tensors out of a name -> array map, checking their shapes.
struct Weights {
    map: HashMap<String, Array>,
    prefix: String,
}

impl Weights {
    fn get(&self, name: &str, shape: &[usize]) -> Result<Array> {
        let full = format!("{}{name}", self.prefix);
        let a = self
            .map
            .get(&full)
            .ok_or_else(|| Error::Io(format!("checkpoint has no tensor {full:?}")))?;
        if a.shape() != shape {
            bail!(Shape, "tensor {full:?} has shape {:?}, the config implies {shape:?}", a.shape());
        }
        ops::astype(a, Dtype::F32)
    }

    fn linear(&self, name: &str, out: usize, inp: usize) -> Result<Linear> {
        let w = self.get(&format!("{name}.weight"), &[out, inp])?;
        Ok(Linear { wt: ops::transpose(&w, &[])?, bias: self.get(&format!("{name}.bias"), &[out])? })
    }

    fn norm(&self, name: &str, d: usize, eps: f64) -> Result<LayerNorm> {
        Ok(LayerNorm {
            weight: self.get(&format!("{name}.weight"), &[d])?,
            bias: self.get(&format!("{name}.bias"), &[d])?,
            eps: eps as f32,
        })
    }
}

impl Bert {
    /// Builds the encoder from `config` and a checkpoint's tensors (names as
    /// in Hugging Face's `BertModel`, with or without a `bert.` prefix).
    pub fn from_weights(config: BertConfig, map: HashMap<String, Array>) -> Result<Bert> {
        let prefix = if map.contains_key("bert.embeddings.word_embeddings.weight") { "bert." } else { "" };
        let w = Weights { map, prefix: prefix.into() };
        let (h, i, eps) = (config.hidden_size, config.intermediate_size, config.layer_norm_eps);
        let layers = (0..config.num_hidden_layers)
            .map(|l| {
                let p = format!("encoder.layer.{l}");
                Ok(Layer {
                    query: w.linear(&format!("{p}.attention.self.query"), h, h)?,
                    key: w.linear(&format!("{p}.attention.self.key"), h, h)?,
                    value: w.linear(&format!("{p}.attention.self.value"), h, h)?,
                    attn_out: w.linear(&format!("{p}.attention.output.dense"), h, h)?,
                    attn_norm: w.norm(&format!("{p}.attention.output.LayerNorm"), h, eps)?,
                    intermediate: w.linear(&format!("{p}.intermediate.dense"), i, h)?,
                    output: w.linear(&format!("{p}.output.dense"), h, i)?,
                    out_norm: w.norm(&format!("{p}.output.LayerNorm"), h, eps)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let bert = Bert {
            word: w.get("embeddings.word_embeddings.weight", &[config.vocab_size, h])?,
            position: w.get("embeddings.position_embeddings.weight", &[config.max_position_embeddings, h])?,
            token_type: w.get("embeddings.token_type_embeddings.weight", &[config.type_vocab_size, h])?,
            emb_norm: w.norm("embeddings.LayerNorm", h, eps)?,
            layers,
            config,
        };
        // Evaluate the converted weights once, not on every forward pass.
        let mut all = vec![bert.word.clone(), bert.position.clone(), bert.token_type.clone()];
        for l in &bert.layers {
            for lin in [&l.query, &l.key, &l.value, &l.attn_out, &l.intermediate, &l.output] {
                all.extend([lin.wt.clone(), lin.bias.clone()]);
            }
        }
        weft::eval(&all)?;
        Ok(bert)
    }

    /// Loads `config.json` and `model.safetensors` from `dir`.
    pub fn load(dir: &Path) -> Result<Bert> {
        let text = std::fs::read_to_string(dir.join("config.json"))
            .map_err(|e| Error::Io(format!("{}: {e}", dir.join("config.json").display())))?;
        let config = BertConfig::from_json(&text)?;
        Bert::from_weights(config, weft::io::load_safetensors(dir.join("model.safetensors"))?)
    }

    fn activation(&self, x: &Array) -> Result<Array> {
        match self.config.hidden_act.as_str() {
            "gelu" => ops::gelu(x),
            "gelu_new" | "gelu_pytorch_tanh" => ops::gelu_approx(x),
            "relu" => ops::maximum(x, &Array::scalar(0.0f32)),
            other => bail!(InvalidArgument, "unsupported hidden_act {other:?}"),
        }
    }

    /// The last hidden states `[B, S, H]` for token ids `[B, S]` (integer),
    /// token types `[B, S]` and a keep-mask `[B, S]` (bool: `true` for real
    /// tokens, `false` for padding).
    pub fn forward(&self, ids: &Array, token_types: &Array, keep: &Array) -> Result<Array> {
        let &[b, s] = ids.shape() else {
            bail!(Shape, "token ids must be [batch, sequence], got {:?}", ids.shape());
        };
        if s > self.config.max_position_embeddings {
            bail!(InvalidArgument, "sequence of {s} tokens is longer than the model's {} positions", self.config.max_position_embeddings);
        }
        let h = self.config.hidden_size;
        let nh = self.config.num_attention_heads;
        let hd = h / nh;
        let positions = ops::arange(0.0, s as f64, 1.0, Dtype::I32)?;
        let x = ops::add(&ops::take(&self.word, ids, Some(0))?, &ops::take(&self.position, &positions, Some(0))?)?;
        let x = ops::add(&x, &ops::take(&self.token_type, token_types, Some(0))?)?;
        let mut x = ops::reshape(&self.emb_norm.forward(&x)?, &[(b * s) as isize, h as isize])?;
        let mask = fast::Mask::Array(ops::reshape(&ops::astype(keep, Dtype::Bool)?, &[b as isize, 1, 1, s as isize])?);
        let heads = |t: Array| -> Result<Array> {
            ops::transpose(&ops::reshape(&t, &[b as isize, s as isize, nh as isize, hd as isize])?, &[0, 2, 1, 3])
        };
        let scale = 1.0 / (hd as f32).sqrt();
        for l in &self.layers {
            let (q, k, v) = (heads(l.query.forward(&x)?)?, heads(l.key.forward(&x)?)?, heads(l.value.forward(&x)?)?);
            let a = fast::scaled_dot_product_attention(&q, &k, &v, scale, Some(&mask))?;
            let a = ops::reshape(&ops::transpose(&a, &[0, 2, 1, 3])?, &[(b * s) as isize, h as isize])?;
            let x1 = l.attn_norm.forward(&ops::add(&x, &l.attn_out.forward(&a)?)?)?;
            let f = l.output.forward(&self.activation(&l.intermediate.forward(&x1)?)?)?;
            x = l.out_norm.forward(&ops::add(&x1, &f)?)?;
        }
        ops::reshape(&x, &[b as isize, s as isize, h as isize])
    }
}

/// Sentence embeddings: tokenize, encode, mean-pool the real tokens, L2
/// normalize (what sentence-transformers does for all-MiniLM-L6-v2).
pub struct SentenceEmbedder {
    pub bert: Bert,
    tokenizer: Tokenizer,
    max_len: usize,
}

fn tok_err(e: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!("tokenizer: {e}"))
}

impl SentenceEmbedder {
    /// Loads the model and `tokenizer.json` from a checkpoint directory.
    pub fn load(dir: &Path) -> Result<SentenceEmbedder> {
        let bert = Bert::load(dir)?;
        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| Error::Io(format!("{}: {e}", dir.join("tokenizer.json").display())))?;
        let st_max = std::fs::read_to_string(dir.join("sentence_bert_config.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v.get("max_seq_length").and_then(|m| m.as_u64()));
        let max_len = (st_max.unwrap_or(512) as usize).min(bert.config.max_position_embeddings);
        // Padding is done per batch below; truncation to the model's limit.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(tokenizers::TruncationParams { max_length: max_len, ..Default::default() }))
            .map_err(tok_err)?;
        Ok(SentenceEmbedder { bert, tokenizer, max_len })
    }

    /// The longest input, in tokens (longer sentences are truncated).
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// Token ids, token types and keep-mask `[B, S]` for `sentences`, padded
    /// to the longest.
    pub fn tokenize(&self, sentences: &[&str]) -> Result<(Array, Array, Array)> {
        let enc = self.tokenizer.encode_batch(sentences.to_vec(), true).map_err(tok_err)?;
        let s = enc.iter().map(|e| e.get_ids().len()).max().unwrap_or(0).max(1);
        let b = sentences.len();
        let (mut ids, mut types, mut keep) = (vec![0u32; b * s], vec![0u32; b * s], vec![false; b * s]);
        for (r, e) in enc.iter().enumerate() {
            for (j, (&id, &t)) in e.get_ids().iter().zip(e.get_type_ids()).enumerate() {
                ids[r * s + j] = id;
                types[r * s + j] = t;
                keep[r * s + j] = true;
            }
        }
        Ok((Array::from_vec(ids, &[b, s])?, Array::from_vec(types, &[b, s])?, Array::from_vec(keep, &[b, s])?))
    }

    /// Unit-length embeddings `[B, H]` of `sentences` (one batch).
    pub fn embed_array(&self, sentences: &[&str]) -> Result<Array> {
        if sentences.is_empty() {
            bail!(InvalidArgument, "no sentences to embed");
        }
        let (ids, types, keep) = self.tokenize(sentences)?;
        let hidden = self.bert.forward(&ids, &types, &keep)?;
        // Mean over real tokens: keep[B, 1, S] @ hidden[B, S, H], divided by the count.
        let keep_f = ops::expand_dims(&ops::astype(&keep, Dtype::F32)?, 1)?;
        let counts: Vec<f32> = {
            let k = keep.to_vec::<bool>()?;
            let s = keep.shape()[1];
            k.chunks(s).map(|r| r.iter().filter(|&&x| x).count().max(1) as f32).collect()
        };
        let summed = ops::squeeze(&ops::matmul(&keep_f, &hidden)?, &[1])?;
        let mean = ops::divide(&summed, &Array::from_vec(counts, &[sentences.len(), 1])?)?;
        // x / ||x||: rms_norm divides by sqrt(mean(x^2)) = ||x|| / sqrt(H).
        let h = self.bert.config.hidden_size as f64;
        ops::multiply(&fast::rms_norm(&mean, None, 1e-24)?, &Array::scalar((1.0 / h.sqrt()) as f32))
    }

    /// Unit-length embeddings of `sentences`, one `Vec<f32>` each, in
    /// batches of at most `batch_size` sentences.
    pub fn embed(&self, sentences: &[&str], batch_size: usize) -> Result<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(sentences.len());
        for chunk in sentences.chunks(batch_size.max(1)) {
            let e = self.embed_array(chunk)?;
            let h = e.shape()[1];
            out.extend(e.to_vec::<f32>()?.chunks(h).map(|r| r.to_vec()));
        }
        Ok(out)
    }
}

