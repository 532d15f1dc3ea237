//! The `complex64` element: [`Complex64`], a pair of `f32` (real,
//! imaginary) laid out as `num_complex::Complex32`, the type `gemm` and
//! `rustfft` compute on.
//!
//! It is a weft type (not `Complex32` itself) so it can be an [`Element`]:
//! elements are `PartialOrd`, and `Complex64` orders lexicographically (real
//! part, then imaginary), as MLX's `complex64_t` does. weft's ops refuse the
//! ordering ops on complex inputs anyway (`primitive/complex.rs`).
//! `to_f64` is the real part and `from_f64` a real number, which is what
//! `astype` between complex and real means in MLX.
//!
//! ```
//! use weft::{ops, Array, Complex64};
//! let a = Array::from_slice(&[Complex64::new(1.0, 2.0)], &[1]).unwrap();
//! let b = ops::multiply(&a, &a).unwrap();
//! assert_eq!(b.to_vec::<Complex64>().unwrap(), vec![Complex64::new(-3.0, 4.0)]);
//! ```

use crate::dtype::{Dtype, Element};
use num_complex::Complex32;
use std::cmp::Ordering;

/// One `complex64` element.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(transparent)]
pub struct Complex64(pub Complex32);

impl Complex64 {
    pub const fn new(re: f32, im: f32) -> Complex64 {
        Complex64(Complex32::new(re, im))
    }

    pub fn re(self) -> f32 {
        self.0.re
    }

    pub fn im(self) -> f32 {
        self.0.im
    }

    /// `|z|`, without overflow for large parts.
    pub fn abs(self) -> f32 {
        self.0.norm()
    }

    /// Views elements as `Complex32` (for gemm and rustfft).
    pub fn as_complex32(s: &[Complex64]) -> &[Complex32] {
        // SAFETY: Complex64 is repr(transparent) over Complex32, so the
        // slices have one layout; the lifetime is carried over.
        unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<Complex32>(), s.len()) }
    }

    /// Views elements mutably as `Complex32` (for gemm and rustfft).
    pub fn as_complex32_mut(s: &mut [Complex64]) -> &mut [Complex32] {
        // SAFETY: as in `as_complex32`; the exclusive borrow is carried over.
        unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<Complex32>(), s.len()) }
    }
}

impl From<Complex32> for Complex64 {
    fn from(z: Complex32) -> Complex64 {
        Complex64(z)
    }
}

impl From<Complex64> for Complex32 {
    fn from(z: Complex64) -> Complex32 {
        z.0
    }
}

impl PartialOrd for Complex64 {
    /// Lexicographic (real part, then imaginary), as MLX's `complex64_t`.
    fn partial_cmp(&self, o: &Complex64) -> Option<Ordering> {
        match self.0.re.partial_cmp(&o.0.re)? {
            Ordering::Equal => self.0.im.partial_cmp(&o.0.im),
            ord => Some(ord),
        }
    }
}

impl Element for Complex64 {
    const DTYPE: Dtype = Dtype::C64;
    /// The real part (complex to real drops the imaginary part, as MLX).
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self.0.re as f64
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        Complex64::new(v as f32, 0.0)
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self.0.re as i64
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        Complex64::new(v as f32, 0.0)
    }
}
