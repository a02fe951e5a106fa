//! An f16 matrix applied to query vectors: `out = M·x` for one vector or
//! a group. The laser search maps each query through the codes' matrix and
//! scans the cluster entries with it, both at the start of every query.
//!
//! The matrix is held as f16 bytes and its products run on
//! [`crate::matmat_f16`], within 2^-14 of `Σ|m_i x_i|` of the exact
//! product of the f16 values. A caller whose answers are quantized further
//! (the laser query's map, whose image becomes u8 tables) may ask for
//! [`F16Matrix::from_f16_bytes_on_tiles`]: where the process has AMX
//! ([`crate::amx::active`]) the products then run on tiles holding the
//! matrix in bf16, within 2^-8 (see [`crate::amx`] for why that is enough
//! and faster at every group size). Either way one vector's answer is the
//! same bits alone or in a group, so a search gives the same answers
//! whether its queries were grouped or not, and [`F16Matrix::get`] gives
//! the f16 values, so what an index writes from them does not depend on
//! the CPU.

use crate::amx::{self, Tiles};

/// Value `i` of little-endian f16 bytes, widened.
fn f16_at(bytes: &[u8], i: usize) -> f32 {
    crate::half::f16_to_f32(u16::from_le_bytes([bytes[2 * i], bytes[2 * i + 1]]))
}

pub struct F16Matrix {
    rows: usize,
    n: usize,
    /// Little-endian f16, row-major.
    f16: Vec<u8>,
    /// The products' holding where the process has AMX.
    tiles: Option<Tiles>,
}

impl F16Matrix {
    /// From `rows × n` f16 values (little-endian bytes, row-major), the
    /// products on the f16 kernels. Panics unless `bytes` holds whole rows
    /// of `n ≥ 1` values.
    pub fn from_f16_bytes(bytes: Vec<u8>, n: usize) -> F16Matrix {
        F16Matrix::hold(bytes, n, false)
    }

    /// As [`Self::from_f16_bytes`], the products on AMX tiles (the matrix
    /// in bf16, answers within 2^-8 of `Σ|m_i x_i|`) where the process has
    /// them; the tiles take as many bytes again as the f16 values.
    pub fn from_f16_bytes_on_tiles(bytes: Vec<u8>, n: usize) -> F16Matrix {
        F16Matrix::hold(bytes, n, amx::active())
    }

    fn hold(bytes: Vec<u8>, n: usize, tiles: bool) -> F16Matrix {
        assert!(
            n > 0 && bytes.len().is_multiple_of(2 * n),
            "f16 matrix: {} bytes are not whole rows of {n} f16 values",
            bytes.len()
        );
        let rows = bytes.len() / (2 * n);
        let tiles = tiles.then(|| Tiles::new(|r, d| f16_at(&bytes, r * n + d), rows, n));
        F16Matrix {
            rows,
            n,
            f16: bytes,
            tiles,
        }
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
        self.tiles.is_some()
    }

    /// Element (r, d) widened to f32 (the f16 value, whatever the holding).
    pub fn get(&self, r: usize, d: usize) -> f32 {
        assert!(
            r < self.rows && d < self.n,
            "f16 matrix: ({r}, {d}) out of range"
        );
        f16_at(&self.f16, r * self.n + d)
    }

    /// Row `r`'s f16 values (little-endian bytes), for the distance
    /// kernels (`l2_sq_f16`, `dot_f16`).
    pub fn row(&self, r: usize) -> &[u8] {
        assert!(r < self.rows, "f16 matrix: row {r} out of range");
        &self.f16[2 * r * self.n..2 * (r + 1) * self.n]
    }

    /// How far an answer may be from the exact product of the f16 values,
    /// as a fraction of `Σ|m_i x_i|` (at most the row's norm times the
    /// vector's): 2^-14 on the f16 kernels, 2^-8 + 2^-14 on the tiles.
    pub fn error_bound(&self) -> f32 {
        match self.tiles {
            Some(_) => 2f32.powi(-8) + 2f32.powi(-14),
            None => 2f32.powi(-14),
        }
    }

    /// Bytes held in RAM: the f16 values, and the tiles where there are.
    pub fn resident_bytes(&self) -> usize {
        self.f16.len() + self.tiles.as_ref().map_or(0, Tiles::bytes)
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
        match &self.tiles {
            Some(t) => t.apply(xs, out),
            None => crate::matmat_f16(&self.f16, xs, self.n, out),
        }
    }
}
