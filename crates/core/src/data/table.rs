//! Parquet and Arrow IPC tables as build input: embeddings usually live in
//! a table beside their ids, not in an `.fbin`. One column holds the vectors
//! (a fixed-size list or a list of float32, float16 or float64) and,
//! optionally, an integer column holds ids to return instead of row numbers.
//!
//! The table is streamed batch by batch into an `.fbin` (the build maps
//! that, as it maps any other vector file), so a table larger than RAM is
//! never held whole; only the ids (8 bytes a row) are kept in memory.

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type,
    UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef, OffsetSizeTrait, RecordBatch};
use arrow_schema::{ArrowError, DataType, Schema};

use super::DataError;

/// Rows a batch holds while streaming (a few MB of vectors at 384-d).
const BATCH_ROWS: usize = 4096;

/// Extensions read as tables.
const TABLE_EXTENSIONS: [&str; 6] = ["parquet", "pq", "arrow", "feather", "ipc", "arrows"];

/// Whether `path` names a Parquet or Arrow IPC file (by extension).
pub fn is_table(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| TABLE_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

/// Which columns of a table to read.
#[derive(Clone, Debug, Default)]
pub struct TableColumns {
    /// The column of vectors; `None`: the table's only vector-like column.
    pub vectors: Option<String>,
    /// An integer column of ids to keep; `None`: row numbers are the ids.
    pub ids: Option<String>,
    /// A column of labels (`table_labels`): integers or strings, one or a
    /// list a row; `None`: no labels from the table.
    pub labels: Option<String>,
}

/// What [`import_table`] wrote.
#[derive(Clone, Debug)]
pub struct Imported {
    pub n: usize,
    pub dim: usize,
    /// The vector column read, and its element type ("float32", ...).
    pub column: String,
    pub element: &'static str,
    /// One id a row, in row order, when an id column was asked for.
    pub ids: Option<Vec<i64>>,
    /// One label set a row, when a label column was asked for.
    pub labels: Option<super::table_labels::TableLabels>,
}

/// Streams the vectors of `columns` in the table at `path` into the `.fbin`
/// at `out` (created or truncated), checking every row: no nulls, one
/// dimension. Ids must be unique. `stop` is polled between batches; `None`
/// means it said stop (the partial `out` is the caller's to remove).
pub fn import_table(
    path: &Path,
    columns: &TableColumns,
    out: &Path,
    stop: &dyn Fn() -> bool,
) -> Result<Option<Imported>, DataError> {
    let schema = open_batches(path, None)?.0;
    let (v, id_index) = indices_of(&schema, columns, path)?;
    let vector_name = schema.field(v).name().clone();
    let element = element_name(schema.field(v).data_type());
    let id_name = id_index.map(|i| schema.field(i).name().clone());
    let label_index = match columns.labels.as_deref() {
        Some(name) => Some(super::table_labels::pick_label_column(path, &schema, name)?),
        None => None,
    };
    let mut labels = label_index.map(|_| super::table_labels::LabelReader::new());
    let mut projection = vec![v];
    projection.extend(id_index);
    projection.extend(label_index.filter(|l| Some(*l) != id_index && *l != v));
    projection.sort_unstable();
    let (_, batches) = open_batches(path, Some(projection))?;

    let write_err = |e| DataError::io(out, "write", e);
    let mut w = BufWriter::with_capacity(
        4 << 20,
        File::create(out).map_err(|e| DataError::io(out, "create", e))?,
    );
    w.write_all(&[0u8; 8]).map_err(write_err)?;
    let mut n = 0usize;
    let mut dim = None;
    let mut ids: Option<Vec<i64>> = id_name.as_ref().map(|_| Vec::new());
    let mut floats = Vec::new();
    for batch in batches {
        if stop() {
            return Ok(None);
        }
        let batch = batch.map_err(|e| arrow_error(path, "read a batch", e))?;
        let col = batch
            .column_by_name(&vector_name)
            .expect("projected column");
        floats.clear();
        append_vectors(path, &vector_name, col, n, &mut dim, &mut floats)?;
        let bytes: Vec<u8> = floats.iter().flat_map(|x| x.to_le_bytes()).collect();
        w.write_all(&bytes).map_err(write_err)?;
        if let (Some(ids), Some(name)) = (ids.as_mut(), id_name.as_deref()) {
            let col = batch.column_by_name(name).expect("projected column");
            append_ids(path, name, col, n, ids)?;
        }
        if let (Some(reader), Some(name)) = (labels.as_mut(), columns.labels.as_deref()) {
            let col = batch.column_by_name(name).expect("projected column");
            reader.append(path, name, col, n)?;
        }
        n += batch.num_rows();
    }
    let Some(dim) = dim.filter(|_| n > 0) else {
        return Err(DataError::Column {
            path: path.to_path_buf(),
            column: vector_name,
            row: None,
            expected: "at least 1 row".into(),
            found: "an empty table".into(),
        });
    };
    let too_big = |what: &str, v: usize| {
        DataError::invalid(path, "rows", format!("a {what} of at most {}", u32::MAX), v)
    };
    let n32 = u32::try_from(n).map_err(|_| too_big("row count", n))?;
    let d32 = u32::try_from(dim).map_err(|_| too_big("dimension", dim))?;
    let mut file = w
        .into_inner()
        .map_err(|e| DataError::io(out, "write", e.into_error()))?;
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.write_all(&[n32.to_le_bytes(), d32.to_le_bytes()].concat()))
        .map_err(write_err)?;
    if let (Some(ids), Some(name)) = (ids.as_deref(), id_name.as_deref()) {
        check_unique(path, name, ids)?;
    }
    Ok(Some(Imported {
        n,
        dim,
        column: vector_name,
        element,
        ids,
        labels: labels.map(super::table_labels::LabelReader::finish),
    }))
}

