//! `RandomBits`: word pair `i` of the output is threefry-2x32 (20 rounds,
//! `primitive::threefry`) of the key on the counter `(hi32(i), lo32(i))`,
//! one thread per pair, so the GPU's words equal the CPU's bit for bit.

use super::kernel::{Args, Launcher, BLOCK};
use super::memory::CudaBuffer;
use super::Operand;
use crate::primitive::OutSpec;
use crate::{Error, Result};

const SOURCE: &str = r#"
__device__ __forceinline__ unsigned int rotl(unsigned int x, unsigned int r) { return (x << r) | (x >> (32u - r)); }
extern "C" __global__ void bits(unsigned int* out, const unsigned int* key, long long kstride, long long n) {
  unsigned int k0 = key[0], k1 = key[kstride];
  unsigned int ks[3] = {k0, k1, 0x1BD11BDAu ^ k0 ^ k1};
  const unsigned int rot[8] = {13u, 15u, 26u, 6u, 17u, 29u, 16u, 24u};
  long long pairs = (n + 1) / 2;
  long long step = (long long)blockDim.x * gridDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < pairs; i += step) {
    unsigned long long c = (unsigned long long)i;
    unsigned int x0 = (unsigned int)(c >> 32) + ks[0], x1 = (unsigned int)c + ks[1];
    #pragma unroll
    for (int g = 0; g < 5; ++g) {
      #pragma unroll
      for (int q = 0; q < 4; ++q) { x0 += x1; x1 = rotl(x1, rot[(g & 1) * 4 + q]) ^ x0; }
      int j = g + 1;
      x0 += ks[j % 3];
      x1 += ks[(j + 1) % 3] + (unsigned int)j;
    }
    out[2 * i] = x0;
    if (2 * i + 1 < n) out[2 * i + 1] = x1;
  }
}
"#;

pub(crate) fn random_bits(k: &mut Launcher<'_>, key: &Operand, out: OutSpec<'_>) -> Result<CudaBuffer> {
    if key.layout.numel() != 2 || key.dtype != crate::dtype::Dtype::U32 {
        return Err(Error::Shape(format!("a random key has 2 uint32 words, got {:?} {}", key.layout.shape, key.dtype)));
    }
    let n = crate::shape::numel(out.shape);
    let buf = k.alloc(out.dtype, n)?;
    if n == 0 {
        return Ok(buf);
    }
    let f = k.function("random_bits", "bits", || SOURCE.to_string())?;
    let kstride = *key.layout.strides.last().unwrap_or(&1);
    let mut args = Args::default();
    args.ptr(buf.ptr()).ptr(key.ptr).i64(kstride as i64).i64(n as i64);
    k.launch(&f, (k.grid_for(n.div_ceil(2)), 1, 1), BLOCK, 0, &mut args)?;
    Ok(buf)
}
