"""Fused transformer ops, as mlx.core.fast."""

from typing import Any, Literal, Optional, Sequence, Union

from . import Dtype, Stream, Device, array
from . import ScalarOrArray, ShapeLike, StreamOrDevice

def rms_norm(x: ScalarOrArray, /, weight: Optional[ScalarOrArray], eps: float, *, stream: StreamOrDevice = None) -> array: ...
def layer_norm(
    x: ScalarOrArray,
    /,
    weight: Optional[ScalarOrArray],
    bias: Optional[ScalarOrArray],
    eps: float,
    *,
    stream: StreamOrDevice = None,
) -> array: ...
def rope(
    a: ScalarOrArray,
    /,
    dims: int,
    *,
    traditional: bool,
    base: Optional[float],
    scale: float,
    offset: Union[int, array],
    freqs: None = None,
    stream: StreamOrDevice = None,
) -> array: ...
def scaled_dot_product_attention(
    q: ScalarOrArray,
    k: ScalarOrArray,
    v: ScalarOrArray,
    *,
    scale: float,
    mask: Union[None, Literal["causal"], ScalarOrArray] = None,
    sinks: None = None,
    stream: StreamOrDevice = None,
) -> array: ...
