//! The request bodies of `/v1/chat/completions`, `/v1/completions` and
//! `/v1/embeddings`, and their checks. Fields weft does not know are
//! ignored (as OpenAI-compatible servers do); known fields of the wrong
//! type or out of range are a `400` naming the field.

use crate::error::ApiError;
use crate::sampling::SamplingParams;
use serde::Deserialize;
use serde_json::Value;

/// Most choices one request may ask for (`n` times the prompts).
pub const MAX_CHOICES: usize = 16;
/// Most stop strings (OpenAI's limit).
pub const MAX_STOPS: usize = 4;
/// Most alternatives per position in `logprobs`.
pub const MAX_TOP_LOGPROBS: usize = 20;

#[derive(Deserialize, Debug)]
#[serde(untagged)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize, Debug)]
#[serde(untagged)]
pub enum Prompt {
    Text(String),
    Texts(Vec<String>),
    Tokens(Vec<u32>),
    TokenLists(Vec<Vec<u32>>),
}

#[derive(Deserialize, Debug)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<ContentPart>),
}

#[derive(Deserialize, Debug)]
pub struct ContentPart {
    #[serde(rename = "type")]
    pub kind: String,
    pub text: Option<String>,
}

#[derive(Deserialize, Debug)]
pub struct Message {
    pub role: String,
    pub content: Option<Content>,
}

