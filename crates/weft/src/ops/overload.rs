//! Rust operators on `&Array`: `&a + &b` is `ops::add(&a, &b)`, returning a
//! `Result` as every op does.

use crate::{Array, Result};
use std::ops::{Add, Div, Mul, Neg, Sub};

macro_rules! binop {
    ($tr:ident, $m:ident, $f:path) => {
        impl $tr<&Array> for &Array {
            type Output = Result<Array>;
            fn $m(self, rhs: &Array) -> Result<Array> {
                $f(self, rhs)
            }
        }
        impl $tr<Array> for Array {
            type Output = Result<Array>;
            fn $m(self, rhs: Array) -> Result<Array> {
                $f(&self, &rhs)
            }
        }
    };
}

binop!(Add, add, super::add);
binop!(Sub, sub, super::subtract);
binop!(Mul, mul, super::multiply);
binop!(Div, div, super::divide);

impl Neg for &Array {
    type Output = Result<Array>;
    fn neg(self) -> Result<Array> {
        super::negative(self)
    }
}
