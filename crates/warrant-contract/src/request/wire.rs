//! JSON as it arrives on the wire, read strictly before any field of it is. serde_json keeps
//! the last of two equal keys and would read a struct from an array; a store cannot keep
//! U+0000 (PostgreSQL refuses it in text and JSONB). So every request body is walked once
//! first: it must be one JSON object, no object at any depth may repeat a key, and no string
//! or key may hold U+0000. Each fault names the field at fault, as `acts[0].args.order_id`,
//! and is `invalid_input`; the typed parse that follows reads the same text with the same
//! paths, and names a missing field by its full path too. A type whose readers refuse what the
//! walk refuses (the turn request) is read in one pass instead ([`read`]), and walked only when
//! that pass fails.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::reason::ReasonCode;
use crate::request::error::RequestError;
use crate::text::visible;

/// The deepest JSON warrant reads: objects and arrays nested 127 levels, the body itself the
/// first. serde_json's parser refuses a 128th level (`recursion limit exceeded`, so
/// `invalid_input`), which makes this the limit of every door that reads text (the CLI, the
/// service, the MCP gateway); a door handed values instead (the Python package) refuses the
/// same depth before it descends.
pub const MAX_DEPTH: usize = 127;

/// Checks that `json` is one JSON object with no repeated key at any depth and no U+0000 in
/// any string or key. The error names the field at fault (empty for the body as a whole).
pub fn check(json: &str) -> Result<(), RequestError> {
    let walk = RefCell::new(Walk { path: JsonPath(Vec::new()), fault: None });
    let mut deserializer = serde_json::Deserializer::from_str(json);
    let walked = Node { walk: &walk, depth: 0 }.deserialize(&mut deserializer).and_then(|()| deserializer.end());
    let walk = walk.into_inner();
    match (walked, walk.fault) {
        (Ok(()), _) => Ok(()),
        (Err(_), Some(fault)) => Err(fault),
        (Err(e), None) => Err(invalid(walk.path.render(), e.to_string())),
    }
}

/// Reads `json` as `T` under [`check`]'s rules, in one pass where it can.
///
/// The one pass is the typed parse alone, taken when the text opens with `{` and holds no
/// `\u0000` escape (the only way a JSON string or key can hold U+0000), so that the parse itself
/// finds every other fault `check` looks for. `T` must read every part strictly for that: each
/// struct refuses unknown fields (serde's derive then refuses a repeated field too), and every
/// free JSON value inside it is read with [`strict_map`] or [`strict_values`], which refuse a
/// repeated key at any depth. When the one pass fails for any reason, the text is walked and
/// parsed again exactly as [`check`] and [`from_str`] do, so that the fault found, and the field
/// it names, are theirs: the one pass accepts only what the two would.
pub fn read<T: DeserializeOwned>(json: &str) -> Result<T, RequestError> {
    let opens_an_object = json.trim_start_matches([' ', '\t', '\n', '\r']).starts_with('{');
    if opens_an_object
        && !json.contains("\\u0000")
        && let Ok(value) = serde_json::from_str(json)
    {
        return Ok(value);
    }
    check(json)?;
    from_str(json)
}

/// Parses `json` (already [`check`]ed) as `T`, naming the field at fault: a missing field by
/// its full path (`acts[0].op`), any other fault by the path where it was found.
pub fn from_str<T: DeserializeOwned>(json: &str) -> Result<T, RequestError> {
    // The plain parse is the fast path; only input that fails it is parsed again with the path
    // tracked. Both parses accept exactly the same inputs.
    if let Ok(value) = serde_json::from_str(json) {
        return Ok(value);
    }
    let deserializer = &mut serde_json::Deserializer::from_str(json);
    match serde_path_to_error::deserialize::<_, T>(deserializer) {
        Ok(value) => Ok(value),
        Err(e) => Err(path_error(e.path(), e.inner())),
    }
}

/// A serde error at `path` as the request error naming the field.
fn path_error(path: &serde_path_to_error::Path, error: &serde_json::Error) -> RequestError {
    let mut field = path.to_string();
    if field == "." {
        field.clear();
    }
    let message = error.to_string().replace('\n', " ");
    // serde reports a missing field at the object that lacks it; the field at fault is the
    // missing one.
    if let Some(name) = message.strip_prefix("missing field `").and_then(|rest| rest.split('`').next()) {
        field = if field.is_empty() { name.to_owned() } else { format!("{field}.{name}") };
    }
    invalid(field, message)
}

