//! A reader over bytes already in memory: for tests, and for memory tiers
//! where the "device" is load/store addressable (`ram`: the file copied into
//! anonymous memory; `mmap` and `simulated:...`: the file mapped, see
//! [`crate::tier`]). Same slot discipline as the disk backends, so search
//! code cannot tell the difference except by speed.
//!
//! A slot is a view into the image, not a copy: a memory tier is load/store
//! addressable, so a read costs what touching its bytes costs. (Copying each
//! 8 KB record into a slot buffer was the largest single item of the laser
//! search's CPU through this backend, ~46 µs of ~120 a query at 768-d.)
//! The image of a file is loaded once and shared by every reader of it
//! that is alive ([`shared_image`]), into anonymous memory advised to use
//! transparent huge pages: a search touches records scattered over the
//! whole file, and with 4 KB pages nearly every first touch of a record
//! also missed the TLB (measured on wordnet-mpnet through this backend at
//! 1 thread: diskann 5,600 → 6,700 QPS, laser 8,400 → 9,000). Every
//! memory backend prefetches a read's lines when it is submitted, as the
//! mapped tiers always did: on wordnet-mpnet at 2 threads, in back-to-back
//! runs of the binary without and with it, laser 16,035 → 17,805 QPS and
//! diskann 9,903 → 10,351 (L = 28 and 60, R@10 0.95).

use std::collections::{HashMap, VecDeque};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, Weak};

use crate::slots::SlotTable;
use crate::tier::{due_ns, now_ns, prefetch, TierTiming};
use crate::{BlockReader, Completion, IoCounters, IoError, ReadRequest};

/// Reads "happen" at `submit`, so a pushed-but-unsubmitted read has not
/// finished yet — as with a real device. Under a simulated tier a read
/// finishes at its due time instead (`reap` waits for it).
pub struct RamReader {
    data: Arc<Image>,
    table: SlotTable,
    /// Where each slot's last read starts in `data`.
    starts: Vec<usize>,
    queued: Vec<u32>,
    /// Submitted, not yet reaped, with the time (`tier::now_ns`) each is
    /// done: the slot stays busy until the caller reaps it. Due times only
    /// grow along the queue (a fixed latency after a growing submit time,
    /// or a link that only moves forward), so the front is the first due.
    ready: VecDeque<(u32, u64)>,
    timing: Option<TierTiming>,
    name: &'static str,
}

/// A file's bytes in memory.
pub struct Image {
    bytes: ImageBytes,
    /// When the simulated link of this file falls idle (`tier::due_ns`):
    /// every reader of one image shares it, as they would share a device.
    link: AtomicU64,
}

enum ImageBytes {
    /// Anonymous memory (huge pages where the kernel grants them), or the
    /// file itself mapped.
    Map(memmap2::Mmap),
    Vec(Vec<u8>),
}

impl std::ops::Deref for Image {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.bytes {
            ImageBytes::Map(m) => m,
            ImageBytes::Vec(v) => v,
        }
    }
}

impl From<Vec<u8>> for Image {
    fn from(v: Vec<u8>) -> Image {
        Image::new(ImageBytes::Vec(v))
    }
}

/// How an image holds its file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Residence {
    /// Copied into anonymous memory at open (`ram`).
    Copied,
    /// Mapped where it lies (`mmap`, `simulated`): page cache, or the tier
    /// itself on a DAX file.
    Mapped,
}

impl Image {
    fn new(bytes: ImageBytes) -> Image {
        Image {
            bytes,
            link: AtomicU64::new(0),
        }
    }

    /// Maps `path` read-only, every page mapped up front: a tier is
    /// memory, and a search must meet the tier's latency (or the simulated
    /// one), not page faults. Random-access advice keeps the kernel from
    /// reading ahead around a fault.
    pub fn map(path: &Path) -> std::io::Result<Image> {
        let file = std::fs::File::open(path)?;
        if file.metadata()?.len() == 0 {
            return Ok(Image::from(Vec::new()));
        }
        // SAFETY: read-only and private to this process; stratavec writes
        // index files to a temporary sibling and renames it over the old
        // one, so a mapped file is never truncated or rewritten in place
        // (see `map_readonly`).
        let map = unsafe { memmap2::MmapOptions::new().populate().map(&file)? };
        #[cfg(target_os = "linux")]
        let _ = map.advise(memmap2::Advice::Random);
        Ok(Image::new(ImageBytes::Map(map)))
    }