/// The vector column's index and the id column's (if any) in `schema`.
fn indices_of(
    schema: &Schema,
    columns: &TableColumns,
    path: &Path,
) -> Result<(usize, Option<usize>), DataError> {
    let v = pick_vector_column(path, schema, columns.vectors.as_deref())?;
    let i = match columns.ids.as_deref() {
        Some(name) => Some(pick_id_column(path, schema, name)?),
        None => None,
    };
    Ok((v, i))
}

/// How the table is stored, from its extension and first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TableFormat {
    Parquet,
    /// Arrow IPC file format ("Feather v2"): starts with `ARROW1`.
    IpcFile,
    /// Arrow IPC stream format.
    IpcStream,
}

fn table_format(path: &Path) -> Result<TableFormat, DataError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    if ext == "parquet" || ext == "pq" {
        return Ok(TableFormat::Parquet);
    }
    let mut magic = [0u8; 6];
    let mut f = File::open(path).map_err(|e| DataError::io(path, "open", e))?;
    let got = f
        .read(&mut magic)
        .map_err(|e| DataError::io(path, "read", e))?;
    Ok(if got == 6 && &magic == b"ARROW1" {
        TableFormat::IpcFile
    } else {
        TableFormat::IpcStream
    })
}

type Batches = Box<dyn Iterator<Item = Result<RecordBatch, ArrowError>> + Send>;

