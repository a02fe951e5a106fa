//! An index that changes (issue #55), against brute force over its live
//! set: inserts searched from the delta, deletes never returned, the same
//! answers after a reopen replays the log, bad batches refused with what
//! was wrong, a retried batch applied once, one writer at a time.

use crate::common;

use common::*;
use std::collections::HashSet;
use stratavec::data::Metric;
use stratavec::update::live::LiveIndex;
use stratavec::OpenOptions;

const DIM: usize = 16;

/// Brute-force top k ids over `live` (id, vector) by squared L2.
fn brute(live: &[(i64, &[f32])], q: &[f32], k: usize) -> Vec<i64> {
    let mut d: Vec<(f32, i64)> = live
        .iter()
        .map(|(id, v)| (v.iter().zip(q).map(|(a, b)| (a - b) * (a - b)).sum(), *id))
        .collect();
    d.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    d.into_iter().take(k).map(|x| x.1).collect()
}

/// Recall@10 of `ids` (10 a query) against brute force over the rows of
/// `base` then `more` (ids = row numbers) that are not in `gone`; panics
/// naming `what` if a gone id or an empty slot is among them.
fn live_recall(
    base: &[f32],
    more: &[f32],
    gone: &[i64],
    queries: &[f32],
    ids: &[i64],
    what: &str,
) -> f64 {
    let gone: HashSet<i64> = gone.iter().copied().collect();
    let all: Vec<(i64, &[f32])> = base
        .chunks(DIM)
        .chain(more.chunks(DIM))
        .enumerate()
        .map(|(i, v)| (i as i64, v))
        .filter(|(id, _)| !gone.contains(id))
        .collect();
    let mut hits = 0;
    for (qi, q) in queries.chunks(DIM).enumerate() {
        let got = &ids[qi * 10..(qi + 1) * 10];
        assert!(
            got.iter().all(|id| *id >= 0 && !gone.contains(id)),
            "{what}: a deleted id came back: {got:?}"
        );
        let want = brute(&all, q, 10);
        hits += got.iter().filter(|id| want.contains(id)).count();
    }
    hits as f64 / (queries.len() / DIM * 10) as f64
}

fn live_open(dir: &std::path::Path) -> LiveIndex {
    LiveIndex::open(dir, &OpenOptions::default()).unwrap()
}

#[test]
fn inserts_and_deletes_are_searched_as_a_fresh_set_would_be() {
    let tmp = tempdir();
    let dir = tmp.path().join("index");
    let (base, queries) = synth(2000, 50, DIM, 61);
    let (more, _) = synth(600, 0, DIM, 62);
    build_f32(&dir, &base, DIM, &small_params(Metric::L2), 2);
    let index = live_open(&dir);
    // 600 inserted in three batches (ids 2000..2600, given by the index),
    // then 300 of the generation's rows and 100 of the new ones deleted.
    for (b, chunk) in more.chunks(200 * DIM).enumerate() {
        let a = index.add(chunk, None, 0).unwrap();
        assert_eq!((a.seq, a.count), (b as u64 + 1, 200));
    }
    let gone: Vec<i64> = (0..300)
        .map(|i| i * 6)
        .chain((0..100).map(|i| 2000 + i * 5))
        .collect();
    let a = index.remove(&gone, 0).unwrap();
    assert_eq!((a.count, a.missing), (400, 0));
    assert_eq!(index.len(), 2200);
    assert_eq!(index.pending(), (500, 300));

    let params = search_params(10, 64);
    let res = index.search(&queries, DIM, &params).unwrap();
    let recall = live_recall(&base, &more, &gone, &queries, &res.ids, "before a merge");
    assert!(recall >= 0.9, "recall@10 over the live set {recall}");

    // A reopen replays the log to the same answers.
    drop(index);
    let again = live_open(&dir).search(&queries, DIM, &params).unwrap();
    assert_eq!((again.ids, again.dists), (res.ids, res.dists));
}

