//! `weft.core.fft`: mlx.core.fft's transforms (`fft`, `ifft`, `fft2`,
//! `ifft2`, `fftn`, `ifftn` and their real-input forms `rfft*`/`irfft*`)
//! with its arguments (`n`/`s`, `axis`/`axes`, `stream`), plus `fftshift`
//! and `ifftshift`. `norm` (keyword only, NumPy's "backward", "ortho",
//! "forward") is an addition to MLX's signatures. They compute on the CPU
//! (`weft/src/backend/cpu/fft.rs`); on a GPU stream they run on the host.

use crate::args::Axes;
use crate::array::PyArray;
use crate::convert::to_array;
use crate::device::{on_stream, StreamOrDevice};
use crate::errors::OpResult;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use weft::ops::fft::{self as wfft, Norm};

type Any<'py> = Bound<'py, PyAny>;
type Stream = Option<StreamOrDevice>;

fn norm_of(norm: Option<&str>) -> PyResult<Norm> {
    norm.map_or(Ok(Norm::Backward), |s| s.parse::<Norm>().py())
}

/// A transform size: positive (MLX: `ValueError` otherwise).
fn size(n: i64, what: &str) -> PyResult<usize> {
    usize::try_from(n)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| PyValueError::new_err(format!("[fft] invalid {what} {n}: transform sizes must be positive")))
}

fn sizes(s: Option<Vec<i64>>) -> PyResult<Option<Vec<usize>>> {
    s.map(|s| s.into_iter().map(|n| size(n, "size in s")).collect()).transpose()
}

macro_rules! one_d {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {$(
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (a, n = None, axis = -1, stream = None, *, norm = None))]
        fn $name(a: &Any<'_>, n: Option<i64>, axis: isize, stream: Stream, norm: Option<&str>) -> PyResult<PyArray> {
            let n = n.map(|n| size(n, "n")).transpose()?;
            let norm = norm_of(norm)?;
            on_stream(&stream, || wfft::$name(&to_array(a, None)?, n, axis, norm).py().map(PyArray::from))
        }
    )*};
}

one_d! {
    /// The discrete Fourier transform along `axis`, of size `n` (the axis is
    /// cut or zero-padded to `n`).
    fft,
    /// The inverse of `fft`.
    ifft,
    /// The transform of a real input along `axis`: `n // 2 + 1` frequencies.
    rfft,
    /// The inverse of `rfft`: a real output of `n` (default `2 * (m - 1)`).
    irfft,
}

macro_rules! two_d {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {$(
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (a, s = None, axes = Some(vec![-2, -1]), stream = None, *, norm = None))]
        fn $name(a: &Any<'_>, s: Option<Vec<i64>>, axes: Option<Vec<isize>>, stream: Stream, norm: Option<&str>) -> PyResult<PyArray> {
            let s = sizes(s)?;
            let norm = norm_of(norm)?;
            on_stream(&stream, || {
                let a = to_array(a, None)?;
                // `axes=None` is every axis, as in `fftn`.
                let axes: Vec<isize> = axes.unwrap_or_else(|| (0..a.ndim() as isize).collect());
                wfft::$name(&a, s.as_deref(), Some(&axes), norm).py().map(PyArray::from)
            })
        }
    )*};
}

two_d! {
    /// `fftn` over two axes (the last two by default).
    fft2,
    /// `ifftn` over two axes (the last two by default).
    ifft2,
    /// `rfftn` over two axes (the last two by default).
    rfft2,
    /// `irfftn` over two axes (the last two by default).
    irfft2,
}

macro_rules! n_d {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {$(
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (a, s = None, axes = None, stream = None, *, norm = None))]
        fn $name(a: &Any<'_>, s: Option<Vec<i64>>, axes: Option<Vec<isize>>, stream: Stream, norm: Option<&str>) -> PyResult<PyArray> {
            let s = sizes(s)?;
            let norm = norm_of(norm)?;
            on_stream(&stream, || wfft::$name(&to_array(a, None)?, s.as_deref(), axes.as_deref(), norm).py().map(PyArray::from))
        }
    )*};
}

n_d! {
    /// The transform over `axes` (every axis by default; the last
    /// `len(s)` when only `s` is given), each of size `s[i]`.
    fftn,
    /// The inverse of `fftn`.
    ifftn,
    /// `fftn` of a real input: the last of `axes` keeps `s[-1] // 2 + 1` frequencies.
    rfftn,
    /// The inverse of `rfftn`: a real output, `2 * (m - 1)` along the last axis unless `s` says otherwise.
    irfftn,
}

fn freq_len(n: i64, what: &str) -> PyResult<usize> {
    usize::try_from(n).ok().filter(|&n| n > 0).ok_or_else(|| pyo3::exceptions::PyValueError::new_err(format!("{what}: n must be positive, got {n}")))
}

/// The sample frequencies of an `n`-point FFT with sample spacing `d` (float32).
#[pyfunction]
#[pyo3(signature = (n, d = 1.0, *, stream = None))]
fn fftfreq(n: i64, d: f64, stream: Stream) -> PyResult<PyArray> {
    let n = freq_len(n, "fftfreq")?;
    on_stream(&stream, || wfft::fftfreq(n, d).py().map(PyArray::from))
}

/// The sample frequencies of an `n`-point real FFT (float32).
#[pyfunction]
#[pyo3(signature = (n, d = 1.0, *, stream = None))]
fn rfftfreq(n: i64, d: f64, stream: Stream) -> PyResult<PyArray> {
    let n = freq_len(n, "rfftfreq")?;
    on_stream(&stream, || wfft::rfftfreq(n, d).py().map(PyArray::from))
}

/// Moves the zero frequency to the middle of `axes` (every axis by default).
#[pyfunction]
#[pyo3(signature = (a, axes = None, stream = None))]
fn fftshift(a: &Any<'_>, axes: Option<Axes>, stream: Stream) -> PyResult<PyArray> {
    let axes = axes.map(|a| a.to_vec());
    on_stream(&stream, || wfft::fftshift(&to_array(a, None)?, axes.as_deref()).py().map(PyArray::from))
}

/// The inverse of `fftshift`.
#[pyfunction]
#[pyo3(signature = (a, axes = None, stream = None))]
fn ifftshift(a: &Any<'_>, axes: Option<Axes>, stream: Stream) -> PyResult<PyArray> {
    let axes = axes.map(|a| a.to_vec());
    on_stream(&stream, || wfft::ifftshift(&to_array(a, None)?, axes.as_deref()).py().map(PyArray::from))
}

/// Registers `weft.core.fft` (importable as `weft.core.fft` too).
pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(parent.py(), "fft")?;
    m.add("__doc__", "Discrete Fourier transforms, as mlx.core.fft (complex64 results; computed on the CPU with rustfft).")?;
    macro_rules! add {
        ($($f:ident),* $(,)?) => {$( m.add_function(wrap_pyfunction!($f, &m)?)?; )*};
    }
    add!(fft, ifft, fft2, ifft2, fftn, ifftn, rfft, irfft, rfft2, irfft2, rfftn, irfftn, fftshift, ifftshift, fftfreq, rfftfreq);
    crate::add_submodule(parent, &m, "fft")
}
