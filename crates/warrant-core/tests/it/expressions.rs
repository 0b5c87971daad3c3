//! CEL expressions through the turn: derived quantities read arguments, rows, the actor, the
//! turn's instant and named expressions, reach the Cedar policy typed as declared, and an effect
//! writes what an expression computes; every evaluation error refuses the act with its reason.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use warrant_core::Contract;
use warrant_core::contract::ContractFiles;
use warrant_core::records::Record;
use warrant_core::request;
use warrant_core::turn::{self, Decision, Verdict};

use crate::Rows;

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

[[records.table]]
name = "order"
file = "orders.json"
entity = "Order"
money = ["items.price", "refund"]

[expressions]
placed_recently = "now - timestamp(order_id.placed_at) < duration('24h')"
item_total = "sum(as_list(order_id.items).map(i, i.price))"

[policies]
files = ["policy.cedar"]

[[operation]]
name = "cancel"
resource = "order_id"
args.order_id = { kind = "record", table = "order" }
args.bags = { kind = "integer", min = 0, max = 5 }
derive = [
  { name = "fee", cel = "bags > 2 ? (bags - 2) * 5000 : 0", type = "money" },
  { name = "recent", cel = "placed_recently", type = "bool" },
  { name = "refund", cel = "item_total - fee", type = "money" },
  { name = "within_credit", cel = "as_list(order_id.items).all(i, i.price <= actor.credit)", type = "bool" },
  { name = "note", cel = "has(order_id.note) ? order_id.note : ''", type = "text" },
]

[[operation.effect]]
set = "order_id.refund"
cel = "refund"
type = "money"

[[operation.effect]]
set = "order_id.cancelled_at"
cel = "now"

[[operation.effect]]
set = "order_id.status"
cel = "recent && within_credit ? 'cancelled' : 'review'"
type = "text"
"#;

const POLICY: &str = r#"
permit (principal, action, resource);
@id("cancel_within_24_hours")
forbid (principal, action == Action::"cancel", resource) when { !context.derived.recent };
@id("no_negative_refund")
forbid (principal, action == Action::"cancel", resource) when { context.derived.refund < 0 };
"#;

struct Files;
impl ContractFiles for Files {
    fn read(&self, path: &str) -> Result<String, String> {
        if path == "policy.cedar" { Ok(POLICY.into()) } else { Err(format!("no `{path}`")) }
    }
}

fn order() -> Value {
    json!({"placed_at": "2026-11-29T10:00:00Z", "status": "pending",
           "items": [{"name": "lamp", "price": 30.00}, {"name": "bulb", "price": 12.50}]})
}

fn decide(order: Value, bags: i64) -> Decision {
    let contract = Contract::load("cel.toml", CONTRACT, &Files).unwrap();
    let mut rows = BTreeMap::new();
    let kim = json!({"credit": 25.00});
    rows.insert(
        "customer/kim".to_owned(),
        Record { table: "customer".into(), key: "kim".into(), revision: 1, value: kim },
    );
    rows.insert("order/o1".to_owned(), Record { table: "order".into(), key: "o1".into(), revision: 3, value: order });
    let body = json!({
        "conversation": "c", "turn": "t", "actor": "kim",
        "at": "2026-11-30T03:00:00Z", "time_zone": "Europe/Paris", "locale": "en-US",
        "entries": [{"kind": "user", "text": "Cancel it."}],
        "acts": [{"op": "cancel", "args": {"order_id": "o1", "bags": bags}}],
    });
    let valid = request::parse(&contract, &body.to_string()).unwrap();
    turn::decide(&contract, &valid, &Rows(rows), &BTreeSet::new())
}

fn outcome(decision: &Decision) -> (Verdict, String, Vec<String>) {
    let act = &decision.response.acts[0];
    let reason = act.reasons.first();
    (
        act.verdict,
        reason.map_or(String::new(), |r| r.code.as_str().to_owned()),
        reason.map_or(vec![], |r| r.policies.clone()),
    )
}

