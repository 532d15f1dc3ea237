//! The tokenizer a GGUF file carries in its metadata, for `gpt2`-style
//! byte-level BPE (`tokenizer.ggml.model = "gpt2"`): the vocabulary
//! (`tokenizer.ggml.tokens`), the merges, the token types (control tokens
//! become special tokens, matched whole), the BOS/EOS ids and the chat
//! template. Built on the `tokenizers` crate.

use std::collections::HashSet;
use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::{AddedToken, DecoderWrapper, PreTokenizerWrapper};
use weft::io::gguf::{Gguf, Value};
use weft::{Error, Result};

/// GGUF token types (`tokenizer.ggml.token_type`) that are special tokens.
const CONTROL: i64 = 3;
const USER_DEFINED: i64 = 4;

fn tok_err(e: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!("tokenizer: {e}"))
}

/// A byte-level BPE tokenizer read from GGUF metadata.
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    bos: Option<u32>,
    eos: Option<u32>,
    add_bos: bool,
    chat_template: Option<String>,
    special: HashSet<u32>,
}

impl Tokenizer {
    /// Builds the tokenizer described by `file`'s `tokenizer.*` metadata.
    pub fn from_gguf(file: &Gguf) -> Result<Tokenizer> {
        let model = file.get_str("tokenizer.ggml.model")?;
        if model != "gpt2" {
            return Err(Error::InvalidArgument(format!(
                "tokenizer model {model:?} is not supported (only gpt2-style byte-level BPE)"
            )));
        }
        let tokens = file.get_str_array("tokenizer.ggml.tokens")?;
        let vocab: Vocab = tokens.iter().enumerate().map(|(i, t)| (t.to_string(), i as u32)).collect();
        if vocab.len() != tokens.len() {
            return Err(Error::Io("tokenizer.ggml.tokens holds duplicate tokens".into()));
        }
        let merges = file
            .get_str_array("tokenizer.ggml.merges")?
            .into_iter()
            .map(|m| {
                m.split_once(' ')
                    .map(|(a, b)| (a.to_string(), b.to_string()))
                    .ok_or_else(|| Error::Io(format!("tokenizer merge {m:?} is not two tokens")))
            })
            .collect::<Result<Vec<_>>>()?;
        let bpe = BPE::builder().vocab_and_merges(vocab, merges).build().map_err(tok_err)?;
        let mut inner = tokenizers::Tokenizer::new(bpe);

        // SmolLM (llama.cpp's "smollm" pre-tokenizer) and the StarCoder
        // family split digits one by one before the GPT-2 split.
        let byte_level = ByteLevel::new(false, true, true);
        let pre = file.get("tokenizer.ggml.pre").and_then(Value::as_str).unwrap_or("default");
        let pre_tokenizer: PreTokenizerWrapper = match pre {
            "smollm" | "starcoder" | "refact" => {
                Sequence::new(vec![Digits::new(true).into(), byte_level.into()]).into()
            }
            _ => byte_level.into(),
        };
        inner.with_pre_tokenizer(Some(pre_tokenizer));
        inner.with_decoder(Some(DecoderWrapper::ByteLevel(byte_level)));

        let mut special = HashSet::new();
        if let Some(types) = file.get("tokenizer.ggml.token_type").and_then(Value::as_array) {
            let added: Vec<AddedToken> = types
                .iter()
                .enumerate()
                .filter(|(_, t)| matches!(t.as_f64().map(|v| v as i64), Some(CONTROL | USER_DEFINED)))
                .filter_map(|(i, _)| {
                    special.insert(i as u32);
                    tokens.get(i).map(|t| AddedToken::from(t.to_string(), true))
                })
                .collect();
            inner.add_special_tokens(&added);
        }
        let id = |key: &str| -> Result<Option<u32>> {
            match file.get(key) {
                None => Ok(None),
                Some(v) => match v.as_u64() {
                    Some(i) if (i as usize) < tokens.len() => Ok(Some(i as u32)),
                    _ => Err(Error::Io(format!("{key} = {v:?} is not a token id"))),
                },
            }
        };
        Ok(Tokenizer {
            inner,
            bos: id("tokenizer.ggml.bos_token_id")?,
            eos: id("tokenizer.ggml.eos_token_id")?,
            add_bos: file.get("tokenizer.ggml.add_bos_token").and_then(Value::as_bool).unwrap_or(false),
            chat_template: file.get("tokenizer.chat_template").and_then(Value::as_str).map(str::to_string),
            special,
        })
    }

