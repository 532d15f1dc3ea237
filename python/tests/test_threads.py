"""The field's scenarios (docs/architecture.md rules 1-4, 10): streams and arrays used from any
Python thread, evaluated concurrently, and a clean exit afterwards."""

import asyncio
import os
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import weft.core as mx

# Made at import time, as mlx-lm makes its generation stream.
generation_stream = mx.new_stream(mx.default_device())

rng = np.random.default_rng(2)


def step(x, i):
    """A few lazy ops; its NumPy twin is `np_step`."""
    return mx.tanh(x * (i + 1) + 0.5) - x / 3.0


def np_step(x, i):
    return np.tanh(x * np.float32(i + 1) + np.float32(0.5)) - x / np.float32(3.0)


def work_on_generation_stream(i):
    x = rng_arrays[i]
    with mx.stream(generation_stream):
        y = step(mx.array(x), i)
        mx.eval(y)
        assert y.stream == generation_stream
        return np.array(y)


rng_arrays = [rng.standard_normal((64,)).astype(np.float32) for _ in range(32)]


def test_module_stream_in_thread_pool():
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(work_on_generation_stream, range(32)))
    for i, r in enumerate(results):
        np.testing.assert_allclose(r, np_step(rng_arrays[i], i), rtol=1e-5, atol=1e-6)


def test_module_stream_in_asyncio_to_thread():
    async def main():
        return await asyncio.gather(*(asyncio.to_thread(work_on_generation_stream, i) for i in range(16)))

    results = asyncio.run(main())
    for i, r in enumerate(results):
        np.testing.assert_allclose(r, np_step(rng_arrays[i], i), rtol=1e-5, atol=1e-6)


def test_lazy_array_from_main_thread_read_in_worker():
    x = rng.standard_normal((3, 50)).astype(np.float32)
    lazy = step(mx.array(x), 2)  # built here, never evaluated here
    with ThreadPoolExecutor(max_workers=1) as pool:
        out = pool.submit(lambda: np.array(lazy)).result()
    np.testing.assert_allclose(out, np_step(x, 2), rtol=1e-5, atol=1e-6)
    # and an item() / tolist() in a worker, on a graph built on another stream
    s = mx.new_stream(mx.cpu)
    with mx.stream(s):
        lazy2 = mx.exp(mx.array(x))
    got = threading.Thread(target=lambda: results.append(lazy2.tolist()))
    results = []
    got.start()
    got.join()
    np.testing.assert_allclose(np.array(results[0]), np.exp(x), rtol=1e-6)


