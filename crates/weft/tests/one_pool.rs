//! All parallel work runs in weft's pool (issue 10 item 11): a large
//! strided read from a user thread must not run on rayon's global pool (on
//! b2ef225 `fill_rows` ran there, a second pool beside weft's).
//!
//! The check: rayon's global pool gets one thread, and the test keeps that
//! thread busy while it reads. Work sent to the global pool could not start
//! until the test lets go, so the read finishing first proves it never went
//! there. (The timeout only decides how long a regression takes to report.)

use std::sync::mpsc;
use std::time::Duration;
use weft::ops;

#[test]
fn host_reads_do_not_use_rayons_global_pool() {
    rayon::ThreadPoolBuilder::new().num_threads(1).build_global().unwrap();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let (busy_tx, busy_rx) = mpsc::channel::<()>();
    rayon::spawn(move || {
        busy_tx.send(()).unwrap();
        let _ = release_rx.recv();
    });
    busy_rx.recv().unwrap(); // the global pool's only thread is now occupied

    let (done_tx, done_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let a = ops::arange(0.0, (1 << 18) as f64, 1.0, weft::Dtype::F32).unwrap();
        let t = ops::transpose(&ops::reshape(&a, &[512, 512]).unwrap(), &[]).unwrap();
        let v = t.to_vec::<f32>().unwrap(); // strided: 262144 elements through fill_rows
        let _ = done_tx.send(v[1]);
    });
    let got = done_rx.recv_timeout(Duration::from_secs(120));
    release_tx.send(()).unwrap();
    assert_eq!(got, Ok(512.0), "the host read waited for rayon's global pool");
}
