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
