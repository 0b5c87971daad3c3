//! The price of CEL in the contract: compiling one expression (done once, when the contract
//! loads), binding its values and evaluating it (done for every act), and one act's turn with
//! a CEL derived quantity beside the same quantity in the small integer language.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "a benchmark stops at the first surprise"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::hint::black_box;

use divan::{AllocProfiler, Bencher};
use serde_json::{Value, json};
use warrant_core::Contract;
use warrant_core::contract::ContractFiles;
use warrant_core::expr::{self, Expression, MAX_INPUT_VALUES};
use warrant_core::records::Record;
use warrant_core::turn::{self, FactError, Facts, Interaction, Verdict};

#[global_allocator]
static ALLOC: AllocProfiler = AllocProfiler::system();

fn main() {
    divan::main();
}

const TOTAL: &str = "sum(as_list(order.items).map(i, i.price)) + (bags > 2 ? (bags - 2) * 5000 : 0)";

fn order(items: usize) -> Value {
    let items: Vec<Value> = (0..items).map(|i| json!({"name": format!("item {i}"), "price": 1250 + i})).collect();
    json!({"key": "o1", "status": "pending", "items": items})
}

#[divan::bench]
fn compile(bencher: Bencher) {
    bencher.bench(|| Expression::compile(black_box(TOTAL)).unwrap());
}

/// Binding an order of `N` items and evaluating the total over them.
#[divan::bench(consts = [3, 30])]
fn bind_and_evaluate<const N: usize>(bencher: Bencher) {
    let expression = Expression::compile(TOTAL).unwrap();
    let order = order(N);
    bencher.bench(|| {
        let mut budget = MAX_INPUT_VALUES;
        let bindings = BTreeMap::from([
            ("order".to_owned(), expr::from_json(black_box(&order), &mut budget).unwrap()),
            ("bags".to_owned(), cel::Value::Int(3)),
        ]);
        expression.evaluate(&bindings).unwrap()
    });
}

fn contract(derive: &str) -> String {
    format!(
        r#"
[sources]
kinds = ["user", "agent"]
acts = "agent"

[policies]
files = ["policy.cedar"]

[records]
currency = "USD"
table = [{{ name = "order", file = "orders.json", entity = "Order", money = ["items.price"] }}]

[[operation]]
name = "refund"
resource = "order_id"
args.order_id = {{ kind = "record", table = "order" }}
derive = [{derive}]
"#
    )
}

struct Files;
impl ContractFiles for Files {
    fn read(&self, _: &str) -> Result<String, String> {
        Ok("permit (principal, action, resource) when { context.derived.total < 100000 };".into())
    }
}

struct Rows(Value);
impl Facts for Rows {
    fn record(&self, table: &str, key: &str) -> Result<Option<Record>, FactError> {
        let value = self.0.clone();
        Ok((table, key).eq(&("order", "o1")).then(|| Record {
            table: table.into(),
            key: key.into(),
            revision: 1,
            value,
        }))
    }
    fn interaction(&self, _: &str) -> Result<Option<Interaction>, FactError> {
        Ok(None)
    }
}

/// One act whose policy reads the order's total, derived by `expr` or by `cel`.
#[divan::bench(args = ["expr", "cel"])]
fn turn_with_total(bencher: Bencher, form: &str) {
    let derive = match form {
        "expr" => r#"{ name = "total", expr = "sum(order_id.items.price)" }"#,
        _ => r#"{ name = "total", cel = "sum(as_list(order_id.items).map(i, i.price))", type = "money" }"#,
    };
    let contract = Contract::load(form, &contract(derive), &Files).unwrap();
    let mut row = order(3);
    for item in row["items"].as_array_mut().unwrap() {
        item["price"] = json!(12.5);
    }
    let facts = Rows(row);
    let body = json!({
        "conversation": "c", "turn": "t", "actor": "kim",
        "at": "2026-11-30T03:00:00Z", "time_zone": "UTC", "locale": "en-US",
        "entries": [{"kind": "user", "text": "Refund it."}],
        "acts": [{"op": "refund", "args": {"order_id": "o1"}}],
    })
    .to_string();
    let valid = warrant_core::request::parse(&contract, &body).unwrap();
    let decision = turn::decide(&contract, &valid, &facts, &BTreeSet::new());
    assert_eq!(decision.response.acts[0].verdict, Verdict::Commit, "{:?}", decision.response.acts[0]);
    bencher.bench(|| turn::decide(&contract, black_box(&valid), &facts, &BTreeSet::new()));
}
