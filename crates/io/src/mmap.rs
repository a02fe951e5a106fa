//! Read-only memory maps of input files (data sets, ground truth). Lives here
//! because mapping is unsafe and unsafe code is confined to `simd` and `io`.

use std::fs::File;

/// Maps `file` read-only.
pub fn map_readonly(file: &File) -> std::io::Result<memmap2::Mmap> {
    // SAFETY: the map is read-only and private to this process. Like every
    // mmap-based reader we rely on the file not being truncated or rewritten
    // in place while mapped; stratavec's own writers never do that (they write
    // a temporary sibling and rename it over the old file, which leaves this
    // mapping on the old inode).
    unsafe { memmap2::Mmap::map(file) }
}
