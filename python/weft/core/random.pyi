"""Random numbers with explicit keys (`uint32[2]` arrays), as mlx.core.random."""

from typing import Any, Literal, Optional, Sequence, Union

from . import Dtype, Stream, Device, array
from . import ScalarOrArray, ShapeLike, StreamOrDevice

class RandomState(Sequence[array]):
    """The calling thread's default key as a one-item sequence (`mx.random.state`)."""
    def __len__(self) -> int: ...
    def __getitem__(self, i: int) -> array: ...  # type: ignore[override]
    def __setitem__(self, i: int, key: array) -> None: ...

state: RandomState

def seed(seed: int) -> None: ...
def key(seed: int) -> array: ...
def split(key: array, num: int = 2, *, stream: StreamOrDevice = None) -> array: ...
def bits(shape: ShapeLike = [], width: int = 4, key: Optional[array] = None, *, stream: StreamOrDevice = None) -> array: ...
def uniform(
    low: ScalarOrArray = 0,
    high: ScalarOrArray = 1,
    shape: ShapeLike = [],
    dtype: Optional[Dtype] = ...,
    key: Optional[array] = None,
    *,
    stream: StreamOrDevice = None,
) -> array: ...
def normal(
    shape: ShapeLike = [],
    dtype: Optional[Dtype] = ...,
    loc: Optional[ScalarOrArray] = None,
    scale: Optional[ScalarOrArray] = None,
    key: Optional[array] = None,
    *,
    stream: StreamOrDevice = None,
) -> array: ...
def randint(
    low: int, high: int, shape: ShapeLike = [], dtype: Dtype = ..., key: Optional[array] = None, *, stream: StreamOrDevice = None
) -> array: ...
def bernoulli(
    p: ScalarOrArray = 0.5, shape: Optional[ShapeLike] = None, key: Optional[array] = None, *, stream: StreamOrDevice = None
) -> array: ...
def categorical(
    logits: ScalarOrArray,
    axis: int = -1,
    shape: Optional[ShapeLike] = None,
    num_samples: Optional[int] = None,
    key: Optional[array] = None,
    *,
    stream: StreamOrDevice = None,
) -> array: ...
def gumbel(shape: ShapeLike = [], dtype: Optional[Dtype] = ..., key: Optional[array] = None, stream: StreamOrDevice = None) -> array: ...
def laplace(
    shape: ShapeLike = [], dtype: Optional[Dtype] = ..., loc: float = 0.0, scale: float = 1.0, key: Optional[array] = None, stream: StreamOrDevice = None
) -> array: ...
def truncated_normal(
    lower: ScalarOrArray,
    upper: ScalarOrArray,
    shape: Optional[ShapeLike] = None,
    dtype: Optional[Dtype] = ...,
    key: Optional[array] = None,
    stream: StreamOrDevice = None,
) -> array: ...
def permutation(x: Union[int, array], axis: int = 0, key: Optional[array] = None, stream: StreamOrDevice = None) -> array: ...
