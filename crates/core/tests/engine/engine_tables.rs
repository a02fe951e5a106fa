//! Tables as build input (issue #19): a Parquet file with an embedding
//! column and an int64 id column builds an index whose search returns those
//! ids, with the same neighbours as the same vectors from an `.fbin`; the
//! imported `.fbin` is removed however the build ends; a relayout keeps the
//! ids.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use arrow_array::types::Float32Type;
use arrow_array::{ArrayRef, FixedSizeListArray, Int64Array, RecordBatch, StringArray};
use arrow_schema::{Field, Schema};
use common::*;
use stratavec::data::{Metric, TableColumns};
use stratavec::progress::Silent;
use stratavec::{BuildParams, Index, OpenOptions};

const DIM: usize = 16;

/// A caller that asked to stop before anything began.
struct Stopped;
impl stratavec::progress::Progress for Stopped {
    fn cancelled(&self) -> bool {
        true
    }
}
const N: usize = 3000;

/// The external id of row `i`: large, negative for some, never in row order.
fn external(i: usize) -> i64 {
    (i as i64 * 7919 % N as i64) * 1_000_003 - 5_000_000_000
}

fn write_parquet(path: &Path, base: &[f32]) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("doc", arrow_schema::DataType::Utf8, false),
        Field::new(
            "embedding",
            arrow_schema::DataType::FixedSizeList(
                Arc::new(Field::new("item", arrow_schema::DataType::Float32, true)),
                DIM as i32,
            ),
            false,
        ),
        Field::new("id", arrow_schema::DataType::Int64, false),
    ]));
    let f = std::fs::File::create(path).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(f, schema.clone(), None).unwrap();
    // Row groups of 1000: the reader streams across them.
    for start in (0..N).step_by(1000) {
        let rows = start..(start + 1000).min(N);
        let emb = FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
            rows.clone()
                .map(|i| Some(base[i * DIM..(i + 1) * DIM].iter().map(|&x| Some(x)))),
            DIM as i32,
        );
        let cols: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from_iter_values(
                rows.clone().map(|i| format!("doc {i}")),
            )),
            Arc::new(emb),
            Arc::new(Int64Array::from_iter_values(rows.map(external))),
        ];
        w.write(&RecordBatch::try_new(schema.clone(), cols).unwrap())
            .unwrap();
        w.flush().unwrap();
    }
    w.close().unwrap();
}

fn columns(ids: bool) -> TableColumns {
    TableColumns {
        vectors: Some("embedding".into()),
        ids: ids.then(|| "id".into()),
        labels: None,
    }
}

#[test]
fn parquet_ids_are_returned_and_neighbours_match_the_fbin() {
    let (base, queries) = synth(N, 50, DIM, 7);
    let tmp = tempdir();
    let table = tmp.path().join("docs.parquet");
    write_parquet(&table, &base);
    let params = BuildParams {
        profile: "starling".into(),
        ..small_params(Metric::L2)
    };
    let from_table = tmp.path().join("from-table");
    stratavec::build_from_table(&table, &columns(true), &from_table, &params, 2, &Silent).unwrap();
    let from_fbin = tmp.path().join("from-fbin");
    build_f32(&from_fbin, &base, DIM, &params, 2);

    // Nothing staged is left beside the indexes.
    assert_eq!(hidden_entries(tmp.path()), Vec::<String>::new());

    let (t, f) = (open(&from_table), open(&from_fbin));
    assert!(f.ids().is_none());
    let ids = t.ids().expect("the table index keeps its ids");
    assert_eq!(ids.len(), N);
    let (rt, rf) = (search(&t, &queries, 10, 40), search(&f, &queries, 10, 40));
    assert_eq!(rt.ids, rf.ids, "same rows, so the same neighbours");
    assert_eq!(rt.dists, rf.dists);
    let got = ids.translate(&rt.ids);
    let want: Vec<i64> = rf.ids.iter().map(|&r| external(r as usize)).collect();
    assert_eq!(got, want);
    assert!(got.iter().all(|&i| i != -1));
    check_results(&rt, &base, &queries, DIM, Metric::L2);

    // The vectors are the same bytes: a byte-identical pages file.
    let pages = |d: &Path| std::fs::read(d.join("pages.bin")).unwrap();
    assert!(pages(&from_table) == pages(&from_fbin));

    // The id map is part of the index: checked at open.
    let ids_path = from_table.join("ids.bin");
    let mut bytes = std::fs::read(&ids_path).unwrap();
    bytes.pop();
    std::fs::write(&ids_path, &bytes).unwrap();
    let e = err_msg(Index::open(&from_table, &OpenOptions::default()));
    assert_mentions(&e, &["ids.bin", "size"]);
}

#[test]
fn a_table_without_an_id_column_returns_row_numbers() {
    let (base, queries) = synth(N, 20, DIM, 8);
    let tmp = tempdir();
    let table = tmp.path().join("docs.parquet");
    write_parquet(&table, &base);
    let dir = tmp.path().join("index");
    // The only vector column is found without being named.
    stratavec::build_from_file(&table, &dir, &small_params(Metric::L2), 2, &Silent).unwrap();
    let index = open(&dir);
    assert!(index.ids().is_none());
    check_results(
        &search(&index, &queries, 10, 40),
        &base,
        &queries,
        DIM,
        Metric::L2,
    );
}

