"""Optimizers (``mlx.optimizers``): each keeps a state tree beside the
parameters and updates a model (``update(model, grads)``) or a parameter
tree (``apply_gradients(grads, params)``)."""

from __future__ import annotations

import math
from typing import Any, Callable

import weft.core as mx
from weft.utils import tree_map


def _is_tree_leaf(x: Any) -> bool:
    return not isinstance(x, (dict, list, tuple))


class Optimizer:
    """Base class: subclasses define ``init_single(param, state)`` and
    ``apply_single(gradient, param, state) -> new param``. Learning rates
    and other hyperparameters may be schedules (functions of the step)."""

    def __init__(self, schedulers: dict | None = None) -> None:
        self._initialized = False
        self._state: dict = {"step": mx.array(0, mx.uint32)}
        self._schedulers = {k: v for k, v in (schedulers or {}).items()}

    def _maybe_schedule(self, name: str, value: Any) -> None:
        if callable(value):
            self._schedulers[name] = value
            value = value(0)
        self._state[name] = value if isinstance(value, mx.array) else mx.array(value)

    def __getattr__(self, name: str) -> Any:
        state = self.__dict__.get("_state")
        if state is not None and name in state:
            return state[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        state = self.__dict__.get("_state")
        if state is not None and name in state and name != "step":
            state[name] = value if isinstance(value, mx.array) else mx.array(value)
        else:
            object.__setattr__(self, name, value)

    @property
    def state(self) -> dict:
        return self._state

    @state.setter
    def state(self, value: dict) -> None:
        self._state = value
        self._initialized = False

    @property
    def step(self) -> mx.array:
        return self._state["step"]

    @property
    def learning_rate(self) -> mx.array:
        return self._state["learning_rate"]

    @learning_rate.setter
    def learning_rate(self, value: Any) -> None:
        self._state["learning_rate"] = value if isinstance(value, mx.array) else mx.array(value)

    def init(self, parameters: Any) -> None:
        """Creates the per-parameter state (done on the first update)."""
        def make(p: Any, s: Any) -> Any:
            if isinstance(p, dict):
                s = s if isinstance(s, dict) else {}
                return {k: make(v, s.get(k)) for k, v in p.items()}
            if isinstance(p, (list, tuple)):
                s = s if isinstance(s, (list, tuple)) and len(s) == len(p) else [None] * len(p)
                return [make(v, t) for v, t in zip(p, s)]
            if isinstance(p, mx.array):
                if s is None:
                    s = {}
                    self.init_single(p, s)
                return s
            return s

        for k, v in make(parameters, {k: v for k, v in self._state.items()}).items():
            self._state[k] = v
        self._initialized = True

    def init_single(self, parameter: mx.array, state: dict) -> None:
        pass

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict) -> mx.array:
        raise NotImplementedError

    def apply_gradients(self, gradients: dict, parameters: dict) -> dict:
        """The parameters after one step with ``gradients`` (same structure)."""
        if not self._initialized:
            self.init(gradients)
        for name, sched in self._schedulers.items():
            self._state[name] = mx.array(sched(self.step)) if not isinstance(sched(self.step), mx.array) else sched(self.step)
        self._state["step"] = self.step + 1

        def walk(g: Any, p: Any, s: Any) -> Any:
            if isinstance(g, dict):
                return {k: walk(v, p[k], s[k]) for k, v in g.items()}
            if isinstance(g, (list, tuple)):
                return [walk(v, q, t) for v, q, t in zip(g, p, s)]
            if isinstance(g, mx.array):
                return self.apply_single(g, p, s)
            return p

        return walk(gradients, parameters, self._state)

    def update(self, model: Any, gradients: dict) -> None:
        """Applies one step to ``model``'s parameters."""
        model.update(self.apply_gradients(gradients, model))


class SGD(Optimizer):
    """``v = momentum v + (1 - dampening) g`` (with weight decay added to
    ``g``), ``p -= lr (g + momentum v)`` with Nesterov, else ``p -= lr v``."""

    def __init__(self, learning_rate: Any, momentum: float = 0.0, weight_decay: float = 0.0, dampening: float = 0.0, nesterov: bool = False) -> None:
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening.")
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.momentum, self.weight_decay, self.dampening, self.nesterov = momentum, weight_decay, dampening, nesterov

    def init_single(self, parameter, state):
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient, parameter, state):
        lr = self.learning_rate.astype(gradient.dtype)
        if self.weight_decay != 0:
            gradient = gradient + self.weight_decay * parameter
        if self.momentum <= 0:
            return parameter - lr * gradient
        v = self.momentum * state.get("v") if "v" in state else 0
        if self.dampening > 0:
            v = v + (1 - self.dampening) * gradient
        else:
            v = v + gradient
        update = gradient + self.momentum * v if self.nesterov else v
        state["v"] = v
        return parameter - lr * update


