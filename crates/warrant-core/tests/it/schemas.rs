//! Table schemas in core: a schema written as `fields` and the same one as a JSON Schema file
//! load to the same kinds and the same Cedar type; rows are checked against them; and an
//! effect whose result breaks the schema is refused, writing nothing.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use warrant_core::Contract;
use warrant_core::contract::ContractFiles;
use warrant_core::records::{self, Record};
use warrant_core::request;
use warrant_core::turn::{self, FactError, Facts, Interaction, Verdict};

/// The customer table, its fields given as `FIELDS` (the `fields` form or `schema = …`).
const CONTRACT: &str = r#"
[sources]
kinds = ["user", "agent"]
acts = "agent"

[actor]
table = "customer"

[records]
currency = "USD"

[[records.table]]
name = "customer"
file = "customers.json"
entity = "Customer"
FIELDS

[policies]
files = ["policy.cedar"]

[[operation]]
name = "set_tier"
args.tier = { kind = "member", of = "actor", path = "cards" }

[[operation.effect]]
set = "actor.tier"
arg = "tier"

[[operation]]
name = "confirm_tier"
consequential = true
args.tier = { kind = "member", of = "actor", path = "cards" }

[[operation.effect]]
set = "actor.tier"
arg = "tier"

[[operation]]
name = "confirm_gold_then"
consequential = true
args.tier = { kind = "member", of = "actor", path = "cards" }

[[operation.effect]]
set = "actor.tier"
value = "gold"

[[operation.effect]]
set = "actor.tier"
arg = "tier"
when = { "actor.tier" = "gold" }

[[operation]]
name = "top_up"
consequential = true
args.tier = { kind = "member", of = "actor", path = "cards" }
derive = [{ name = "credit", expr = "actor.credit" }]

[[operation.effect]]
add = "tier.balance"
amount = "credit"

[[operation]]
name = "repeat_first_call"
consequential = true
args.tier = { kind = "member", of = "actor", path = "cards" }
derive = [{ name = "first_at", expr = "first(actor.calls.at)" }]

[[operation.effect]]
append = "actor.calls"
entry.at = { derived = "first_at" }
entry.minutes = { value = 1 }
"#;

const FIELDS: &str = r#"
key = "id"
fields.id = { kind = "text" }
fields.credit = { kind = "money" }
fields.since = { kind = "date", optional = true }
fields.tier = { kind = "enum", values = ["silver", "gold"] }
fields.calls = { kind = "list", of = { kind = "object", fields = { at = { kind = "instant" }, minutes = { kind = "integer" } } } }
fields.cards = { kind = "map", of = { kind = "object", fields = { balance = { kind = "money" } } } }
"#;

const SCHEMA_FILE: &str = r##"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "id": {"type": "string"},
    "credit": {"type": "number", "x-warrant-kind": "money"},
    "since": {"type": "string", "format": "date"},
    "tier": {"type": "string", "enum": ["silver", "gold"]},
    "calls": {"type": "array", "items": {
      "type": "object",
      "properties": {"at": {"type": "string", "format": "date-time"}, "minutes": {"type": "integer"}},
      "required": ["at", "minutes"], "additionalProperties": false}},
    "cards": {"type": "object", "additionalProperties": {
      "type": "object", "properties": {"balance": {"type": "number", "x-warrant-kind": "money"}},
      "required": ["balance"], "additionalProperties": false}}
  },
  "required": ["id", "credit", "tier", "calls", "cards"],
  "additionalProperties": false
}"##;

struct Files;
impl ContractFiles for Files {
    fn read(&self, path: &str) -> Result<String, String> {
        match path {
            "policy.cedar" => Ok("permit (principal, action, resource);".into()),
            "customer.schema.json" => Ok(SCHEMA_FILE.into()),
            other => Err(format!("no `{other}`")),
        }
    }
}

fn load(fields: &str) -> Result<Contract, warrant_core::ContractError> {
    Contract::load("schemas.toml", &CONTRACT.replace("FIELDS", fields), &Files)
}

