//! Affine quantization (MLX's `mode="affine"`): `quantize`, `dequantize`,
//! `quantized_matmul`, and its matrix-level gather `gather_qmm`.
//!
//! Every `group_size` consecutive elements of a row share a scale `s` and a
//! bias `b`; an element is stored as `q` in `0..2^bits` and means
//! `s * q + b`. A row's `q`s are one little-endian bit stream (element `j`
//! at bits `j * bits ..`) in `uint32` words, so a row of `C` elements packs
//! into `C * bits / 32` words, as in MLX. `quantized_matmul` multiplies by
//! the packed matrix directly: its kernels decode a few weights at a time
//! and never hold the float matrix.

use super::structured_mm::pick_matrices;
use super::{astype, broadcast_to, expand_dims, reshape, swapaxes};
use crate::dtype::Dtype;
use crate::primitive::Primitive;
use crate::shape::broadcast_shapes;
use crate::{bail, Array, Result};

/// The group sizes [`quantize`] supports.
pub const GROUP_SIZES: [usize; 3] = [32, 64, 128];
/// The bit widths [`quantize`] supports.
pub const BITS: [u32; 7] = [1, 2, 3, 4, 5, 6, 8];

/// Checks `group_size` and `bits` for `op`.
pub(crate) fn check_params(op: &str, group_size: usize, bits: u32) -> Result<()> {
    if !GROUP_SIZES.contains(&group_size) {
        bail!(InvalidArgument, "[{op}] The requested group size {group_size} is not supported. The supported group sizes are 32, 64, and 128.");
    }
    if !BITS.contains(&bits) {
        bail!(InvalidArgument, "[{op}] The requested number of bits {bits} is not supported. The supported bits are 1, 2, 3, 4, 5, 6 and 8.");
    }
    Ok(())
}

fn dims(s: &[usize]) -> Vec<isize> {
    s.iter().map(|&d| d as isize).collect()
}

fn scalar32(v: f32) -> Array {
    Array::scalar(v)
}

/// Quantizes `w` (float, at least 2-D, last axis a multiple of
/// `group_size`) to `bits` bits per element: `(w_q, scales, biases)` with
/// `w_q` the packed `uint32` rows (`[..., C * bits / 32]`) and `scales`,
/// `biases` of `w`'s dtype (`[..., C / group_size]`).
///
/// Each group's scale and bias are MLX's: the group's extreme of larger
/// magnitude is represented exactly (it becomes `s * q0` for an integer
/// `q0`, or the bias), so zeros stay zeros.
///
/// ```
/// use weft::{ops, Array};
/// let w = Array::from_vec((0..64).map(|i| i as f32 / 8.0).collect(), &[2, 32]).unwrap();
/// let (wq, s, b) = ops::quantize(&w, 32, 4).unwrap();
/// assert_eq!((wq.shape(), s.shape()), (&[2, 4][..], &[2, 1][..]));
/// let back = ops::dequantize(&wq, &s, &b, 32, 4, None).unwrap().to_vec::<f32>().unwrap();
/// assert!(back.iter().zip(w.to_vec::<f32>().unwrap()).all(|(a, b)| (a - b).abs() <= 0.3));
/// ```
pub fn quantize(w: &Array, group_size: usize, bits: u32) -> Result<(Array, Array, Array)> {
    check_params("quantize", group_size, bits)?;
    if !w.dtype().is_float() {
        bail!(Dtype, "[quantize] Only real floating types can be quantized but w has type {}.", w.dtype());
    }
    if w.ndim() < 2 {
        bail!(Shape, "[quantize] The matrix to be quantized must have at least 2 dimension but it has only {}.", w.ndim());
    }
    let c = w.shape()[w.ndim() - 1];
    if c % group_size != 0 {
        bail!(
            Shape,
            "[quantize] The last dimension of the matrix needs to be divisible by the quantization group size {group_size}. However the provided matrix has shape {:?}",
            w.shape()
        );
    }
    let lead = &w.shape()[..w.ndim() - 1];
    let groups = c / group_size;
    let mut gshape = dims(lead);
    gshape.extend([groups as isize, group_size as isize]);
    // Scales and biases in float32, as MLX computes them.
    let wg = astype(&reshape(w, &gshape)?, Dtype::F32)?;
    let w_max = super::max(&wg, -1isize, false)?;
    let w_min = super::min(&wg, -1isize, false)?;
    let n_bins = scalar32(((1u32 << bits) - 1) as f32);
    let zero = scalar32(0.0);
    let mask = super::greater(&super::abs(&w_min)?, &super::abs(&w_max)?)?;
    let scale = super::maximum(&super::divide(&super::subtract(&w_max, &w_min)?, &n_bins)?, &scalar32(1e-7))?;
    let scale = super::where_(&mask, &scale, &super::negative(&scale)?)?;
    let edge = super::where_(&mask, &w_min, &w_max)?;
    let q0 = super::rint(&super::divide(&edge, &scale)?)?;
    let exact = super::not_equal(&q0, &zero)?;
    let scale = super::where_(&exact, &super::divide(&edge, &q0)?, &scale)?;
    let bias = super::where_(&exact, &edge, &zero)?;
    let words = c * bits as usize / 32;
    let shape: Vec<usize> = lead.iter().copied().chain([words]).collect();
    let prim = Primitive::Quantize { group_size, bits };
    let wq = Array::from_op(prim, vec![w.clone(), scale.clone(), bias.clone()], shape, Dtype::U32)?;
    Ok((wq, astype(&scale, w.dtype())?, astype(&bias, w.dtype())?))
}

