"""Peer measurements for scripts/bench-cpu, printed as name<TAB>value<TAB>unit.

NumPy (OpenBLAS) and MLX (CPU) run the same workloads as crates/weft/benches/core.rs.
Thread counts come from the environment (OPENBLAS_NUM_THREADS etc.), set by the caller.
"""
import sys
import time

import numpy as np

from benchlib import median_time, report




def numpy_matmul(n):
    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype=np.float32) - 0.5
    b = rng.random((n, n), dtype=np.float32) - 0.5
    d = median_time(7 if n >= 1024 else 31, lambda: a @ b)
    report(f"numpy_matmul_f32_{n}", value=2 * n**3 / d / 1e9, unit="GFLOP/s")


def mlx_matmul(n):
    import mlx.core as mx
    a = mx.random.uniform(shape=(n, n)) - 0.5
    b = mx.random.uniform(shape=(n, n)) - 0.5
    mx.eval(a, b)
    d = median_time(7 if n >= 1024 else 31, lambda: mx.eval(a @ b))
    report(f"mlx_matmul_f32_{n}", value=2 * n**3 / d / 1e9, unit="GFLOP/s")


def main():
    what = sys.argv[1:]
    if "matmul" in what:
        for n in (256, 1024):
            numpy_matmul(n)
        try:
            for n in (256, 1024):
                mlx_matmul(n)
        except ImportError:
            print("# mlx not installed: pip install 'mlx[cpu]'", file=sys.stderr)


if __name__ == "__main__":
    main()
