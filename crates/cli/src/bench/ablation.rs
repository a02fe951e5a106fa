//! `stratavec bench --ablate`: OctopusANN's design-space study on this
//! machine. Each technique alone on the PQ baseline (paper 003 §5, Table 1's
//! rows), then the compositions C1–C5 (§7.1), in one run; the summary puts,
//! beside each system's measured reads, what the paper's page-I/O model
//! (§3, eq. 1–2) predicts from the hops the search made and the pages'
//! overlap ratio, and the device figures of its Tables 4 and 6 (IOPS and
//! bandwidth at the operating point).

use super::{stats, summary};
use serde_json::Value;
use stratavec::index::PageUtility;

/// One row of the study: the variant (`bench::variants`), the technique or
/// composition it stands for, and the I/O challenges Table 1 says it
/// improves.
pub struct Entry {
    pub variant: &'static str,
    pub technique: &'static str,
    pub improves: &'static str,
}

/// Table 1's techniques alone, then C1–C5, each by the variant that builds
/// it. The baseline keeps the budget's node cache (every stratavec profile
/// spends what the budget leaves on one), so Cache has no row of its own;
/// All-in-Storage is AlayaLaser's record layout alone (neighbour codes in
/// each record, no codes in RAM), the AiSAQ idea with RaBitQ codes. C1 is
/// the starling profile, which also overlaps I/O with computation.
pub const ENTRIES: [Entry; 12] = [
    Entry {
        variant: "diskann",
        technique: "Baseline (PQ, node cache)",
        improves: "I/O waste (PQ), cache misses (cache)",
    },
    Entry {
        variant: "starling-nav",
        technique: "MemGraph",
        improves: "long search paths",
    },
    Entry {
        variant: "starling-shuffle",
        technique: "PageShuffle",
        improves: "I/O waste",
    },
    Entry {
        variant: "starling-page",
        technique: "PageSearch",
        improves: "I/O waste (costs bandwidth use)",
    },
    Entry {
        variant: "octopus-width",
        technique: "DynamicWidth",
        improves: "I/O waste, long search paths",
    },
    Entry {
        variant: "octopus-pipe",
        technique: "Pipeline",
        improves: "bandwidth use (costs I/O waste)",
    },
    Entry {
        variant: "laser-layout",
        technique: "All-in-Storage",
        improves: "(costs I/O waste: larger records)",
    },
    Entry {
        variant: "starling",
        technique: "C1: PS + PSe",
        improves: "I/O waste",
    },
    Entry {
        variant: "octopus-c2",
        technique: "C2: Pipe + DW",
        improves: "bandwidth use, long search paths",
    },
    Entry {
        variant: "starling-all",
        technique: "C3: MemG + PS + PSe",
        improves: "I/O waste, long search paths",
    },
    Entry {
        variant: "pipeann",
        technique: "C4: MemG + Pipe + DW",
        improves: "bandwidth use, long search paths",
    },
    Entry {
        variant: "octopus",
        technique: "C5: MemG + PS + PSe + DW",
        improves: "I/O waste, long search paths",
    },
];

/// The profiles `--ablate` runs: the study's, then any others asked for.
pub fn profiles(asked: &[String]) -> Vec<String> {
    let mut v: Vec<String> = ENTRIES.iter().map(|e| e.variant.to_string()).collect();
    for p in asked {
        if !v.contains(p) {
            v.push(p.clone());
        }
    }
    v
}

/// The study's name for `variant`, if it is one of its rows.
pub fn technique_of(variant: &str) -> Option<&'static str> {
    ENTRIES
        .iter()
        .find(|e| e.variant == variant)
        .map(|e| e.technique)
}

/// The page-I/O model's reads a query (paper 003 eq. 2, with PQ distances
/// in memory: reads = O(H / (OR(G)·n_p))), made concrete: of the `hops`
/// nodes a query expands, `cache_hits` come from RAM, and every page read
/// serves the expected useful records of its page, 1 + OR(G)·(n_p − 1)
/// when the search looks at all of them (PageSearch), else 1. So it equals
/// the measured reads when each read delivers what OR(G) promises; more
/// reads than predicted are reads no expansion used (the pipelined
/// search's waste), fewer are pages that held more useful records than
/// their graph neighbours.
pub fn model_reads(hops: f64, cache_hits: f64, page_search: bool, pages: &PageUtility) -> f64 {
    let useful = if page_search {
        pages.useful_records()
    } else {
        1.0
    };
    (hops - cache_hits).max(0.0) / useful
}

/// The row a system's fastest point reaching `target` came from, per round.
fn rows_at<'a>(rows: &'a [Value], system: &str, target: f64) -> Vec<&'a Value> {
    summary::at_recall_by_round(rows, system, target)
        .into_iter()
        .filter_map(|(round, p)| {
            rows.iter().find(|r| {
                r["kind"] == "search"
                    && r["system"] == system
                    && summary::round_of(r) == round
                    && r["qps"].as_f64() == Some(p.qps)
                    && r["recall_at_10"].as_f64() == Some(p.recall)
            })
        })
        .collect()
}