def test_four_threads_evaluate_one_graph():
    x = rng.standard_normal((256,)).astype(np.float32)
    y, want = mx.array(x), x.copy()
    for i in range(300):
        y = y * 0.5 + mx.sin(y)
        want = want * np.float32(0.5) + np.sin(want)
    barrier = threading.Barrier(4)
    outs, errors = [None] * 4, []

    def run(k):
        try:
            barrier.wait()
            mx.eval(y)
            outs[k] = np.array(y)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for o in outs:
        np.testing.assert_allclose(o, want, rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(o, outs[0])


def test_one_stream_fed_by_many_threads_synchronized_by_another():
    s = mx.new_stream(mx.cpu)
    made = {}
    lock = threading.Lock()

    def feed(k):
        with mx.stream(s):
            arrs = [mx.exp(mx.full((100,), float(k * 100 + j) / 1000.0)) for j in range(50)]
        mx.async_eval(arrs)
        with lock:
            made[k] = arrs

    feeders = [threading.Thread(target=feed, args=(k,)) for k in range(4)]
    for t in feeders:
        t.start()
    for t in feeders:
        t.join()
    errors = []
    syncer = threading.Thread(target=lambda: _catch(errors, lambda: mx.synchronize(s)))
    syncer.start()
    syncer.join()
    assert not errors
    for k, arrs in made.items():
        for j, a in enumerate(arrs):
            assert a.stream == s
            np.testing.assert_allclose(np.array(a), np.full(100, np.exp(np.float32((k * 100 + j) / 1000.0))), rtol=1e-6)


def _catch(errors, f):
    try:
        f()
    except Exception as e:  # noqa: BLE001
        errors.append(e)


EXIT_SCRIPT = textwrap.dedent(
    """
    import threading
    import weft.core as mx

    s = mx.new_thread_local_stream(mx.cpu)
    out = []

    def worker(k):
        with mx.stream(s):
            x = mx.arange(1000, dtype=mx.float32) * k
            y = mx.exp(-x) + mx.sin(x)
            mx.eval(y)
        out.append(y.tolist()[1])
        pending = mx.cos(y)  # left unevaluated at exit
        mx.async_eval(pending)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(out) == 4
    """
)


def test_thread_local_streams_then_clean_exit_repeated():
    for run in range(20):
        p = subprocess.run([sys.executable, "-c", EXIT_SCRIPT], capture_output=True, timeout=120)
        assert p.returncode == 0, (run, p.returncode, p.stderr.decode())
        assert p.stderr == b"", (run, p.stderr.decode())


def os_threads():
    return len(os.listdir("/proc/self/task"))


def test_short_lived_threads_do_not_leak_os_threads():
    def short_lived(k):
        x = mx.array(np.full((32,), k, dtype=np.float32))
        y = mx.exp(x * 0.01) + 1
        assert abs(y.tolist()[0] - (np.exp(k * 0.01) + 1)) < 1e-4

    def run_threads(n):
        for k in range(n):
            t = threading.Thread(target=short_lived, args=(k,))
            t.start()
            t.join()

    run_threads(64)  # warm up: the bounded stream pool is filled
    before = os_threads()
    run_threads(200)
    after = os_threads()
    assert after - before <= 2, (before, after)


def test_threads_extend_and_evaluate_a_shared_lazy_graph():
    x = rng.standard_normal((128,)).astype(np.float32)
    shared = mx.sin(mx.array(x)) * 2  # lazy, used by every thread
    shared_np = np.sin(x) * np.float32(2)
    results, errors = {}, []
    barrier = threading.Barrier(8)

    def run(k):
        try:
            barrier.wait()
            s = mx.new_stream(mx.cpu) if k % 2 else None
            outs = []
            for j in range(20):
                if s is not None:
                    with mx.stream(s):
                        y = mx.maximum(shared + (k * 20 + j), 0.0)
                else:
                    y = mx.maximum(shared + (k * 20 + j), 0.0)
                if j % 3 == 0:
                    mx.async_eval(y)
                outs.append(y)
            results[k] = [np.array(y) for y in outs]
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for k, outs in results.items():
        for j, out in enumerate(outs):
            np.testing.assert_allclose(out, np.maximum(shared_np + np.float32(k * 20 + j), 0), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("read", ["eval", "item", "numpy", "synchronize"])
def test_gil_is_released_while_evaluating(read):
    # With a huge switch interval Python never takes the GIL from a running
    # thread: the main thread can only run while the worker is blocked with
    # the GIL released, which weft must do while it evaluates and waits.
    main_ran, worker_saw = [], []
    started = threading.Event()
    s = mx.new_stream(mx.cpu)

    def worker():
        started.set()
        for i in range(400):
            with mx.stream(s):
                y = mx.exp(mx.full((1 << 18,), float(i) / 1000.0)) + 1
            if read == "eval":
                mx.eval(y)
            elif read == "item":
                y[5].item()
            elif read == "numpy":
                np.array(y)
            else:
                mx.async_eval(y)
                mx.synchronize(s)
            if main_ran:
                break
        worker_saw.append(bool(main_ran))

    old = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    try:
        t = threading.Thread(target=worker)
        t.start()
        started.wait()
        main_ran.append(True)
        t.join()
    finally:
        sys.setswitchinterval(old)
    assert worker_saw == [True]


# --- Training beside inference ---------------------------------------------
# One thread trains an MLP on its own stream while two threads run inference,
# each on its own stream, with snapshots of the model's parameters handed over
# (unevaluated: the step that made them is still lazy) at chosen steps. No lock
# in this code: arrays are immutable values (rules 1-4), a snapshot is the tree
# of the parameter arrays of that step, and the trainer's later updates make
# new arrays. Everything must equal the same work done serially on one thread.

import queue  # noqa: E402

import weft.nn as nn  # noqa: E402
import weft.optimizers as optim  # noqa: E402
from weft.utils import tree_flatten, tree_map  # noqa: E402

TRAIN_DIMS = (16, 128, 128, 4)
TRAIN_STEPS = 40
SNAPSHOT_STEPS = (0, 3, 9, 10, 21, 30, 39)


class _MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(i, o) for i, o in zip(TRAIN_DIMS[:-1], TRAIN_DIMS[1:])]

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = nn.gelu(layer(x))
        return self.layers[-1](x)


def _train_data():
    r = np.random.default_rng(11)
    w = {}
    for i, (fi, fo) in enumerate(zip(TRAIN_DIMS[:-1], TRAIN_DIMS[1:])):
        w[f"layers.{i}.weight"] = (r.standard_normal((fo, fi)) / np.sqrt(fi)).astype(np.float32)
        w[f"layers.{i}.bias"] = np.zeros(fo, np.float32)
    batches = [(r.standard_normal((64, 16)).astype(np.float32), r.standard_normal((64, 4)).astype(np.float32)) for _ in range(TRAIN_STEPS)]
    probes = [r.standard_normal((256, 16)).astype(np.float32) for _ in range(2)]
    return w, batches, probes


def _train(weights, batches, snapshot):
    """Trains, calling ``snapshot(step, params)`` before the step is evaluated;
    returns the losses and the final parameters as NumPy."""
    model = _MLP()
    model.load_weights([(k, mx.array(v)) for k, v in weights.items()])
    opt = optim.AdamW(learning_rate=1e-2, bias_correction=True)
    loss_and_grad = nn.value_and_grad(model, lambda x, y: nn.losses.mse_loss(model(x), y))
    losses = []
    for step, (x, y) in enumerate(batches):
        loss, grads = loss_and_grad(mx.array(x), mx.array(y))
        opt.update(model, grads)
        if step in SNAPSHOT_STEPS:
            snapshot(step, tree_map(lambda p: p, model.parameters()))
        mx.eval(loss, model.parameters(), opt.state)
        losses.append(loss.item())
    return losses, {k: np.array(v) for k, v in tree_flatten(model.parameters())}


def _infer(model, params, probe):
    model.update(params)
    out = mx.softmax(model(mx.array(probe)), axis=-1)
    return np.array(out)


def test_training_thread_beside_two_inference_threads():
    weights, batches, probes = _train_data()

    # serial: one thread, the default stream
    serial_snaps = {}
    serial_losses, serial_final = _train(weights, batches, lambda s, p: serial_snaps.__setitem__(s, p))
    infer_model = _MLP()
    serial_out = [{s: _infer(infer_model, p, probe) for s, p in serial_snaps.items()} for probe in probes]
    assert serial_losses[-1] < 0.9 * serial_losses[0]  # it trains
    for k in range(2):  # and the snapshots differ, so a mix-up shows
        assert not np.array_equal(serial_out[k][0], serial_out[k][9])
        assert not np.array_equal(serial_out[k][9], serial_out[k][10])
    for _ in range(3):
        _train_beside_readers(weights, batches, probes, serial_losses, serial_final, serial_out)


def _train_beside_readers(weights, batches, probes, serial_losses, serial_final, serial_out):
    # threaded: a trainer and two readers, each on a stream of its own
    inboxes = [queue.Queue(), queue.Queue()]
    outs, errors, result = [{}, {}], [], {}

    def trainer():
        try:
            with mx.stream(mx.new_stream(mx.cpu)):
                def hand_over(step, params):
                    for q in inboxes:
                        q.put((step, params))
                result["train"] = _train(weights, batches, hand_over)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
        finally:
            for q in inboxes:
                q.put(None)

    def reader(k):
        try:
            s = mx.new_stream(mx.cpu)
            with mx.stream(s):
                model = _MLP()
                while (item := inboxes[k].get()) is not None:
                    step, params = item
                    outs[k][step] = _infer(model, params, probes[k])
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=trainer)] + [threading.Thread(target=reader, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors
    losses, final = result["train"]
    np.testing.assert_array_equal(np.array(losses), np.array(serial_losses))
    for k, v in serial_final.items():
        np.testing.assert_array_equal(final[k], v, err_msg=k)
    for k in range(2):
        assert sorted(outs[k]) == sorted(SNAPSHOT_STEPS)
        for step in SNAPSHOT_STEPS:
            np.testing.assert_array_equal(outs[k][step], serial_out[k][step], err_msg=f"reader {k}, step {step}")