fn kim() -> Value {
    json!({"id": "kim", "credit": 20.5, "tier": "silver",
           "calls": [{"at": "2026-11-30T03:00:00Z", "minutes": 5}], "cards": {"g1": {"balance": 10}, "gold": {"balance": 0}}})
}

#[test]
fn fields_and_a_json_schema_file_declare_the_same_row() {
    let written = load(FIELDS).unwrap();
    let file = load("key = \"id\"\nschema = \"customer.schema.json\"").unwrap();
    assert_eq!(written.tables()[0].schema, file.tables()[0].schema);
    assert!(written.tables()[0].schema.is_some());
    assert_eq!(written.cedar_schema(), file.cedar_schema());
    // A typed table's entity is a closed record: money as minor units, lists as sets, optional
    // fields not required.
    let shape = &written.cedar_schema()[""]["entityTypes"]["Customer"]["shape"];
    assert_eq!(shape.get("additionalAttributes"), None, "{shape}");
    assert_eq!(shape["attributes"]["credit"], json!({"type": "Long"}));
    // A date is a Cedar datetime (that day's 00:00:00Z), so policies compare it.
    assert_eq!(shape["attributes"]["since"], json!({"type": "Extension", "name": "datetime", "required": false}));
    assert_eq!(shape["attributes"]["calls"]["type"], "Set");
    assert_eq!(shape["attributes"]["key"], json!({"type": "String"}));
    // The schema file is part of what the contract's hash covers.
    struct Described;
    impl ContractFiles for Described {
        fn read(&self, path: &str) -> Result<String, String> {
            Files.read(path).map(|text| text.replacen("\"type\"", "\"description\": \"a customer\", \"type\"", 1))
        }
    }
    let text = CONTRACT.replace("FIELDS", "key = \"id\"\nschema = \"customer.schema.json\"");
    let described = Contract::load("schemas.toml", &text, &Described).unwrap();
    assert_eq!(described.tables()[0].schema, file.tables()[0].schema);
    assert_ne!(described.hash(), file.hash());
}

#[test]
fn rows_are_checked_against_the_schema_naming_the_field() {
    let contract = load(FIELDS).unwrap();
    let table = &contract.tables()[0];
    let usd = contract.currency();
    assert_eq!(records::check_row(table, "kim", &kim(), usd), Ok(()));
    let fault = |mutate: &dyn Fn(&mut Value), key: &str| {
        let mut row = kim();
        mutate(&mut row);
        let error = records::check_row(table, key, &row, usd).unwrap_err();
        (error.field().map(str::to_owned), error.to_string())
    };
    let (field, message) = fault(&|r| r["tierr"] = json!("gold"), "kim");
    assert_eq!(field.as_deref(), Some("tierr"), "{message}");
    assert!(message.contains("not a declared field"), "{message}");
    let (field, _) = fault(&|r| r["calls"][0]["at"] = json!("2026-11-30 03:00"), "kim");
    assert_eq!(field.as_deref(), Some("calls[0].at"));
    let (field, _) = fault(&|r| r["cards"]["g1"]["balance"] = json!(1.005), "kim");
    assert_eq!(field.as_deref(), Some("cards.g1.balance"));
    let (field, _) = fault(&|r| r["since"] = json!("2026-02-30"), "kim");
    assert_eq!(field.as_deref(), Some("since"));
    let (field, message) = fault(&|r| r["tier"] = Value::Null, "kim");
    assert_eq!(field.as_deref(), Some("tier"), "{message}");
    // A null in an optional field is as good as its absence.
    let mut optional_null = kim();
    optional_null["since"] = Value::Null;
    assert_eq!(records::check_row(table, "kim", &optional_null, usd), Ok(()));
    // The key field holds the row's own key.
    let (field, message) = fault(&|_| {}, "lee");
    assert_eq!(field.as_deref(), Some("id"), "{message}");
}

