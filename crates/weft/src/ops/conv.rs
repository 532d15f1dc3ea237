//! Convolutions with `mlx.core`'s semantics: channels-last inputs
//! `[N, ...spatial, C_in]`, weights `[C_out, ...kernel, C_in / groups]`,
//! outputs `[N, ...out, C_out]`. Everything builds one
//! [`Primitive::Conv`] node through [`conv_general`]: `conv1d/2d/3d` are its
//! symmetric-padding cases, the transposed convolutions its input-dilated,
//! flipped cases, and `convolve` NumPy's 1-D convolution.

use super::astype;
use crate::dtype::Dtype;
use crate::primitive::{ConvParams, Primitive};
use crate::{bail, Array, Result};

/// Padding of `conv_general`: the same on both sides of each axis, or
/// (low, high) per axis.
#[derive(Clone, Debug, PartialEq)]
pub enum ConvPadding {
    Symmetric(Vec<isize>),
    LoHi(Vec<isize>, Vec<isize>),
}

fn fmt(v: &[impl std::fmt::Display]) -> String {
    format!("({})", v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","))
}

/// One value per spatial axis: a single value repeats.
fn per_axis<T: Copy + std::fmt::Display>(v: &[T], d: usize, what: &str) -> Result<Vec<T>> {
    match v.len() {
        1 => Ok(vec![v[0]; d]),
        n if n == d => Ok(v.to_vec()),
        _ => bail!(InvalidArgument, "[conv] Invalid {what} {} for {d}D convolution.", fmt(v)),
    }
}

fn positive(v: &[isize], what: &str) -> Result<Vec<usize>> {
    if v.iter().any(|&x| x <= 0) {
        bail!(InvalidArgument, "[conv] {what} sizes must be positive. Got {} {}.", what.to_lowercase(), fmt(v));
    }
    Ok(v.iter().map(|&x| x as usize).collect())
}

