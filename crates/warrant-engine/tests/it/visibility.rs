//! Who may see what, through the engine on the retail contract: an act on a row the actor may
//! not see (another customer's order, another user) gets exactly the refusal an act on a row
//! that does not exist gets, byte for byte, before any policy is asked.

use serde_json::{Value, json};
use warrant_core::turn::{TurnResponse, Verdict};
use warrant_engine::{Engine, TurnResult};
use warrant_store::SqliteStore;

use crate::{data, retail_engine};

const USER: &str = "yusuf_rossi_9620";
const NOBODY: &str = "#W0000000";

fn decide(engine: &mut Engine<SqliteStore>, turn: &str, op: &str, args: Value) -> TurnResponse {
    let request = json!({"conversation": "seen", "turn": turn, "actor": USER, "at": "2026-11-29T15:00:00Z",
        "time_zone": "America/New_York", "locale": "en-US", "entries": [{"kind": "user", "text": "Please."}],
        "acts": [{"op": op, "args": args}]});
    match engine.turn(&request.to_string()).unwrap() {
        TurnResult::Decided { response, .. } => response,
        TurnResult::Rejected(error) => panic!("rejected: {error}"),
    }
}

/// The acts of a response as JSON text, with the key the request named replaced: the one part
/// of the refusal that echoes the request.
fn acts(response: &TurnResponse, key: &str) -> String {
    serde_json::to_string(&response.acts).unwrap().replace(key, "KEY")
}

/// Before: a refusal of an act on another customer's order listed every rule that fired, so
/// anyone learned whether that order exists, is pending, and how many payments it has.
#[test]
fn an_act_on_another_customers_order_is_refused_exactly_as_one_on_an_order_that_does_not_exist() {
    let d = data();
    let (mut engine, _dir) = retail_engine();
    let foreign: Vec<&str> = ["pending", "delivered", "processed", "cancelled"]
        .iter()
        .map(|status| {
            d.orders
                .iter()
                .find(|(_, o)| o["user_id"] != USER && o["status"] == *status)
                .map(|(k, _)| k.as_str())
                .unwrap()
        })
        .collect();
    let own_method = "credit_card_9513926";
    let mut n = 0;
    for order in foreign {
        for (op, args) in [
            ("get_order_details", json!({"order_id": order})),
            ("get_order_details", json!({"order_id": {"id": order, "revision": 7}})),
            ("cancel_pending_order", json!({"order_id": order, "reason": "no longer needed"})),
            ("modify_pending_order_payment", json!({"order_id": order, "payment_method_id": own_method})),
            (
                "return_delivered_order_items",
                json!({"order_id": order, "item_ids": ["1"], "payment_method_id": own_method}),
            ),
        ] {
            n += 1;
            let theirs = decide(&mut engine, &format!("t{n}a"), op, args.clone());
            let none = serde_json::to_string(&args).unwrap().replace(order, NOBODY);
            let nothing = decide(&mut engine, &format!("t{n}b"), op, serde_json::from_str(&none).unwrap());
            assert_eq!(theirs.acts[0].verdict, Verdict::Refuse);
            assert_eq!(theirs.acts[0].reasons[0].code.as_str(), "unknown_record", "{op} {order}");
            assert!(theirs.acts[0].reasons.iter().all(|r| r.policies.is_empty()), "no policy is named");
            assert_eq!(acts(&theirs, order), acts(&nothing, NOBODY), "{op} on {order}");
            assert!(theirs.interactions.is_empty() && theirs.effects.is_empty());
        }
    }
}

/// The actor table's rows are each visible to their own actor only.
#[test]
fn another_users_row_is_refused_exactly_as_a_user_that_does_not_exist() {
    let (mut engine, _dir) = retail_engine();
    let other = "james_li_5688";
    let word = json!({"ptr": [1, 1], "copy": "Please"});
    let address = json!({"address1": word, "address2": "", "city": word, "state": word, "country": word, "zip": word});
    for (i, op) in ["get_user_details", "modify_user_address"].into_iter().enumerate() {
        let mut args = if op == "modify_user_address" { address.clone() } else { json!({}) };
        args["user_id"] = json!(other);
        let theirs = decide(&mut engine, &format!("u{i}a"), op, args.clone());
        args["user_id"] = json!("nobody_0000");
        let nothing = decide(&mut engine, &format!("u{i}b"), op, args);
        assert_eq!(theirs.acts[0].reasons[0].code.as_str(), "unknown_record", "{op}");
        assert_eq!(acts(&theirs, other), acts(&nothing, "nobody_0000"), "{op}");
    }
    // The actor's own row and the catalogue, which declares no owner, are there to see.
    let own = decide(&mut engine, "own", "get_user_details", json!({"user_id": USER}));
    assert_eq!(own.acts[0].verdict, Verdict::Commit, "{:?}", own.acts[0].reasons);
    let product = data().items.values().next().unwrap()["product_id"].clone();
    let catalogue = decide(&mut engine, "product", "get_product_details", json!({"product_id": product}));
    assert_eq!(catalogue.acts[0].verdict, Verdict::Commit, "{:?}", catalogue.acts[0].reasons);
}
