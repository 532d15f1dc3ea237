//! Randomized many-thread stress test: random graphs spread over several
//! streams, evaluated, read and extended by many threads at once in random
//! order, must give exactly what one thread computes alone.

use std::sync::{Arc, Barrier};
use std::thread;
use weft::{ops, Array, Device, Stream};

#[derive(Clone)]
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Builds a random graph of [4, 6] float32 arrays from `seed`. With
/// `streams`, each op is built on a stream picked at random; without, on
/// the calling thread's default stream.
fn build(seed: u64, streams: Option<&[Stream]>) -> Vec<Array> {
    let mut rng = Rng(seed);
    let mut nodes: Vec<Array> = (0..3)
        .map(|i| {
            let v: Vec<f32> = (0..24).map(|j| ((i * 24 + j) as f32 * 0.37).sin()).collect();
            Array::from_slice(&v, &[4, 6]).unwrap()
        })
        .collect();
    for _ in 0..120 {
        let a = nodes[rng.below(nodes.len())].clone();
        let b = nodes[rng.below(nodes.len())].clone();
        let pick = rng.below(8);
        let stream_choice = rng.below(4);
        let op = || match pick {
            0 => ops::add(&a, &b),
            1 => ops::multiply(&a, &b),
            2 => ops::subtract(&a, &b),
            3 => ops::maximum(&a, &b),
            4 => ops::tanh(&a),
            // Views and copies mixed into elementwise work.
            5 => ops::transpose(&ops::transpose(&a, &[]).unwrap(), &[]),
            6 => ops::reshape(&ops::reshape(&a, &[6, 4]).unwrap(), &[4, 6]),
            _ => {
                let left = ops::slice(&a, &[ops::SliceArg::ALL, ops::SliceArg::range(0, 3)]).unwrap();
                let right = ops::slice(&b, &[ops::SliceArg::ALL, ops::SliceArg::range(3, 6)]).unwrap();
                ops::concatenate(&[right, left], 1)
            }
        };
        let y = match streams {
            Some(s) => weft::with_stream(s[stream_choice % s.len()], op),
            None => op(),
        }
        .unwrap();
        nodes.push(y);
    }
    nodes
}

#[test]
fn random_graphs_from_many_threads_match_one_thread() {
    let streams: Vec<Stream> = (0..4).map(|_| Stream::new(Device::cpu()).unwrap()).collect();
    for seed in 0..12u64 {
        let reference: Vec<Vec<f32>> = {
            let nodes = build(seed, None);
            weft::eval(&nodes).unwrap();
            nodes.iter().map(|a| a.to_vec::<f32>().unwrap()).collect()
        };
        let nodes = Arc::new(build(seed, Some(&streams)));
        let threads = 6;
        let barrier = Arc::new(Barrier::new(threads));
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (nodes, barrier, streams) = (nodes.clone(), barrier.clone(), streams.clone());
                let reference = reference.clone();
                thread::spawn(move || {
                    let mut rng = Rng(seed * 1000 + t as u64);
                    let own = Stream::new_thread_local(Device::cpu()).unwrap();
                    barrier.wait();
                    for _ in 0..40 {
                        let i = rng.below(nodes.len());
                        match rng.below(5) {
                            0 => weft::async_eval(&[nodes[i].clone()]).unwrap(),
                            1 => {
                                let j = rng.below(nodes.len());
                                weft::eval(&[nodes[i].clone(), nodes[j].clone()]).unwrap()
                            }
                            2 => assert_eq!(nodes[i].to_vec::<f32>().unwrap(), reference[i], "node {i}"),
                            3 => streams[rng.below(streams.len())].synchronize().unwrap(),
                            _ => {
                                // Extend the shared graph on this thread's own stream.
                                let y = weft::with_stream(own, || ops::add(&nodes[i], &nodes[i])).unwrap();
                                let want: Vec<f32> = reference[i].iter().map(|v| v + v).collect();
                                assert_eq!(y.to_vec::<f32>().unwrap(), want);
                            }
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        weft::synchronize_all().unwrap();
        for (i, a) in nodes.iter().enumerate() {
            assert_eq!(a.to_vec::<f32>().unwrap(), reference[i], "seed {seed} node {i}");
        }
    }
}
