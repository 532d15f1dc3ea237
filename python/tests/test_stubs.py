"""python/weft/core.pyi and the compiled module name the same things."""

import ast
import pathlib

import pytest

import weft.core as mx

STUB = pathlib.Path(__file__).resolve().parents[1] / "weft" / "core.pyi"


def stub_names():
    tree = ast.parse(STUB.read_text())
    top, classes = set(), {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            top.add(node.name)
        elif isinstance(node, ast.ClassDef):
            top.add(node.name)
            classes[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            top.add(node.target.id)
    return top, classes


@pytest.mark.skipif(not STUB.exists(), reason="run from a source checkout")
def test_stub_names_exist():
    top, classes = stub_names()
    aliases = {"Scalar", "ScalarOrArray", "StreamOrDevice", "Axis", "ShapeLike"}
    for name in top - aliases:
        assert hasattr(mx, name), name
    for sub in ("random", "fast"):
        module = getattr(mx, sub)
        public = {n for n in dir(module) if not n.startswith("_")}
        assert classes[sub] == public, sub


@pytest.mark.skipif(not STUB.exists(), reason="run from a source checkout")
def test_new_functions_have_stubs():
    top, _ = stub_names()
    for name in (
        "softmax logsumexp cumsum sort argsort topk take take_along_axis erf slice_update load save_safetensors"
    ).split():
        assert name in top, name
        assert callable(getattr(mx, name))


@pytest.mark.skipif(not STUB.exists(), reason="run from a source checkout")
def test_every_public_name_has_a_stub():
    top, classes = stub_names()
    public = {n for n in dir(mx) if not n.startswith("_")}
    missing = sorted(public - top - {"core"})
    assert not missing, f"no stub for {missing}"
