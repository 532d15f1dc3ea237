//! Counters and histograms per model, written in Prometheus' text format
//! at `/metrics`. Everything is an atomic: the engines update them from
//! their threads without a lock, and a scrape reads them from any thread.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 14] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

pub struct Histogram {
    counts: [AtomicU64; BUCKETS.len() + 1],
    sum_us: AtomicU64,
}

impl Histogram {
    fn new() -> Histogram {
        Histogram { counts: std::array::from_fn(|_| AtomicU64::new(0)), sum_us: AtomicU64::new(0) }
    }

    pub fn observe(&self, seconds: f64) {
        let i = BUCKETS.iter().position(|&b| seconds <= b).unwrap_or(BUCKETS.len());
        self.counts[i].fetch_add(1, Relaxed);
        self.sum_us.fetch_add((seconds * 1e6) as u64, Relaxed);
    }

    fn write(&self, out: &mut String, name: &str, model: &str) {
        let mut total = 0;
        for (i, c) in self.counts.iter().enumerate() {
            total += c.load(Relaxed);
            let le = BUCKETS.get(i).map_or("+Inf".to_string(), |b| b.to_string());
            let _ = writeln!(out, "{name}_bucket{{model=\"{model}\",le=\"{le}\"}} {total}");
        }
        let _ = writeln!(out, "{name}_sum{{model=\"{model}\"}} {}", self.sum_us.load(Relaxed) as f64 / 1e6);
        let _ = writeln!(out, "{name}_count{{model=\"{model}\"}} {total}");
    }
}

/// One model's numbers.
pub struct ModelMetrics {
    pub name: String,
    pub running: AtomicU64,
    pub waiting: AtomicU64,
    pub prompt_tokens: AtomicU64,
    pub generated_tokens: AtomicU64,
    pub requests_ok: AtomicU64,
    pub requests_cancelled: AtomicU64,
    pub requests_failed: AtomicU64,
    pub requests_rejected: AtomicU64,
    /// Positions filled in the running sequences' caches, and allocated.
    pub kv_used: AtomicU64,
    pub kv_allocated: AtomicU64,
    /// Positions the model may hold at once: `--parallel` x `--ctx`.
    pub kv_capacity: u64,
    /// Bytes per cached position (all layers, keys and values).
    pub kv_bytes_per_position: u64,
    pub ttft: Histogram,
    pub inter_token: Histogram,
    pub step: Histogram,
}

impl ModelMetrics {
    pub fn new(name: &str, kv_capacity: u64, kv_bytes_per_position: u64) -> ModelMetrics {
        let z = || AtomicU64::new(0);
        ModelMetrics {
            name: name.to_string(),
            running: z(),
            waiting: z(),
            prompt_tokens: z(),
            generated_tokens: z(),
            requests_ok: z(),
            requests_cancelled: z(),
            requests_failed: z(),
            requests_rejected: z(),
            kv_used: z(),
            kv_allocated: z(),
            kv_capacity,
            kv_bytes_per_position,
            ttft: Histogram::new(),
            inter_token: Histogram::new(),
            step: Histogram::new(),
        }
    }
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// The text of `/metrics` for `models`.
pub fn render(models: &[&ModelMetrics]) -> String {
    let mut out = String::new();
    let gauges: [(&str, &str, fn(&ModelMetrics) -> f64); 6] = [
        ("weft_requests_running", "sequences generating now", |m| m.running.load(Relaxed) as f64),
        ("weft_requests_waiting", "requests queued, not yet running", |m| m.waiting.load(Relaxed) as f64),
        ("weft_kv_cache_used_positions", "positions filled in running sequences' KV caches", |m| m.kv_used.load(Relaxed) as f64),
        ("weft_kv_cache_allocated_bytes", "bytes allocated for running sequences' KV caches", |m| {
            (m.kv_allocated.load(Relaxed) * m.kv_bytes_per_position) as f64
        }),
        ("weft_kv_cache_capacity_positions", "positions the model may cache at once (parallel x ctx)", |m| m.kv_capacity as f64),
        ("weft_kv_cache_usage_ratio", "filled positions over capacity", |m| {
            m.kv_used.load(Relaxed) as f64 / m.kv_capacity.max(1) as f64
        }),
    ];
    for (name, help, get) in gauges {
        family(&mut out, name, "gauge", help);
        for m in models {
            let _ = writeln!(out, "{name}{{model=\"{}\"}} {}", m.name, get(m));
        }
    }
    let counters: [(&str, &str, fn(&ModelMetrics) -> u64); 2] = [
        ("weft_prompt_tokens_total", "prompt tokens processed", |m| m.prompt_tokens.load(Relaxed)),
        ("weft_generation_tokens_total", "tokens generated", |m| m.generated_tokens.load(Relaxed)),
    ];
    for (name, help, get) in counters {
        family(&mut out, name, "counter", help);
        for m in models {
            let _ = writeln!(out, "{name}{{model=\"{}\"}} {}", m.name, get(m));
        }
    }
    family(&mut out, "weft_requests_total", "counter", "requests finished, by outcome");
    for m in models {
        for (outcome, c) in [
            ("ok", &m.requests_ok),
            ("cancelled", &m.requests_cancelled),
            ("failed", &m.requests_failed),
            ("rejected", &m.requests_rejected),
        ] {
            let _ = writeln!(out, "weft_requests_total{{model=\"{}\",outcome=\"{outcome}\"}} {}", m.name, c.load(Relaxed));
        }
    }
    for (name, help, get) in [
        ("weft_time_to_first_token_seconds", "from arrival to the first generated token", (|m| &m.ttft) as fn(&ModelMetrics) -> &Histogram),
        ("weft_inter_token_latency_seconds", "between consecutive tokens of a sequence", |m| &m.inter_token),
        ("weft_step_seconds", "one batched model step (all running sequences)", |m| &m.step),
    ] {
        family(&mut out, name, "histogram", help);
        for m in models {
            get(m).write(&mut out, name, &m.name);
        }
    }
    out
}
