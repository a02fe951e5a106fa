//! An f16 matrix applied to query vectors: `out = M·x` for one vector or
//! a group. The laser search maps each query through the codes' matrix and
//! scans the cluster entries with it, both at the start of every query.
//!
//! Where the process has AMX ([`crate::amx::active`]), the matrix is held
//! as AMX tiles (the same f16 values, split exactly into bf16 pairs) and
//! every product runs on them; elsewhere it is held as f16 bytes and runs
//! on [`crate::matmat_f16`]. Either way one vector's answer is the same
//! bits alone or in a group, so a search gives the same answers whether
//! its queries were grouped or not. Answers of the two holdings differ in
//! rounding only (both are within 2^-14 of `Σ|m_i x_i|` of the exact
//! product; the tests check it).

use crate::amx::{self, Tiles};

/// Value `i` of little-endian f16 bytes, widened.
fn f16_at(bytes: &[u8], i: usize) -> f32 {
    crate::half::f16_to_f32(u16::from_le_bytes([bytes[2 * i], bytes[2 * i + 1]]))
}

pub struct F16Matrix {
    rows: usize,
    n: usize,
    held: Held,
}

enum Held {
    /// Little-endian f16, row-major.
    F16(Vec<u8>),
    Tiles(Tiles),
}

impl F16Matrix {
    /// From `rows × n` f16 values (little-endian bytes, row-major), held as
    /// this process computes fastest. Panics unless `bytes` holds whole
    /// rows of `n ≥ 1` values.
    pub fn from_f16_bytes(bytes: Vec<u8>, n: usize) -> F16Matrix {
        F16Matrix::hold(bytes, n, amx::active())
    }

    /// As [`Self::from_f16_bytes`], on the f16 kernels whatever the CPU
    /// (tests compare the two holdings).
    pub fn from_f16_bytes_without_amx(bytes: Vec<u8>, n: usize) -> F16Matrix {
        F16Matrix::hold(bytes, n, false)
    }

    fn hold(bytes: Vec<u8>, n: usize, tiles: bool) -> F16Matrix {
        assert!(
            n > 0 && bytes.len().is_multiple_of(2 * n),
            "f16 matrix: {} bytes are not whole rows of {n} f16 values",
            bytes.len()
        );
        let rows = bytes.len() / (2 * n);
        let held = match tiles {
            true => Held::Tiles(Tiles::new(|r, d| f16_at(&bytes, r * n + d), rows, n)),
            false => Held::F16(bytes),
        };
        F16Matrix { rows, n, held }
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Values a row (the vectors' length).
    pub fn cols(&self) -> usize {
        self.n
    }

    /// Whether the products run on AMX tiles.
    pub fn on_amx(&self) -> bool {
        matches!(self.held, Held::Tiles(_))
    }

    /// Element (r, d) widened to f32.
    pub fn get(&self, r: usize, d: usize) -> f32 {
        assert!(
            r < self.rows && d < self.n,
            "f16 matrix: ({r}, {d}) out of range"
        );
        match &self.held {
            Held::F16(b) => f16_at(b, r * self.n + d),
            Held::Tiles(t) => t.get(r, d),
        }
    }

    /// Bytes held in RAM.
    pub fn resident_bytes(&self) -> usize {
        match &self.held {
            Held::F16(b) => b.len(),
            Held::Tiles(t) => t.bytes(),
        }
    }

    /// `out = M·x`. Panics unless `x` has `cols()` floats and `out` `rows()`.
    pub fn apply(&self, x: &[f32], out: &mut [f32]) {
        assert_eq!(
            x.len(),
            self.n,
            "f16 matrix: the vector must be cols() wide"
        );
        self.apply_many(x, out);
    }

    /// `out_j = M·x_j` for each vector of `cols()` floats in `xs`
    /// (row-major), `rows()` answers a vector; each vector's answers are
    /// those [`Self::apply`] gives it, bit for bit. Panics unless the
    /// shapes agree.
    pub fn apply_many(&self, xs: &[f32], out: &mut [f32]) {
        match &self.held {
            Held::F16(b) => crate::matmat_f16(b, xs, self.n, out),
            Held::Tiles(t) => t.apply(xs, out),
        }
    }
}
