//! Which rows an actor may see, decided in core against facts in memory: a table's `owner`, the
//! actor table's own rows, a nested table through its parent, a catalogue for everyone; a row
//! the actor may not see refused exactly as a row that does not exist, and a claim about it
//! never backed, not even in the turn's own reply.

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

[[records.table]]
name = "customer"
file = "customers.json"
entity = "Customer"

[[records.table]]
name = "order"
file = "orders.json"
entity = "Order"
owner = "customer_id"

[[records.table]]
name = "parcel"
from = "order"
path = "parcels"
parent_field = "order_id"
entity = "Parcel"

[[records.table]]
name = "store"
file = "stores.json"
entity = "Store"

[policies]
files = ["policy.cedar"]

[[operation]]
name = "track"
resource = "order_id"
args.order_id = { kind = "record", table = "order" }

[[operation]]
name = "find_parcels"
args.parcel_ids = { kind = "records", table = "parcel" }

[[operation]]
name = "visit"
resource = "store_id"
args.store_id = { kind = "record", table = "store" }

[[operation]]
name = "greet"
resource = "customer_id"
args.customer_id = { kind = "record", table = "customer" }

[outbound]
locales = ["en-US"]

[[outbound.channel]]
name = "hook"
kind = "webhook"
url_env = "HOOK_URL"

[[outbound.claim]]
name = "order_shipped"
args.order = { kind = "record", table = "order" }
backed_by = { record = "order", key = "order", field = "status", values = ["shipped"] }

[[outbound.path]]
name = "live"
channel = "hook"
fallback."en-US" = "We will be in touch."
"#;

const POLICY: &str = r#"
permit (principal, action, resource);
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
    fn events(&self, _: &str, _: &str) -> Result<Vec<turn::EventRecord>, FactError> {
        Ok(Vec::new())
    }
}

fn facts() -> Memory {
    let mut rows = BTreeMap::new();
    let mut row = |table: &str, key: &str, value: Value| {
        rows.insert(
            (table.to_owned(), key.to_owned()),
            Record { table: table.into(), key: key.into(), revision: 1, value },
        );
    };
    row("customer", "kim", json!({"name": "Kim"}));
    row("customer", "lee", json!({"name": "Lee"}));
    row("order", "o-kim", json!({"customer_id": "kim", "status": "shipped"}));
    row("order", "o-lee", json!({"customer_id": "lee", "status": "shipped"}));
    row("parcel", "p-kim", json!({"order_id": "o-kim"}));
    row("parcel", "p-lee", json!({"order_id": "o-lee"}));
    row("store", "s-1", json!({"city": "Seoul"}));
    Memory(rows)
}

fn decide(op: &str, args: Value, draft: Option<Value>) -> Decision {
    let contract = Contract::load("visibility.toml", CONTRACT, &Files).unwrap();
    let mut body = json!({
        "conversation": "c", "turn": "t", "actor": "kim",
        "at": "2026-11-30T03:00:00Z", "time_zone": "UTC", "locale": "en-US",
        "entries": [{"kind": "user", "text": "Where is it?"}],
        "acts": [{"op": op, "args": args}],
    });
    if let Some(draft) = draft {
        body["draft"] = draft;
    }
    let valid = request::parse(&contract, &body.to_string()).unwrap();
    turn::decide(&contract, &valid, &facts(), &BTreeSet::new())
}

/// The act's verdict and reasons as JSON text, with `key` replaced.
fn refusal(decision: &Decision, key: &str) -> String {
    serde_json::to_string(&decision.response.acts).unwrap().replace(key, "KEY")
}

#[test]
fn each_table_shows_its_rows_to_the_actors_the_contract_names() {
    for (op, args) in [
        ("track", json!({"order_id": "o-kim"})),
        ("find_parcels", json!({"parcel_ids": ["p-kim"]})),
        ("visit", json!({"store_id": "s-1"})),
        ("greet", json!({"customer_id": "kim"})),
    ] {
        let decision = decide(op, args, None);
        assert_eq!(decision.response.acts[0].verdict, Verdict::Commit, "{op}: {:?}", decision.response.acts[0]);
    }
}

#[test]
fn a_row_the_actor_may_not_see_is_refused_exactly_as_a_row_that_does_not_exist() {
    for (op, field, theirs, missing) in [
        ("track", "order_id", json!("o-lee"), json!("o-none")),
        // A nested row is as visible as its parent row.
        ("find_parcels", "parcel_ids", json!(["p-kim", "p-lee"]), json!(["p-kim", "p-none"])),
        // The actor table's rows are each their own actor's.
        ("greet", "customer_id", json!("lee"), json!("nobody")),
    ] {
        let seen = decide(op, json!({ field: theirs }), None);
        let none = decide(op, json!({ field: missing }), None);
        let (their_key, missing_key) = match (&theirs, &missing) {
            (Value::Array(a), Value::Array(b)) => (a[1].as_str().unwrap(), b[1].as_str().unwrap()),
            _ => (theirs.as_str().unwrap(), missing.as_str().unwrap()),
        };
        assert_eq!(seen.response.acts[0].reasons[0].code.as_str(), "unknown_record", "{op}");
        assert_eq!(refusal(&seen, their_key), refusal(&none, missing_key), "{op}");
    }
}

#[test]
fn the_turns_reply_cannot_claim_a_row_its_actor_may_not_see() {
    let draft = |order: &str| json!({"text": "Your order has shipped.", "claims": [{"claim": "order_shipped", "order": order}]});
    let own = decide("track", json!({"order_id": "o-kim"}), Some(draft("o-kim")));
    assert_eq!(own.response.reply.as_ref().unwrap()["basis"], "cleared", "{:?}", own.response.reply);
    for order in ["o-lee", "o-none"] {
        let other = decide("track", json!({"order_id": "o-kim"}), Some(draft(order)));
        let reply = other.response.reply.unwrap();
        assert_eq!(reply["basis"], "fallback", "{order}: {reply}");
        assert_eq!(reply["reasons"][0]["code"], "claim_not_visible", "{order}: {reply}");
        assert!(!other.outbound.verdicts[0].backed);
        // Nothing is backed, so no model is asked anything, and none is given the order.
        assert_eq!(reply["reasons"][1]["code"], "nothing_backed", "{order}: {reply}");
        assert!(other.outbound.questions.is_empty(), "{:?}", other.outbound.questions);
    }
}
