use anyhow::Result;
use std::path::PathBuf;
use stratavec::index::Manifest;

#[derive(clap::Args)]
pub struct Args {
    /// Index directory (holds manifest.json).
    index_dir: PathBuf,
    /// Re-hash every file and compare with the manifest.
    #[arg(long)]
    verify: bool,
    /// Show the memory plan an open with this budget (MB, 10^6 bytes) would
    /// make: what each part asks for, what it is granted and holds, and why
    /// a part got less.
    #[arg(long)]
    memory_budget_mb: Option<f64>,
}

pub fn run(a: Args) -> Result<()> {
    let m = Manifest::read(&a.index_dir)?;
    println!("{}", m.to_json().trim_end());
    if m.plan.is_none() {
        // Built before plans were recorded: the plan the open works out.
        let plan = stratavec::plan::plan_of(&a.index_dir, &m)?;
        println!(
            "plan (worked out for an index built before plans were recorded): {}",
            serde_json::to_string(&plan)?
        );
    }
    let report = a.index_dir.join(stratavec::index::build::BUILD_REPORT);
    if let Ok(text) = std::fs::read_to_string(&report) {
        println!("build report ({}):\n{}", report.display(), text.trim_end());
    }
    if m.plan.as_ref().is_some_and(|p| p.labels) {
        let labels = stratavec::labels::Labels::open(&a.index_dir, m.n)?;
        println!("{}", label_summary(&labels));
    }
    if let Some(mb) = a.memory_budget_mb {
        let opts = stratavec::OpenOptions {
            memory_budget_bytes: Some((mb * 1e6) as u64),
            ..Default::default()
        };
        let index = stratavec::Index::open(&a.index_dir, &opts)?;
        let m = index.memory();
        println!(
            "memory plan for a {mb} MB budget (profile {}):",
            index.profile.name
        );
        println!(
            "  {:<18} {:>10} {:>10} {:>10}  note",
            "part", "asks MB", "grant MB", "holds MB"
        );
        for g in &m.plan {
            println!(
                "  {:<18} {:>10.2} {:>10.2} {:>10.2}  {}",
                g.part.label(),
                g.asked as f64 / 1e6,
                g.bytes as f64 / 1e6,
                m.get(g.part.name()) as f64 / 1e6,
                g.note.as_deref().unwrap_or("")
            );
        }
        println!(
            "  {:<18} {:>10} {:>10} {:>10.2}",
            "total",
            "",
            "",
            m.total() as f64 / 1e6
        );
    }
    if a.verify {
        let opts = stratavec::OpenOptions {
            verify_checksums: true,
            ..Default::default()
        };
        stratavec::Index::open(&a.index_dir, &opts)?;
        println!("verified: every file matches its manifest size and sha256");
    }
    Ok(())
}

/// One line on an index's labels: how many, how many a vector, and the
/// largest ones by name (or id) with their counts.
fn label_summary(l: &stratavec::labels::Labels) -> String {
    let n = l.len().max(1);
    let mut by_count: Vec<(u64, u32)> = (0..l.n_labels()).map(|i| (l.count(i), i)).collect();
    let total: u64 = by_count.iter().map(|c| c.0).sum();
    let used = by_count.iter().filter(|c| c.0 > 0).count();
    by_count.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let top: Vec<String> = by_count
        .iter()
        .take(8)
        .map(|&(c, i)| {
            let name = l.name(i).map_or_else(|| i.to_string(), str::to_string);
            format!("{name} {c} ({:.1}%)", 100.0 * c as f64 / n as f64)
        })
        .collect();
    format!(
        "labels: {} ({} on some vector{}), {:.2} a vector; largest: {}",
        l.n_labels(),
        used,
        if l.has_names() { ", named" } else { ", by id" },
        total as f64 / n as f64,
        top.join(", ")
    )
}
