//! `Dtype` and the dtype constants (`float32`, `int32`, ...), the categories
//! (`floating`, ...) and the dtype queries: `finfo`, `iinfo`, `issubdtype`,
//! `result_type`, `can_cast`, `isdtype`.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use weft::Dtype;

/// An array's element type (`weft.core.float32`, ...).
#[pyclass(name = "Dtype", module = "weft.core", frozen, eq, hash, from_py_object)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDtype(pub Dtype);

#[pymethods]
impl PyDtype {
    /// Bytes per element.
    #[getter]
    fn size(&self) -> usize {
        self.0.size()
    }

    fn __repr__(&self) -> String {
        format!("weft.core.{}", self.0.name())
    }

    fn __str__(&self) -> String {
        self.__repr__()
    }
}

/// The module attributes: MLX's names, `bool_` for bool.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDtype>()?;
    for d in Dtype::ALL {
        let name = if d == Dtype::Bool { "bool_" } else { d.name() };
        m.add(name, PyDtype(d))?;
    }
    m.add_class::<DtypeCategory>()?;
    for c in DtypeCategory::ALL {
        m.add(c.name(), c)?;
    }
    m.add_class::<FInfo>()?;
    m.add_class::<IInfo>()?;
    m.add_function(wrap_pyfunction!(issubdtype, m)?)?;
    m.add_function(wrap_pyfunction!(result_type, m)?)?;
    m.add_function(wrap_pyfunction!(can_cast, m)?)?;
    m.add_function(wrap_pyfunction!(isdtype, m)?)?;
    Ok(())
}

/// MLX's abstract dtype categories (`weft.core.floating`, ...), for
/// [`issubdtype`]: `generic` above `number` and `bool`; `number` above
/// `integer` (`signedinteger`, `unsignedinteger`) and `inexact`
/// (`floating`, `complexfloating`).
#[pyclass(name = "DtypeCategory", module = "weft.core", eq, eq_int, frozen, hash, from_py_object)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum DtypeCategory {
    #[pyo3(name = "complexfloating")]
    ComplexFloating,
    #[pyo3(name = "floating")]
    Floating,
    #[pyo3(name = "inexact")]
    Inexact,
    #[pyo3(name = "signedinteger")]
    SignedInteger,
    #[pyo3(name = "unsignedinteger")]
    UnsignedInteger,
    #[pyo3(name = "integer")]
    Integer,
    #[pyo3(name = "number")]
    Number,
    #[pyo3(name = "generic")]
    Generic,
}

impl DtypeCategory {
    const ALL: [DtypeCategory; 8] = [
        DtypeCategory::ComplexFloating,
        DtypeCategory::Floating,
        DtypeCategory::Inexact,
        DtypeCategory::SignedInteger,
        DtypeCategory::UnsignedInteger,
        DtypeCategory::Integer,
        DtypeCategory::Number,
        DtypeCategory::Generic,
    ];

    fn name(self) -> &'static str {
        match self {
            DtypeCategory::ComplexFloating => "complexfloating",
            DtypeCategory::Floating => "floating",
            DtypeCategory::Inexact => "inexact",
            DtypeCategory::SignedInteger => "signedinteger",
            DtypeCategory::UnsignedInteger => "unsignedinteger",
            DtypeCategory::Integer => "integer",
            DtypeCategory::Number => "number",
            DtypeCategory::Generic => "generic",
        }
    }

    /// The category right above this one (None for `generic`).
    fn parent(self) -> Option<DtypeCategory> {
        use DtypeCategory::*;
        match self {
            ComplexFloating | Floating => Some(Inexact),
            SignedInteger | UnsignedInteger => Some(Integer),
            Inexact | Integer => Some(Number),
            Number => Some(Generic),
            Generic => None,
        }
    }

    /// The most specific category of a dtype (None for bool: only `generic`).
    fn of(d: Dtype) -> Option<DtypeCategory> {
        if d.is_float() {
            Some(DtypeCategory::Floating)
        } else if d.is_complex() {
            Some(DtypeCategory::ComplexFloating)
        } else if d.is_unsigned() {
            Some(DtypeCategory::UnsignedInteger)
        } else if d.is_integer() {
            Some(DtypeCategory::SignedInteger)
        } else {
            None
        }
    }

    /// Whether `self` is `other` or below it.
    fn within(self, other: DtypeCategory) -> bool {
        let mut c = Some(self);
        while let Some(x) = c {
            if x == other {
                return true;
            }
            c = x.parent();
        }
        false
    }
}

#[pymethods]
impl DtypeCategory {
    fn __repr__(&self) -> String {
        format!("DtypeCategory.{}", self.name())
    }
}

/// A dtype or a category, as `issubdtype` takes them.
#[derive(FromPyObject)]
enum DtypeOrCategory {
    Dtype(PyDtype),
    Category(DtypeCategory),
}

/// Whether `arg1` is `arg2` or falls under it (`issubdtype(float32, floating)`).
#[pyfunction]
fn issubdtype(arg1: DtypeOrCategory, arg2: DtypeOrCategory) -> bool {
    use DtypeOrCategory as D;
    match (arg1, arg2) {
        (D::Dtype(a), D::Dtype(b)) => a == b,
        (D::Category(_), D::Dtype(_)) => false,
        (D::Dtype(a), D::Category(c)) => match DtypeCategory::of(a.0) {
            Some(k) => k.within(c),
            None => c == DtypeCategory::Generic,
        },
        (D::Category(a), D::Category(c)) => a.within(c),
    }
}

