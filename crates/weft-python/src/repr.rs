//! `repr(a)`: `array([[1, 2],\n       [3, 4]], dtype=int32)`, as MLX and
//! NumPy print arrays; long axes are summarized with `...`.

use crate::convert::{read, with_dtype};
use pyo3::prelude::*;
use weft::dtype::Element;
use weft::{Array, Dtype};

/// Arrays with more elements than this show only their edges.
const SUMMARIZE_OVER: usize = 1000;
/// Elements shown at each end of a summarized axis.
const EDGE: usize = 3;

fn element<T: Element>(v: T, dtype: Dtype) -> String {
    if let Some(z) = (&v as &dyn std::any::Any).downcast_ref::<weft::Complex64>() {
        let (re, im) = (element(z.re(), Dtype::F32), element(z.im().abs(), Dtype::F32));
        let sign = if z.im() < 0.0 || (z.im() == 0.0 && z.im().is_sign_negative()) { '-' } else { '+' };
        return format!("{re}{sign}{im}j");
    }
    if dtype == Dtype::Bool {
        return if v.to_i64() != 0 { "True" } else { "False" }.into();
    }
    if !dtype.is_float() {
        return v.to_i64().to_string();
    }
    let f = v.to_f64();
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    // The shortest text that reads back as the same element.
    let s = match dtype {
        Dtype::F64 => format!("{f:?}"),
        Dtype::F32 => format!("{:?}", f as f32),
        _ => (0..8)
            .map(|p| format!("{f:.p$e}").parse::<f64>().unwrap_or(f))
            .find(|&g| T::from_f64(g).to_f64() == f)
            .map_or_else(|| format!("{f:?}"), |g| format!("{g:?}")),
    };
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

fn nest(out: &mut String, items: &[String], shape: &[usize], indent: usize, summarize: bool) {
    let Some((&n, rest)) = shape.split_first() else {
        out.push_str(&items[0]);
        return;
    };
    let step: usize = rest.iter().product();
    let shown: Vec<Option<usize>> = if summarize && n > 2 * EDGE {
        (0..EDGE).map(Some).chain([None]).chain((n - EDGE..n).map(Some)).collect()
    } else {
        (0..n).map(Some).collect()
    };
    out.push('[');
    for (k, i) in shown.iter().enumerate() {
        if k > 0 {
            if rest.is_empty() {
                out.push_str(", ");
            } else {
                out.push(',');
                out.push_str(&"\n".repeat(rest.len()));
                out.push_str(&" ".repeat(indent + 1));
            }
        }
        match i {
            Some(i) => nest(out, &items[i * step..(i + 1) * step], rest, indent + 1, summarize),
            None => out.push_str("..."),
        }
    }
    out.push(']');
}

pub fn repr(py: Python<'_>, a: &Array) -> PyResult<String> {
    let dtype = a.dtype();
    let items: Vec<String> = with_dtype!(dtype, T => read::<T>(py, a)?.into_iter().map(|v| element(v, dtype)).collect());
    let mut out = String::from("array(");
    nest(&mut out, &items, a.shape(), "array(".len(), a.size() > SUMMARIZE_OVER);
    out.push_str(&format!(", dtype={})", dtype.name()));
    Ok(out)
}
