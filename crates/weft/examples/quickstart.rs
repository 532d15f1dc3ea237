//! A stream made at start-up, used by worker threads; one lazy graph
//! evaluated by several threads at once.
//!
//! `cargo run --release --example quickstart`

use weft::{ops, Array, Device, Dtype, Stream};

fn main() -> weft::Result<()> {
    // Made on the main thread, like `generation_stream = mx.new_stream(...)`.
    let stream = Stream::new(Device::cpu())?;

    let x = ops::arange(0.0, 8.0, 1.0, Dtype::F32)?;
    let y = weft::with_stream(stream, || ops::tanh(&(&x * &Array::scalar(0.25f32))?))?;
    println!("built lazily on the main thread: {y:?}");

    // Four workers evaluate the same lazy graph; each node runs once.
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let y = y.clone();
            std::thread::spawn(move || -> weft::Result<Vec<f32>> {
                // Workers can build more work on the shared stream, too.
                let z = weft::with_stream(stream, || &y + &Array::scalar(i as f32))?;
                z.to_vec::<f32>()
            })
        })
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        println!("worker {i}: {:?}", h.join().expect("worker panicked")?);
    }
    stream.synchronize()?;
    println!("kernels run: {}", weft::kernels_run());
    Ok(())
}
