//! One error type for the whole crate.

use std::fmt;
use std::sync::Arc;

/// Everything that can go wrong in weft.
///
/// Errors are cheap to clone: a failed node hands the same error to every
/// thread that waits on it (docs/architecture.md rule 9).
#[derive(Clone, Debug, PartialEq)]
pub enum Error {
    /// Shapes that do not fit together (broadcasting, matmul, reshape, ...).
    Shape(String),
    /// A dtype an op does not accept, or two that cannot be combined.
    Dtype(String),
    /// An axis, index or argument out of range.
    InvalidArgument(String),
    /// An allocation was refused: by the allocator, or by `set_memory_limit`.
    OutOfMemory { requested: usize, in_use: usize, limit: usize },
    /// The device asked for does not exist or cannot be used here.
    DeviceUnavailable(String),
    /// A kernel failed while running.
    Kernel(String),
    /// An input of this array failed; the original error is inside.
    InputFailed(Arc<Error>),
    /// Reading or writing a file.
    Io(String),
    /// A bug in weft: a panic, caught and turned into this error so it never
    /// takes the process (or a Python interpreter) down with it.
    Internal(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The error at the root of a chain of failed inputs.
    pub fn root(&self) -> &Error {
        match self {
            Error::InputFailed(e) => e.root(),
            e => e,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Shape(m) => write!(f, "shape error: {m}"),
            Error::Dtype(m) => write!(f, "dtype error: {m}"),
            Error::InvalidArgument(m) => write!(f, "invalid argument: {m}"),
            Error::OutOfMemory { requested, in_use, limit } => {
                write!(f, "out of memory: allocating {requested} bytes with {in_use} bytes in use (")?;
                match *limit {
                    usize::MAX => write!(f, "no limit"),
                    l => write!(f, "limit {l} bytes"),
                }?;
                write!(f, ")")
            }
            Error::DeviceUnavailable(m) => write!(f, "device unavailable: {m}"),
            Error::Kernel(m) => write!(f, "kernel failed: {m}"),
            Error::InputFailed(e) => write!(f, "an input failed: {e}"),
            Error::Io(m) => write!(f, "io error: {m}"),
            Error::Internal(m) => write!(f, "internal error (a weft bug): {m}"),
        }
    }
}

impl std::error::Error for Error {}

// ---------------------------------------------------------------------------
// Panics: caught where weft runs code on someone's behalf, returned as
// errors, and not printed (docs/architecture.md, "Failures").

thread_local! {
    /// How many `catch_silently` frames are active on this thread.
    static CATCHING: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Runs `f`, catching a panic. While `f` runs, the panic hook prints nothing
/// for a panic on this thread (it becomes an error that is returned; printing
/// it too would report one failure twice). Panics elsewhere, and outside
/// `f`, go to the hook that was installed before weft's, unchanged.
pub(crate) fn catch_silently<R>(f: impl FnOnce() -> R) -> std::thread::Result<R> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if CATCHING.with(|c| c.get()) == 0 {
                previous(info)
            }
        }));
    });
    struct Depth;
    impl Drop for Depth {
        fn drop(&mut self) {
            CATCHING.with(|c| c.set(c.get() - 1));
        }
    }
    CATCHING.with(|c| c.set(c.get() + 1));
    let _depth = Depth;
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
}

/// The text of a caught panic.
pub(crate) fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Runs `f`; a panic inside becomes [`Error::Internal`] (and is not
/// printed). For bindings: no panic may cross into a caller that cannot
/// handle it (Python turns it into an exception `except Exception` misses).
///
/// ```
/// let r: weft::Result<()> = weft::catch_panic(|| panic!("boom"));
/// assert!(matches!(r, Err(weft::Error::Internal(m)) if m.contains("boom")));
/// ```
pub fn catch_panic<R>(f: impl FnOnce() -> Result<R>) -> Result<R> {
    catch_silently(f).unwrap_or_else(|p| Err(Error::Internal(panic_message(&*p))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_memory_names_request_use_and_limit() {
        let e = Error::OutOfMemory { requested: 4096, in_use: 10, limit: usize::MAX };
        assert_eq!(e.to_string(), "out of memory: allocating 4096 bytes with 10 bytes in use (no limit)");
        let e = Error::OutOfMemory { requested: 4096, in_use: 10, limit: 100 };
        assert_eq!(e.to_string(), "out of memory: allocating 4096 bytes with 10 bytes in use (limit 100 bytes)");
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e.to_string())
    }
}

/// `bail!(Shape, "...")` returns early with a formatted error.
#[macro_export]
macro_rules! bail {
    ($kind:ident, $($arg:tt)*) => {
        return Err($crate::Error::$kind(format!($($arg)*)))
    };
}
