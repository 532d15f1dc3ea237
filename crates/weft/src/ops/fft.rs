//! Discrete Fourier transforms (`weft.core.fft`), with MLX's (and NumPy's)
//! meaning of `n`/`s` and `axes`: each transformed axis is cut or zero-padded
//! at its end to its transform size, then one [`Primitive::Fft`] node runs
//! them all (`backend/cpu/fft.rs`). `norm` scales the result as NumPy's.
//!
//! ```
//! use weft::{ops, ops::fft, Array, Complex64};
//! let x = Array::from_slice(&[1.0f32, 0.0, 0.0, 0.0], &[4]).unwrap();
//! let y = fft::rfft(&x, None, -1, fft::Norm::Backward).unwrap();
//! assert_eq!(y.to_vec::<Complex64>().unwrap(), vec![Complex64::new(1.0, 0.0); 3]);
//! ```

use super::{astype, multiply, pad, slice, PadMode, SliceArg};
use crate::primitive::Primitive;
use crate::shape::normalize_axis;
use crate::{bail, Array, Dtype, Error, Result};

/// How a transform is scaled (NumPy's `norm`): `Backward` leaves the
/// forward transform unscaled and divides the inverse by `n`; `Ortho`
/// divides both by `sqrt(n)`; `Forward` divides the forward one by `n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Norm {
    #[default]
    Backward,
    Ortho,
    Forward,
}

impl std::str::FromStr for Norm {
    type Err = Error;
    fn from_str(s: &str) -> Result<Norm> {
        match s {
            "backward" => Ok(Norm::Backward),
            "ortho" => Ok(Norm::Ortho),
            "forward" => Ok(Norm::Forward),
            _ => Err(Error::InvalidArgument(format!(
                "fft: norm must be \"backward\", \"ortho\" or \"forward\", got {s:?}"
            ))),
        }
    }
}

/// The transform of `a` over `axes` with sizes `n` (one per axis): the one
/// function every public transform calls.
fn transform(a: &Array, n: &[usize], axes: &[isize], real: bool, inverse: bool, norm: Norm) -> Result<Array> {
    if a.ndim() == 0 {
        bail!(InvalidArgument, "fft: needs an array with at least one dimension");
    }
    if n.len() != axes.len() {
        bail!(InvalidArgument, "fft: {} sizes for {} axes", n.len(), axes.len());
    }
    if axes.is_empty() {
        return Ok(a.clone());
    }
    let axes: Vec<usize> = axes.iter().map(|&ax| normalize_axis(ax, a.ndim())).collect::<Result<_>>()?;
    let mut seen = axes.clone();
    seen.sort_unstable();
    if seen.windows(2).any(|w| w[0] == w[1]) {
        bail!(InvalidArgument, "fft: repeated axis in {axes:?}");
    }
    if let Some(bad) = n.iter().find(|&&k| k == 0) {
        bail!(InvalidArgument, "fft: invalid transform size {bad}");
    }
    if real && !inverse && a.dtype().is_complex() {
        bail!(Dtype, "rfft: expects a real input, got complex64");
    }
    let last = *axes.last().expect("axes is not empty");
    let mut in_shape = a.shape().to_vec();
    for (&ax, &k) in axes.iter().zip(n) {
        in_shape[ax] = k;
    }
    let n_last = *n.last().expect("n is not empty");
    if real && inverse {
        in_shape[last] = n_last / 2 + 1;
    }
    let mut x = astype(a, if real && !inverse { Dtype::F32 } else { Dtype::C64 })?;
    if in_shape.iter().zip(a.shape()).any(|(w, h)| w < h) {
        let args: Vec<SliceArg> = in_shape.iter().map(|&w| SliceArg::range(0, w as isize)).collect();
        x = slice(&x, &args)?;
    }
    if in_shape.iter().zip(x.shape()).any(|(w, h)| w > h) {
        let widths: Vec<(usize, usize)> = in_shape.iter().zip(x.shape()).map(|(&w, &h)| (0, w - h)).collect();
        x = pad(&x, &widths, PadMode::Constant(0.0))?;
    }
    let mut out_shape = in_shape;
    if real {
        out_shape[last] = if inverse { n_last } else { n_last / 2 + 1 };
    }
    let out_dtype = if real && inverse { Dtype::F32 } else { Dtype::C64 };
    let y = Array::from_op(Primitive::Fft { axes, inverse, real }, vec![x], out_shape, out_dtype)?;
    let size: f64 = n.iter().map(|&k| k as f64).product();
    let scale = match (norm, inverse) {
        (Norm::Backward, _) => return Ok(y),
        (Norm::Ortho, false) => 1.0 / size.sqrt(),
        (Norm::Ortho, true) => size.sqrt(),
        (Norm::Forward, false) => 1.0 / size,
        (Norm::Forward, true) => size,
    };
    multiply(&y, &Array::scalar(scale as f32))
}