struct Memory(BTreeMap<(String, String), Record>);
impl Facts for Memory {
    fn record(&self, table: &str, key: &str) -> Result<Option<Record>, FactError> {
        Ok(self.0.get(&(table.to_owned(), key.to_owned())).cloned())
    }
    fn interaction(&self, _: &str) -> Result<Option<Interaction>, FactError> {
        Ok(None)
    }
}

fn set_tier(card: &str) -> turn::Decision {
    decide_tier("set_tier", card)
}

fn decide_tier(op: &str, tier: &str) -> turn::Decision {
    decide_tier_on(&load(FIELDS).unwrap(), op, tier, kim(), 2)
}

/// `op` with `tier` against the row `kim` as given, at `revision`.
fn decide_tier_on(contract: &Contract, op: &str, tier: &str, kim: Value, revision: i64) -> turn::Decision {
    let row = Record { table: "customer".into(), key: "kim".into(), revision, value: kim };
    let facts = Memory(BTreeMap::from([(("customer".to_owned(), "kim".to_owned()), row)]));
    let body = json!({
        "conversation": "c", "turn": "t", "actor": "kim",
        "at": "2026-11-30T03:00:00Z", "time_zone": "UTC", "locale": "en-US",
        "entries": [{"kind": "user", "text": "Make me gold."}],
        "acts": [{"op": op, "args": {"tier": tier}}],
    });
    let valid = request::parse(contract, &body.to_string()).unwrap();
    turn::decide(contract, &valid, &facts, &BTreeSet::new())
}

/// The contract with the customer's `fields` and the operations `ops` added to the test's own.
fn with_ops(fields: &str, ops: &str) -> Contract {
    Contract::load("schemas.toml", &(CONTRACT.replace("FIELDS", fields) + ops), &Files).unwrap()
}

/// Asserts the decision's first act was refused `effect_breaks_schema`, naming `at`, with nothing
/// written and no interaction opened.
fn assert_breaks_schema(decision: &turn::Decision, at: &str) {
    let act = &decision.response.acts[0];
    assert_eq!((act.verdict, act.reasons[0].code.as_str()), (Verdict::Refuse, "effect_breaks_schema"), "{act:?}");
    let detail = act.reasons[0].detail.as_deref().unwrap_or_default();
    assert!(detail.contains(at), "`{at}` not named: {detail}");
    assert!(decision.writes.is_empty() && decision.response.interactions.is_empty(), "{:?}", decision.writes);
}

#[test]
fn an_effect_whose_result_breaks_the_schema_is_refused_and_writes_nothing() {
    let gold = set_tier("gold");
    assert_eq!(gold.response.acts[0].verdict, Verdict::Commit, "{:?}", gold.response.acts);
    assert_eq!(gold.writes[0].value["tier"], "gold");
    // `g1` is a member of the collection but no value of the field: the effect fails closed.
    let platinum = set_tier("g1");
    let act = &platinum.response.acts[0];
    assert_eq!(act.verdict, Verdict::Refuse, "{act:?}");
    assert_eq!(act.reasons[0].code.as_str(), "effect_breaks_schema");
    assert!(act.reasons[0].detail.as_deref().is_some_and(|d| d.contains("`tier`")), "{act:?}");
    assert!(platinum.writes.is_empty() && platinum.response.effects.is_empty(), "{:?}", platinum.writes);
    // A consequential act is tried before it is held: the user is never asked to confirm an
    // effect that could not commit.
    let held = decide_tier("confirm_tier", "gold");
    assert_eq!(held.response.acts[0].verdict, Verdict::Hold, "{:?}", held.response.acts);
    assert!(held.writes.is_empty());
    let refused = decide_tier("confirm_tier", "g1");
    assert_eq!(refused.response.acts[0].verdict, Verdict::Refuse, "{:?}", refused.response.acts);
    assert_eq!(refused.response.acts[0].reasons[0].code.as_str(), "effect_breaks_schema");
    assert!(refused.response.interactions.is_empty() && refused.writes.is_empty());
}

