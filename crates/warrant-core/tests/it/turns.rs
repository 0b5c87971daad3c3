//! The turn decided in core against facts in memory: every argument kind (dates and money by
//! the turn's clock, pointers into the user's words, bounds), policy over derived amounts, and
//! the same decision from the same inputs.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use warrant_core::Contract;
use warrant_core::contract::ContractFiles;
use warrant_core::records::Record;
use warrant_core::request;
use warrant_core::turn::{self, Decision, FactError, Facts, Interaction, Verdict};

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
money = ["credit"]

[policies]
files = ["policy.cedar"]

[[operation]]
name = "book_callback"
args.day = { kind = "date" }
args.deposit = { kind = "money" }
args.name = { kind = "text" }
args.slots = { kind = "integer", min = 1, max = 3 }
args.urgent = { kind = "bool", optional = true }
derive = [{ name = "credit", expr = "actor.credit" }]

[[operation.effect]]
set = "actor.callback"
args = ["day", "name", "slots"]

[[operation.effect]]
add = "actor.credit"
amount = "-credit"
"#;

const POLICY: &str = r#"
permit (principal, action, resource);
@id("deposit_above_credit")
forbid (principal, action == Action::"book_callback", resource)
when { context.args.deposit.units > context.derived.credit };
"#;

struct Files;
impl ContractFiles for Files {
    fn read(&self, path: &str) -> Result<String, String> {
        if path == "policy.cedar" { Ok(POLICY.into()) } else { Err(format!("no `{path}`")) }
    }
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

fn facts() -> Memory {
    let mut rows = BTreeMap::new();
    rows.insert(
        ("customer".to_owned(), "kim".to_owned()),
        Record { table: "customer".into(), key: "kim".into(), revision: 4, value: json!({"credit": 20.50}) },
    );
    Memory(rows)
}

fn decide(args: Value) -> Decision {
    let contract = Contract::load("callback.toml", CONTRACT, &Files).unwrap();
    let body = json!({
        "conversation": "c", "turn": "t", "actor": "kim",
        "at": "2026-11-30T03:00:00Z", "time_zone": "America/Los_Angeles", "locale": "en-US",
        "entries": [{"kind": "user", "text": "Call me, the name is Kim Lee."}],
        "acts": [{"op": "book_callback", "args": args}],
    });
    let valid = request::parse(&contract, &body.to_string()).unwrap();
    turn::decide(&contract, &valid, &facts(), &BTreeSet::new())
}

fn good() -> Value {
    json!({"day": {"offset_days": 3}, "deposit": {"amount": "12.50", "currency": "USD"},
           "name": {"ptr": [6, 7], "copy": "Kim"}, "slots": 2})
}

fn first(decision: &Decision) -> (Verdict, String) {
    let act = &decision.response.acts[0];
    (act.verdict, act.reasons.first().map_or(String::new(), |r| r.code.as_str().to_owned()))
}

#[test]
fn dates_money_and_pointers_are_evaluated_by_code() {
    let decision = decide(good());
    assert_eq!(first(&decision), (Verdict::Commit, String::new()));
    // 03:00 UTC on the 30th is still the 29th in Los Angeles: three days on is December 2.
    let write = &decision.writes[0];
    assert_eq!(write.expected_revision, 4);
    assert_eq!(write.value["callback"], json!({"day": "2026-12-02", "name": "Kim", "slots": 2}));
    // 20.50 of credit less the 20.50 derived: the quantity arithmetic is exact, in cents.
    assert_eq!(write.value["credit"], json!(0.0));
}

#[test]
fn each_malformed_value_asks_or_refuses_with_its_reason() {
    let cases = [
        ("deposit", json!({"amount": "12.505", "currency": "USD"}), Verdict::Ask, "money_invalid"),
        ("deposit", json!({"amount": 12.5, "currency": "USD"}), Verdict::Ask, "money_invalid"),
        ("deposit", json!({"amount": "12.50", "currency": "XYZ"}), Verdict::Ask, "money_invalid"),
        ("day", json!({"date": "2026-02-30"}), Verdict::Ask, "date_invalid"),
        ("day", json!({"weekday": "someday", "which": "next"}), Verdict::Ask, "date_invalid"),
        ("name", json!({"ptr": [6, 7], "copy": "Park"}), Verdict::Ask, "pointer_invalid"),
        ("name", json!({"ptr": [0, 2]}), Verdict::Ask, "pointer_invalid"),
        // A plain value is no pointer: the `locate` check is needed, and here none answers.
        ("name", json!("Kim Lee"), Verdict::Ask, "check_unfinished"),
        ("slots", json!(5), Verdict::Refuse, "out_of_bounds"),
        ("slots", json!("2"), Verdict::Refuse, "wrong_argument_type"),
        ("urgent", json!("yes"), Verdict::Refuse, "wrong_argument_type"),
        ("extra", json!(1), Verdict::Refuse, "unknown_argument"),
        ("deposit", json!({"amount": "25.00", "currency": "USD"}), Verdict::Refuse, "forbidden_by_policy"),
    ];
    for (field, value, verdict, code) in cases {
        let mut args = good();
        args[field] = value.clone();
        let decision = decide(args);
        assert_eq!(first(&decision), (verdict, code.to_owned()), "{field} = {value}");
        assert!(decision.writes.is_empty() && decision.effects.is_empty(), "{field} = {value} wrote");
    }
    let mut missing = good();
    missing.as_object_mut().unwrap().remove("slots");
    assert_eq!(first(&decide(missing)), (Verdict::Ask, "missing_argument".to_owned()));
}

#[test]
fn the_same_inputs_give_the_same_decision() {
    assert_eq!(decide(good()), decide(good()));
}

#[test]
fn a_money_argument_in_another_currency_than_the_contract_s_is_refused() {
    // The policy compares the deposit's minor units with the credit's cents: 12.50 EUR read as
    // 1250 cents would pass a check written for dollars, and 1500 yen would be read as $15.00.
    for (amount, currency) in [("12.50", "EUR"), ("1500", "JPY"), ("1.000", "KWD")] {
        let mut args = good();
        args["deposit"] = json!({"amount": amount, "currency": currency});
        let decision = decide(args);
        assert_eq!(first(&decision), (Verdict::Refuse, "currency_not_accepted".to_owned()), "{currency}");
        let reason = &decision.response.acts[0].reasons[0];
        assert_eq!(reason.field.as_deref(), Some("args.deposit"));
        assert!(decision.writes.is_empty() && decision.effects.is_empty(), "{currency} wrote");
    }
    assert_eq!(first(&decide(good())), (Verdict::Commit, String::new()));
}
