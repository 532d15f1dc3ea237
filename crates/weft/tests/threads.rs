//! The thread scenarios users hit (docs/architecture.md rules 1-4), on the CPU backend: streams and arrays used
//! from threads other than the ones that made them.

use std::sync::{Arc, Barrier};
use std::thread;
use weft::{ops, Array, Device, Dtype, Stream};

fn vec_f32(n: usize, seed: u32) -> Vec<f32> {
    (0..n).map(|i| ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) % 1000) as f32 / 100.0).collect()
}

/// `((x * 2) + 1) * x`, lazily.
fn small_graph(x: &Array) -> Array {
    let two = Array::scalar(2.0f32);
    let one = Array::scalar(1.0f32);
    let y = (&(x * &two).unwrap() + &one).unwrap();
    (&y * x).unwrap()
}

fn reference(x: &[f32]) -> Vec<f32> {
    x.iter().map(|&v| (v * 2.0 + 1.0) * v).collect()
}

#[test]
fn stream_made_on_main_thread_is_used_by_workers() {
    // As in mlx-lm: `generation_stream = new_stream(...)` at import time.
    let s = Stream::new(Device::cpu()).unwrap();
    let handles: Vec<_> = (0..4)
        .map(|t| {
            thread::spawn(move || {
                weft::with_stream(s, || {
                    let data = vec_f32(1000, t);
                    let x = Array::from_slice(&data, &[1000]).unwrap();
                    let y = small_graph(&x);
                    assert_eq!(y.stream(), s);
                    y.eval().unwrap();
                    assert_eq!(y.to_vec::<f32>().unwrap(), reference(&data));
                })
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    s.synchronize().unwrap();
}

#[test]
fn lazy_array_built_on_one_thread_is_evaluated_on_another() {
    let data = vec_f32(4096, 7);
    let x = Array::from_slice(&data, &[64, 64]).unwrap();
    let y = small_graph(&x);
    assert!(!y.is_evaluated());
    let got = thread::spawn(move || y.to_vec::<f32>().unwrap()).join().unwrap();
    assert_eq!(got, reference(&data));
}

#[test]
fn array_built_in_a_thread_that_exited() {
    let data = vec_f32(100, 3);
    let d2 = data.clone();
    let y = thread::spawn(move || {
        // Built on the exited thread's own default and thread-local streams.
        let tl = Stream::new_thread_local(Device::cpu()).unwrap();
        weft::with_stream(tl, || small_graph(&Array::from_slice(&d2, &[100]).unwrap()))
    })
    .join()
    .unwrap();
    assert!(!y.is_evaluated());
    assert_eq!(y.to_vec::<f32>().unwrap(), reference(&data));
    // Its stream still exists and can be synchronized from here.
    y.stream().synchronize().unwrap();
}

#[test]
fn thread_local_stream_resolves_per_thread_and_records_the_concrete_stream() {
    let tl = Stream::new_thread_local(Device::cpu()).unwrap();
    let here = weft::with_stream(tl, || ops::full(&[2], 1.0f32).unwrap());
    assert!(!here.stream().is_thread_local());
    let there = thread::spawn(move || weft::with_stream(tl, || ops::full(&[2], 1.0f32).unwrap()))
        .join()
        .unwrap();
    assert!(!there.stream().is_thread_local());
    // Resolving twice on one thread gives the same queue.
    assert_eq!(tl.resolve(), tl.resolve());
    // And the array made on the other thread evaluates here.
    assert_eq!((&here + &there).unwrap().to_vec::<f32>().unwrap(), vec![2.0, 2.0]);
}

#[test]
fn shared_lazy_subgraph_consumed_by_per_thread_streams() {
    let data = vec_f32(2048, 11);
    let x = Array::from_slice(&data, &[2048]).unwrap();
    let shared = small_graph(&x); // lazy, on the main thread's stream
    let barrier = Arc::new(Barrier::new(4));
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let (shared, barrier) = (shared.clone(), barrier.clone());
            thread::spawn(move || {
                let s = Stream::new(Device::cpu()).unwrap();
                let out = weft::with_stream(s, || (&shared + &Array::scalar(t as f32)).unwrap());
                barrier.wait();
                out.to_vec::<f32>().unwrap()
            })
        })
        .collect();
    let base = reference(&data);
    for (t, h) in handles.into_iter().enumerate() {
        let got = h.join().unwrap();
        let want: Vec<f32> = base.iter().map(|v| v + t as f32).collect();
        assert_eq!(got, want);
    }
}

#[test]
fn one_stream_fed_by_several_threads_then_synchronized_by_another() {
    let s = Stream::new(Device::cpu()).unwrap();
    let per_thread = 50;
    let handles: Vec<_> = (0..3)
        .map(|t| {
            thread::spawn(move || {
                let mut arrays = Vec::new();
                for i in 0..per_thread {
                    let x = Array::from_slice(&vec_f32(64, t * 1000 + i), &[64]).unwrap();
                    let y = weft::with_stream(s, || small_graph(&x));
                    weft::async_eval(&[y.clone()]).unwrap();
                    arrays.push(y);
                }
                arrays
            })
        })
        .collect();
    let per_thread_arrays: Vec<Vec<Array>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    // Another thread synchronizes the stream: everything submitted is done.
    thread::spawn(move || s.synchronize().unwrap()).join().unwrap();
    let mut positions = Vec::new();
    for arrays in &per_thread_arrays {
        let mut last = None;
        for y in arrays {
            assert!(y.is_evaluated(), "synchronize returned before submitted work ran");
            let p = y.exec_position().expect("ran");
            // FIFO: one thread's submissions run in the order it made them.
            assert!(last < Some(p), "stream ran a later submission first");
            last = Some(p);
            positions.push(p);
        }
    }
    // Every output holds its own slot in the one queue's order (rule 1).
    positions.sort_unstable();
    positions.dedup();
    assert_eq!(positions.len(), 3 * per_thread as usize);
}

#[test]
fn two_hundred_short_lived_threads_leave_no_threads_behind() {
    fn os_threads() -> usize {
        std::fs::read_dir("/proc/self/task").map(|d| d.count()).unwrap_or(0)
    }
    // Warm the pool up first so its threads are counted in the baseline.
    small_graph(&Array::from_slice(&[1.0f32], &[1]).unwrap()).eval().unwrap();
    let before = os_threads();
    for i in 0..200 {
        thread::spawn(move || {
            let tl = Stream::new_thread_local(Device::cpu()).unwrap();
            let y = weft::with_stream(tl, || small_graph(&Array::from_slice(&[i as f32], &[1]).unwrap()));
            assert_eq!(y.item::<f32>().unwrap(), (i as f32 * 2.0 + 1.0) * i as f32);
        })
        .join()
        .unwrap();
    }
    let after = os_threads();
    // Other tests of this binary run in parallel threads of their own; allow
    // for them, but 200 evaluating threads must not leave 200 behind.
    assert!(after <= before + 16, "threads grew from {before} to {after}");
}

#[test]
fn deep_chains_evaluate_and_drop_without_recursion() {
    let mut x = Array::from_slice(&[0.0f32; 4], &[4]).unwrap();
    let one = Array::scalar(1.0f32);
    for _ in 0..20_000 {
        x = (&x + &one).unwrap();
    }
    let y = x.clone();
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![20_000.0; 4]);
    // An unevaluated deep chain drops iteratively too.
    let mut z = Array::from_slice(&[0.0f32; 4], &[4]).unwrap();
    for _ in 0..200_000 {
        z = (&z + &one).unwrap();
    }
    drop(z);
}

#[test]
fn streams_are_copy_send_sync_and_pooled() {
    fn assert_traits<T: Copy + Send + Sync + 'static>() {}
    assert_traits::<Stream>();
    fn assert_send_sync<T: Send + Sync + Clone>() {}
    assert_send_sync::<Array>();
    // More streams than the pool holds share queues instead of failing.
    let streams: Vec<Stream> = (0..500).map(|_| Stream::new(Device::cpu()).unwrap()).collect();
    let distinct: std::collections::HashSet<_> = streams.iter().map(|s| s.index()).collect();
    assert!(distinct.len() <= 64, "{} concrete queues", distinct.len());
    let x = weft::with_stream(streams[499], || ops::arange(0.0, 3.0, 1.0, Dtype::I32).unwrap());
    assert_eq!(x.to_vec::<i32>().unwrap(), vec![0, 1, 2]);
}

#[test]
fn a_missing_gpu_is_a_clear_error() {
    match Stream::new(Device::gpu(0)) {
        Err(e) => assert!(matches!(e, weft::Error::DeviceUnavailable(_)), "{e}"),
        // With the CUDA backend on a GPU machine, the stream works.
        Ok(s) => s.synchronize().unwrap(),
    }
    // CPU work is unaffected either way.
    assert_eq!(ops::full(&[1], 5i32).unwrap().item::<i32>().unwrap(), 5);
}
