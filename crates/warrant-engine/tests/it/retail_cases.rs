//! The retail cases the engine's conformance test and the MCP gateway's share: τ-bench's write
//! actions as turn requests, and the mutations of a write that each break exactly one
//! precondition, with the reason code or rule that must refuse them. The gateway's tests include
//! this file (and `conformance.rs`) by path, so both play the same cases.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Map, Value, json};
use warrant_core::pointer;

use crate::conformance::Mutation;

/// The retail example's folder.
pub fn retail_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/retail")
}

/// The retail data, for building cases.
#[derive(Debug)]
pub struct Data {
    pub orders: BTreeMap<String, Value>,
    pub users: BTreeMap<String, Value>,
    /// Every variant, keyed by item id, with its `product_id`.
    pub items: BTreeMap<String, Value>,
}

pub fn data() -> Data {
    let read = |name: &str| -> BTreeMap<String, Value> {
        serde_json::from_str(&std::fs::read_to_string(retail_dir().join("data").join(name)).unwrap()).unwrap()
    };
    let products = read("products.json");
    let mut items = BTreeMap::new();
    for (product_id, product) in &products {
        for (item_id, variant) in product["variants"].as_object().unwrap() {
            let mut v = variant.clone();
            v["product_id"] = Value::String(product_id.clone());
            items.insert(item_id.clone(), v);
        }
    }
    Data { orders: read("orders.json"), users: read("users.json"), items }
}

/// The write actions of the retail contract.
pub const WRITES: [&str; 7] = [
    "cancel_pending_order",
    "modify_pending_order_address",
    "modify_pending_order_payment",
    "modify_pending_order_items",
    "return_delivered_order_items",
    "exchange_delivered_order_items",
    "modify_user_address",
];

/// Write actions of the test tasks that break one of the benchmark's own preconditions (the
/// benchmark's tools answer them with an error too, and the task then goes on): (task, write
/// index among the task's writes, the rule that must refuse it).
pub const BREAKS_A_PRECONDITION: [(usize, usize, &str); 4] = [
    // A refund to PayPal for an order paid by credit card: neither the original method nor a
    // gift card.
    (12, 0, "refund_to_another_method"),
    (13, 0, "refund_to_another_method"),
    // An exchange on an order that is still pending (the task then modifies it instead).
    (64, 0, "order_not_delivered"),
    // An exchange costing $21.10 more, paid with a gift card holding $17.
    (106, 0, "gift_card_cannot_cover"),
];

pub const ADDRESS: [&str; 6] = ["address1", "address2", "city", "state", "country", "zip"];

/// One act as a turn request: the user's message holds every text argument, and each text
/// argument is a pointer to its words.
pub fn request(user: &str, turn: &str, op: &str, kwargs: &Map<String, Value>) -> Value {
    let mut args = kwargs.clone();
    let mut message = format!("Please go ahead with {op}");
    let mut words = pointer::numbered(&message).len();
    for field in ADDRESS {
        let Some(Value::String(text)) = kwargs.get(field) else { continue };
        if text.is_empty() {
            continue;
        }
        message.push_str(" | ");
        message.push_str(text);
        let count = pointer::numbered(text).len();
        let from = words + 1;
        words += count;
        args.insert(field.into(), json!({"ptr": [from, words], "copy": text}));
    }
    json!({
        "conversation": format!("c-{turn}"),
        "turn": turn,
        "actor": user,
        "at": "2026-11-29T15:00:00Z",
        "time_zone": "America/New_York",
        "locale": "en-US",
        "entries": [{"kind": "user", "text": message}],
        "acts": [{"op": op, "args": args}],
    })
}

pub fn answer(user: &str, turn: &str, conversation: &str, interaction: &str) -> Value {
    json!({
        "conversation": conversation,
        "turn": turn,
        "actor": user,
        "at": "2026-11-29T15:01:00Z",
        "time_zone": "America/New_York",
        "locale": "en-US",
        "answers": [{"interaction": interaction, "option": "confirm"}],
    })
}