/// The sizes of `a` along `axes` (for irfft the last is `2 * (m - 1)`).
fn sizes_of(a: &Array, axes: &[isize], real_inverse: bool) -> Result<Vec<usize>> {
    let mut n: Vec<usize> = axes.iter().map(|&ax| Ok(a.shape()[normalize_axis(ax, a.ndim())?])).collect::<Result<_>>()?;
    if real_inverse {
        if let Some(m) = n.last_mut() {
            *m = 2 * m.saturating_sub(1);
        }
    }
    Ok(n)
}

/// `s` and `axes` as `fftn` takes them: no axes means the last `s.len()`
/// axes, or every axis when `s` is absent too; no `s` means the sizes of
/// the array (irfft: `2 * (m - 1)` on the last axis).
fn resolve(a: &Array, s: Option<&[usize]>, axes: Option<&[isize]>, real_inverse: bool) -> Result<(Vec<usize>, Vec<isize>)> {
    let axes: Vec<isize> = match (axes, s) {
        (Some(ax), _) => ax.to_vec(),
        (None, Some(s)) => (0..s.len() as isize).map(|i| i - s.len() as isize).collect(),
        (None, None) => (0..a.ndim() as isize).collect(),
    };
    if a.ndim() == 0 {
        bail!(InvalidArgument, "fft: needs an array with at least one dimension");
    }
    let n = match s {
        Some(s) => s.to_vec(),
        None => sizes_of(a, &axes, real_inverse)?,
    };
    Ok((n, axes))
}

