//! Random numbers: reproducibility, moments, key splitting, per-thread
//! default keys.

use weft::{random, Array, Dtype, Error};

fn moments(x: &[f64]) -> (f64, f64, f64, f64) {
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    let c = |p: i32| x.iter().map(|v| (v - m).powi(p)).sum::<f64>() / n;
    let var = c(2);
    (m, var, c(3) / var.powf(1.5), c(4) / (var * var))
}

#[test]
fn same_key_same_numbers() {
    let k = random::key(1234);
    let a = random::uniform(-2.0, 3.0, &[1000], Dtype::F32, Some(&k)).unwrap().to_vec::<f32>().unwrap();
    let b = random::uniform(-2.0, 3.0, &[1000], Dtype::F32, Some(&k)).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(a, b);
    // Evaluated on another thread: the same numbers.
    let k2 = k.clone();
    let c = std::thread::spawn(move || random::uniform(-2.0, 3.0, &[1000], Dtype::F32, Some(&k2)).unwrap().to_vec::<f32>().unwrap())
        .join()
        .unwrap();
    assert_eq!(a, c);
    let d = random::uniform(-2.0, 3.0, &[1000], Dtype::F32, Some(&random::key(1235))).unwrap().to_vec::<f32>().unwrap();
    assert!(a.iter().zip(&d).filter(|(x, y)| x == y).count() < 5);
    // A prefix of a longer draw is the shorter draw (counter-based).
    let long = random::bits(&[70_000], Some(&k)).unwrap().to_vec::<u32>().unwrap();
    let short = random::bits(&[1001], Some(&k)).unwrap().to_vec::<u32>().unwrap();
    assert_eq!(&long[..1000], &short[..1000]);
    let res = random::uniform(0.0, 1.0, &[2], Dtype::F32, Some(&Array::scalar(1u32)));
    assert!(matches!(res, Err(Error::InvalidArgument(_))), "{res:?}");
}

#[test]
fn uniform_and_normal_moments() {
    let n = 200_000;
    let u = random::uniform(2.0, 5.0, &[n], Dtype::F64, Some(&random::key(1))).unwrap().to_vec::<f64>().unwrap();
    assert!(u.iter().all(|&x| (2.0..5.0).contains(&x)));
    let (m, v, s, _) = moments(&u);
    // Uniform on [2, 5): mean 3.5, variance 9/12; standard errors ~0.002.
    assert!((m - 3.5).abs() < 0.01, "mean {m}");
    assert!((v - 0.75).abs() < 0.01, "var {v}");
    assert!(s.abs() < 0.02, "skew {s}");
    let z = random::normal(&[n], Dtype::F32, 1.0, 2.0, Some(&random::key(2))).unwrap().to_f64_vec().unwrap();
    let (m, v, s, k) = moments(&z);
    assert!((m - 1.0).abs() < 0.02, "mean {m}");
    assert!((v - 4.0).abs() < 0.06, "var {v}");
    assert!(s.abs() < 0.03, "skew {s}");
    assert!((k - 3.0).abs() < 0.06, "kurtosis {k}");
    // float16: rounding never reaches the upper bound.
    let h = random::uniform(0.0, 1.0, &[n], Dtype::F16, Some(&random::key(3))).unwrap().to_f64_vec().unwrap();
    assert!(h.iter().all(|&x| (0.0..1.0).contains(&x)));
    let b = random::uniform(-1.0, 1.0, &[n], Dtype::BF16, Some(&random::key(3))).unwrap().to_f64_vec().unwrap();
    assert!(b.iter().all(|&x| (-1.0..1.0).contains(&x)));
}

