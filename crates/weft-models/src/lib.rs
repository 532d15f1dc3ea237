//! Models built on weft's ops, run on the CPU.
//!
//! - [`bert`]: a BERT encoder (Hugging Face `BertModel` checkpoints in
//!   safetensors) and [`bert::SentenceEmbedder`], sentence embeddings as
//!   sentence-transformers computes them (mean pooling, L2 normalization),
//!   checked against sentence-transformers on all-MiniLM-L6-v2.

pub mod bert;
