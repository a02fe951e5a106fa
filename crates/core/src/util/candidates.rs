//! The bounded, sorted candidate list of a best-first graph search
//! ("retset" in DiskANN, Algorithm 1 of the Vamana paper): at most `capacity`
//! entries ordered by distance (ties by id, so results are deterministic),
//! each marked once it has been expanded.

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate {
    pub dist: f32,
    pub id: u32,
    pub expanded: bool,
}

#[derive(Clone, Debug, Default)]
pub struct CandidateList {
    items: Vec<Candidate>,
    capacity: usize,
    /// Every entry before this index is expanded (a lower bound: the search
    /// resumes scanning here).
    cursor: usize,
    /// Range search (Starling §5.3): unexpanded candidates pushed out of the
    /// full list are kept here and come back when the list grows, so a
    /// wider search resumes instead of restarting. `None` for k-NN.
    kicked: Option<Vec<Candidate>>,
}

#[inline]
fn before(a_dist: f32, a_id: u32, b: &Candidate) -> bool {
    a_dist < b.dist || (a_dist == b.dist && a_id < b.id)
}

impl CandidateList {
    pub fn new(capacity: usize) -> Self {
        CandidateList {
            items: Vec::with_capacity(capacity + 1),
            capacity,
            cursor: 0,
            kicked: None,
        }
    }

    /// Keeps the candidates the full list pushes out (see `kicked`).
    pub fn keep_kicked(&mut self) {
        self.kicked.get_or_insert_with(Vec::new);
    }

    /// Raises the capacity to `capacity` and takes back the kicked
    /// candidates that now fit, best first.
    pub fn grow(&mut self, capacity: usize) {
        self.capacity = self.capacity.max(capacity);
        if let Some(mut kicked) = self.kicked.replace(Vec::new()) {
            kicked.sort_unstable_by(|a, b| a.dist.total_cmp(&b.dist).then(a.id.cmp(&b.id)));
            for c in kicked {
                self.insert(c.id, c.dist);
            }
        }
    }

    fn kick(&mut self, c: Candidate) {
        if let (Some(k), false) = (self.kicked.as_mut(), c.expanded) {
            k.push(c);
        }
    }

    pub fn reset(&mut self, capacity: usize) {
        self.items.clear();
        self.capacity = capacity;
        self.cursor = 0;
        if let Some(k) = self.kicked.as_mut() {
            k.clear();
        }
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn as_slice(&self) -> &[Candidate] {
        &self.items
    }

    /// Inserts unless the list is full and `dist` is no better than the last
    /// entry. Returns the position inserted at, if any. The caller guarantees
    /// `id` is not already present (it keeps a visited set).
    #[inline]
    pub fn insert(&mut self, id: u32, dist: f32) -> Option<usize> {
        self.insert_candidate(Candidate {
            dist,
            id,
            expanded: false,
        })
    }

    /// Inserts `id` as already expanded (as `insert` otherwise): a node
    /// whose record the search already holds takes its place in the list,
    /// so it pushes out the candidates it beats and no hop goes to it.
    pub fn insert_expanded(&mut self, id: u32, dist: f32) -> Option<usize> {
        self.insert_candidate(Candidate {
            dist,
            id,
            expanded: true,
        })
    }

    #[inline]
    fn insert_candidate(&mut self, c: Candidate) -> Option<usize> {
        let (id, dist) = (c.id, c.dist);
        if self.items.len() >= self.capacity {
            match self.items.last() {
                Some(last) if before(dist, id, last) => {}
                _ => {
                    self.kick(c);
                    return None;
                }
            }
        }
        let pos = self.items.partition_point(|x| !before(dist, id, x));
        self.items.insert(pos, c);
        while self.items.len() > self.capacity {
            let out = self.items.pop().expect("over capacity");
            self.kick(out);
        }
        if pos < self.cursor {
            self.cursor = pos;
        }
        Some(pos)
    }

    /// The closest entry not yet expanded, marked expanded; `None` when every
    /// entry is expanded (the search has converged).
    #[inline]
    pub fn pop_closest_unexpanded(&mut self) -> Option<Candidate> {
        self.pop_closest_unexpanded_within(usize::MAX)
    }

    /// Like `pop_closest_unexpanded`, looking only at the first `window`
    /// entries: range search widens the window instead of restarting, so
    /// candidates beyond it are kept, not evicted (Starling's "kicked" set).
    #[inline]
    pub fn pop_closest_unexpanded_within(&mut self, window: usize) -> Option<Candidate> {
        let end = window.min(self.items.len());
        while self.cursor < end {
            let c = &mut self.items[self.cursor];
            self.cursor += 1;
            if !c.expanded {
                c.expanded = true;
                return Some(*c);
            }
        }
        None
    }

    /// Marks `id` expanded if it is in the list and not yet expanded;
    /// returns whether it was. (Linear in the list: called for the few
    /// records of a block, not per neighbour.)
    pub fn mark_expanded(&mut self, id: u32) -> bool {
        match self.items.iter_mut().find(|c| c.id == id) {
            Some(c) if !c.expanded => {
                c.expanded = true;
                true
            }
            _ => false,
        }
    }

    /// Position of the first entry not yet expanded (the list's length when
    /// none is): how far down the list the search has settled, PipeANN's
    /// "marker" that tells the approach phase from the converge phase.
    pub fn first_unexpanded(&self) -> usize {
        let from = self.cursor.min(self.items.len());
        self.items[from..]
            .iter()
            .position(|c| !c.expanded)
            .map_or(self.items.len(), |i| from + i)
    }

    /// Whether an entry at distance `dist` would rank within the list (it is
    /// not full, or `dist` is no worse than its last entry): a node read
    /// for an entry that no longer does was a wasted read.
    pub fn admits(&self, dist: f32) -> bool {
        self.items.len() < self.capacity || self.items.last().is_none_or(|c| dist <= c.dist)
    }

    /// Whether any entry is still unexpanded.
    pub fn has_unexpanded(&self) -> bool {
        self.items[self.cursor.min(self.items.len())..]
            .iter()
            .any(|c| !c.expanded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Against a reference: keep everything, sort, truncate.
        #[test]
        fn keeps_the_best_sorted(entries in proptest::collection::vec((0u32..1000, 0u32..50), 1..300),
                                 cap in 1usize..40) {
            let mut list = CandidateList::new(cap);
            let mut seen = std::collections::HashSet::new();
            let mut reference = vec![];
            for (id, d) in entries {
                if !seen.insert(id) { continue; }
                list.insert(id, d as f32);
                reference.push((d, id));
            }
            reference.sort();
            reference.truncate(cap);
            let got: Vec<(u32, u32)> = list.as_slice().iter().map(|c| (c.dist as u32, c.id)).collect();
            prop_assert_eq!(got, reference);
        }
    }

    proptest! {
        /// With the kicked set kept, growing the list gives exactly the best
        /// unexpanded candidates of everything inserted, as if it had been
        /// that large all along.
        #[test]
        fn kicked_candidates_come_back(entries in proptest::collection::vec((0u32..1000, 0u32..40), 1..300),
                                       small in 1usize..20, big in 20usize..200, pops in 0usize..10) {
            let mut l = CandidateList::new(small);
            l.keep_kicked();
            let mut seen = std::collections::HashSet::new();
            let mut all = Vec::new();
            for &(id, d) in &entries {
                if seen.insert(id) {
                    l.insert(id, d as f32);
                    all.push((d as f32, id));
                }
            }
            let mut popped = std::collections::HashSet::new();
            for _ in 0..pops {
                if let Some(c) = l.pop_closest_unexpanded() {
                    popped.insert(c.id);
                }
            }
            l.grow(big);
            // Kicked candidates are all worse than every listed one, so the
            // grown list is the best `big` of everything inserted.
            all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let want: Vec<u32> = all.iter().map(|e| e.1).take(big).collect();
            let got: Vec<u32> = l.as_slice().iter().map(|c| c.id).collect();
            prop_assert_eq!(got, want);
            prop_assert!(l.as_slice().iter().all(|c| c.expanded == popped.contains(&c.id)));
        }
    }

    /// One operation of a block search on the list.
    #[derive(Clone, Debug)]
    enum Op {
        Insert(u32, u32),
        InsertExpanded(u32, u32),
        Pop,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u32..200, 0u32..60).prop_map(|(i, d)| Op::Insert(i, d)),
            (0u32..200, 0u32..60).prop_map(|(i, d)| Op::InsertExpanded(i, d)),
            Just(Op::Pop),
        ]
    }

