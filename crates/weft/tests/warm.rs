//! The pool's warmers (`scheduler/warm.rs`): while CPU streams run, idle
//! workers stay awake taking pool work; they hold at most `pool size - 1`
//! slots, they leave soon after the work ends (an idle process burns no
//! CPU), and with them many threads on their own streams still compute
//! exactly what one thread computes alone.

use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};
use weft::{ops, Array, Device, Stream};

/// One round of a thread's chain: `x * 1.5 + t` (elementwise, exact in
/// float32 the same way on every path).
fn step(x: &Array, t: f32) -> Array {
    ops::add(&ops::multiply(x, &Array::scalar(1.5f32)).unwrap(), &Array::scalar(t)).unwrap()
}

#[test]
fn warmers_come_with_cpu_work_stay_within_the_pool_and_leave_after_it() {
    // Set before weft's pool starts (this binary holds only this test).
    std::env::set_var("WEFT_NUM_THREADS", "3");
    std::env::set_var("WEFT_SPIN_US", "2000");
    let before = weft::warmers();
    const N: usize = 1 << 17; // large enough for the kernels to split across the pool
    // Ten runs: the hang this test once caught came about one run in three.
    for run in 0..10 {
        // A run that hangs fails here instead of holding CI until its time
        // limit (a warmer under a stolen kernel half held it: warm.rs).
        let (done, finished) = std::sync::mpsc::channel();
        let threads: Vec<_> = (0..6)
            .map(|t| {
                let done = done.clone();
                std::thread::spawn(move || {
                    let s = Stream::new(Device::cpu()).unwrap();
                    let start: Vec<f32> = (0..N).map(|i| (i % 97) as f32 * 0.25 - t as f32).collect();
                    let mut x = weft::with_stream(s, || Array::from_slice(&start, &[N])).unwrap();
                    let mut want = start;
                    for round in 0..40 {
                        x = weft::with_stream(s, || step(&x, t as f32 + round as f32));
                        for v in want.iter_mut() {
                            *v = *v * 1.5 + (t as f32 + round as f32);
                        }
                        if round % 8 == 7 {
                            weft::eval(&[x.clone()]).unwrap();
                            // Scale down (by a power of two: exact) so the values stay in range.
                            x = weft::with_stream(s, || ops::multiply(&x, &Array::scalar(0.0625f32))).unwrap();
                            for v in want.iter_mut() {
                                *v *= 0.0625;
                            }
                        }
                    }
                    assert_eq!(x.to_vec::<f32>().unwrap(), want, "thread {t}: a result differs from the plain loop's");
                    done.send(t).unwrap();
                })
            })
            .collect();
        drop(done);
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match finished.recv_timeout(left) {
                Ok(_) => continue,
                // Every thread ended (one that panicked sent nothing: join says why).
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    panic!("run {run}: six CPU streams did not finish within 120 s: the pool hangs ({:?})", weft::warmers())
                }
            }
        }
        for t in threads {
            t.join().unwrap();
        }
    }
    let after = weft::warmers();
    assert!(after.spawned > before.spawned, "no warmer came while six CPU streams ran: {after:?}");
    assert!(after.peak <= 2, "more warmer slots than pool threads but one: {after:?}");
    let t0 = Instant::now();
    while weft::warmers().alive > 0 {
        assert!(t0.elapsed() < Duration::from_secs(30), "warmers still alive 30 s after the work ended: {:?}", weft::warmers());
        std::thread::sleep(Duration::from_millis(1));
    }
}