impl Message {
    /// The message's text (text parts joined; other parts are an error).
    pub fn text(&self) -> Result<String, ApiError> {
        match &self.content {
            None => Ok(String::new()),
            Some(Content::Text(t)) => Ok(t.clone()),
            Some(Content::Parts(parts)) => parts
                .iter()
                .map(|p| match (p.kind.as_str(), &p.text) {
                    ("text", Some(t)) => Ok(t.as_str()),
                    (k, _) => Err(ApiError::invalid_param("messages", format!("content parts of type {k:?} are not supported"))),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(|v| v.concat()),
        }
    }
}

#[derive(Deserialize, Debug, Default)]
pub struct StreamOptions {
    pub include_usage: Option<bool>,
}

/// The body of a chat or text completion request.
#[derive(Deserialize, Debug)]
pub struct CompletionRequest {
    pub model: Option<String>,
    pub messages: Option<Vec<Message>>,
    pub prompt: Option<Prompt>,
    pub max_tokens: Option<i64>,
    pub max_completion_tokens: Option<i64>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub top_k: Option<i64>,
    pub min_p: Option<f64>,
    pub seed: Option<i64>,
    pub stop: Option<OneOrMany>,
    pub presence_penalty: Option<f64>,
    pub frequency_penalty: Option<f64>,
    pub repetition_penalty: Option<f64>,
    /// A bool for chat, a count for text completions.
    pub logprobs: Option<Value>,
    pub top_logprobs: Option<i64>,
    pub n: Option<i64>,
    pub stream: Option<bool>,
    pub stream_options: Option<StreamOptions>,
}

/// What a completion request asks for, checked.
#[derive(Debug, Clone)]
pub struct Checked {
    pub sampling: SamplingParams,
    /// `None`: up to the context.
    pub max_tokens: Option<usize>,
    pub stop: Vec<String>,
    /// `Some(k)`: report each token's log probability and `k` alternatives.
    pub logprobs: Option<usize>,
    pub n: usize,
    pub stream: bool,
    pub include_usage: bool,
}

fn range(name: &'static str, v: Option<f64>, lo: f64, hi: f64, default: f64) -> Result<f32, ApiError> {
    match v {
        None => Ok(default as f32),
        Some(x) if x.is_finite() && (lo..=hi).contains(&x) => Ok(x as f32),
        Some(x) => Err(ApiError::invalid_param(name, format!("`{name}` must be in [{lo}, {hi}], got {x}"))),
    }
}

impl CompletionRequest {
    /// Parses a body; malformed JSON and wrong types are a `400`.
    pub fn parse(body: &[u8]) -> Result<CompletionRequest, ApiError> {
        serde_json::from_slice(body).map_err(|e| ApiError::invalid(format!("invalid request body: {e}")))
    }

    /// Checks the generation fields. `chat` selects how `logprobs` reads.
    pub fn check(&self, chat: bool, ctx: usize) -> Result<Checked, ApiError> {
        let temperature = range("temperature", self.temperature, 0.0, 2.0, 1.0)?;
        let top_p = range("top_p", self.top_p, 0.0, 1.0, 1.0)?;
        if top_p <= 0.0 {
            return Err(ApiError::invalid_param("top_p", "`top_p` must be greater than 0"));
        }
        let min_p = range("min_p", self.min_p, 0.0, 1.0, 0.0)?;
        let presence = range("presence_penalty", self.presence_penalty, -2.0, 2.0, 0.0)?;
        let frequency = range("frequency_penalty", self.frequency_penalty, -2.0, 2.0, 0.0)?;
        let repetition = range("repetition_penalty", self.repetition_penalty, 0.0, 10.0, 1.0)?;
        if repetition <= 0.0 {
            return Err(ApiError::invalid_param("repetition_penalty", "`repetition_penalty` must be greater than 0"));
        }
        let top_k = match self.top_k {
            None | Some(0) | Some(-1) => 0,
            Some(k) if k > 0 => k as usize,
            Some(k) => return Err(ApiError::invalid_param("top_k", format!("`top_k` must be >= 0 (or -1), got {k}"))),
        };
        let max_tokens = match self.max_completion_tokens.or(self.max_tokens) {
            None => None,
            Some(m) if m >= 1 && m as u64 <= ctx as u64 => Some(m as usize),
            Some(m) => {
                return Err(ApiError::invalid_param(
                    "max_tokens",
                    format!("`max_tokens` must be in [1, {ctx}] (the context), got {m}"),
                ))
            }
        };
        let n = match self.n {
            None => 1,
            Some(n) if (1..=MAX_CHOICES as i64).contains(&n) => n as usize,
            Some(n) => return Err(ApiError::invalid_param("n", format!("`n` must be in [1, {MAX_CHOICES}], got {n}"))),
        };
        let stop = match &self.stop {
            None => vec![],
            Some(OneOrMany::One(s)) => vec![s.clone()],
            Some(OneOrMany::Many(v)) => v.clone(),
        };
        if stop.len() > MAX_STOPS || stop.iter().any(|s| s.is_empty()) {
            return Err(ApiError::invalid_param("stop", format!("`stop` takes at most {MAX_STOPS} non-empty strings")));
        }
        let top = |v: i64| -> Result<usize, ApiError> {
            if (0..=MAX_TOP_LOGPROBS as i64).contains(&v) {
                Ok(v as usize)
            } else {
                Err(ApiError::invalid_param("top_logprobs", format!("must be in [0, {MAX_TOP_LOGPROBS}], got {v}")))
            }
        };
        let logprobs = match (&self.logprobs, chat) {
            (None | Some(Value::Null), _) => {
                if chat && self.top_logprobs.is_some() {
                    return Err(ApiError::invalid_param("top_logprobs", "`top_logprobs` needs `logprobs: true`"));
                }
                None
            }
            (Some(Value::Bool(false)), true) => None,
            (Some(Value::Bool(true)), true) => Some(top(self.top_logprobs.unwrap_or(0))?),
            (Some(Value::Number(k)), false) => Some(top(k.as_i64().unwrap_or(-1))?),
            (Some(_), true) => return Err(ApiError::invalid_param("logprobs", "`logprobs` must be a boolean")),
            (Some(_), false) => return Err(ApiError::invalid_param("logprobs", "`logprobs` must be an integer")),
        };
        let seed = self.seed.map(|s| s as u64);
        Ok(Checked {
            sampling: SamplingParams { temperature, top_p, top_k, min_p, presence, frequency, repetition, seed },
            max_tokens,
            stop,
            logprobs,
            n,
            stream: self.stream.unwrap_or(false),
            include_usage: self.stream_options.as_ref().and_then(|o| o.include_usage).unwrap_or(false),
        })
    }
}

/// The body of `/v1/embeddings`.
#[derive(Deserialize, Debug)]
pub struct EmbeddingRequest {
    pub model: Option<String>,
    pub input: OneOrMany,
    pub encoding_format: Option<String>,
}
