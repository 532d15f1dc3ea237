"""Loss functions (``mlx.nn.losses``), with MLX's default reductions."""

from __future__ import annotations

import math

import weft.core as mx


def _reduce(loss: mx.array, reduction: str = "none") -> mx.array:
    if reduction == "mean":
        return mx.mean(loss)
    if reduction == "sum":
        return mx.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError("Invalid reduction. Must be 'none', 'mean', or 'sum'.")


def cross_entropy(logits, targets, weights=None, axis: int = -1, label_smoothing: float = 0.0, reduction: str = "none"):
    """Cross entropy of ``logits`` against class indices (one fewer axis)
    or probabilities (the same shape)."""
    if not 0 <= label_smoothing < 1:
        raise ValueError(f"Label smoothing must in [0, 1), got {label_smoothing}.")
    # Only the gaps between logits matter: shifting by the max keeps large
    # shared offsets from cancelling catastrophically.
    logits = logits - mx.stop_gradient(mx.max(logits, axis=axis, keepdims=True))
    probs = targets.ndim == logits.ndim
    if probs:
        score = mx.sum(logits * targets, axis=axis)
    else:
        score = mx.squeeze(mx.take_along_axis(logits, mx.expand_dims(targets, axis), axis=axis), axis)
    lse = mx.logsumexp(logits, axis=axis)
    if label_smoothing > 0:
        score = score * (1 - label_smoothing) + mx.mean(logits, axis=axis) * label_smoothing
    loss = lse - score
    if weights is not None:
        loss = loss * weights
    return _reduce(loss, reduction)


def binary_cross_entropy(inputs, targets, weights=None, with_logits: bool = True, reduction: str = "mean"):
    if with_logits:
        loss = mx.logaddexp(0.0, inputs) - inputs * targets
    else:
        eps = 1e-12
        loss = -(targets * mx.log(mx.maximum(inputs, eps)) + (1 - targets) * mx.log(mx.maximum(1 - inputs, eps)))
    if weights is not None:
        loss = loss * weights
    return _reduce(loss, reduction)


def mse_loss(predictions, targets, reduction: str = "mean"):
    return _reduce(mx.square(predictions - targets), reduction)


def l1_loss(predictions, targets, reduction: str = "mean"):
    return _reduce(mx.abs(predictions - targets), reduction)


def nll_loss(inputs, targets, axis: int = -1, reduction: str = "none"):
    loss = -mx.squeeze(mx.take_along_axis(inputs, mx.expand_dims(targets, axis), axis=axis), axis)
    return _reduce(loss, reduction)


def smooth_l1_loss(predictions, targets, beta: float = 1.0, reduction: str = "mean"):
    diff = mx.abs(predictions - targets)
    loss = mx.where(diff < beta, 0.5 * mx.square(diff) / beta, diff - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(inputs, targets, delta: float = 1.0, reduction: str = "none"):
    err = mx.abs(inputs - targets)
    loss = mx.where(err <= delta, 0.5 * mx.square(err), delta * (err - 0.5 * delta))
    return _reduce(loss, reduction)


def kl_div_loss(inputs, targets, axis: int = -1, reduction: str = "none"):
    loss = mx.sum(mx.exp(targets) * (targets - inputs), axis=axis)
    return _reduce(loss, reduction)


def log_cosh_loss(inputs, targets, reduction: str = "none"):
    err = inputs - targets
    loss = mx.logaddexp(err, -err) - math.log(2)
    return _reduce(loss, reduction)


def hinge_loss(inputs, targets, reduction: str = "none"):
    return _reduce(mx.maximum(1 - inputs * targets, 0), reduction)


def cosine_similarity_loss(x1, x2, axis: int = 1, eps: float = 1e-8, reduction: str = "none"):
    n1 = mx.sqrt(mx.sum(mx.square(x1), axis=axis))
    n2 = mx.sqrt(mx.sum(mx.square(x2), axis=axis))
    loss = mx.sum(x1 * x2, axis=axis) / mx.maximum(n1 * n2, eps)
    return _reduce(loss, reduction)


def gaussian_nll_loss(inputs, targets, vars, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
    vars = mx.maximum(vars, eps)
    loss = 0.5 * (mx.log(vars) + mx.square(targets - inputs) / vars)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def margin_ranking_loss(inputs1, inputs2, targets, margin: float = 0.0, reduction: str = "none"):
    return _reduce(mx.maximum(-targets * (inputs1 - inputs2) + margin, 0), reduction)


def triplet_loss(anchors, positives, negatives, axis: int = -1, p: int = 2, margin: float = 1.0, eps: float = 1e-6, reduction: str = "none"):
    """``max(|A - P|_p - |A - N|_p + margin, 0)``, the p-norms taken along
    ``axis`` with ``eps`` added to the sum of powers."""
    def dist(a, b):
        return mx.power(mx.sum(mx.power(mx.abs(a - b), p), axis=axis) + eps, 1.0 / p)

    return _reduce(mx.maximum(dist(anchors, positives) - dist(anchors, negatives) + margin, 0), reduction)