/// The table's schema and its batches, holding only the columns at
/// `projection` (all when `None`).
fn open_batches(
    path: &Path,
    projection: Option<Vec<usize>>,
) -> Result<(std::sync::Arc<Schema>, Batches), DataError> {
    let file = File::open(path).map_err(|e| DataError::io(path, "open", e))?;
    let open_err = |e| arrow_error(path, "read the table's header", e);
    match table_format(path)? {
        TableFormat::Parquet => {
            use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
            use parquet::arrow::ProjectionMask;
            let builder = ParquetRecordBatchReaderBuilder::try_new(file)
                .map_err(|e| parquet_error(path, e))?;
            let schema = builder.schema().clone();
            let builder = match projection {
                // Top-level Arrow fields are the Parquet schema's roots.
                Some(p) => {
                    let mask = ProjectionMask::roots(builder.parquet_schema(), p);
                    builder.with_projection(mask)
                }
                None => builder,
            };
            let reader = builder
                .with_batch_size(BATCH_ROWS)
                .build()
                .map_err(|e| parquet_error(path, e))?;
            Ok((schema, Box::new(reader)))
        }
        TableFormat::IpcFile => {
            let reader = arrow_ipc::reader::FileReader::try_new_buffered(file, projection)
                .map_err(open_err)?;
            Ok((reader.schema(), Box::new(reader)))
        }
        TableFormat::IpcStream => {
            let reader = arrow_ipc::reader::StreamReader::try_new(BufReader::new(file), projection)
                .map_err(open_err)?;
            Ok((reader.schema(), Box::new(reader)))
        }
    }
}

fn arrow_error(path: &Path, op: &str, e: ArrowError) -> DataError {
    DataError::invalid(path, "table", format!("a readable Arrow table ({op})"), e)
}

fn parquet_error(path: &Path, e: parquet::errors::ParquetError) -> DataError {
    DataError::invalid(path, "table", "a readable Parquet file", e)
}

/// The float type of a vector-like column, if it is one.
fn vector_element(t: &DataType) -> Option<&DataType> {
    let inner = match t {
        DataType::FixedSizeList(f, _) | DataType::List(f) | DataType::LargeList(f) => f.data_type(),
        _ => return None,
    };
    matches!(
        inner,
        DataType::Float32 | DataType::Float16 | DataType::Float64
    )
    .then_some(inner)
}

fn element_name(t: &DataType) -> &'static str {
    match vector_element(t) {
        Some(DataType::Float16) => "float16",
        Some(DataType::Float64) => "float64",
        _ => "float32",
    }
}

/// "a: Int64, b: FixedSizeList(384 x Float32)": what the table holds, for errors.
fn describe_columns(schema: &Schema) -> String {
    schema
        .fields()
        .iter()
        .map(|f| format!("{}: {}", f.name(), f.data_type()))
        .collect::<Vec<_>>()
        .join(", ")
}

const VECTOR_TYPES: &str = "a fixed-size list or list of float32, float16 or float64";