/// The logical width (elements per row) of packed rows of `words` words.
fn unpacked_width(op: &str, words: usize, bits: u32) -> Result<usize> {
    if (words * 32) % bits as usize != 0 {
        bail!(Shape, "[{op}] packed rows of {words} words do not hold a whole number of {bits}-bit elements");
    }
    Ok(words * 32 / bits as usize)
}

/// Checks `w`, `scales`, `biases` of a quantized matrix; returns the
/// logical row width.
fn check_quantized(op: &str, w: &Array, scales: &Array, biases: &Array, group_size: usize, bits: u32) -> Result<usize> {
    check_params(op, group_size, bits)?;
    if w.dtype() != Dtype::U32 {
        bail!(Dtype, "[{op}] The weight matrix should be uint32 but received {}", w.dtype());
    }
    if !scales.dtype().is_float() || !biases.dtype().is_float() {
        bail!(Dtype, "[{op}] scales and biases must be floating point, got {} and {}", scales.dtype(), biases.dtype());
    }
    if scales.shape() != biases.shape() {
        bail!(
            Shape,
            "[{op}] Scales and biases should have the same shape. Received scales with shape {:?} and biases with {:?}",
            scales.shape(),
            biases.shape()
        );
    }
    if w.ndim() < 2 || w.ndim() != scales.ndim() || w.shape()[..w.ndim() - 1] != scales.shape()[..scales.ndim() - 1] {
        bail!(
            Shape,
            "[{op}] Weight and scales should have the same batch shape. Received weight with shape {:?}, scales with {:?}.",
            w.shape(),
            scales.shape()
        );
    }
    let width = unpacked_width(op, w.shape()[w.ndim() - 1], bits)?;
    if width != scales.shape()[scales.ndim() - 1] * group_size {
        bail!(
            Shape,
            "[{op}] The shapes of the weight and scales are incompatible based on bits and group_size. w.shape() == {:?} and scales.shape() == {:?} with group_size={group_size} and bits={bits}",
            w.shape(),
            scales.shape()
        );
    }
    Ok(width)
}

/// `scales * q + biases` for the packed `w` (see [`quantize`]), in `dtype`
/// (default: the scales' dtype).
pub fn dequantize(w: &Array, scales: &Array, biases: &Array, group_size: usize, bits: u32, dtype: Option<Dtype>) -> Result<Array> {
    let width = check_quantized("dequantize", w, scales, biases, group_size, bits)?;
    let dtype = dtype.unwrap_or(scales.dtype());
    if !dtype.is_float() {
        bail!(Dtype, "[dequantize] Only real floating types are supported but output dtype == {dtype}.");
    }
    let mut shape = w.shape().to_vec();
    *shape.last_mut().unwrap_or(&mut 0) = width;
    let prim = Primitive::Dequantize { group_size, bits };
    Array::from_op(prim, vec![w.clone(), scales.clone(), biases.clone()], shape, dtype)
}

