"""Randomized inputs (issue 10): indexing, index assignment and array construction
against NumPy. For every generated input weft either gives NumPy's answer or raises
an ordinary exception (IndexError, ValueError, TypeError); never a crash, never a
panic, never a different answer. Seeded, so a failure names the case that fails."""

import random

import numpy as np
import pytest

import weft.core as mx

# RuntimeError: an index array's out-of-range value is found when the gather
# runs, so reading the result raises, as for any failed computation
# (docs/architecture.md rule 9).
ORDINARY = (IndexError, ValueError, TypeError, RuntimeError)
CASES = 600


def random_shape(rng):
    return tuple(rng.choice([0, 1, 2, 3, 5]) for _ in range(rng.randint(0, 4)))


def random_bound(rng, n):
    return rng.choice([None, 0, 1, -1, n, -n, n + 3, -n - 3, rng.randint(-n - 2, n + 2), 2**62, -(2**62)])


def random_item(rng, n, allow_arrays):
    kind = rng.randrange(6 if allow_arrays else 5)
    if kind == 0:
        return rng.randint(-n - 2, n + 1)  # sometimes out of range
    if kind in (1, 2):
        step = rng.choice([None, 1, 2, 3, -1, -2, 2**62, -(2**62)])
        return slice(random_bound(rng, n), random_bound(rng, n), step)
    if kind == 3:
        return None
    if kind == 4:
        return Ellipsis
    size = rng.randint(0, 3)
    return np.array([rng.randint(-n, max(n - 1, 0)) if n else 0 for _ in range(size)], dtype=np.int32)


def random_key(rng, shape, allow_arrays=True):
    items, axis = [], 0
    # At most one array index: NumPy's placement of separated advanced
    # indices is a rule of its own, tested in test_indexing.py.
    arrays = 0
    for _ in range(rng.randint(0, len(shape) + 2)):
        n = shape[axis] if axis < len(shape) else 1
        item = random_item(rng, n, allow_arrays and arrays == 0)
        if isinstance(item, np.ndarray):
            arrays += 1
        if item is Ellipsis and any(i is Ellipsis for i in items):
            continue
        items.append(item)
        if item is not None and item is not Ellipsis:
            axis += 1
    if len(items) == 1 and rng.random() < 0.5:
        return items[0]
    return tuple(items)


def weft_key(key):
    if isinstance(key, tuple):
        return tuple(weft_key(k) for k in key)
    if isinstance(key, np.ndarray):
        return mx.array(key)
    return key


def numpy_answer(f):
    try:
        return f(), None
    except (IndexError, ValueError, TypeError) as e:
        return None, e


@pytest.mark.parametrize("seed", range(4))
def test_get_item_matches_numpy(seed):
    rng = random.Random(seed)
    for case in range(CASES):
        shape = random_shape(rng)
        a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
        key = random_key(rng, shape)
        want, err = numpy_answer(lambda: a[key])
        where = f"seed {seed} case {case}: shape {shape} key {key!r}"
        if err is not None:
            with pytest.raises(ORDINARY):
                mx.eval(mx.array(a)[weft_key(key)])
            continue
        got = mx.array(a)[weft_key(key)]
        assert got.shape == want.shape, where
        np.testing.assert_array_equal(np.array(got), want, err_msg=where)


@pytest.mark.parametrize("seed", range(4))
def test_set_item_matches_numpy(seed):
    rng = random.Random(100 + seed)
    for case in range(CASES):
        shape = random_shape(rng)
        a = np.zeros(shape, dtype=np.float32)
        key = random_key(rng, shape, allow_arrays=False)
        where = f"seed {seed} case {case}: shape {shape} key {key!r}"
        view, err = numpy_answer(lambda: a[key])
        if err is not None:
            b = mx.array(a)
            with pytest.raises(ORDINARY):
                b[weft_key(key)] = 1.0
            continue
        # A value that broadcasts to the selection, or (sometimes) one that does not.
        vshape = tuple(view.shape[rng.randrange(len(view.shape) + 1):]) if view.ndim else ()
        if rng.random() < 0.2:
            vshape = vshape + (7,)
        value = np.arange(1, 1 + int(np.prod(vshape)), dtype=np.float32).reshape(vshape)
        expected = a.copy()
        _, set_err = numpy_answer(lambda: expected.__setitem__(key, value))
        b = mx.array(a)
        if set_err is not None:
            with pytest.raises(ORDINARY):
                b[weft_key(key)] = mx.array(value)
            continue
        b[weft_key(key)] = mx.array(value)
        np.testing.assert_array_equal(np.array(b), expected, err_msg=where)


