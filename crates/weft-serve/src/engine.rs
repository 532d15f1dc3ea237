//! One engine per model: a thread that runs every generation of that
//! model by continuous batching, on the model's own weft stream.
//!
//! Each loop turn the engine (1) admits queued requests while slots are
//! free (`--parallel` sequences), (2) drops the sequences whose client has
//! gone (their KV caches are freed before the next step), (3) runs one
//! batched step, [`Llama::forward_batch`]: every decoding sequence's last
//! token plus chunks of the prompts still being read, at most
//! `prefill_chunk` prompt tokens a step so that a long prompt never stalls
//! the running decodes, and (4) samples, detokenizes and sends each
//! sequence's token to its request, removing the sequences that finished.
//! A request that arrives joins at the next step; one that finishes leaves
//! at once.
//!
//! Invariants: the queue (`Mutex<Queue>`) is the only state shared with
//! the HTTP side; sequences, caches and per-request state live on the
//! engine thread alone. The queue never holds more than `max_queue`
//! requests (`submit` refuses past it). Every admitted request gets exactly
//! one terminal event (`Done` or `Failed`), unless its client went away.
//! Engines share nothing but the weights' reader: two models run on two
//! streams and never wait for each other (docs/architecture.md rule 6).

use crate::api::Checked;
use crate::metrics::ModelMetrics;
use crate::sampling::TokenSampler;
use crate::template::ChatTemplate;
use crate::text::TextStream;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::mpsc::UnboundedSender;
use weft::{Device, Stream};
use weft_llama::{KvCache, Llama, Tokenizer};

/// A loaded model, shared by its engine and the HTTP handlers.
pub struct Model {
    pub name: String,
    pub llama: Arc<Llama>,
    pub tokenizer: Arc<Tokenizer>,
    pub template: Arc<ChatTemplate>,
    /// The dtype of the model's weights and activations (and its KV cache).
    pub dtype: weft::Dtype,
}

#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Sequences generating at once.
    pub parallel: usize,
    /// Requests waiting for a slot, past which `submit` refuses.
    pub max_queue: usize,
    /// Positions per sequence (prompt and output).
    pub ctx: usize,
    /// Most prompt tokens read in one step (over all sequences).
    pub prefill_chunk: usize,
    pub device: Device,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinishReason {
    Stop,
    Length,
}

impl FinishReason {
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct TokenLogprob {
    pub token: String,
    pub logprob: f32,
    pub top: Vec<(String, f32)>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
}

/// What a request hears from its engine, in order: `Token`s and one
/// `Finished` per choice, then `Done`; or `Failed` at any point.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    Token { index: usize, text: String, logprobs: Option<TokenLogprob> },
    Finished { index: usize, reason: FinishReason },
    Done { usage: Usage },
    Failed { message: String },
}