/// `x @ dequantize(w).T` (`transpose`) or `x @ dequantize(w)`, reading the
/// packed `w` directly. `x` is `[..., M, K]` (or `[K]`); the batch axes of
/// `x` and of `w` (`[..., N, K']` packed) broadcast. The result has the
/// type of `x`, `scales` and `biases` promoted.
#[allow(clippy::too_many_arguments)]
pub fn quantized_matmul(
    x: &Array,
    w: &Array,
    scales: &Array,
    biases: &Array,
    transpose: bool,
    group_size: usize,
    bits: u32,
) -> Result<Array> {
    qmm(x, w, scales, biases, transpose, group_size, bits, false)
}

/// [`quantized_matmul`] with int8 activations, an approximation for speed
/// (llama.cpp's scheme for its block formats): each row of `x` is first
/// rounded per block of 32 elements (the last block of a row may be
/// shorter) to `d * q` with `d = max |x| / 127` and `q = round(x / d)` in
/// `-127..=127`, and the result is that rounded `x` times the dequantized
/// `w`. Each element of `x` moves by at most `d / 2`, so the result differs
/// from [`quantized_matmul`]'s by at most `sum over blocks of d / 2 * sum
/// |w|` over the block (plus float rounding).
///
/// On the CPU, up to 32 rows of `x` against a transposed 4- or 8-bit `w`
/// (a linear layer's decode step) run as integer dot products of `q` with
/// the codes (AVX-512 VNNI, AVX2 or portable kernels, chosen at run time;
/// all three give the same bits); every other case rounds `x` and
/// multiplies in float. The CUDA backend has no kernel for it: the host
/// computes it.
///
/// ```
/// use weft::{ops, Array};
/// let w = Array::from_vec((0..128).map(|i| (i % 16) as f32).collect(), &[2, 64]).unwrap();
/// let (wq, s, b) = ops::quantize(&w, 64, 4).unwrap();
/// let x = Array::from_vec((0..64).map(|i| (i as f32 / 10.0).sin()).collect(), &[1, 64]).unwrap();
/// let exact = ops::quantized_matmul(&x, &wq, &s, &b, true, 64, 4).unwrap().to_vec::<f32>().unwrap();
/// let int8 = ops::quantized_matmul_int8(&x, &wq, &s, &b, true, 64, 4).unwrap().to_vec::<f32>().unwrap();
/// // d <= 1 / 127 per block, |w| <= 15: within 64 * 15 / 254.
/// assert!(exact.iter().zip(&int8).all(|(a, b)| (a - b).abs() <= 64.0 * 15.0 / 254.0));
/// ```
#[allow(clippy::too_many_arguments)]
pub fn quantized_matmul_int8(
    x: &Array,
    w: &Array,
    scales: &Array,
    biases: &Array,
    transpose: bool,
    group_size: usize,
    bits: u32,
) -> Result<Array> {
    qmm(x, w, scales, biases, transpose, group_size, bits, true)
}

#[allow(clippy::too_many_arguments)]
fn qmm(
    x: &Array,
    w: &Array,
    scales: &Array,
    biases: &Array,
    transpose: bool,
    group_size: usize,
    bits: u32,
    int8_activations: bool,
) -> Result<Array> {
    let width = check_quantized("quantized_matmul", w, scales, biases, group_size, bits)?;
    let dtype = Dtype::promote(Dtype::promote(x.dtype(), scales.dtype()), biases.dtype());
    if !x.dtype().is_float() || !dtype.is_float() {
        bail!(Dtype, "[quantized_matmul] Only real floating types are supported, got x of type {}", x.dtype());
    }
    if x.ndim() == 0 {
        bail!(Shape, "[quantized_matmul] x must have at least one dimension");
    }
    let rows = w.shape()[w.ndim() - 2];
    let (k, n) = if transpose { (width, rows) } else { (rows, width) };
    let x2 = if x.ndim() == 1 { expand_dims(x, 0)? } else { x.clone() };
    if x2.shape()[x2.ndim() - 1] != k {
        bail!(
            Shape,
            "[quantized_matmul] Last dimension of first input with shape (..., {}) does not match the expanded quantized matrix ({k}, {n}) computed from shape {:?} with group_size={group_size}, bits={bits} and transpose={transpose}",
            x2.shape()[x2.ndim() - 1],
            w.shape()
        );
    }
    let m = x2.shape()[x2.ndim() - 2];
    let batch = broadcast_shapes(&x2.shape()[..x2.ndim() - 2], &w.shape()[..w.ndim() - 2])?;
    let with = |tail: &[usize]| -> Vec<usize> { batch.iter().chain(tail).copied().collect() };
    let tail = |a: &Array| a.shape()[a.ndim() - 2..].to_vec();
    let inputs = vec![
        broadcast_to(&x2, &with(&[m, k]))?,
        broadcast_to(w, &with(&tail(w)))?,
        broadcast_to(scales, &with(&tail(scales)))?,
        broadcast_to(biases, &with(&tail(biases)))?,
    ];
    let prim = Primitive::QuantizedMatmul { group_size, bits, transpose, int8_activations };
    let out = Array::from_op(prim, inputs, with(&[m, n]), dtype)?;
    if x.ndim() == 1 {
        let mut shape = dims(&batch);
        shape.push(n as isize);
        reshape(&out, &shape)
    } else {
        Ok(out)
    }
}

