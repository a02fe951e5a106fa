//! A table's label column (issue #56, `build --label-column NAME`): one
//! label set a row, as a list of integer ids or of strings, or one integer
//! or string a row; a null row has no labels. Strings become ids in the
//! order they first appear, and their names are kept (the index's
//! `label_names.tsv`), so filters can name them.

use std::collections::HashMap;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef, OffsetSizeTrait};
use arrow_schema::{DataType, Schema};

use super::DataError;
use crate::labels::LabelSets;

/// What a label column held: a set a row, and the names when it held
/// strings.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TableLabels {
    pub sets: LabelSets,
    pub names: Option<Vec<String>>,
}

/// Whether `t` holds labels: integers or strings, alone or in a list.
fn label_element(t: &DataType) -> Option<&DataType> {
    let e = match t {
        DataType::List(f) | DataType::LargeList(f) => f.data_type(),
        other => other,
    };
    (e.is_integer() || matches!(e, DataType::Utf8 | DataType::LargeUtf8)).then_some(e)
}

/// The label column's index in `schema`, refused unless it holds labels.
pub(super) fn pick_label_column(
    path: &Path,
    schema: &Schema,
    name: &str,
) -> Result<usize, DataError> {
    let Some((i, field)) = schema
        .fields()
        .iter()
        .enumerate()
        .find(|(_, f)| f.name() == name)
    else {
        return Err(DataError::Column {
            path: path.to_path_buf(),
            column: name.into(),
            row: None,
            expected: "a column of this name".into(),
            found: format!(
                "columns {}",
                schema
                    .fields()
                    .iter()
                    .map(|f| f.name().as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    };
    if label_element(field.data_type()).is_none() {
        return Err(DataError::Column {
            path: path.to_path_buf(),
            column: name.into(),
            row: None,
            expected: "labels: integers or strings, one a row or a list a row".into(),
            found: field.data_type().to_string(),
        });
    }
    Ok(i)
}

/// Reads a label column batch by batch.
#[derive(Debug, Default)]
pub(super) struct LabelReader {
    sets: LabelSets,
    ids: HashMap<String, u32>,
    names: Vec<String>,
    strings: bool,
}

impl LabelReader {
    pub fn new() -> LabelReader {
        let mut sets = LabelSets::default();
        sets.indptr.push(0);
        LabelReader {
            sets,
            ..Default::default()
        }
    }

    /// Appends one batch of column `name` (its first row is table row
    /// `row0`, for errors).
    pub fn append(
        &mut self,
        path: &Path,
        name: &str,
        col: &ArrayRef,
        row0: usize,
    ) -> Result<(), DataError> {
        let mut row = Vec::new();
        for r in 0..col.len() {
            row.clear();
            if !col.is_null(r) {
                match col.data_type() {
                    DataType::List(_) => self.list_row::<i32>(col, r, &mut row),
                    DataType::LargeList(_) => self.list_row::<i64>(col, r, &mut row),
                    _ => self.values(col, r, r + 1, &mut row),
                }
                .map_err(|(expected, found)| DataError::Column {
                    path: path.to_path_buf(),
                    column: name.into(),
                    row: Some((row0 + r) as u64),
                    expected,
                    found,
                })?;
            }
            self.sets.push(&row);
        }
        Ok(())
    }

    fn list_row<O: OffsetSizeTrait>(
        &mut self,
        col: &ArrayRef,
        r: usize,
        out: &mut Vec<u32>,
    ) -> Result<(), (String, String)> {
        let list = col.as_list::<O>();
        let offsets = list.value_offsets();
        let (s, e) = (offsets[r].as_usize(), offsets[r + 1].as_usize());
        self.values(list.values(), s, e, out)
    }

    /// Labels of `values[s..e]`: integer ids as they are, strings by name.
    fn values(
        &mut self,
        values: &ArrayRef,
        s: usize,
        e: usize,
        out: &mut Vec<u32>,
    ) -> Result<(), (String, String)> {
        if let Some(i) = (s..e).find(|&i| values.is_null(i)) {
            return Err((
                "a label in every list slot".into(),
                format!("null at slot {}", i - s),
            ));
        }
        macro_rules! ints {
            ($t:ty) => {{
                for &x in &values.as_primitive::<$t>().values()[s..e] {
                    out.push(label_id(x as i128)?);
                }
            }};
        }
        match values.data_type() {
            DataType::Int8 => ints!(Int8Type),
            DataType::Int16 => ints!(Int16Type),
            DataType::Int32 => ints!(Int32Type),
            DataType::Int64 => ints!(Int64Type),
            DataType::UInt8 => ints!(UInt8Type),
            DataType::UInt16 => ints!(UInt16Type),
            DataType::UInt32 => ints!(UInt32Type),
            DataType::UInt64 => ints!(UInt64Type),
            DataType::Utf8 => {
                let v = values.as_string::<i32>();
                (s..e).for_each(|i| out.push(self.id_of(v.value(i))));
            }
            DataType::LargeUtf8 => {
                let v = values.as_string::<i64>();
                (s..e).for_each(|i| out.push(self.id_of(v.value(i))));
            }
            other => unreachable!("checked label type {other}"),
        }
        Ok(())
    }

    fn id_of(&mut self, name: &str) -> u32 {
        self.strings = true;
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.ids.insert(name.to_string(), id);
        self.names.push(name.to_string());
        id
    }

    pub fn finish(self) -> TableLabels {
        TableLabels {
            names: self.strings.then_some(self.names),
            sets: self.sets,
        }
    }
}

fn label_id(x: i128) -> Result<u32, (String, String)> {
    u32::try_from(x)
        .ok()
        .filter(|&l| l < u32::MAX)
        .ok_or_else(|| (format!("label ids in 0..{}", u32::MAX), x.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::builder::{Int64Builder, ListBuilder, StringBuilder};
    use arrow_array::StringArray;
    use std::sync::Arc;

    fn read(cols: &[ArrayRef]) -> Result<TableLabels, DataError> {
        let mut r = LabelReader::new();
        let mut row0 = 0;
        for c in cols {
            r.append(Path::new("/t.parquet"), "tags", c, row0)?;
            row0 += c.len();
        }
        Ok(r.finish())
    }

    #[test]
    fn lists_of_ids_or_names_and_single_labels_read_as_sets() {
        let mut b = ListBuilder::new(Int64Builder::new());
        b.append_value([Some(3), Some(1), Some(3)]);
        b.append_null();
        b.append_value([Some(7)]);
        let got = read(&[Arc::new(b.finish())]).unwrap();
        assert_eq!(got.names, None);
        assert_eq!(
            (got.sets.row(0), got.sets.row(1), got.sets.row(2)),
            (&[1, 3][..], &[][..], &[7][..])
        );

        let mut b = ListBuilder::new(StringBuilder::new());
        b.append_value([Some("noun"), Some("animal")]);
        b.append_value([Some("verb")]);
        let second: ArrayRef = Arc::new(StringArray::from(vec![Some("animal"), None]));
        let got = read(&[Arc::new(b.finish()), second]).unwrap();
        let names = got.names.unwrap();
        assert_eq!(names, ["noun", "animal", "verb"]);
        assert_eq!(got.sets.row(0), &[0, 1]);
        assert_eq!(
            got.sets.row(2),
            &[1],
            "the same name is the same id across batches"
        );
        assert_eq!(got.sets.row(3), &[] as &[u32]);
    }

    #[test]
    fn a_bad_label_names_the_row() {
        let mut b = ListBuilder::new(Int64Builder::new());
        b.append_value([Some(1)]);
        b.append_value([Some(-4)]);
        let msg = read(&[Arc::new(b.finish())]).unwrap_err().to_string();
        assert!(
            msg.contains("row 1") && msg.contains("-4") && msg.contains("tags"),
            "{msg}"
        );
    }
}
