"""load, save, savez, savez_compressed, save_safetensors, save_gguf: round
trips (with NumPy reading and writing the same files), metadata, file
objects and paths, errors on bad files."""

import os
import pathlib
import zipfile

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
    # An unknown format.
    with pytest.raises(ValueError, match="format"):
        mx.load(str(tmp_path / "x.pkl"))
    with pytest.raises(FileNotFoundError):
        mx.load(str(tmp_path / "missing.safetensors"))
    with pytest.raises(TypeError):
        mx.save_safetensors(str(good), {1: mx.zeros((2,))})
    with pytest.raises(ValueError):
        mx.save_safetensors(str(good), {"w": mx.zeros((2,))}, {"k": 0})  # metadata values are str
    with pytest.raises(OSError):
        mx.save_safetensors(str(tmp_path / "no" / "such" / "dir.safetensors"), {"a": mx.zeros((1,))})
    # The good file still loads.
    assert mx.load(str(good))["w"].shape == (64, 64)


def test_pathlib_paths(tmp_path):
    p = pathlib.Path(tmp_path) / "p.safetensors"
    mx.save_safetensors(p, {"z": mx.zeros((2, 2), dtype=mx.int64)})
    z = mx.load(p)["z"]
    assert z.dtype == mx.int64 and z.tolist() == [[0, 0], [0, 0]]


NUMPY_DTYPES = ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]


@pytest.mark.parametrize("dt", NUMPY_DTYPES)
def test_npy_round_trips_with_numpy(tmp_path, dt):
    x = (rng.random((3, 4, 2)) * 50).astype(np.float32).astype(dt)  # exact in float32 too
    a = mx.array(x) if dt != "float64" else mx.array(x).astype(mx.float64)
    ours, theirs = tmp_path / "ours.npy", tmp_path / "theirs.npy"
    mx.save(ours, a)
    np.save(theirs, x)
    np.testing.assert_array_equal(np.load(ours), x)  # NumPy reads ours
    b = mx.load(str(theirs))  # we read NumPy's (float64 stays float64)
    assert b.dtype == a.dtype and b.shape == a.shape
    np.testing.assert_array_equal(np.array(b), x)
    with open(ours, "rb") as f:  # and file objects both ways
        np.testing.assert_array_equal(np.array(mx.load(f)), x)


def test_npy_layouts_and_extension(tmp_path):
    # Fortran order, big-endian and non-contiguous arrays.
    x = np.asfortranarray(np.arange(12, dtype=np.int32).reshape(3, 4))
    np.save(tmp_path / "f.npy", x)
    assert mx.load(str(tmp_path / "f.npy")).tolist() == x.tolist()
    np.save(tmp_path / "be.npy", np.arange(5, dtype=">f4"))
    assert mx.load(str(tmp_path / "be.npy")).tolist() == [0, 1, 2, 3, 4]
    a = mx.broadcast_to(mx.array([1, 2]), (3, 2))
    mx.save(str(tmp_path / "noext"), a)  # the extension is added
    assert np.load(tmp_path / "noext.npy").tolist() == [[1, 2]] * 3
    with open(tmp_path / "obj.npy", "wb") as f:
        mx.save(f, mx.arange(3).T)
    assert np.load(tmp_path / "obj.npy").tolist() == [0, 1, 2]
    # bfloat16, as MLX writes it: '<V2', read back as bfloat16.
    h = mx.array([1.5, -2.0]).astype(mx.bfloat16)
    mx.save(str(tmp_path / "h.npy"), h)
    assert np.load(tmp_path / "h.npy").dtype == np.dtype("V2")
    back = mx.load(str(tmp_path / "h.npy"))
    assert back.dtype == mx.bfloat16 and back.astype(mx.float32).tolist() == [1.5, -2.0]
    for shape in [(0,), (2, 0, 3)]:
        mx.save(str(tmp_path / "e.npy"), mx.zeros(shape))
        assert mx.load(str(tmp_path / "e.npy")).shape == shape == np.load(tmp_path / "e.npy").shape


def test_npy_errors(tmp_path):
    x = np.arange(16, dtype=np.float32)
    np.save(tmp_path / "t.npy", x)
    data = (tmp_path / "t.npy").read_bytes()
    # Truncated data: the array loads, its evaluation fails (as in MLX).
    (tmp_path / "cut.npy").write_bytes(data[:-8])
    cut = mx.load(str(tmp_path / "cut.npy"))
    with pytest.raises(RuntimeError, match="promises"):
        mx.eval(cut)
    with pytest.raises(RuntimeError):
        mx.eval(cut + 1)
    # A corrupt header: ValueError at once.
    for bad in [b"", b"\x93NUMPY", b"garbage" * 10, data[:20], data.replace(b"<f4", b"<c4")]:
        (tmp_path / "bad.npy").write_bytes(bad)
        with pytest.raises(ValueError, match="npy"):
            mx.load(str(tmp_path / "bad.npy"))
    with pytest.raises(ValueError, match="metadata"):
        mx.load(str(tmp_path / "t.npy"), return_metadata=True)