#[test]
fn in_memory_ids_must_be_one_a_vector_and_unique() {
    let (base, _) = synth(200, 1, DIM, 9);
    let tmp = tempdir();
    let dir = tmp.path().join("index");
    let v = stratavec::data::Vectors::f32(&base, DIM).unwrap();
    let p = small_params(Metric::L2);
    let build =
        |ids: &[i64]| stratavec::build_index_with_ids(v, Some(ids), "data", &dir, &p, 1, &Silent);
    assert_mentions(
        &err_msg(build(&[1, 2, 3])),
        &["ids", "one id a vector (200)", "3"],
    );
    let mut ids: Vec<i64> = (0..200).collect();
    ids[150] = 3;
    assert_mentions(
        &err_msg(build(&ids)),
        &["row 150", "3 again (first at row 3)"],
    );
    assert!(!dir.exists(), "nothing built");
}

#[test]
fn a_failed_or_stopped_table_build_leaves_nothing_and_the_old_index() {
    let (base, _) = synth(N, 1, DIM, 10);
    let tmp = tempdir();
    let dir = tmp.path().join("index");
    build_f32(&dir, &base, DIM, &small_params(Metric::L2), 2);
    let before = read_all(&dir);
    let table = tmp.path().join("docs.parquet");
    write_parquet(&table, &base);
    // A column that is not there: refused before anything is built.
    let bad = TableColumns {
        vectors: Some("vectors".into()),
        ids: None,
        labels: None,
    };
    let e = err_msg(stratavec::build_from_table(
        &table,
        &bad,
        &dir,
        &small_params(Metric::L2),
        2,
        &Silent,
    ));
    assert_mentions(&e, &["docs.parquet", "column `vectors`", "embedding"]);
    // Stopped while reading the table.
    let e = err_msg(stratavec::build_from_table(
        &table,
        &columns(true),
        &dir,
        &small_params(Metric::L2),
        2,
        &Stopped,
    ));
    assert_mentions(&e, &["stopped on request"]);
    assert_eq!(read_all(&dir), before);
    assert_eq!(hidden_entries(tmp.path()), Vec::<String>::new());
}

#[test]
fn a_killed_builds_imported_table_is_removed_by_the_next_build() {
    let (base, _) = synth(500, 1, DIM, 11);
    let tmp = tempdir();
    let dir = tmp.path().join("index");
    // What a build killed while importing leaves (pid 2^22+1: no process).
    let stale = tmp.path().join(".index.import-4194305-0.fbin");
    std::fs::write(&stale, b"partial").unwrap();
    build_f32(&dir, &base, DIM, &small_params(Metric::L2), 1);
    assert!(!stale.exists());
}

/// `--label-column` (issue #56): a string column becomes labels named by
/// its values (here each row's own "doc i"), which filters can name; an
/// integer column of negative values is refused naming the column and row.
#[test]
fn a_label_column_labels_the_vectors() {
    let (base, _) = synth(N, 0, DIM, 83);
    let tmp = tempdir();
    let table = tmp.path().join("docs.parquet");
    write_parquet(&table, &base);
    let dir = tmp.path().join("index");
    let cols = TableColumns {
        labels: Some("doc".into()),
        ..columns(true)
    };
    let params = BuildParams {
        graph_degree: 16,
        complexity: 32,
        pq_bytes: 8,
        ..BuildParams::for_profile("diskann")
    };
    stratavec::build_from_table(&table, &cols, &dir, &params, 2, &Silent).unwrap();
    let index = Index::open(&dir, &OpenOptions::default()).unwrap();
    let labels = index.labels().expect("labels from the column");
    assert_eq!(labels.names()[17], "doc 17");
    let e = stratavec::labels::Expr::parse("\"doc 17\" OR \"doc 2999\"", labels).unwrap();
    let allowed = vec![Some(Arc::new(e.rows(labels)))];
    let q = &base[17 * DIM..18 * DIM];
    let p = search_params(10, 32);
    let r = index
        .search_filtered(
            q,
            DIM,
            &p,
            &allowed,
            stratavec::index::filtered::FilterWay::Auto,
        )
        .unwrap();
    let got: Vec<i64> = index
        .result_ids(&r.ids)
        .into_iter()
        .filter(|&i| i != -1)
        .collect();
    assert_eq!(got, vec![external(17), external(2999)]);
    let bad = TableColumns {
        labels: Some("id".into()),
        ..columns(false)
    };
    let msg = err_msg(stratavec::build_from_table(
        &table,
        &bad,
        &tmp.path().join("bad"),
        &params,
        2,
        &Silent,
    ));
    assert!(
        msg.contains("id") && msg.contains("row 0") && msg.contains("label ids"),
        "{msg}"
    );
}
