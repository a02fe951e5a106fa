//! The log against a plain reference: what was appended is what is read,
//! a cut anywhere in the last record is a torn tail that drops only it, and
//! damage anywhere before the last record is an error naming its offset.

use super::*;
use proptest::prelude::*;

const P: &str = "/x/updates.wal";

/// Kind 0: an insert, 1: an insert with labels (0-3 a row, some rows
/// none), 2: a delete.
fn op(kind: u8, ids: Vec<i64>, dim: usize, seed: u32) -> Op {
    if kind == 2 {
        return Op::Delete { ids };
    }
    let vectors = (0..ids.len() * dim)
        .map(|i| (i as u32 ^ seed) as f32 * 0.5 - 3.0)
        .collect();
    let labels = match kind {
        0 => Vec::new(),
        _ => (0..ids.len() as u32)
            .map(|r| {
                (0..(seed ^ r) % 4)
                    .map(|j| seed.wrapping_mul(j + 1) ^ r)
                    .collect()
            })
            .collect(),
    };
    Op::Insert {
        ids,
        vectors,
        labels,
    }
}

fn ops() -> impl Strategy<Value = (usize, Vec<Op>)> {
    (1usize..6).prop_flat_map(|dim| {
        let one = (
            0u8..3,
            proptest::collection::vec(any::<i64>(), 0..5),
            any::<u32>(),
        )
            .prop_map(move |(k, ids, seed)| op(k, ids, dim, seed));
        (Just(dim), proptest::collection::vec(one, 1..6))
    })
}

/// The bytes of a log of `ops` from sequence 1, and where each record starts.
fn log_bytes(dim: usize, ops: &[Op]) -> (Vec<u8>, Vec<usize>) {
    let mut bytes = file_header(dim, 1).to_vec();
    let mut starts = vec![];
    for (i, op) in ops.iter().enumerate() {
        starts.push(bytes.len());
        bytes.extend_from_slice(&encode(i as u64 + 1, 100 + i as u64, op));
    }
    (bytes, starts)
}

fn ops_of(scan: &Scan) -> Vec<Op> {
    scan.records.iter().map(|r| r.op.clone()).collect()
}

proptest! {
    #[test]
    fn what_is_appended_is_read_back((dim, ops) in ops()) {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(WAL_FILE);
        let (mut w, scan) = WalWriter::open(&path, dim).unwrap();
        prop_assert!(scan.records.is_empty());
        for (i, op) in ops.iter().enumerate() {
            prop_assert_eq!(w.append(7 + i as u64, op).unwrap(), i as u64 + 1);
        }
        let scan = read(&path, dim).unwrap();
        prop_assert_eq!(&scan.tail, &Tail::Clean);
        prop_assert_eq!(ops_of(&scan), ops.clone());
        let seqs: Vec<(u64, u64)> = scan.records.iter().map(|r| (r.seq, r.batch)).collect();
        prop_assert_eq!(seqs, (0..ops.len() as u64).map(|i| (i + 1, 7 + i)).collect::<Vec<_>>());
        prop_assert_eq!(scan.end, std::fs::metadata(&path).unwrap().len());
    }

    /// A cut inside the last record drops exactly it, reported at its
    /// offset; a cut at a record boundary is a clean, shorter log.
    #[test]
    fn a_cut_last_record_is_a_torn_tail((dim, ops) in ops(), cut in any::<prop::sample::Index>()) {
        let (bytes, starts) = log_bytes(dim, &ops);
        let last = *starts.last().unwrap();
        let len = last + cut.index(bytes.len() - last);
        let scan = scan(&bytes[..len], dim, Path::new(P)).unwrap();
        prop_assert_eq!(ops_of(&scan), ops[..ops.len() - 1].to_vec());
        prop_assert_eq!(scan.end, last as u64);
        if len == last {
            prop_assert_eq!(scan.tail, Tail::Clean);
        } else {
            let torn = matches!(scan.tail, Tail::Torn { offset, bytes, .. } if offset == last as u64 && bytes == (len - last) as u64);
            prop_assert!(torn, "{:?}", scan.tail);
        }
    }

    /// One flipped byte: in the last record, a torn tail; in any earlier
    /// one, an error that names that record's offset (never a silent drop
    /// of the acknowledged records after it).
    #[test]
    fn a_damaged_record_before_the_last_is_an_error((dim, ops) in ops(), at in any::<prop::sample::Index>(), bit in 0u8..8) {
        let (mut bytes, starts) = log_bytes(dim, &ops);
        let at = FILE_HEADER + at.index(bytes.len() - FILE_HEADER);
        bytes[at] ^= 1 << bit;
        let record = starts.iter().rposition(|&s| s <= at).unwrap();
        let result = scan(&bytes, dim, Path::new(P));
        if record + 1 == ops.len() {
            let scan = result.unwrap();
            prop_assert_eq!(ops_of(&scan), ops[..record].to_vec());
            let torn = matches!(scan.tail, Tail::Torn { offset, .. } if offset == starts[record] as u64);
            prop_assert!(torn, "{:?}", scan.tail);
        } else {
            let msg = result.unwrap_err().to_string();
            prop_assert!(msg.contains(&format!("record at offset {}", starts[record])), "{}", msg);
            prop_assert!(msg.contains("corrupt"), "{}", msg);
        }
    }
}