class RMSprop(Optimizer):
    def __init__(self, learning_rate: Any, alpha: float = 0.99, eps: float = 1e-8) -> None:
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        if alpha < 0.0:
            raise ValueError(f"RMSprop alpha should be >=0, {alpha} was provided instead")
        if eps <= 0.0:
            raise ValueError(f"RMSprop epsilon should be >0, {eps} was provided instead")
        self.alpha, self.eps = alpha, eps

    def init_single(self, parameter, state):
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient, parameter, state):
        lr = self.learning_rate.astype(gradient.dtype)
        v = self.alpha * state["v"] + (1 - self.alpha) * mx.square(gradient)
        state["v"] = v
        return parameter - lr * gradient / (mx.sqrt(v) + self.eps)


class Adagrad(Optimizer):
    def __init__(self, learning_rate: Any, eps: float = 1e-8) -> None:
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        if eps <= 0.0:
            raise ValueError(f"Adagrad epsilon should be >0, {eps} was provided instead")
        self.eps = eps

    def init_single(self, parameter, state):
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient, parameter, state):
        lr = self.learning_rate.astype(gradient.dtype)
        v = state["v"] + mx.square(gradient)
        state["v"] = v
        return parameter - lr * gradient / (mx.sqrt(v) + self.eps)


class Adam(Optimizer):
    """``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g^2``,
    ``p -= lr m / (sqrt(v) + eps)`` (bias-corrected when ``bias_correction``)."""

    def __init__(self, learning_rate: Any, betas: list = [0.9, 0.999], eps: float = 1e-8, bias_correction: bool = False) -> None:
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.betas, self.eps, self.bias_correction = betas, eps, bias_correction

    def init_single(self, parameter, state):
        state["m"] = mx.zeros_like(parameter)
        state["v"] = mx.zeros_like(parameter)

    def _adam_step(self, gradient, parameter, state):
        lr = self.learning_rate.astype(gradient.dtype)
        b1, b2 = self.betas
        m = b1 * state["m"] + (1 - b1) * gradient
        v = b2 * state["v"] + (1 - b2) * mx.square(gradient)
        state["m"], state["v"] = m, v
        if self.bias_correction:
            step = self.step.astype(mx.float32)
            c1 = (lr / (1 - b1**step)).astype(gradient.dtype)
            c2 = mx.rsqrt(1 - b2**step).astype(gradient.dtype)
            return parameter - c1 * m / (mx.sqrt(v) * c2 + self.eps)
        return parameter - lr * m / (mx.sqrt(v) + self.eps)

    def apply_single(self, gradient, parameter, state):
        return self._adam_step(gradient, parameter, state)


class AdamW(Adam):
    """Adam with decoupled weight decay: ``p *= 1 - lr * weight_decay`` first."""

    def __init__(self, learning_rate: Any, betas: list = [0.9, 0.999], eps: float = 1e-8, weight_decay: float = 0.01, bias_correction: bool = False) -> None:
        super().__init__(learning_rate, betas, eps, bias_correction)
        self.weight_decay = weight_decay

    def apply_single(self, gradient, parameter, state):
        lr = self.learning_rate.astype(gradient.dtype)
        return self._adam_step(gradient, parameter * (1 - lr * self.weight_decay), state)


class Adamax(Adam):
    def __init__(self, learning_rate: Any, betas: list = [0.9, 0.999], eps: float = 1e-8) -> None:
        super().__init__(learning_rate, betas, eps)

    def apply_single(self, gradient, parameter, state):
        lr = self.learning_rate.astype(gradient.dtype)
        b1, b2 = self.betas
        m = b1 * state["m"] + (1 - b1) * gradient
        v = mx.maximum(b2 * state["v"], mx.abs(gradient))
        state["m"], state["v"] = m, v
        return parameter - lr * m / (v + self.eps)


class Lion(Optimizer):
    """``p -= lr sign(b1 m + (1 - b1) g)`` (after ``p *= 1 - lr wd``), then
    ``m = b2 m + (1 - b2) g``."""

    def __init__(self, learning_rate: Any, betas: list = [0.9, 0.99], weight_decay: float = 0.0) -> None:
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.betas, self.weight_decay = betas, weight_decay

    def init_single(self, parameter, state):
        state["m"] = mx.zeros_like(parameter)

    def apply_single(self, gradient, parameter, state):
        lr = self.learning_rate.astype(gradient.dtype)
        b1, b2 = self.betas
        c = b1 * state["m"] + (1 - b1) * gradient
        state["m"] = b2 * state["m"] + (1 - b2) * gradient
        if self.weight_decay > 0:
            parameter = (1 - lr * self.weight_decay) * parameter
        return parameter - lr * mx.sign(c)