    /// Reads `path` into anonymous memory advised `MADV_HUGEPAGE` (the
    /// advice is a hint: refused, the pages are 4 KB and nothing else
    /// changes).
    pub fn load(path: &Path) -> std::io::Result<Image> {
        use std::io::Read;
        let mut file = std::fs::File::open(path)?;
        let len = file.metadata()?.len() as usize;
        if len == 0 {
            return Ok(Image::from(Vec::new()));
        }
        let mut map = memmap2::MmapMut::map_anon(len)?;
        #[cfg(target_os = "linux")]
        let _ = map.advise(memmap2::Advice::HugePage);
        file.read_exact(&mut map[..])?;
        Ok(Image::new(ImageBytes::Map(map.make_read_only()?)))
    }
}

/// The file's identity: a replaced or rewritten file is loaded again.
type Identity = (u64, u64, u64, i64, i64);

/// Loaded images by path and residence, held weakly (the readers own them).
type Images = HashMap<(PathBuf, Residence), (Identity, Weak<Image>)>;

static IMAGES: Mutex<Option<Images>> = Mutex::new(None);

/// The bytes of `path`, read (or mapped) once while any reader holds them:
/// readers of the same unchanged file (one a search thread) share one image.
pub fn shared_image(path: &Path, residence: Residence) -> Result<Arc<Image>, IoError> {
    let err = |op: &'static str| {
        let path = path.to_path_buf();
        move |cause| IoError::File { op, path, cause }
    };
    let m = std::fs::metadata(path).map_err(err("stat"))?;
    let id = (m.dev(), m.ino(), m.len(), m.mtime(), m.mtime_nsec());
    let mut images = IMAGES.lock().unwrap_or_else(|e| e.into_inner());
    let images = images.get_or_insert_with(HashMap::new);
    let key = (path.to_path_buf(), residence);
    if let Some(data) = images
        .get(&key)
        .filter(|(have, _)| *have == id)
        .and_then(|(_, weak)| weak.upgrade())
    {
        return Ok(data);
    }
    let image = match residence {
        Residence::Copied => Image::load(path).map_err(err("read into memory")),
        Residence::Mapped => Image::map(path).map_err(err("map")),
    };
    let data = Arc::new(image?);
    images.retain(|_, (_, weak)| weak.strong_count() > 0);
    images.insert(key, (id, Arc::downgrade(&data)));
    Ok(data)
}

impl RamReader {
    /// `name_for_errors` is the path errors name (the file the bytes came from).
    pub fn new(
        data: Arc<Image>,
        name_for_errors: PathBuf,
        slots: usize,
        slot_bytes: usize,
    ) -> Result<RamReader, IoError> {
        let table = SlotTable::new(name_for_errors, slots, slot_bytes, 1)?;
        Ok(RamReader {
            data,
            table,
            starts: vec![0; slots],
            queued: Vec::new(),
            ready: VecDeque::new(),
            timing: None,
            name: "ram",
        })
    }

    /// The reader of a mapped tier (`mmap`); with `timing`, reads also
    /// complete no sooner than it allows (`simulated`).
    pub fn tier(mut self, timing: Option<TierTiming>) -> RamReader {
        self.timing = timing;
        self.name = match timing {
            Some(_) => "simulated",
            None => "mmap",
        };
        self
    }

    fn run_queued(&mut self) {
        let size = self.data.len() as u64;
        let now = if self.timing.is_some() { now_ns() } else { 0 };
        for slot in std::mem::take(&mut self.queued) {
            let mut due = now;
            if let Some(p) = self.table.pending_mut(slot) {
                if p.offset < size {
                    let start = p.offset as usize;
                    p.done = (p.len as usize).min(self.data.len() - start) as u32;
                    self.starts[slot as usize] = start;
                    // Every memory backend prefetches a read's lines when it
                    // is submitted (paper 002 §5, software pipelining): the
                    // caller parses the record only after it has submitted
                    // the rest of the batch, and the lines arrive meanwhile.
                    prefetch(&self.data[start..start + p.done as usize]);
                }
                if let Some(t) = self.timing {
                    due = due_ns(t, &self.data.link, now, p.len);
                }
            }
            self.ready.push_back((slot, due));
        }
    }