#[test]
fn a_torn_tail_is_cut_and_appends_go_on_after_it() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(WAL_FILE);
    let (bytes, starts) = log_bytes(3, &[op(0, vec![1, 2], 3, 9), op(2, vec![5], 3, 0)]);
    // The second record half written, then zeros a crash left past it.
    let mut torn = bytes[..starts[1] + 10].to_vec();
    torn.extend_from_slice(&[0u8; 4096]);
    std::fs::write(&path, &torn).unwrap();
    let (mut w, scan) = WalWriter::open(&path, 3).unwrap();
    assert!(matches!(scan.tail, Tail::Torn { offset, .. } if offset == starts[1] as u64));
    assert_eq!(std::fs::metadata(&path).unwrap().len(), starts[1] as u64);
    assert_eq!(w.append(0, &op(2, vec![6], 3, 0)).unwrap(), 2);
    let scan = read(&path, 3).unwrap();
    assert_eq!(
        ops_of(&scan),
        vec![op(0, vec![1, 2], 3, 9), op(2, vec![6], 3, 0)]
    );
}

#[test]
fn a_rewritten_log_goes_on_from_its_first_sequence_number() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(WAL_FILE);
    let kept = Record {
        seq: 41,
        batch: 3,
        op: op(2, vec![9], 2, 0),
    };
    write_records(&path, 2, 41, std::slice::from_ref(&kept)).unwrap();
    let (mut w, scan) = WalWriter::open(&path, 2).unwrap();
    assert_eq!((scan.first_seq, scan.records.clone()), (41, vec![kept]));
    assert_eq!(w.append(0, &op(0, vec![1], 2, 1)).unwrap(), 42);
    create(&path, 2, 50).unwrap();
    let (mut w, _) = WalWriter::open(&path, 2).unwrap();
    assert_eq!(w.append(0, &op(2, vec![1], 2, 1)).unwrap(), 50);
    let wrong = Record {
        seq: 7,
        ..Record {
            seq: 0,
            batch: 0,
            op: op(2, vec![], 2, 0),
        }
    };
    let msg = write_records(&path, 2, 8, &[wrong])
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("sequence number 8") && msg.contains("found 7"),
        "{msg}"
    );
}

#[test]
fn a_log_of_another_dimension_or_no_log_is_refused() {
    let (bytes, _) = log_bytes(4, &[op(0, vec![1], 4, 0)]);
    let msg = scan(&bytes, 8, Path::new(P)).unwrap_err().to_string();
    assert!(
        msg.contains(P) && msg.contains("dim: expected 8, found 4"),
        "{msg}"
    );
    let msg = scan(b"this is not an update log, it is text", 4, Path::new(P))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("magic"), "{msg}");
    let msg = scan(&bytes[..10], 4, Path::new(P)).unwrap_err().to_string();
    assert!(
        msg.contains("file header: expected 24 bytes, found 10 bytes"),
        "{msg}"
    );
}
