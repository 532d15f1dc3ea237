//! `slice_update` writes in place into a buffer nothing else references
//! (a KV cache appended to step by step), and copies whenever anything could
//! still read the old contents: a held array, a view, a pending consumer.
//!
//! One test function: it reads the process-wide memory counters, which
//! other tests running in parallel would disturb.

use weft::ops::{self, SliceArg};
use weft::{Array, Dtype};

const H: usize = 32;
const CAP: usize = 512;
const D: usize = 64;

fn row(step: usize) -> Array {
    let v: Vec<f32> = (0..H * D).map(|i| (step * 1000 + i) as f32).collect();
    Array::from_vec(v, &[H, 1, D]).unwrap()
}

fn at(step: usize) -> [SliceArg; 2] {
    [SliceArg::ALL, SliceArg::range(step as isize, step as isize + 1)]
}

/// The cache after `steps` appends, computed directly.
fn reference(steps: usize) -> Vec<f32> {
    let mut want = vec![0.0f32; H * CAP * D];
    for s in 0..steps {
        for h in 0..H {
            for d in 0..D {
                want[(h * CAP + s) * D + d] = (s * 1000 + h * D + d) as f32;
            }
        }
    }
    want
}

#[test]
fn slice_update_donates_only_unshared_buffers() {
    let cache_bytes = H * CAP * D * 4;
    let mut cache = ops::zeros(&[H, CAP, D], Dtype::F32).unwrap();
    cache.eval().unwrap();

    // 1. Appends with the old handle dropped: the cache is never copied, so
    //    the peak stays far below two caches.
    weft::reset_peak_memory();
    let base = weft::active_memory();
    for s in 0..64 {
        let update = row(s);
        cache = ops::slice_update(&cache, &update, &at(s)).unwrap();
        cache.eval().unwrap();
    }
    let grew = weft::peak_memory() - base;
    assert!(
        grew < cache_bytes / 2,
        "appending 64 rows grew the peak by {grew} bytes; a copy of the cache is {cache_bytes}"
    );
    assert_eq!(cache.to_vec::<f32>().unwrap(), reference(64));

    // 2. A held handle keeps its contents.
    let held = cache.clone();
    let next = ops::slice_update(&cache, &row(64), &at(64)).unwrap();
    next.eval().unwrap();
    assert_eq!(held.to_vec::<f32>().unwrap(), reference(64));
    assert_eq!(next.to_vec::<f32>().unwrap(), reference(65));
    drop(held);
    cache = next;

    // 3. An evaluated view of the old cache keeps its contents.
    let view = ops::slice(&cache, &[SliceArg::ALL, SliceArg::range(60, 70)]).unwrap();
    view.eval().unwrap();
    let view_before = view.to_vec::<f32>().unwrap();
    cache = ops::slice_update(&cache, &row(65), &at(65)).unwrap();
    cache.eval().unwrap();
    assert_eq!(view.to_vec::<f32>().unwrap(), view_before);
    assert_eq!(cache.to_vec::<f32>().unwrap(), reference(66));

    // 4. A lazy consumer of the old cache, not yet run, sees the old
    //    contents even though the update runs first.
    let doubled = ops::multiply(&cache, &Array::scalar(2.0f32)).unwrap();
    cache = ops::slice_update(&cache, &row(66), &at(66)).unwrap();
    cache.eval().unwrap();
    let want: Vec<f32> = reference(66).iter().map(|x| x * 2.0).collect();
    assert_eq!(doubled.to_vec::<f32>().unwrap(), want);
    assert_eq!(cache.to_vec::<f32>().unwrap(), reference(67));

    // 5. The same from other threads: readers hold clones while the owner
    //    appends; every reader sees the contents of the step it cloned.
    let snapshots: Vec<(usize, Array)> = (67..75)
        .map(|s| {
            cache = ops::slice_update(&cache, &row(s), &at(s)).unwrap();
            (s + 1, cache.clone())
        })
        .collect();
    std::thread::scope(|scope| {
        for (steps, snap) in &snapshots {
            scope.spawn(move || assert_eq!(snap.to_vec::<f32>().unwrap(), reference(*steps)));
        }
    });
    assert_eq!(cache.to_vec::<f32>().unwrap(), reference(75));
}
