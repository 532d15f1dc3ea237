//! `Concatenate`: each input copied into its band of the output.

use super::kernel::{elementwise_into, Dest, Launcher};
use super::memory::CudaBuffer;
use super::Operand;
use crate::primitive::OutSpec;
use crate::shape::{contiguous_strides, Layout};
use crate::Result;

pub(crate) fn concatenate(k: &mut Launcher<'_>, axis: usize, inputs: &[Operand], out: OutSpec<'_>) -> Result<CudaBuffer> {
    let buf = k.alloc(out.dtype, crate::shape::numel(out.shape))?;
    let strides = contiguous_strides(out.shape);
    let mut start = 0usize;
    let size = out.dtype.size() as u64;
    for a in inputs {
        let shape = a.layout.shape.clone();
        let offset = start * strides[axis] as usize;
        let dest = Dest {
            ptr: buf.ptr() + offset as u64 * size,
            layout: Layout { shape: shape.clone(), strides: strides.clone(), offset: 0 },
            dtype: out.dtype,
        };
        elementwise_into(k, "copy", &[a], &dest, &shape, "x0")?;
        start += shape[axis];
    }
    Ok(buf)
}
