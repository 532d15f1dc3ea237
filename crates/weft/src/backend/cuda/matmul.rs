//! `Matmul`: cuBLAS `gemmStridedBatchedEx`, one call for the whole batch.
//!
//! Row-major `C = A @ B` is column-major `C^T = B^T A^T`, so B goes first.
//! Each operand is used in place when its matrices are row- or
//! column-major with a usable leading dimension and its batch is one
//! stride (broadcast batches have stride 0); otherwise it is copied
//! contiguous first. Half types use the tensor cores and accumulate in
//! float; float32 computes in float32 (TF32 off: cuBLAS's default math).

use super::kernel::Launcher;
use super::memory::{CudaBuffer, StreamHandle};
use super::{copy, driver_err, Operand};
use crate::dtype::Dtype;
use crate::primitive::OutSpec;
use crate::shape::Layout;
use crate::{Error, Result};
use cudarc::cublas::sys as blas;
use std::ffi::c_void;
use std::panic::catch_unwind;

const WORKSPACE: usize = 32 << 20;

/// A cuBLAS handle bound to one encoder's stream, with its workspace.
pub(crate) struct Blas {
    handle: blas::cublasHandle_t,
    workspace: u64,
}

// SAFETY: the handle is used by one encoder's queue, one task at a time
// (never concurrently), which cuBLAS allows from any thread.
unsafe impl Send for Blas {}

impl Blas {
    fn new(stream: &StreamHandle) -> Result<Blas> {
        // SAFETY: `is_culib_present` only tries `dlopen` on candidate names.
        let present = catch_unwind(|| unsafe { blas::is_culib_present() }).unwrap_or(false);
        if !present {
            return Err(Error::DeviceUnavailable(
                "cuBLAS (libcublas.so) could not be loaded: add the CUDA libraries to LD_LIBRARY_PATH".into(),
            ));
        }
        let mut handle = std::ptr::null_mut();
        // SAFETY: `handle` is a valid out-pointer; the context is bound.
        check(unsafe { blas::cublasCreate_v2(&mut handle) }, "cublasCreate")?;
        // SAFETY: a fresh allocation owned by this value, freed in Drop.
        let workspace = unsafe { cudarc::driver::result::malloc_sync(WORKSPACE) }
            .map_err(|e| driver_err("cuBLAS workspace", e));
        let blas = Blas { handle, workspace: *workspace.as_ref().unwrap_or(&0) };
        workspace?;
        // SAFETY: handle, stream and workspace are live; the workspace is
        // used only by work on this stream.
        unsafe {
            check(blas::cublasSetStream_v2(handle, stream.raw() as _), "cublasSetStream")?;
            check(
                blas::cublasSetWorkspace_v2(handle, blas.workspace as *mut c_void, WORKSPACE),
                "cublasSetWorkspace",
            )?;
            check(blas::cublasSetMathMode(handle, blas::cublasMath_t::CUBLAS_DEFAULT_MATH), "cublasSetMathMode")?;
        }
        Ok(blas)
    }
}

impl Drop for Blas {
    fn drop(&mut self) {
        // SAFETY: the handle and workspace are owned by this value; work
        // using them was enqueued on the stream, which finishes it first.
        unsafe {
            blas::cublasDestroy_v2(self.handle);
            if self.workspace != 0 {
                let _ = cudarc::driver::result::free_sync(self.workspace);
            }
        }
    }
}

fn check(s: blas::cublasStatus_t, what: &str) -> Result<()> {
    match s {
        blas::cublasStatus_t::CUBLAS_STATUS_SUCCESS => Ok(()),
        blas::cublasStatus_t::CUBLAS_STATUS_ALLOC_FAILED => {
            Err(Error::OutOfMemory { requested: 0, in_use: crate::buffer::active_memory(), limit: usize::MAX })
        }
        s => Err(Error::Kernel(format!("{what} failed: {s:?}"))),
    }
}

/// How one operand's matrices are read: transposed (column-major) or not,
/// leading dimension, batch stride. `None`: copy it contiguous first.
fn plan(l: &Layout, batch: &[usize]) -> Option<(bool, i64, i64)> {
    let nd = l.shape.len();
    let (rows, cols) = (l.shape[nd - 2], l.shape[nd - 1]);
    let (sr, sc) = (l.strides[nd - 2], l.strides[nd - 1]);
    let mat = if (cols == 1 || sc == 1) && (rows == 1 || sr >= cols as isize) {
        (false, if rows == 1 { cols as i64 } else { sr as i64 })
    } else if (rows == 1 || sr == 1) && (cols == 1 || sc >= rows as isize) {
        (true, if cols == 1 { rows as i64 } else { sc as i64 })
    } else {
        return None;
    };
    // One stride for the whole (flattened) batch.
    let (bs, bst) = super::kernel::collapse(batch, &[l.strides[..nd - 2].to_vec()]);
    let stride = match bs.len() {
        0 => 0,
        1 => bst[0][0] as i64,
        _ => return None,
    };
    Some((mat.0, mat.1.max(1), stride))
}

