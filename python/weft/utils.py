"""Trees of arrays (``mlx.utils``): nested lists, tuples and dicts whose
leaves are arrays (or anything else)."""

from __future__ import annotations

from typing import Any, Callable


def _is_node(x: Any) -> bool:
    return isinstance(x, (list, tuple, dict))


def tree_map(fn: Callable, tree: Any, *rest: Any, is_leaf: Callable | None = None) -> Any:
    """Applies ``fn`` to every leaf of ``tree`` (and the matching leaves of
    ``rest``, which must have the same structure), keeping the structure."""
    if (is_leaf is not None and is_leaf(tree)) or not _is_node(tree):
        return fn(tree, *rest)
    if isinstance(tree, dict):
        return {k: tree_map(fn, v, *(r[k] for r in rest), is_leaf=is_leaf) for k, v in tree.items()}
    mapped = [tree_map(fn, v, *(r[i] for r in rest), is_leaf=is_leaf) for i, v in enumerate(tree)]
    return mapped if isinstance(tree, list) else tuple(mapped)


def tree_map_with_path(fn: Callable, tree: Any, *rest: Any, is_leaf: Callable | None = None, path: str | None = None) -> Any:
    """As ``tree_map``, calling ``fn(path, leaf, *rest_leaves)`` with the
    leaf's dotted path (``"layers.0.weight"``)."""
    if (is_leaf is not None and is_leaf(tree)) or not _is_node(tree):
        return fn(path, tree, *rest)
    join = lambda k: str(k) if path is None else f"{path}.{k}"
    if isinstance(tree, dict):
        return {k: tree_map_with_path(fn, v, *(r[k] for r in rest), is_leaf=is_leaf, path=join(k)) for k, v in tree.items()}
    mapped = [tree_map_with_path(fn, v, *(r[i] for r in rest), is_leaf=is_leaf, path=join(i)) for i, v in enumerate(tree)]
    return mapped if isinstance(tree, list) else tuple(mapped)


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


def tree_unflatten(tree: list[tuple[str, Any]]) -> Any:
    """The inverse of ``tree_flatten``: paths whose keys are all integers
    become lists, other keys dicts."""
    if len(tree) == 1 and tree[0][0] == "":
        return tree[0][1]
    children: dict[str, list[tuple[str, Any]]] = {}
    for path, value in tree:
        head, _, rest = path.partition(".")
        children.setdefault(head, []).append((rest, value))
    if all(k.isdigit() for k in children):
        out = [None] * (max(int(k) for k in children) + 1)
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


def tree_merge(a: Any, b: Any) -> Any:
    """Merges two trees whose leaves do not overlap (``None`` or empty
    subtrees give way to the other side)."""
    if a is None or (_is_node(a) and not a):
        return b
    if b is None or (_is_node(b) and not b):
        return a
    if isinstance(a, dict) and isinstance(b, dict):
        out = dict(a)
        for k, v in b.items():
            out[k] = tree_merge(a.get(k), v)
        return out
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        merged = [tree_merge(x, y) for x, y in zip(a, b)]
        return merged if isinstance(a, list) else tuple(merged)
    raise ValueError("tree_merge: the trees overlap")
