"""Discrete Fourier transforms, as mlx.core.fft. Results are complex64
(float32 for the inverse real transforms); they compute on the CPU with
rustfft (a GPU stream runs them on the host). `norm` ("backward", "ortho",
"forward", as NumPy) is keyword-only and an addition to MLX's signatures."""

from typing import Literal, Optional, Sequence

from . import array
from . import Axis, ScalarOrArray, StreamOrDevice

Norm = Optional[Literal["backward", "ortho", "forward"]]

def fft(
    a: ScalarOrArray, n: Optional[int] = None, axis: int = -1, stream: StreamOrDevice = None, *, norm: Norm = None
) -> array: ...
def ifft(
    a: ScalarOrArray, n: Optional[int] = None, axis: int = -1, stream: StreamOrDevice = None, *, norm: Norm = None
) -> array: ...
def rfft(
    a: ScalarOrArray, n: Optional[int] = None, axis: int = -1, stream: StreamOrDevice = None, *, norm: Norm = None
) -> array: ...
def irfft(
    a: ScalarOrArray, n: Optional[int] = None, axis: int = -1, stream: StreamOrDevice = None, *, norm: Norm = None
) -> array: ...
def fft2(
    a: ScalarOrArray,
    s: Optional[Sequence[int]] = None,
    axes: Optional[Sequence[int]] = [-2, -1],
    stream: StreamOrDevice = None,
    *,
    norm: Norm = None,
) -> array: ...
def ifft2(
    a: ScalarOrArray,
    s: Optional[Sequence[int]] = None,
    axes: Optional[Sequence[int]] = [-2, -1],
    stream: StreamOrDevice = None,
    *,
    norm: Norm = None,
) -> array: ...
def rfft2(
    a: ScalarOrArray,
    s: Optional[Sequence[int]] = None,
    axes: Optional[Sequence[int]] = [-2, -1],
    stream: StreamOrDevice = None,
    *,
    norm: Norm = None,
) -> array: ...
def irfft2(
    a: ScalarOrArray,
    s: Optional[Sequence[int]] = None,
    axes: Optional[Sequence[int]] = [-2, -1],
    stream: StreamOrDevice = None,
    *,
    norm: Norm = None,
) -> array: ...
def fftn(
    a: ScalarOrArray,
    s: Optional[Sequence[int]] = None,
    axes: Optional[Sequence[int]] = None,
    stream: StreamOrDevice = None,
    *,
    norm: Norm = None,
) -> array: ...
def ifftn(
    a: ScalarOrArray,
    s: Optional[Sequence[int]] = None,
    axes: Optional[Sequence[int]] = None,
    stream: StreamOrDevice = None,
    *,
    norm: Norm = None,
) -> array: ...
def rfftn(
    a: ScalarOrArray,
    s: Optional[Sequence[int]] = None,
    axes: Optional[Sequence[int]] = None,
    stream: StreamOrDevice = None,
    *,
    norm: Norm = None,
) -> array: ...
def irfftn(
    a: ScalarOrArray,
    s: Optional[Sequence[int]] = None,
    axes: Optional[Sequence[int]] = None,
    stream: StreamOrDevice = None,
    *,
    norm: Norm = None,
) -> array: ...
def fftshift(a: ScalarOrArray, axes: Axis = None, stream: StreamOrDevice = None) -> array: ...
def ifftshift(a: ScalarOrArray, axes: Axis = None, stream: StreamOrDevice = None) -> array: ...
def fftfreq(n: int, d: float = 1.0, *, stream: StreamOrDevice = None) -> array: ...
def rfftfreq(n: int, d: float = 1.0, *, stream: StreamOrDevice = None) -> array: ...
