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
}

pub fn run(a: Args) -> Result<()> {
    let m = Manifest::read(&a.index_dir)?;
    println!("{}", m.to_json().trim_end());
    let report = a.index_dir.join(stratavec::index::build::BUILD_REPORT);
    if let Ok(text) = std::fs::read_to_string(&report) {
        println!("build report ({}):\n{}", report.display(), text.trim_end());
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
