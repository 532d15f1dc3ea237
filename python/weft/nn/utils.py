"""``nn.value_and_grad``: gradients of a loss with respect to a model's
trainable parameters."""

from __future__ import annotations

import functools
from typing import Callable

import weft.core as mx
from weft.nn.module import Module


def value_and_grad(model: Module, fn: Callable) -> Callable:
    """``fn(*args)`` and its gradient with respect to
    ``model.trainable_parameters()``, as a tree of the same structure.

    The model holds its own parameters again after the call (weft's traced
    copies of them are not left behind in it)."""
    def inner(params, *args, **kwargs):
        model.update(params)
        return fn(*args, **kwargs)

    vg = mx.value_and_grad(inner)

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        params = model.trainable_parameters()
        try:
            return vg(params, *args, **kwargs)
        finally:
            model.update(params)

    return wrapped


def checkpoint(module: Module, fn: Callable | None = None) -> Callable:
    """``module`` (or ``fn``) with its intermediates recomputed in the backward pass."""
    fn = fn or module.__call__

    def inner(params, *args):
        module.update(params)
        return fn(*args)

    ck = mx.checkpoint(inner)

    @functools.wraps(fn)
    def wrapped(*args):
        return ck(module.trainable_parameters(), *args)

    return wrapped
