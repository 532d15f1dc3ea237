//! The HTTP side: routes, request checks, and turning an engine's events
//! into OpenAI's responses (whole, or as server-sent events).

use crate::api::{Checked, CompletionRequest, EmbeddingRequest, OneOrMany, Prompt};
use crate::embed::{base64_f32, Embedder};
use crate::engine::{Engine, Event, FinishReason, Job, Rejected, TokenLogprob, Usage};
use crate::error::ApiError;
use crate::template::ChatMessage;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Everything the handlers share.
pub struct App {
    pub engines: Vec<Arc<Engine>>,
    pub embedder: Option<Arc<Embedder>>,
    pub api_key: Option<String>,
    /// How often an idle stream gets a `: keep-alive` comment.
    pub keep_alive: Duration,
    shutting_down: AtomicBool,
    next_id: AtomicU64,
    started: u64,
}

fn now_s() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl App {
    pub fn new(engines: Vec<Arc<Engine>>, embedder: Option<Arc<Embedder>>, api_key: Option<String>, keep_alive: Duration) -> App {
        App { engines, embedder, api_key, keep_alive, shutting_down: AtomicBool::new(false), next_id: AtomicU64::new(1), started: now_s() }
    }

    /// Refuses new requests; every engine finishes or, past `grace`,
    /// cancels what it runs.
    pub fn begin_shutdown(&self, grace: Duration) {
        self.shutting_down.store(true, Ordering::SeqCst);
        let deadline = Instant::now() + grace;
        for e in &self.engines {
            e.close(deadline);
        }
    }

    pub fn join_engines(&self) {
        for e in &self.engines {
            e.join();
        }
    }

    fn authorize(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        let Some(key) = &self.api_key else { return Ok(()) };
        let given = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
        if given.map(str::trim) == Some(key.as_str()) {
            Ok(())
        } else {
            Err(ApiError::unauthorized())
        }
    }

    fn engine(&self, name: Option<&str>) -> Result<&Arc<Engine>, ApiError> {
        match name {
            None | Some("") => self.engines.first().ok_or_else(|| ApiError::unknown_model("(none)")),
            Some(n) => self.engines.iter().find(|e| e.model.name == n).ok_or_else(|| ApiError::unknown_model(n)),
        }
    }

    fn id(&self, prefix: &str) -> String {
        format!("{prefix}-{:x}{:06x}", self.started, self.next_id.fetch_add(1, Ordering::Relaxed))
    }
}

pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/", get(|| async { Html(include_str!("../static/index.html")) }))
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat))
        .route("/v1/completions", post(completions))
        .route("/v1/embeddings", post(embeddings))
        .fallback(|| async { ApiError { status: StatusCode::NOT_FOUND, ..ApiError::invalid("no such endpoint") } })
        .with_state(app)
}

async fn health(State(app): State<Arc<App>>) -> Response {
    if app.shutting_down.load(Ordering::SeqCst) {
        (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"status": "shutting down"}))).into_response()
    } else {
        Json(json!({"status": "ok"})).into_response()
    }
}

async fn metrics(State(app): State<Arc<App>>) -> Response {
    let ms: Vec<_> = app.engines.iter().map(|e| &*e.metrics).collect();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], crate::metrics::render(&ms)).into_response()
}

async fn models(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if let Err(e) = app.authorize(&headers) {
        return e.into_response();
    }
    let entry = |id: &str| json!({"id": id, "object": "model", "created": app.started, "owned_by": "weft"});
    let mut data: Vec<Value> = app.engines.iter().map(|e| entry(&e.model.name)).collect();
    data.extend(app.embedder.iter().map(|e| entry(&e.name)));
    Json(json!({"object": "list", "data": data})).into_response()
}

fn respond(r: Result<Response, ApiError>) -> Response {
    r.unwrap_or_else(IntoResponse::into_response)
}

async fn chat(State(app): State<Arc<App>>, headers: HeaderMap, body: Bytes) -> Response {
    respond(chat_inner(app, headers, body).await)
}

async fn completions(State(app): State<Arc<App>>, headers: HeaderMap, body: Bytes) -> Response {
    respond(completions_inner(app, headers, body).await)
}

async fn embeddings(State(app): State<Arc<App>>, headers: HeaderMap, body: Bytes) -> Response {
    respond(embeddings_inner(app, headers, body).await)
}