/// [`quantized_matmul`] with `x` and the quantized `w` (with its scales and
/// biases) gathered as in [`gather_mm`](super::gather_mm).
#[allow(clippy::too_many_arguments)]
pub fn gather_qmm(
    x: &Array,
    w: &Array,
    scales: &Array,
    biases: &Array,
    lhs_indices: Option<&Array>,
    rhs_indices: Option<&Array>,
    transpose: bool,
    group_size: usize,
    bits: u32,
) -> Result<Array> {
    check_quantized("gather_qmm", w, scales, biases, group_size, bits)?;
    if !x.dtype().is_float() {
        bail!(Dtype, "[gather_qmm] Only real floating types are supported, got x of type {}", x.dtype());
    }
    let pick = |a: &Array, idx: Option<&Array>| pick_matrices("gather_qmm", a, idx);
    let (gx, gw) = (pick(x, lhs_indices)?, pick(w, rhs_indices)?);
    let (gs, gbias) = (pick(scales, rhs_indices)?, pick(biases, rhs_indices)?);
    quantized_matmul(&gx, &gw, &gs, &gbias, transpose, group_size, bits)
}

/// `group_size`-element groups of the last axis of `a`, summed: `[..., C]`
/// to `[..., C / group_size]` (the derivative's reduction to scales).
pub(crate) fn group_sum(a: &Array, group_size: usize) -> Result<Array> {
    let c = a.shape()[a.ndim() - 1];
    let mut shape = dims(&a.shape()[..a.ndim() - 1]);
    shape.extend([(c / group_size) as isize, group_size as isize]);
    super::sum(&reshape(a, &shape)?, -1isize, false)
}

/// The derivatives of `quantized_matmul` with respect to its scales and
/// biases, from the output's cotangent `g` (`[..., M, N]`): `(dscales,
/// dbiases)`, each shaped as the (batch-broadcast) scales.
pub(crate) fn quantized_matmul_scale_grads(
    x: &Array,
    w: &Array,
    scales: &Array,
    g: &Array,
    transpose: bool,
    group_size: usize,
    bits: u32,
) -> Result<(Array, Array)> {
    let dtype = scales.dtype();
    let (g, x) = (astype(g, dtype)?, astype(x, dtype)?);
    // P[r, c] = d out / d w_hat[r, c], over the (logical) weight matrix.
    let p = if transpose { super::matmul(&swapaxes(&g, -1, -2)?, &x)? } else { super::matmul(&swapaxes(&x, -1, -2)?, &g)? };
    let ones = super::ones(scales.shape(), dtype)?;
    let zeros = super::zeros(scales.shape(), dtype)?;
    let q = dequantize(w, &ones, &zeros, group_size, bits, Some(dtype))?;
    Ok((group_sum(&super::multiply(&p, &q)?, group_size)?, group_sum(&p, group_size)?))
}

