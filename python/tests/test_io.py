"""load and save_safetensors: round trips, errors on bad files."""

import os
import pathlib

import numpy as np
import pytest

import weft.core as mx

rng = np.random.default_rng(31)


def arrays():
    return {
        "f32": mx.array(rng.standard_normal((3, 4)).astype(np.float32)),
        "f16": mx.array(rng.standard_normal((5,)).astype(np.float16)),
        "bf16": mx.array(rng.standard_normal((2, 3)).astype(np.float32)).astype(mx.bfloat16),
        "f64": mx.array(rng.standard_normal((2, 2))).astype(mx.float64),
        "i32": mx.array(rng.integers(-1000, 1000, (7,)).astype(np.int32)),
        "i64": mx.array(rng.integers(-(2**40), 2**40, (2, 2))),
        "u8": mx.array(rng.integers(0, 255, (4,)).astype(np.uint8)),
        "u32": mx.array(rng.integers(0, 2**32, (3,), dtype=np.uint64).astype(np.uint32)),
        "bool": mx.array(rng.random((2, 3)) < 0.5),
        "scalar": mx.array(3.5),
        "lazy": mx.exp(mx.array([0.0, 1.0])),  # evaluated when saved
    }


def as_numpy(a):
    return np.array(a.astype(mx.float32)) if a.dtype == mx.bfloat16 else np.array(a)


def test_round_trip(tmp_path):
    src = arrays()
    path = str(tmp_path / "w.safetensors")
    mx.save_safetensors(path, src)
    back = mx.load(path)
    assert sorted(back) == sorted(src)
    for name, a in src.items():
        b = back[name]
        assert b.dtype == a.dtype, name
        assert b.shape == a.shape, name
        np.testing.assert_array_equal(as_numpy(b), as_numpy(a), err_msg=name)


def test_round_trip_matches_numpy_bytes(tmp_path):
    # The file holds the little-endian bytes NumPy has for the same values.
    x = rng.standard_normal((4, 5)).astype(np.float32)
    path = tmp_path / "x.safetensors"
    mx.save_safetensors(path, {"x": x})  # a NumPy value and a PathLike path
    raw = path.read_bytes()
    assert x.astype("<f4").tobytes() in raw
    back = mx.load(path)["x"]
    np.testing.assert_array_equal(np.array(back), x)


def test_extension_added_and_file_objects(tmp_path):
    base = str(tmp_path / "model")
    mx.save_safetensors(base, {"a": mx.arange(5)})
    assert os.path.exists(base + ".safetensors")
    with open(base + ".safetensors", "rb") as f:
        assert mx.load(f)["a"].tolist() == [0, 1, 2, 3, 4]
    with open(base + ".safetensors", "rb") as f:
        data = f.read()
    other = tmp_path / "noext"
    other.write_bytes(data)
    with pytest.raises(ValueError, match="format"):
        mx.load(str(other))
    assert mx.load(str(other), format="safetensors")["a"].tolist() == [0, 1, 2, 3, 4]


def test_errors(tmp_path):
    good = tmp_path / "good.safetensors"
    mx.save_safetensors(str(good), {"w": mx.array(rng.standard_normal((64, 64)).astype(np.float32))})
    data = good.read_bytes()
    # Truncated: the header says more bytes than there are.
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="safetensors"):
        mx.load(str(cut))
    # Garbage, and an empty file.
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(os.urandom(100))
    with pytest.raises(ValueError):
        mx.load(str(junk))
    empty = tmp_path / "empty.safetensors"
    empty.write_bytes(b"")
    with pytest.raises(ValueError):
        mx.load(str(empty))
    # A header that is too short to hold its own length.
    tiny = tmp_path / "tiny.safetensors"
    tiny.write_bytes(b"\x01\x02")
    with pytest.raises(ValueError):
        mx.load(str(tiny))
    # Other formats are not read by weft.
    for ext in ("npy", "npz", "gguf"):
        with pytest.raises(ValueError, match="safetensors"):
            mx.load(str(tmp_path / f"x.{ext}"))
    with pytest.raises(FileNotFoundError):
        mx.load(str(tmp_path / "missing.safetensors"))
    with pytest.raises(TypeError):
        mx.save_safetensors(str(good), {1: mx.zeros((2,))})
    with pytest.raises(NotImplementedError):
        mx.load(str(good), return_metadata=True)
    with pytest.raises(OSError):
        mx.save_safetensors(str(tmp_path / "no" / "such" / "dir.safetensors"), {"a": mx.zeros((1,))})
    # The good file still loads.
    assert mx.load(str(good))["w"].shape == (64, 64)


def test_pathlib_paths(tmp_path):
    p = pathlib.Path(tmp_path) / "p.safetensors"
    mx.save_safetensors(p, {"z": mx.zeros((2, 2), dtype=mx.int64)})
    z = mx.load(p)["z"]
    assert z.dtype == mx.int64 and z.tolist() == [[0, 0], [0, 0]]
