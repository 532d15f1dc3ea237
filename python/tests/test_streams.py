"""Devices, streams, eval and the runtime functions, as mlx.core has them."""

import threading

import numpy as np
import pytest

import weft.core as mx


def test_devices():
    d = mx.default_device()
    assert d == mx.Device(mx.cpu)
    assert d == mx.cpu  # a DeviceType means device 0 of that type
    assert d.type == mx.DeviceType.cpu
    assert d.index == 0
    assert repr(d) == "Device(cpu, 0)"
    assert repr(mx.Device(mx.gpu, 1)) == "Device(gpu, 1)"
    assert mx.Device(mx.cpu) != mx.Device(mx.gpu)
    assert len({mx.Device(mx.cpu), mx.Device(mx.cpu, 0)}) == 1


def test_cuda_availability_matches_gpu_use():
    available = mx.cuda.is_available()
    assert isinstance(available, bool)
    import weft.core.cuda  # noqa: F401 - importable as a module too

    if not available:
        # Naming a device the machine lacks is a bad argument (ValueError), as in MLX.
        with pytest.raises(ValueError, match="unavailable"):
            mx.set_default_device(mx.gpu)
        with pytest.raises(ValueError, match="unavailable"):
            mx.default_stream(mx.gpu)
        with pytest.raises(ValueError, match="unavailable"):
            mx.new_stream(mx.gpu)
        with pytest.raises(ValueError, match="unavailable"):
            mx.zeros((2,), stream=mx.gpu)
    assert mx.default_device() == mx.cpu
    mx.set_default_device(mx.cpu)


def test_streams():
    s = mx.new_stream(mx.cpu)
    t = mx.new_stream(mx.cpu)
    assert s.device == mx.cpu
    assert s == s
    if s.index != t.index:  # a bounded pool hands out its queues round-robin
        assert s != t
    assert repr(s) == f"Stream(Device(cpu, 0), {s.index})"
    u = mx.new_thread_unsafe_stream(mx.cpu)  # simply a stream in weft
    assert isinstance(u, mx.Stream)
    assert hash(s) == hash(s)
    tl = mx.new_thread_local_stream(mx.cpu)
    assert "thread_local" in repr(tl)


def test_stream_context_manager():
    s = mx.new_stream(mx.cpu)
    before = mx.array([1.0]) + 1
    with mx.stream(s):
        inside = mx.array([1.0]) + 1
        with mx.stream(mx.cpu):
            nested = mx.array([1.0]) + 1
        again = mx.array([1.0]) + 1
    after = mx.array([1.0]) + 1
    assert inside.stream == s and again.stream == s
    assert nested.stream == mx.default_stream(mx.cpu)
    assert before.stream == after.stream == mx.default_stream(mx.cpu)
    # the context is per thread: another thread does not see it
    seen = []
    with mx.stream(s):
        t = threading.Thread(
            target=lambda: seen.append(((mx.array([1.0]) + 1).stream, mx.default_stream(mx.cpu)))
        )
        t.start()
        t.join()
    assert seen[0][0] == seen[0][1]


def test_default_stream_per_thread():
    s = mx.new_stream(mx.cpu)
    old = mx.default_stream(mx.cpu)
    mx.set_default_stream(s)
    try:
        assert mx.default_stream(mx.cpu) == s
        assert (mx.array([1]) + 1).stream == s
    finally:
        mx.set_default_stream(old)
    assert mx.default_stream(mx.cpu) == old


def test_thread_local_stream_resolves_per_thread():
    tl = mx.new_thread_local_stream(mx.cpu)
    got = {}

    def run(k):
        with mx.stream(tl):
            a = mx.array([float(k)]) * 2
            b = mx.array([float(k)]) * 3
        assert a.stream == b.stream  # one concrete stream per thread
        got[k] = (a, b)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # evaluated later, from this thread
    for k, (a, b) in got.items():
        assert a.item() == 2 * k and b.item() == 3 * k


def test_eval_trees():
    a = mx.exp(mx.array([0.0]))
    b = mx.array([1, 2]) * 2
    c = mx.array([3.0]) + 1
    mx.eval(a, [b, (c,)], {"x": a, "y": [b]}, None, 3, "ignored")
    assert a.item() == 1.0 and b.tolist() == [2, 4] and c.item() == 4.0
    mx.eval()
    d = mx.sin(mx.zeros((100,)))
    mx.async_eval(d, {"d": d})
    mx.synchronize()
    np.testing.assert_array_equal(np.array(d), np.zeros(100))


def test_synchronize_stream_argument():
    s = mx.new_stream(mx.cpu)
    with mx.stream(s):
        x = mx.exp(mx.zeros((1000,)))
    mx.async_eval(x)
    mx.synchronize(s)
    mx.synchronize(mx.default_stream(mx.cpu))
    mx.synchronize()
    assert x.tolist()[0] == 1.0


def test_failure_raises_memory_error_on_every_reader():
    # Out of memory is a MemoryError on every reader (issue 10 item 2).
    old = mx.set_memory_limit(mx.get_active_memory() + 64)
    try:
        y = mx.exp(mx.zeros((1 << 16,)))
        z = y + 1
        errors = []

        def read():
            try:
                np.array(z)
            except MemoryError as e:
                errors.append(e)

        threads = [threading.Thread(target=read) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(errors) == 3
        with pytest.raises(MemoryError):
            mx.eval(y)
    finally:
        mx.set_memory_limit(old)
    assert (mx.array([1.0]) + 1).item() == 2.0


def test_memory_limit_returns_previous():
    old = mx.set_memory_limit(1 << 40)
    assert mx.set_memory_limit(old) == 1 << 40


def test_synchronize_returns_after_released_results_are_freed():
    # No sleep: the queue lets go of a task's result before it counts the
    # task done, so memory is back to where it was once synchronize returns.
    for _ in range(50):
        mx.synchronize()
        base = mx.get_active_memory()
        a = mx.zeros((128, 128))
        mx.eval(a)
        del a
        b = mx.arange(1000) * 2
        mx.eval(b)
        del b
        mx.synchronize()
        assert mx.get_active_memory() == base


def test_cache_limit_round_trips():
    old = mx.set_cache_limit(0)
    assert mx.get_cache_memory() == 0
    assert mx.set_cache_limit(old) == 0
    assert mx.set_cache_limit(old) == old
