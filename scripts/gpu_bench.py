"""PyTorch side of weft's GPU benchmark (tests/gpu_bench.rs): the same
measurements, same sizes, same timing method (host clock around the work and
a synchronize, median of repeated runs after a warm-up).

Run on a machine with a CUDA GPU: python3 scripts/gpu_bench.py
"""
import threading
import time

import torch

from benchlib import median, median_time



def data(shape, dtype, seed):
    n = 1
    for d in shape:
        n *= d
    i = torch.arange(n, device="cuda", dtype=torch.float32)
    return torch.sin(i * (0.618 + seed)).reshape(shape).to(dtype)


def bandwidth():
    n = 1 << 28
    x, y = data([n], torch.float32, 0.0), data([n], torch.float32, 1.0)

    def add():
        _ = x + y
        torch.cuda.synchronize()

    t = median_time(20, add, warm=3)
    dst = torch.empty_like(x)

    def copy():
        dst.copy_(x)
        torch.cuda.synchronize()

    tc = median_time(20, copy, warm=3)
    add_bw = 12 * n / t / 1e9
    copy_bw = 8 * n / tc / 1e9
    print(f"| add 2^28 f32 | {t * 1e3:.3f} ms | {add_bw:.0f} GB/s | d2d copy {copy_bw:.0f} GB/s | {100 * add_bw / copy_bw:.0f}% of copy |")


def matmul():
    for n, reps in [(4096, 20), (8192, 10)]:
        a, b = data([n, n], torch.bfloat16, 0.0), data([n, n], torch.bfloat16, 0.5)

        def mm():
            _ = a @ b
            torch.cuda.synchronize()

        t = median_time(reps, mm, warm=3)
        print(f"| bf16 matmul {n}^3 | {t * 1e3:.3f} ms | {2 * n**3 / t / 1e12:.0f} TFLOP/s | | |")


def overhead():
    n = 10_000
    for dev in ["cuda", "cpu"]:
        x0 = torch.zeros(16, device=dev)
        runs = []
        for _ in range(5):
            t = time.perf_counter()
            y = x0
            for _ in range(n):
                y = y + 1.0
            if dev == "cuda":
                torch.cuda.synchronize()
            runs.append(time.perf_counter() - t)
            assert float(y[0]) == n
        print(f"| 10,000 tiny ops ({dev}, eager) | | run+sync {median(runs) / n * 1e6:.2f} us/op | | |")


def mlp_loop(stream, w1, w2, iters, lock):
    with torch.cuda.stream(stream):
        x = data([64, 512], torch.bfloat16, 0.3)
        stream.synchronize()
        for _ in range(iters):
            if lock is not None:
                lock.acquire()
            try:
                y = (torch.tanh(x @ w1) @ w2).sum()
                stream.synchronize()
            finally:
                if lock is not None:
                    lock.release()


def threads():
    iters = 300
    w1 = data([512, 1024], torch.bfloat16, 0.1)
    w2 = data([1024, 512], torch.bfloat16, 0.2)
    torch.cuda.synchronize()
    for k in [1, 2, 4]:
        row = []
        for locked in [False, True]:
            lock = threading.Lock()
            barrier = threading.Barrier(k + 1)

            def worker():
                s = torch.cuda.Stream()
                mlp_loop(s, w1, w2, 5, None)
                barrier.wait()
                mlp_loop(s, w1, w2, iters, lock if locked else None)

            ts = [threading.Thread(target=worker) for _ in range(k)]
            for t in ts:
                t.start()
            barrier.wait()
            t0 = time.perf_counter()
            for t in ts:
                t.join()
            row.append(k * iters / (time.perf_counter() - t0))
        print(f"| MLP loop, K={k} threads | own streams {row[0]:.0f} steps/s | one lock {row[1]:.0f} steps/s | x{row[0] / row[1]:.2f} | |")


if __name__ == "__main__":
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"PyTorch {torch.__version__}, {torch.cuda.get_device_name()}")
    print("| what | time | rate | reference | |")
    print("| --- | --- | --- | --- | --- |")
    bandwidth()
    matmul()
    overhead()
    threads()
