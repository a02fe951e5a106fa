//! A matrix held in i8 and applied to f32 vectors through 7-bit integers:
//! `out ≈ M·x`, for a product whose answer is quantized further anyway
//! (the laser query's map, whose image becomes u8 fast-scan tables).
//!
//! Each row keeps its own step (`max |row| / 127`), each vector gets one
//! (`max |x| / 63`, so its values shifted by 64 lie in `1..=127`, the range
//! [`crate::matmat_i8`] sums exactly), and the integer product is shifted
//! back with the row's sum: `M·x ≈ s_r·s_x·(Σ m·(q + 64) − 64·Σ m)`.
//!
//! How far off: rounding each matrix value moves the answer by at most
//! `s_r/2 · ‖x‖₁`, rounding the vector by at most `s_x/2 · s_r·‖m_r‖₁`
//! ([`I8Matrix::error_bound`]). At 768-d both are about 1–2% of a
//! coordinate of the image in size, and they fall on the map's image
//! like noise, in every direction about equally; RaBitQ's own estimator
//! has an error of ~1/√D of the inner product (3.8% at 696-d), so this
//! adds a few hundredths of its variance (the laser search's recall is
//! checked with it in `stratavec`'s tests, and on wordnet-mpnet in
//! BENCHMARKS.md).
//!
//! A vector's answers do not depend on the vectors grouped with it: its
//! step is its own and the integer sums are exact.

pub struct I8Matrix {
    rows: usize,
    n: usize,
    /// Row-major, each row `round(v / step)` in `-127..=127`.
    values: Vec<i8>,
    /// Each row's step.
    steps: Vec<f32>,
    /// Each row's sum of `values`, for the vector's shift by 64.
    sums: Vec<i32>,
    /// Each row's `Σ |held value|` (its i8 values' sizes times its step).
    held_l1: Vec<f32>,
}

/// What a vector's values are shifted by to make them unsigned.
const SHIFT: i32 = 64;
/// Largest size of a vector's quantized value (7 bits with the shift).
const VECTOR_LEVELS: f32 = 63.0;