fn invalid(field: String, message: String) -> RequestError {
    RequestError { code: ReasonCode::InvalidInput, field, message }
}

/// For a field holding a struct: reads it only from a JSON object, never from an array (which
/// serde would otherwise read as the struct's fields in order).
pub fn object<'de, D: Deserializer<'de>, T: Deserialize<'de>>(deserializer: D) -> Result<T, D::Error> {
    Object::<T>::deserialize(deserializer).map(|o| o.0)
}

/// [`object`] for an optional struct: `null` or absent is `None`.
pub fn optional_object<'de, D: Deserializer<'de>, T: Deserialize<'de>>(deserializer: D) -> Result<Option<T>, D::Error> {
    Option::<Object<T>>::deserialize(deserializer).map(|o| o.map(|o| o.0))
}

/// [`object`] for a list of structs.
pub fn objects<'de, D: Deserializer<'de>, T: Deserialize<'de>>(deserializer: D) -> Result<Vec<T>, D::Error> {
    Vec::<Object<T>>::deserialize(deserializer).map(|list| list.into_iter().map(|o| o.0).collect())
}

struct Object<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ObjectVisitor(PhantomData))
    }
}

struct ObjectVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
    type Value = Object<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Object<T>, A::Error> {
        T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Object)
    }
}

/// For a field holding free JSON arguments: an object whose keys are not repeated at any depth.
pub fn strict_map<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Map<String, Value>, D::Error> {
    deserializer.deserialize_map(StrictMap)
}

/// For a field holding a list of free JSON values, none with a repeated key at any depth.
pub fn strict_values<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Value>, D::Error> {
    Vec::<Strict>::deserialize(deserializer).map(|values| values.into_iter().map(|v| v.0).collect())
}

/// A JSON value read as serde_json reads one, except that an object with a repeated key is an
/// error rather than its last value kept.
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictValue).map(Strict)
    }
}

struct StrictValue;

impl<'de> Visitor<'de> for StrictValue {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_i128<E: de::Error>(self, value: i128) -> Result<Value, E> {
        Number::deserialize(de::value::I128Deserializer::new(value)).map(Value::Number)
    }

    fn visit_u128<E: de::Error>(self, value: u128) -> Result<Value, E> {
        Number::deserialize(de::value::U128Deserializer::new(value)).map(Value::Number)
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Value, E> {
        Ok(Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(Strict(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Value, A::Error> {
        StrictMap.visit_map(map).map(Value::Object)
    }
}

struct StrictMap;

impl<'de> Visitor<'de> for StrictMap {
    type Value = Map<String, Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Map<String, Value>, E> {
        Ok(Map::new())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Map<String, Value>, A::Error> {
        let mut values = Map::new();
        while let Some((key, Strict(value))) = map.next_entry::<String, Strict>()? {
            if values.contains_key(&key) {
                return Err(de::Error::custom(format!("the key `{}` appears twice in one object", visible(&key))));
            }
            values.insert(key, value);
        }
        Ok(values)
    }
}

/// Where the walk is, and the first fault it found.
struct Walk<'de> {
    path: JsonPath<'de>,
    fault: Option<RequestError>,
}

/// The keys and indexes from the request's root to the value the walk is at, each key borrowed
/// from the input where it has no escapes.
struct JsonPath<'de>(Vec<Segment<'de>>);

enum Segment<'de> {
    Key(Cow<'de, str>),
    Index(usize),
}

/// How many keys an object may have before the walk looks for a repeated one in a set rather
/// than among the keys seen so far.
const FEW_KEYS: usize = 16;

impl JsonPath<'_> {
    /// `acts[0].args.order_id`, with invisible characters of keys shown as escapes.
    fn render(&self) -> String {
        let mut out = String::new();
        for segment in &self.0 {
            match segment {
                Segment::Key(key) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(&visible(key));
                }
                Segment::Index(i) => out.push_str(&format!("[{i}]")),
            }
        }
        out
    }
}

struct Node<'w, 'de> {
    walk: &'w RefCell<Walk<'de>>,
    depth: usize,
}

impl Node<'_, '_> {
    /// Records the fault at the current path and stops the walk.
    fn fault<E: de::Error>(&self, message: String) -> E {
        let mut walk = self.walk.borrow_mut();
        let field = walk.path.render();
        walk.fault.get_or_insert(invalid(field, message));
        E::custom("the request is refused")
    }

    fn not_an_object<E: de::Error>(&self, what: &str) -> E {
        self.fault(format!("a request is a JSON object, not {what}"))
    }

    fn scalar<E: de::Error>(&self, what: &str) -> Result<(), E> {
        if self.depth == 0 { Err(self.not_an_object(what)) } else { Ok(()) }
    }
}

impl<'de> DeserializeSeed<'de> for Node<'_, 'de> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.scalar("a boolean")
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.scalar("a number")
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.scalar("a number")
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.scalar("a number")
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.scalar("null")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<(), E> {
        self.scalar("a string")?;
        if text.contains('\0') {
            return Err(self.fault("the text contains U+0000, which cannot be stored".into()));
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        if self.depth == 0 {
            return Err(self.not_an_object("an array"));
        }
        let mut index = 0;
        loop {
            self.walk.borrow_mut().path.0.push(Segment::Index(index));
            let more = seq.next_element_seed(Node { walk: self.walk, depth: self.depth + 1 })?;
            self.walk.borrow_mut().path.0.pop();
            if more.is_none() {
                return Ok(());
            }
            index += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // The keys seen so far: in a list while they are few, then in a set.
        let mut few: Vec<Cow<'de, str>> = Vec::new();
        let mut many: BTreeSet<Cow<'de, str>> = BTreeSet::new();
        while let Some(key) = map.next_key_seed(Key)? {
            self.walk.borrow_mut().path.0.push(Segment::Key(key.clone()));
            if key.contains('\0') {
                return Err(self.fault("the key contains U+0000, which cannot be stored".into()));
            }
            if few.contains(&key) || many.contains(&key) {
                return Err(self.fault(format!("the key `{}` appears twice in one object", visible(&key))));
            }
            map.next_value_seed(Node { walk: self.walk, depth: self.depth + 1 })?;
            self.walk.borrow_mut().path.0.pop();
            if few.len() < FEW_KEYS {
                few.push(key);
            } else {
                many.insert(key);
            }
        }
        Ok(())
    }
}

/// An object key, borrowed from the input where it has no escapes.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Cow<'de, str>, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(key))
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(key.to_owned()))
    }

