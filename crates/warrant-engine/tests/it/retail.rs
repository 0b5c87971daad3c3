//! The retail conformance test: every write action of τ-bench's test tasks, proposed as its
//! task's user and then confirmed, commits (a fresh store per task, the task's writes in order);
//! and mutated versions that break exactly one precondition are refused or held with the reason
//! that names the broken rule. The counts are printed.

use serde_json::{Map, Value, json};
use warrant_core::pointer;
use warrant_core::turn::Verdict;
use warrant_store::SqliteStore;
use warrant_store::prelude::*;

use crate::conformance::{Mutation, Tally, attempt, decide, verdict};
use crate::{data, retail_engine};

const WRITES: [&str; 7] = [
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
const BREAKS_A_PRECONDITION: [(usize, usize, &str); 4] = [
    // A refund to PayPal for an order paid by credit card: neither the original method nor a
    // gift card.
    (12, 0, "refund_to_another_method"),
    (13, 0, "refund_to_another_method"),
    // An exchange on an order that is still pending (the task then modifies it instead).
    (64, 0, "order_not_delivered"),
    // An exchange costing $21.10 more, paid with a gift card holding $17.
    (106, 0, "gift_card_cannot_cover"),
];

const ADDRESS: [&str; 6] = ["address1", "address2", "city", "state", "country", "zip"];

/// One act as a turn request: the user's message holds every text argument, and each text
/// argument is a pointer to its words.
fn request(user: &str, turn: &str, op: &str, kwargs: &Map<String, Value>) -> Value {
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

fn answer(user: &str, turn: &str, conversation: &str, interaction: &str) -> Value {
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

#[derive(Default)]
struct Counts {
    refused_as_in_the_benchmark: usize,
    writes: usize,
    committed: usize,
}

/// Mutations of one write that each break exactly one precondition.
fn mutations(
    d: &crate::Data,
    user: &str,
    op: &str,
    kwargs: &Map<String, Value>,
    store: &mut SqliteStore,
) -> Vec<Mutation> {
    let mut out = Vec::new();
    let with = |key: &str, value: Value| {
        let mut k = kwargs.clone();
        k.insert(key.into(), value);
        k
    };
    let order_id = kwargs.get("order_id").and_then(Value::as_str).map(str::to_owned);
    let order = order_id.as_ref().and_then(|id| store.record("order", id).unwrap()).map(|r| r.value);
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

#[test]
fn every_tau_bench_write_commits_and_each_broken_precondition_is_refused() {
    let d = data();
    let tasks: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(crate::retail_dir().join("data/tasks_test.json")).unwrap())
            .unwrap();
    let mut counts = Counts::default();
    let mut tally = Tally::default();
    let mut failures = Vec::new();
    for (t, task) in tasks.iter().enumerate() {
        let writes: Vec<&Value> = task["actions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| WRITES.contains(&a["name"].as_str().unwrap()))
            .collect();
        if writes.is_empty() {
            continue;
        }
        let (mut engine, dir) = retail_engine();
        // The deployment's own changes to the data, made beside the engine on the same file:
        // the engine hands out no store to write around it.
        let mut outside = SqliteStore::open(&dir.path().join("warrant.sqlite")).unwrap();
        for (w, action) in writes.iter().enumerate() {
            let op = action["name"].as_str().unwrap();
            let kwargs = action["kwargs"].as_object().unwrap();
            // The actor is the customer the task's agent identified: the owner of the order or
            // the user whose address changes. (Task 64's `user_id` names another customer than
            // the one its actions serve; the actions are what the benchmark checks.)
            let owner = kwargs.get("order_id").and_then(|o| d.orders[o.as_str().unwrap()]["user_id"].as_str());
            let user =
                owner.or(kwargs.get("user_id").and_then(Value::as_str)).unwrap_or(task["user_id"].as_str().unwrap());
            if let Some((_, _, rule)) = BREAKS_A_PRECONDITION.iter().find(|(bt, bw, _)| *bt == t && *bw == w) {
                let response = decide(&mut engine, &request(user, &format!("t{t}-w{w}"), op, kwargs));
                let (v, _, policies) = verdict(&response);
                assert_eq!((v, policies), (Verdict::Refuse, vec![(*rule).to_owned()]), "task {t} write {w}");
                counts.refused_as_in_the_benchmark += 1;
                continue;
            }
            // Mutations first, each against the data as it stands before the real write.
            for (m, mutation) in mutations(&d, user, op, kwargs, &mut outside).into_iter().enumerate() {
                let turn = format!("t{t}-w{w}-m{m}");
                let response = attempt(&mut engine, &mut outside, &mutation, &turn, |engine, kwargs| {
                    decide(engine, &request(user, &turn, op, kwargs))
                });
                tally.record(&mutation, &response, &turn);
            }
            counts.writes += 1;
            let turn = format!("t{t}-w{w}");
            let held = decide(&mut engine, &request(user, &turn, op, kwargs));
            let (v, codes, _) = verdict(&held);
            let is_held = v == Verdict::Hold && codes == ["confirmation_required"];
            tally.count("no confirmation", is_held);
            if !is_held {
                failures.push(format!(
                    "task {t} write {w} `{op}`: expected hold, got {v:?} {codes:?} {:?}",
                    held.acts[0].reasons
                ));
                continue;
            }
            let interaction = held.interactions[0].id.clone();
            let confirmed =
                decide(&mut engine, &answer(user, &format!("{turn}-yes"), &format!("c-{turn}"), &interaction));
            let (v, codes, _) = verdict(&confirmed);
            if v == Verdict::Commit && confirmed.effects.len() == 1 {
                counts.committed += 1;
            } else {
                failures.push(format!(
                    "task {t} write {w} `{op}`: confirmed but {v:?} {codes:?} {:?}",
                    confirmed.acts[0].reasons
                ));
            }
        }
    }
    println!(
        "retail conformance: {} of {} τ-bench writes committed after confirmation; {} more refused with the rule the benchmark's own tool enforces",
        counts.committed, counts.writes, counts.refused_as_in_the_benchmark
    );
    let total = tally.print(&[]);
    failures.append(&mut tally.failures);
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    assert_eq!(
        counts.writes + counts.refused_as_in_the_benchmark,
        178,
        "every write action of the test tasks is exercised"
    );
    assert_eq!(counts.refused_as_in_the_benchmark, BREAKS_A_PRECONDITION.len());
    assert_eq!(counts.committed, counts.writes);
    assert_eq!(total, (1274, 1274), "every mutation named its broken rule");
    tally.assert_tried(&[
        "another user's order",
        "a wrong status",
        "a reason outside the set",
        "an unknown item",
        "a foreign item",
        "a new item of another product",
        "an unavailable new item",
        "a foreign payment method",
        "a gift card that cannot cover",
        "no confirmation",
    ]);
}