#[test]
fn randint_and_bernoulli_frequencies() {
    let n = 120_000;
    let r = random::randint(-3, 3, &[n], Dtype::I32, Some(&random::key(4))).unwrap().to_vec::<i32>().unwrap();
    let mut counts = [0usize; 6];
    for &x in &r {
        assert!((-3..3).contains(&x), "{x}");
        counts[(x + 3) as usize] += 1;
    }
    // Each value 20000 times, standard deviation ~130.
    assert!(counts.iter().all(|&c| (c as i64 - 20_000).abs() < 800), "{counts:?}");
    let p = Array::from_slice(&[0.3f32], &[1]).unwrap();
    let b = random::bernoulli(&p, Some(&[n]), Some(&random::key(5))).unwrap().to_vec::<bool>().unwrap();
    let f = b.iter().filter(|&&x| x).count() as f64 / n as f64;
    assert!((f - 0.3).abs() < 0.006, "{f}");
    let res = random::randint(3, 3, &[1], Dtype::I32, None);
    assert!(matches!(res, Err(Error::InvalidArgument(_))), "{res:?}");
    let res = random::randint(0, 3, &[1], Dtype::F32, None);
    assert!(matches!(res, Err(Error::Dtype(_))), "{res:?}");
}

#[test]
fn split_keys_are_independent() {
    let k = random::key(99);
    let keys = random::split(&k, 1000).unwrap();
    assert_eq!(keys.shape(), &[1000, 2]);
    let words = keys.to_vec::<u32>().unwrap();
    let mut pairs: Vec<(u32, u32)> = words.chunks(2).map(|c| (c[0], c[1])).collect();
    assert_eq!(&words[..4], &random::split(&k, 2).unwrap().to_vec::<u32>().unwrap()[..]);
    pairs.sort_unstable();
    pairs.dedup();
    assert_eq!(pairs.len(), 1000, "split keys repeat");
    // Streams of two subkeys (and of the parent) are uncorrelated.
    let n = 100_000;
    let sub = |i: usize| Array::from_slice(&words[2 * i..2 * i + 2], &[2]).unwrap();
    let draw = |k: &Array| random::normal(&[n], Dtype::F64, 0.0, 1.0, Some(k)).unwrap().to_vec::<f64>().unwrap();
    let (a, b, p) = (draw(&sub(0)), draw(&sub(1)), draw(&k));
    for (x, y, what) in [(&a, &b, "siblings"), (&a, &p, "child and parent")] {
        let corr = x.iter().zip(y.iter()).map(|(u, v)| u * v).sum::<f64>() / n as f64;
        assert!(corr.abs() < 0.015, "{what}: correlation {corr}");
    }
}

#[test]
fn default_keys_follow_the_seed_on_every_thread() {
    // The only test in this binary that uses default keys.
    random::seed(42);
    let draw = || random::uniform(0.0, 1.0, &[8], Dtype::F32, None).unwrap().to_vec::<f32>().unwrap();
    let (a1, a2) = (draw(), draw());
    assert_ne!(a1, a2, "successive default draws differ");
    // Another thread, started after the seed, sees the same sequence.
    let b = std::thread::spawn(move || (draw(), draw())).join().unwrap();
    assert_eq!((a1.clone(), a2.clone()), b);
    // Reseeding restarts this thread too.
    random::seed(42);
    assert_eq!(draw(), a1);
    random::seed(43);
    assert_ne!(draw(), a1);
}

#[test]
fn categorical_follows_the_softmax() {
    let logits = [0.0f32, 1.0, 2.0, -1.0];
    let z: f64 = logits.iter().map(|&l| (l as f64).exp()).sum();
    let n = 40_000;
    // n rows of the same logits, sampled along the last axis.
    let rows = weft::ops::broadcast_to(&Array::from_slice(&logits, &[1, 4]).unwrap(), &[n, 4]).unwrap();
    let s = random::categorical(&rows, -1, Some(&random::key(6))).unwrap();
    assert_eq!(s.shape(), &[n]);
    let mut counts = [0usize; 4];
    for &i in &s.to_vec::<u32>().unwrap() {
        counts[i as usize] += 1;
    }
    for (i, &c) in counts.iter().enumerate() {
        let p = (logits[i] as f64).exp() / z;
        let f = c as f64 / n as f64;
        assert!((f - p).abs() < 4.0 * (p * (1.0 - p) / n as f64).sqrt() + 1e-3, "class {i}: {f} vs {p}");
    }
}
