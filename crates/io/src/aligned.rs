//! Heap buffers with a chosen alignment. O_DIRECT needs buffer addresses
//! aligned to the device's logical block size, which `Vec<u8>` cannot promise.

use crate::IoError;
use std::alloc::{self, Layout};
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::path::Path;
use std::ptr::NonNull;

/// A zeroed heap buffer whose start address is a multiple of `alignment`.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: AlignedBuf uniquely owns its allocation (like Box<[u8]>); shared
// access only reads through `&self`, mutation needs `&mut self`.
unsafe impl Send for AlignedBuf {}
// SAFETY: as above — `&AlignedBuf` gives only read access.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes aligned to `alignment` (a power of two).
    /// `None` if the alignment is not a power of two, the size overflows or
    /// the allocator refuses it (a size read from a damaged file must fail
    /// the caller, not abort the process in `handle_alloc_error`).
    pub fn try_new(len: usize, alignment: usize) -> Option<Self> {
        let layout = Layout::from_size_align(len, alignment).ok()?;
        if len == 0 {
            // A zero-size allocation is not allowed; a dangling, aligned
            // pointer is the standard stand-in and is never dereferenced.
            let ptr = NonNull::new(alignment as *mut u8)?;
            return Some(AlignedBuf { ptr, layout });
        }
        // SAFETY: the layout has a non-zero size (checked above).
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw)?;
        Some(AlignedBuf { ptr, layout })
    }

    /// Like [`AlignedBuf::try_new`]; panics on a non-power-of-two alignment
    /// (a programming error, alignments are constants) and aborts when the
    /// allocator refuses, as `Vec` does. For sizes that come from a file or
    /// a caller, use [`AlignedBuf::slots`].
    pub fn new(len: usize, alignment: usize) -> Self {
        if !alignment.is_power_of_two() {
            panic!("AlignedBuf::new({len}, {alignment}): alignment must be a power of two");
        }
        match Self::try_new(len, alignment) {
            Some(b) => b,
            None => match Layout::from_size_align(len, alignment) {
                Ok(layout) => alloc::handle_alloc_error(layout),
                Err(_) => panic!("AlignedBuf::new({len}, {alignment}): size overflows"),
            },
        }
    }

    /// The buffers of a reader of `path`: `slots` slots of `slot_bytes`,
    /// aligned to `alignment`. A size that overflows or an allocation the
    /// system refuses (an address-space limit, no overcommit) is an error
    /// naming the reader's file and the sizes, never an abort.
    pub fn slots(
        path: &Path,
        slots: usize,
        slot_bytes: usize,
        alignment: usize,
    ) -> Result<Self, IoError> {
        slots
            .checked_mul(slot_bytes)
            .and_then(|len| Self::try_new(len, alignment))
            .ok_or_else(|| IoError::InvalidOptions {
                path: path.to_path_buf(),
                what: "read buffers",
                expected: "an allocation the system grants".into(),
                found: format!("{slots} slots x {slot_bytes} bytes refused"),
            })
    }

    pub fn len(&self) -> usize {
        self.layout.size()
    }

    pub fn is_empty(&self) -> bool {
        self.layout.size() == 0
    }

    pub fn alignment(&self) -> usize {
        self.layout.align()
    }

    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// Raw pointer for handing ranges to the kernel (io_uring) without
    /// creating a Rust reference that the kernel's writes would alias.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr is valid for len bytes (allocated and zeroed, or dangling
        // with len 0) for as long as self lives; we hold `&self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.layout.size()) }
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and `&mut self` makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.layout.size()) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if self.layout.size() != 0 {
            // SAFETY: allocated in try_new with exactly this layout.
            unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) }
        }
    }
}

impl fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("len", &self.len())
            .field("alignment", &self.alignment())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_zeroed_and_writable() {
        for &align in &[1usize, 512, 4096, 65536] {
            let mut b = AlignedBuf::new(3 * 4096 + 7, align);
            assert_eq!(b.as_ptr() as usize % align, 0);
            assert!(b.iter().all(|&x| x == 0));
            b[5] = 9;
            assert_eq!(b[5], 9);
            assert_eq!(b.len(), 3 * 4096 + 7);
        }
    }

    #[test]
    fn zero_len_and_bad_alignment() {
        let b = AlignedBuf::new(0, 4096);
        assert!(b.is_empty());
        assert_eq!(&b[..], &[] as &[u8]);
        assert!(AlignedBuf::try_new(10, 3).is_none());
    }

    /// Sizes no allocator grants are errors naming the file, not aborts.
    #[test]
    fn refused_and_overflowing_sizes_are_errors() {
        let path = Path::new("/x/pages.bin");
        let e = AlignedBuf::slots(path, 64, usize::MAX / 2, 4096).unwrap_err();
        assert!(e.to_string().contains("/x/pages.bin"), "{e}");
        let e = AlignedBuf::slots(path, 2, isize::MAX as usize / 2 + 1, 4096).unwrap_err();
        assert!(e.to_string().contains("read buffers"), "{e}");
        // 1 PiB: more than any machine's memory and swap, so the allocator
        // returns null (black_box: an unused allocation may be elided).
        let e = std::hint::black_box(AlignedBuf::slots(path, 1 << 20, 1 << 30, 4096)).unwrap_err();
        assert!(
            e.to_string().contains("1048576 slots x 1073741824 bytes"),
            "{e}"
        );
        assert_eq!(AlignedBuf::slots(path, 4, 4096, 4096).unwrap().len(), 16384);
    }
}
