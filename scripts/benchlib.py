"""Helpers every bench script shares: timing by median and one report format.

    from benchlib import median_time, median, report

Scripts in scripts/ import it directly (Python puts the script's folder first
on sys.path). Timings are medians over repeats after a warm-up, because these
machines are shared and noisy; the report is one tab-separated line per value.
"""
import time


def median(xs):
    """The middle element of `xs` (the upper one of the two for an even count)."""
    xs = sorted(xs)
    return xs[len(xs) // 2]


def median_time(reps, f, warm=1):
    """Seconds `f()` takes, the median of `reps` calls after `warm` unmeasured ones."""
    for _ in range(warm):
        f()
    ts = []
    for _ in range(reps):
        s = time.perf_counter()
        f()
        ts.append(time.perf_counter() - s)
    return median(ts)


def report(*fields, value, unit):
    """One result line: the naming fields, the value (3 decimals) and its unit, tab-separated."""
    print("\t".join([*map(str, fields), f"{value:.3f}", unit]), flush=True)
