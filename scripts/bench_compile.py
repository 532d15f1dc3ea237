"""compile's elementwise fusion: uncompiled against compiled, weft.core beside mlx.core (CPU), in one run.

    python3 scripts/bench_compile.py              # both, if importable
    python3 scripts/bench_compile.py weft         # one of them
    python3 scripts/bench_compile.py weft mlx 1024 1048576   # sizes (elements; default 2^10, 2^16, 2^20)

Prints name<TAB>framework<TAB>value<TAB>unit lines: milliseconds per call (the median over
repeats; each call builds the graph and evaluates it) and, for weft, the peak memory a call adds
(MB, from get_peak_memory: the fused chain holds the output and a few chunk registers, the
unfused graph its intermediates too), then a markdown table of the medians.
Cases, all float32 elementwise chains:
- gelu_tanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), written out (9 ops);
- layernorm_tail: (x - mean) * rsqrt(var + eps) * w + b with mean/var per row given (rows of 1024);
- adam: one Adam update of (p, m, v) from g (three outputs, ~15 ops).
"""
import math
import sys

from benchlib import median_time, report


def gelu_tanh(mx):
    k = math.sqrt(2.0 / math.pi)

    def f(x):
        return 0.5 * x * (1.0 + mx.tanh(k * (x + 0.044715 * (x * x * x))))

    return f


def layernorm_tail(mx):
    def f(x, mean, var, w, b):
        return (x - mean) * mx.rsqrt(var + 1e-5) * w + b

    return f


def adam(mx):
    lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-8

    def f(p, g, m, v):
        m = b1 * m + (1.0 - b1) * g
        v = b2 * v + (1.0 - b2) * (g * g)
        p = p - lr * m / (mx.sqrt(v) + eps)
        return p, m, v

    return f


def inputs(mx, case, n):
    import numpy as np

    rng = np.random.default_rng(0)
    r = lambda *s: mx.array(rng.standard_normal(s).astype(np.float32))
    if case == "gelu_tanh":
        return (r(n),)
    if case == "layernorm_tail":
        rows = n // 1024
        return (r(rows, 1024), r(rows, 1), mx.abs(r(rows, 1)), r(1024), r(1024))
    return (r(n), r(n), r(n), mx.abs(r(n)))


def run(mx, fw, sizes, table):
    for case, make in (("gelu_tanh", gelu_tanh), ("layernorm_tail", layernorm_tail), ("adam", adam)):
        for n in sizes:
            args = inputs(mx, case, n)
            mx.eval(*args)
            f = make(mx)
            for mode, g in (("uncompiled", f), ("compiled", mx.compile(f))):
                def call():
                    out = g(*args)
                    mx.eval(out)

                # Small sizes are microseconds a call: more repeats.
                reps = 41 if n >= 1 << 18 else 201
                d = median_time(reps, call, warm=3)
                report(f"compile_{case}_{n}", fw, mode, value=d * 1e3, unit="ms")
                table[(case, n, fw, mode)] = d * 1e3
                if fw == "weft":
                    mx.reset_peak_memory()
                    base = mx.get_active_memory()
                    call()
                    report(f"compile_{case}_{n}_peak", fw, mode, value=(mx.get_peak_memory() - base) / 1e6, unit="MB")


def markdown(table, sizes):
    """The medians as a docs/benchmarks.md table (ms per call)."""
    cols = [("weft", "uncompiled"), ("weft", "compiled"), ("mlx", "uncompiled"), ("mlx", "compiled")]
    print("| case | elements | " + " | ".join(f"{fw} {mode}" for fw, mode in cols) + " | weft speedup |")
    print("| --- | ---: |" + " ---: |" * (len(cols) + 1))
    for case in ("gelu_tanh", "layernorm_tail", "adam"):
        for n in sizes:
            cells = [table.get((case, n, fw, mode)) for fw, mode in cols]
            fmt = ["-" if c is None else f"{c:.3f}" for c in cells]
            up = "-" if None in cells[:2] else f"{cells[0] / cells[1]:.2f}x"
            print(f"| {case} | 2^{n.bit_length() - 1} | " + " | ".join(fmt) + f" | {up} |")


def main():
    words = sys.argv[1:]
    which = [w for w in words if not w.isdigit()] or ["weft", "mlx"]
    sizes = [int(w) for w in words if w.isdigit()] or [1 << 10, 1 << 16, 1 << 20]
    table = {}
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
        run(mx, fw, sizes, table)
    markdown(table, sizes)


if __name__ == "__main__":
    main()