    /// Token ids of `text`. Special tokens written in the text (such as
    /// `<|im_start|>`) are matched whole. A BOS token is put first when the
    /// file asks for one (`tokenizer.ggml.add_bos_token`).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let enc = self.inner.encode(text, false).map_err(tok_err)?;
        let mut ids = Vec::with_capacity(enc.len() + 1);
        if self.add_bos {
            ids.extend(self.bos);
        }
        ids.extend_from_slice(enc.get_ids());
        Ok(ids)
    }

    /// The text of `ids`; special tokens are left out when `skip_special`.
    pub fn decode(&self, ids: &[u32], skip_special: bool) -> Result<String> {
        self.inner.decode(ids, skip_special).map_err(tok_err)
    }

    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    pub fn bos_id(&self) -> Option<u32> {
        self.bos
    }

    pub fn eos_id(&self) -> Option<u32> {
        self.eos
    }

    pub fn is_special(&self, id: u32) -> bool {
        self.special.contains(&id)
    }

    /// The Jinja chat template the file carries, as text.
    pub fn chat_template(&self) -> Option<&str> {
        self.chat_template.as_deref()
    }

    /// A prompt for `messages` (role, content) in the ChatML format the
    /// file's template uses, ending with the assistant's turn opened. When
    /// the template gives a default system message and `messages` has none,
    /// it comes first, as the template does. Templates other than ChatML are
    /// an error (weft has no Jinja engine).
    pub fn chat_prompt(&self, messages: &[(&str, &str)]) -> Result<String> {
        let template = self.chat_template().unwrap_or("");
        if !template.contains("<|im_start|>") {
            return Err(Error::InvalidArgument(
                "chat_prompt: the file's chat template is not ChatML".into(),
            ));
        }
        let mut out = String::new();
        let opener = "'<|im_start|>system\n";
        if messages.first().is_none_or(|(role, _)| *role != "system") {
            if let Some(start) = template.find(opener) {
                let rest = &template[start + opener.len()..];
                if let Some(end) = rest.find("<|im_end|>") {
                    out.push_str(&format!("<|im_start|>system\n{}<|im_end|>\n", &rest[..end]));
                }
            }
        }
        for (role, content) in messages {
            out.push_str(&format!("<|im_start|>{role}\n{content}<|im_end|>\n"));
        }
        out.push_str("<|im_start|>assistant\n");
        Ok(out)
    }
}

/// Decodes a growing list of token ids piece by piece, holding back text
/// while it ends in an incomplete UTF-8 sequence.
pub struct StreamDecoder {
    ids: Vec<u32>,
    printed: usize,
}

impl StreamDecoder {
    pub fn new() -> StreamDecoder {
        StreamDecoder { ids: vec![], printed: 0 }
    }

    /// Adds `id`; returns the new text that is complete so far.
    pub fn push(&mut self, tok: &Tokenizer, id: u32) -> Result<String> {
        self.ids.push(id);
        let text = tok.decode(&self.ids, true)?;
        if text.ends_with('\u{fffd}') {
            return Ok(String::new());
        }
        let Some(new) = text.get(self.printed..).map(str::to_string) else {
            return Ok(String::new());
        };
        self.printed = text.len();
        Ok(new)
    }
}

impl Default for StreamDecoder {
    fn default() -> Self {
        Self::new()
    }
}