def random_nested(rng, depth, ragged):
    if depth == 0:
        return rng.choice([rng.randint(-5, 5), rng.uniform(-2, 2), rng.random() < 0.5])
    n = rng.randint(0, 3)
    items = [random_nested(rng, depth - 1, ragged) for _ in range(n)]
    if ragged and items and rng.random() < 0.3:
        items[0] = random_nested(rng, max(depth - 2, 0), False)
    return items


@pytest.mark.parametrize("seed", range(4))
def test_array_from_nested_lists_matches_numpy(seed):
    rng = random.Random(200 + seed)
    for case in range(CASES):
        ragged = rng.random() < 0.3
        value = random_nested(rng, rng.randint(0, 4), ragged)
        where = f"seed {seed} case {case}: {value!r}"
        want, err = numpy_answer(lambda: np.array(value))
        if err is not None or want.dtype == object:
            with pytest.raises(ORDINARY):
                mx.eval(mx.array(value))
            continue
        got = mx.array(value)
        assert got.shape == want.shape, where
        # weft follows MLX's dtypes (no float64/int64 defaults); values agree.
        np.testing.assert_allclose(np.array(got).astype(np.float64), want.astype(np.float64), rtol=1e-6, err_msg=where)


DIMS = [0, 1, 2, 3, -1, -3, 2**40, 2**62, 2**63 - 1]


@pytest.mark.parametrize("seed", range(4))
def test_shapes_with_huge_and_negative_dims(seed):
    """Creation, reshape and broadcast with random dims: NumPy's answer, or an
    exception (MemoryError included: a huge array may be lazily accepted and
    fail when evaluated, never crash)."""
    rng = random.Random(300 + seed)
    for case in range(CASES // 2):
        shape = tuple(rng.choice(DIMS) for _ in range(rng.randint(0, 3)))
        op = rng.choice(["zeros", "ones", "full", "reshape", "broadcast_to"])
        src = np.arange(6, dtype=np.float32).reshape(2, 3)
        make = {
            "zeros": lambda m: m.zeros(shape, dtype=m.float32),
            "ones": lambda m: m.ones(shape, dtype=m.float32),
            "full": lambda m: m.full(shape, 2.5, dtype=m.float32),
            "reshape": lambda m: m.reshape(m.array(src) if m is mx else src, shape),
            "broadcast_to": lambda m: m.broadcast_to(m.array(src) if m is mx else src, shape),
        }[op]
        where = f"seed {seed} case {case}: {op}{shape}"
        if op == "reshape" and any(d < -1 for d in shape):
            # NumPy reads any negative dim as -1; MLX (and weft) accept only -1.
            with pytest.raises(ValueError):
                make(mx)
            continue
        try:
            want, err = make(np), None
        except MemoryError as e:
            want, err = None, e
        except (IndexError, ValueError, TypeError) as e:
            want, err = None, e
        if isinstance(err, MemoryError) or (err is None and want.nbytes > 1 << 26):
            # Too big for NumPy (or to compare): weft may hold it lazily or as a
            # view; it must give the right shape or an exception, never crash.
            try:
                got = make(mx)
                mx.eval(got)
            except ORDINARY + (MemoryError, OverflowError):
                continue
            assert want is None or got.shape == want.shape, where
            continue
        if err is not None:
            with pytest.raises(ORDINARY + (OverflowError,)):
                mx.eval(make(mx))
            continue
        got = make(mx)
        assert got.shape == want.shape, where
        np.testing.assert_array_equal(np.array(got), want, err_msg=where)
