//! Range search's window rule (Starling, range search): a range search
//! runs as a k-NN beam search whose candidate list (the window of
//! candidates it expands) starts at L and doubles while the results within
//! the radius fill a share φ of it. The list keeps the candidates it pushes
//! out (Starling's kicked set) and takes them back when it grows, so
//! widening resumes the search rather than restarting it.

use super::expansion::Expansion;

/// Range search's stopping rule: with window size |C| and |R| results
/// within `radius`, the window doubles while |R| / |C| >= `phi`, up to
/// `max_window`.
#[derive(Clone, Copy, Debug)]
pub struct RangeRule {
    pub radius: f32,
    pub phi: f32,
    pub max_window: usize,
}

impl RangeRule {
    /// The rule for a search with list size `complexity` (the window never
    /// shrinks below it), its list set to keep what it pushes out.
    pub fn start(self, core: &mut Expansion, complexity: usize) -> Self {
        core.keep_kicked();
        RangeRule {
            max_window: self.max_window.max(complexity),
            ..self
        }
    }

    /// Widens the window if the rule says so (the search has converged
    /// within it); true if widened.
    pub fn widen(&self, core: &mut Expansion) -> bool {
        let window = core.list_size();
        if window >= self.max_window {
            return false;
        }
        let hits = core.exact_within(self.radius);
        if (hits as f32) < self.phi * window as f32 {
            return false;
        }
        core.grow_list((window * 2).min(self.max_window));
        core.stats().widenings += 1;
        true
    }

    /// Every node found within the radius (internal distance), nearest first.
    pub fn results(&self, core: &mut Expansion) -> Vec<(f32, u32)> {
        core.results(usize::MAX)
            .iter()
            .copied()
            .filter(|e| e.0 <= self.radius)
            .collect()
    }
}