/// Mutations of one write that each break exactly one precondition.
///
/// `order` is the order the write names as the data holds it now, before the write (`None` when
/// it names none or one that does not exist).
pub fn mutations(d: &Data, user: &str, op: &str, kwargs: &Map<String, Value>, order: Option<Value>) -> Vec<Mutation> {
    let mut out = Vec::new();
    let with = |key: &str, value: Value| {
        let mut k = kwargs.clone();
        k.insert(key.into(), value);
        k
    };
    let order_id = kwargs.get("order_id").and_then(Value::as_str).map(str::to_owned);
    let status = order.as_ref().and_then(|o| o["status"].as_str()).unwrap_or("").to_owned();

    if let Some(order_id) = &order_id {
        // Another user's order in the same status, so that only ownership breaks (ops with item
        // lists would break membership first, so only the item-free ops are mutated this way).
        // It is not the actor's to see, so it is refused as an order that does not exist.
        if let (false, Some(other)) = (
            kwargs.contains_key("item_ids"),
            d.orders.iter().find(|(_, o)| o["user_id"] != user && o["status"] == status.as_str()),
        ) {
            out.push(Mutation::refused("another user's order", with("order_id", json!(other.0)), "unknown_record"));
        }
        let wrong = if status == "pending" { "delivered" } else { "pending" };
        let rule = if op.contains("pending") { "order_not_pending" } else { "order_not_delivered" };
        out.push(Mutation::forbidden("a wrong status", kwargs.clone(), rule).with_data(
            "order",
            order_id,
            move |v: &mut Value| v["status"] = json!(wrong),
        ));
        out.push(Mutation::refused("an unknown order", with("order_id", json!("#W0000000")), "unknown_record"));
    }
    if kwargs.contains_key("reason") {
        out.push(Mutation::refused(
            "a reason outside the set",
            with("reason", json!("changed my mind")),
            "not_in_closed_set",
        ));
    }
    if let Some(Value::Array(items)) = kwargs.get("item_ids") {
        let mut unknown = items.clone();
        unknown[0] = json!("0000000000");
        out.push(Mutation::refused("an unknown item", with("item_ids", Value::Array(unknown)), "not_a_member"));
        let in_order: Vec<&str> = order
            .as_ref()
            .map(|o| o["items"].as_array().unwrap().iter().map(|i| i["item_id"].as_str().unwrap()).collect())
            .unwrap_or_default();
        if let Some(foreign) = d.items.keys().find(|k| !in_order.contains(&k.as_str())) {
            let mut list = items.clone();
            list[0] = json!(foreign);
            out.push(Mutation::refused("a foreign item", with("item_ids", Value::Array(list)), "not_a_member"));
        }
        // An item named more often than the order holds it.
        let mut repeated = items.clone();
        let count = in_order.iter().filter(|i| Some(**i) == items[0].as_str()).count();
        for _ in 0..count {
            repeated.push(items[0].clone());
        }
        if let Some(Value::Array(new)) = kwargs.get("new_item_ids") {
            let mut new_repeated = new.clone();
            for _ in 0..count {
                new_repeated.push(new[0].clone());
            }
            let mut k = with("item_ids", Value::Array(repeated));
            k.insert("new_item_ids".into(), Value::Array(new_repeated));
            out.push(Mutation::refused("an item beyond its count", k, "not_a_member"));
        } else {
            out.push(Mutation::refused(
                "an item beyond its count",
                with("item_ids", Value::Array(repeated)),
                "not_a_member",
            ));
        }
    }
    if let (Some(Value::Array(old)), Some(Value::Array(new))) = (kwargs.get("item_ids"), kwargs.get("new_item_ids")) {
        let old_product = d.items.get(old[0].as_str().unwrap()).map(|i| i["product_id"].clone()).unwrap();
        if let Some((other, _)) = d.items.iter().find(|(_, i)| i["product_id"] != old_product && i["available"] == true)
        {
            let mut list = new.clone();
            list[0] = json!(other);
            out.push(Mutation::refused(
                "a new item of another product",
                with("new_item_ids", Value::Array(list)),
                "pair_mismatch",
            ));
        }
        if let Some((unavailable, _)) =
            d.items.iter().find(|(_, i)| i["product_id"] == old_product && i["available"] == false)
        {
            let mut list = new.clone();
            list[0] = json!(unavailable);
            out.push(Mutation::refused(
                "an unavailable new item",
                with("new_item_ids", Value::Array(list)),
                "requirement_unmet",
            ));
        }
        let mut short = new.clone();
        short.push(new[0].clone());
        out.push(Mutation::refused(
            "lists of unequal length",
            with("new_item_ids", Value::Array(short)),
            "list_length_mismatch",
        ));
    }
    if kwargs.contains_key("payment_method_id") {
        let own: Vec<String> = d.users[user]["payment_methods"].as_object().unwrap().keys().cloned().collect();
        let foreign = d
            .users
            .values()
            .flat_map(|u| u["payment_methods"].as_object().unwrap().keys().cloned())
            .find(|k| !own.contains(k))
            .unwrap();
        out.push(Mutation::refused(
            "a foreign payment method",
            with("payment_method_id", json!(foreign)),
            "not_a_member",
        ));
        if matches!(op, "modify_pending_order_items" | "exchange_delivered_order_items") {
            let difference: f64 = {
                let price = |id: &Value| d.items[id.as_str().unwrap()]["price"].as_f64().unwrap();
                let old: f64 = kwargs["item_ids"].as_array().unwrap().iter().map(price).sum();
                let new: f64 = kwargs["new_item_ids"].as_array().unwrap().iter().map(price).sum();
                new - old
            };
            let gift = own.iter().find(|k| k.starts_with("gift_card_")).cloned();
            if let (true, Some(gift)) = (difference > 0.0, gift) {
                let card = gift.clone();
                out.push(
                    Mutation::forbidden(
                        "a gift card that cannot cover",
                        with("payment_method_id", json!(gift)),
                        "gift_card_cannot_cover",
                    )
                    .with_data("user", user, move |v: &mut Value| v["payment_methods"][&card]["balance"] = json!(0)),
                );
            }
        }
        if op == "return_delivered_order_items" {
            let original = order
                .as_ref()
                .and_then(|o| o["payment_history"][0]["payment_method_id"].as_str())
                .unwrap_or("")
                .to_owned();
            if let Some(other) = own.iter().find(|k| **k != original && !k.starts_with("gift_card_")) {
                out.push(Mutation::forbidden(
                    "a refund to another method",
                    with("payment_method_id", json!(other)),
                    "refund_to_another_method",
                ));
            }
        }
    }
    if op == "modify_user_address" {
        let other = d.users.keys().find(|k| *k != user).unwrap();
        out.push(Mutation::refused("another user's address", with("user_id", json!(other)), "unknown_record"));
    }
    out
}
