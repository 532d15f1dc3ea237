"""Trees of arrays (``mlx.utils``): nested lists, tuples and dicts whose
leaves are arrays (or anything else)."""

from __future__ import annotations

from typing import Any, Callable


def _is_node(x: Any) -> bool:
    return isinstance(x, (list, tuple, dict))


def _rebuild(node: Any, items: list) -> Any:
    """A list or tuple of ``node``'s type holding ``items`` (named tuples and
    other tuple/list subclasses keep their type)."""
    if isinstance(node, tuple) and hasattr(node, "_fields"):
        return type(node)(*items)
    return type(node)(items)


def tree_map(fn: Callable, tree: Any, *rest: Any, is_leaf: Callable | None = None) -> Any:
    """Applies ``fn`` to every leaf of ``tree`` (and the matching leaves of
    ``rest``, each a superset of ``tree``), keeping the structure."""
    if (is_leaf is not None and is_leaf(tree)) or not _is_node(tree):
        return fn(tree, *rest)
    if isinstance(tree, dict):
        return {k: tree_map(fn, v, *(r[k] for r in rest), is_leaf=is_leaf) for k, v in tree.items()}
    return _rebuild(tree, [tree_map(fn, v, *(r[i] for r in rest), is_leaf=is_leaf) for i, v in enumerate(tree)])


def tree_map_with_path(fn: Callable, tree: Any, *rest: Any, is_leaf: Callable | None = None, path: str | None = None) -> Any:
    """As ``tree_map``, calling ``fn(path, leaf, *rest_leaves)`` with the
    leaf's dotted path (``"layers.0.weight"``)."""
    if (is_leaf is not None and is_leaf(tree)) or not _is_node(tree):
        return fn(path, tree, *rest)
    join = lambda k: str(k) if path is None else f"{path}.{k}"
    if isinstance(tree, dict):
        return {k: tree_map_with_path(fn, v, *(r[k] for r in rest), is_leaf=is_leaf, path=join(k)) for k, v in tree.items()}
    return _rebuild(tree, [tree_map_with_path(fn, v, *(r[i] for r in rest), is_leaf=is_leaf, path=join(i)) for i, v in enumerate(tree)])


def tree_flatten(tree: Any, prefix: str = "", is_leaf: Callable | None = None, destination: Any = None) -> Any:
    """The leaves of ``tree`` as ``(dotted path, leaf)`` pairs, depth first:
    ``tree_flatten([[a], {"b": b}]) == [("0.0", a), ("1.b", b)]``; with a
    ``destination`` (a list or dict), added to it and returned."""
    if destination is not None:
        pairs = tree_flatten(tree, prefix, is_leaf)
        if isinstance(destination, dict):
            destination.update(pairs)
        else:
            destination.extend(pairs)
        return destination
    if (is_leaf is not None and is_leaf(tree)) or not _is_node(tree):
        return [(prefix[1:], tree)]
    items = tree.items() if isinstance(tree, dict) else enumerate(tree)
    out: list[tuple[str, Any]] = []
    for k, v in items:
        out.extend(tree_flatten(v, f"{prefix}.{k}", is_leaf))
    return out


def tree_unflatten(tree: list[tuple[str, Any]] | dict[str, Any]) -> Any:
    """The inverse of ``tree_flatten`` (pairs, or a dict of them): nodes whose
    keys are all canonical integers (``"0"``, ``"1"``, not ``"01"``) become
    lists, with ``{}`` at missing indices; other nodes become dicts."""
    pairs = list(tree.items()) if isinstance(tree, dict) else list(tree)
    if len(pairs) == 1 and pairs[0][0] == "":
        return pairs[0][1]
    children: dict[str, list[tuple[str, Any]]] = {}
    for path, value in pairs:
        head, _, rest = path.partition(".")
        children.setdefault(head, []).append((rest, value))
    if all(k.isdigit() and str(int(k)) == k for k in children):
        out: list = [{} for _ in range(max(int(k) for k in children) + 1)]
        for k, v in children.items():
            out[int(k)] = tree_unflatten(v)
        return out
    return {k: tree_unflatten(v) for k, v in children.items()}


def tree_reduce(fn: Callable, tree: Any, initializer: Any = None, is_leaf: Callable | None = None) -> Any:
    """Folds ``fn(accumulator, leaf)`` over the leaves of ``tree``."""
    leaves = [v for _, v in tree_flatten(tree, is_leaf=is_leaf)]
    if initializer is None:
        if not leaves:
            return None
        acc, leaves = leaves[0], leaves[1:]
    else:
        acc = initializer
    for leaf in leaves:
        acc = fn(acc, leaf)
    return acc


def _empty(tree: Any) -> bool:
    return tree is None or (_is_node(tree) and not tree)


def tree_merge(tree_a: Any, tree_b: Any, merge_fn: Callable | None = None) -> Any:
    """Merges two trees into one holding the values of both, like a deep
    ``dict.update``. ``None`` leaves and empty containers are empty subtrees
    that give way to the other side; two leaves at the same place are
    combined by ``merge_fn(a, b)``, or raise a ``ValueError`` without one."""
    def mismatch() -> ValueError:
        return ValueError(f"Cannot merge {type(tree_a).__name__} with {type(tree_b).__name__}")

    if not (tree_a is None and tree_b is None):
        if _empty(tree_a) and _empty(tree_b):
            if _is_node(tree_a) and _is_node(tree_b) and type(tree_a) is not type(tree_b):
                raise mismatch()
            return tree_b if tree_a is None else tree_a
        if _empty(tree_a):
            return tree_b
        if _empty(tree_b):
            return tree_a
    if _is_node(tree_a) and _is_node(tree_b):
        if isinstance(tree_a, dict) != isinstance(tree_b, dict):
            raise mismatch()
        if isinstance(tree_a, dict):
            out = dict(tree_a)
            for k, v in tree_b.items():
                out[k] = tree_merge(tree_a[k], v, merge_fn) if k in tree_a else v
            return out
        n = max(len(tree_a), len(tree_b))
        pad = lambda t: list(t) + [None] * (n - len(t))
        return _rebuild(tree_a, [tree_merge(x, y, merge_fn) for x, y in zip(pad(tree_a), pad(tree_b))])
    if merge_fn is None:
        raise ValueError("Trees contain elements at the same locations but no merge function was provided")
    return merge_fn(tree_a, tree_b)
