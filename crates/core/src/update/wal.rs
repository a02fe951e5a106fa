//! The write-ahead log of an index's updates (issue #55). A batch of
//! inserts or deletes is one record, appended and made durable with one
//! `fdatasync` before the batch is acknowledged; a reopen replays every
//! record the index's generation lacks. The design follows what Qdrant's,
//! Milvus's and LanceDB's logs share and what FreshDiskANN (Singh et al.
//! 2021, §4) assumes of its "redo log": records checksummed, appended
//! only, and a crash leaves at most the one unacknowledged record torn.
//!
//! Layout (little-endian): a 24-byte file header — magic `SVWAL\0\0\x01`,
//! the vector dimension (u32), a zero u32, the sequence number of the first
//! record (u64: a merge starts a new log where the generation it wrote
//! stops) — then records, each a 32-byte header and its payload:
//!
//! | bytes | field |
//! |---|---|
//! | 0..4 | payload bytes |
//! | 4..8 | CRC-32C of bytes 0..4 and 8..(32 + payload) |
//! | 8..16 | sequence number, increasing by one from the header's |
//! | 16..24 | batch id (the caller's, for idempotent retries; 0: none) |
//! | 24 | kind: 1 insert, 2 delete, 3 insert with labels |
//! | 25..28 | zero |
//! | 28..32 | count of ids |
//! | 32.. | ids (i64 each); for an insert then count × dim f32; for an insert with labels then count u32 label counts and their labels (u32 each) |
//!
//! Kind 3 came with labels (issue #56); a log without labelled inserts is
//! byte for byte what it was before.

use super::crc32c::Crc32c;
use crate::error::{Error, FileContext, Result};
use std::fs::File;
use std::io::{Read, Seek};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The log's name in an index directory.
pub const WAL_FILE: &str = "updates.wal";
const MAGIC: [u8; 8] = *b"SVWAL\0\0\x01";
const FILE_HEADER: usize = 24;
const RECORD_HEADER: usize = 32;
const INSERT: u8 = 1;
const DELETE: u8 = 2;
const INSERT_LABELLED: u8 = 3;

#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// `vectors` is `ids.len()` rows of the log's dimension, row-major;
    /// `labels` one set a row, or empty when the rows carry none.
    Insert {
        ids: Vec<i64>,
        vectors: Vec<f32>,
        labels: Vec<Vec<u32>>,
    },
    Delete {
        ids: Vec<i64>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub seq: u64,
    pub batch: u64,
    pub op: Op,
}

/// How the valid records of a log end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tail {
    /// Every byte belongs to a valid record.
    Clean,
    /// From `offset` on, `bytes` bytes are not a complete record: a write
    /// that a crash cut short (never acknowledged). They are dropped.
    Torn {
        offset: u64,
        bytes: u64,
        why: String,
    },
}

/// What a log holds: its valid records, where they end, and its tail.
#[derive(Clone, Debug, PartialEq)]
pub struct Scan {
    /// The sequence number of the log's first record.
    pub first_seq: u64,
    pub records: Vec<Record>,
    /// Offset just past the last valid record.
    pub end: u64,
    pub tail: Tail,
}

impl Scan {
    /// The sequence number the next record gets.
    pub fn next_seq(&self) -> u64 {
        self.records.last().map_or(self.first_seq, |r| r.seq + 1)
    }
}