impl I8Matrix {
    /// From `rows × n` f32 values, row-major. Panics unless `values` holds
    /// whole rows of `n ≥ 1` values, all finite.
    pub fn quantize(values: &[f32], n: usize) -> I8Matrix {
        assert!(
            n > 0 && values.len().is_multiple_of(n),
            "i8 matrix: {} values are not whole rows of {n}",
            values.len()
        );
        assert!(
            values.iter().all(|v| v.is_finite()),
            "i8 matrix: the values must be finite"
        );
        let rows = values.len() / n;
        let mut out = I8Matrix {
            rows,
            n,
            values: Vec::with_capacity(values.len()),
            steps: Vec::with_capacity(rows),
            sums: Vec::with_capacity(rows),
            held_l1: Vec::with_capacity(rows),
        };
        for row in values.chunks_exact(n) {
            let top = row.iter().fold(0f32, |a, v| a.max(v.abs()));
            let step = top / 127.0;
            let inv = if top > 0.0 { 127.0 / top } else { 0.0 };
            let start = out.values.len();
            out.values.extend(
                row.iter()
                    .map(|v| (v * inv).round().clamp(-127.0, 127.0) as i8),
            );
            let held = &out.values[start..];
            out.sums.push(held.iter().map(|&v| i32::from(v)).sum());
            let l1: i32 = held.iter().map(|&v| i32::from(v).abs()).sum();
            out.held_l1.push(l1 as f32 * step);
            out.steps.push(step);
        }
        out
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Values a row (the vectors' length).
    pub fn cols(&self) -> usize {
        self.n
    }

    /// Element (r, d) as held: its i8 value times the row's step.
    pub fn get(&self, r: usize, d: usize) -> f32 {
        assert!(
            r < self.rows && d < self.n,
            "i8 matrix: ({r}, {d}) out of range"
        );
        f32::from(self.values[r * self.n + d]) * self.steps[r]
    }

    /// The most row `r`'s answer for `x` may differ from the exact product
    /// of the held values ([`Self::get`]) with `x`: rounding `x` to its
    /// step `s_x` moves each term by at most `s_x/2` times the held value.
    /// (The held values are within `step/2` of the originals, which moves
    /// the answer by at most `step/2 · ‖x‖₁` more.)
    pub fn error_bound(&self, r: usize, x: &[f32]) -> f32 {
        0.5 * Self::vector_step(x) * self.held_l1[r]
    }

    /// The most row `r`'s answer for a vector may differ from the product
    /// of the values the matrix was made from, given the vector's step
    /// ([`Self::vector_step`]) and `‖x‖₁`: [`Self::error_bound`] plus
    /// half the row's step times `‖x‖₁`. O(1) a row, for a scan that
    /// bounds every row.
    pub fn source_error_bound(&self, r: usize, x_step: f32, x_l1: f32) -> f32 {
        0.5 * (x_step * self.held_l1[r] + self.steps[r] * x_l1)
    }

    /// The step a vector is rounded to: `max |x| / 63`.
    pub fn vector_step(x: &[f32]) -> f32 {
        x.iter().fold(0f32, |a, v| a.max(v.abs())) / VECTOR_LEVELS
    }

    /// Bytes held in RAM.
    pub fn resident_bytes(&self) -> usize {
        self.values.len() + 4 * (self.steps.len() + self.sums.len() + self.held_l1.len())
    }

    /// `out_j ≈ M·x_j` for each vector of `cols()` floats in `xs`
    /// (row-major), `rows()` answers a vector. Panics unless the shapes
    /// agree.
    pub fn apply_many(&self, xs: &[f32], out: &mut [f32]) {
        let (n, rows) = (self.n, self.rows);
        assert_eq!(xs.len() % n, 0, "i8 matrix: xs must hold whole vectors");
        let vectors = xs.len() / n;
        assert_eq!(
            out.len(),
            vectors * rows,
            "i8 matrix: out must hold rows() answers a vector"
        );
        let mut codes = vec![0u8; xs.len()];
        let mut steps = Vec::with_capacity(vectors);
        for (x, c) in xs.chunks_exact(n).zip(codes.chunks_exact_mut(n)) {
            let top = x.iter().fold(0f32, |a, v| a.max(v.abs()));
            let inv = if top > 0.0 { VECTOR_LEVELS / top } else { 0.0 };
            for (c, v) in c.iter_mut().zip(x) {
                // Round half up by truncating a positive number (`round`
                // is a libm call a value on x86-64's baseline; this
                // vectorises). A NaN casts to 0, a value of -64: finite
                // garbage rather than poisoned integers.
                let q = (v * inv).clamp(-VECTOR_LEVELS, VECTOR_LEVELS) + (SHIFT as f32 + 0.5);
                *c = q as i32 as u8;
            }
            steps.push(top / VECTOR_LEVELS); // = Self::vector_step(x)
        }
        let mut ints = vec![0i32; vectors * rows];
        crate::matmat_u8i8(&self.values, &codes, n, &mut ints);
        for ((o, i), &s_x) in out
            .chunks_exact_mut(rows.max(1))
            .zip(ints.chunks_exact(rows.max(1)))
            .zip(&steps)
        {
            for (((o, &i), &s_r), &sum) in o.iter_mut().zip(i).zip(&self.steps).zip(&self.sums) {
                *o = (i - SHIFT * sum) as f32 * (s_r * s_x);
            }
        }
    }

    /// `out ≈ M·x` for one vector: [`Self::apply_many`] of one.
    pub fn apply(&self, x: &[f32], out: &mut [f32]) {
        assert_eq!(x.len(), self.n, "i8 matrix: the vector must be cols() wide");
        self.apply_many(x, out);
    }
}
