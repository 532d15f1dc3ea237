//! GPU benchmarks (run by `scripts/gpu-check` on a machine with a GPU:
//! `gpu_bench --bench`). Without a GPU, or without `--bench`, it prints why
//! and exits 0, so `cargo test` on a CPU-only machine passes through it.
//!
//! Measures, each as the median of several timed runs after a warm-up:
//! 1. elementwise add of 2^28 float32, in GB/s, against a device-to-device
//!    copy of the same bytes (the bandwidth ceiling);
//! 2. bfloat16 matmul 4096^3 and 8192^3 in TFLOP/s;
//! 3. host overhead per op on a chain of 10,000 tiny ops (build, eval);
//! 4. K = 1, 2, 4 threads, each running a small MLP loop on its own
//!    stream, against the same loops serialized under one lock;
//! 5. tanh-GELU of 2^24 bfloat16 as 8 kernels (uncompiled) and as one
//!    fused kernel (`compile`, `backend/cuda/fused.rs`);
//! 6. 10,000 small kernels that do not fuse (softmax, then add, 5,000
//!    times) run eagerly, as a compiled replay and as a captured CUDA graph
//!    (`Compiled::capture`, `backend/cuda/graph.rs`): microseconds per kernel.

use std::sync::{Arc, Barrier, Mutex};
use std::time::Instant;
use weft::{ops, Array, Axes, Device, Dtype, Stream};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Seconds per call of `f`, median of `reps` after `warm` warm-ups.
fn time(warm: usize, reps: usize, mut f: impl FnMut()) -> f64 {
    for _ in 0..warm {
        f();
    }
    median(
        (0..reps)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

/// Nonzero, non-repeating values of `dtype`, computed on `s`.
fn data(s: Stream, shape: &[usize], dtype: Dtype, seed: f64) -> Array {
    let n: usize = shape.iter().product();
    let a = weft::with_stream(s, || {
        let i = ops::arange(0.0, n as f64, 1.0, Dtype::F32)?;
        let v = ops::sin(&ops::multiply(&i, &Array::scalar(0.618f32 + seed as f32))?)?;
        ops::astype(&ops::reshape(&v, &shape.iter().map(|&d| d as isize).collect::<Vec<_>>())?, dtype)
    })
    .unwrap();
    a.eval().unwrap();
    s.synchronize().unwrap();
    a
}

/// Device-to-device copy bandwidth through the driver directly.
fn copy_bandwidth(bytes: usize) -> f64 {
    use cudarc::driver::{result, sys};
    // SAFETY: weft has started the device, so its primary context exists;
    // retaining it again and making it current is allowed on any thread.
    let ctx = unsafe {
        let dev = result::device::get(0).unwrap();
        let ctx = result::primary_ctx::retain(dev).unwrap();
        result::ctx::set_current(ctx).unwrap();
        (dev, ctx)
    };
    // SAFETY: two fresh allocations of `bytes`, freed below; the copies
    // stay inside them, and the host synchronizes before timing ends.
    let secs = unsafe {
        let src = result::malloc_sync(bytes).unwrap();
        let dst = result::malloc_sync(bytes).unwrap();
        result::memset_d8_sync(src, 1, bytes).unwrap();
        let t = time(3, 20, || {
            sys::cuMemcpyDtoD_v2(dst, src, bytes).result().unwrap();
            result::ctx::synchronize().unwrap();
        });
        result::free_sync(src).unwrap();
        result::free_sync(dst).unwrap();
        t
    };
    // SAFETY: releases the retain above.
    unsafe { result::primary_ctx::release(ctx.0).unwrap() };
    let _ = ctx.1;
    2.0 * bytes as f64 / secs / 1e9
}

fn bandwidth() {
    let s = Stream::new(Device::gpu(0)).unwrap();
    let n = 1usize << 28;
    let x = data(s, &[n], Dtype::F32, 0.0);
    let y = data(s, &[n], Dtype::F32, 1.0);
    let t = time(3, 20, || {
        let z = weft::with_stream(s, || ops::add(&x, &y)).unwrap();
        z.eval().unwrap();
        s.synchronize().unwrap();
    });
    let add = 3.0 * 4.0 * n as f64 / t / 1e9;
    let copy = copy_bandwidth(4 * n);
    println!("| add 2^28 f32 | {:.3} ms | {add:.0} GB/s | d2d copy {copy:.0} GB/s | {:.0}% of copy |", t * 1e3, 100.0 * add / copy);
}

fn matmul() {
    let s = Stream::new(Device::gpu(0)).unwrap();
    for n in [4096usize, 8192] {
        let a = data(s, &[n, n], Dtype::BF16, 0.0);
        let b = data(s, &[n, n], Dtype::BF16, 0.5);
        let reps = if n == 4096 { 20 } else { 10 };
        let t = time(3, reps, || {
            let c = weft::with_stream(s, || ops::matmul(&a, &b)).unwrap();
            c.eval().unwrap();
            s.synchronize().unwrap();
        });
        println!("| bf16 matmul {n}^3 | {:.3} ms | {:.0} TFLOP/s | | |", t * 1e3, 2.0 * (n as f64).powi(3) / t / 1e12);
    }
}

fn overhead() {
    for (name, dev) in [("gpu", Device::gpu(0)), ("cpu", Device::cpu())] {
        let s = Stream::new(dev).unwrap();
        let n = 10_000;
        let one = Array::scalar(1.0f32);
        let x0 = weft::with_stream(s, || ops::full(&[16], 0.0f32)).unwrap();
        let mut build = Vec::new();
        let mut run = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            let mut y = x0.clone();
            weft::with_stream(s, || {
                for _ in 0..n {
                    y = ops::add(&y, &one).unwrap();
                }
            });
            build.push(t.elapsed().as_secs_f64());
            let t = Instant::now();
            y.eval().unwrap();
            s.synchronize().unwrap();
            run.push(t.elapsed().as_secs_f64());
            assert_eq!(y.to_vec::<f32>().unwrap()[0], n as f32);
        }
        println!(
            "| 10,000 tiny ops ({name}) | build {:.2} us/op | eval+sync {:.2} us/op | | |",
            median(build) / n as f64 * 1e6,
            median(run) / n as f64 * 1e6
        );
    }
}

/// `iters` steps of a 2-layer MLP forward on `s` (batch 64, 512 -> 1024 -> 512).
fn mlp_loop(s: Stream, w1: &Array, w2: &Array, iters: usize, lock: Option<&Mutex<()>>) {
    let x = data(s, &[64, 512], Dtype::BF16, 0.3);
    for _ in 0..iters {
        let _g = lock.map(|l| l.lock().unwrap());
        let y = weft::with_stream(s, || {
            let h = ops::tanh(&ops::matmul(&x, w1)?)?;
            ops::sum(&ops::matmul(&h, w2)?, Axes::All, false)
        })
        .unwrap();
        y.eval().unwrap();
        s.synchronize().unwrap();
    }
}

fn threads() {
    let iters = 300;
    let gs = Stream::new(Device::gpu(0)).unwrap();
    let w1 = data(gs, &[512, 1024], Dtype::BF16, 0.1);
    let w2 = data(gs, &[1024, 512], Dtype::BF16, 0.2);
    for k in [1usize, 2, 4] {
        let mut row = Vec::new();
        for locked in [false, true] {
            let lock = Arc::new(Mutex::new(()));
            let barrier = Arc::new(Barrier::new(k + 1));
            let hs: Vec<_> = (0..k)
                .map(|_| {
                    let (w1, w2, lock, barrier) = (w1.clone(), w2.clone(), lock.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        let s = Stream::new(Device::gpu(0)).unwrap();
                        mlp_loop(s, &w1, &w2, 5, None);
                        barrier.wait();
                        mlp_loop(s, &w1, &w2, iters, locked.then_some(&*lock));
                    })
                })
                .collect();
            barrier.wait();
            let t = Instant::now();
            for h in hs {
                h.join().unwrap();
            }
            row.push((k * iters) as f64 / t.elapsed().as_secs_f64());
        }
        println!(
            "| MLP loop, K={k} threads | own streams {:.0} steps/s | one lock {:.0} steps/s | x{:.2} | |",
            row[0],
            row[1],
            row[0] / row[1]
        );
    }
}

