"""Sharing arrays with other libraries: the buffer protocol, DLPack,
asarray, pickling and copying, formatting, comparisons with non-arrays."""

import copy
import gc
import pickle
import weakref

import numpy as np
import pytest

import weft.core as mx

DTYPES = [
    (mx.bool_, np.bool_),
    (mx.uint8, np.uint8),
    (mx.uint16, np.uint16),
    (mx.uint32, np.uint32),
    (mx.uint64, np.uint64),
    (mx.int8, np.int8),
    (mx.int16, np.int16),
    (mx.int32, np.int32),
    (mx.int64, np.int64),
    (mx.float16, np.float16),
    (mx.float32, np.float32),
    (mx.float64, np.float64),
]


@pytest.mark.parametrize("mt,nt", DTYPES)
def test_buffer_protocol_matches_numpy(mt, nt):
    x = (np.arange(12).reshape(3, 4) % 7).astype(nt)
    a = mx.array(x).astype(mt)
    for f in (lambda v: v, lambda v: v.T):
        mv, nv = memoryview(f(a)), memoryview(f(x))
        assert mv.shape == nv.shape and mv.strides == nv.strides
        assert mv.itemsize == nv.itemsize and not mv.readonly
        np.testing.assert_array_equal(np.array(mv, copy=False), f(x))
    assert bytes(a) == x.tobytes()


def test_buffer_is_the_array_memory():
    a = mx.array([[1.0, 1.0], [1.0, 1.0]])
    b = mx.broadcast_to(a, (5, 2, 2))
    a_np = np.array(a, copy=False)
    b_np = np.array(b, copy=False)
    assert not a_np.flags.owndata and a_np.flags.writeable
    assert b_np.strides == (0, 8, 4)  # the broadcast is not copied
    a_np[0, 0] = 5  # writes reach the array, as in MLX
    assert a.tolist() == [[5, 1], [1, 1]]
    assert np.array(a).flags.owndata  # a plain conversion copies


def test_buffer_keeps_the_array_alive():
    a = mx.arange(3)
    ref = weakref.ref(a)
    view = memoryview(a)
    del a
    gc.collect()
    assert ref() is not None and view.tolist() == [0, 1, 2]
    del view
    gc.collect()
    assert ref() is None


def test_bfloat16_buffer_and_bytes_construction():
    h = mx.array([[1.0, 2.0]]).astype(mx.bfloat16)
    mv = memoryview(h)
    assert mv.format == "bfloat16" and mv.strides == (4, 2)
    with pytest.raises(ValueError, match="bfloat16"):
        np.array(h)
    assert mx.array(b"Hi").tolist() == [72, 105] and mx.array(b"Hi").dtype == mx.uint8
    assert mx.array(bytearray([1, 2])).tolist() == [1, 2]


class CpuDLPack:
    def __init__(self, a):
        self.a = a

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, *args, **kwargs):
        kwargs["dl_device"] = (1, 0)
        return self.a.__dlpack__(*args, **kwargs)


@pytest.mark.parametrize("mt,nt", DTYPES)
def test_dlpack_round_trips(mt, nt):
    x = (np.arange(12).reshape(3, 4) % 5).astype(nt)
    a = mx.array(x).astype(mt)
    assert a.__dlpack_device__() == (1, 0)
    for f in (lambda v: v, lambda v: v.T, lambda v: v[::2, 1::2]):
        y = np.from_dlpack(CpuDLPack(f(a)))
        assert y.dtype == nt
        np.testing.assert_array_equal(y, f(x))
        b = mx.from_dlpack(f(x))
        assert b.dtype == (mx.float32 if nt is np.float64 else mt)  # float64 imports as float32, as in MLX
        np.testing.assert_array_equal(np.array(b), f(x))


def test_from_dlpack_keeps_strides_and_copies():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = mx.from_dlpack(x.T)
    assert memoryview(y).strides == x.T.strides and y.tolist() == x.T.tolist()
    z = mx.from_dlpack(np.broadcast_to(np.array([7], dtype=np.int32), (3,)))
    assert memoryview(z).strides == (0,) and z.tolist() == [7, 7, 7]
    x += 10  # an import is a copy
    assert y.tolist()[0] == [0, 4, 8]
    with pytest.raises(ValueError):
        mx.from_dlpack(x, copy=False)
    with pytest.raises(ValueError):
        mx.from_dlpack(np.arange(3, dtype=np.float32)[::-1])
    with pytest.raises(ValueError):
        mx.from_dlpack(np.ones(2, dtype=np.complex128))  # weft has complex64 only


def test_asarray():
    a = mx.array([1, 2, 3])
    assert mx.asarray(a).tolist() == [1, 2, 3]
    assert mx.asarray(a, dtype=mx.float32).dtype == mx.float32
    assert mx.asarray([[1, 2]], copy=True).tolist() == [[1, 2]]
    assert mx.asarray(np.arange(3, dtype=np.int16)).dtype == mx.int16
    assert mx.asarray(CpuDLPack(a)).tolist() == [1, 2, 3]
    for bad in (a, [1, 2], np.arange(3)):
        with pytest.raises(ValueError):
            mx.asarray(bad, copy=False)
    assert a.__array_namespace__() is mx


@pytest.mark.parametrize("mt,_", DTYPES + [(mx.bfloat16, None)])
def test_pickle_and_copy(mt, _):
    a = mx.array([[1, 2], [3, 4]]).astype(mt)
    for b in (pickle.loads(pickle.dumps(a)), copy.copy(a), copy.deepcopy(a)):
        assert b.dtype == a.dtype and mx.array_equal(b, a).item()
    c = copy.copy(a)
    if mt != mx.bool_:
        c += 1
        assert mx.array_equal(c, a + 1).item() and not mx.array_equal(c, a).item()


def test_format():
    assert f"{mx.array(0.35487):.1f}" == "0.4"
    assert f"{mx.arange(3)[1]:.2f}" == "1.00"
    assert f"{mx.array([1, 2])}" == "array([1, 2], dtype=int32)"
    with pytest.raises(TypeError):
        f"{mx.arange(3):.2f}"


def test_comparisons_with_non_arrays():
    a = mx.array([1, 2, 3])
    assert (a == [1, 2, 3]) is False and (a != (1, 2, 3)) is True
    assert (a == np.array([1, 2, 3])).tolist() == [True] * 3
    for other in ("x", [1, 2, 3], (1, 2, 3)):
        with pytest.raises(ValueError):
            a < other
        with pytest.raises(ValueError):
            a * other
    with pytest.raises(ValueError):
        mx.array(1.0) & mx.array(1)
    b = mx.array(True)
    c = b
    c ^= True
    assert b.item() is False  # in place: every name bound to the array sees it
    with pytest.raises(ValueError, match="non-uniform|element"):
        mx.array([[0, 1], ["x", 1]])
