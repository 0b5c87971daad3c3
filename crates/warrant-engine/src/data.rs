//! The contract's data files: read, every row checked by the loader's own checks
//! ([`records::rows_from_file`], [`records::rows_from_parent`], each row through
//! [`records::check_row`], as a records write is checked), with an error naming the file, line
//! and column of the value at fault; and the mark of what a table's rows are seeded from.

use std::path::{Path, PathBuf};

use serde_json::Value;

use warrant_core::Contract;
use warrant_core::records::{self, DataError, TableSource};

use crate::EngineError;

/// One records table's rows as its data file has them, checked.
#[derive(Debug, Clone)]
pub struct TableData {
    /// The table's name.
    pub name: String,
    /// The data file its rows come from (a nested table's: its parent's).
    pub file: PathBuf,
    /// Its rows, in key order.
    pub rows: Vec<(String, Value)>,
}

/// A data file read: its path and text.
struct FileText {
    path: PathBuf,
    text: String,
}

/// Reads every table's data file and checks every row, in the contract's table order (a
/// nested table after its parent). The first row that does not fit stops it, named
/// `FILE:LINE:COLUMN: …` at the value at fault (at the row, where no one field is).
pub fn read_tables(contract: &Contract, folder: &Path) -> Result<Vec<TableData>, EngineError> {
    let currency = contract.currency();
    let mut loaded: Vec<TableData> = Vec::new();
    let mut files: Vec<(String, FileText)> = Vec::new();
    for table in contract.tables() {
        let (rows, file) = match &table.source {
            TableSource::File(file) => {
                let path = folder.join(file);
                let file_error = |message: String| EngineError::File { path: path.display().to_string(), message };
                let text = std::fs::read_to_string(&path).map_err(|e| file_error(e.to_string()))?;
                let data: Value = serde_json::from_str(&text).map_err(|e| {
                    let suffix = format!(" at line {} column {}", e.line(), e.column());
                    let message = e.to_string();
                    let message = message.strip_suffix(&suffix).unwrap_or(&message).to_owned();
                    EngineError::DataAt {
                        path: path.display().to_string(),
                        line: e.line(),
                        column: e.column(),
                        message,
                    }
                })?;
                let source = FileText { path: path.clone(), text };
                let rows = records::rows_from_file(table, data, currency).map_err(|e| placed(&source, &[], e))?;
                files.push((table.name.clone(), source));
                (rows, path)
            }
            TableSource::Nested { table: parent, path, parent_field } => {
                let parent_data = loaded.iter().find(|t| t.name == *parent);
                let parent_rows = parent_data.map(|t| t.rows.as_slice()).unwrap_or(&[]);
                let rows = records::rows_from_parent(table, parent_rows, path, parent_field, currency).map_err(
                    |e| match files.iter().find(|(name, _)| name == parent) {
                        Some((_, source)) => placed(source, &nested_prefix(parent_rows, path, &e), e),
                        None => EngineError::Data(e),
                    },
                )?;
                (rows, parent_data.map(|t| t.file.clone()).unwrap_or_default())
            }
        };
        loaded.push(TableData { name: table.name.clone(), file, rows });
    }
    Ok(loaded)
}

/// Where in the parent's file a nested row's error lies, above the row's own key and field:
/// the parent row's key and the field holding the nested rows.
fn nested_prefix(parent_rows: &[(String, Value)], path: &str, error: &DataError) -> Vec<String> {
    let key = row_key(error);
    if matches!(error, DataError::NestedNotObject { .. }) {
        // The error names the parent row itself.
        return Vec::new();
    }
    let parent = key.and_then(|key| {
        parent_rows
            .iter()
            .find(|(_, row)| row.get(path).and_then(Value::as_object).is_some_and(|m| m.contains_key(key)))
    });
    match parent {
        Some((parent_key, _)) => vec![parent_key.clone(), path.to_owned()],
        None => Vec::new(),
    }
}

/// The key of the row an error names, if it names one.
fn row_key(error: &DataError) -> Option<&str> {
    match error {
        DataError::RowNotObject { key, .. }
        | DataError::UndeclaredFraction { key, .. }
        | DataError::TooPrecise { key, .. }
        | DataError::NotMoney { key, .. }
        | DataError::NestedNotObject { key, .. }
        | DataError::MissingKeyField { key, .. }
        | DataError::Schema { key, .. }
        | DataError::KeyMismatch { key, .. } => Some(key),
        DataError::NotKeyed { .. } | DataError::EmptyKey { .. } => None,
    }
}

/// `error` placed in `source`: the row's key under `prefix`, then the field's path.
fn placed(source: &FileText, prefix: &[String], error: DataError) -> EngineError {
    let mut steps: Vec<Step> = prefix.iter().map(|k| Step::Key(k.clone())).collect();
    if let Some(key) = row_key(&error) {
        steps.push(Step::Key(key.to_owned()));
        if let Some(field) = error.field() {
            steps.extend(field_steps(field));
        }
    }
    let offset = locate(&source.text, &steps);
    let (line, column) = line_column(&source.text, offset);
    EngineError::DataAt { path: source.path.display().to_string(), line, column, message: error.to_string() }
}