/// tanh-GELU from its elementwise ops (8 nodes, one fused chain compiled).
fn gelu(x: &[Array]) -> weft::Result<Vec<Array>> {
    let x = &x[0];
    let c = |v: f32| ops::astype(&Array::scalar(v), x.dtype());
    let inner = ops::multiply(&ops::add(x, &ops::multiply(&c(0.044715)?, &ops::multiply(&ops::multiply(x, x)?, x)?)?)?, &c(0.797_884_6)?)?;
    Ok(vec![ops::multiply(&ops::multiply(&c(0.5)?, x)?, &ops::add(&c(1.0)?, &ops::tanh(&inner)?)?)?])
}

fn fusion() {
    let s = Stream::new(Device::gpu(0)).unwrap();
    let n = 1usize << 24;
    let x = data(s, &[n], Dtype::BF16, 0.0);
    let (c, _) = weft::with_stream(s, || weft::transforms::Compiled::trace(gelu, std::slice::from_ref(&x))).unwrap();
    let run = |compiled: bool| {
        time(3, 20, || {
            let y = weft::with_stream(s, || if compiled { c.call(std::slice::from_ref(&x)) } else { gelu(std::slice::from_ref(&x)) }).unwrap();
            y[0].eval().unwrap();
            s.synchronize().unwrap();
        })
    };
    let (plain, fused) = (run(false), run(true));
    println!(
        "| tanh-GELU 2^24 bf16 | {:.3} ms compiled ({} fused) | {:.0} GB/s | uncompiled {:.3} ms | {:.1}x |",
        fused * 1e3,
        c.primitive_counts().get("Fused").copied().unwrap_or(0),
        4.0 * n as f64 / fused / 1e9,
        plain * 1e3,
        plain / fused
    );
}

