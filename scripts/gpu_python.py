"""Per-op host overhead on the GPU from Python: weft.core against PyTorch, side by side in one run.

    python3 scripts/gpu_python.py            # both, where importable (a CUDA GPU is needed)

Prints name<TAB>framework<TAB>value<TAB>unit lines (benchlib.report).
1. eager chain: 10,000 tiny elementwise ops on 4 floats, alternately `y * c` and `y + c`
   (as scripts/bench_python.py on the CPU): build time, then eval + synchronize time, per op;
   and the same chain with Python floats (`y * 1.0001`) instead of a 0-d array;
2. 10,000 small kernels that do not fuse (softmax over 64 floats, then add, 5,000 times):
   eager, and recorded once as a CUDA graph and replayed (weft: `compile(f).capture(x)`;
   PyTorch: `torch.cuda.CUDAGraph`), microseconds per kernel.
Timing: host clock around the work and a synchronize, median of repeats after warm-ups.
"""
import sys
import time

import numpy as np

from benchlib import median, report

N = 10_000


def chain(y, c):
    """The eager chain: alternately `y * c` and `y + c`, N ops."""
    for i in range(N):
        y = y * c if i % 2 == 0 else y + c
    return y


def time_chain(x, c, finish):
    """Microseconds per op of building the chain from `x` with operand `c`
    and `finish(y)` (evaluate and synchronize): median of 7 after 2 warm-ups."""
    runs = []
    for _ in range(7):
        t = time.perf_counter()
        finish(chain(x, c))
        runs.append(time.perf_counter() - t)
    return median(runs[2:]) / N * 1e6


def weft_rows():
    import weft.core as mx

    if not mx.cuda.is_available():
        print("weft.core: no CUDA device", file=sys.stderr)
        return
    mx.set_default_device(mx.gpu)
    x = mx.array([1.0, 2.0, 3.0, 4.0])
    c = mx.array(1.0001)
    mx.eval(x, c)
    build, run = [], []
    for _ in range(7):
        t = time.perf_counter()
        y = chain(x, c)
        build.append(time.perf_counter() - t)
        t = time.perf_counter()
        mx.eval(y)
        mx.synchronize()
        run.append(time.perf_counter() - t)
    report("chain_build", "weft", value=median(build[2:]) / N * 1e6, unit="us/op")
    report("chain_eval_sync", "weft", value=median(run[2:]) / N * 1e6, unit="us/op")
    report("chain_total", "weft", value=(median(build[2:]) + median(run[2:])) / N * 1e6, unit="us/op")

    def finish(y):
        mx.eval(y)
        mx.synchronize()

    # A Python float: a new scalar array per op.
    report("chain_total_python_scalars", "weft", value=time_chain(x, 1.0001, finish), unit="us/op")

    def kernels(v):
        for _ in range(N // 2):
            v = mx.softmax(v, axis=-1) + v
        return v

    v0 = mx.array([[float(i % 7) / 7 for i in range(64)]])
    mx.eval(v0)
    eager = []
    for _ in range(5):
        t = time.perf_counter()
        mx.eval(kernels(v0))
        mx.synchronize()
        eager.append(time.perf_counter() - t)
    report("kernels_eager", "weft", value=median(eager[1:]) / N * 1e6, unit="us/kernel")
    compiled = mx.compile(kernels)
    t = time.perf_counter()
    g = compiled.capture(v0)
    report("kernels_capture", "weft", value=(time.perf_counter() - t) * 1e3, unit="ms")
    want = compiled(v0)
    got = g(v0)
    mx.eval(want, got)
    diff = float(mx.max(mx.abs(want - got)))
    assert diff == 0.0, f"captured graph differs from the compiled replay by {diff}"
    replay = []
    for _ in range(7):
        t = time.perf_counter()
        # The outputs come back evaluated, computed on the graph's own stream:
        # reading them waits for it (`synchronize()` of the default stream does not).
        out = np.array(g(v0))
        replay.append(time.perf_counter() - t)
    assert np.array_equal(out, np.array(want)), "a replay differs from the compiled function"
    report("kernels_graph", "weft", value=median(replay[2:]) / N * 1e6, unit="us/kernel")
    mx.set_default_device(mx.cpu)


def torch_rows():
    import torch

    if not torch.cuda.is_available():
        print("torch: no CUDA device", file=sys.stderr)
        return
    x = torch.tensor([1.0, 2.0, 3.0, 4.0], device="cuda")
    c = torch.tensor(1.0001, device="cuda")

    def finish(y):
        torch.cuda.synchronize()

    torch.cuda.synchronize()
    report("chain_total", "torch", value=time_chain(x, c, finish), unit="us/op")
    report("chain_total_python_scalars", "torch", value=time_chain(x, 1.0001, finish), unit="us/op")

    def kernels(v):
        for _ in range(N // 2):
            v = torch.softmax(v, dim=-1) + v
        return v

    v0 = torch.tensor([[float(i % 7) / 7 for i in range(64)]], device="cuda")
    eager = []
    for _ in range(5):
        torch.cuda.synchronize()
        t = time.perf_counter()
        kernels(v0)
        torch.cuda.synchronize()
        eager.append(time.perf_counter() - t)
    report("kernels_eager", "torch", value=median(eager[1:]) / N * 1e6, unit="us/kernel")
    static_in = v0.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        kernels(static_in)  # warm-up on a side stream, as PyTorch's docs ask
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    t = time.perf_counter()
    with torch.cuda.graph(graph):
        static_out = kernels(static_in)
    report("kernels_capture", "torch", value=(time.perf_counter() - t) * 1e3, unit="ms")
    replay = []
    for _ in range(7):
        torch.cuda.synchronize()
        t = time.perf_counter()
        static_in.copy_(v0)
        graph.replay()
        _ = static_out.cpu()  # read, as weft's row does
        replay.append(time.perf_counter() - t)
    report("kernels_graph", "torch", value=median(replay[2:]) / N * 1e6, unit="us/kernel")


if __name__ == "__main__":
    which = sys.argv[1:] or ["weft", "torch"]
    if "weft" in which:
        weft_rows()
    if "torch" in which:
        torch_rows()
