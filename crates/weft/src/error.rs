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
            Error::OutOfMemory { requested, in_use, limit } => write!(
                f,
                "out of memory: allocating {requested} bytes with {in_use} in use (limit {limit})"
            ),
            Error::DeviceUnavailable(m) => write!(f, "device unavailable: {m}"),
            Error::Kernel(m) => write!(f, "kernel failed: {m}"),
            Error::InputFailed(e) => write!(f, "an input failed: {e}"),
            Error::Io(m) => write!(f, "io error: {m}"),
        }
    }
}

impl std::error::Error for Error {}

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