/// The general convolution (`mlx.core.conv_general`): `stride`,
/// `kernel_dilation` and `input_dilation` give one value per spatial axis
/// (or one for all); `flip` convolves rather than correlates. The operands
/// are promoted to a common float type.
///
/// ```
/// use weft::{ops, Array};
/// let x = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[1, 4, 1]);
/// let w = Array::from_slice(&[1.0f32, 1.0], &[1, 2, 1]);
/// let y = ops::conv_general(&x.unwrap(), &w.unwrap(), &[1], &ops::ConvPadding::Symmetric(vec![0]), &[1], &[1], 1, false).unwrap();
/// assert_eq!(y.to_vec::<f32>().unwrap(), vec![3.0, 5.0, 7.0]);
/// ```
#[allow(clippy::too_many_arguments)]
pub fn conv_general(
    input: &Array,
    weight: &Array,
    stride: &[isize],
    padding: &ConvPadding,
    kernel_dilation: &[isize],
    input_dilation: &[isize],
    groups: isize,
    flip: bool,
) -> Result<Array> {
    if !(3..=5).contains(&input.ndim()) {
        bail!(
            InvalidArgument,
            "[conv] Only works for inputs with 1-3 spatial dimensions. The inputs must be in the format [N, ..., C_in], got shape {:?}",
            input.shape()
        );
    }
    let d = input.ndim() - 2;
    if weight.ndim() != input.ndim() {
        bail!(
            InvalidArgument,
            "[conv] Invalid weight array with {} dimensions for {d}D convolution. Expected an array with {} dimensions following the format [C_out, ..., C_in].",
            weight.ndim(),
            d + 2
        );
    }
    if !input.dtype().is_float() {
        bail!(Dtype, "[conv] Invalid input array with type {}. Convolution currently only supports floating point types", input.dtype());
    }
    let dtype = Dtype::promote(input.dtype(), weight.dtype());
    if !dtype.is_float() {
        bail!(Dtype, "[conv] Invalid weight array with type {}. Convolution currently only supports floating point types", weight.dtype());
    }
    if groups <= 0 {
        bail!(InvalidArgument, "[conv] groups must be positive, got {groups}");
    }
    let groups = groups as usize;
    let (ci, co) = (input.shape()[d + 1], weight.shape()[0]);
    if ci % groups != 0 {
        bail!(
            InvalidArgument,
            "[conv] The input channels must be divisible by the number of groups. Got input with shape {} and {groups} groups.",
            fmt(input.shape())
        );
    }
    if groups > 1 && co % groups != 0 {
        bail!(
            InvalidArgument,
            "[conv] If groups > 1, the output channels must be divisible by the number of groups. Got {co} output channels and {groups} groups."
        );
    }
    if weight.shape()[d + 1] * groups != ci {
        bail!(
            InvalidArgument,
            "[conv] Expect the input channels in the input and weight array to match but got shapes - input: {} and weight: {}",
            fmt(input.shape()),
            fmt(weight.shape())
        );
    }
    let stride = positive(&per_axis(stride, d, "strides")?, "Stride")?;
    let (lo, hi) = match padding {
        ConvPadding::Symmetric(p) => {
            let p = per_axis(p, d, "padding")?;
            (p.clone(), p)
        }
        ConvPadding::LoHi(lo, hi) => {
            if lo.len() != d || hi.len() != d {
                bail!(InvalidArgument, "[conv] Invalid padding {} | {} for {d}D convolution.", fmt(lo), fmt(hi));
            }
            (lo.clone(), hi.clone())
        }
    };
    let kernel_dilation = positive(&per_axis(kernel_dilation, d, "kernel dilation")?, "Kernel dilation")?;
    let input_dilation = positive(&per_axis(input_dilation, d, "input dilation")?, "Input dilation")?;
    let params = ConvParams { stride, padding_lo: lo, padding_hi: hi, kernel_dilation, input_dilation, groups, flip };
    let mut shape = Vec::with_capacity(d + 2);
    shape.push(input.shape()[0]);
    for i in 0..d {
        let (n, k) = (input.shape()[i + 1], weight.shape()[i + 1]);
        let dilated = if n == 0 { 0 } else { (n as isize - 1) * params.input_dilation[i] as isize + 1 };
        let padded = dilated + params.padding_lo[i] + params.padding_hi[i];
        let span = (k as isize - 1) * params.kernel_dilation[i] as isize + 1;
        if padded < span || n == 0 {
            bail!(
                InvalidArgument,
                "[conv] Spatial dimensions of input after padding cannot be smaller than weight spatial dimensions. Got error at axis {} for input with shape {}, padding low {}, padding high {}, and weight of shape {}.",
                i + 1,
                fmt(input.shape()),
                fmt(&params.padding_lo),
                fmt(&params.padding_hi),
                fmt(weight.shape())
            );
        }
        shape.push(((padded - span) / params.stride[i] as isize + 1) as usize);
    }
    shape.push(co);
    conv_node(&astype(input, dtype)?, &astype(weight, dtype)?, params, shape)
}

/// The node itself, for callers (derivatives, batching) whose arguments
/// are already checked: `shape` is the output's.
pub(crate) fn conv_node(input: &Array, weight: &Array, params: ConvParams, shape: Vec<usize>) -> Result<Array> {
    let dtype = input.dtype();
    Array::from_op(Primitive::Conv(params), vec![input.clone(), weight.clone()], shape, dtype)
}

/// A convolution with the same padding on both sides of each spatial
/// axis. As in MLX, the spatial axes are the input's: one value given for
/// each argument applies to every axis (so `conv1d` of a 4-D input is 2-D).
fn conv_nd(input: &Array, weight: &Array, stride: &[isize], padding: &[isize], dilation: &[isize], groups: isize) -> Result<Array> {
    conv_general(input, weight, stride, &ConvPadding::Symmetric(padding.to_vec()), dilation, &[1], groups, false)
}

/// 1-D convolution of `[N, L, C_in]` with `[C_out, K, C_in / groups]`.
pub fn conv1d(input: &Array, weight: &Array, stride: isize, padding: isize, dilation: isize, groups: isize) -> Result<Array> {
    conv_nd(input, weight, &[stride], &[padding], &[dilation], groups)
}

/// 2-D convolution of `[N, H, W, C_in]` with `[C_out, KH, KW, C_in / groups]`.
pub fn conv2d(input: &Array, weight: &Array, stride: [isize; 2], padding: [isize; 2], dilation: [isize; 2], groups: isize) -> Result<Array> {
    conv_nd(input, weight, &stride, &padding, &dilation, groups)
}

/// 3-D convolution of `[N, D, H, W, C_in]` with `[C_out, KD, KH, KW, C_in / groups]`.
pub fn conv3d(input: &Array, weight: &Array, stride: [isize; 3], padding: [isize; 3], dilation: [isize; 3], groups: isize) -> Result<Array> {
    conv_nd(input, weight, &stride, &padding, &dilation, groups)
}

