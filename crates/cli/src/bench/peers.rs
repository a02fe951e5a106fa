//! Peers run as subprocesses of `benchmarks/peers/run_peer.py`, each with the
//! Python of its own virtualenv, so their memory and `/proc/self/io`
//! counters are theirs alone. Their JSON lines are taken as they are, tagged
//! `kind: search`.

use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};

pub struct PeerRun<'a> {
    pub repo: &'a Path,
    pub peer: &'a str,
    pub data: &'a Path,
    pub index_dir: &'a Path,
    pub threads: usize,
    pub k: usize,
    pub sweep: &'a [usize],
    pub memory_budget_mb: f64,
    pub pq_bytes: usize,
    pub graph_degree: usize,
    pub complexity: usize,
    pub alpha: f32,
    pub beam_width: usize,
    pub rebuild: bool,
}

pub fn run(p: &PeerRun) -> Result<Vec<Value>> {
    let venv = p.repo.join("benchmarks/.venvs").join(p.peer);
    let python = venv.join("bin/python");
    if !python.exists() {
        let setup = p.repo.join("benchmarks/peers/setup_venvs.sh");
        let status = Command::new("bash")
            .arg(&setup)
            .arg(p.peer)
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit())
            .status()
            .with_context(|| format!("run {}", setup.display()))?;
        if !status.success() {
            bail!(
                "{}: setting up the {} venv failed ({status})",
                setup.display(),
                p.peer
            );
        }
    }
    let sweep: Vec<String> = p.sweep.iter().map(|x| x.to_string()).collect();
    let mut cmd = Command::new(&python);
    cmd.arg(p.repo.join("benchmarks/peers/run_peer.py"))
        .args(["--peer", p.peer])
        .arg("--data")
        .arg(p.data)
        .arg("--index-dir")
        .arg(p.index_dir)
        .args(["--threads", &p.threads.to_string(), "-k", &p.k.to_string()])
        .args(["--sweep", &sweep.join(",")])
        // Six decimals: the budget to the byte (run_peer.py's MB is 10^6 B).
        .args(["--memory-budget-mb", &format!("{:.6}", p.memory_budget_mb)])
        .args(["--pq-bytes", &p.pq_bytes.to_string()])
        .args(["--graph-degree", &p.graph_degree.to_string()])
        .args(["--complexity", &p.complexity.to_string()])
        .args(["--alpha", &p.alpha.to_string()])
        .args(["--beam-width", &p.beam_width.to_string()])
        .env("RUST_LOG", "warn")
        .stderr(Stdio::inherit());
    if p.rebuild {
        cmd.arg("--rebuild");
    }
    let out = cmd
        .output()
        .with_context(|| format!("run peer {}", p.peer))?;
    if !out.status.success() {
        bail!("peer {} failed ({}); its log is above", p.peer, out.status);
    }
    let mut rows = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let mut v: Value = serde_json::from_str(line)
            .with_context(|| format!("peer {} printed a line that is not JSON: {line}", p.peer))?;
        v["kind"] = "search".into();
        rows.push(v);
    }
    Ok(rows)
}
