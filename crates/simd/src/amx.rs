//! Intel AMX tiles (Sapphire Rapids and later) for an f16 matrix applied to
//! up to 16 f32 vectors at once: the product a laser query starts with
//! (the codes' 696 × 768 map at 768-d).
//!
//! Why: on AVX-512 those products stream and convert every f16 of the
//! matrix for each group of vectors and ran at ~30 G multiply-adds a second
//! here (~16 µs a query for the map alone, ~20% of a laser search's CPU
//! through RAM). One `tdpbf16ps` does a 16 × 32 × 16 block.
//!
//! Precision: AMX multiplies bf16 (8 significant bits) and sums in f32.
//! The tiles hold each f16 of the matrix rounded to bf16 (within 2^-8 of
//! it), and each vector element split exactly into `hi + lo`, both bf16
//! (to 2^-16); the product is `m·x_hi + m·x_lo`. So an answer is within
//! 2^-8 of `Σ|m_i x_i|` of the f16 matrix's product, and, products being
//! linear, a difference of two answers is the bf16 matrix's product of
//! the difference (the laser map subtracts the mean's image, so the
//! query's offset from the mean is what the rounding scales with). That
//! is enough where the answers are quantized further, as the map's image
//! is into u8 tables (steps of ~2^-8 of their range); where they are not,
//! the f16 kernels keep them to 2^-14 (the cluster entries' L2 distances
//! subtract two large terms, so the cluster scan stays on them).
//!
//! Why not exact: split into bf16 `hi + lo` pairs as the vector is, the
//! matrix gave the f16 product to ~2^-15, but its tiles were twice as
//! large (2.1 MB for the 696 × 768 map), and the pass is bound by
//! streaming them, not by the tile products. Measured with
//! `examples/f16_matrix_time.rs` (the map and the cluster entries as one
//! 1038 × 768 matrix): a lone vector took 116 µs with the pairs, 39 µs in
//! bf16 and 52 µs on the f16 kernels with the matrix in cache (158, 95
//! and 120 µs out of it); in groups of 8, 17.5, 8.7 and 26 µs a vector.

//! The tiles are the process's once Linux has granted them
//! (`arch_prctl(ARCH_REQ_XCOMP_PERM)`); where the CPU lacks AMX, the
//! kernel refuses it, the dispatch is forced below AVX-512, or
//! `STRATAVEC_AMX=off`, [`crate::F16Matrix`] keeps the f16 kernels.

use std::sync::OnceLock;

/// Columns (outputs) of a B tile and rows of f32 in a C tile.
const COLS: usize = 16;
/// Matrix elements a tile step covers along a row (16 pairs of bf16).
const DEPTH: usize = 32;
/// Vectors a pass takes: a tile has at most 16 rows.
pub(crate) const VECTORS: usize = 16;

/// Whether AMX is used in this process.
pub fn active() -> bool {
    static ACTIVE: OnceLock<bool> = OnceLock::new();
    *ACTIVE.get_or_init(|| {
        let off = std::env::var("STRATAVEC_AMX").is_ok_and(|v| v.trim() == "off");
        !off && crate::dispatch::active().level == crate::Level::Avx512 && cpu_has() && granted()
    })
}

#[cfg(target_arch = "x86_64")]
fn cpu_has() -> bool {
    // CPUID leaf 7, sub-leaf 0, EDX: bit 22 AMX-BF16, bit 24 AMX-TILE.
    let r = core::arch::x86_64::__cpuid_count(7, 0);
    r.edx & (1 << 22) != 0 && r.edx & (1 << 24) != 0
}

#[cfg(not(target_arch = "x86_64"))]
fn cpu_has() -> bool {
    false
}