#[test]
fn a_cel_quantity_reaches_the_policy_and_a_cel_effect_writes_its_value() {
    let decision = decide(order(), 1);
    assert_eq!(outcome(&decision), (Verdict::Commit, String::new(), vec![]), "{:?}", decision.response.acts[0]);
    let write = decision.writes.iter().find(|w| w.row.key == "o1").unwrap();
    // 30.00 + 12.50, less no fee, in cents, written back as the amount.
    assert_eq!(write.value["refund"], json!(42.5));
    assert_eq!(write.value["cancelled_at"], json!("2026-11-30T03:00:00Z"));
    // The lamp costs more than the actor's credit of 25.00.
    assert_eq!(write.value["status"], json!("review"));
    // Three bags cost 50.00, more than the items: the policy sees a negative refund.
    assert_eq!(outcome(&decide(order(), 3)).2, ["no_negative_refund"]);
    let mut old = order();
    old["placed_at"] = json!("2026-11-28T10:00:00Z");
    assert_eq!(outcome(&decide(old, 1)).2, ["cancel_within_24_hours"]);
}

#[test]
fn each_evaluation_error_refuses_the_act_with_its_reason() {
    let mut no_items = order();
    no_items.as_object_mut().unwrap().remove("items");
    let mut bad_instant = order();
    bad_instant["placed_at"] = json!("yesterday");
    let mut numbered_note = order();
    numbered_note["note"] = json!(7);
    let mut items_as_map = order();
    items_as_map["items"] = json!({"a": {"price": 1.00}});
    let cases = [
        (no_items, "expression_failed", "no such field"),
        (bad_instant, "expression_failed", "placed_recently"),
        (numbered_note, "expression_wrong_type", "declared `text`"),
        (items_as_map, "expression_failed", "not a list"),
    ];
    for (order, code, says) in cases {
        let decision = decide(order.clone(), 1);
        let act = &decision.response.acts[0];
        assert_eq!((act.verdict, act.reasons[0].code.as_str()), (Verdict::Refuse, code), "{order}");
        let detail = act.reasons[0].detail.as_deref().unwrap();
        assert!(detail.contains(says), "{order}: {detail}");
        assert!(decision.writes.is_empty(), "{order}");
    }
}

#[test]
fn the_same_inputs_give_the_same_decision() {
    let first = serde_json::to_string(&decide(order(), 1).response).unwrap();
    for _ in 0..5 {
        assert_eq!(serde_json::to_string(&decide(order(), 1).response).unwrap(), first);
    }
}

#[test]
fn cedar_receives_each_cel_quantity_typed_as_declared() {
    let contract = Contract::load("cel.toml", CONTRACT, &Files).unwrap();
    let derived = &contract.cedar_schema()[""]["actions"]["cancel"]["appliesTo"]["context"]["attributes"]["derived"];
    let types: Vec<(&str, &str)> = ["fee", "recent", "refund", "note"]
        .iter()
        .map(|n| (*n, derived["attributes"][n]["type"].as_str().unwrap()))
        .collect();
    assert_eq!(types, [("fee", "Long"), ("recent", "Boolean"), ("refund", "Long"), ("note", "String")]);
}

/// Every act is allowed.
struct PermitAll;
impl ContractFiles for PermitAll {
    fn read(&self, _: &str) -> Result<String, String> {
        Ok("permit (principal, action, resource);".into())
    }
}

/// A contract of one operation `op` on an order, with the given extra lines in it and extra
/// sections before it.
fn contract_with(extra: &str, op: &str) -> Result<Contract, warrant_core::ContractError> {
    let text = format!(
        "[sources]\nkinds = [\"agent\"]\n\n[records]\n[[records.table]]\nname = \"order\"\nfile = \"o.json\"\n\
         entity = \"Order\"\n[policies]\nfiles = [\"p.cedar\"]\n{extra}\n[[operation]]\nname = \"op\"\n\
         resource = \"order_id\"\nargs.order_id = {{ kind = \"record\", table = \"order\" }}\n{op}\n"
    );
    Contract::load("c.toml", &text, &PermitAll)
}