/// One step down a JSON document: an object member or an array element.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// A field path as the loader writes it (`items[0].price`) as steps.
fn field_steps(path: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    for part in path.split('.') {
        let (name, mut rest) = part.split_once('[').map_or((part, ""), |(n, r)| (n, r));
        steps.push(Step::Key(name.to_owned()));
        while let Some((index, after)) = rest.split_once(']') {
            match index.parse() {
                Ok(i) => steps.push(Step::Index(i)),
                Err(_) => return steps,
            }
            rest = after.strip_prefix('[').unwrap_or(after);
        }
    }
    steps
}

/// The byte offset of the value `steps` lead to in the JSON `text`, or of the last value on
/// the way that could be found (a key the path cannot spell, such as one holding a dot).
fn locate(text: &str, steps: &[Step]) -> usize {
    let bytes = text.as_bytes();
    let mut at = skip_ws(bytes, 0);
    for step in steps {
        let found = match step {
            Step::Key(key) => member(text, at, key),
            Step::Index(index) => element(bytes, at, *index),
        };
        match found {
            Some(next) => at = next,
            None => break,
        }
    }
    at
}

fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
        at += 1;
    }
    at
}

/// The end of the string starting at `at` (its opening quote), past its closing quote.
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The end of the value starting at `at`.
fn value_end(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => string_end(bytes, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            while let Some(&b) = bytes.get(i) {
                match b {
                    b'"' => {
                        i = string_end(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let mut i = at;
            while bytes.get(i).is_some_and(|b| !matches!(b, b',' | b'}' | b']') && !b.is_ascii_whitespace()) {
                i += 1;
            }
            Some(i)
        }
    }
}

/// The offset of the value of member `key` of the object at `at`.
fn member(text: &str, at: usize, key: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    let mut i = skip_ws(bytes, at + 1);
    while bytes.get(i) == Some(&b'"') {
        let end = string_end(bytes, i)?;
        let name: String = serde_json::from_str(text.get(i..end)?).ok()?;
        i = skip_ws(bytes, end);
        if bytes.get(i) != Some(&b':') {
            return None;
        }
        let value = skip_ws(bytes, i + 1);
        if name == key {
            return Some(value);
        }
        i = skip_ws(bytes, value_end(bytes, value)?);
        if bytes.get(i) == Some(&b',') {
            i = skip_ws(bytes, i + 1);
        }
    }
    None
}

/// The offset of element `index` of the array at `at`.
fn element(bytes: &[u8], at: usize, index: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'[') {
        return None;
    }
    let mut i = skip_ws(bytes, at + 1);
    for _ in 0..index {
        i = skip_ws(bytes, value_end(bytes, i)?);
        if bytes.get(i) != Some(&b',') {
            return None;
        }
        i = skip_ws(bytes, i + 1);
    }
    (bytes.get(i).is_some_and(|b| *b != b']')).then_some(i)
}

/// The line and column (both from 1, the column in characters) of byte `offset` of `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[start..].chars().count() + 1)
}

/// The mark of what `table`'s rows are seeded from: its data file as the file system has it
/// (length and modification time, so that a seeded store's turn reads no data file) and how
/// its rows are checked and drawn. A file written since has another mark; a nested table's
/// mark is its parent's, with its own path.
pub fn seed_marks(contract: &Contract, folder: &Path) -> Result<Vec<(String, String)>, EngineError> {
    let currency = contract.currency().map(|c| format!("{c:?}")).unwrap_or_default();
    let mut marks: Vec<(String, String)> = Vec::new();
    for table in contract.tables() {
        // How its rows are checked: money paths, or the key field and the schema.
        let money = match &table.schema {
            None => table.money.join(","),
            Some(schema) => format!("{:?} {schema:?}", table.key),
        };
        let mark = match &table.source {
            TableSource::File(file) => {
                let path = folder.join(file);
                let meta = std::fs::metadata(&path)
                    .map_err(|e| EngineError::File { path: path.display().to_string(), message: e.to_string() })?;
                let modified = meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                let len = meta.len().to_string();
                let modified = modified.to_string();
                warrant_core::id::derive_id("seed", &[file, &len, &modified, &currency, &money])
            }
            TableSource::Nested { table: parent, path, parent_field } => {
                let parent_mark = marks.iter().find(|(name, _)| name == parent).map_or("", |(_, m)| m.as_str());
                warrant_core::id::derive_id("seed", &[parent_mark, path, parent_field, &currency, &money])
            }
        };
        marks.push((table.name.clone(), mark));
    }
    Ok(marks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_path_is_found_in_its_file() {
        let text = "{\n  \"a\": {\"n\": 1},\n  \"b\": {\"items\": [{\"price\": 1}, {\"price\": 47.845}]}\n}\n";
        let steps = [Step::Key("b".into())].into_iter().chain(field_steps("items[1].price")).collect::<Vec<_>>();
        let at = locate(text, &steps);
        assert!(text[at..].starts_with("47.845"), "{}", &text[at..]);
        assert_eq!(line_column(text, at), (3, 43));
        // A key the path cannot spell stops at the deepest value found.
        let at = locate(text, &[Step::Key("b".into()), Step::Key("no.such".into())]);
        assert!(text[at..].starts_with("{\"items\""));
        assert_eq!(
            field_steps("a.b[0][2].c"),
            [Step::Key("a".into()), Step::Key("b".into()), Step::Index(0), Step::Index(2), Step::Key("c".into())]
        );
    }
}
