//! Which block each node's record goes to, and what fits in a block.
//!
//! A block has a capacity and each node's record a cost, in the same unit:
//! slots (every record costs 1: the fixed-size records of Starling §4.1) or
//! bytes (records stored at their real degree with packed ids, so a node of
//! degree 30 takes less room than one of degree 64 and a block holds as
//! many as fit). The shuffles only ask "does `u` fit in `b`", so they run
//! unchanged on either.

/// What a block holds and what each record costs of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capacity {
    /// Capacity of one block.
    pub block: u32,
    /// Cost of each node's record; empty when every record costs 1.
    cost: Vec<u16>,
}

impl Capacity {
    /// `per_block` equal records per block.
    pub fn slots(per_block: usize) -> Self {
        Capacity {
            block: per_block.max(1) as u32,
            cost: Vec::new(),
        }
    }

    /// Blocks of `block` bytes; node `u`'s record costs `cost[u]` bytes
    /// (each at most `block`).
    pub fn bytes(block: usize, cost: Vec<u16>) -> Self {
        debug_assert!(cost.iter().all(|&c| c as usize <= block && c > 0));
        Capacity {
            block: block as u32,
            cost,
        }
    }

    #[inline]
    pub fn cost(&self, u: u32) -> u32 {
        self.cost.get(u as usize).map_or(1, |&c| c as u32)
    }

    /// Mean records a block holds when full.
    pub fn mean_per_block(&self, n: usize) -> f64 {
        if self.cost.is_empty() || n == 0 {
            return self.block as f64;
        }
        let total: u64 = self.cost.iter().map(|&c| c as u64).sum();
        self.block as f64 * n as f64 / total as f64
    }

    /// Blocks needed at least: exact for equal records, a lower bound
    /// otherwise.
    pub fn min_blocks(&self, n: usize) -> usize {
        if self.cost.is_empty() {
            n.div_ceil(self.block as usize)
        } else {
            let total: u64 = self.cost.iter().map(|&c| c as u64).sum();
            total.div_ceil(self.block as u64) as usize
        }
    }
}

/// Every node in exactly one block, no block over capacity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockAssignment {
    pub capacity: Capacity,
    /// Block of each node.
    pub block_of: Vec<u32>,
    /// Nodes of each block, in slot order.
    pub members: Vec<Vec<u32>>,
    /// Capacity used in each block.
    used: Vec<u32>,
}

impl BlockAssignment {
    /// DiskANN's layout: nodes in id order, each block filled before the
    /// next is started.
    pub fn id_order(n: usize, capacity: Capacity) -> Self {
        let mut a = Self::empty(n, capacity);
        let mut cur = 0;
        for u in 0..n as u32 {
            if !a.fits(u, cur) {
                cur += 1;
            }
            a.put(u, cur);
        }
        a.drop_empty();
        a
    }

    /// An empty assignment with the blocks `n` nodes need at least; more
    /// are opened as needed.
    pub fn empty(n: usize, capacity: Capacity) -> Self {
        let blocks = capacity.min_blocks(n);
        let slots = if capacity.cost.is_empty() {
            capacity.block as usize
        } else {
            8
        };
        BlockAssignment {
            block_of: vec![u32::MAX; n],
            members: vec![Vec::with_capacity(slots); blocks],
            used: vec![0; blocks],
            capacity,
        }
    }

    pub fn n(&self) -> usize {
        self.block_of.len()
    }

    pub fn blocks(&self) -> usize {
        self.members.len()
    }

    /// Whether node `u` fits in block `b` (a block not yet opened is empty).
    #[inline]
    pub fn fits(&self, u: u32, b: u32) -> bool {
        let used = self.used.get(b as usize).copied().unwrap_or(0);
        used + self.capacity.cost(u) <= self.capacity.block
    }

    /// Capacity left in block `b`.
    pub fn room(&self, b: u32) -> u32 {
        self.capacity.block - self.used[b as usize]
    }

    /// Opens a new, empty block and returns its number.
    pub fn open_block(&mut self) -> u32 {
        self.members.push(Vec::new());
        self.used.push(0);
        (self.members.len() - 1) as u32
    }

    /// Puts unassigned node `u` in block `b` (which must have room; a block
    /// one past the last is opened).
    pub fn put(&mut self, u: u32, b: u32) {
        debug_assert_eq!(self.block_of[u as usize], u32::MAX);
        debug_assert!(self.fits(u, b));
        if b as usize == self.members.len() {
            self.open_block();
        }
        self.block_of[u as usize] = b;
        self.members[b as usize].push(u);
        self.used[b as usize] += self.capacity.cost(u);
    }

    /// Exchanges node `x` (slot `sx` of block `bx`) and node `y` (slot `sy`
    /// of block `by`). The caller checks that both still fit.
    pub fn swap(&mut self, bx: u32, sx: usize, by: u32, sy: usize) {
        let x = self.members[bx as usize][sx];
        let y = self.members[by as usize][sy];
        let (cx, cy) = (self.capacity.cost(x), self.capacity.cost(y));
        self.members[bx as usize][sx] = y;
        self.members[by as usize][sy] = x;
        self.block_of[x as usize] = by;
        self.block_of[y as usize] = bx;
        self.used[bx as usize] = self.used[bx as usize] + cy - cx;
        self.used[by as usize] = self.used[by as usize] + cx - cy;
    }

    /// Whether swapping node `x` of block `bx` with node `y` of block `by`
    /// keeps both blocks within capacity.
    pub fn swap_fits(&self, x: u32, bx: u32, y: u32, by: u32) -> bool {
        let (cx, cy) = (self.capacity.cost(x), self.capacity.cost(y));
        let cap = self.capacity.block;
        self.used[bx as usize] - cx + cy <= cap && self.used[by as usize] - cy + cx <= cap
    }

    /// Removes blocks left empty and renumbers the rest in order.
    pub fn drop_empty(&mut self) {
        if self.members.iter().all(|m| !m.is_empty()) {
            return;
        }
        let mut renumber = vec![u32::MAX; self.members.len()];
        let mut next = 0u32;
        for (b, m) in self.members.iter().enumerate() {
            if !m.is_empty() {
                renumber[b] = next;
                next += 1;
            }
        }
        for b in self.block_of.iter_mut() {
            *b = renumber[*b as usize];
        }
        let keep: Vec<bool> = self.members.iter().map(|m| !m.is_empty()).collect();
        let mut i = 0;
        self.members.retain(|_| {
            i += 1;
            keep[i - 1]
        });
        let mut i = 0;
        self.used.retain(|_| {
            i += 1;
            keep[i - 1]
        });
    }

    /// Checks the invariants: every node in exactly one block, no block over
    /// capacity, no empty block, `block_of` agrees with `members`.
    pub fn validate(&self) -> Result<(), String> {
        let mut seen = vec![false; self.n()];
        for (b, m) in self.members.iter().enumerate() {
            if m.is_empty() {
                return Err(format!("block {b}: empty"));
            }
            let used: u32 = m.iter().map(|&u| self.capacity.cost(u)).sum();
            if used > self.capacity.block || used != self.used[b] {
                return Err(format!(
                    "block {b}: uses {used} (tracked {}), capacity {}",
                    self.used[b], self.capacity.block
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
