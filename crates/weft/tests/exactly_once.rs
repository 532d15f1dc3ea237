//! docs/architecture.md rule 5: each node is claimed for execution exactly once, however
//! many threads evaluate the graph at the same time. Its own test binary:
//! it counts every kernel the process runs.

use std::sync::{Arc, Barrier};
use std::thread;
use weft::{ops, Array, Device, Stream};

/// A small PRNG, so the graph shape varies per round.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn four_threads_evaluating_one_graph_run_each_node_once() {
    let streams: Vec<Stream> = (0..3).map(|_| Stream::new(Device::cpu()).unwrap()).collect();
    for round in 0..30u64 {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (round + 1));
        let mut nodes: Vec<Array> =
            (0..4).map(|i| Array::from_slice(&[i as f32; 16], &[16]).unwrap()).collect();
        let ops_built = 150;
        for _ in 0..ops_built {
            let a = nodes[rng.below(nodes.len())].clone();
            let b = nodes[rng.below(nodes.len())].clone();
            // Each binary op of two float32 [16] arrays is exactly one node.
            let s = streams[rng.below(streams.len())];
            let y = weft::with_stream(s, || match rng.below(3) {
                0 => ops::add(&a, &b),
                1 => ops::maximum(&a, &b),
                _ => ops::multiply(&a, &ops::minimum(&b, &Array::scalar(1.5f32)).unwrap()),
            })
            .unwrap();
            nodes.push(y);
        }
        // The count includes the extra `minimum` nodes, so count what exists:
        // every non-constant node reachable is one kernel run.
        let targets: Vec<Array> = nodes[nodes.len() - 20..].to_vec();
        let before = weft::kernels_run();
        let barrier = Arc::new(Barrier::new(4));
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let (targets, barrier) = (targets.clone(), barrier.clone());
                thread::spawn(move || {
                    barrier.wait();
                    // Each thread evaluates the outputs in its own order.
                    let mut order = targets.clone();
                    order.rotate_left(t * 5);
                    weft::eval(&order).unwrap();
                    order.iter().map(|a| a.to_vec::<f32>().unwrap()).collect::<Vec<_>>()
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let ran = weft::kernels_run() - before;
        let expected = count_pending_nodes_built(round, &streams, ops_built);
        assert_eq!(ran, expected, "round {round}: kernels run {ran}, nodes {expected}");
        for (t, r) in results.iter().enumerate() {
            let mut order = targets.clone();
            order.rotate_left(t * 5);
            for (a, v) in order.iter().zip(r) {
                assert_eq!(&a.to_vec::<f32>().unwrap(), v);
            }
        }
    }
}

/// Rebuilds round `round`'s graph on one thread (same random choices) and
/// counts the nodes the 20 targets depend on, by evaluating it serially.
fn count_pending_nodes_built(round: u64, streams: &[Stream], ops_built: usize) -> u64 {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (round + 1));
    // Node ids of each node's inputs, to walk the graph by hand.
    let mut inputs: Vec<Vec<usize>> = vec![vec![]; 4];
    let mut extra: Vec<bool> = vec![false; 4];
    for _ in 0..ops_built {
        let a = rng.below(inputs.len());
        let b = rng.below(inputs.len());
        let _s = rng.below(streams.len());
        let kind = rng.below(3);
        if kind == 2 {
            // multiply(a, minimum(b, 1.5)): two nodes, the minimum private to it.
            inputs.push(vec![a, b]);
            extra.push(true);
        } else {
            inputs.push(vec![a, b]);
            extra.push(false);
        }
    }
    let n = inputs.len();
    let mut seen = vec![false; n];
    let mut stack: Vec<usize> = (n - 20..n).collect();
    let mut count = 0;
    while let Some(i) = stack.pop() {
        if std::mem::replace(&mut seen[i], true) || i < 4 {
            continue;
        }
        count += if extra[i] { 2 } else { 1 };
        stack.extend(&inputs[i]);
    }
    count
}
