//! Peers run as subprocesses of `benchmarks/peers/run_peer.py --serve`, each
//! with the Python of its own virtualenv, so their memory and
//! `/proc/self/io` counters are theirs alone. A peer process builds (or
//! reuses) and loads its index once, then times one sweep point per request
//! on its stdin, so the bench can run it round-robin with every other
//! system: one JSON line in (`{"L": 40, "round": 1}`), one row out.

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

pub struct PeerRun<'a> {
    pub repo: &'a Path,
    pub peer: &'a str,
    pub data: &'a Path,
    pub index_dir: &'a Path,
    pub threads: usize,
    /// Threads a peer builds its index with (all cores in latency mode).
    pub build_threads: usize,
    pub k: usize,
    pub sweep: &'a [usize],
    pub memory_budget_mb: f64,
    pub pq_bytes: usize,
    pub graph_degree: usize,
    pub complexity: usize,
    pub alpha: f32,
    pub beam_width: usize,
    pub rebuild: bool,
    pub min_pass_s: f64,
    /// Answer filtered band points (`run_peer.py --filtered`,
    /// `benchmarks/peers/filtered_peer.py`) instead of plain ones.
    pub filtered: bool,
}

/// A peer process, loaded and waiting for sweep points.
pub struct Peer {
    pub name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

fn ensure_venv(p: &PeerRun) -> Result<std::path::PathBuf> {
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
    Ok(python)
}

impl Peer {
    /// Starts the peer (building its index if none matches) and waits until
    /// it has loaded the index.
    pub fn start(p: &PeerRun) -> Result<Peer> {
        let python = std::env::var_os("STRATAVEC_PEER_PYTHON")
            .map(Into::into)
            .map_or_else(|| ensure_venv(p), Ok)?;
        let sweep: Vec<String> = p.sweep.iter().map(|x| x.to_string()).collect();
        let mut cmd = Command::new(&python);
        cmd.arg(p.repo.join("benchmarks/peers/run_peer.py"))
            .args(["--peer", p.peer, "--serve"])
            .arg("--data")
            .arg(p.data)
            .arg("--index-dir")
            .arg(p.index_dir)
            .args(["--threads", &p.threads.to_string(), "-k", &p.k.to_string()])
            .args(["--build-threads", &p.build_threads.to_string()])
            .args(["--sweep", &sweep.join(",")])
            // Six decimals: the budget to the byte (run_peer.py's MB is 10^6 B).
            .args(["--memory-budget-mb", &format!("{:.6}", p.memory_budget_mb)])
            .args(["--pq-bytes", &p.pq_bytes.to_string()])
            .args(["--graph-degree", &p.graph_degree.to_string()])
            .args(["--complexity", &p.complexity.to_string()])
            .args(["--alpha", &p.alpha.to_string()])
            .args(["--beam-width", &p.beam_width.to_string()])
            .args(["--min-pass-seconds", &p.min_pass_s.to_string()])
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if p.rebuild {
            cmd.arg("--rebuild");
        }
        if p.filtered {
            cmd.arg("--filtered");
        }
        let mut child = cmd
            .spawn()
            .with_context(|| format!("start peer {} with {}", p.peer, python.display()))?;
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().context("peer stdout")?);
        let mut peer = Peer {
            name: p.peer.to_string(),
            child,
            stdin,
            stdout,
        };
        let ready = peer.read_line()?;
        if ready["ready"] != true {
            bail!(
                "peer {} said {ready} where it should say it is ready",
                p.peer
            );
        }
        Ok(peer)
    }

    fn read_line(&mut self) -> Result<Value> {
        let mut line = String::new();
        loop {
            line.clear();
            let n = self
                .stdout
                .read_line(&mut line)
                .with_context(|| format!("read from peer {}", self.name))?;
            if n == 0 {
                let status = self.child.wait()?;
                bail!("peer {} exited ({status}); its log is above", self.name);
            }
            if !line.trim().is_empty() {
                break;
            }
        }
        let v: Value = serde_json::from_str(line.trim()).with_context(|| {
            format!(
                "peer {} printed a line that is not JSON: {}",
                self.name,
                line.trim()
            )
        })?;
        if let Some(e) = v["error"].as_str() {
            bail!("peer {}: {e}", self.name);
        }
        Ok(v)
    }

    /// Times one sweep point and returns its row, tagged `kind: search`.
    pub fn point(&mut self, l: usize, round: usize) -> Result<Value> {
        let mut v = self.request(json!({"L": l, "round": round}))?;
        v["kind"] = "search".into();
        Ok(v)
    }

    /// Times one filtered point of `band` (a peer started `filtered`) and
    /// returns its row, tagged `kind: point` as `bench-filtered`'s own.
    pub fn band_point(&mut self, l: usize, round: usize, band: usize) -> Result<Value> {
        let mut v = self.request(json!({"L": l, "round": round, "band": band}))?;
        v["kind"] = "point".into();
        Ok(v)
    }

    fn request(&mut self, req: Value) -> Result<Value> {
        let stdin = self.stdin.as_mut().context("peer stdin closed")?;
        writeln!(stdin, "{req}")
            .and_then(|_| stdin.flush())
            .with_context(|| format!("send a sweep point to peer {}", self.name))?;
        self.read_line()
    }

    /// Closes its stdin (the peer exits at end of input) and waits for it.
    pub fn finish(mut self) -> Result<()> {
        drop(self.stdin.take());
        let status = self.child.wait()?;
        if !status.success() {
            bail!("peer {} exited with {status}", self.name);
        }
        Ok(())
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        // An error elsewhere in the bench must not leave a peer process
        // holding its index and RAM: closing stdin ends it; reap it.
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}