#[test]
fn bad_batches_are_refused_with_what_was_wrong_and_log_nothing() {
    let tmp = tempdir();
    let dir = tmp.path().join("index");
    let (base, _) = synth(500, 0, DIM, 63);
    build_f32(&dir, &base, DIM, &small_params(Metric::L2), 1);
    let index = live_open(&dir);
    let v = vec![0.5f32; 2 * DIM];
    // (vectors, ids, what the message names)
    type Case<'a> = (Vec<f32>, Option<Vec<i64>>, &'a [&'a str]);
    let cases: Vec<Case> = vec![
        (vec![0.5; DIM + 1], None, &["dimension 16", "17 values"]),
        (
            {
                let mut b = v.clone();
                b[DIM + 3] = f32::NAN;
                b
            },
            None,
            &["row 1 component 3", "finite", "NaN"],
        ),
        (
            v.clone(),
            Some(vec![7000, 7000]),
            &[
                "row 1",
                "unique within a batch",
                "7000, also the id of row 0",
            ],
        ),
        (
            v.clone(),
            Some(vec![7001, 12]),
            &["row 1", "12, which is live"],
        ),
        (
            v.clone(),
            Some(vec![7002]),
            &["ids to insert", "expected 2", "found 1"],
        ),
        (v.clone(), Some(vec![-1, 7003]), &["row 0", "-1"]),
    ];
    for (vectors, ids, parts) in cases {
        let msg = err_msg(index.add(&vectors, ids.as_deref(), 0));
        assert_mentions(&msg, parts);
    }
    assert_eq!(index.len(), 500);
    // A delete of ids that are not there is counted, not refused.
    let a = index.remove(&[3, 99_999, 3], 0).unwrap();
    assert_eq!((a.seq, a.count, a.missing), (1, 1, 2));
    // A retried batch is applied once.
    let first = index.add(&v, Some(&[8000, 8001]), 42).unwrap();
    let retry = index.add(&v, Some(&[8000, 8001]), 42).unwrap();
    assert!(!first.repeated && retry.repeated);
    assert_eq!((retry.seq, retry.count), (first.seq, 2));
    assert_eq!(index.len(), 501);
    // ... and still once after a merge emptied the log, by this handle
    // and by a reopen of the merged generation (`batches.json`).
    let gone = index.remove(&[5, 6], 43).unwrap();
    index.merge(1, &stratavec::progress::Silent).unwrap();
    let retried = |h: &LiveIndex, what: &str| {
        let again = h.add(&v, Some(&[8000, 8001]), 42).unwrap();
        assert!(again.repeated, "{what}: {again:?}");
        assert_eq!(
            (again.seq, again.count, again.first_id),
            (first.seq, 2, 8000),
            "{what}"
        );
        let again = h.remove(&[5, 6], 43).unwrap();
        assert_eq!((again.repeated, again.count), (true, gone.count), "{what}");
        assert_eq!(h.len(), 499, "{what}");
    };
    retried(&index, "the merging handle");
    drop(index); // the writer lock with it
    retried(&live_open(&dir), "a reopen");
}

#[test]
fn a_second_writer_is_refused_and_readers_are_not() {
    let tmp = tempdir();
    let dir = tmp.path().join("index");
    let (base, _) = synth(400, 0, DIM, 64);
    build_f32(&dir, &base, DIM, &small_params(Metric::L2), 1);
    let (a, b) = (live_open(&dir), live_open(&dir));
    a.remove(&[1], 0).unwrap();
    let msg = err_msg(b.remove(&[2], 0));
    assert_mentions(
        &msg,
        &[
            "writer.lock",
            "held by",
            &format!("pid {}", std::process::id()),
            "one writer at a time",
        ],
    );
    // A reader opened now sees what the writer logged.
    assert_eq!(live_open(&dir).len(), 399);
    drop(a);
    // Once the first writer is gone the second may write, and first
    // catches up on what was logged since it opened.
    b.remove(&[2], 0).unwrap();
    assert_eq!(b.len(), 398);
}

/// A merge on every profile: the new generation holds the live set
/// (deleted rows gone, inserted ones in), answers it as well as before the
/// merge, a reopen gives the same answers, and writes go on after it with
/// the log's sequence numbers running on. The cluster profile (ivf, and
/// IVF-PQ) has 60 clusters, probed at 12 (16 while the deletes raise the
/// answers asked): a merge that lost a vector or a cluster member would
/// show in its recall.
#[test]
fn a_merge_writes_the_live_set_as_the_next_generation_on_every_profile() {
    let (base, queries) = synth(1500, 40, DIM, 71);
    let (more, _) = synth(300, 0, DIM, 72);
    for profile in [
        "diskann", "starling", "gorgeous", "laser", "pipeann", "octopus", "tiered", "ivf", "ivf-pq",
    ] {
        let tmp = tempdir();
        let dir = tmp.path().join("index");
        let small = small_params(Metric::L2);
        let params = stratavec::BuildParams {
            metric: small.metric,
            graph_degree: small.graph_degree,
            complexity: small.complexity,
            pq_bytes: small.pq_bytes,
            pq_sample: small.pq_sample,
            pq_iters: small.pq_iters,
            ivf_codes: profile == "ivf-pq",
            ivf_clusters: profile.starts_with("ivf").then_some(60),
            ..stratavec::BuildParams::for_profile(profile.trim_end_matches("-pq"))
        };
        let clusters = profile.starts_with("ivf");
        build_f32(&dir, &base, DIM, &params, 2);
        let index = live_open(&dir);
        index.add(&more, None, 0).unwrap();
        let gone: Vec<i64> = (0..150)
            .map(|i| i * 9)
            .chain((0..30).map(|i| 1500 + i * 7))
            .collect();
        index.remove(&gone, 0).unwrap();
        let sp = search_params(10, if clusters { 12 } else { 64 });
        let before = index.search(&queries, DIM, &sp).unwrap();
        let merged = index
            .merge(2, &stratavec::progress::Silent)
            .unwrap_or_else(|e| panic!("{profile}: merge: {e}"));
        assert_eq!(
            (merged.inserted, merged.deleted, merged.n_before),
            (270, 150, 1500),
            "{profile}"
        );
        assert_eq!(index.pending(), (0, 0), "{profile}");
        assert_eq!(index.len(), 1620, "{profile}");
        let after = index.search(&queries, DIM, &sp).unwrap();
        let recall = |ids: &[i64]| live_recall(&base, &more, &gone, &queries, ids, profile);
        let (r0, r1) = (recall(&before.ids), recall(&after.ids));
        assert!(
            r1 >= if clusters { 0.8 } else { 0.9 } && r1 >= r0 - 0.03,
            "{profile}: recall@10 {r0:.3} before the merge, {r1:.3} after"
        );
        let reopened = live_open(&dir).search(&queries, DIM, &sp).unwrap();
        assert_eq!(
            reopened.ids, after.ids,
            "{profile}: a reopen answers differently"
        );
        let a = index.remove(&[1501], 0).unwrap();
        assert_eq!(a.seq, 3, "{profile}: the log runs on after the merge");
        assert_eq!(live_open(&dir).len(), 1619, "{profile}");
        assert_eq!(
            hidden_entries(tmp.path()),
            Vec::<String>::new(),
            "{profile}: left behind"
        );
    }
}

/// A handle that does not write sees what another handle wrote (records
/// appended to the log, then a merge's new generation) without a reopen:
/// at once by `refresh`, and by itself within `REFRESH_MS` when it
/// searches; it then answers as the writer does.
#[test]
fn a_reader_follows_the_writer_without_a_reopen() {
    use stratavec::update::live::REFRESH_MS;
    let tmp = tempdir();
    let dir = tmp.path().join("index");
    let (base, queries) = synth(1000, 20, DIM, 91);
    let (more, _) = synth(300, 0, DIM, 92);
    build_f32(&dir, &base, DIM, &small_params(Metric::L2), 1);
    let (writer, reader) = (live_open(&dir), live_open(&dir));
    let sp = search_params(10, 64);
    let same = |what: &str| {
        let (w, r) = (
            writer.search(&queries, DIM, &sp).unwrap(),
            reader.search(&queries, DIM, &sp).unwrap(),
        );
        assert_eq!((r.ids, r.dists), (w.ids, w.dists), "{what}");
    };
    // 200 vectors: more than one chunk the writer applies at a time.
    writer.add(&more[..200 * DIM], None, 0).unwrap();
    writer.remove(&[3, 4, 1005], 0).unwrap();
    assert!(reader.refresh().unwrap());
    assert_eq!((reader.len(), reader.pending()), (1197, (199, 2)));
    assert!(!reader.refresh().unwrap(), "nothing new since");
    same("after a refresh");
    // By itself, within REFRESH_MS of a search.
    writer.add(&more[200 * DIM..], None, 0).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(REFRESH_MS + 30));
    same("after a search looked again");
    assert_eq!(reader.pending(), (299, 2));
    // A merge publishes a new generation: the reader moves to it.
    writer.merge(1, &stratavec::progress::Silent).unwrap();
    assert!(reader.refresh().unwrap());
    assert_eq!((reader.len(), reader.pending()), (1297, (0, 0)));
    same("after the merge");
    assert_eq!(reader.refresh_error(), None);
}
