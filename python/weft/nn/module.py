"""``Module``: a dict of parameters and child modules (``mlx.nn.Module``)."""

from __future__ import annotations

from typing import Any, Callable

import weft.core as mx
from weft.utils import tree_flatten, tree_unflatten

_FLOATING = (mx.float16, mx.bfloat16, mx.float32, mx.float64)


def _holds(v: Any, leaf: tuple) -> bool:
    """Whether ``v`` is an instance of ``leaf`` or a list/tuple/dict holding one."""
    if isinstance(v, leaf):
        return True
    if isinstance(v, (list, tuple)):
        return any(_holds(x, leaf) for x in v)
    if isinstance(v, dict):
        return any(_holds(x, leaf) for x in v.values())
    return False


def _has_module(v: Any) -> bool:
    """Whether ``v`` is a module or a list/dict holding one."""
    return _holds(v, (Module,))


def _holds_params(v: Any) -> bool:
    """Whether ``v`` belongs in the parameter tree: arrays, modules, and
    lists or dicts of them."""
    return _holds(v, (mx.array, Module))


class Module(dict):
    """Base class of layers. Arrays, modules and lists/dicts of them set as
    attributes are the module's items (its parameter tree); parameters
    whose name starts with ``_`` are not parameters."""

    def __init__(self) -> None:
        super().__init__()
        object.__setattr__(self, "_no_grad", set())
        object.__setattr__(self, "_training", True)

    @property
    def training(self) -> bool:
        return self._training

    @property
    def state(self) -> "Module":
        return self

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {key!r}") from None

    def __setattr__(self, key: str, value: Any) -> None:
        if _holds_params(value) and not key.startswith("_"):
            self.__dict__.pop(key, None)
            self[key] = value
        else:
            self.pop(key, None)
            object.__setattr__(self, key, value)

    def __delattr__(self, key: str) -> None:
        if key in self:
            del self[key]
        else:
            object.__delattr__(self, key)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._extra_repr()})"

    def _extra_repr(self) -> str:
        return ""

    __hash__ = object.__hash__

    def __eq__(self, other: object) -> bool:
        return self is other

    # Trees ---------------------------------------------------------------

    def filter_and_map(self, filter_fn: Callable, map_fn: Callable | None = None, is_leaf_fn: Callable | None = None) -> dict:
        """The tree of items for which ``filter_fn(module, key, value)``
        holds, recursing into child modules, lists and dicts (where other
        entries are ``{}``, keeping list positions)."""
        map_fn = map_fn or (lambda x: x)

        def walk(owner: "Module", key: Any, v: Any) -> Any:
            if isinstance(v, Module):
                return v.filter_and_map(filter_fn, map_fn, is_leaf_fn)
            if isinstance(v, dict):
                return {k: inner(owner, f"{key}.{k}", x) for k, x in v.items()}
            if isinstance(v, (list, tuple)):
                return [inner(owner, f"{key}.{i}", x) for i, x in enumerate(v)]
            return map_fn(v) if filter_fn(owner, key, v) else None

        def inner(owner: "Module", key: Any, v: Any) -> Any:
            w = walk(owner, key, v)
            return {} if w is None else w

        out = {}
        for k, v in self.items():
            if isinstance(v, (Module, dict, list, tuple)) or filter_fn(self, k, v):
                w = walk(self, k, v)
                if w is not None:
                    out[k] = w
        return out

    def parameters(self) -> dict:
        """Every array of the module and its children, as a tree."""
        return self.filter_and_map(lambda m, k, v: isinstance(v, mx.array))

    def trainable_parameters(self) -> dict:
        """The parameters that are not frozen."""
        return self.filter_and_map(lambda m, k, v: isinstance(v, mx.array) and k not in m._no_grad)

    @staticmethod
    def is_module(value: Any) -> bool:
        return isinstance(value, Module)

    @staticmethod
    def valid_child_filter(module: "Module", key: str, value: Any) -> bool:
        return isinstance(value, (dict, list))

    @staticmethod
    def valid_parameter_filter(module: "Module", key: str, value: Any) -> bool:
        return isinstance(value, (dict, list, mx.array)) and not key.startswith("_")

    @staticmethod
    def trainable_parameter_filter(module: "Module", key: str, value: Any) -> bool:
        return Module.valid_parameter_filter(module, key, value) and key not in module._no_grad

    def _module_tree(self, leaves_only: bool) -> dict:
        """The child modules in their lists and dicts, other leaves as
        ``{}``; with ``leaves_only``, modules with children are walked into."""
        def walk(v: Any) -> Any:
            if isinstance(v, Module):
                return v._module_tree(True) if leaves_only and v.children() else v
            if isinstance(v, dict):
                return {k: walk(x) for k, x in v.items()}
            if isinstance(v, (list, tuple)):
                return [walk(x) for x in v]
            return {}

        return {k: walk(v) for k, v in self.items() if isinstance(v, (Module, dict, list, tuple)) and _has_module(v)}

    def children(self) -> dict:
        """The direct child modules, in their lists and dicts (other entries
        of those are ``{}``)."""
        return self._module_tree(False)

    def leaf_modules(self) -> dict:
        """The modules that have no child modules, as a tree like ``children()``."""
        return self._module_tree(True)

    def named_modules(self) -> list[tuple[str, "Module"]]:
        """``(dotted name, module)`` for this module (name ``""``) and every
        descendant, children before parents as in MLX."""
        out: list[tuple[str, Module]] = []

        def visit(prefix: str, m: "Module") -> None:
            for path, child in tree_flatten(m.children(), is_leaf=lambda x: isinstance(x, Module)):
                visit(f"{prefix}.{path}" if prefix else path, child)
            out.append((prefix, m))

        visit("", self)
        return out[::-1]

    def modules(self) -> list["Module"]:
        return [m for _, m in self.named_modules()]

    def update(self, parameters: dict, strict: bool = True) -> "Module":
        """Replaces the arrays named in ``parameters`` (a tree like
        ``parameters()``, possibly partial)."""
        def apply(dst: Any, src: Any, path: str) -> Any:
            if isinstance(src, dict) and not src:
                return dst
            if isinstance(src, dict):
                if isinstance(dst, Module):
                    for k, v in src.items():
                        if k not in dst:
                            if strict:
                                raise ValueError(f"Module does not have parameter named {path + k!r}")
                            continue
                        new = apply(dst[k], v, f"{path}{k}.")
                        if new is not dst[k]:
                            dst[k] = new
                    return dst
                if isinstance(dst, dict):
                    for k, v in src.items():
                        if k in dst:
                            dst[k] = apply(dst[k], v, f"{path}{k}.")
                        elif strict:
                            raise ValueError(f"Module does not have parameter named {path + k!r}")
                    return dst
            if isinstance(src, (list, tuple)) and isinstance(dst, (list, tuple)):
                items = list(dst)
                for i, v in enumerate(src):
                    if i < len(items):
                        items[i] = apply(items[i], v, f"{path}{i}.")
                if isinstance(dst, list):
                    dst[:] = items
                    return dst
                return tuple(items)
            if isinstance(src, mx.array):
                return src
            if strict and src is not None:
                raise ValueError(f"Received invalid type for {path[:-1]!r}: {type(src).__name__}")
            return dst

        apply(self, parameters, "")
        return self

    def update_modules(self, modules: dict, strict: bool = True) -> "Module":
        """Replaces the child modules named in ``modules`` (a tree like
        ``children()``, possibly partial: ``{}`` leaves a place as it is).
        ``strict`` rejects names and list indices the module lacks."""
        def apply(dst: Any, src: Any, path: str) -> Any:
            if isinstance(src, Module):
                return src
            if isinstance(src, dict) and isinstance(dst, dict):
                for k, v in src.items():
                    if k in dst:
                        dst[k] = apply(dst[k], v, f"{path}{k}.")
                    elif strict:
                        raise ValueError(f'Module does not have sub-module named "{path}{k}".')
                return dst
            if isinstance(src, list) and isinstance(dst, list):
                for i, v in enumerate(src):
                    if i < len(dst):
                        dst[i] = apply(dst[i], v, f"{path}{i}.")
                    elif strict:
                        raise ValueError(f"List index {i} is out of bounds for destination of length {len(dst)}.")
                return dst
            if isinstance(src, dict) and not src:
                return dst
            raise ValueError(f"Received invalid type: {type(src).__name__}.")

        apply(self, modules, "")
        return self

    def apply(self, map_fn: Callable, filter_fn: Callable | None = None) -> "Module":
        """Replaces each parameter ``p`` by ``map_fn(p)``."""
        filter_fn = filter_fn or (lambda m, k, v: isinstance(v, mx.array))
        return self.update(self.filter_and_map(filter_fn, map_fn))

    def apply_to_modules(self, fn: Callable[[str, "Module"], Any]) -> "Module":
        """Calls ``fn(dotted name, module)`` on this module and every descendant."""
        for name, m in self.named_modules():
            fn(name, m)
        return self

    # Freezing and modes ---------------------------------------------------

    def set_dtype(self, dtype: mx.Dtype, predicate: Callable | None = lambda d: d in _FLOATING) -> "Module":
        """Casts the parameters whose dtype satisfies ``predicate`` (by
        default the floating ones; ``None`` casts all) to ``dtype``."""
        predicate = predicate or (lambda _: True)
        return self.apply(lambda p: p.astype(dtype) if predicate(p.dtype) else p)

    def _local_names(self, keys: Any) -> list[str]:
        if keys is None:
            return [k for k, v in self.items() if isinstance(v, mx.array)]
        return [keys] if isinstance(keys, str) else list(keys)

    def _check_keys(self, keys: Any, recurse: bool) -> None:
        """Raises a ``KeyError`` for a name in ``keys`` that no module
        reached (this one, or any with ``recurse``) has."""
        if keys is None:
            return
        modules = self.modules() if recurse else [self]
        for k in self._local_names(keys):
            if not any(k in m for m in modules):
                raise KeyError(f"Module doesn't contain member {k}.")

    def freeze(self, *, recurse: bool = True, keys: Any = None, strict: bool = False) -> "Module":
        """Excludes parameters (all, or those named in ``keys``) from
        ``trainable_parameters``, in this module and (``recurse``) its
        children; ``strict`` requires each key to name a member somewhere."""
        if strict:
            self._check_keys(keys, recurse)

        def f(_: str, m: Module) -> None:
            m._no_grad.update(m._local_names(keys))

        (self.apply_to_modules(f) if recurse else f("", self))
        return self

    def unfreeze(self, *, recurse: bool = True, keys: Any = None, strict: bool = False) -> "Module":
        """Undoes ``freeze`` for all parameters, or those named in ``keys``."""
        if strict:
            self._check_keys(keys, recurse)

        def f(_: str, m: Module) -> None:
            if keys is None:
                m._no_grad.clear()
            else:
                m._no_grad.difference_update(m._local_names(keys))

        (self.apply_to_modules(f) if recurse else f("", self))
        return self

    def train(self, mode: bool = True) -> "Module":
        """Sets training mode (``Dropout`` drops only in training) here and below."""
        self.apply_to_modules(lambda _, m: object.__setattr__(m, "_training", mode))
        return self

    def eval(self) -> "Module":
        return self.train(False)

    # Weights on disk -----------------------------------------------------

    def load_weights(self, file_or_weights: Any, strict: bool = True) -> "Module":
        """Loads parameters from a ``.safetensors``/``.npz`` file or a list of
        ``(dotted name, array)`` pairs; ``strict`` checks names and shapes."""
        weights = list(mx.load(file_or_weights).items()) if isinstance(file_or_weights, str) else list(file_or_weights)
        if strict:
            have = dict(tree_flatten(self.parameters()))
            got = dict(weights)
            extra = sorted(set(got) - set(have))
            missing = sorted(set(have) - set(got))
            if extra:
                raise ValueError(f"Received parameters not in model: {', '.join(extra)}.")
            if missing:
                raise ValueError(f"Missing parameters: {', '.join(missing)}.")
            for k, v in got.items():
                if not isinstance(v, mx.array):
                    raise ValueError(f"Expected an array for parameter {k}, got {type(v).__name__}")
                if tuple(v.shape) != tuple(have[k].shape):
                    raise ValueError(f"Expected shape {tuple(have[k].shape)} but received shape {tuple(v.shape)} for parameter {k}")
        if weights:
            self.update(tree_unflatten(weights), strict=False)
        return self

    def save_weights(self, file: str) -> None:
        """Saves the parameters to ``file``: ``.safetensors`` or ``.npz``."""
        flat = dict(tree_flatten(self.parameters()))
        if file.endswith(".safetensors"):
            mx.save_safetensors(file, flat)
        elif file.endswith(".npz"):
            mx.savez(file, **flat)
        else:
            raise ValueError("Unsupported file extension. Use '.npz' or '.safetensors'.")
