"""Learning-rate schedules: functions of the step count (``mlx.optimizers``)."""

from __future__ import annotations

import math
from typing import Callable

import weft.core as mx


def _arr(v):
    return v if isinstance(v, mx.array) else mx.array(v)


def exponential_decay(init: float, decay_rate: float) -> Callable:
    """``init * decay_rate**step`` (a float for an integer step)."""
    return lambda step: init * decay_rate**step


def step_decay(init: float, decay_rate: float, step_size: int) -> Callable:
    """``init * decay_rate**(step // step_size)`` (a float for an integer step)."""
    return lambda step: init * decay_rate ** (step // step_size)


def cosine_decay(init: float, decay_steps: int, end: float = 0.0) -> Callable:
    def schedule(step):
        s = mx.minimum(step, decay_steps) if isinstance(step, mx.array) else min(step, decay_steps)
        c = 0.5 * (1.0 + mx.cos(math.pi * s / decay_steps)) if isinstance(s, mx.array) else 0.5 * (1.0 + math.cos(math.pi * s / decay_steps))
        return _arr(end + c * (init - end))

    return schedule


def linear_schedule(init: float, end: float, steps: int) -> Callable:
    if steps < 1:
        raise ValueError(f"steps must be greater than 0, but got {steps}.")

    def schedule(step):
        s = mx.minimum(step, steps) if isinstance(step, mx.array) else min(step, steps)
        return _arr(s * ((end - init) / steps) + init)

    return schedule


def join_schedules(schedules: list, boundaries: list) -> Callable:
    if len(schedules) == 0:
        raise ValueError("Must provide at least 1 schedule to join.")
    if len(schedules) != len(boundaries) + 1:
        raise ValueError(f"Received {len(boundaries)} boundaries but expected {len(schedules) - 1}.")

    def schedule(step):
        s = int(step.item()) if isinstance(step, mx.array) else int(step)
        out = schedules[0](s)
        for boundary, sched in zip(boundaries, schedules[1:]):
            if s >= boundary:
                out = sched(s - boundary)
        return _arr(out)

    return schedule
