//! [`LinalgOp`]: what a [`Primitive::Linalg`](super::Primitive::Linalg)
//! node computes on each trailing matrix of its input, and how a
//! factorization with several results packs them into one output.
//!
//! A node has one output, so `qr`, `svd`, `eigh` and `lu` write their
//! results one after the other, each matrix's in one row of the output's
//! last axis (shape `batch ++ [row_len]`); `ops::linalg` cuts the row back
//! into the arrays MLX returns. Single-result ops write that result in its
//! own shape. The CPU kernel (`backend/cpu/linalg.rs`) and the ops read the
//! layout from [`LinalgOp::pieces`] only.

/// A factorization, inverse or solve of `[..., m, n]` matrices (float32 or
/// float64), one matrix at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinalgOp {
    /// `inv(a)` of square matrices (an error for a singular one).
    Inv,
    /// The inverse of the lower (upper) triangle of square matrices; the
    /// other triangle of the input is not read and is zero in the output.
    TriInv { upper: bool },
    /// The Cholesky factor `L` (`a = L L^T`; reads the lower triangle), or
    /// `U = L^T` when `upper`. An error when `a` is not positive definite.
    Cholesky { upper: bool },
    /// `solve(a, b)`: inputs `a [..., n, n]` and `b [..., n, k]` with the
    /// same batch; output `[..., n, k]`.
    Solve,
    /// As `Solve` with `a` triangular (only that triangle read).
    SolveTriangular { upper: bool },
    /// `Q [m, k]` then `R [k, n]`, `k = min(m, n)`.
    Qr,
    /// `U [m, m]`, `S [k]` (descending), `Vt [n, n]`; only `S` when not
    /// `compute_uv`.
    Svd { compute_uv: bool },
    /// Eigenvalues `w [n]` (ascending) of a symmetric matrix given by its
    /// lower (upper) triangle, then the eigenvectors `V [n, n]` (columns)
    /// when `vectors`.
    Eigh { upper: bool, vectors: bool },
    /// Partial-pivoting LU: `LU [m, n]` (L's strict lower part, unit
    /// diagonal implied, and U on and above the diagonal), LAPACK's pivots
    /// `[k]` (row `i` was swapped with row `pivots[i]`, in order), and the
    /// rows `P [m]` with `a = L[P] @ U`; pivots and rows as floats (exact:
    /// they are below 2^24 for any matrix that fits in memory as float32).
    Lu,
}

impl LinalgOp {
    /// The shapes of one `m x n` matrix's results, in packing order (`k` is
    /// the columns of a solve's right-hand side).
    pub fn pieces(self, m: usize, n: usize, k: usize) -> Vec<Vec<usize>> {
        let p = m.min(n);
        match self {
            LinalgOp::Inv | LinalgOp::TriInv { .. } | LinalgOp::Cholesky { .. } => vec![vec![m, n]],
            LinalgOp::Solve | LinalgOp::SolveTriangular { .. } => vec![vec![n, k]],
            LinalgOp::Qr => vec![vec![m, p], vec![p, n]],
            LinalgOp::Svd { compute_uv: true } => vec![vec![m, m], vec![p], vec![n, n]],
            LinalgOp::Svd { compute_uv: false } => vec![vec![p]],
            LinalgOp::Eigh { vectors: true, .. } => vec![vec![n], vec![n, n]],
            LinalgOp::Eigh { vectors: false, .. } => vec![vec![n]],
            LinalgOp::Lu => vec![vec![m, n], vec![p], vec![m]],
        }
    }

    /// Elements of one matrix's results, all pieces together.
    pub fn row_len(self, m: usize, n: usize, k: usize) -> usize {
        self.pieces(m, n, k).iter().map(|s| s.iter().product::<usize>()).sum()
    }

    /// The op's name in messages (`linalg::qr`, ...).
    pub fn name(self) -> &'static str {
        match self {
            LinalgOp::Inv => "inv",
            LinalgOp::TriInv { .. } => "tri_inv",
            LinalgOp::Cholesky { .. } => "cholesky",
            LinalgOp::Solve => "solve",
            LinalgOp::SolveTriangular { .. } => "solve_triangular",
            LinalgOp::Qr => "qr",
            LinalgOp::Svd { .. } => "svd",
            LinalgOp::Eigh { .. } => "eigh",
            LinalgOp::Lu => "lu",
        }
    }
}
