//! Bytes held in RAM, by part. Every resident structure reports its bytes
//! here, so `Index::memory()` is a sum, not a guess.

use serde::Serialize;

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct MemoryReport {
    pub parts: Vec<(String, usize)>,
    /// What the planner granted each part, and why a part got less than
    /// it asked for (`memory::planner`).
    pub plan: Vec<super::planner::Grant>,
}

impl MemoryReport {
    pub fn add(&mut self, part: &str, bytes: usize) {
        self.parts.push((part.to_string(), bytes));
    }

    pub fn total(&self) -> usize {
        self.parts.iter().map(|p| p.1).sum()
    }

    pub fn get(&self, part: &str) -> usize {
        self.parts.iter().filter(|p| p.0 == part).map(|p| p.1).sum()
    }
}

impl std::fmt::Display for MemoryReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .parts
            .iter()
            .map(|(k, v)| format!("{k} {:.1} MB", *v as f64 / 1e6))
            .collect();
        write!(
            f,
            "{:.1} MB ({})",
            self.total() as f64 / 1e6,
            parts.join(", ")
        )
    }
}