macro_rules! nd_transforms {
    ($($(#[$doc:meta])* $name:ident: real $real:literal, inverse $inverse:literal;)*) => {$(
        $(#[$doc])*
        pub fn $name(a: &Array, s: Option<&[usize]>, axes: Option<&[isize]>, norm: Norm) -> Result<Array> {
            let (n, axes) = resolve(a, s, axes, $real && $inverse)?;
            transform(a, &n, &axes, $real, $inverse, norm)
        }
    )*};
}

nd_transforms! {
    /// The n-dimensional transform (every axis by default; complex64 out).
    fftn: real false, inverse false;
    /// The n-dimensional inverse transform.
    ifftn: real false, inverse true;
    /// The n-dimensional transform of a real input: the last axis keeps
    /// `n / 2 + 1` frequencies.
    rfftn: real true, inverse false;
    /// The inverse of `rfftn`: float32 out, `2 * (m - 1)` along the last
    /// axis unless `s` says otherwise.
    irfftn: real true, inverse true;
}

macro_rules! two_d_transforms {
    ($($(#[$doc:meta])* $name:ident => $nd:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name(a: &Array, s: Option<&[usize]>, axes: Option<&[isize]>, norm: Norm) -> Result<Array> {
            $nd(a, s, Some(axes.unwrap_or(&[-2, -1])), norm)
        }
    )*};
}

two_d_transforms! {
    /// `fftn` over two axes (the last two by default).
    fft2 => fftn;
    /// `ifftn` over two axes (the last two by default).
    ifft2 => ifftn;
    /// `rfftn` over two axes (the last two by default).
    rfft2 => rfftn;
    /// `irfftn` over two axes (the last two by default).
    irfft2 => irfftn;
}

macro_rules! one_d_transforms {
    ($($(#[$doc:meta])* $name:ident: real $real:literal, inverse $inverse:literal;)*) => {$(
        $(#[$doc])*
        pub fn $name(a: &Array, n: Option<usize>, axis: isize, norm: Norm) -> Result<Array> {
            let n = match n {
                Some(n) => vec![n],
                None if a.ndim() == 0 => bail!(InvalidArgument, "fft: needs an array with at least one dimension"),
                None => sizes_of(a, &[axis], $real && $inverse)?,
            };
            transform(a, &n, &[axis], $real, $inverse, norm)
        }
    )*};
}

one_d_transforms! {
    /// The transform along `axis`, cut or zero-padded to `n`.
    fft: real false, inverse false;
    /// The inverse transform along `axis`.
    ifft: real false, inverse true;
    /// The transform of a real input along `axis` (`n / 2 + 1` frequencies).
    rfft: real true, inverse false;
    /// The inverse of `rfft` (float32, `n` defaults to `2 * (m - 1)`).
    irfft: real true, inverse true;
}

fn shift(a: &Array, axes: Option<&[isize]>, inverse: bool) -> Result<Array> {
    let axes: Vec<isize> = match axes {
        Some(ax) => ax.to_vec(),
        None => (0..a.ndim() as isize).collect(),
    };
    let mut shifts = Vec::with_capacity(axes.len());
    for &ax in &axes {
        let n = a.shape()[normalize_axis(ax, a.ndim())?] as isize;
        shifts.push(if inverse { -(n / 2) } else { n / 2 });
    }
    if axes.is_empty() {
        return Ok(a.clone());
    }
    super::roll(a, &shifts, Some(&axes))
}

/// The sample frequencies of an `n`-point FFT with sample spacing `d`
/// (NumPy's `fftfreq`): `[0, 1, ..., (n - 1) / 2, -(n / 2), ..., -1] / (n d)`,
/// computed in float64 and rounded once to float32.
pub fn fftfreq(n: usize, d: f64) -> Result<Array> {
    check_freq("fftfreq", n, d)?;
    let positive = (n - 1) / 2 + 1;
    let k = super::concatenate(
        &[super::arange(0.0, positive as f64, 1.0, Dtype::F64)?, super::arange(-((n / 2) as f64), 0.0, 1.0, Dtype::F64)?],
        0isize,
    )?;
    astype(&multiply(&k, &Array::scalar(1.0 / (n as f64 * d)))?, Dtype::F32)
}

/// The sample frequencies of an `n`-point real FFT (NumPy's `rfftfreq`):
/// `[0, 1, ..., n / 2] / (n d)`, float32.
pub fn rfftfreq(n: usize, d: f64) -> Result<Array> {
    check_freq("rfftfreq", n, d)?;
    let k = super::arange(0.0, (n / 2 + 1) as f64, 1.0, Dtype::F64)?;
    astype(&multiply(&k, &Array::scalar(1.0 / (n as f64 * d)))?, Dtype::F32)
}

fn check_freq(what: &str, n: usize, d: f64) -> Result<()> {
    if n == 0 {
        bail!(InvalidArgument, "{what}: n must be positive, got 0");
    }
    if d == 0.0 || !d.is_finite() {
        bail!(InvalidArgument, "{what}: the sample spacing d must be finite and nonzero, got {d}");
    }
    Ok(())
}

/// Moves the zero frequency to the middle of `axes` (every axis by default).
pub fn fftshift(a: &Array, axes: Option<&[isize]>) -> Result<Array> {
    shift(a, axes, false)
}

/// The inverse of `fftshift`.
pub fn ifftshift(a: &Array, axes: Option<&[isize]>) -> Result<Array> {
    shift(a, axes, true)
}