    /// Moves the reads that are done by now (all of them, without a
    /// simulated tier) to `out`, waiting until at least `min` are.
    fn drain_due(&mut self, min: usize, out: &mut Vec<Completion>) -> usize {
        let size = self.data.len() as u64;
        let mut n = 0;
        let mut now = match self.timing {
            Some(_) => now_ns(),
            None => u64::MAX,
        };
        while let Some(&(slot, due)) = self.ready.front() {
            if due > now {
                if n >= min {
                    break;
                }
                // A simulated tier's latency is 0.3-3 µs: far below what
                // sleeping can time, so the wait spins (as a CPU stalled
                // on a load from the tier would), on the clock alone: a
                // `pause` costs up to ~50 ns, a sixth of the shortest
                // setting.
                now = now_ns();
                continue;
            }
            self.ready.pop_front();
            out.extend(self.table.finish(slot, None, size));
            n += 1;
        }
        n
    }
}

impl BlockReader for RamReader {
    fn alignment(&self) -> usize {
        1
    }
    fn slots(&self) -> usize {
        self.table.slots()
    }
    fn slot_bytes(&self) -> usize {
        self.table.slot_bytes()
    }
    fn push(&mut self, req: ReadRequest) -> Result<(), IoError> {
        self.table.claim(&req)?;
        self.queued.push(req.slot);
        Ok(())
    }
    fn submit(&mut self) -> Result<usize, IoError> {
        let n = self.queued.len();
        self.run_queued();
        Ok(n)
    }
    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<usize, IoError> {
        // Reaping more than has been submitted implies submitting the rest.
        if self.ready.len() < min {
            self.run_queued();
        }
        let min = min.min(self.ready.len());
        Ok(self.drain_due(min, out))
    }
    /// The image from the slot's last read on, `slot_bytes` long (shorter
    /// at the end of the file): the bytes past what the read returned are
    /// unspecified, as in a disk backend's buffer.
    fn slot(&self, slot: u32) -> &[u8] {
        let range = self.table.range(slot);
        if self.table.is_busy(slot) {
            return &[];
        }
        let start = self.starts[slot as usize].min(self.data.len());
        &self.data[start..(start + range.len()).min(self.data.len())]
    }
    fn in_flight(&self) -> usize {
        self.table.in_flight()
    }
    fn counters(&self) -> IoCounters {
        self.table.counters()
    }
    fn name(&self) -> &'static str {
        self.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Readers of one file share its image; a rewritten file is read again;
    /// a slot is a view of the image at the read's offset.
    #[test]
    fn images_are_shared_and_slots_are_views() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pages.bin");
        let bytes: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let a = shared_image(&path, Residence::Copied).unwrap();
        let b = shared_image(&path, Residence::Copied).unwrap();
        let mapped = shared_image(&path, Residence::Mapped).unwrap();
        assert!(!Arc::ptr_eq(&a, &mapped));
        assert_eq!(&a[..], &mapped[..]);
        drop(mapped);
        assert!(Arc::ptr_eq(&a, &b));
        let mut r = RamReader::new(a, path.clone(), 2, 8192).unwrap();
        r.push(ReadRequest {
            offset: 12_288,
            len: 8192,
            slot: 1,
            tag: 3,
        })
        .unwrap();
        r.submit().unwrap();
        let mut out = Vec::new();
        r.reap(1, &mut out).unwrap();
        assert_eq!(out[0].result.as_ref().ok(), Some(&(20_000 - 12_288)));
        assert_eq!(r.slot(1), &bytes[12_288..]);
        drop((r, b));
        // Rewritten (another length): a new image.
        std::fs::write(&path, &bytes[..4096]).unwrap();
        assert_eq!(shared_image(&path, Residence::Copied).unwrap().len(), 4096);
    }
}