fn context_error(len: usize, ctx: usize) -> ApiError {
    ApiError {
        code: Some("context_length_exceeded"),
        ..ApiError::invalid_param("messages", format!("the prompt is {len} tokens; the context holds {ctx}, with room for one more"))
    }
}

async fn chat_inner(app: Arc<App>, headers: HeaderMap, body: Bytes) -> Result<Response, ApiError> {
    app.authorize(&headers)?;
    let req = CompletionRequest::parse(&body)?;
    let engine = app.engine(req.model.as_deref())?.clone();
    let messages = req.messages.as_ref().ok_or_else(|| ApiError::invalid_param("messages", "`messages` is required"))?;
    if messages.is_empty() {
        return Err(ApiError::invalid_param("messages", "`messages` must not be empty"));
    }
    let messages = messages
        .iter()
        .map(|m| {
            let role = if m.role == "developer" { "system".to_string() } else { m.role.clone() };
            Ok(ChatMessage { role, content: m.text()? })
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    let checked = req.check(true, engine.config.ctx)?;
    let text = engine.model.template.render(&messages).map_err(|e| ApiError::invalid_param("messages", e))?;
    let ids = engine.model.tokenizer.encode(&text).map_err(|e| ApiError::invalid_param("messages", e.to_string()))?;
    if ids.len() >= engine.config.ctx {
        return Err(context_error(ids.len(), engine.config.ctx));
    }
    run(app, engine, vec![ids], checked, Kind::Chat).await
}

async fn completions_inner(app: Arc<App>, headers: HeaderMap, body: Bytes) -> Result<Response, ApiError> {
    app.authorize(&headers)?;
    let req = CompletionRequest::parse(&body)?;
    let engine = app.engine(req.model.as_deref())?.clone();
    let checked = req.check(false, engine.config.ctx)?;
    let tok = &engine.model.tokenizer;
    let encode = |t: &str| tok.encode(t).map_err(|e| ApiError::invalid_param("prompt", e.to_string()));
    let prompts: Vec<Vec<u32>> = match &req.prompt {
        None => return Err(ApiError::invalid_param("prompt", "`prompt` is required")),
        Some(Prompt::Text(t)) => vec![encode(t)?],
        Some(Prompt::Texts(ts)) => ts.iter().map(|t| encode(t)).collect::<Result<_, _>>()?,
        Some(Prompt::Tokens(ids)) => vec![ids.clone()],
        Some(Prompt::TokenLists(l)) => l.clone(),
    };
    let vocab = engine.model.llama.config.vocab_size;
    if prompts.is_empty() {
        return Err(ApiError::invalid_param("prompt", "`prompt` must not be empty"));
    }
    for p in &prompts {
        if p.is_empty() {
            return Err(ApiError::invalid_param("prompt", "a prompt is empty (no tokens)"));
        }
        if let Some(t) = p.iter().find(|&&t| t as usize >= vocab) {
            return Err(ApiError::invalid_param("prompt", format!("token id {t} is outside the vocabulary ({vocab})")));
        }
        if p.len() >= engine.config.ctx {
            return Err(ApiError { param: Some("prompt"), ..context_error(p.len(), engine.config.ctx) });
        }
    }
    run(app, engine, prompts, checked, Kind::Text).await
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Chat,
    Text,
}

/// Submits the request and answers it: a stream of events, or one body.
async fn run(app: Arc<App>, engine: Arc<Engine>, prompts: Vec<Vec<u32>>, checked: Checked, kind: Kind) -> Result<Response, ApiError> {
    if app.shutting_down.load(Ordering::SeqCst) {
        return Err(ApiError::shutting_down());
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let choices = prompts.len() * checked.n;
    let job = Job { prompts, checked: checked.clone(), events: tx, arrived: Instant::now() };
    engine.submit(job).map_err(|r| match r {
        Rejected::Busy => ApiError::busy(&engine.model.name, 1),
        Rejected::ShuttingDown => ApiError::shutting_down(),
        Rejected::TooWide { choices, parallel } => {
            ApiError::invalid_param("n", format!("{choices} choices exceed the server's {parallel} parallel slots"))
        }
    })?;
    let f = Format {
        kind,
        id: app.id(if kind == Kind::Chat { "chatcmpl" } else { "cmpl" }),
        created: now_s(),
        model: engine.model.name.clone(),
        include_usage: checked.include_usage,
        offsets: vec![0; choices],
    };
    if checked.stream {
        Ok(stream(f, rx, choices, app.keep_alive).into_response())
    } else {
        collect(f, rx, choices).await.map(|v| Json(v).into_response())
    }
}

/// What every response of one request shares.
struct Format {
    kind: Kind,
    id: String,
    created: u64,
    model: String,
    include_usage: bool,
    /// Text offsets per choice (`text_offset` in text completions' logprobs).
    offsets: Vec<usize>,
}

fn usage_json(u: Usage) -> Value {
    json!({"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens, "total_tokens": u.prompt_tokens + u.completion_tokens})
}

fn chat_logprob(l: &TokenLogprob) -> Value {
    let top: Vec<Value> = l.top.iter().map(|(t, lp)| json!({"token": t, "logprob": lp, "bytes": t.as_bytes()})).collect();
    json!({"token": l.token, "logprob": l.logprob, "bytes": l.token.as_bytes(), "top_logprobs": top})
}

/// Text completions' logprobs: parallel lists.
fn text_logprobs(ls: &[TokenLogprob], offsets: &[usize]) -> Value {
    let top: Vec<Value> = ls.iter().map(|l| Value::Object(l.top.iter().map(|(t, lp)| (t.clone(), json!(lp))).collect())).collect();
    json!({
        "tokens": ls.iter().map(|l| l.token.clone()).collect::<Vec<_>>(),
        "token_logprobs": ls.iter().map(|l| l.logprob).collect::<Vec<_>>(),
        "top_logprobs": top,
        "text_offset": offsets,
    })
}

impl Format {
    fn chunk(&self, choices: Value) -> String {
        let object = if self.kind == Kind::Chat { "chat.completion.chunk" } else { "text_completion" };
        let mut v = json!({"id": self.id, "object": object, "created": self.created, "model": self.model, "choices": choices});
        if self.include_usage {
            v["usage"] = Value::Null;
        }
        v.to_string()
    }

    /// The SSE data lines one event becomes.
    fn on_event(&mut self, ev: Event, out: &mut VecDeque<String>) -> bool {
        match ev {
            Event::Token { index, text, logprobs } => {
                let choice = if self.kind == Kind::Chat {
                    let lp = logprobs.as_ref().map(|l| json!({"content": [chat_logprob(l)]}));
                    json!({"index": index, "delta": {"content": text}, "logprobs": lp, "finish_reason": null})
                } else {
                    let lp = logprobs.as_ref().map(|l| text_logprobs(std::slice::from_ref(l), &[self.offsets[index]]));
                    json!({"index": index, "text": text, "logprobs": lp, "finish_reason": null})
                };
                self.offsets[index] += text.len();
                out.push_back(self.chunk(json!([choice])));
                false
            }
            Event::Finished { index, reason } => {
                let choice = if self.kind == Kind::Chat {
                    json!({"index": index, "delta": {}, "logprobs": null, "finish_reason": reason.as_str()})
                } else {
                    json!({"index": index, "text": "", "logprobs": null, "finish_reason": reason.as_str()})
                };
                out.push_back(self.chunk(json!([choice])));
                false
            }
            Event::Done { usage } => {
                if self.include_usage {
                    let mut v: Value = serde_json::from_str(&self.chunk(json!([]))).unwrap_or(Value::Null);
                    v["usage"] = usage_json(usage);
                    out.push_back(v.to_string());
                }
                out.push_back("[DONE]".into());
                true
            }
            Event::Failed { message } => {
                out.push_back(ApiError::internal(message).body().to_string());
                true
            }
        }
    }
}

/// Server-sent events: a first chunk per chat choice naming the role, then
/// one chunk per event, `[DONE]` at the end, and a `: keep-alive` comment
/// whenever the stream is idle for `keep_alive`. Dropping the stream (the
/// client went away) closes `rx`, which cancels the request in the engine.
fn stream(f: Format, rx: mpsc::UnboundedReceiver<Event>, choices: usize, keep_alive: Duration) -> impl IntoResponse {
    let mut pending = VecDeque::new();
    if f.kind == Kind::Chat {
        for index in 0..choices {
            let choice = json!({"index": index, "delta": {"role": "assistant", "content": ""}, "logprobs": null, "finish_reason": null});
            pending.push_back(f.chunk(json!([choice])));
        }
    }
    let state = (f, rx, pending, false);
    let events = futures_util::stream::unfold(state, |(mut f, mut rx, mut pending, mut ended)| async move {
        loop {
            if let Some(data) = pending.pop_front() {
                return Some((Ok::<_, Infallible>(SseEvent::default().data(data)), (f, rx, pending, ended)));
            }
            if ended {
                return None;
            }
            match rx.recv().await {
                Some(ev) => ended = f.on_event(ev, &mut pending),
                None => {
                    pending.push_back(ApiError::internal("the engine stopped").body().to_string());
                    ended = true;
                }
            }
        }
    });
    Sse::new(events).keep_alive(KeepAlive::new().interval(keep_alive).text("keep-alive"))
}

/// A whole response, once every choice has finished.
async fn collect(f: Format, mut rx: mpsc::UnboundedReceiver<Event>, choices: usize) -> Result<Value, ApiError> {
    let mut texts = vec![String::new(); choices];
    let mut lps: Vec<Vec<TokenLogprob>> = vec![vec![]; choices];
    let mut offsets: Vec<Vec<usize>> = vec![vec![]; choices];
    let mut reasons = vec![FinishReason::Length; choices];
    let mut any_logprobs = false;
    let usage = loop {
        match rx.recv().await {
            Some(Event::Token { index, text, logprobs }) => {
                if let Some(l) = logprobs {
                    any_logprobs = true;
                    offsets[index].push(texts[index].len());
                    lps[index].push(l);
                }
                texts[index].push_str(&text);
            }
            Some(Event::Finished { index, reason }) => reasons[index] = reason,
            Some(Event::Done { usage }) => break usage,
            Some(Event::Failed { message }) => return Err(ApiError::internal(message)),
            None => return Err(ApiError::internal("the engine stopped")),
        }
    };
    let out: Vec<Value> = (0..choices)
        .map(|i| {
            let reason = reasons[i].as_str();
            if f.kind == Kind::Chat {
                let lp = any_logprobs.then(|| json!({"content": lps[i].iter().map(chat_logprob).collect::<Vec<_>>()}));
                json!({"index": i, "message": {"role": "assistant", "content": texts[i]}, "logprobs": lp, "finish_reason": reason})
            } else {
                let lp = any_logprobs.then(|| text_logprobs(&lps[i], &offsets[i]));
                json!({"index": i, "text": texts[i], "logprobs": lp, "finish_reason": reason})
            }
        })
        .collect();
    let object = if f.kind == Kind::Chat { "chat.completion" } else { "text_completion" };
    Ok(json!({"id": f.id, "object": object, "created": f.created, "model": f.model, "choices": out, "usage": usage_json(usage)}))
}

/// Most inputs in one embeddings request.
const MAX_EMBED_INPUTS: usize = 2048;

async fn embeddings_inner(app: Arc<App>, headers: HeaderMap, body: Bytes) -> Result<Response, ApiError> {
    app.authorize(&headers)?;
    let req: EmbeddingRequest =
        serde_json::from_slice(&body).map_err(|e| ApiError::invalid(format!("invalid request body: {e}")))?;
    let embedder = match (&app.embedder, req.model.as_deref()) {
        (Some(e), None) => e.clone(),
        (Some(e), Some(n)) if n == e.name || n.is_empty() => e.clone(),
        (_, n) => return Err(ApiError::unknown_model(n.unwrap_or("(no embedding model is served)"))),
    };
    let inputs = match req.input {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    };
    if inputs.is_empty() || inputs.len() > MAX_EMBED_INPUTS || inputs.iter().any(|s| s.is_empty()) {
        return Err(ApiError::invalid_param("input", format!("`input` takes 1 to {MAX_EMBED_INPUTS} non-empty strings")));
    }
    let base64 = match req.encoding_format.as_deref() {
        None | Some("float") => false,
        Some("base64") => true,
        Some(f) => return Err(ApiError::invalid_param("encoding_format", format!("unknown encoding_format {f:?}"))),
    };
    let e = embedder.clone();
    let (vectors, tokens) = tokio::task::spawn_blocking(move || e.embed(&inputs))
        .await
        .map_err(|e| ApiError::internal(format!("embedding task: {e}")))?
        .map_err(|e| ApiError::internal(format!("embedding failed: {e}")))?;
    let data: Vec<Value> = vectors
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let emb = if base64 { json!(base64_f32(v)) } else { json!(v) };
            json!({"object": "embedding", "index": i, "embedding": emb})
        })
        .collect();
    let usage = json!({"prompt_tokens": tokens, "total_tokens": tokens});
    Ok(Json(json!({"object": "list", "data": data, "model": embedder.name, "usage": usage})).into_response())
}