/// A weight matrix `[rows, cols]` kept quantized: the packed codes, scales
/// and biases of [`quantize`] with their parameters. Models hold their
/// linear layers and embeddings this way (e.g. from a GGUF file's blocks,
/// `io::gguf::Gguf::quantized`) and never expand them in memory.
///
/// ```
/// use weft::{ops, Array};
/// // Codes 0..15 are exact in 4 bits (scale 1, bias 0).
/// let w = Array::from_vec((0..128).map(|i| (i % 16) as f32).collect(), &[2, 64]).unwrap();
/// let q = ops::QuantizedMatrix::quantize(&w, 64, 4).unwrap();
/// assert_eq!(q.shape(), [2, 64]);
/// let x = Array::from_vec(vec![1.0f32; 64], &[1, 64]).unwrap();
/// let y = q.matmul_t(&x).unwrap().to_vec::<f32>().unwrap(); // x @ w.T
/// let row0: f32 = (0..64).map(|i| (i % 16) as f32).sum();
/// assert!((y[0] - row0).abs() < 1e-3);
/// ```
#[derive(Clone, Debug)]
pub struct QuantizedMatrix {
    pub w: Array,
    pub scales: Array,
    pub biases: Array,
    pub group_size: usize,
    pub bits: u32,
}

impl QuantizedMatrix {
    /// Checks the parts' shapes and types against each other.
    pub fn new(w: Array, scales: Array, biases: Array, group_size: usize, bits: u32) -> Result<QuantizedMatrix> {
        check_quantized("QuantizedMatrix", &w, &scales, &biases, group_size, bits)?;
        if w.ndim() != 2 {
            bail!(Shape, "[QuantizedMatrix] the packed matrix must be 2-D, got shape {:?}", w.shape());
        }
        Ok(QuantizedMatrix { w, scales, biases, group_size, bits })
    }

    /// `w` quantized with [`quantize`].
    pub fn quantize(w: &Array, group_size: usize, bits: u32) -> Result<QuantizedMatrix> {
        let (q, s, b) = quantize(w, group_size, bits)?;
        QuantizedMatrix::new(q, s, b, group_size, bits)
    }

    /// `[rows, cols]` of the matrix it stands for.
    pub fn shape(&self) -> [usize; 2] {
        [self.w.shape()[0], self.w.shape()[1] * 32 / self.bits as usize]
    }

    /// `x @ w.T` (`x`: `[..., cols]`), reading the codes directly.
    pub fn matmul_t(&self, x: &Array) -> Result<Array> {
        quantized_matmul(x, &self.w, &self.scales, &self.biases, true, self.group_size, self.bits)
    }

    /// [`matmul_t`](Self::matmul_t) with `x` rounded to int8 per block of
    /// 32 ([`quantized_matmul_int8`]): an approximation, faster on the CPU
    /// for a few rows of `x`.
    pub fn matmul_t_int8(&self, x: &Array) -> Result<Array> {
        quantized_matmul_int8(x, &self.w, &self.scales, &self.biases, true, self.group_size, self.bits)
    }

    /// The rows `ids` (any integer shape `S`), dequantized to `dtype`:
    /// `[S..., cols]`, an embedding lookup that expands only those rows.
    pub fn rows(&self, ids: &Array, dtype: Dtype) -> Result<Array> {
        let take = |a: &Array| super::take(a, ids, Some(0));
        dequantize(&take(&self.w)?, &take(&self.scales)?, &take(&self.biases)?, self.group_size, self.bits, Some(dtype))
    }

    /// The whole matrix in `dtype`.
    pub fn dequantize(&self, dtype: Dtype) -> Result<Array> {
        dequantize(&self.w, &self.scales, &self.biases, self.group_size, self.bits, Some(dtype))
    }

    /// The same matrix with its scales and biases in `dtype`, its parts
    /// copied to the default device and evaluated there.
    pub fn converted(&self, dtype: Dtype) -> Result<QuantizedMatrix> {
        let copy = |a: &Array, dt: Dtype| -> Result<Array> {
            let b = super::copy_as(a, dt)?;
            b.eval()?;
            Ok(b)
        };
        Ok(QuantizedMatrix {
            w: copy(&self.w, Dtype::U32)?,
            scales: copy(&self.scales, dtype)?,
            biases: copy(&self.biases, dtype)?,
            group_size: self.group_size,
            bits: self.bits,
        })
    }
}
