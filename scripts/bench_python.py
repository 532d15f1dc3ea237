"""Python-level benchmarks of weft.core against mlx.core (CPU), side by side in one run.

    python3 scripts/bench_python.py            # both, if importable
    python3 scripts/bench_python.py weft       # one of them

Prints name<TAB>framework<TAB>value<TAB>unit lines.
1. per-op time: build and eval a chain of 10,000 tiny elementwise ops;
2. three independent small MLPs in three Python threads (weft: each thread on its own stream,
   truly parallel; MLX: its best working variant, thread-local streams), against the same three
   loops serialized under one threading.Lock.
"""
import sys
import threading
import time

from benchlib import median_time, report




def per_op(mx, fw):
    n = 10_000
    x = mx.array([1.0, 2.0, 3.0, 4.0])
    c = mx.array(1.0001)

    def chain():
        y = x
        for i in range(n):
            y = y * c if i % 2 == 0 else y + c
        mx.eval(y)

    d = median_time(7, chain)
    report("python_per_op_10k_chain", fw, value=d * 1e6 / n, unit="us/op")


def mlp_threads(mx, fw, make_stream):
    import numpy as np

    steps = 40
    rng = np.random.default_rng(0)

    def model():
        x = mx.array(rng.standard_normal((64, 256)).astype(np.float32))
        ws = [mx.array((rng.standard_normal((256, 256)) * 0.05).astype(np.float32)) for _ in range(4)]
        return x, ws

    def step(x, ws):
        h = x
        for w in ws:
            h = mx.tanh(h @ w)
        mx.eval(h)

    for k in (1, 3):
        for locked in (False, True):
            lock = threading.Lock()
            models = [model() for _ in range(k)]
            stream = make_stream()
            barrier = threading.Barrier(k + 1)

            def worker(m):
                with mx.stream(stream):
                    step(*m)
                    barrier.wait()
                    for _ in range(steps):
                        if locked:
                            with lock:
                                step(*m)
                        else:
                            step(*m)

            ts = [threading.Thread(target=worker, args=(m,)) for m in models]
            for t in ts:
                t.start()
            barrier.wait()
            s = time.perf_counter()
            for t in ts:
                t.join()
            rate = k * steps / (time.perf_counter() - s)
            report(f"python_mlp_k{k}_{'locked' if locked else 'parallel'}", fw, value=rate, unit="steps/s")


def main():
    which = sys.argv[1:] or ["weft", "mlx"]
    for fw in which:
        try:
            if fw == "weft":
                import weft.core as mx
            else:
                import mlx.core as mx
                mx.set_default_device(mx.cpu)
        except ImportError as e:
            print(f"# {fw} not importable: {e}", file=sys.stderr)
            continue
        per_op(mx, fw)
        # MLX: thread-local streams are its working variant for worker threads.
        mlp_threads(mx, fw, lambda: mx.new_thread_local_stream(mx.cpu))


if __name__ == "__main__":
    main()