@pytest.mark.parametrize("compressed", [False, True])
def test_npz_round_trips_with_numpy(tmp_path, compressed):
    arrays = {f"a_{dt}": (rng.random((2, 3)) * 50).astype(dt) for dt in NUMPY_DTYPES if dt != "float64"}
    save_np = np.savez_compressed if compressed else np.savez
    save_mx = mx.savez_compressed if compressed else mx.savez
    save_np(tmp_path / "theirs.npz", **arrays)
    save_mx(str(tmp_path / "ours"), mx.arange(3), **{k: mx.array(v) for k, v in arrays.items()})
    ours = np.load(tmp_path / "ours.npz")
    assert ours["arr_0"].tolist() == [0, 1, 2]
    for k, v in arrays.items():
        np.testing.assert_array_equal(ours[k], v)
        np.testing.assert_array_equal(np.array(mx.load(str(tmp_path / "theirs.npz"))[k]), v)
    with zipfile.ZipFile(tmp_path / "ours.npz") as z:
        method = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
        assert {i.compress_type for i in z.infolist()} == {method}


def test_npz_errors(tmp_path):
    mx.savez(str(tmp_path / "g.npz"), a=mx.arange(100))
    data = (tmp_path / "g.npz").read_bytes()
    for bad in [b"", b"PK" + os.urandom(50), data[: len(data) // 2]]:
        (tmp_path / "bad.npz").write_bytes(bad)
        with pytest.raises(ValueError, match="npz"):
            mx.load(str(tmp_path / "bad.npz"))
    with pytest.raises(ValueError):
        mx.savez(str(tmp_path / "dup.npz"), mx.zeros(1), arr_0=mx.zeros(1))


def test_safetensors_metadata_and_file_objects(tmp_path):
    path = tmp_path / "m.safetensors"
    with open(path, "wb") as f:
        mx.save_safetensors(f, {"w": mx.ones((2, 2))}, {"format": "weft", "k": "v"})
    arrays, meta = mx.load(path, return_metadata=True)
    assert meta == {"format": "weft", "k": "v"}
    assert arrays["w"].tolist() == [[1, 1], [1, 1]]
    with open(path, "rb") as f:
        _, meta = mx.load(f, return_metadata=True)
    assert meta == {"format": "weft", "k": "v"}
    mx.save_safetensors(str(path), {"w": mx.ones((1,))})
    assert mx.load(str(path), return_metadata=True)[1] == {}


@pytest.mark.parametrize("dt", ["float16", "float32", "bfloat16", "float64", "int8", "int16", "int32", "int64"])
def test_gguf_round_trip(tmp_path, dt):
    a = mx.array(rng.standard_normal((4, 6, 3, 1, 2)).astype(np.float32) * 10).astype(getattr(mx, dt))
    mx.save_gguf(str(tmp_path / "w"), {"w": a, "t": a.reshape(24, 6).T})
    back = mx.load(tmp_path / "w.gguf")
    assert back["w"].dtype == a.dtype and back["w"].shape == a.shape
    assert mx.array_equal(back["w"], a).item()
    assert mx.array_equal(back["t"], a.reshape(24, 6).T).item()


def test_gguf_metadata(tmp_path):
    path = str(tmp_path / "m.gguf")
    meta = {
        "name": "weft",
        "names": ["a", "bc"],
        "u8": mx.array(7, dtype=mx.uint8),
        "f": mx.array(1.5),
        "ints": mx.array([1, 2, 3], dtype=mx.int64),
    }
    mx.save_gguf(path, {"x": mx.zeros((2,), dtype=mx.int32)}, meta)
    arrays, back = mx.load(path, return_metadata=True)
    assert arrays["x"].tolist() == [0, 0]
    assert back["name"] == "weft" and back["names"] == ["a", "bc"]
    for k in ("u8", "f", "ints"):
        assert back[k].dtype == meta[k].dtype and mx.array_equal(back[k], meta[k]).item(), k
    for bad in [mx.array(1.0, dtype=mx.float16), mx.zeros((2, 2)), 3, ["a", 1]]:
        with pytest.raises(ValueError):
            mx.save_gguf(path, {"x": mx.zeros((1,))}, {"k": bad})
    with pytest.raises(ValueError):
        mx.save_gguf(path, {"x": mx.zeros((1,), dtype=mx.uint32)})  # GGUF has no unsigned tensors
    data = open(path, "rb").read()
    for bad in [b"", b"GGUF", data[: len(data) - 3], b"XXXX" + data[4:]]:
        with open(path, "wb") as f:
            f.write(bad)
        with pytest.raises(ValueError, match="GGUF"):
            mx.load(path)


def test_export_to_dot_shows_pending_primitives_and_names():
    import io

    a, b = mx.array(1.0), mx.array(2.0)
    c = mx.exp(a) + b
    buf = io.StringIO()
    mx.export_to_dot(buf, c)
    text = buf.getvalue()
    assert text.startswith("digraph {") and "exp" in text and "Add" in text
    buf = io.StringIO()
    mx.export_to_dot(buf, *mx.divmod(a, b), named=c)
    assert "named" in buf.getvalue()
    mx.eval(c)
    buf = io.StringIO()
    mx.export_to_dot(buf, c)  # evaluated: a leaf, no primitive
    assert "exp" not in buf.getvalue() and "->" not in buf.getvalue()
    with pytest.raises(TypeError):
        mx.export_to_dot(buf, 3)
