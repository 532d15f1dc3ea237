//! `weft serve`: an OpenAI-compatible HTTP server for GGUF Llama-family
//! models (and a MiniLM embedding model) on weft.
//!
//! Each model has an engine ([`engine`]): one thread, one weft stream,
//! continuous batching over `--parallel` sequences. The HTTP side
//! ([`server`], axum on tokio) checks requests ([`api`]), renders chat
//! templates ([`template`]), queues jobs and turns the engine's events into
//! responses or server-sent events. Models never wait for each other, and
//! a request never waits for another request's whole generation.

pub mod api;
pub mod cli;
pub mod embed;
pub mod engine;
pub mod error;
pub mod find;
pub mod metrics;
pub mod sampling;
pub mod server;
pub mod template;
pub mod text;

use engine::{Engine, EngineConfig, Model};
use server::App;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use weft::io::gguf::Gguf;
use weft_llama::{Llama, Tokenizer};

/// Loads a GGUF model: weights (in host memory, float32 activations),
/// tokenizer, chat template. [`Model::placed`] moves it to a GPU.
pub fn load_model(name: &str, path: &std::path::Path) -> Result<Model, String> {
    let at = |e: weft::Error| format!("{}: {e}", path.display());
    let file = Gguf::open(path).map_err(at)?;
    let tokenizer = Tokenizer::from_gguf(&file).map_err(at)?;
    let llama = Llama::from_gguf(&file).map_err(at)?;
    let piece = |id: Option<u32>| id.and_then(|i| tokenizer.decode(&[i], false).ok()).unwrap_or_default();
    let template =
        template::ChatTemplate::new(tokenizer.chat_template(), piece(tokenizer.bos_id()), piece(tokenizer.eos_id()))?;
    Ok(Model { name: name.to_string(), llama: Arc::new(llama), tokenizer: Arc::new(tokenizer), template: Arc::new(template), dtype: weft::Dtype::F32 })
}

impl Model {
    /// The model with int8 activations on or off (`--int8-activations`,
    /// [`Llama::with_int8_activations`]): decode steps of quantized weights
    /// on the CPU round `x` to int8 per block of 32, as llama.cpp does.
    /// The weights are shared with `self`'s, not copied.
    pub fn with_int8_activations(self, on: bool) -> Model {
        if self.llama.int8_activations() == on {
            return self;
        }
        Model { llama: Arc::new(Llama::clone(&self.llama).with_int8_activations(on)), ..self }
    }

    /// The model with its weights converted to `dtype` (quantized weights stay quantized; their
    /// scales and biases and every float weight take `dtype`) in `device`'s memory, once, on a
    /// stream of that device: every step then reads them there. Float32 on the CPU is the
    /// loaded model itself.
    pub fn placed(self, device: weft::Device, dtype: weft::Dtype) -> Result<Model, String> {
        if device == weft::Device::cpu() && dtype == weft::Dtype::F32 {
            return Ok(self);
        }
        let stream = weft::Stream::new(device).map_err(|e| format!("{}: {e}", self.name))?;
        let llama = weft::with_stream(stream, || self.llama.converted(dtype)).map_err(|e| format!("{}: {e}", self.name))?;
        Ok(Model { llama: Arc::new(llama), dtype, ..self })
    }
}

/// Starts an engine per model. `ctx` is capped at each model's context.
pub fn start_engines(models: Vec<Model>, config: &EngineConfig) -> Result<Vec<Arc<Engine>>, String> {
    models
        .into_iter()
        .map(|m| {
            let ctx = config.ctx.min(m.llama.config.context_length).max(2);
            Engine::start(m, EngineConfig { ctx, ..config.clone() }).map_err(|e| e.to_string())
        })
        .collect()
}

/// Serves `app` on `listener` until `shutdown` resolves; then refuses new
/// requests, lets running ones finish for up to `grace` (cancelling the
/// rest) and waits for the engines to stop.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Arc<App>,
    shutdown: impl Future<Output = ()> + Send + 'static,
    grace: Duration,
) -> std::io::Result<()> {
    let a = app.clone();
    let result = axum::serve(listener, server::router(app.clone()))
        .with_graceful_shutdown(async move {
            shutdown.await;
            a.begin_shutdown(grace);
        })
        .await;
    app.begin_shutdown(Duration::ZERO);
    let _ = tokio::task::spawn_blocking(move || app.join_engines()).await;
    result
}

/// A server on its own thread and runtime (tests, embedding in programs).
pub struct Running {
    pub addr: std::net::SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl Running {
    /// Binds `addr` (port 0 picks one) and serves `app` in the background.
    pub fn start(app: Arc<App>, addr: &str, grace: Duration) -> std::io::Result<Running> {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
        let listener = rt.block_on(tokio::net::TcpListener::bind(addr))?;
        let addr = listener.local_addr()?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let thread = std::thread::spawn(move || {
            rt.block_on(serve(listener, app, async move { let _ = rx.await; }, grace))
        });
        Ok(Running { addr, stop: Some(tx), thread: Some(thread) })
    }

    /// Shuts down gracefully and waits for it.
    pub fn stop(mut self) -> std::io::Result<()> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> std::io::Result<()> {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(std::io::Error::other("the server thread panicked")),
            None => Ok(()),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}