#[test]
fn an_effect_on_trial_reads_what_its_earlier_steps_wrote() {
    // The trial writes `tier` beside the row; the second step's condition reads it there. It
    // holds only on the value the first step wrote (the row as read says `silver`), and the
    // second step then writes `g1`, which the enum does not hold.
    for (when, verdict) in [("gold", Verdict::Refuse), ("silver", Verdict::Hold)] {
        let condition = format!("when = {{ \"actor.tier\" = \"{when}\" }}");
        let text = CONTRACT.replace("FIELDS", FIELDS).replace("when = { \"actor.tier\" = \"gold\" }", &condition);
        let contract = Contract::load("schemas.toml", &text, &Files).unwrap();
        let decided = decide_tier_on(&contract, "confirm_gold_then", "g1", kim(), 2);
        let act = &decided.response.acts[0];
        assert_eq!(act.verdict, verdict, "when `{when}`: {act:?}");
        if verdict == Verdict::Refuse {
            assert_eq!(act.reasons[0].code.as_str(), "effect_breaks_schema", "{act:?}");
            assert!(act.reasons[0].detail.as_deref().is_some_and(|d| d.contains("`tier`")), "{act:?}");
        }
        assert!(decided.writes.is_empty());
    }
}

#[test]
fn an_effect_shown_to_fit_still_has_the_values_only_the_act_gives_checked() {
    // Every step of `repeat_first_call` writes a declared field, so the effect is not tried
    // where the row fits as read and the value derived for `at` fits it. Without a first call,
    // the value derived is `null`, which `at` cannot hold: the effect is tried and refused.
    let contract = load(FIELDS).unwrap();
    let held = decide_tier_on(&contract, "repeat_first_call", "gold", kim(), 2);
    assert_eq!(held.response.acts[0].verdict, Verdict::Hold, "{:?}", held.response.acts);
    let mut no_calls = kim();
    no_calls["calls"] = json!([]);
    let refused = decide_tier_on(&contract, "repeat_first_call", "gold", no_calls, 3);
    assert_breaks_schema(&refused, "`calls[0].at` is null");
}

#[test]
fn an_object_of_arguments_shown_to_fit_still_has_each_argument_checked() {
    // `set_home` writes an object of its arguments into a declared object field: held untried
    // where the argument fits the field it lands in, refused where it does not.
    let fields = format!(
        "{FIELDS}fields.home = {{ kind = \"object\", optional = true, fields = {{ tier = {{ kind = \"enum\", values = [\"silver\", \"gold\"] }} }} }}\n"
    );
    let ops = r#"
[[operation]]
name = "set_home"
consequential = true
args.tier = { kind = "member", of = "actor", path = "cards" }

[[operation.effect]]
set = "actor.home"
args = ["tier"]
"#;
    let contract = with_ops(&fields, ops);
    let held = decide_tier_on(&contract, "set_home", "gold", kim(), 2);
    assert_eq!(held.response.acts[0].verdict, Verdict::Hold, "{:?}", held.response.acts);
    assert_breaks_schema(&decide_tier_on(&contract, "set_home", "g1", kim(), 2), "home.tier");
}

#[test]
fn a_field_of_every_element_of_a_list_is_tried_even_when_its_name_reads_as_a_position() {
    // `calls` elements may hold a field named `0`. Writing `actor.calls.0` reaches, in the row,
    // the list's first element, not that field of each element: the effect is tried, and what it
    // leaves (a number where an element belongs) is refused before the act is held.
    let fields = FIELDS.replace(
        "minutes = { kind = \"integer\" } } } }",
        "minutes = { kind = \"integer\" }, \"0\" = { kind = \"integer\", optional = true } } } }",
    );
    assert_ne!(fields, FIELDS);
    let ops = r#"
[[operation]]
name = "poke"
consequential = true
args.tier = { kind = "member", of = "actor", path = "cards" }

[[operation.effect]]
set = "actor.calls.0"
value = 7
"#;
    assert_breaks_schema(&decide_tier_on(&with_ops(&fields, ops), "poke", "gold", kim(), 2), "calls[0]");
}