    proptest! {
        /// Against a plain model (a sorted vector of (dist, id, expanded),
        /// truncated to capacity): inserting expanded entries keeps the list
        /// sorted and bounded, and a pop always returns the closest
        /// unexpanded entry, never an entry inserted as expanded.
        #[test]
        fn expanded_inserts_match_a_model(ops in proptest::collection::vec(op(), 1..200),
                                          cap in 1usize..24) {
            let mut l = CandidateList::new(cap);
            let mut model: Vec<(u32, u32, bool)> = Vec::new();
            let mut seen = std::collections::HashSet::new();
            let mut born_expanded = std::collections::HashSet::new();
            for o in ops {
                match o {
                    Op::Insert(id, d) | Op::InsertExpanded(id, d) => {
                        if !seen.insert(id) { continue; }
                        let expanded = matches!(o, Op::InsertExpanded(..));
                        if expanded {
                            born_expanded.insert(id);
                            l.insert_expanded(id, d as f32);
                        } else {
                            l.insert(id, d as f32);
                        }
                        model.push((d, id, expanded));
                    }
                    Op::Pop => {
                        let want = model.iter().filter(|e| !e.2).map(|e| (e.0, e.1)).min();
                        let got = l.pop_closest_unexpanded().map(|c| (c.dist as u32, c.id));
                        prop_assert_eq!(got, want);
                        if let Some((_, id)) = got {
                            prop_assert!(!born_expanded.contains(&id));
                            model.iter_mut().find(|e| e.1 == id).expect("in model").2 = true;
                        }
                    }
                }
                model.sort();
                model.truncate(cap);
                let got: Vec<(u32, u32, bool)> =
                    l.as_slice().iter().map(|c| (c.dist as u32, c.id, c.expanded)).collect();
                prop_assert_eq!(&got, &model);
            }
        }
    }

    #[test]
    fn pop_order_and_rewind() {
        let mut l = CandidateList::new(4);
        l.insert(1, 5.0);
        l.insert(2, 3.0);
        assert_eq!(l.pop_closest_unexpanded().unwrap().id, 2);
        l.insert(3, 1.0); // better than the expanded one: cursor rewinds
        assert_eq!(l.pop_closest_unexpanded().unwrap().id, 3);
        assert_eq!(l.pop_closest_unexpanded().unwrap().id, 1);
        assert!(l.pop_closest_unexpanded().is_none());
        assert!(!l.has_unexpanded());
    }
}
