//! Median and range of a bench figure over rounds: on a shared machine one
//! timed pass says little, so every QPS cell and every ratio is reported as
//! the median of R round-robin rounds with its min-max.

/// The median of `v` (the mean of the middle two for an even count); NaN
/// for an empty slice.
pub fn median(v: &[f64]) -> f64 {
    let mut s: Vec<f64> = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

/// `None` for no values.
pub fn spread(v: &[f64]) -> Option<Spread> {
    if v.is_empty() {
        return None;
    }
    Some(Spread {
        median: median(v),
        min: v.iter().copied().fold(f64::INFINITY, f64::min),
        max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        n: v.len(),
    })
}

impl Spread {
    /// `1,234 (1,100–1,300)` with `digits` decimals; the range only when
    /// there is more than one value.
    pub fn show(&self, digits: usize) -> String {
        self.show_with(|x| format!("{x:.digits$}"))
    }

    /// As [`Spread::show`], each number written by `f`.
    pub fn show_with(&self, f: impl Fn(f64) -> String) -> String {
        if self.n > 1 {
            format!("{} ({}–{})", f(self.median), f(self.min), f(self.max))
        } else {
            f(self.median)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_range() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        let s = spread(&[2.0, 9.0, 4.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (4.0, 2.0, 9.0, 3));
        assert_eq!(s.show(1), "4.0 (2.0–9.0)");
        assert_eq!(spread(&[5.0]).unwrap().show(0), "5");
        assert_eq!(s.show_with(|x| format!("{x}k")), "4k (2k–9k)");
        assert!(spread(&[]).is_none());
    }
}