    fn visit_string<E: de::Error>(self, key: String) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(json: &str) -> (String, String) {
        let e = check(json).unwrap_err();
        assert_eq!(e.code, ReasonCode::InvalidInput);
        (e.field, e.message)
    }

    #[test]
    fn a_repeated_key_is_found_among_many_keys_too() {
        let keys: Vec<String> = (0..40).map(|i| format!("\"k{i}\":{i}")).collect();
        let all = keys.join(",");
        assert!(check(&format!("{{{all}}}")).is_ok());
        // Repeating a key seen among the first few, and one seen after them.
        for repeated in ["k3", "k30", "k39"] {
            assert_eq!(fault(&format!("{{{all},\"{repeated}\":0}}")).0, repeated);
            assert_eq!(fault(&format!("{{\"x\":{{{all},\"{repeated}\":0}}}}")).0, format!("x.{repeated}"));
        }
        // An escaped key is the same key as its plain spelling.
        assert_eq!(fault(r#"{"k\u0031":1,"k1":2}"#).0, "k1");
    }

    #[test]
    fn a_repeated_key_is_refused_at_any_depth_naming_its_path() {
        assert_eq!(fault(r#"{"a":1,"a":2}"#).0, "a");
        assert_eq!(fault(r#"{"acts":[{"op":"x","args":{"order_id":"1","order_id":"2"}}]}"#).0, "acts[0].args.order_id");
        assert_eq!(fault(r#"{"x":[[],[{"k":{"m":1,"m":1}}]]}"#).0, "x[1][0].k.m");
        let (_, message) = fault(r#"{"draft":{"text":"a","text":"b"}}"#);
        assert!(message.contains("`text` appears twice"), "{message}");
    }

    #[test]
    fn u0000_is_refused_in_a_text_and_in_a_key() {
        assert_eq!(fault(r#"{"entries":[{"text":"a\u0000b"}]}"#).0, "entries[0].text");
        let (field, message) = fault(r#"{"args":{"a\u0000":1}}"#);
        assert_eq!(field, "args.a\\u{0000}");
        assert!(message.contains("U+0000"), "{message}");
    }

    #[test]
    fn max_depth_is_where_the_parser_stops() {
        let nested = |levels: usize| format!("{{\"a\":{}{}}}", "[".repeat(levels - 1), "]".repeat(levels - 1));
        assert!(check(&nested(MAX_DEPTH)).is_ok());
        let (field, message) = fault(&nested(MAX_DEPTH + 1));
        assert!(message.contains("recursion limit"), "{message}");
        assert!(field.starts_with("a"), "{field}");
        assert!(serde_json::from_str::<Value>(&nested(MAX_DEPTH)).is_ok());
        assert!(serde_json::from_str::<Value>(&nested(MAX_DEPTH + 1)).is_err());
    }

    #[test]
    fn only_an_object_is_a_request() {
        for json in ["[]", r#"["c","t"]"#, "1", "null", r#""x""#, "true"] {
            let (field, message) = fault(json);
            assert_eq!(field, "", "{json}");
            assert!(message.starts_with("a request is a JSON object"), "{json}: {message}");
        }
        assert!(fault("{} {}").1.contains("trailing"));
        assert!(check(r#"{"a":[1,"b",null,{"c":{}}],"d":{"e":1.5}}"#).is_ok());
        // Equal keys in different objects are not repeats.
        assert!(check(r#"{"a":{"k":1},"b":{"k":1},"c":[{"k":1},{"k":2}]}"#).is_ok());
    }

    #[test]
    fn the_one_pass_read_accepts_and_refuses_what_the_walk_and_the_parse_do() {
        use crate::request::TurnRequest;
        let head = r#""conversation":"c","turn":"t","actor":"a","at":"2026-11-29T15:00:00Z","time_zone":"UTC","locale":"en-US""#;
        let bodies = [
            format!("{{{head}}}"),
            format!(" \n {{{head}}}"),
            format!(r#"{{{head},"acts":[{{"op":"x","args":null}}]}}"#),
            format!(r#"{{{head},"acts":[{{"op":"x","args":{{"k":{{"m":[1,{{"n":1,"n":2}}]}}}}}}]}}"#),
            format!(r#"{{{head},"calls":[{{"tool":"t","args":{{"k":1,"k":1}}}}]}}"#),
            format!(r#"{{{head},"draft":{{"text":"d","claims":[{{"c":1}},[{{"c":1,"c":2}}]]}}}}"#),
            format!(r#"{{{head},"draft":{{"text":"d","claims":[{{"c":1.5,"d":-3,"e":18446744073709551615}}]}}}}"#),
            format!(r#"{{{head},"entries":[{{"kind":"user","text":"a\\u0000b"}}]}}"#),
            format!(r#"{{{head},"entries":[{{"kind":"user","text":"a\u0000b"}}]}}"#),
            format!(r#"{{{head},"acts":[{{"op":"x","args":{{"k\u0031":1,"k1":2}}}}]}}"#),
            format!(r#"{{{head},"turn":"again"}}"#),
            format!(r#"{{{head}}} {{}}"#),
            format!(r#"[{head}]"#),
        ];
        for body in &bodies {
            let one: Result<TurnRequest, _> = read(body);
            let two = check(body).and_then(|()| from_str::<TurnRequest>(body));
            match (one, two) {
                (Ok(one), Ok(two)) => assert_eq!(one, two, "{body}"),
                (Err(one), Err(two)) => assert_eq!((one.field, one.message), (two.field, two.message), "{body}"),
                (one, two) => panic!("{body}: the one pass gave {one:?}, the walk and the parse {two:?}"),
            }
        }
        // Both ways accept the plain body, the one led by whitespace, the numbers and the escaped
        // backslash before `u0000`, and refuse the rest: so each branch above is taken.
        let accepted = bodies.iter().filter(|b| read::<TurnRequest>(b).is_ok()).count();
        assert_eq!(accepted, 4);
    }

    #[test]
    fn a_missing_field_is_named_by_its_path() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Inner {
            op: String,
        }
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Outer {
            conversation: String,
            #[serde(default, deserialize_with = "objects")]
            acts: Vec<Inner>,
        }
        assert_eq!(from_str::<Outer>(r#"{"acts":[]}"#).unwrap_err().field, "conversation");
        assert_eq!(from_str::<Outer>(r#"{"conversation":"c","acts":[{}]}"#).unwrap_err().field, "acts[0].op");
        let e = from_str::<Outer>(r#"{"conversation":"c","acts":[["x"]]}"#).unwrap_err();
        assert_eq!(e.field, "acts[0]");
        assert!(e.message.contains("expected an object"), "{}", e.message);
    }
}
