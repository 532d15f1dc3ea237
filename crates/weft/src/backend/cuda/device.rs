//! One context per GPU, made on first use, living for the process.
//!
//! cudarc loads `libcuda` at run time and panics when it is missing; every
//! entry point here checks that the library loads first, and runs the
//! driver's start-up inside `catch_unwind`, so a machine with no CUDA gets
//! `Error::DeviceUnavailable("no CUDA driver found ...")`.

use super::driver_err;
use super::kernel::{CompiledModule, Function};
use crate::device::Device;
use crate::{Error, Result};
use cudarc::driver::safe::CudaContext;
use cudarc::driver::{result, sys};
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, OnceLock, RwLock};

const MAX_GPUS: usize = 16;

/// One GPU: its context, and the kernels compiled for it.
pub(crate) struct Gpu {
    pub index: u32,
    pub ctx: Arc<CudaContext>,
    /// `compute_XY` of the device, for NVRTC.
    pub arch: &'static str,
    pub sm_count: u32,
    /// The device's stream-ordered memory pool.
    pub pool: sys::CUmemoryPool,
    /// Compiled modules by kernel key. Read on an encoder's first launch of a
    /// kernel only (encoders keep their own map after that); each entry is
    /// compiled once, outside the map's lock.
    modules: RwLock<HashMap<String, Arc<OnceLock<std::result::Result<Arc<CompiledModule>, Error>>>>>,
}

// SAFETY: `pool` is a driver handle that the driver lets any thread use; the
// rest is Send + Sync already.
unsafe impl Send for Gpu {}
// SAFETY: as above: the pool handle is only passed to thread-safe driver calls.
unsafe impl Sync for Gpu {}

static GPUS: [OnceLock<std::result::Result<Arc<Gpu>, Error>>; MAX_GPUS] =
    [const { OnceLock::new() }; MAX_GPUS];

/// Whether `libcuda` can be loaded in this process.
pub(crate) fn driver_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: `is_culib_present` only tries `dlopen` on candidate names.
    *PRESENT.get_or_init(|| catch_unwind(|| unsafe { sys::is_culib_present() }).unwrap_or(false))
}

/// Fails with a clear error unless GPU `device.index` can be used.
pub(crate) fn check_available(device: Device) -> Result<()> {
    gpu(device.index).map(|_| ())
}

/// GPU `index`, started on first use.
pub(crate) fn gpu(index: u32) -> Result<Arc<Gpu>> {
    let slot = GPUS
        .get(index as usize)
        .ok_or_else(|| Error::DeviceUnavailable(format!("gpu {index} does not exist")))?;
    slot.get_or_init(|| start(index)).clone()
}

fn start(index: u32) -> Result<Arc<Gpu>> {
    if !driver_present() {
        return Err(Error::DeviceUnavailable(
            "no CUDA driver found (libcuda.so could not be loaded)".into(),
        ));
    }
    let started = catch_unwind(AssertUnwindSafe(|| -> Result<Arc<Gpu>> {
        let count = CudaContext::device_count().map_err(|e| {
            Error::DeviceUnavailable(format!("the CUDA driver did not start: {e:?}"))
        })?;
        if index as i32 >= count {
            return Err(Error::DeviceUnavailable(format!(
                "gpu {index} does not exist ({count} CUDA devices found)"
            )));
        }
        let ctx = CudaContext::new(index as usize).map_err(|e| driver_err("creating a context", e))?;
        // SAFETY: weft orders streams itself (events on buffers); cudarc's
        // own tracking only applies to its CudaSlice, which weft does not use.
        unsafe { ctx.disable_event_tracking() };
        let (major, minor) = ctx.compute_capability().map_err(|e| driver_err("device query", e))?;
        let arch: &'static str = Box::leak(format!("compute_{major}{minor}").into_boxed_str());
        let sm_count = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(|e| driver_err("device query", e))? as u32;
        // SAFETY: the device handle is valid (the context was made on it).
        let pool = unsafe { result::device::get_default_mem_pool(ctx.cu_device()) }
            .map_err(|e| driver_err("memory pool", e))?;
        // Keep freed memory in the pool instead of returning it to the
        // driver at every synchronization (what PyTorch's caching does too);
        // it is trimmed when an allocation fails.
        let mut threshold: u64 = u64::MAX;
        // SAFETY: the attribute takes a pointer to a u64, which `threshold` is.
        unsafe {
            result::mem_pool::set_attribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                &mut threshold as *mut u64 as *mut _,
            )
        }
        .map_err(|e| driver_err("memory pool", e))?;
        Ok(Arc::new(Gpu {
            index,
            ctx,
            arch,
            sm_count,
            pool,
            modules: RwLock::new(HashMap::new()),
        }))
    }));
    started.unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Err(Error::DeviceUnavailable(format!("the CUDA driver failed to load: {msg}")))
    })
}

impl Gpu {
    /// Makes this GPU's context current on the calling thread (a no-op when
    /// it already is).
    pub(crate) fn bind(&self) -> Result<()> {
        let want = self.ctx.cu_ctx();
        match result::ctx::get_current() {
            Ok(Some(cur)) if cur == want => Ok(()),
            // SAFETY: the context is the device's primary context, retained
            // by `self.ctx` for the life of the process.
            _ => unsafe { result::ctx::set_current(want) }.map_err(|e| driver_err("binding the context", e)),
        }
    }

    /// The kernel `name` of the module for `key`, compiling `source()` on
    /// the first request for `key` in the process.
    pub(crate) fn function(&self, key: &str, name: &str, source: impl FnOnce() -> String) -> Result<Function> {
        let cell = {
            let map = self.modules.read().unwrap_or_else(|p| p.into_inner());
            map.get(key).cloned()
        };
        let cell = match cell {
            Some(c) => c,
            None => {
                let mut map = self.modules.write().unwrap_or_else(|p| p.into_inner());
                map.entry(key.to_string()).or_default().clone()
            }
        };
        let module = cell
            .get_or_init(|| {
                CompiledModule::compile(self, &source()).map(Arc::new)
            })
            .clone()?;
        module.function(name)
    }
}
