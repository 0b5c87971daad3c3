//! Policies as the turn meets them: a rule that forbids is named by its `@id` (by its file and
//! line without one), and a rule that cannot be evaluated refuses the act, its detail naming the
//! rule's `@id`, file and line rather than an internal index.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;
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

[policies]
files = ["allow.cedar", "orders.cedar"]

[[operation]]
name = "cancel"
resource = "order_id"
args.order_id = { kind = "record", table = "order" }
"#;

const ALLOW: &str = "permit (principal, action, resource);\n";

const ORDERS: &str = r#"// Orders.

@id("order_not_pending")
forbid (principal, action == Action::"cancel", resource)
unless { resource.status == "pending" };

forbid (principal, action == Action::"cancel", resource)
when { resource has locked && resource.locked };
"#;

struct Files;
impl ContractFiles for Files {
    fn read(&self, path: &str) -> Result<String, String> {
        match path {
            "allow.cedar" => Ok(ALLOW.into()),
            "orders.cedar" => Ok(ORDERS.into()),
            _ => Err(format!("no `{path}`")),
        }
    }
}

struct Memory(BTreeMap<String, Record>);
impl Facts for Memory {
    fn record(&self, table: &str, key: &str) -> Result<Option<Record>, FactError> {
        Ok(self.0.get(&format!("{table}/{key}")).cloned())
    }
    fn interaction(&self, _: &str) -> Result<Option<Interaction>, FactError> {
        Ok(None)
    }
}

fn decide(order: serde_json::Value) -> Decision {
    let contract = Contract::load("orders.toml", CONTRACT, &Files).unwrap();
    let mut rows = BTreeMap::new();
    rows.insert(
        "customer/kim".to_owned(),
        Record { table: "customer".into(), key: "kim".into(), revision: 1, value: json!({}) },
    );
    rows.insert("order/o1".to_owned(), Record { table: "order".into(), key: "o1".into(), revision: 1, value: order });
    let body = json!({
        "conversation": "c", "turn": "t", "actor": "kim",
        "at": "2026-11-30T03:00:00Z", "time_zone": "UTC", "locale": "en-US",
        "entries": [{"kind": "user", "text": "Cancel it."}],
        "acts": [{"op": "cancel", "args": {"order_id": "o1"}}],
    });
    let valid = request::parse(&contract, &body.to_string()).unwrap();
    turn::decide(&contract, &valid, &Memory(rows), &BTreeSet::new())
}

#[test]
fn a_policy_that_errs_at_runtime_is_named_by_its_id_file_and_line() {
    // The order has no `status`: `order_not_pending` cannot be evaluated, and fails closed.
    let decision = decide(json!({"customer_id": "kim"}));
    let act = &decision.response.acts[0];
    assert_eq!(act.verdict, Verdict::Refuse);
    assert_eq!(act.reasons[0].code.as_str(), "policy_error");
    let detail = act.reasons[0].detail.as_deref().unwrap();
    assert!(detail.starts_with("policy `order_not_pending` (orders.cedar:3): "), "{detail}");
    assert!(detail.contains("status"), "{detail}");
    assert!(!detail.contains("1:policy"), "no internal id: {detail}");
}

#[test]
fn a_forbid_without_an_id_is_named_by_its_file_and_line() {
    let decision = decide(json!({"customer_id": "kim", "status": "pending", "locked": true}));
    let act = &decision.response.acts[0];
    assert_eq!(act.reasons[0].code.as_str(), "forbidden_by_policy");
    assert_eq!(act.reasons[0].policies, ["orders.cedar:7"]);
    let pending = decide(json!({"customer_id": "kim", "status": "pending"}));
    assert_eq!(pending.response.acts[0].verdict, Verdict::Commit, "{:?}", pending.response.acts[0]);
}
