//! The rows a store read, each kept with the JSON text it was read from, so that a row read
//! again whose stored text is byte for byte the same is served without parsing it again. A
//! decision reads the same few rows turn after turn (the actor's, the orders it names), and
//! parsing their values was most of what reading them cost the process.
//!
//! Every store of a process on one database (one SQLite file, one PostgreSQL schema) shares one
//! cache ([`RowCache::shared`]): a row's value is a function of its text alone, whichever
//! connection read it and in whatever snapshot, so one connection's parse serves the others,
//! and they are all served the same value (the same `Arc`), which lets what is kept beside a
//! value (a policy entity built from it) be found again by the pointer instead of comparing
//! the values whole.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use serde_json::Value;

use crate::error::StoreError;

/// The most rows a [`RowCache`] keeps; past it, it starts again empty.
const ROW_CACHE: usize = 4096;

/// The caches of the databases this process has stores on, by the database's name; a cache
/// goes when the last store on its database does.
static SHARED: Mutex<BTreeMap<String, Weak<Mutex<Rows>>>> = Mutex::new(BTreeMap::new());

/// Rows by their stored text, shared by the stores that hold a clone. Only equal text is
/// served: what a row's revision says is not trusted for it.
#[derive(Debug, Clone, Default)]
pub(crate) struct RowCache(Arc<Mutex<Rows>>);

#[derive(Debug, Default)]
struct Rows {
    /// By table, then key: the text a row was read from, and its value.
    rows: BTreeMap<String, BTreeMap<String, KeptRow>>,
    len: usize,
}

/// A row's stored text, and the value read from it.
type KeptRow = (Box<str>, Arc<Value>);

impl Rows {
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
}

impl RowCache {
    /// The cache of the database named `database` (a canonical file path, a schema with its
    /// server), shared with every other store of this process on it.
    pub(crate) fn shared(database: &str) -> RowCache {
        let mut caches = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
        caches.retain(|_, cache| cache.strong_count() > 0);
        if let Some(cache) = caches.get(database).and_then(Weak::upgrade) {
            return RowCache(cache);
        }
        let cache = RowCache::default();
        caches.insert(database.to_owned(), Arc::downgrade(&cache.0));
        cache
    }

    /// The value of the row read as `text`: the one kept when the text is the same, else
    /// parsed and kept. Text that is not JSON is `Corrupt`, naming the row.
    pub(crate) fn value(&self, table: &str, key: &str, text: &str) -> Result<Arc<Value>, StoreError> {
        // Whatever a thread that panicked left is whole: a row is kept or not, never half.
        if let Some(kept) = self.lock().get(table, key, text) {
            return Ok(kept);
        }
        // Parsed outside the lock; two stores parsing the same text at once keep the same value.
        let value: Value = serde_json::from_str(text).map_err(|e| StoreError::Corrupt {
            what: format!("the value of record `{table}`/`{key}` is not JSON: {e}"),
        })?;
        let value = Arc::new(value);
        self.lock().keep(table, key, text, value.clone());
        Ok(value)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Rows> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_row_cache_stays_within_its_bound() {
        let mut cache = Rows::default();
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
        let cache = RowCache::default();
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

    #[test]
    fn the_stores_of_one_database_share_its_cache_and_no_other() {
        let one = RowCache::shared("the_stores_of_one_database one");
        let same = RowCache::shared("the_stores_of_one_database one");
        let other = RowCache::shared("the_stores_of_one_database other");
        let first = one.value("orders", "#1", r#"{"n":1}"#).unwrap();
        assert!(Arc::ptr_eq(&first, &same.value("orders", "#1", r#"{"n":1}"#).unwrap()), "one database, one cache");
        assert!(!Arc::ptr_eq(&first, &other.value("orders", "#1", r#"{"n":1}"#).unwrap()), "another database's own");
        drop((one, same));
        // Gone with its last store: a store opened later begins an empty cache.
        let later = RowCache::shared("the_stores_of_one_database one");
        assert!(!Arc::ptr_eq(&first, &later.value("orders", "#1", r#"{"n":1}"#).unwrap()));
    }
}
