"""Issue 10: nothing a user types crashes the process or reaches a Rust panic.

Each test here crashed (segfault, abort) or gave a wrong answer on b2ef225. The
crash tests run in a child interpreter, so a regression shows as a failed test
with the child's exit status instead of taking pytest down with it."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import weft.core as mx


def run_child(code):
    """Runs `code` in a fresh interpreter; returns (exit status, stdout, stderr)."""
    p = subprocess.run(
        [sys.executable, "-c", "import weft.core as mx\n" + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return p.returncode, p.stdout, p.stderr


def expect_clean(code):
    rc, out, err = run_child(code)
    assert rc == 0, f"child exited with {rc}\nstdout:\n{out}\nstderr:\n{err}"
    return out, err


# -- item 1: recursive walks are bounded ------------------------------------


def test_self_containing_list_raises_value_error():
    out, _ = expect_clean(
        """
        l = []
        l.append(l)
        for f in (mx.array, mx.eval):
            try:
                f(l)
            except ValueError as e:
                print("ValueError", f.__name__)
        """
    )
    assert out.split("\n")[:2] == ["ValueError array", "ValueError eval"]


def test_deeply_nested_list_raises_value_error():
    out, _ = expect_clean(
        """
        deep = 1.0
        for _ in range(200_000):
            deep = [deep]
        for f in (mx.array, mx.eval):
            try:
                f(deep)
                print("no error", f.__name__)
            except ValueError:
                print("ValueError", f.__name__)
        # Arrays stacked from lists, each level holding an array first.
        chain = [mx.array(1.0)]
        for _ in range(200_000):
            chain = [mx.array(1.0), chain]
        try:
            mx.array(chain)
        except ValueError:
            print("ValueError stack")
        """
    )
    assert out.split("\n")[:3] == ["ValueError array", "ValueError eval", "ValueError stack"]


def test_too_many_dimensions_is_a_value_error():
    with pytest.raises(ValueError):
        mx.zeros((1,) * 100_000)
    with pytest.raises(ValueError):
        mx.zeros((1,) * 65)
    a = mx.zeros((1,) * 64)
    assert a.tolist() == np.zeros((1,) * 64).tolist()
    assert mx.array(np.zeros((1,) * 64)).ndim == 64


# -- item 2: host allocations are fallible and counted ----------------------


def test_huge_read_is_a_memory_error_not_an_abort():
    out, _ = expect_clean(
        """
        import numpy as np
        big = mx.broadcast_to(mx.array(1.0), (1 << 40,))
        # `__array__` (np.array itself copies through the buffer protocol:
        # NumPy allocates, and raises its own MemoryError).
        for what, f in (("numpy", lambda a: a.__array__()), ("tolist", lambda a: a.tolist())):
            try:
                f(big)
            except MemoryError as e:
                print("MemoryError", what, "no limit" in str(e), "4398046511104" in str(e))
        """
    )
    assert out.split("\n")[:2] == ["MemoryError numpy True True", "MemoryError tolist True True"]


def test_copies_respect_the_memory_limit():
    big = mx.broadcast_to(mx.array(1.0), (1 << 20,))  # a view: 4 bytes
    mx.eval(big)
    prev = mx.set_memory_limit(mx.get_active_memory() + (1 << 16))
    try:
        with pytest.raises(MemoryError, match="limit"):
            big.__array__()  # a 4 MiB read
        with pytest.raises(MemoryError):
            mx.eval(big + 1)  # a 4 MiB kernel output
        with pytest.raises(MemoryError):
            mx.array(np.ones(1 << 20, np.float32))  # a 4 MiB conversion
    finally:
        mx.set_memory_limit(prev)
    assert np.array(big[:3]).tolist() == [1.0, 1.0, 1.0]


# -- item 4: shape arithmetic is checked; no PanicException -----------------


def test_shape_overflow_is_rejected():
    with pytest.raises(ValueError):
        mx.zeros((4,)).reshape(2**62 + 1, 4)
    with pytest.raises(ValueError):
        mx.zeros((2**32, 2**32))
    with pytest.raises(ValueError):
        mx.broadcast_to(mx.array(1.0), (2**32, 1)) + mx.broadcast_to(mx.array(1.0), (2**32,))
    with pytest.raises(ValueError):
        mx.zeros((0, 2**40, 2**40))


def test_huge_slice_steps_match_numpy():
    a, n = mx.arange(4), np.arange(4)
    for s in (
        slice(None, None, sys.maxsize),
        slice(None, None, -sys.maxsize),
        slice(None, None, -sys.maxsize - 1),
        slice(1, None, sys.maxsize - 1),
        slice(-sys.maxsize - 1, sys.maxsize, 3),
        slice(sys.maxsize, -sys.maxsize - 1, -2),
    ):
        assert a[s].tolist() == n[s].tolist(), s


def test_no_panic_exception_reaches_python():
    # pyo3's PanicException derives from BaseException: `except Exception`
    # would miss it. Anything a user can type ends as an ordinary exception.
    tries = [
        lambda: mx.zeros((2**32, 2**32)).tolist(),
        lambda: mx.zeros((4,)).reshape(2**62 + 1, 4).sum().item(),
        lambda: mx.arange(4)[:, None, None][..., 0, 0, 0],
        lambda: mx.array([[1, 2], [3]]),
    ]
    for t in tries:
        try:
            t()
        except Exception:
            pass


# -- item 5: NumPy bools that are not 0/1 -----------------------------------


def test_numpy_bool_bytes_are_normalized():
    b = np.frombuffer(bytes([2, 1, 0, 255]), np.bool_)
    a = mx.array(b)
    assert (~a).tolist() == (~b).tolist() == [False, False, True, False]
    assert a.tolist() == [True, True, False, True]
    assert mx.sum(a).item() == 3


# -- item 9: stream contexts restore their own scope --------------------------


def test_stream_contexts_exited_out_of_order_restore_their_own_scope():
    """Generators, asyncio tasks on one thread and handed-over ExitStacks exit
    `with mx.stream(...)` blocks out of order; each exit removes its own scope
    (on b2ef225 it popped whatever was on top)."""
    s1, s2 = mx.new_stream(mx.cpu), mx.new_stream(mx.cpu)
    base = (mx.array([1.0]) + 1).stream

    def gen(s):
        with mx.stream(s):
            yield

    g1, g2 = gen(s1), gen(s2)
    next(g1)  # enters s1
    next(g2)  # enters s2 on top
    g1.close()  # s1's block exits first
    assert (mx.array([1.0]) + 1).stream == s2
    g2.close()
    assert (mx.array([1.0]) + 1).stream == base