/// Median over rounds of a row field.
fn median_of(rows: &[&Value], field: &str) -> Option<f64> {
    let v: Vec<f64> = rows.iter().filter_map(|r| r[field].as_f64()).collect();
    (!v.is_empty()).then(|| stats::median(&v))
}

/// The study's summary at recall@10 0.90 and 0.95: per technique, QPS
/// (median, range over rounds) and its per-round ratio to the baseline,
/// measured and modelled reads with the model's inputs (hops H, cache
/// hits, OR(G), n_p), IOPS and bandwidth (Tables 4, 6), and p50 / p99.
pub fn print(rows: &[Value]) {
    let system_of = |variant: &str| {
        let name = format!("stratavec-{variant}");
        rows.iter()
            .any(|r| r["kind"] == "search" && r["system"] == name.as_str())
            .then_some(name)
    };
    let Some(base) = system_of(ENTRIES[0].variant) else {
        return;
    };
    println!("\nOctopusANN's study (paper 003 §5, §7): each technique alone on the PQ baseline, then C1-C5");
    println!("model reads = (H - cache hits) / (1 + OR(G) (n_p - 1)) with PageSearch, else H - cache hits (eq. 2)");
    for target in [0.90, 0.95] {
        println!("\nR@10 >= {target:.2}");
        println!("| technique | system | improves (Table 1) | QPS | vs baseline | reads | model reads | H | cache hits | OR(G) | n_p | IOPS (K) | BW (MB/s) | p50 us | p99 us |");
        println!("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for e in &ENTRIES {
            let Some(system) = system_of(e.variant) else {
                continue;
            };
            let at = rows_at(rows, &system, target);
            let qps: Vec<f64> = at.iter().filter_map(|r| r["qps"].as_f64()).collect();
            let Some(q) = stats::spread(&qps) else {
                println!(
                    "| {} | {system} | {} | never | | | | | | | | | | | |",
                    e.technique, e.improves
                );
                continue;
            };
            let ratio = stats::spread(&summary::ratios_by_round(rows, &system, &base, target))
                .map_or("—".into(), |r| format!("{}x", r.show(2)));
            let f = |field: &str, digits: usize| {
                median_of(&at, field).map_or("—".into(), |v| format!("{v:.digits$}"))
            };
            let iops =
                median_of(&at, "reads_per_s").map_or("—".into(), |v| format!("{:.1}", v / 1e3));
            let bw = match (median_of(&at, "bytes_per_query"), median_of(&at, "qps")) {
                (Some(b), Some(q)) => format!("{:.0}", b * q / 1e6),
                _ => "—".into(),
            };
            println!(
                "| {} | {system} | {} | {} | {ratio} | {} | {} | {} | {} | {} | {} | {iops} | {bw} | {} | {} |",
                e.technique,
                e.improves,
                q.show(0),
                f("reads_per_query", 1),
                f("model_reads_per_query", 1),
                f("hops_per_query", 1),
                f("cache_hits_per_query", 1),
                f("overlap_ratio", 4),
                f("records_per_page", 2),
                f("p50_us", 0),
                f("p99_us", 0),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_entry_is_a_variant_once() {
        for e in &ENTRIES {
            super::super::variants::find(e.variant).unwrap();
        }
        let v = profiles(&["diskann".into(), "gorgeous".into()]);
        assert_eq!(v.len(), ENTRIES.len() + 1);
        assert_eq!(v.last().unwrap(), "gorgeous");
        assert_eq!(technique_of("octopus"), Some("C5: MemG + PS + PSe + DW"));
        assert_eq!(technique_of("gorgeous"), None);
    }

    #[test]
    fn model_counts_useful_records_per_read() {
        let pages = PageUtility {
            overlap_ratio: 0.5,
            records_per_page: 5.0,
        };
        // 30 expansions, 6 from the cache: 24 from pages.
        assert_eq!(model_reads(30.0, 6.0, false, &pages), 24.0);
        // Each page read serves 1 + 0.5·4 = 3 expansions.
        assert_eq!(model_reads(30.0, 6.0, true, &pages), 8.0);
        let alone = PageUtility {
            overlap_ratio: 0.0,
            records_per_page: 1.0,
        };
        assert_eq!(model_reads(10.0, 0.0, true, &alone), 10.0);
    }

    #[test]
    fn rows_at_finds_each_rounds_point() {
        let row = |round: u64, recall: f64, qps: f64, hops: f64| {
            json!({"kind": "search", "system": "s", "round": round,
                   "recall_at_10": recall, "qps": qps, "hops_per_query": hops})
        };
        let rows = vec![
            row(0, 0.96, 300.0, 30.0),
            row(0, 0.91, 600.0, 20.0),
            row(1, 0.96, 200.0, 32.0),
        ];
        let at = rows_at(&rows, "s", 0.95);
        assert_eq!(at.len(), 2);
        assert_eq!(median_of(&at, "hops_per_query"), Some(31.0));
        assert_eq!(rows_at(&rows, "s", 0.90)[0]["qps"], 600.0);
    }
}
