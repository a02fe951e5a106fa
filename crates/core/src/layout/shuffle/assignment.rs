//! Which block each node's record goes to.

/// `per_block` slots per block, `ceil(n / per_block)` blocks; every node in
/// exactly one block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockAssignment {
    pub per_block: usize,
    /// Block of each node.
    pub block_of: Vec<u32>,
    /// Nodes of each block, in slot order.
    pub members: Vec<Vec<u32>>,
}

impl BlockAssignment {
    /// DiskANN's layout: node i in block i / per_block.
    pub fn id_order(n: usize, per_block: usize) -> Self {
        let per_block = per_block.max(1);
        let blocks = n.div_ceil(per_block);
        let members: Vec<Vec<u32>> = (0..blocks)
            .map(|b| ((b * per_block) as u32..((b + 1) * per_block).min(n) as u32).collect())
            .collect();
        BlockAssignment {
            per_block,
            block_of: (0..n).map(|i| (i / per_block) as u32).collect(),
            members,
        }
    }

    /// An empty assignment with room for `n` nodes.
    pub fn empty(n: usize, per_block: usize) -> Self {
        let per_block = per_block.max(1);
        BlockAssignment {
            per_block,
            block_of: vec![u32::MAX; n],
            members: vec![Vec::with_capacity(per_block); n.div_ceil(per_block)],
        }
    }

    pub fn n(&self) -> usize {
        self.block_of.len()
    }

    pub fn is_full(&self, b: u32) -> bool {
        self.members[b as usize].len() >= self.per_block
    }

    /// Puts unassigned node `u` in block `b` (which must have room).
    pub fn put(&mut self, u: u32, b: u32) {
        debug_assert_eq!(self.block_of[u as usize], u32::MAX);
        debug_assert!(!self.is_full(b));
        self.block_of[u as usize] = b;
        self.members[b as usize].push(u);
    }

    /// Position of each node in the shuffled file: block * per_block + slot.
    pub fn positions(&self) -> Vec<u32> {
        let mut pos = vec![u32::MAX; self.n()];
        for (b, m) in self.members.iter().enumerate() {
            for (s, &u) in m.iter().enumerate() {
                pos[u as usize] = (b * self.per_block + s) as u32;
            }
        }
        pos
    }

    /// Checks the invariants: every node in exactly one block, no block over
    /// capacity, `block_of` agrees with `members`.
    pub fn validate(&self) -> Result<(), String> {
        let mut seen = vec![false; self.n()];
        for (b, m) in self.members.iter().enumerate() {
            if m.len() > self.per_block {
                return Err(format!(
                    "block {b}: {} members, capacity {}",
                    m.len(),
                    self.per_block
                ));
            }
            for &u in m {
                let u = u as usize;
                if u >= seen.len() || seen[u] {
                    return Err(format!("node {u}: out of range or in two blocks"));
                }
                seen[u] = true;
                if self.block_of[u] != b as u32 {
                    return Err(format!(
                        "node {u}: block_of says {}, members say {b}",
                        self.block_of[u]
                    ));
                }
            }
        }
        match seen.iter().position(|&s| !s) {
            Some(u) => Err(format!("node {u}: in no block")),
            None => Ok(()),
        }
    }
}
