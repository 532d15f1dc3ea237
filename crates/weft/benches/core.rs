//! Core runtime benchmarks, printed as `name<TAB>value<TAB>unit` lines for
//! `scripts/bench-cpu`, which runs the peers (NumPy, MLX) in the same run.
//!
//! `cargo bench -p weft --bench core [-- filter]`

use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};
use weft::{ops, Array, Device, Dtype, Stream};

/// Median of `reps` timings of `f`, after one warm-up.
fn median(reps: usize, mut f: impl FnMut()) -> Duration {
    f();
    let mut t: Vec<Duration> = (0..reps)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed()
        })
        .collect();
    t.sort();
    t[reps / 2]
}

fn report(name: &str, value: f64, unit: &str) {
    println!("{name}\t{value:.3}\t{unit}");
}

/// Build + eval of a chain of `n` elementwise ops on a 4-element array.
fn op_overhead() {
    let n = 10_000;
    let x = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
    let c = Array::scalar(1.0001f32);
    let d = median(15, || {
        let mut y = x.clone();
        for i in 0..n {
            y = if i % 2 == 0 { (&y * &c).unwrap() } else { (&y + &c).unwrap() };
        }
        y.eval().unwrap();
    });
    report("op_overhead_10k_chain", d.as_secs_f64() * 1e6 / n as f64, "us/op");
}

fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        })
        .collect()
}

fn matmul(n: usize) {
    let a = Array::from_vec(random(n * n, 1), &[n, n]).unwrap();
    let b = Array::from_vec(random(n * n, 2), &[n, n]).unwrap();
    let reps = if n >= 1024 { 7 } else { 31 };
    let d = median(reps, || ops::matmul(&a, &b).unwrap().eval().unwrap());
    let gflops = 2.0 * (n as f64).powi(3) / d.as_secs_f64() / 1e9;
    report(&format!("matmul_f32_{n}"), gflops, "GFLOP/s");
}

/// A small MLP: 4 layers of [64, 256] x [256, 256] with tanh, `steps` times.
struct Mlp {
    x: Array,
    w: Vec<Array>,
}

impl Mlp {
    fn new(seed: u64) -> Mlp {
        let x = Array::from_vec(random(64 * 256, seed), &[64, 256]).unwrap();
        let w = (0..4)
            .map(|i| {
                let v: Vec<f32> = random(256 * 256, seed * 10 + i).iter().map(|x| x * 0.1).collect();
                Array::from_vec(v, &[256, 256]).unwrap()
            })
            .collect();
        Mlp { x, w }
    }

    fn step(&self) {
        let mut h = self.x.clone();
        for w in &self.w {
            h = ops::tanh(&ops::matmul(&h, w).unwrap()).unwrap();
        }
        h.eval().unwrap();
    }
}

/// K threads each running an MLP loop on a thread-local stream, in
/// parallel and then serialized under one lock: aggregate steps/s.
fn mlp_threads() {
    let steps = 60;
    let tl = Stream::new_thread_local(Device::cpu()).unwrap();
    for k in 1..=3 {
        for locked in [false, true] {
            let lock = Arc::new(Mutex::new(()));
            let barrier = Arc::new(Barrier::new(k + 1));
            let handles: Vec<_> = (0..k)
                .map(|i| {
                    let (lock, barrier) = (lock.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        let mlp = weft::with_stream(tl, || Mlp::new(i as u64 + 1));
                        mlp.step();
                        barrier.wait();
                        weft::with_stream(tl, || {
                            for _ in 0..steps {
                                let _g = locked.then(|| lock.lock().unwrap());
                                mlp.step();
                            }
                        });
                    })
                })
                .collect();
            barrier.wait();
            let start = Instant::now();
            for h in handles {
                h.join().unwrap();
            }
            let rate = (k * steps) as f64 / start.elapsed().as_secs_f64();
            let mode = if locked { "locked" } else { "parallel" };
            report(&format!("mlp_k{k}_{mode}"), rate, "steps/s");
        }
    }
}

/// A quantized linear layer's step of `m` rows: `x [m, 576] @ w.T` for a
/// 4-bit `w [1536, 576]` in groups of 32 (SmolLM2-135M's MLP up-projection,
/// float16 scales as GGUF's Q4_1 holds them), with float and with int8
/// activations, for the row counts a batched decode step has.
fn qmm_rows() {
    let (n, k) = (1536, 576);
    let w = Array::from_vec(random(n * k, 3), &[n, k]).unwrap();
    let (wq, s, b) = ops::quantize(&w, 32, 4).unwrap();
    let (s, b) = (ops::astype(&s, Dtype::F16).unwrap(), ops::astype(&b, Dtype::F16).unwrap());
    for a in [&wq, &s, &b] {
        a.eval().unwrap();
    }
    for m in [1, 4, 8, 9, 16, 24, 32, 64] {
        let x = Array::from_vec(random(m * k, 4 + m as u64), &[m, k]).unwrap();
        let f = median(51, || ops::quantized_matmul(&x, &wq, &s, &b, true, 32, 4).unwrap().eval().unwrap());
        let i = median(51, || ops::quantized_matmul_int8(&x, &wq, &s, &b, true, 32, 4).unwrap().eval().unwrap());
        report(&format!("qmm_q4_rows{m}_float"), f.as_secs_f64() * 1e6, "us");
        report(&format!("qmm_q4_rows{m}_int8"), i.as_secs_f64() * 1e6, "us");
    }
}

fn main() {
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let run = |name: &str| filter.as_deref().is_none_or(|f| name.contains(f));
    if run("op_overhead") {
        op_overhead();
    }
    if run("matmul") {
        matmul(256);
        matmul(1024);
    }
    if run("mlp") {
        mlp_threads();
    }
    if run("qmm_rows") {
        qmm_rows();
    }
    let _ = Dtype::F32;
}