/// A transposed convolution (the derivative of a convolution with respect
/// to its input): the flipped kernel slid over the input dilated by
/// `stride`, padded so that output `i` is where input `i / stride` lands,
/// with `output_padding` extra positions at the end of each axis.
fn conv_transpose_nd(
    input: &Array,
    weight: &Array,
    d: usize,
    stride: &[isize],
    padding: &[isize],
    dilation: &[isize],
    output_padding: &[isize],
    groups: isize,
) -> Result<Array> {
    if input.ndim() != d + 2 || weight.ndim() != d + 2 {
        bail!(
            InvalidArgument,
            "[conv_transpose{d}d] Invalid input array with {} dimensions (weight {}) for {d}D convolution. Expected arrays with {} dimensions.",
            input.ndim(),
            weight.ndim(),
            d + 2
        );
    }
    if stride.iter().any(|&s| s <= 0) {
        bail!(InvalidArgument, "[conv_transpose{d}d] Stride sizes must be positive. Got strides {}.", fmt(stride));
    }
    let (mut lo, mut hi) = (Vec::with_capacity(d), Vec::with_capacity(d));
    for i in 0..d {
        let span = 1 + dilation[i] * (weight.shape()[i + 1] as isize - 1);
        lo.push(span - padding[i] - 1);
        hi.push(span - padding[i] - 1 + output_padding[i]);
    }
    conv_general(input, weight, &[1], &ConvPadding::LoHi(lo, hi), dilation, stride, groups, true)
}

/// 1-D transposed convolution of `[N, L, C_in]` with `[C_out, K, C_in / groups]`.
pub fn conv_transpose1d(input: &Array, weight: &Array, stride: isize, padding: isize, dilation: isize, output_padding: isize, groups: isize) -> Result<Array> {
    conv_transpose_nd(input, weight, 1, &[stride], &[padding], &[dilation], &[output_padding], groups)
}

/// 2-D transposed convolution.
pub fn conv_transpose2d(
    input: &Array,
    weight: &Array,
    stride: [isize; 2],
    padding: [isize; 2],
    dilation: [isize; 2],
    output_padding: [isize; 2],
    groups: isize,
) -> Result<Array> {
    conv_transpose_nd(input, weight, 2, &stride, &padding, &dilation, &output_padding, groups)
}

/// 3-D transposed convolution.
pub fn conv_transpose3d(
    input: &Array,
    weight: &Array,
    stride: [isize; 3],
    padding: [isize; 3],
    dilation: [isize; 3],
    output_padding: [isize; 3],
    groups: isize,
) -> Result<Array> {
    conv_transpose_nd(input, weight, 3, &stride, &padding, &dilation, &output_padding, groups)
}

/// NumPy's `convolve` of two 1-D arrays; `mode` is `"full"`, `"same"`
/// (the length of the longer input, centred as NumPy) or `"valid"`.
pub fn convolve(a: &Array, v: &Array, mode: &str) -> Result<Array> {
    if a.ndim() != 1 || v.ndim() != 1 {
        bail!(InvalidArgument, "[convolve] Inputs must be 1D, got shapes {:?} and {:?}.", a.shape(), v.shape());
    }
    if a.size() == 0 || v.size() == 0 {
        bail!(InvalidArgument, "[convolve] Inputs cannot be empty.");
    }
    // Convolution commutes: slide the shorter one over the longer.
    let (x, w) = if a.size() < v.size() { (v, a) } else { (a, v) };
    let n = w.size() as isize;
    let (lo, hi) = match mode {
        "full" => (n - 1, n - 1),
        "valid" => (0, 0),
        "same" => (n / 2, n - 1 - n / 2),
        _ => bail!(InvalidArgument, "[convolve] Invalid mode {mode:?}: expected \"full\", \"same\" or \"valid\"."),
    };
    let dtype = Dtype::promote(a.dtype(), v.dtype());
    let x = super::reshape(&astype(x, dtype)?, &[1, -1, 1])?;
    let w = super::reshape(&astype(w, dtype)?, &[1, -1, 1])?;
    let y = conv_general(&x, &w, &[1], &ConvPadding::LoHi(vec![lo], vec![hi]), &[1], &[1], 1, true)?;
    super::reshape(&y, &[-1])
}
