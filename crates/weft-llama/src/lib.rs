//! Llama-family language models on weft, loaded from GGUF files: the
//! tokenizer the file carries ([`Tokenizer`]), the decoder ([`Llama`]) and
//! sampling ([`Sampler`]).
//!
//! ```no_run
//! use weft_llama::{Llama, Sampler, Tokenizer};
//! let file = weft::io::gguf::Gguf::open("SmolLM2-135M-Instruct.Q4_1.gguf").unwrap();
//! let tok = Tokenizer::from_gguf(&file).unwrap();
//! let model = Llama::from_gguf(&file).unwrap();
//! let mut cache = model.new_cache();
//! let ids = tok.encode(&tok.chat_prompt(&[("user", "Hi!")]).unwrap()).unwrap();
//! let logits = model.forward(&ids, &mut cache).unwrap();
//! let next = Sampler::greedy().sample(&logits).unwrap();
//! println!("{}", tok.decode(&[next], true).unwrap());
//! ```

pub mod graph;
pub mod llama;
pub mod sample;
pub mod tokenizer;

pub use graph::GraphDecoder;
pub use llama::{Config, KvCache, Llama};
pub use sample::Sampler;
pub use tokenizer::{StreamDecoder, Tokenizer};