/// Asks Linux for the tile data state (off until a process asks, since
/// 5.16); refused (an older kernel, a small signal stack), no AMX.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn granted() -> bool {
    const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
    const XFEATURE_XTILEDATA: libc::c_long = 18;
    // SAFETY: arch_prctl with this request only changes which XSAVE
    // features the process may use; it reads and writes no memory.
    unsafe {
        libc::syscall(
            libc::SYS_arch_prctl,
            ARCH_REQ_XCOMP_PERM,
            XFEATURE_XTILEDATA,
        ) == 0
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn granted() -> bool {
    false
}

/// bf16 of `x`, rounded to nearest even (the inputs are finite).
fn bf16(x: f32) -> u16 {
    let b = x.to_bits();
    ((b + 0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

fn widen(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

/// `x` as `hi + lo`, both bf16: exact for an f16 value, and to 2^-16 of
/// `x` for an f32.
fn split(x: f32) -> (u16, u16) {
    let hi = bf16(x);
    (hi, bf16(x - widen(hi)))
}

/// A matrix in bf16 as AMX B tiles: for each block of 16 rows and each
/// step of 32 columns, 16 tile rows of 64 bytes, tile row `k` holding
/// elements `2k` and `2k + 1` of each of the 16 matrix rows (the VNNI
/// pairing `tdpbf16ps` reads). Padding is zeros.
pub(crate) struct Tiles {
    rows: usize,
    n: usize,
    steps: usize,
    values: Vec<u16>,
}

impl Tiles {
    /// From `rows` rows of `n` values, each rounded to bf16.
    pub(crate) fn new(value: impl Fn(usize, usize) -> f32, rows: usize, n: usize) -> Tiles {
        let (blocks, steps) = (rows.div_ceil(COLS), n.div_ceil(DEPTH));
        let mut values = vec![0u16; blocks * steps * COLS * DEPTH];
        for r in 0..rows {
            for d in 0..n {
                values[Tiles::at(steps, r, d)] = bf16(value(r, d));
            }
        }
        Tiles {
            rows,
            n,
            steps,
            values,
        }
    }

    /// Where element (r, d) lies in `values`: in block r / 16, step
    /// d / 32, tile row (d % 32) / 2, pair r % 16, half d % 2.
    fn at(steps: usize, r: usize, d: usize) -> usize {
        let (b, c, s, e) = (r / COLS, r % COLS, d / DEPTH, d % DEPTH);
        ((b * steps + s) * COLS + e / 2) * DEPTH + 2 * c + e % 2
    }

    /// Element (r, d), as the tiles hold it (in bf16).
    #[cfg(test)]
    fn get(&self, r: usize, d: usize) -> f32 {
        widen(self.values[Tiles::at(self.steps, r, d)])
    }

    pub(crate) fn bytes(&self) -> usize {
        2 * self.values.len()
    }

    /// `out_j = M·x_j` for the vectors of `xs` (`n` floats each), `rows`
    /// answers a vector into `out`.
    pub(crate) fn apply(&self, xs: &[f32], out: &mut [f32]) {
        assert!(active(), "amx: tiles used without AMX granted");
        let (n, rows) = (self.n, self.rows);
        assert!(
            xs.len().is_multiple_of(n) && out.len() == xs.len() / n * rows,
            "amx: {} floats are not whole vectors of {n} with {rows} answers each in {}",
            xs.len(),
            out.len()
        );
        let width = self.steps * DEPTH;
        thread_local! {
            static SPLIT: std::cell::RefCell<Vec<u16>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        SPLIT.with_borrow_mut(|a| {
            for (group, answers) in xs.chunks(VECTORS * n).zip(out.chunks_mut(VECTORS * rows)) {
                let q = group.len() / n;
                // The group's hi parts (q rows of `width`), then its lo parts.
                a.clear();
                a.resize(2 * q * width, 0);
                for (j, x) in group.chunks_exact(n).enumerate() {
                    for (d, &v) in x.iter().enumerate() {
                        (a[j * width + d], a[(q + j) * width + d]) = split(v);
                    }
                }
                // SAFETY: `active()` holds (the CPU has AMX-TILE and
                // AMX-BF16 and Linux granted the tile state); the buffers
                // have the shapes `pass` reads and writes.
                unsafe { self.pass(a, q, answers) };
            }
        });
    }

    /// One group of `q` ≤ 16 vectors, split in `a`.
    ///
    /// # Safety
    /// AMX must be usable (see [`active`]); `a` holds `2 q` rows of
    /// `steps · 32` bf16 and `out` `q · rows` floats.
    #[cfg(target_arch = "x86_64")]
    unsafe fn pass(&self, a: &[u16], q: usize, out: &mut [f32]) {
        use std::arch::asm;
        let (steps, rows) = (self.steps, self.rows);
        let blocks = rows.div_ceil(COLS);
        let width = steps * DEPTH;
        assert!((1..=VECTORS).contains(&q) && a.len() == 2 * q * width && out.len() == q * rows);
        // Palette 1: C tiles 0 and 1 (q rows of 16 f32), A tiles 2 and 3
        // (q rows of 32 bf16: the vectors' hi and lo parts), B tiles 4 and
        // 5 (16 rows of 16 bf16 pairs: two blocks of the matrix).
        #[repr(C, align(64))]
        struct Config([u8; 64]);
        let mut cfg = Config([0; 64]);
        cfg.0[0] = 1;
        for t in 0..6 {
            cfg.0[16 + 2 * t] = 64;
            cfg.0[48 + t] = if t >= 4 { 16 } else { q as u8 };
        }
        let mut c = [0f32; 2 * VECTORS * COLS];
        let tile = COLS * DEPTH;
        let (ahi, alo) = (a.as_ptr(), a[q * width..].as_ptr());
        // SAFETY: the configuration is valid (checked shapes above); every
        // tile load reads 64 bytes from each of its rows, inside `a` (rows
        // of `width` ≥ 32 · (s + 1) elements) or inside one tile of
        // `self.values`; the stores write 16 rows of 64 bytes into
        // `c`. Tiles are released before returning.
        unsafe {
            asm!("ldtilecfg [{}]", in(reg) cfg.0.as_ptr(), options(nostack));
            for b in (0..blocks).step_by(2) {
                // An odd last block is computed twice; its second copy is
                // not read back.
                let b1 = (b + 1).min(blocks - 1);
                asm!("tilezero tmm0", "tilezero tmm1", options(nostack, nomem));
                for s in 0..steps {
                    let (t0, t1) = ((b * steps + s) * tile, (b1 * steps + s) * tile);
                    asm!(
                        "tileloadd tmm2, [{ah} + {sa}*1]",
                        "tileloadd tmm3, [{al} + {sa}*1]",
                        "tileloadd tmm4, [{m0} + {sb}*1]",
                        "tileloadd tmm5, [{m1} + {sb}*1]",
                        "tdpbf16ps tmm0, tmm2, tmm4",
                        "tdpbf16ps tmm1, tmm2, tmm5",
                        "tdpbf16ps tmm0, tmm3, tmm4",
                        "tdpbf16ps tmm1, tmm3, tmm5",
                        ah = in(reg) ahi.add(s * DEPTH),
                        al = in(reg) alo.add(s * DEPTH),
                        sa = in(reg) 2 * width,
                        m0 = in(reg) self.values.as_ptr().add(t0),
                        m1 = in(reg) self.values.as_ptr().add(t1),
                        sb = in(reg) 2 * DEPTH,
                        options(nostack, readonly),
                    );
                }
                asm!(
                    "tilestored [{c0} + {s}*1], tmm0",
                    "tilestored [{c1} + {s}*1], tmm1",
                    c0 = in(reg) c.as_mut_ptr(),
                    c1 = in(reg) c.as_mut_ptr().add(VECTORS * COLS),
                    s = in(reg) 4 * COLS,
                    options(nostack),
                );
                for (half, block) in [(0, b), (1, b + 1)] {
                    if block >= blocks {
                        continue;
                    }
                    let cols = (rows - block * COLS).min(COLS);
                    for j in 0..q {
                        let from = (half * VECTORS + j) * COLS;
                        out[j * rows + block * COLS..][..cols].copy_from_slice(&c[from..][..cols]);
                    }
                }
            }
            asm!("tilerelease", options(nostack, nomem));
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    unsafe fn pass(&self, _: &[u16], _: usize, _: &mut [f32]) {
        unreachable!("amx: tiles used without AMX");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_f16_value_splits_exactly_and_an_f32_to_16_bits() {
        for bits in (0u16..0x7c00).step_by(7) {
            let v = crate::half::f16_to_f32(bits);
            let (h, l) = split(v);
            assert_eq!(widen(h) + widen(l), v, "f16 bits {bits:#x}");
        }
        for i in 1..1000 {
            let v = (i as f32).sqrt() * 0.37 - 3.0;
            let (h, l) = split(v);
            assert!((widen(h) + widen(l) - v).abs() <= v.abs() * 2f32.powi(-16));
        }
    }

    /// Each element lands in its place, rounded to the nearest bf16.
    #[test]
    fn tiles_hold_the_matrix_in_bf16() {
        let (rows, n) = (37, 70);
        let f = |r: usize, d: usize| crate::half::f16_to_f32(((r * 131 + d * 7) % 0x7bff) as u16);
        let t = Tiles::new(f, rows, n);
        for r in 0..rows {
            for d in 0..n {
                let (got, want) = (t.get(r, d), f(r, d));
                assert_eq!(got, widen(bf16(want)));
                assert!(
                    (got - want).abs() <= want.abs() * 2f32.powi(-8),
                    "{got} vs {want}"
                );
            }
        }
    }
}
