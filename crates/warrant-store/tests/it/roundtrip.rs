//! What goes in comes back: any JSON value reads back equal to the one written, in both
//! backends, and what one backend cannot keep (U+0000) is refused by both.

use std::cell::{Cell, RefCell};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};
use warrant_store::StoreError;

use crate::build::{commit, effect, event, rows};
use crate::fixture::Fixture;

/// Any JSON value without U+0000, nested a few levels.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter("JSON has no NaN or infinity", |f| f.is_finite()).prop_map(Value::from),
        "[^\\x00]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[^\\x00]{0,8}", inner, 0..6)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

pub fn json_reads_back_as_written(fx: &Fixture) {
    // The runner takes a `Fn`; the connection is borrowed for one case at a time.
    let store = RefCell::new(fx.open());
    let case = Cell::new(0u32);
    let mut runner = TestRunner::new(Config { cases: 48, failure_persistence: None, ..Config::default() });
    runner
        .run(&any_json(), |value| {
            let n = case.get();
            case.set(n + 1);
            let key = format!("k{n}");
            let mut store = store.borrow_mut();
            store.seed_records("values", &[(key.clone(), value.clone())]).unwrap();
            prop_assert_eq!(&store.record("values", &key).unwrap().unwrap().value, &value);

            let mut c = commit("c", &key);
            c.turn.request = (&value).into();
            let replay = json!({"nested": [value.clone()]});
            c.turn.replay = (&replay).into();
            c.effects.push(effect(&key, &key, &c));
            c.effects[0].payload = value.clone();
            c.events.push(event(&key, "c", "k", None));
            c.events[0].payload = value.clone();
            store.commit(&c).unwrap();
            let turn = store.turn("c", &key).unwrap().unwrap();
            prop_assert_eq!(&turn.request, &value);
            prop_assert_eq!(&turn.replay, &replay);
            prop_assert_eq!(&store.effect(&key).unwrap().unwrap().payload, &value);
            let events = store.events(Some("c")).unwrap();
            prop_assert_eq!(&events.last().unwrap().payload, &value);
            Ok(())
        })
        .unwrap();
}

/// PostgreSQL's jsonb read a large float back as an integer and reordered keys; a replay must
/// read back the very text a decision was made on.
pub fn a_large_float_and_key_order_read_back_as_written(fx: &Fixture) {
    let mut store = fx.open();
    let value: Value =
        serde_json::from_str(r#"{"z": [3.1181339865760794e18, 1.0, -0.0], "a": {"y": 1, "b": 2}}"#).unwrap();
    store.seed_records("values", &[("big".to_owned(), value.clone())]).unwrap();
    let read = store.record("values", "big").unwrap().unwrap().value;
    assert_eq!(read, value);
    assert_eq!(serde_json::to_string(&read).unwrap(), serde_json::to_string(&value).unwrap());
}

pub fn nul_is_refused_and_never_found(fx: &Fixture) {
    let mut store = fx.open();
    let seeded = store.seed_records("orders", &rows(&[("ok", json!(1)), ("a\u{0}b", json!(2))]));
    assert!(matches!(&seeded, Err(StoreError::NulCharacter { .. })), "{seeded:?}");
    let seeded = store.seed_records("orders", &rows(&[("ok", json!({"a\u{0}": 1}))]));
    assert!(matches!(&seeded, Err(StoreError::NulCharacter { .. })), "{seeded:?}");
    // The whole seed was refused, the good row with it.
    assert_eq!(store.record("orders", "ok").unwrap(), None);

    assert_eq!(store.record("orders", "a\u{0}b").unwrap(), None);
    assert_eq!(store.record("a\u{0}", "ok").unwrap(), None);
    assert_eq!(store.turn("c\u{0}", "t").unwrap(), None);
    assert_eq!(store.interaction("\u{0}").unwrap(), None);
    assert_eq!(store.effect("\u{0}").unwrap(), None);
    assert_eq!(store.events(Some("\u{0}")).unwrap(), vec![]);

    let refused = store.commit(&commit("c\u{0}", "t"));
    assert!(matches!(&refused, Err(StoreError::NulCharacter { field }) if field == "`turn.conversation`"));
    assert_eq!(store.turns(0, 10).unwrap(), vec![]);
}
