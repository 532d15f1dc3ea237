//! docs/architecture.md rules 7-9 on the CPU: failures poison dependents and reach every
//! waiter, other work goes on, intermediates are freed as soon as their
//! consumers ran. One test, run serially: it sets the process-wide memory
//! limit and reads the process-wide memory counters.

use std::sync::{Arc, Barrier};
use std::thread;
use weft::{ops, Array, Axes, Device, Error, Stream};

#[test]
fn failures_and_memory() {
    out_of_memory_reaches_every_waiter_and_the_next_eval_works();
    intermediates_are_freed_once_consumed();
}

fn out_of_memory_reaches_every_waiter_and_the_next_eval_works() {
    let x = Array::from_vec(vec![1.0f32; 1000], &[1000]).unwrap();
    let big = ops::broadcast_to(&x, &[1000, 1000]).unwrap(); // a view: no memory
    let y = (&big + &Array::scalar(1.0f32)).unwrap(); // needs 4 MB
    let z = (&y * &Array::scalar(2.0f32)).unwrap();
    let w = ops::exp(&z).unwrap();

    weft::set_memory_limit(weft::active_memory() + (1 << 20));
    let barrier = Arc::new(Barrier::new(3));
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let (w, barrier) = (w.clone(), barrier.clone());
            thread::spawn(move || {
                barrier.wait();
                w.eval()
            })
        })
        .collect();
    // Meanwhile, small work on another stream keeps working.
    let s = Stream::new(Device::cpu()).unwrap();
    let small = weft::with_stream(s, || (&x + &x).unwrap());
    assert_eq!(small.to_vec::<f32>().unwrap(), vec![2.0; 1000]);
    for h in waiters {
        let e = h.join().unwrap().unwrap_err();
        assert!(matches!(e.root(), Error::OutOfMemory { .. }), "{e}");
    }
    // Reading any array downstream of the failure raises, never returns data.
    assert!(matches!(y.to_vec::<f32>().unwrap_err(), Error::OutOfMemory { .. }));
    assert!(matches!(z.to_vec::<f32>().unwrap_err(), Error::InputFailed(_)));
    assert!(matches!(w.to_vec::<f32>().unwrap_err(), Error::InputFailed(_)));
    let res = ops::sum(&w, Axes::All, false).unwrap().item::<f32>();
    assert!(matches!(res, Err(Error::InputFailed(_))), "{res:?}");
    // Synchronizing the failed stream does not hang, and reports nothing stuck.
    y.stream().synchronize().unwrap();

    weft::set_memory_limit(usize::MAX);
    let y2 = (&big + &Array::scalar(1.0f32)).unwrap();
    let total = ops::sum(&y2, Axes::All, false).unwrap();
    assert_eq!(total.item::<f32>().unwrap(), 2.0e6);
}

fn intermediates_are_freed_once_consumed() {
    let n = 1 << 20; // 4 MB per float32 array
    let before = weft::active_memory();
    let a = Array::from_vec(vec![1.5f32; n], &[n]).unwrap();
    let d = {
        let b = (&a + &Array::scalar(1.0f32)).unwrap();
        let c = (&b * &Array::scalar(2.0f32)).unwrap();
        (&c - &Array::scalar(3.0f32)).unwrap()
        // b and c are now held only by the graph.
    };
    d.eval().unwrap();
    let held = weft::active_memory() as isize - before as isize;
    // `a` and `d` remain (give or take a few scalars made or freed by the
    // phase before); `b` and `c` were freed after their consumers ran.
    let want = 2 * 4 * n as isize;
    assert!(held < want + 4096, "holding {held} bytes: intermediates leaked");
    assert!(held > want - 4096, "holding {held} bytes: the output went missing");
    assert_eq!(d.to_vec::<f32>().unwrap()[n - 1], 2.0);
    drop((a, d));
    // The worker that ran `d` may hold its node for a moment after
    // publishing the result; the memory goes when it lets go.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while weft::active_memory() > before + 4096 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert!(weft::active_memory() <= before + 4096, "buffers outlived their arrays");
}
