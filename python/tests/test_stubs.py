"""The stubs (python/weft/core/__init__.pyi, random.pyi, fast.pyi,
linalg.pyi, fft.pyi) and the
compiled module name the same things with the same arguments."""

import ast
import inspect
import pathlib

import pytest

import weft.core as mx

STUBS = pathlib.Path(__file__).resolve().parents[1] / "weft" / "core"
SUBMODULES = ("random", "fast", "linalg", "fft")
ALIASES = {"Scalar", "ScalarOrArray", "StreamOrDevice", "Axis", "ShapeLike"}

pytestmark = pytest.mark.skipif(not STUBS.is_dir(), reason="run from a source checkout")


def parse(name):
    return ast.parse((STUBS / f"{name}.pyi").read_text())


def stub_defs(tree):
    """Top-level names and, for classes, their methods: name -> node."""
    top, classes = {}, {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            top.setdefault(node.name, node)
        elif isinstance(node, ast.ClassDef):
            top[node.name] = node
            classes[node.name] = {n.name: n for n in node.body if isinstance(n, ast.FunctionDef)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            top[node.target.id] = node
        elif isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is None:
            for alias in node.names:
                top[alias.asname or alias.name] = node
    return top, classes


def stub_params(fn: ast.FunctionDef, method=False):
    """(name, kind, has_default) for each parameter of a stub function."""
    a = fn.args
    out = []
    positional = [(p, inspect.Parameter.POSITIONAL_ONLY) for p in a.posonlyargs]
    positional += [(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in a.args]
    n_plain_defaults = len(a.defaults)
    for i, (p, kind) in enumerate(positional):
        out.append((p.arg, kind, i >= len(positional) - n_plain_defaults))
    if a.vararg:
        out.append((a.vararg.arg, inspect.Parameter.VAR_POSITIONAL, False))
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append((p.arg, inspect.Parameter.KEYWORD_ONLY, d is not None))
    if a.kwarg:
        out.append((a.kwarg.arg, inspect.Parameter.VAR_KEYWORD, False))
    if method and out and out[0][0] in ("self", "cls"):
        out = out[1:]
    return out


def runtime_params(obj):
    """The same triples for a compiled function, from its text signature;
    None when it has none (e.g. a builtin slot)."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return [
        (p.name, p.kind, p.default is not inspect.Parameter.empty)
        for p in sig.parameters.values()
    ]


def test_every_public_name_has_a_stub():
    top, _ = stub_defs(parse("__init__"))
    public = {n for n in dir(mx) if not n.startswith("_")}
    missing = sorted(public - set(top))
    assert not missing, f"no stub for {missing}"
    for sub in SUBMODULES:
        sub_top, _ = stub_defs(parse(sub))
        public = {n for n in dir(getattr(mx, sub)) if not n.startswith("_")}
        stubbed = {n for n, node in sub_top.items() if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AnnAssign))}
        assert stubbed == public, sub


def test_every_stub_names_something_real():
    top, _ = stub_defs(parse("__init__"))
    for name in set(top) - ALIASES:
        assert hasattr(mx, name), name


def check_signatures(pairs):
    """`pairs`: (qualified name, stub node, runtime object, is_method)."""
    compared, wrong = 0, []
    for qual, node, obj, method in pairs:
        got = runtime_params(obj)
        if got is None:
            continue
        if method and got and got[0][0] in ("self", "$self"):
            got = got[1:]
        want = stub_params(node, method)
        compared += 1
        if [(n, k) for n, k, _ in got] != [(n, k) for n, k, _ in want] or [d for *_, d in got] != [d for *_, d in want]:
            wrong.append(f"{qual}: runtime {got} vs stub {want}")
    return compared, wrong


def test_function_signatures_match_the_stubs():
    top, classes = stub_defs(parse("__init__"))
    pairs = [
        (name, node, getattr(mx, name), False)
        for name, node in top.items()
        if isinstance(node, ast.FunctionDef) and callable(getattr(mx, name, None))
    ]
    for sub in SUBMODULES:
        sub_top, _ = stub_defs(parse(sub))
        module = getattr(mx, sub)
        pairs += [(f"{sub}.{n}", node, getattr(module, n), False) for n, node in sub_top.items() if isinstance(node, ast.FunctionDef)]
    compared, wrong = check_signatures(pairs)
    assert compared > 150, f"only {compared} functions carried a signature to compare"
    assert not wrong, "\n".join(wrong)


def test_method_signatures_match_the_stubs():
    _, classes = stub_defs(parse("__init__"))
    pairs = []
    for cls, methods in classes.items():
        runtime_cls = getattr(mx, cls, None)
        for name, node in methods.items():
            if name.startswith("__") or any(
                isinstance(d, ast.Name) and d.id in ("property", "overload") for d in node.decorator_list
            ):
                continue
            obj = getattr(runtime_cls, name, None)
            if obj is not None and not isinstance(obj, property):
                static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)
                pairs.append((f"{cls}.{name}", node, obj, not static))
    compared, wrong = check_signatures(pairs)
    assert compared > 30, f"only {compared} methods carried a signature to compare"
    assert not wrong, "\n".join(wrong)
