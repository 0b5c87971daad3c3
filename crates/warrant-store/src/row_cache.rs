//! The rows a connection read, each kept with the JSON text it was read from, so that a row
//! read again whose stored text is byte for byte the same is served without parsing it again.
//! Both backends keep one per connection: a decision reads the same few rows turn after turn
//! (the actor's, the orders it names), and parsing their values was most of what reading them
//! cost the process.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::error::StoreError;

/// The most rows a [`RowCache`] keeps; past it, it starts again empty.
const ROW_CACHE: usize = 1024;

/// Rows by their stored text. Only equal text is served: what a row's revision says is not
/// trusted for it.
#[derive(Debug, Default)]
pub(crate) struct RowCache {
    /// By table, then key: the text a row was read from, and its value.
    rows: BTreeMap<String, BTreeMap<String, KeptRow>>,
    len: usize,
}

/// A row's stored text, and the value read from it.
type KeptRow = (Box<str>, Arc<Value>);

impl RowCache {
    /// The value kept for the row, if it was read from exactly `text`.
    fn get(&self, table: &str, key: &str, text: &str) -> Option<Arc<Value>> {
        let (kept, value) = self.rows.get(table)?.get(key)?;
        (**kept == *text).then(|| value.clone())
    }

    fn keep(&mut self, table: &str, key: &str, text: &str, value: Arc<Value>) {
        if self.len >= ROW_CACHE {
            self.rows.clear();
            self.len = 0;
        }
        let kept = self.rows.entry(table.to_owned()).or_default().insert(key.to_owned(), (text.into(), value));
        if kept.is_none() {
            self.len += 1;
        }
    }

    /// The value of the row read as `text`: the one kept when the text is the same, else
    /// parsed and kept. Text that is not JSON is `Corrupt`, naming the row.
    pub(crate) fn value(&mut self, table: &str, key: &str, text: &str) -> Result<Arc<Value>, StoreError> {
        if let Some(kept) = self.get(table, key, text) {
            return Ok(kept);
        }
        let value: Value = serde_json::from_str(text).map_err(|e| StoreError::Corrupt {
            what: format!("the value of record `{table}`/`{key}` is not JSON: {e}"),
        })?;
        let value = Arc::new(value);
        self.keep(table, key, text, value.clone());
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_row_cache_stays_within_its_bound() {
        let mut cache = RowCache::default();
        for i in 0..ROW_CACHE * 3 {
            cache.keep("orders", &i.to_string(), "{}", Arc::new(json!({})));
            assert!(cache.len <= ROW_CACHE, "{} rows kept", cache.len);
        }
        let kept: usize = cache.rows.values().map(|rows| rows.len()).sum();
        assert_eq!(kept, cache.len);
        assert!(cache.get("orders", &(ROW_CACHE * 3 - 1).to_string(), "{}").is_some());
        assert!(cache.get("orders", &(ROW_CACHE * 3 - 1).to_string(), "{ }").is_none());
    }

    #[test]
    fn a_value_is_parsed_once_for_the_same_text_and_again_for_other_text() {
        let mut cache = RowCache::default();
        let first = cache.value("orders", "#1", r#"{"n":1}"#).unwrap();
        let again = cache.value("orders", "#1", r#"{"n":1}"#).unwrap();
        assert!(Arc::ptr_eq(&first, &again), "the same text is served the kept value");
        let changed = cache.value("orders", "#1", r#"{"n":2}"#).unwrap();
        assert_eq!(*changed, json!({"n": 2}));
        assert!(!Arc::ptr_eq(&first, &changed));
        let other = cache.value("users", "#1", r#"{"n":1}"#).unwrap();
        assert!(!Arc::ptr_eq(&first, &other), "a row is kept under its own table and key");
        assert!(matches!(
            cache.value("orders", "#2", "{not json"),
            Err(StoreError::Corrupt { what }) if what.contains("`orders`/`#2`")
        ));
    }
}
