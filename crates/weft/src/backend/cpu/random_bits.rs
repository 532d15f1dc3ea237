//! `RandomBits`: word pair `i` of the output is `primitive::threefry` of the
//! key on the counter `(hi32(i), lo32(i))`.

use super::{to_vec, PARALLEL_MIN};
use crate::buffer::{CpuBuffer, Data};
use crate::primitive::threefry::threefry2x32;
use crate::primitive::OutSpec;
use crate::{Error, Result};
use rayon::prelude::*;

/// The word pair at position `i` of the stream of `key`.
#[inline]
fn pair(key: [u32; 2], i: usize) -> [u32; 2] {
    let i = i as u64;
    threefry2x32(key, [(i >> 32) as u32, i as u32])
}

pub(crate) fn random_bits(key: &Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    let k = to_vec::<u32>(key)?;
    let key: [u32; 2] = k
        .as_slice()
        .try_into()
        .map_err(|_| Error::Shape(format!("a random key has 2 uint32 words, got {}", k.len())))?;
    let n = crate::shape::numel(out.shape);
    CpuBuffer::build(n, |v: &mut Vec<u32>| {
        v.resize(n, 0);
        let fill = |(c, chunk): (usize, &mut [u32])| {
            for (j, w) in chunk.chunks_mut(2).enumerate() {
                let p = pair(key, c * 512 + j);
                w.copy_from_slice(&p[..w.len()]);
            }
        };
        if n >= PARALLEL_MIN {
            v.par_chunks_mut(1024).enumerate().for_each(fill);
        } else {
            v.chunks_mut(1024).enumerate().for_each(fill);
        }
    })
}