/// The bytes of one record.
pub fn encode(seq: u64, batch: u64, op: &Op) -> Vec<u8> {
    let (kind, ids, vectors, labels): (u8, &[i64], &[f32], &[Vec<u32>]) = match op {
        Op::Insert {
            ids,
            vectors,
            labels,
        } if labels.is_empty() => (INSERT, ids, vectors, &[]),
        Op::Insert {
            ids,
            vectors,
            labels,
        } => (INSERT_LABELLED, ids, vectors, labels),
        Op::Delete { ids } => (DELETE, ids, &[], &[]),
    };
    let label_words = match labels.is_empty() {
        true => 0,
        false => labels.len() + labels.iter().map(Vec::len).sum::<usize>(),
    };
    let payload = ids.len() * 8 + vectors.len() * 4 + label_words * 4;
    let mut out = Vec::with_capacity(RECORD_HEADER + payload);
    out.extend_from_slice(&(payload as u32).to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&batch.to_le_bytes());
    out.extend_from_slice(&[kind, 0, 0, 0]);
    out.extend_from_slice(&(ids.len() as u32).to_le_bytes());
    for id in ids {
        out.extend_from_slice(&id.to_le_bytes());
    }
    for v in vectors {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for set in labels {
        out.extend_from_slice(&(set.len() as u32).to_le_bytes());
    }
    for label in labels.iter().flatten() {
        out.extend_from_slice(&label.to_le_bytes());
    }
    let crc = checksum(&out);
    out[4..8].copy_from_slice(&crc.to_le_bytes());
    out
}

/// A record's CRC: its bytes but the checksum field.
fn checksum(record: &[u8]) -> u32 {
    let mut c = Crc32c::default();
    c.update(&record[..4]);
    c.update(&record[8..]);
    c.finish()
}

/// The file header of a log of `dim`-wide vectors.
fn file_header(dim: usize, first_seq: u64) -> [u8; FILE_HEADER] {
    let mut h = [0u8; FILE_HEADER];
    h[..8].copy_from_slice(&MAGIC);
    h[8..12].copy_from_slice(&(dim as u32).to_le_bytes());
    h[16..24].copy_from_slice(&first_seq.to_le_bytes());
    h
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Why the record at the start of `b` is not valid, or its length.
fn check_record(b: &[u8]) -> std::result::Result<usize, String> {
    if b.len() < RECORD_HEADER {
        return Err(format!(
            "a {RECORD_HEADER}-byte record header, found {} bytes",
            b.len()
        ));
    }
    let len = RECORD_HEADER + u32_at(b, 0) as usize;
    if len > b.len() {
        return Err(format!(
            "a record of {len} bytes (its header says), found {} bytes",
            b.len()
        ));
    }
    let (want, found) = (u32_at(b, 4), checksum(&b[..len]));
    if want != found {
        return Err(format!(
            "checksum {want:#010x} (CRC-32C), found {found:#010x}"
        ));
    }
    Ok(len)
}

/// Reads every valid record of a log's bytes (`path` is for messages). A
/// bad record at the end is a torn tail; a bad record followed by a valid
/// one is corruption of acknowledged data and an error, as is a record
/// whose checksum holds but whose contents do not fit the log.
pub fn scan(bytes: &[u8], dim: usize, path: &Path) -> Result<Scan> {
    // A log is created whole (`create`: written beside, renamed), so a
    // short header is damage, not a torn write.
    if bytes.len() < FILE_HEADER {
        return Err(Error::index(
            path,
            "file header",
            format!("{FILE_HEADER} bytes"),
            format!("{} bytes", bytes.len()),
        ));
    }
    if bytes[..8] != MAGIC {
        return Err(Error::index(
            path,
            "magic",
            "SVWAL (a stratavec update log, version 1)",
            format!("{:?}", &bytes[..8]),
        ));
    }
    let found_dim = u32_at(bytes, 8) as usize;
    if found_dim != dim {
        return Err(Error::index(path, "dim", dim, found_dim));
    }
    let first_seq = u64_at(bytes, 16);
    let mut scan = Scan {
        first_seq,
        records: Vec::new(),
        end: FILE_HEADER as u64,
        tail: Tail::Clean,
    };
    let mut at = FILE_HEADER;
    while at < bytes.len() {
        let len = match check_record(&bytes[at..]) {
            Ok(len) => len,
            Err(why) => return bad_record(bytes, at, why, scan, path),
        };
        let record = decode(&bytes[at..at + len], dim, at, path)?;
        let want = scan.next_seq();
        if record.seq != want {
            return Err(Error::index(
                path,
                format!("sequence number of the record at offset {at}"),
                want,
                record.seq,
            ));
        }
        scan.records.push(record);
        at += len;
        scan.end = at as u64;
    }
    Ok(scan)
}

/// The record at `at` is not valid. Only the last append can be torn (each
/// one is fsynced before the next starts, and a cut tail is truncated
/// before anything is appended again), so if a valid later record starts
/// anywhere after it, acknowledged data was damaged: an error, never a
/// silent drop. Otherwise it is a torn tail, dropped. Searching every
/// offset (not just where the bad header says the record ends) is what
/// makes a damaged length field an error too.
fn bad_record(bytes: &[u8], at: usize, why: String, mut scan: Scan, path: &Path) -> Result<Scan> {
    let after = scan.next_seq();
    let valid_at = |start: usize| {
        check_record(&bytes[start..]).is_ok()
            && matches!(bytes[start + 24], INSERT | DELETE | INSERT_LABELLED)
            && u64_at(bytes, start + 8) > after
    };
    if let Some(next) =
        (at + 1..bytes.len().saturating_sub(RECORD_HEADER - 1)).find(|&s| valid_at(s))
    {
        return Err(Error::index(
            path,
            format!("record at offset {at}"),
            why,
            format!("a bad record with a valid one after it at offset {next}: the log is corrupt, not torn (refusing to drop acknowledged updates)"),
        ));
    }
    scan.tail = Tail::Torn {
        offset: at as u64,
        bytes: (bytes.len() - at) as u64,
        why,
    };
    Ok(scan)
}

fn decode(b: &[u8], dim: usize, at: usize, path: &Path) -> Result<Record> {
    let (kind, count) = (b[24], u32_at(b, 28) as usize);
    let payload = b.len() - RECORD_HEADER;
    let bad_payload = |want: String| {
        Error::index(
            path,
            format!("payload of the record at offset {at}"),
            want,
            format!("{payload} bytes"),
        )
    };
    let rows = match kind {
        INSERT | INSERT_LABELLED => dim,
        DELETE => 0,
        other => {
            return Err(Error::index(
                path,
                format!("kind of the record at offset {at}"),
                "1 (insert), 2 (delete) or 3 (insert with labels)",
                other,
            ))
        }
    };
    let fixed = count * (8 + rows * 4);
    let exact = kind != INSERT_LABELLED;
    if (exact && payload != fixed) || payload < fixed + if exact { 0 } else { count * 4 } {
        return Err(bad_payload(format!(
            "{fixed} bytes ({count} ids, dim {dim}){}",
            if exact { "" } else { " and the label counts" }
        )));
    }
    let body = &b[RECORD_HEADER..];
    let ids: Vec<i64> = body[..count * 8]
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().expect("8")))
        .collect();
    let words = |from: usize| {
        body[from..]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4")))
    };
    let op = match kind {
        DELETE => Op::Delete { ids },
        _ => Op::Insert {
            ids,
            vectors: body[count * 8..fixed]
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().expect("4")))
                .collect(),
            labels: match exact {
                true => Vec::new(),
                false => {
                    let counts: Vec<usize> = words(fixed).take(count).map(|c| c as usize).collect();
                    let total: usize = counts.iter().sum();
                    if payload != fixed + (count + total) * 4 {
                        return Err(bad_payload(format!(
                            "{} bytes ({count} ids, dim {dim}, {total} labels)",
                            fixed + (count + total) * 4
                        )));
                    }
                    let mut all = words(fixed + count * 4);
                    counts
                        .iter()
                        .map(|&c| all.by_ref().take(c).collect())
                        .collect()
                }
            },
        },
    };
    Ok(Record {
        seq: u64_at(b, 8),
        batch: u64_at(b, 16),
        op,
    })
}