/// A request for the engine: `checked.n` choices of each prompt.
pub struct Job {
    pub prompts: Vec<Vec<u32>>,
    pub checked: Checked,
    pub events: UnboundedSender<Event>,
    pub arrived: Instant,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejected {
    /// The queue is full: try again later (`429`).
    Busy,
    ShuttingDown,
    /// More choices than `--parallel` slots: it could never run.
    TooWide { choices: usize, parallel: usize },
}

struct Queue {
    jobs: VecDeque<Job>,
    /// No new jobs; past `deadline` what still runs is cancelled.
    closed: bool,
    deadline: Option<Instant>,
}

pub struct Engine {
    pub model: Model,
    pub config: EngineConfig,
    pub metrics: Arc<ModelMetrics>,
    queue: Mutex<Queue>,
    wake: Condvar,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// One running choice.
struct Seq {
    job: u64,
    index: usize,
    prompt: Arc<Vec<u32>>,
    /// Prompt tokens in the cache so far.
    filled: usize,
    cache: KvCache,
    /// Tokens this step feeds (a prompt chunk or the last sampled token).
    input: Vec<u32>,
    sampler: TokenSampler,
    text: TextStream,
    generated: usize,
    max_tokens: usize,
    last_token: Option<Instant>,
}

/// A request's state on the engine thread.
struct JobState {
    events: UnboundedSender<Event>,
    remaining: usize,
    usage: Usage,
    arrived: Instant,
    logprobs: Option<usize>,
}

impl Engine {
    /// Starts the engine's thread, on a new stream of `config.device`.
    pub fn start(model: Model, config: EngineConfig) -> weft::Result<Arc<Engine>> {
        let stream = Stream::new(config.device)?;
        let c = &model.llama.config;
        let per_position = (c.n_layers * 2 * c.n_kv_heads * c.head_dim * model.dtype.size()) as u64;
        let metrics = Arc::new(ModelMetrics::new(&model.name, (config.parallel * config.ctx) as u64, per_position));
        let engine = Arc::new(Engine {
            model,
            config,
            metrics,
            queue: Mutex::new(Queue { jobs: VecDeque::new(), closed: false, deadline: None }),
            wake: Condvar::new(),
            thread: Mutex::new(None),
        });
        let e = engine.clone();
        let handle = std::thread::Builder::new()
            .name(format!("weft-engine-{}", engine.model.name))
            .spawn(move || weft::with_stream(stream, || e.run()))
            .map_err(|err| weft::Error::Io(format!("starting the engine thread: {err}")))?;
        *engine.thread.lock().unwrap_or_else(|p| p.into_inner()) = Some(handle);
        Ok(engine)
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        // Nothing panics while holding the lock; recover the data if it did.
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `job`, or says why not (the job is dropped then).
    pub fn submit(&self, job: Job) -> Result<(), Rejected> {
        let choices = job.prompts.len() * job.checked.n;
        if choices > self.config.parallel {
            return Err(Rejected::TooWide { choices, parallel: self.config.parallel });
        }
        let mut q = self.lock();
        if q.closed {
            return Err(Rejected::ShuttingDown);
        }
        if q.jobs.len() >= self.config.max_queue {
            self.metrics.requests_rejected.fetch_add(1, Relaxed);
            return Err(Rejected::Busy);
        }
        q.jobs.push_back(job);
        self.metrics.waiting.store(q.jobs.len() as u64, Relaxed);
        drop(q);
        self.wake.notify_one();
        Ok(())
    }

    /// Takes no new requests; those queued or running go on until
    /// `deadline`, when the rest are cancelled (`Failed`).
    pub fn close(&self, deadline: Instant) {
        let mut q = self.lock();
        q.closed = true;
        q.deadline = Some(deadline);
        drop(q);
        self.wake.notify_one();
    }

    /// Waits for the engine's thread to end (after [`Engine::close`]).
    pub fn join(&self) {
        let handle = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(h) = handle {
            let _ = h.join();
        }
    }

    fn run(&self) {
        let mut seqs: Vec<Seq> = vec![];
        let mut jobs: HashMap<u64, JobState> = HashMap::new();
        let mut next_job = 0u64;
        // Whether a step ran since the engine last went idle.
        let mut worked = false;
        loop {
            {
                let mut q = self.lock();
                while seqs.is_empty() && q.jobs.is_empty() {
                    if q.closed {
                        return;
                    }
                    if std::mem::take(&mut worked) {
                        // Idle again: the finished sequences' caches are
                        // dropped; give their pages back to the OS so the
                        // resident size returns to its idle level. Not under
                        // the queue lock: submit never waits on a trim.
                        drop(q);
                        weft::release_free_memory();
                        q = self.lock();
                        continue;
                    }
                    q = self.wake.wait_timeout(q, Duration::from_millis(200)).unwrap_or_else(|p| p.into_inner()).0;
                }
                if q.deadline.is_some_and(|d| Instant::now() >= d) {
                    for job in q.jobs.drain(..) {
                        let _ = job.events.send(Event::Failed { message: "the server shut down".into() });
                    }
                    for (_, j) in jobs.drain() {
                        let _ = j.events.send(Event::Failed { message: "the server shut down".into() });
                    }
                    seqs.clear();
                    self.update_gauges(&seqs, 0);
                    continue;
                }
                while let Some(job) = q.jobs.front() {
                    if seqs.len() + job.prompts.len() * job.checked.n > self.config.parallel {
                        break;
                    }
                    let job = q.jobs.pop_front().expect("front was Some");
                    self.admit(job, next_job, &mut seqs, &mut jobs);
                    next_job += 1;
                }
                self.metrics.waiting.store(q.jobs.len() as u64, Relaxed);
            }
            // A client that went away frees its sequences' caches now.
            jobs.retain(|_, j| {
                let gone = j.events.is_closed();
                if gone {
                    self.metrics.requests_cancelled.fetch_add(1, Relaxed);
                }
                !gone
            });
            seqs.retain(|s| jobs.contains_key(&s.job));
            if !seqs.is_empty() {
                self.step(&mut seqs, &mut jobs);
                worked = true;
            }
            let waiting = self.lock().jobs.len();
            self.update_gauges(&seqs, waiting);
        }
    }

    fn update_gauges(&self, seqs: &[Seq], waiting: usize) {
        let m = &self.metrics;
        m.running.store(seqs.len() as u64, Relaxed);
        m.waiting.store(waiting as u64, Relaxed);
        m.kv_used.store(seqs.iter().map(|s| s.cache.len() as u64).sum(), Relaxed);
        m.kv_allocated.store(seqs.iter().map(|s| s.cache.capacity() as u64).sum(), Relaxed);
    }

    fn admit(&self, job: Job, id: u64, seqs: &mut Vec<Seq>, jobs: &mut HashMap<u64, JobState>) {
        let ctx = self.config.ctx;
        let n = job.checked.n;
        let mut usage = Usage::default();
        let choices = job.prompts.len() * n;
        for (p, prompt) in job.prompts.into_iter().enumerate() {
            usage.prompt_tokens += prompt.len();
            let room = ctx.saturating_sub(prompt.len());
            let prompt = Arc::new(prompt);
            for i in 0..n {
                let index = p * n + i;
                seqs.push(Seq {
                    job: id,
                    index,
                    prompt: prompt.clone(),
                    filled: 0,
                    cache: self.model.llama.new_cache(),
                    input: vec![],
                    sampler: TokenSampler::new(job.checked.sampling.clone(), &prompt, index),
                    text: TextStream::new(job.checked.stop.clone()),
                    generated: 0,
                    max_tokens: job.checked.max_tokens.unwrap_or(room).min(room),
                    last_token: None,
                });
            }
        }
        self.metrics.prompt_tokens.fetch_add(usage.prompt_tokens as u64, Relaxed);
        jobs.insert(
            id,
            JobState { events: job.events, remaining: choices, usage, arrived: job.arrived, logprobs: job.checked.logprobs },
        );
    }

    /// One batched step over `seqs`; removes those that finished or failed.
    fn step(&self, seqs: &mut Vec<Seq>, jobs: &mut HashMap<u64, JobState>) {
        let mut budget = self.config.prefill_chunk.max(1);
        let mut included = vec![];
        for (i, s) in seqs.iter_mut().enumerate() {
            if s.filled < s.prompt.len() {
                let take = (s.prompt.len() - s.filled).min(budget);
                if take == 0 {
                    continue;
                }
                budget -= take;
                s.input = s.prompt[s.filled..s.filled + take].to_vec();
            }
            included.push(i);
        }
        let t0 = Instant::now();
        let logits = {
            let mut batch: Vec<(&[u32], &mut KvCache)> = seqs
                .iter_mut()
                .enumerate()
                .filter(|(i, _)| included.contains(i))
                .map(|(_, s)| (&s.input[..], &mut s.cache))
                .collect();
            self.model.llama.forward_batch(&mut batch).and_then(|l| l.to_vec::<f32>())
        };
        self.metrics.step.observe(t0.elapsed().as_secs_f64());
        let logits = match logits {
            Ok(l) => l,
            Err(e) => {
                // The step's caches now hold the failed result: every
                // request in the step fails; queued ones are untouched.
                let failed: Vec<u64> = included.iter().map(|&i| seqs[i].job).collect();
                for id in failed {
                    if let Some(j) = jobs.remove(&id) {
                        self.metrics.requests_failed.fetch_add(1, Relaxed);
                        let _ = j.events.send(Event::Failed { message: format!("generation failed: {e}") });
                    }
                }
                seqs.retain(|s| jobs.contains_key(&s.job));
                return;
            }
        };
        let vocab = self.model.llama.config.vocab_size;
        let tok = &self.model.tokenizer;
        let now = Instant::now();
        let mut done = vec![];
        for (row, &i) in included.iter().enumerate() {
            let s = &mut seqs[i];
            if s.filled < s.prompt.len() {
                s.filled += s.input.len();
                if s.filled < s.prompt.len() {
                    continue; // more prompt to read before the first token
                }
            }
            let Some(job) = jobs.get_mut(&s.job) else { continue };
            let mut row_logits = logits[row * vocab..(row + 1) * vocab].to_vec();
            let picked = s.sampler.pick(&mut row_logits, job.logprobs);
            s.generated += 1;
            job.usage.completion_tokens += 1;
            self.metrics.generated_tokens.fetch_add(1, Relaxed);
            match s.last_token {
                None => self.metrics.ttft.observe((now - job.arrived).as_secs_f64()),
                Some(t) => self.metrics.inter_token.observe((now - t).as_secs_f64()),
            }
            s.last_token = Some(now);
            let logprobs = job.logprobs.map(|_| TokenLogprob {
                token: tok.decode(&[picked.token], false).unwrap_or_default(),
                logprob: picked.logprob,
                top: picked.top.iter().map(|&(t, lp)| (tok.decode(&[t], false).unwrap_or_default(), lp)).collect(),
            });
            // A control token (end of turn, end of text) ends the output.
            let (mut text, mut finish) = if tok.is_special(picked.token) {
                (String::new(), Some(FinishReason::Stop))
            } else {
                let (t, stopped) = s.text.push(tok, picked.token);
                (t, stopped.then_some(FinishReason::Stop))
            };
            if finish.is_none() && (s.generated >= s.max_tokens || s.cache.len() + 1 > self.config.ctx) {
                text.push_str(&s.text.flush());
                finish = Some(FinishReason::Length);
            }
            if !text.is_empty() || logprobs.is_some() {
                let _ = job.events.send(Event::Token { index: s.index, text, logprobs });
            }
            match finish {
                None => s.input = vec![picked.token],
                Some(reason) => {
                    let _ = job.events.send(Event::Finished { index: s.index, reason });
                    job.remaining -= 1;
                    if job.remaining == 0 {
                        // Counted before the client can see the end, so a
                        // client that reads /metrics after its last event
                        // finds its request there.
                        self.metrics.requests_ok.fetch_add(1, Relaxed);
                        let _ = job.events.send(Event::Done { usage: job.usage });
                        jobs.remove(&s.job);
                    }
                    done.push(i);
                }
            }
        }
        // Finished sequences leave now; their caches are dropped here.
        let mut k = 0;
        seqs.retain(|_| {
            k += 1;
            !done.contains(&(k - 1))
        });
    }
}