/// Machine limits of a float type (`weft.core.finfo(float32).eps`, ...).
#[pyclass(name = "finfo", module = "weft.core", frozen)]
pub struct FInfo {
    #[pyo3(get)]
    min: f64,
    #[pyo3(get)]
    max: f64,
    #[pyo3(get)]
    eps: f64,
    #[pyo3(get)]
    smallest_normal: f64,
    #[pyo3(get)]
    bits: usize,
    #[pyo3(get)]
    dtype: PyDtype,
}

#[pymethods]
impl FInfo {
    #[new]
    fn new(dtype: &Bound<'_, PyAny>) -> PyResult<Self> {
        // A complex type reports its real component (the array API's rule).
        let d = match dtype_of(dtype)? {
            Dtype::C64 => Dtype::F32,
            d => d,
        };
        let (max, eps, smallest_normal) = match d {
            Dtype::F16 => (f64::from(half::f16::MAX), f64::from(half::f16::EPSILON), f64::from(half::f16::MIN_POSITIVE)),
            Dtype::BF16 => (f64::from(half::bf16::MAX), f64::from(half::bf16::EPSILON), f64::from(half::bf16::MIN_POSITIVE)),
            Dtype::F32 => (f64::from(f32::MAX), f64::from(f32::EPSILON), f64::from(f32::MIN_POSITIVE)),
            Dtype::F64 => (f64::MAX, f64::EPSILON, f64::MIN_POSITIVE),
            d => return Err(PyValueError::new_err(format!("finfo: {d} is not a floating point type"))),
        };
        Ok(FInfo { min: -max, max, eps, smallest_normal, bits: d.size() * 8, dtype: PyDtype(d) })
    }

    fn __repr__(&self) -> String {
        format!("finfo(min={:e}, max={:e}, dtype={})", self.min, self.max, self.dtype.0)
    }
}

/// Limits of an integer type (`weft.core.iinfo(int8).max`, ...).
#[pyclass(name = "iinfo", module = "weft.core", frozen)]
pub struct IInfo {
    #[pyo3(get)]
    min: i128,
    #[pyo3(get)]
    max: i128,
    #[pyo3(get)]
    dtype: PyDtype,
}

#[pymethods]
impl IInfo {
    #[new]
    fn new(dtype: &Bound<'_, PyAny>) -> PyResult<Self> {
        let d = dtype_of(dtype)?;
        if !d.is_integer() {
            return Err(PyValueError::new_err(format!("iinfo: {d} is not an integer type")));
        }
        let bits = d.size() as u32 * 8;
        let (min, max) = if d.is_unsigned() { (0, (1i128 << bits) - 1) } else { (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1) };
        Ok(IInfo { min, max, dtype: PyDtype(d) })
    }

    fn __repr__(&self) -> String {
        format!("iinfo(min={}, max={}, dtype={})", self.min, self.max, self.dtype.0)
    }
}

/// The dtype of a dtype or of an array (`finfo`, `can_cast`, `result_type` take both).
fn dtype_of(ob: &Bound<'_, PyAny>) -> PyResult<Dtype> {
    if let Ok(d) = ob.extract::<PyDtype>() {
        return Ok(d.0);
    }
    if let Ok(a) = ob.cast::<crate::array::PyArray>() {
        return Ok(a.borrow().array().dtype());
    }
    Err(PyTypeError::new_err(format!("expected a dtype or an array, got {}", ob.get_type().name()?)))
}

/// The dtype arrays and dtypes combine to under MLX's promotion rules.
#[pyfunction]
#[pyo3(signature = (*arrays_and_dtypes))]
fn result_type(arrays_and_dtypes: &Bound<'_, PyTuple>) -> PyResult<PyDtype> {
    let mut out: Option<Dtype> = None;
    for ob in arrays_and_dtypes.iter() {
        let d = dtype_of(&ob)?;
        out = Some(out.map_or(d, |o| Dtype::promote(o, d)));
    }
    out.map(PyDtype).ok_or_else(|| PyValueError::new_err("result_type: needs at least one array or dtype"))
}

/// Whether every value of `from_` (a dtype or an array's) is exactly
/// representable in `to`, i.e. promoting the two gives `to`.
#[pyfunction]
#[pyo3(signature = (from_, to))]
fn can_cast(from_: &Bound<'_, PyAny>, to: PyDtype) -> PyResult<bool> {
    let from = dtype_of(from_)?;
    Ok(Dtype::promote(from, to.0) == to.0)
}

/// Whether `dtype` is `kind`: a dtype, one of the array API's kind names
/// (`"bool"`, `"signed integer"`, `"unsigned integer"`, `"integral"`,
/// `"real floating"`, `"complex floating"`, `"numeric"`), or a tuple of them.
#[pyfunction]
fn isdtype(dtype: PyDtype, kind: &Bound<'_, PyAny>) -> PyResult<bool> {
    let d = dtype.0;
    if let Ok(kinds) = kind.cast::<PyTuple>() {
        for k in kinds.iter() {
            if isdtype(dtype, &k)? {
                return Ok(true);
            }
        }
        return Ok(false);
    }
    if let Ok(k) = kind.extract::<PyDtype>() {
        return Ok(k == dtype);
    }
    let name: String = kind.extract()?;
    Ok(match name.as_str() {
        "bool" => d == Dtype::Bool,
        "signed integer" => d.is_integer() && !d.is_unsigned(),
        "unsigned integer" => d.is_unsigned(),
        "integral" => d.is_integer(),
        "real floating" => d.is_float(),
        "complex floating" => d.is_complex(),
        "numeric" => d != Dtype::Bool,
        other => return Err(PyValueError::new_err(format!("isdtype: unknown kind {other:?}"))),
    })
}