/// Reads the log at `path` without changing it (a reader's replay); an
/// absent log is an empty one.
pub fn read(path: &Path, dim: usize) -> Result<Scan> {
    let mut bytes = Vec::new();
    match File::open(path) {
        Ok(mut f) => {
            f.read_to_end(&mut bytes).at("read update log", path)?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Scan {
                first_seq: 1,
                records: vec![],
                end: 0,
                tail: Tail::Clean,
            })
        }
        Err(e) => return Err(Error::file("open update log", path, e)),
    }
    scan(&bytes, dim, path)
}

/// What a reader of a log another process appends to finds past `offset`
/// (the end of what it read before; 0 for nothing yet): the complete
/// records from sequence number `next_seq` on, and the offset just past
/// the last of them. A record still being written (a short or unchecked
/// tail) ends the read without error: the reader looks again later. The
/// log is never rewritten in place (a merge starts a new one in a new
/// directory), so an offset stays valid for as long as the file is there.
pub fn read_after(
    path: &Path,
    dim: usize,
    offset: u64,
    next_seq: u64,
) -> Result<(Vec<Record>, u64)> {
    if offset < FILE_HEADER as u64 {
        let scan = read(path, dim)?;
        let records = scan
            .records
            .into_iter()
            .filter(|r| r.seq >= next_seq)
            .collect();
        return Ok((records, scan.end));
    }
    let mut bytes = Vec::new();
    let mut f = File::open(path).at("open update log", path)?;
    f.seek(std::io::SeekFrom::Start(offset))
        .at("seek update log", path)?;
    f.read_to_end(&mut bytes).at("read update log", path)?;
    let (mut at, mut out) = (0usize, Vec::new());
    while let Ok(len) = check_record(&bytes[at..]) {
        let record = decode(&bytes[at..at + len], dim, offset as usize + at, path)?;
        if record.seq >= next_seq {
            if record.seq != next_seq + out.len() as u64 {
                return Err(Error::index(
                    path,
                    format!(
                        "sequence number of the record at offset {}",
                        offset as usize + at
                    ),
                    next_seq + out.len() as u64,
                    record.seq,
                ));
            }
            out.push(record);
        }
        at += len;
    }
    Ok((out, offset + at as u64))
}

