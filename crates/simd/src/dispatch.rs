//! Picks one kernel set per process and hands out per-level tables.
//!
//! Detection runs once (first call of any public kernel); after that a call
//! costs one already-initialised `OnceLock` load and an indirect call.

use std::sync::OnceLock;

/// An instruction-set level, ordered from narrowest to widest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Plain Rust, any CPU.
    Scalar,
    /// AVX2 with FMA and F16C (every AVX2 CPU has F16C).
    Avx2,
    /// AVX-512 F + BW + VL (and AVX2 + FMA, which every such CPU has).
    Avx512,
}

impl Level {
    /// Every level, narrowest first.
    pub const ALL: [Level; 3] = [Level::Scalar, Level::Avx2, Level::Avx512];

    /// The name used by `kernel_name` and by `STRATAVEC_SIMD`.
    pub fn name(self) -> &'static str {
        match self {
            Level::Scalar => "scalar",
            Level::Avx2 => "avx2+fma",
            Level::Avx512 => "avx512",
        }
    }

    /// Whether this CPU can run the level's kernels.
    pub fn is_supported(self) -> bool {
        match self {
            Level::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Level::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                    && std::arch::is_x86_feature_detected!("f16c")
            }
            #[cfg(target_arch = "x86_64")]
            Level::Avx512 => {
                Level::Avx2.is_supported()
                    && std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("avx512vl")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// The widest level this CPU supports.
    pub fn best() -> Level {
        Level::ALL
            .into_iter()
            .rev()
            .find(|l| l.is_supported())
            .unwrap_or(Level::Scalar)
    }

    /// This level's kernels, or `None` if the CPU lacks its instructions.
    /// Benchmarks and tests use this to run a level other than the active one.
    pub fn kernels(self) -> Option<&'static Kernels> {
        if !self.is_supported() {
            return None;
        }
        match self {
            Level::Scalar => Some(&crate::scalar::KERNELS),
            #[cfg(target_arch = "x86_64")]
            Level::Avx2 => Some(&crate::avx2::KERNELS),
            #[cfg(target_arch = "x86_64")]
            Level::Avx512 => Some(&crate::avx512::KERNELS),
            #[cfg(not(target_arch = "x86_64"))]
            _ => None,
        }
    }

    fn parse(s: &str) -> Option<Level> {
        match s.trim().to_ascii_lowercase().as_str() {
            "scalar" => Some(Level::Scalar),
            "avx2" | "avx2+fma" => Some(Level::Avx2),
            "avx512" | "avx-512" => Some(Level::Avx512),
            _ => None,
        }
    }
}

/// One level's kernels as safe function pointers; semantics (and panics on
/// mismatched lengths) are those of the crate-level functions of the same name.
#[derive(Debug)]
pub struct Kernels {
    pub level: Level,
    pub l2_sq_f32: fn(&[f32], &[f32]) -> f32,
    pub dot_f32: fn(&[f32], &[f32]) -> f32,
    pub norm_sq_f32: fn(&[f32]) -> f32,
    pub l2_sq_u8: fn(&[u8], &[u8]) -> f32,
    pub l2_sq_i8: fn(&[i8], &[i8]) -> f32,
    pub pq_adc: fn(&[f32], &[u8]) -> f32,
    pub pq_adc_batch: fn(&[f32], &[u8], usize, &mut [f32]),
    pub l2_sq_transposed: fn(&[f32], &[f32], &mut [f32]),
    pub nearest_transposed: fn(&[f32], &[f32], &mut [f32]) -> usize,
    pub quantize_u16: fn(&[f32], &mut [u16]) -> (f32, f32),
    pub pq_adc_rows_u16: RowsU16,
    /// f32 query against a stored f16 vector (2 bytes per element).
    pub l2_sq_f16: fn(&[f32], &[u8]) -> f32,
    pub dot_f16: fn(&[f32], &[u8]) -> f32,
    /// `out = M·x` for an f16 matrix of `out.len()` rows of `x.len()`.
    pub matvec_f16: fn(&[u8], &[f32], &mut [f32]),
    /// `matvec_f16` of several vectors of `n` at once, equal to it exactly.
    pub matmat_f16: fn(&[u8], &[f32], usize, &mut [f32]),
    /// An i8 matrix against u8 vectors of `n` (values ≤ 127), exact i32.
    pub matmat_u8i8: fn(&[i8], &[u8], usize, &mut [i32]),
    /// 4-bit fast-scan lookups of a packed group of 32 vectors.
    pub fastscan_group: crate::fastscan::FastScanFn,
    /// A query's fast-scan tables as bytes.
    pub fastscan_quantize: crate::fastscan::QuantizeFn,
}

/// `pq_adc_rows_u16(table, codes, m, ids, out)`.
pub type RowsU16 = fn(&[u16], &[u8], usize, &[u32], &mut [u32]);

struct Active {
    kernels: &'static Kernels,
    name: &'static str,
}

static ACTIVE: OnceLock<Active> = OnceLock::new();

/// The kernel set chosen for this process.
#[inline]
pub(crate) fn active() -> &'static Kernels {
    ACTIVE.get_or_init(init).kernels
}

pub(crate) fn active_name() -> &'static str {
    ACTIVE.get_or_init(init).name
}

fn init() -> Active {
    let request = std::env::var("STRATAVEC_SIMD").ok();
    let (level, note) = choose(request.as_deref(), Level::best());
    let kernels = level
        .kernels()
        .unwrap_or_else(|| unreachable!("choose() returned unsupported level {level:?}"));
    let name = match note {
        None => level.name(),
        // Leaked once per process: kernel_name() must return &'static str.
        Some(note) => Box::leak(format!("{} ({note})", level.name()).into_boxed_str()),
    };
    Active { kernels, name }
}

/// Level to use for a `STRATAVEC_SIMD` value, given the best supported level,
/// plus a note when the request could not be honoured.
fn choose(request: Option<&str>, best: Level) -> (Level, Option<String>) {
    let Some(raw) = request.filter(|r| !r.trim().is_empty() && r.trim() != "auto") else {
        return (best, None);
    };
    match Level::parse(raw) {
        Some(wanted) if wanted <= best => (wanted, None),
        Some(_) => (
            best,
            Some(format!("STRATAVEC_SIMD={raw} not supported by this CPU")),
        ),
        None => (
            best,
            Some(format!(
                "STRATAVEC_SIMD={raw} not recognised; expected scalar, avx2 or avx512"
            )),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choose_honours_lower_levels_and_falls_back() {
        assert_eq!(choose(None, Level::Avx512), (Level::Avx512, None));
        assert_eq!(choose(Some(""), Level::Avx2), (Level::Avx2, None));
        assert_eq!(choose(Some("auto"), Level::Avx2), (Level::Avx2, None));
        assert_eq!(choose(Some("scalar"), Level::Avx512), (Level::Scalar, None));
        assert_eq!(choose(Some("AVX2"), Level::Avx512), (Level::Avx2, None));
        let (l, note) = choose(Some("avx512"), Level::Avx2);
        assert_eq!(l, Level::Avx2);
        assert!(note.unwrap().contains("not supported"));
        let (l, note) = choose(Some("sse9"), Level::Scalar);
        assert_eq!(l, Level::Scalar);
        assert!(note.unwrap().contains("not recognised"));
    }

    #[test]
    fn best_is_supported_and_active_matches_a_level() {
        assert!(Level::best().is_supported());
        assert!(Level::best().kernels().is_some());
        let active = active();
        assert!(active.level <= Level::best());
        assert!(active_name().starts_with(active.level.name()));
    }
}