#[test]
fn a_stored_row_that_does_not_fit_is_refused_whatever_field_an_effect_writes() {
    // An effect's result is checked on the fields it wrote only when the row as read fits; a
    // row stored before its table's schema changed is checked whole, and its fault is named.
    let contract = load(FIELDS).unwrap();
    let wrote = |decision: &turn::Decision| (decision.response.acts[0].verdict, decision.writes.len());
    assert_eq!(wrote(&decide_tier_on(&contract, "set_tier", "gold", kim(), 2)), (Verdict::Commit, 1));
    for (revision, fault) in [
        // The same revision as the fitting row just decided, with another value.
        (2, ("tierr", json!("gold"))),
        (3, ("calls", json!([{"at": "2026-11-30T03:00:00Z", "minutes": "five"}]))),
        (4, ("cards", json!({"g1": {"balance": 1.005}, "gold": {"balance": 0}}))),
    ] {
        let mut row = kim();
        row[fault.0] = fault.1.clone();
        for op in ["set_tier", "confirm_tier", "repeat_first_call", "top_up"] {
            // Twice: a row found not to fit is not kept as fitting.
            for _ in 0..2 {
                assert_breaks_schema(&decide_tier_on(&contract, op, "gold", row.clone(), revision), fault.0);
            }
        }
    }
    // An effect on a member of the fitting row is held.
    assert_eq!(wrote(&decide_tier_on(&contract, "top_up", "gold", kim(), 2)), (Verdict::Hold, 0));
    // The fitting row is still decided on the field the effect wrote.
    assert_eq!(wrote(&decide_tier_on(&contract, "set_tier", "g1", kim(), 2)).0, Verdict::Refuse);
    assert_eq!(wrote(&decide_tier_on(&contract, "set_tier", "gold", kim(), 2)), (Verdict::Commit, 1));
}

#[test]
fn a_literal_an_effect_writes_must_fit_its_field_when_the_contract_loads() {
    let contract = CONTRACT.replace("FIELDS", FIELDS).replace("arg = \"tier\"", "value = \"bronze\"");
    let error = Contract::load("schemas.toml", &contract, &Files).unwrap_err().to_string();
    assert!(error.contains("`actor.tier` holds `bronze`, not one of `silver`, `gold`"), "{error}");
    let appended = CONTRACT
        .replace("FIELDS", FIELDS)
        .replace("set = \"actor.tier\"\narg = \"tier\"", "append = \"actor.calls\"\nentry.minutes = { value = 3 }");
    let error = Contract::load("schemas.toml", &appended, &Files).unwrap_err().to_string();
    assert!(error.contains("lacks its field `at`"), "{error}");
    // An enum argument with a value the field cannot hold, an integer into text: both sure
    // from the declarations, so both stop the load.
    let enum_arg = CONTRACT.replace("FIELDS", FIELDS).replace(
        "args.tier = { kind = \"member\", of = \"actor\", path = \"cards\" }",
        "args.tier = { kind = \"enum\", values = [\"gold\", \"platinum\"] }",
    );
    let error = Contract::load("schemas.toml", &enum_arg, &Files).unwrap_err().to_string();
    assert!(error.contains("`actor.tier` cannot hold `platinum`, a value of argument `tier`"), "{error}");
    let integer = CONTRACT
        .replace("FIELDS", FIELDS)
        .replace(
            "args.tier = { kind = \"member\", of = \"actor\", path = \"cards\" }",
            "args.tier = { kind = \"integer\" }",
        )
        .replace("set = \"actor.tier\"", "set = \"actor.id\"");
    let error = Contract::load("schemas.toml", &integer, &Files).unwrap_err().to_string();
    assert!(error.contains("`actor.id` is text, and argument `tier` is an integer"), "{error}");
}