fn main() {
    if let Err(e) = Stream::new(Device::gpu(0)) {
        println!("gpu_bench skipped: {e}");
        return;
    }
    if !std::env::args().any(|a| a == "--bench") {
        println!("gpu_bench: a GPU is present; run with --bench to measure");
        return;
    }
    println!("| what | time | rate | reference | |");
    println!("| --- | --- | --- | --- | --- |");
    let only: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let want = |n: &str| only.is_empty() || only.iter().any(|o| o == n);
    if want("bandwidth") {
        bandwidth();
    }
    if want("matmul") {
        matmul();
    }
    if want("overhead") {
        overhead();
    }
    if want("threads") {
        threads();
    }
    if want("fusion") {
        fusion();
    }
    if want("graph") {
        graph();
    }
}

/// Item 6 of the module doc.
fn graph() {
    let s = Stream::new(Device::gpu(0)).unwrap();
    let steps = 5_000;
    let kernels = 2 * steps;
    let one = Array::scalar(1.0f32);
    let f = |x: &[Array]| -> weft::Result<Vec<Array>> {
        let mut y = x[0].clone();
        for _ in 0..steps {
            y = ops::softmax(&ops::add(&y, &one)?, &[-1])?;
        }
        Ok(vec![y])
    };
    let x = data(s, &[16], Dtype::F32, 0.1);
    let eager = time(1, 5, || {
        let y = weft::with_stream(s, || f(&[x.clone()])).unwrap();
        y[0].eval().unwrap();
        s.synchronize().unwrap();
    });
    let (c, _) = weft::with_stream(s, || weft::transforms::Compiled::trace(f, &[x.clone()])).unwrap();
    let replay = time(1, 5, || {
        let y = weft::with_stream(s, || c.call(&[x.clone()])).unwrap();
        y[0].eval().unwrap();
        s.synchronize().unwrap();
    });
    let t = Instant::now();
    let g = weft::with_stream(s, || c.capture(&[x.clone()])).unwrap();
    let capture = t.elapsed().as_secs_f64();
    let mut last = None;
    let graph = time(2, 10, || {
        let y = g.call(&[x.clone()]).unwrap();
        // Reading the result waits for the graph (and copies 64 bytes back).
        y[0].to_vec::<f32>().unwrap();
        last = Some(y);
    });
    // The graph's result is the replay's, bit for bit.
    let want = weft::with_stream(s, || c.call(&[x.clone()])).unwrap();
    assert_eq!(last.unwrap()[0].to_vec::<f32>().unwrap(), want[0].to_vec::<f32>().unwrap());
    let per = |t: f64| t / kernels as f64 * 1e6;
    println!("| 10,000 kernels (softmax, add), eager: build + eval + sync | {:.2} us/kernel | | | |", per(eager));
    println!("| same, compiled replay: call + eval + sync | {:.2} us/kernel | | | |", per(replay));
    println!(
        "| same, captured CUDA graph: call + read | {:.2} us/kernel | capture {:.0} ms | {} buffers held | |",
        per(graph),
        capture * 1e3,
        g.buffers()
    );
}
