"""``weft.optimizers``: optimizers and learning-rate schedules with
``mlx.optimizers``'s API."""

from weft.optimizers.optimizers import (
    SGD, AdaDelta, Adafactor, Adagrad, Adam, Adamax, AdamW, Lion, MultiOptimizer, Muon, Optimizer, RMSprop, clip_grad_norm,
)
from weft.optimizers.schedulers import cosine_decay, exponential_decay, join_schedules, linear_schedule, step_decay
