//! The systems `stratavec bench --profiles` can name: the two profiles, and
//! each Starling technique alone on top of `diskann` (the ablation the
//! Starling paper reports in §5.4 and issue #4 asks for). A variant is an
//! index to build (or reuse) plus how to open and search it, so one index
//! serves every variant that only differs at search time.

use anyhow::{bail, Result};
use stratavec::layout::shuffle::Shuffle;

#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    /// The name given to `--profiles` (the system is `stratavec-<name>`).
    pub name: &'static str,
    /// What the row measures, for reports.
    pub about: &'static str,
    /// Build profile (sets the layout: coupled or blocked).
    pub profile: &'static str,
    pub shuffle: Shuffle,
    /// Build a navigation graph over this share of the vectors.
    pub nav: bool,
    pub page_search: bool,
    pub pipeline: bool,
}

const fn v(
    name: &'static str,
    about: &'static str,
    profile: &'static str,
    shuffle: Shuffle,
    nav: bool,
    page_search: bool,
    pipeline: bool,
) -> Variant {
    Variant {
        name,
        about,
        profile,
        shuffle,
        nav,
        page_search,
        pipeline,
    }
}

/// Every variant, in the order reports list them.
pub const ALL: &[Variant] = &[
    v(
        "diskann",
        "DiskANN: id-order coupled layout, medoid entry, beam search",
        "diskann",
        Shuffle::None,
        false,
        false,
        false,
    ),
    v(
        "starling-shuffle",
        "diskann + BNF block shuffling only (blocked layout, no block search)",
        "starling",
        Shuffle::Bnf,
        false,
        false,
        false,
    ),
    v(
        "starling-page",
        "diskann + block search only (id-order pages)",
        "diskann",
        Shuffle::None,
        false,
        true,
        false,
    ),
    v(
        "starling-nav",
        "diskann + in-memory navigation graph only",
        "diskann",
        Shuffle::None,
        true,
        false,
        false,
    ),
    v(
        "starling-pipeline",
        "diskann + I/O-compute pipeline only",
        "diskann",
        Shuffle::None,
        false,
        false,
        true,
    ),
    v(
        "starling",
        "the starling profile as built by default: shuffle + block search + pipeline",
        "starling",
        Shuffle::Bnf,
        false,
        true,
        true,
    ),
    v(
        "starling-all",
        "every Starling technique: the starling profile + navigation graph",
        "starling",
        Shuffle::Bnf,
        true,
        true,
        true,
    ),
];

pub fn find(name: &str) -> Result<&'static Variant> {
    match ALL.iter().find(|v| v.name == name) {
        Some(v) => Ok(v),
        None => {
            let names: Vec<&str> = ALL.iter().map(|v| v.name).collect();
            bail!(
                "--profiles: expected one of {}, found {name:?}",
                names.join(", ")
            )
        }
    }
}

impl Variant {
    /// The navigation graph's sample ratio in the index this variant needs.
    pub fn nav_sample(&self, mu: f32) -> f32 {
        if self.nav {
            mu
        } else {
            0.0
        }
    }

    /// Directory name of the index (variants that differ only at search
    /// time share it; the shuffle follows from the profile).
    pub fn index_name(&self, dataset: &str, r: usize, l: usize, pq: usize, mu: f32) -> String {
        let nav = if self.nav {
            format!("-nav{mu}")
        } else {
            String::new()
        };
        format!("{dataset}-{}-R{r}-L{l}-pq{pq}{nav}", self.profile)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        for v in ALL {
            assert_eq!(find(v.name).unwrap(), v);
        }
        let err = find("starlin").unwrap_err().to_string();
        assert!(
            err.contains("starling-page") && err.contains("\"starlin\""),
            "{err}"
        );
    }

    #[test]
    fn search_time_variants_share_an_index() {
        let name = |n: &str| find(n).unwrap().index_name("d", 64, 128, 48, 0.02);
        assert_eq!(name("diskann"), name("starling-page"));
        assert_eq!(name("diskann"), name("starling-pipeline"));
        assert_eq!(name("starling-shuffle"), name("starling"));
        assert_ne!(name("starling"), name("starling-all"));
        assert_ne!(name("starling-nav"), name("diskann"));
    }
}