/// The one appender of a log (the writer lock, `update/lock.rs`, makes
/// it the only one).
pub struct WalWriter {
    file: File,
    path: PathBuf,
    end: u64,
    next_seq: u64,
    /// A failed fsync leaves the durability of what was written unknown
    /// (the kernel may have dropped the dirty pages: "fsyncgate"), so the
    /// writer refuses further appends until the log is reopened.
    broken: Option<String>,
}

impl WalWriter {
    /// Opens the log at `path` for appending, creating it (durably) if
    /// absent. A torn tail is cut off, and reported in the returned scan.
    pub fn open(path: &Path, dim: usize) -> Result<(WalWriter, Scan)> {
        if !path.exists() {
            create(path, dim, 1)?;
        }
        let scan = read(path, dim)?;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .at("open update log for writing", path)?;
        if let Tail::Torn { .. } = scan.tail {
            file.set_len(scan.end)
                .at("cut the torn tail of update log", path)?;
            file.sync_data().at("fsync update log", path)?;
        }
        let (end, next_seq) = (scan.end, scan.next_seq());
        Ok((
            WalWriter {
                file,
                path: path.to_path_buf(),
                end,
                next_seq,
                broken: None,
            },
            scan,
        ))
    }

    /// Appends one batch and makes it durable; its sequence number once it
    /// is. A failed write leaves the log as it was.
    pub fn append(&mut self, batch: u64, op: &Op) -> Result<u64> {
        if let Some(why) = &self.broken {
            return Err(Error::index(
                &self.path,
                "update log",
                "a log whose last fsync succeeded",
                format!("{why}; reopen the index to go on"),
            ));
        }
        let seq = self.next_seq;
        let bytes = encode(seq, batch, op);
        let mut written = self.file.write_all_at(&bytes[..bytes.len() / 2], self.end);
        crate::index::interrupt::test_pause("wal-half");
        if written.is_ok() {
            let half = bytes.len() / 2;
            written = self
                .file
                .write_all_at(&bytes[half..], self.end + half as u64);
        }
        if let Err(e) = written {
            let _ = self.file.set_len(self.end);
            return Err(Error::file("append to update log", &self.path, e));
        }
        crate::index::interrupt::test_pause("wal-written");
        if let Err(e) = self.file.sync_data() {
            self.broken = Some(format!("fsync failed: {e}"));
            return Err(Error::file("fsync update log", &self.path, e));
        }
        self.end += bytes.len() as u64;
        self.next_seq += 1;
        Ok(seq)
    }

    /// Bytes of the log so far.
    pub fn len(&self) -> u64 {
        self.end
    }

    pub fn is_empty(&self) -> bool {
        self.end <= FILE_HEADER as u64
    }
}

/// Writes a log holding only its header at `path`, its first record to be
/// `first_seq`, durably (written beside it, fsynced, renamed, the directory
/// fsynced).
pub fn create(path: &Path, dim: usize, first_seq: u64) -> Result<()> {
    write_records(path, dim, first_seq, &[])
}

/// Writes a log of `records` at `path`, atomically; their sequence numbers
/// run on by one from `first_seq`. A merge keeps the records its new
/// generation lacks this way.
pub fn write_records(path: &Path, dim: usize, first_seq: u64, records: &[Record]) -> Result<()> {
    for (i, r) in records.iter().enumerate() {
        if r.seq != first_seq + i as u64 {
            return Err(Error::argument(
                "update log records",
                format!("sequence number {}", first_seq + i as u64),
                r.seq,
            ));
        }
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut bytes = file_header(dim, first_seq).to_vec();
    for r in records {
        bytes.extend_from_slice(&encode(r.seq, r.batch, &r.op));
    }
    std::fs::write(&tmp, &bytes).at("write update log", &tmp)?;
    File::open(&tmp)
        .and_then(|f| f.sync_all())
        .at("fsync update log", &tmp)?;
    std::fs::rename(&tmp, path).at("rename update log into place", path)?;
    if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        File::open(dir)
            .and_then(|f| f.sync_all())
            .at("fsync directory", dir)?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "wal_tests.rs"]
mod tests;
