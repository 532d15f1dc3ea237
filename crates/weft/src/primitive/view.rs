//! The layout arithmetic of view primitives, shared by every backend: a view
//! reuses its input's buffer under a new [`Layout`].

use super::Primitive;
use crate::shape::Layout;

/// The layout of `prim`'s output when it can view its (single) input's
/// buffer; `None` when the primitive needs a kernel.
pub fn view_layout(prim: &Primitive, input: &Layout, out_shape: &[usize]) -> Option<Layout> {
    match prim {
        Primitive::Reshape => input.reshape(out_shape),
        Primitive::Transpose { perm } => Some(input.permute(perm)),
        Primitive::BroadcastTo => Some(input.broadcast_to(out_shape)),
        Primitive::Slice { start, step } => {
            let mut offset = input.offset as isize;
            let strides = input
                .strides
                .iter()
                .zip(start.iter().zip(step))
                .map(|(&s, (&b, &st))| {
                    offset += s * b as isize;
                    s * st
                })
                .collect();
            // An empty slice never reads its offset; clamp it into range.
            Some(Layout { shape: out_shape.to_vec(), strides, offset: offset.max(0) as usize })
        }
        // The input is 1-D (the op flattens it): element `i` sits at
        // `offset + i * s` of the buffer, whatever its stride `s`.
        Primitive::AsStrided { strides, offset } => {
            let s = input.strides.first().copied().unwrap_or(1);
            let strides = strides.iter().map(|&t| t * s).collect();
            let at = input.offset as isize + *offset as isize * s;
            // An empty view never reads its offset; clamp it into range.
            Some(Layout { shape: out_shape.to_vec(), strides, offset: at.max(0) as usize })
        }
        _ => None,
    }
}
