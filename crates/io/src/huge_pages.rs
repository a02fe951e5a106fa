//! Arrays a search reads at random — every vector's codes, the adjacency
//! lists held in RAM — moved onto 2 MB pages where the kernel allows it.
//!
//! Why: a search-stage estimate reads one code row at a random place in
//! 15–25 MB (4-bit extended RaBitQ at 384-d is 192 bytes a vector, and
//! wordnet-minilm has 117k), and then the next row, elsewhere. On 4 KB
//! pages that is a TLB miss nearly every row — the L2 TLB covers ~12 MB —
//! and in a virtual machine each miss walks two page tables. In a profile
//! of a 1×1 search at 20% of wordnet-minilm the estimate kernel spent four
//! fifths of its samples on the first use of a loaded row. With 2 MB pages
//! the codes need a dozen TLB entries.
//!
//! The kernel must agree: `/sys/kernel/mm/transparent_hugepage/enabled`
//! set to `madvise` (the usual default) or `always`. The arrays are filled
//! first, then advised `MADV_HUGEPAGE` and collapsed at once
//! (`MADV_COLLAPSE`, Linux 6.1); refused, or on an older kernel, they stay
//! on 4 KB pages and nothing else changes.

/// The bytes of a huge page on x86-64 and aarch64 with 4 KB base pages.
pub const HUGE_PAGE: usize = 2 << 20;

/// `MADV_COLLAPSE` (Linux 6.1, `include/uapi/asm-generic/mman-common.h`):
/// not in every libc target's constants, so named here.
#[cfg(target_os = "linux")]
const MADV_COLLAPSE: libc::c_int = 25;

/// Moves the whole 2 MB pages inside `items` onto huge pages (module
/// notes); the edges, less than a huge page each, stay as they are. Returns
/// the bytes the kernel agreed to collapse (0 when refused, or when
/// `items` spans no whole huge page).
pub fn back<T>(items: &[T]) -> usize {
    let start = items.as_ptr() as usize;
    let end = start + std::mem::size_of_val(items);
    let lo = start.next_multiple_of(HUGE_PAGE);
    let hi = end / HUGE_PAGE * HUGE_PAGE;
    if hi <= lo {
        return 0;
    }
    advise(lo, hi - lo)
}

#[cfg(target_os = "linux")]
fn advise(at: usize, len: usize) -> usize {
    // SAFETY: [at, at + len) lies inside one live allocation (`back`);
    // both advices change how its pages are backed, never their contents,
    // and the collapse copies them into the huge page before remapping.
    unsafe {
        let p = at as *mut libc::c_void;
        if libc::madvise(p, len, libc::MADV_HUGEPAGE) != 0 {
            return 0;
        }
        match libc::madvise(p, len, MADV_COLLAPSE) {
            0 => len,
            _ => 0,
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(_at: usize, _len: usize) -> usize {
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The huge pages of this process's mapping that holds `at`, in kB,
    /// from `/proc/self/smaps`.
    fn huge_kb_at(at: usize) -> Option<u64> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ') {
                if let Some((a, b)) = range.split_once('-') {
                    if let (Ok(a), Ok(b)) =
                        (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                    {
                        inside = (a..b).contains(&at);
                        continue;
                    }
                }
            }
            if inside {
                if let Some(kb) = line.strip_prefix("AnonHugePages:") {
                    return kb.trim().trim_end_matches(" kB").trim().parse().ok();
                }
            }
        }
        None
    }

    #[test]
    fn whole_huge_pages_inside_are_collapsed_and_the_contents_kept() {
        let items: Vec<u32> = (0..3 * HUGE_PAGE as u32 / 4)
            .map(|i| i.wrapping_mul(2654435761))
            .collect();
        let before = items.clone();
        let got = back(&items);
        assert_eq!(items, before, "the advice must not change the contents");
        assert_eq!(got % HUGE_PAGE, 0);
        // 6 MB from a 4 KB boundary holds at least two whole huge pages.
        assert!(got == 0 || got >= 2 * HUGE_PAGE, "collapsed {got} bytes");
        if got == 0 {
            stratavec_testkit::skipped(
                "whole_huge_pages_inside_are_collapsed: the collapse",
                stratavec_testkit::Need::Hardware,
                "the kernel refused MADV_HUGEPAGE/MADV_COLLAPSE (transparent huge pages \
                 off, or a kernel before 6.1); the contents were checked",
            );
            return;
        }
        let mid = items.as_ptr() as usize + std::mem::size_of_val(&items[..]) / 2;
        if let Some(kb) = huge_kb_at(mid) {
            assert!(
                kb as usize * 1024 >= got,
                "smaps shows {kb} kB on huge pages, collapsed {got}"
            );
        }
    }

    #[test]
    fn less_than_a_huge_page_is_left_alone() {
        let items = vec![7u8; HUGE_PAGE / 2];
        assert_eq!(back(&items), 0);
        assert_eq!(back::<u8>(&[]), 0);
    }
}
