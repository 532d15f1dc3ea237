#!/usr/bin/env python3
"""quantized_matmul on the CPU: weft against MLX (mlx[cpu]), and against a
float32 matmul of the same shape in each, for a decode step (M = 1) and a
small batch. Weights 4-bit, group size 64 (MLX's defaults).

Needs: weft.core importable (PYTHONPATH=python after a build) and mlx.
Run:   python3 scripts/bench-quantized.py [--k 4096] [--n 4096] [--reps 20]
"""
import argparse
import time


def bench(mx, m, k, n, reps):
    mx.random.seed(0)
    w = mx.random.normal((n, k)) / k**0.5
    x = mx.random.normal((m, k))
    wq, s, b = mx.quantize(w, 64, 4)
    mx.eval(w, x, wq, s, b)

    def timed(f):
        mx.eval(f())  # warm up
        t = time.perf_counter()
        for _ in range(reps):
            mx.eval(f())
        return (time.perf_counter() - t) / reps * 1e3

    q = timed(lambda: mx.quantized_matmul(x, wq, s, b, True, 64, 4))
    f = timed(lambda: x @ w.T)
    return q, f


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=4096)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args()
    import weft.core as wx

    libs = [("weft", wx)]
    try:
        import mlx.core as mlx

        mlx.set_default_device(mlx.cpu)
        libs.append(("mlx", mlx))
    except ImportError:
        pass
    print(f"K={a.k} N={a.n}, 4-bit, group 64; ms per call (quantized / float32)")
    for m in (1, 32):
        for name, mx in libs:
            q, f = bench(mx, m, a.k, a.n, a.reps)
            print(f"M={m:3d} {name:5s} quantized {q:8.3f}  float32 {f:8.3f}")


if __name__ == "__main__":
    main()