#[test]
fn names_an_expression_cannot_use_are_refused_at_load() {
    let cases = [
        // A named expression reads an argument no operation declares.
        ("[expressions]\nlate = \"nobody > 1\"\n", "", "`nobody` is not a name"),
        // An operation uses a named expression reading an argument it lacks (another has it).
        (
            "[expressions]\nlate = \"bags > 1\"\n[[operation]]\nname = \"other\"\nresource = \"order_id\"\nargs.order_id = { kind = \"record\", table = \"order\" }\nargs.bags = { kind = \"integer\" }\n",
            "derive = [{ name = \"x\", cel = \"late\", type = \"bool\" }]",
            "expression `late` as operation `op` reads it: `bags` is not a name here",
        ),
        // An argument named like the turn's instant would hide it.
        (
            "",
            "args.now = { kind = \"integer\" }\nderive = [{ name = \"x\", cel = \"now\", type = \"integer\" }]",
            "`now` names the turn's value",
        ),
        // A named expression named like an argument.
        ("[expressions]\norder_id = \"1\"\n", "", "an argument or a derived quantity has the same name"),
        // A quantity derived later is not bound yet.
        (
            "",
            "derive = [{ name = \"a\", cel = \"b\", type = \"integer\" }, { name = \"b\", cel = \"1\", type = \"integer\" }]",
            "`b` is not a name here",
        ),
        // A derive with both forms, or `cel` without `type`.
        (
            "",
            "derive = [{ name = \"a\", expr = \"1\", cel = \"1\", type = \"integer\" }]",
            "needs `expr`, or `cel` with `type`",
        ),
        ("", "derive = [{ name = \"a\", cel = \"1\" }]", "needs `expr`, or `cel` with `type`"),
        // A computed effect with another value, and `type` without `cel`.
        ("", "[[operation.effect]]\nset = \"order_id.x\"\ncel = \"1\"\nvalue = 2", "a `cel` effect step is"),
        ("", "[[operation.effect]]\nset = \"order_id.x\"\nvalue = 2\ntype = \"integer\"", "`type` goes with `cel`"),
    ];
    for (extra, op, says) in cases {
        let error = contract_with(extra, op).expect_err(says).to_string();
        assert!(error.contains(says), "{says}: {error}");
    }
    // Named expressions may read one another, in any order of declaration.
    let contract = contract_with(
        "[expressions]\nz = \"y + 1\"\ny = \"size(order_id.key)\"\n",
        "derive = [{ name = \"x\", cel = \"z * 2\", type = \"integer\" }]",
    )
    .unwrap();
    let order: Vec<&str> = contract.expressions().iter().map(|n| n.name.as_str()).collect();
    assert_eq!(order, ["y", "z"]);
}

#[test]
fn a_member_s_money_is_in_minor_units_in_cel() {
    const WALLET: &str = r#"
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
money = ["wallet.*.balance"]

[policies]
files = ["policy.cedar"]

[[operation]]
name = "pay"
args.card = { kind = "member", of = "actor", path = "wallet" }
derive = [{ name = "balance", cel = "card.balance", type = "money" }]
"#;
    const POLICY: &str = r#"
permit (principal, action, resource);
@id("card_holds_at_least_12_50")
forbid (principal, action == Action::"pay", resource) when { context.derived.balance < 1250 };
"#;
    struct WalletFiles;
    impl ContractFiles for WalletFiles {
        fn read(&self, path: &str) -> Result<String, String> {
            if path == "policy.cedar" { Ok(POLICY.into()) } else { Err(format!("no `{path}`")) }
        }
    }
    let contract = Contract::load("wallet.toml", WALLET, &WalletFiles).unwrap();
    let pay = |balance: f64| {
        let kim = json!({"wallet": {"gc": {"balance": balance}}});
        let rows = BTreeMap::from([(
            "customer/kim".to_owned(),
            Record { table: "customer".into(), key: "kim".into(), revision: 1, value: kim },
        )]);
        let body = json!({
            "conversation": "c", "turn": "t", "actor": "kim", "at": "2026-11-30T03:00:00Z",
            "time_zone": "UTC", "locale": "en-US",
            "entries": [{"kind": "user", "text": "Pay with the card."}],
            "acts": [{"op": "pay", "args": {"card": "gc"}}],
        });
        let valid = request::parse(&contract, &body.to_string()).unwrap();
        let decision = turn::decide(&contract, &valid, &Rows(rows), &BTreeSet::new());
        outcome(&decision)
    };
    // $12.50 is 1250 minor units, not dropped as a fraction, and $12.49 is below the rule.
    assert_eq!(pay(12.50), (Verdict::Commit, String::new(), vec![]));
    assert_eq!(pay(12.49).2, ["card_holds_at_least_12_50"]);
}