class Adafactor(Optimizer):
    """Adafactor: second moments factored into row and column averages for
    matrices; relative step sizes and update clipping as in the paper."""

    def __init__(
        self,
        learning_rate: Any = None,
        eps: tuple = (1e-30, 1e-3),
        clip_threshold: float = 1.0,
        decay_rate: float = -0.8,
        beta_1: float | None = None,
        weight_decay: float = 0.0,
        scale_parameter: bool = True,
        relative_step: bool = True,
        warmup_init: bool = False,
    ) -> None:
        super().__init__()
        if learning_rate is not None:
            self._maybe_schedule("learning_rate", learning_rate)
        self.eps, self.clip_threshold, self.decay_rate, self.beta_1 = eps, clip_threshold, decay_rate, beta_1
        self.weight_decay, self.scale_parameter, self.relative_step, self.warmup_init = weight_decay, scale_parameter, relative_step, warmup_init

    def init_single(self, parameter, state):
        if parameter.ndim >= 2:
            shape = parameter.shape
            state["exp_avg_sq_row"] = mx.zeros(shape[:-1], dtype=parameter.dtype)
            state["exp_avg_sq_col"] = mx.zeros(shape[:-2] + shape[-1:], dtype=parameter.dtype)
        else:
            state["exp_avg_sq"] = mx.zeros_like(parameter)
        if self.beta_1 is not None:
            state["exp_avg"] = mx.zeros_like(parameter)

    def _lr(self, step, parameter_rms):
        if self.relative_step:
            min_step = 1e-6 * step if self.warmup_init else 1e-2
            rel = mx.minimum(min_step, mx.rsqrt(step))
        else:
            rel = self.learning_rate
        scale = mx.maximum(self.eps[1], parameter_rms) if self.scale_parameter else 1.0
        return scale * rel

    @staticmethod
    def _approximate_exp_moving_avg(exp_avg_sq_row: mx.array, exp_avg_sq_col: mx.array) -> mx.array:
        """The inverse square root of the factored second moment: the outer
        product of the (mean-normalized) row and the column averages."""
        r = mx.rsqrt(exp_avg_sq_row / mx.mean(exp_avg_sq_row, axis=-1, keepdims=True))
        c = mx.rsqrt(exp_avg_sq_col)
        return mx.expand_dims(r, -1) * mx.expand_dims(c, -2)

    def apply_single(self, gradient, parameter, state):
        step = self.step.astype(mx.float32)
        factored = gradient.ndim >= 2
        rms = lambda x: mx.sqrt(mx.mean(mx.square(x)))
        lr = self._lr(step, rms(parameter)).astype(gradient.dtype) if self.relative_step or self.scale_parameter else self.learning_rate.astype(gradient.dtype)
        beta_2 = (1.0 - step**self.decay_rate).astype(gradient.dtype)
        update = mx.square(gradient) + self.eps[0]
        if factored:
            row = beta_2 * state["exp_avg_sq_row"] + (1 - beta_2) * mx.mean(update, axis=-1)
            col = beta_2 * state["exp_avg_sq_col"] + (1 - beta_2) * mx.mean(update, axis=-2)
            state["exp_avg_sq_row"], state["exp_avg_sq_col"] = row, col
            update = self._approximate_exp_moving_avg(row, col) * gradient
        else:
            v = beta_2 * state["exp_avg_sq"] + (1 - beta_2) * update
            state["exp_avg_sq"] = v
            update = mx.rsqrt(v) * gradient
        update = update / mx.maximum(1.0, rms(update) / self.clip_threshold)
        update = lr * update
        if self.beta_1 is not None:
            avg = self.beta_1 * state["exp_avg"] + (1 - self.beta_1) * update
            state["exp_avg"] = avg
            update = avg
        if self.weight_decay != 0:
            parameter = parameter + parameter * (-self.weight_decay * lr)
        return parameter - update