fn pick_vector_column(
    path: &Path,
    schema: &Schema,
    name: Option<&str>,
) -> Result<usize, DataError> {
    if let Some(name) = name {
        let (i, field) = find_column(path, schema, name)?;
        if vector_element(field.data_type()).is_none() {
            return Err(DataError::Column {
                path: path.to_path_buf(),
                column: name.into(),
                row: None,
                expected: VECTOR_TYPES.into(),
                found: field.data_type().to_string(),
            });
        }
        return Ok(i);
    }
    let vectors: Vec<usize> = (0..schema.fields().len())
        .filter(|&i| vector_element(schema.field(i).data_type()).is_some())
        .collect();
    match vectors[..] {
        [i] => Ok(i),
        [] => Err(DataError::invalid(
            path,
            "columns",
            format!("a column of vectors ({VECTOR_TYPES})"),
            format!("none (the table has {})", describe_columns(schema)),
        )),
        _ => Err(DataError::invalid(
            path,
            "columns",
            "one column of vectors, or the one to use named (--column)",
            format!(
                "{} columns of vectors: {}",
                vectors.len(),
                vectors
                    .iter()
                    .map(|&i| schema.field(i).name().as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

/// The column called `name`; the error lists the table's columns.
fn find_column<'a>(
    path: &Path,
    schema: &'a Schema,
    name: &str,
) -> Result<(usize, &'a arrow_schema::Field), DataError> {
    schema
        .column_with_name(name)
        .ok_or_else(|| DataError::Column {
            path: path.to_path_buf(),
            column: name.into(),
            row: None,
            expected: "a column of the table".into(),
            found: format!(
                "no such column (the table has {})",
                describe_columns(schema)
            ),
        })
}

fn pick_id_column(path: &Path, schema: &Schema, name: &str) -> Result<usize, DataError> {
    let (i, field) = find_column(path, schema, name)?;
    if !field.data_type().is_integer() {
        return Err(DataError::Column {
            path: path.to_path_buf(),
            column: name.into(),
            row: None,
            expected: "an integer column (int8 to int64, uint8 to uint64)".into(),
            found: field.data_type().to_string(),
        });
    }
    Ok(i)
}

/// Appends the rows of one batch of the vector column to `out`, checking
/// that none is null and all have one dimension (fixed by the first row).
/// `row0` is the table row of the batch's first row, for errors.
fn append_vectors(
    path: &Path,
    name: &str,
    col: &ArrayRef,
    row0: usize,
    dim: &mut Option<usize>,
    out: &mut Vec<f32>,
) -> Result<(), DataError> {
    let err = |row: usize, expected: String, found: String| DataError::Column {
        path: path.to_path_buf(),
        column: name.into(),
        row: Some((row0 + row) as u64),
        expected,
        found,
    };
    if col.null_count() > 0 {
        let row = (0..col.len()).find(|&i| col.is_null(i)).unwrap_or(0);
        return Err(err(row, "a vector".into(), "null".into()));
    }
    // Each row's range in the (flat) child array of floats.
    let (values, ranges): (&ArrayRef, Vec<(usize, usize)>) = match col.data_type() {
        DataType::FixedSizeList(_, size) => {
            let a = col.as_fixed_size_list();
            let s = *size as usize;
            (
                a.values(),
                (0..a.len()).map(|i| (i * s, (i + 1) * s)).collect(),
            )
        }
        DataType::List(_) => list_ranges(col.as_list::<i32>()),
        DataType::LargeList(_) => list_ranges(col.as_list::<i64>()),
        other => unreachable!("checked vector column type {other}"),
    };
    for (row, &(s, e)) in ranges.iter().enumerate() {
        let d = e - s;
        match *dim {
            None if d == 0 => {
                return Err(err(
                    row,
                    "a vector of at least 1 component".into(),
                    "an empty list".into(),
                ))
            }
            None => *dim = Some(d),
            Some(want) if want != d => {
                return Err(err(
                    row,
                    format!("{want} components (the first row's)"),
                    format!("{d}"),
                ))
            }
            Some(_) => {}
        }
        if values.null_count() > 0 {
            if let Some(c) = (s..e).find(|&j| values.is_null(j)) {
                return Err(err(
                    row,
                    "a number".into(),
                    format!("null at component {}", c - s),
                ));
            }
        }
        out.extend_from_slice(&floats(values, s, e));
    }
    Ok(())
}

fn list_ranges<O: OffsetSizeTrait>(
    a: &arrow_array::GenericListArray<O>,
) -> (&ArrayRef, Vec<(usize, usize)>) {
    let o = a.value_offsets();
    (
        a.values(),
        o.windows(2)
            .map(|w| (w[0].as_usize(), w[1].as_usize()))
            .collect(),
    )
}

/// Elements `s..e` of a float array as f32 (borrowed for float32).
fn floats(values: &ArrayRef, s: usize, e: usize) -> Cow<'_, [f32]> {
    match values.data_type() {
        DataType::Float32 => Cow::Borrowed(&values.as_primitive::<Float32Type>().values()[s..e]),
        DataType::Float16 => Cow::Owned(
            values.as_primitive::<Float16Type>().values()[s..e]
                .iter()
                .map(|x| x.to_f32())
                .collect(),
        ),
        DataType::Float64 => Cow::Owned(
            values.as_primitive::<Float64Type>().values()[s..e]
                .iter()
                .map(|&x| x as f32)
                .collect(),
        ),
        other => unreachable!("checked element type {other}"),
    }
}

/// Appends one batch of the id column as i64: no nulls, and unsigned ids
/// must fit.
fn append_ids(
    path: &Path,
    name: &str,
    col: &ArrayRef,
    row0: usize,
    out: &mut Vec<i64>,
) -> Result<(), DataError> {
    let err = |row: usize, expected: &str, found: String| DataError::Column {
        path: path.to_path_buf(),
        column: name.into(),
        row: Some((row0 + row) as u64),
        expected: expected.into(),
        found,
    };
    if col.null_count() > 0 {
        let row = (0..col.len()).find(|&i| col.is_null(i)).unwrap_or(0);
        return Err(err(row, "an id", "null".into()));
    }
    macro_rules! widen {
        ($t:ty) => {
            out.extend(col.as_primitive::<$t>().values().iter().map(|&x| x as i64))
        };
    }
    match col.data_type() {
        DataType::Int8 => widen!(Int8Type),
        DataType::Int16 => widen!(Int16Type),
        DataType::Int32 => widen!(Int32Type),
        DataType::Int64 => widen!(Int64Type),
        DataType::UInt8 => widen!(UInt8Type),
        DataType::UInt16 => widen!(UInt16Type),
        DataType::UInt32 => widen!(UInt32Type),
        DataType::UInt64 => {
            let v = col.as_primitive::<UInt64Type>().values();
            if let Some(row) = v.iter().position(|&x| x > i64::MAX as u64) {
                return Err(err(row, "an id of at most 2^63 - 1", v[row].to_string()));
            }
            out.extend(v.iter().map(|&x| x as i64));
        }
        other => unreachable!("checked id column type {other}"),
    }
    Ok(())
}

/// Fails on the first id that two rows share (search results would not
/// say which row was meant).
pub fn check_unique(path: &Path, column: &str, ids: &[i64]) -> Result<(), DataError> {
    let mut order: Vec<u32> = (0..ids.len() as u32).collect();
    order.sort_unstable_by_key(|&r| (ids[r as usize], r));
    for w in order.windows(2) {
        let (a, b) = (w[0] as usize, w[1] as usize);
        if ids[a] == ids[b] {
            return Err(DataError::Column {
                path: path.to_path_buf(),
                column: column.into(),
                row: Some(b as u64),
                expected: "ids that differ from row to row".into(),
                found: format!("{} again (first at row {a})", ids[a]),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{
        FixedSizeListArray, Float16Array, Int64Array, ListArray, StringArray, UInt64Array,
    };
    use arrow_schema::Field;
    use std::sync::Arc;

    fn rows(n: usize, dim: usize) -> Vec<Vec<f32>> {
        (0..n)
            .map(|i| {
                (0..dim)
                    .map(|j| (i * dim + j) as f32 * 0.25 - 3.0)
                    .collect()
            })
            .collect()
    }

    fn fixed(rows: &[Vec<f32>]) -> ArrayRef {
        let dim = rows[0].len() as i32;
        Arc::new(
            FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
                rows.iter().map(|r| Some(r.iter().map(|&x| Some(x)))),
                dim,
            ),
        )
    }

    fn list(rows: &[Vec<f32>]) -> ArrayRef {
        Arc::new(ListArray::from_iter_primitive::<Float32Type, _, _>(
            rows.iter().map(|r| Some(r.iter().map(|&x| Some(x)))),
        ))
    }

    fn batch(cols: Vec<(&str, ArrayRef)>) -> RecordBatch {
        let fields: Vec<Field> = cols
            .iter()
            .map(|(n, a)| Field::new(*n, a.data_type().clone(), a.null_count() > 0))
            .collect();
        RecordBatch::try_new(
            Arc::new(Schema::new(fields)),
            cols.into_iter().map(|(_, a)| a).collect(),
        )
        .unwrap()
    }

    /// Writes `batches` as `name` (Parquet, Arrow IPC file or stream by
    /// extension) in `dir`.
    fn write(dir: &Path, name: &str, batches: &[RecordBatch]) -> std::path::PathBuf {
        let path = dir.join(name);
        let f = File::create(&path).unwrap();
        let schema = batches[0].schema();
        if name.ends_with(".parquet") {
            let mut w = parquet::arrow::ArrowWriter::try_new(f, schema, None).unwrap();
            batches.iter().for_each(|b| w.write(b).unwrap());
            w.close().unwrap();
        } else if name.ends_with(".arrows") {
            let mut w = arrow_ipc::writer::StreamWriter::try_new(f, &schema).unwrap();
            batches.iter().for_each(|b| w.write(b).unwrap());
            w.finish().unwrap();
        } else {
            let mut w = arrow_ipc::writer::FileWriter::try_new(f, &schema).unwrap();
            batches.iter().for_each(|b| w.write(b).unwrap());
            w.finish().unwrap();
        }
        path
    }

    fn import(
        path: &Path,
        vectors: Option<&str>,
        ids: Option<&str>,
    ) -> Result<(Imported, Vec<f32>), DataError> {
        let out = path.with_extension("out.fbin");
        let cols = TableColumns {
            labels: None,
            vectors: vectors.map(String::from),
            ids: ids.map(String::from),
        };
        let got = import_table(path, &cols, &out, &|| false)?.expect("not stopped");
        let f = crate::data::open(&out).unwrap();
        assert_eq!((f.n(), f.dim()), (got.n, got.dim));
        Ok((got, f.as_f32().unwrap().to_vec()))
    }

    /// Every table format and vector type reads back the rows written, in
    /// order, across batches, with the ids of the id column.
    #[test]
    fn formats_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let (n, dim) = (5000, 6);
        let r = rows(n, dim);
        let want: Vec<f32> = r.concat();
        let ids: Vec<i64> = (0..n as i64).map(|i| 1_000_000_007 * (i % 7) + i).collect();
        // Three batches of uneven size, so row numbering crosses batches.
        let cuts = [0, 1234, 4000, n];
        for (name, as_list) in [
            ("a.parquet", false),
            ("b.parquet", true),
            ("c.arrow", false),
            ("d.arrows", true),
            ("e.feather", true),
        ] {
            let batches: Vec<RecordBatch> = cuts
                .windows(2)
                .map(|w| {
                    let part = &r[w[0]..w[1]];
                    let v = if as_list { list(part) } else { fixed(part) };
                    let text: ArrayRef = Arc::new(StringArray::from_iter_values(
                        (w[0]..w[1]).map(|i| format!("row {i}")),
                    ));
                    let id: ArrayRef = Arc::new(Int64Array::from(ids[w[0]..w[1]].to_vec()));
                    batch(vec![("text", text), ("emb", v), ("id", id)])
                })
                .collect();
            let path = write(dir.path(), name, &batches);
            // The only vector column is found without being named.
            let (got, data) = import(&path, None, Some("id")).unwrap();
            assert_eq!(
                (got.n, got.dim, got.column.as_str()),
                (n, dim, "emb"),
                "{name}"
            );
            assert_eq!(data, want, "{name}");
            assert_eq!(got.ids.as_deref(), Some(&ids[..]), "{name}");
            let (got, _) = import(&path, Some("emb"), None).unwrap();
            assert!(got.ids.is_none());
        }
    }

    #[test]
    fn float16_and_unsigned_ids_widen() {
        let dir = tempfile::tempdir().unwrap();
        let v = [0.5f32, -2.0, 1024.0, 0.0];
        let halves = Float16Array::from_iter_values(
            v.iter()
                .map(|&x| <Float16Type as arrow_array::ArrowPrimitiveType>::Native::from_f32(x)),
        );
        let a: ArrayRef = Arc::new(
            FixedSizeListArray::try_new(
                Arc::new(Field::new("item", DataType::Float16, true)),
                2,
                Arc::new(halves),
                None,
            )
            .unwrap(),
        );
        let id: ArrayRef = Arc::new(UInt64Array::from(vec![u64::MAX >> 1, 3]));
        let path = write(
            dir.path(),
            "h.parquet",
            &[batch(vec![("v", a), ("id", id)])],
        );
        let (got, data) = import(&path, None, Some("id")).unwrap();
        assert_eq!(got.element, "float16");
        assert_eq!(data, v);
        assert_eq!(got.ids.unwrap(), [i64::MAX, 3]);
    }

    fn message(path: &Path, vectors: Option<&str>, ids: Option<&str>) -> String {
        import(path, vectors, ids)
            .expect_err("an error")
            .to_string()
    }

    /// Every refusal names the file, the column, the row where one is to
    /// blame, and what was expected and found.
    #[test]
    fn bad_tables_are_refused_with_the_row_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let r = rows(10, 4);
        let id: ArrayRef = Arc::new(Int64Array::from((0..10).collect::<Vec<i64>>()));
        let two = write(
            dir.path(),
            "two.parquet",
            &[batch(vec![
                ("a", fixed(&r)),
                ("b", list(&r)),
                ("id", id.clone()),
            ])],
        );
        let e = message(&two, None, None);
        assert!(
            e.contains("two.parquet") && e.contains("2 columns of vectors: a, b"),
            "{e}"
        );
        let e = message(&two, Some("nope"), None);
        assert!(
            e.contains("column `nope`") && e.contains("no such column") && e.contains("id: Int64"),
            "{e}"
        );
        let e = message(&two, Some("id"), None);
        assert!(
            e.contains("column `id`") && e.contains("fixed-size list") && e.contains("found Int64"),
            "{e}"
        );
        let e = message(&two, Some("a"), Some("b"));
        assert!(
            e.contains("column `b`") && e.contains("an integer column"),
            "{e}"
        );

        let mut ragged = r.clone();
        ragged[7].push(1.0);
        let p = write(
            dir.path(),
            "ragged.arrow",
            &[batch(vec![("v", list(&ragged))])],
        );
        let e = message(&p, None, None);
        assert!(
            e.contains("row 7") && e.contains("expected 4 components") && e.contains("found 5"),
            "{e}"
        );

        let nulls: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Float32Type, _, _>(
            (0..3).map(|i| (i != 2).then(|| vec![Some(1.0f32), Some(2.0)])),
        ));
        let p = write(dir.path(), "null.parquet", &[batch(vec![("v", nulls)])]);
        let e = message(&p, None, None);
        assert!(e.contains("row 2") && e.contains("found null"), "{e}");
        let inner: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Float32Type, _, _>(
            (0..3).map(|i| Some(vec![Some(1.0f32), (i != 1).then_some(2.0)])),
        ));
        let p = write(dir.path(), "inner.parquet", &[batch(vec![("v", inner)])]);
        let e = message(&p, None, None);
        assert!(
            e.contains("row 1") && e.contains("null at component 1"),
            "{e}"
        );

        let dup: ArrayRef = Arc::new(Int64Array::from(vec![5, 6, 7, 8, 6, 9, 1, 2, 3, 4]));
        let p = write(
            dir.path(),
            "dup.parquet",
            &[batch(vec![("v", fixed(&r)), ("id", dup)])],
        );
        let e = message(&p, None, Some("id"));
        assert!(
            e.contains("column `id`, row 4") && e.contains("6 again (first at row 1)"),
            "{e}"
        );

        let p = dir.path().join("junk.parquet");
        std::fs::write(&p, b"not a parquet file at all").unwrap();
        let e = message(&p, None, None);
        assert!(e.contains("junk.parquet") && e.contains("Parquet"), "{e}");
    }

    #[test]
    fn stop_ends_the_import() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "s.parquet",
            &[batch(vec![("v", fixed(&rows(10, 2)))])],
        );
        let got = import_table(
            &p,
            &TableColumns::default(),
            &dir.path().join("o.fbin"),
            &|| true,
        );
        assert!(got.unwrap().is_none());
    }

    #[test]
    fn extensions() {
        for (p, t) in [
            ("a.parquet", true),
            ("b.PQ", true),
            ("c.arrow", true),
            ("d.fbin", false),
            ("e", false),
        ] {
            assert_eq!(is_table(Path::new(p)), t, "{p}");
        }
    }
}