/// Rows, and a ledger in which no row has committed events yet.
struct NoEventsYet(crate::Rows);
impl turn::Facts for NoEventsYet {
    fn record(&self, table: &str, key: &str) -> Result<Option<Record>, turn::FactError> {
        self.0.record(table, key)
    }
    fn interaction(&self, id: &str) -> Result<Option<turn::Interaction>, turn::FactError> {
        self.0.interaction(id)
    }
    fn row_events(&self, _: &turn::RowRef) -> Result<Vec<turn::RowEvent>, turn::FactError> {
        Ok(Vec::new())
    }
}

#[test]
fn a_row_s_history_holds_the_acts_of_this_turn_that_changed_it() {
    let contract = CONTRACT.replace(
        "[[operation]]\nname = \"cancel\"",
        r#"[[operation]]
name = "mark"
args.order_id = { kind = "record", table = "order" }

[[operation.effect]]
set = "order_id.status"
value = "marked"

[[operation]]
name = "ship"
resource = "order_id"
args.order_id = { kind = "record", table = "order" }
derive = [{ name = "marked_now", cel = "history.order_id.exists(e, e.operation == 'mark' && e.args.order_id == order_id.key && e.actor == 'kim' && e.conversation == 'c' && e.at == '2026-11-30T03:00:00Z' && e.outcome == null)", type = "bool" }]

[[operation]]
name = "cancel""#,
    );
    let policy = format!(
        "{POLICY}\n@id(\"ship_marked\")\nforbid (principal, action == Action::\"ship\", resource) when {{ !context.derived.marked_now }};\n"
    );
    struct Policy(String);
    impl ContractFiles for Policy {
        fn read(&self, path: &str) -> Result<String, String> {
            if path == "policy.cedar" { Ok(self.0.clone()) } else { Err(format!("no `{path}`")) }
        }
    }
    let contract = Contract::load("cel.toml", &contract, &Policy(policy)).unwrap();
    let mut rows = BTreeMap::new();
    rows.insert(
        "customer/kim".to_owned(),
        Record { table: "customer".into(), key: "kim".into(), revision: 1, value: json!({"credit": 25.00}) },
    );
    rows.insert("order/o1".to_owned(), Record { table: "order".into(), key: "o1".into(), revision: 3, value: order() });
    let facts = NoEventsYet(crate::Rows(rows));
    let decide = |acts: Value| {
        let body = json!({
            "conversation": "c", "turn": "t", "actor": "kim",
            "at": "2026-11-30T03:00:00Z", "time_zone": "Europe/Paris", "locale": "en-US",
            "entries": [{"kind": "user", "text": "Ship it."}], "acts": acts,
        });
        let valid = request::parse(&contract, &body.to_string()).unwrap();
        turn::decide(&contract, &valid, &facts, &BTreeSet::new())
    };
    let verdicts = |decision: &Decision| decision.response.acts.iter().map(|a| a.verdict).collect::<Vec<_>>();
    // Alone, the row's history holds nothing: shipping is forbidden.
    let alone = decide(json!([{"op": "ship", "args": {"order_id": "o1"}}]));
    assert_eq!(alone.response.acts[0].reasons[0].policies, ["ship_marked"], "{:?}", alone.response.acts);
    // After an act of the same turn changed the row, its event is in the history, as committed.
    let after = decide(json!([{"op": "mark", "args": {"order_id": "o1"}}, {"op": "ship", "args": {"order_id": "o1"}}]));
    assert_eq!(verdicts(&after), [Verdict::Commit, Verdict::Commit], "{:?}", after.response.acts);
}
