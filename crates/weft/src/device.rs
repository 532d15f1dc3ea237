//! Devices: where an array's memory lives and its kernels run.

use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceType {
    Cpu,
    Gpu,
}

/// A device: the CPU, or GPU number `index`. A small `Copy` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Device {
    pub kind: DeviceType,
    pub index: u32,
}

impl Device {
    pub const fn cpu() -> Device {
        Device { kind: DeviceType::Cpu, index: 0 }
    }

    pub const fn gpu(index: u32) -> Device {
        Device { kind: DeviceType::Gpu, index }
    }

    pub fn is_cpu(self) -> bool {
        self.kind == DeviceType::Cpu
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            DeviceType::Cpu => write!(f, "Device(cpu, {})", self.index),
            DeviceType::Gpu => write!(f, "Device(gpu, {})", self.index),
        }
    }
}

// The process-wide default device, packed as (kind << 16 | index).
static DEFAULT_DEVICE: AtomicU32 = AtomicU32::new(0);

/// The device ops use when no stream is given: process-wide, so a choice made
/// at import time holds in every worker thread.
pub fn default_device() -> Device {
    let v = DEFAULT_DEVICE.load(Ordering::Relaxed);
    let kind = if v >> 16 == 0 { DeviceType::Cpu } else { DeviceType::Gpu };
    Device { kind, index: v & 0xffff }
}

/// Sets the default device for every thread. Fails if the device is unavailable.
pub fn set_default_device(device: Device) -> crate::Result<()> {
    crate::backend::check_available(device)?;
    let kind = match device.kind {
        DeviceType::Cpu => 0,
        DeviceType::Gpu => 1,
    };
    DEFAULT_DEVICE.store(kind << 16 | device.index, Ordering::Relaxed);
    Ok(())
}