class Muon(Optimizer):
    """Muon (MomentUm Orthogonalized by Newton-Schulz): SGD momentum whose
    update, for matrices, is replaced by its nearest (semi-)orthogonal matrix,
    approximated with ``ns_steps`` Newton-Schulz iterations. Arrays of more
    than 2 dimensions are flattened to ``[shape[0], -1]``; 0-D and 1-D
    parameters take the plain momentum update (better optimized by AdamW)."""

    def __init__(self, learning_rate: Any, momentum: float = 0.95, weight_decay: float = 0.01, nesterov: bool = True, ns_steps: int = 5) -> None:
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.momentum, self.weight_decay, self.nesterov, self.ns_steps = momentum, weight_decay, nesterov, ns_steps

    def init_single(self, parameter, state):
        state["v"] = mx.zeros_like(parameter)

    def _orthogonalize(self, x: mx.array) -> mx.array:
        """The quintic Newton-Schulz iteration (coefficients of Keller Jordan's
        Muon) toward ``U V^T`` of ``x = U S V^T``, in bfloat16."""
        a, b, c = 3.4445, -4.7750, 2.0315
        transpose = x.shape[-2] > x.shape[-1]
        x = x.astype(mx.bfloat16)
        if transpose:
            x = mx.swapaxes(x, -1, -2)
        x = x / (mx.sqrt(mx.sum(mx.square(x.astype(mx.float32)), axis=(-2, -1), keepdims=True)) + 1e-7).astype(x.dtype)
        for _ in range(self.ns_steps):
            s = x @ mx.swapaxes(x, -1, -2)
            x = a * x + (b * s + c * (s @ s)) @ x
        return mx.swapaxes(x, -1, -2) if transpose else x

    def apply_single(self, gradient, parameter, state):
        lr = self.learning_rate.astype(gradient.dtype)
        if self.weight_decay != 0:
            parameter = parameter * (1 - lr * self.weight_decay)
        v = self.momentum * state["v"] + (1 - self.momentum) * gradient
        state["v"] = v
        update = gradient * (1 - self.momentum) + v * self.momentum if self.nesterov else v
        if update.ndim >= 2:
            shape = update.shape
            m = update.reshape(shape[0], -1) if update.ndim > 2 else update
            m = self._orthogonalize(m)
            m = m * max(1.0, m.shape[-2] / m.shape[-1]) ** 0.5
            update = m.reshape(shape).astype(gradient.dtype)
        return parameter - lr * update


def clip_grad_norm(grads: Any, max_norm: float) -> tuple:
    """``grads`` scaled so their global L2 norm is at most ``max_norm``, and that norm."""
    from weft.utils import tree_flatten

    if max_norm < 0:
        raise ValueError(f"max_norm must be non-negative, got {max_norm}")
    total = mx.sqrt(sum(mx.sum(mx.square(g)) for _, g in tree_flatten(grads)))
    scale = mx.minimum(max_norm / (total + 1e-6), 1.0)
    return tree_map(lambda g: g * scale, grads), total


class AdaDelta(Optimizer):
    """``v = rho v + (1 - rho) g^2``, ``d = sqrt(u + eps) / sqrt(v + eps) g``,
    ``u = rho u + (1 - rho) d^2``, ``p -= lr d``."""

    def __init__(self, learning_rate: Any, rho: float = 0.9, eps: float = 1e-6) -> None:
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        if rho < 0.0:
            raise ValueError(f"AdaDelta rho should be >=0, {rho} was provided instead")
        if eps <= 0.0:
            raise ValueError(f"AdaDelta epsilon should be >0, {eps} was provided instead")
        self.rho, self.eps = rho, eps

    def init_single(self, parameter, state):
        state["v"] = mx.zeros_like(parameter)
        state["u"] = mx.zeros_like(parameter)

    def apply_single(self, gradient, parameter, state):
        lr = self.learning_rate.astype(gradient.dtype)
        v = self.rho * state["v"] + (1 - self.rho) * mx.square(gradient)
        d = mx.sqrt(state["u"] + self.eps) / mx.sqrt(v + self.eps) * gradient
        state["u"] = self.rho * state["u"] + (1 - self.rho) * mx.square(d)
        state["v"] = v
        return parameter - lr * d


class MultiOptimizer(Optimizer):
    """Several optimizers, each for the parameters its filter accepts
    (``filter(path, gradient)``); the last optimizer takes the rest."""

    def __init__(self, optimizers: list, filters: list = []) -> None:
        super().__init__()
        if len(filters) != len(optimizers) - 1:
            raise ValueError(f"Given {len(filters)} filters but {len(optimizers) - 1} needed.")
        self.optimizers, self.filters = optimizers, list(filters) + [lambda *args: True]
        self._state = {}

    def _split(self, tree: dict) -> list:
        from weft.utils import tree_flatten, tree_unflatten

        parts = [[] for _ in self.optimizers]
        for path, g in tree_flatten(tree):
            for i, f in enumerate(self.filters):
                if f(path, g):
                    parts[i].append((path, g))
                    break
        return [tree_unflatten(p) if p else {} for p in parts]

    def init(self, parameters: dict) -> None:
        for o, p in zip(self.optimizers, self._split(parameters)):
            o.init(p)

    @property
    def state(self) -> dict:
        return {"states": [o.state for o in self.optimizers]}

    @state.setter
    def state(self, value: dict) -> None:
        for o, s in zip(self.optimizers, value["states"]):
            o.state = s

    @property
    def learning_rate(self):
        return self.optimizers[0].learning_rate

    def apply_gradients(self, gradients: dict, parameters: dict) -> dict:
        from weft.utils import tree_merge

        out: dict = {}
        for o, g in zip(self.optimizers, self._split(gradients)):
            if g:
                out = tree_merge(out, o.apply_gradients(g, parameters))
        return out
