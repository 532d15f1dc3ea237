//! Fairness (docs/architecture.md, "Queues"; issue 10 item 6): a stream
//! with work finishes while other threads keep their own streams' queues
//! full, on a pool of one worker. On b2ef225 a runner that yielded
//! re-spawned itself onto that worker's LIFO deque, ahead of every runner
//! waiting outside, so the third stream waited until the busy threads gave
//! up.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use weft::{ops, Device, Stream};

#[test]
fn a_stream_progresses_while_others_keep_their_queues_full() {
    // One worker: the tightest pool (set before weft's pool starts; this
    // binary holds only this test).
    std::env::set_var("WEFT_NUM_THREADS", "1");
    let done = Arc::new(AtomicBool::new(false));
    // Each busy thread stops when the main thread's add finished, or after
    // `ROUNDS` rounds of 64 queued ops; it reports which came first.
    const ROUNDS: usize = 5_000;
    let busy: Vec<_> = (0..2)
        .map(|_| {
            let done = done.clone();
            std::thread::spawn(move || {
                let s = Stream::new(Device::cpu()).unwrap();
                let x = weft::with_stream(s, || ops::full(&[256], 1.0f32)).unwrap();
                for _ in 0..ROUNDS {
                    if done.load(Ordering::SeqCst) {
                        return true;
                    }
                    let ys: Vec<_> =
                        (0..64).map(|_| weft::with_stream(s, || ops::exp(&x)).unwrap()).collect();
                    weft::async_eval(&ys).unwrap();
                }
                done.load(Ordering::SeqCst)
            })
        })
        .collect();
    // Let the busy threads fill their queues first.
    let s = Stream::new(Device::cpu()).unwrap();
    while weft::kernels_run() < 256 {
        std::thread::yield_now();
    }
    let a = weft::with_stream(s, || ops::add(&weft::Array::scalar(1.0f32), &weft::Array::scalar(2.0f32))).unwrap();
    assert_eq!(a.item::<f32>().unwrap(), 3.0);
    done.store(true, Ordering::SeqCst);
    for b in busy {
        assert!(b.join().unwrap(), "the third stream finished only after the busy threads stopped");
    }
}