pub(crate) fn matmul(
    k: &mut Launcher<'_>,
    blas: &mut Option<Blas>,
    a: &Operand,
    b: &Operand,
    out: OutSpec<'_>,
) -> Result<CudaBuffer> {
    let nd = out.shape.len();
    let (m, n) = (out.shape[nd - 2], out.shape[nd - 1]);
    let kk = a.layout.shape[nd - 1];
    let batch = &out.shape[..nd - 2];
    let count: usize = batch.iter().product();
    let dt = out.dtype;
    let c = k.alloc(dt, count * m * n)?;
    if count * m * n == 0 {
        return Ok(c);
    }
    if kk == 0 {
        // SAFETY: `c` holds exactly these bytes; the memset is ordered on
        // this stream before any reader.
        unsafe { cudarc::driver::sys::cuMemsetD8Async(c.ptr(), 0, count * m * n * dt.size(), k.stream.raw()) }
            .result()
            .map_err(|e| driver_err("memset", e))?;
        return Ok(c);
    }
    // Operands that cuBLAS cannot read in place are copied; the copies are
    // freed (in stream order) after the gemm.
    let mut temps = Vec::new();
    let mut prepare = |k: &mut Launcher<'_>, o: &Operand| -> Result<(u64, bool, i64, i64)> {
        if let Some((t, ld, bs)) = plan(&o.layout, batch) {
            return Ok((o.ptr, t, ld, bs));
        }
        let copy = copy::copy(k, o)?;
        let l = Layout::contiguous(&o.layout.shape);
        let (t, ld, bs) = plan(&l, batch).expect("contiguous operands need no copy");
        let p = copy.ptr();
        temps.push(copy);
        Ok((p, t, ld, bs))
    };
    let (pa, ta, lda, sa) = prepare(k, a)?;
    let (pb, tb, ldb, sb) = prepare(k, b)?;
    if blas.is_none() {
        *blas = Some(Blas::new(k.stream)?);
    }
    let h = blas.as_ref().expect("made above").handle;
    let (ty, compute) = match dt {
        Dtype::F32 => (blas::cudaDataType::CUDA_R_32F, blas::cublasComputeType_t::CUBLAS_COMPUTE_32F),
        Dtype::F16 => (blas::cudaDataType::CUDA_R_16F, blas::cublasComputeType_t::CUBLAS_COMPUTE_32F),
        Dtype::BF16 => (blas::cudaDataType::CUDA_R_16BF, blas::cublasComputeType_t::CUBLAS_COMPUTE_32F),
        Dtype::F64 => (blas::cudaDataType::CUDA_R_64F, blas::cublasComputeType_t::CUBLAS_COMPUTE_64F),
        d => return Err(Error::Dtype(format!("matmul on the GPU supports float types, got {d}"))),
    };
    let (one32, zero32, one64, zero64) = (1.0f32, 0.0f32, 1.0f64, 0.0f64);
    let (alpha, beta): (*const c_void, *const c_void) = if dt == Dtype::F64 {
        (&one64 as *const f64 as _, &zero64 as *const f64 as _)
    } else {
        (&one32 as *const f32 as _, &zero32 as *const f32 as _)
    };
    let op = |t: bool| if t { blas::cublasOperation_t::CUBLAS_OP_T } else { blas::cublasOperation_t::CUBLAS_OP_N };
    let dims = [m, n, kk, count, lda as usize, ldb as usize];
    if dims.iter().any(|&d| d > i32::MAX as usize) {
        return Err(Error::InvalidArgument(format!("matmul dimensions {dims:?} exceed cuBLAS's 32-bit limits")));
    }
    // SAFETY: pointers address live device buffers of `dt` (inputs held by
    // the caller, copies by `temps`, output `c`) large enough for the
    // described matrices and batch strides; alpha/beta outlive the call
    // (host pointer mode copies them before returning).
    let status = unsafe {
        blas::cublasGemmStridedBatchedEx(
            h,
            op(tb),
            op(ta),
            n as i32,
            m as i32,
            kk as i32,
            alpha,
            pb as *const c_void,
            ty,
            ldb as i32,
            sb,
            pa as *const c_void,
            ty,
            lda as i32,
            sa,
            beta,
            c.ptr() as *mut c_void,
            ty,
            n as i32,
            (m * n) as i64,
            count as i32,
            compute,
            blas::cublasGemmAlgo_t::CUBLAS_GEMM_DFALT,
        )
    };
    check(status, "cublasGemmStridedBatchedEx")?;
    drop(temps);
    Ok(c)
}
